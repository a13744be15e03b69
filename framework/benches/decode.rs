//! What decoding with every list at its length costs and saves: 10,000
//! watch events carrying a running Pod (the fixture of the decoder's
//! tests: two managedFields entries, a container with environment, ports
//! and a mount, five conditions, a container status) decoded by the
//! client's watch-event decoder, beside plain `serde_json` of the same
//! lines. Prints the time per event (best of five rounds) and the live
//! heap per decoded Pod. A watch event's object is counted through its
//! metadata too; list items leave metadata to the reflector's trimming and
//! cost less.
//!
//! Run with `cargo bench -p kubeforge --bench decode`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube_core::WatchEvent;
use kubeforge::client::watch::EventStream;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

const EVENTS: usize = 10_000;
const ROUNDS: usize = 5;

fn live_bytes() -> i128 {
    let s = GLOBAL.stats();
    s.bytes_allocated as i128 + s.bytes_reallocated as i128 - s.bytes_deallocated as i128
}

/// Decodes every line of `body` with `decode`, keeping the Pods: the time
/// it took and the heap the Pods hold, per Pod.
fn measure(body: &Bytes, decode: impl Fn(&Bytes) -> Vec<Pod>) -> (Duration, f64) {
    let mut best = Duration::MAX;
    let mut per_pod = 0.0;
    for _ in 0..ROUNDS {
        let before = live_bytes();
        let started = Instant::now();
        let pods = decode(body);
        best = best.min(started.elapsed());
        assert_eq!(pods.len(), EVENTS);
        let vec_bytes = (pods.capacity() * std::mem::size_of::<Pod>()) as i128;
        per_pod = (live_bytes() - before - vec_bytes) as f64 / EVENTS as f64
            + std::mem::size_of::<Pod>() as f64;
        drop(black_box(pods));
    }
    (best / EVENTS as u32, per_pod)
}

fn modified(event: WatchEvent<Pod>) -> Pod {
    match event {
        WatchEvent::Modified(pod) => pod,
        other => panic!("not a MODIFIED event: {other:?}"),
    }
}

fn main() {
    let pod = include_str!("../src/client/exact_pod.json").trim();
    let line = format!("{{\"type\":\"MODIFIED\",\"object\":{pod}}}\n");
    let body = Bytes::from(line.repeat(EVENTS));
    let (plain_time, plain_heap) = measure(&body, |body| {
        body.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| modified(serde_json::from_slice(l).expect("a watch event")))
            .collect()
    });
    let (exact_time, exact_heap) = measure(&body, |body| {
        // Slices of the body, not copies: only the decoder is timed.
        const CHUNK: usize = 64 * 1024;
        let chunks: Vec<Result<Bytes, kubeforge::Error>> = (0..body.len())
            .step_by(CHUNK)
            .map(|at| Ok(body.slice(at..(at + CHUNK).min(body.len()))))
            .collect();
        let stream = EventStream::<_, Pod>::new(futures::stream::iter(chunks));
        futures::executor::block_on(stream.map(|e| modified(e.expect("an event"))).collect())
    });
    println!(
        "decode bench: {EVENTS} watch events of a {}-byte running Pod, best of {ROUNDS}",
        pod.len()
    );
    println!(
        "  serde_json, line by line          {:>8.2} µs/event  {:>7.0} B per Pod",
        plain_time.as_secs_f64() * 1e6,
        plain_heap
    );
    println!(
        "  kubeforge watch decoder           {:>8.2} µs/event  {:>7.0} B per Pod  ({:+.0}% time, {:.2}x heap)",
        exact_time.as_secs_f64() * 1e6,
        exact_heap,
        (exact_time.as_secs_f64() / plain_time.as_secs_f64() - 1.0) * 100.0,
        exact_heap / plain_heap
    );
}
