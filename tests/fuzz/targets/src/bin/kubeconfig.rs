//! libFuzzer entry for the `kubeconfig` target (see `kubeforge_fuzz::Target::Kubeconfig`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kubeforge_fuzz::check(kubeforge_fuzz::Target::Kubeconfig, data);
});
