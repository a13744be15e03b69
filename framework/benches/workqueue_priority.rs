//! Workqueue throughput with priorities and fairness against the plain
//! FIFO: add + get + done of 200k distinct `namespace/name` keys over 100
//! namespaces, 1 and 4 workers, with and without Prometheus metrics.
//!
//! The FIFO arm is a queue built as before priorities existed (no fairness
//! function, every add at the default priority); the priority arm is the
//! controller's queue (fairness by namespace, as the controller hashes it)
//! fed as a controller restarting over its initial list: nine adds in ten
//! at `LOW_PRIORITY`, one at the default. The arms run in turn, A B A B,
//! `RUNS` times per row, and each row prints the median rate of each and
//! the median of the pairwise ratios, so drift of a shared machine's speed
//! cancels out.
//!
//! Run with `cargo bench -p kubeforge --bench workqueue_priority`.

use std::hash::BuildHasher as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubeforge::cache::ObjectKey;
use kubeforge::workqueue::{PrometheusMetricsProvider, WorkQueue, DEFAULT_PRIORITY, LOW_PRIORITY};
use prometheus_client::registry::Registry;

const ITEMS: u64 = 200_000;
const NAMESPACES: u64 = 100;
const RUNS: usize = 9;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Arm {
    Fifo,
    PriorityFair,
}

fn queue(arm: Arm, metrics: bool) -> WorkQueue<ObjectKey> {
    let mut builder = WorkQueue::builder().name("bench");
    if metrics {
        let provider = PrometheusMetricsProvider::new();
        provider.register(&mut Registry::default());
        builder = builder.metrics(Arc::new(provider));
    }
    if arm == Arm::PriorityFair {
        let hasher = hashbrown::DefaultHashBuilder::default();
        builder = builder.fairness(move |k: &ObjectKey| hasher.hash_one(k.namespace_or_empty()));
    }
    builder.build()
}

/// One producer adds `ITEMS` keys while `workers` take and finish them.
async fn run(arm: Arm, workers: usize, metrics: bool, keys: &[ObjectKey]) -> Duration {
    let q = queue(arm, metrics);
    let start = Instant::now();
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                let mut n = 0u64;
                while let Some(k) = q.get().await {
                    q.done(&k);
                    n += 1;
                }
                n
            })
        })
        .collect();
    for (i, key) in keys.iter().enumerate() {
        match arm {
            Arm::Fifo => q.add(key.clone()),
            Arm::PriorityFair => {
                let priority = if i % 10 == 0 {
                    DEFAULT_PRIORITY
                } else {
                    LOW_PRIORITY
                };
                q.add_with_priority(key.clone(), priority);
            }
        }
        if i % 256 == 0 {
            tokio::task::yield_now().await;
        }
    }
    q.shutdown_with_drain().await;
    let mut processed = 0;
    for h in handles {
        processed += h.await.unwrap_or(0);
    }
    let elapsed = start.elapsed();
    assert_eq!(processed, ITEMS, "every item processed once");
    elapsed
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let keys: Vec<ObjectKey> = (0..ITEMS)
        .map(|k| ObjectKey::namespaced(format!("ns-{}", k % NAMESPACES), format!("cm-{k}")))
        .collect();
    println!(
        "workqueue priority + fairness vs FIFO ({threads} runtime threads, {ITEMS} keys over \
         {NAMESPACES} namespaces, median of {RUNS} paired runs)"
    );
    println!("\nadd + get + done      FIFO items/s   priority+fair items/s   ratio");
    rt.block_on(async {
        // Warm up allocator and runtime.
        run(Arm::Fifo, 4, false, &keys).await;
        run(Arm::PriorityFair, 4, false, &keys).await;
        for metrics in [false, true] {
            for workers in [1, 4] {
                let (mut fifo, mut fair, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
                for _ in 0..RUNS {
                    let a = run(Arm::Fifo, workers, metrics, &keys).await;
                    let b = run(Arm::PriorityFair, workers, metrics, &keys).await;
                    fifo.push(ITEMS as f64 / a.as_secs_f64());
                    fair.push(ITEMS as f64 / b.as_secs_f64());
                    ratio.push(a.as_secs_f64() / b.as_secs_f64());
                }
                let label = if metrics { ", metrics" } else { "" };
                println!(
                    "  {workers} worker{}{label:<9} {:>10.0} k/s   {:>14.0} k/s   {:>10.3}x",
                    if workers == 1 { " " } else { "s" },
                    median(fifo) / 1e3,
                    median(fair) / 1e3,
                    median(ratio),
                );
            }
        }
    });
}
