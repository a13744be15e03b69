//! libFuzzer entry for the `crd_schema` target (see `kubeforge_fuzz::Target::CrdSchema`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kubeforge_fuzz::check(kubeforge_fuzz::Target::CrdSchema, data);
});
