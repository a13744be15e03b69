//! libFuzzer entry for the `status` target (see `kubeforge_fuzz::Target::Status`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kubeforge_fuzz::check(kubeforge_fuzz::Target::Status, data);
});
