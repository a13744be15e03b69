//! libFuzzer entry for the `requests` target (see `kubeforge_fuzz::Target::Requests`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kubeforge_fuzz::check(kubeforge_fuzz::Target::Requests, data);
});
