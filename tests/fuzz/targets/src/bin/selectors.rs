//! libFuzzer entry for the `selectors` target (see `kubeforge_fuzz::Target::Selectors`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kubeforge_fuzz::check(kubeforge_fuzz::Target::Selectors, data);
});
