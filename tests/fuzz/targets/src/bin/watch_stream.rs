//! libFuzzer entry for the `watch_stream` target (see `kubeforge_fuzz::Target::WatchStream`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kubeforge_fuzz::check(kubeforge_fuzz::Target::WatchStream, data);
});
