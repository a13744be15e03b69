//! Workqueue throughput: prints operations per second for add/get/done with
//! 1, 4 and 16 workers (with and without Prometheus metrics, and with a
//! controller's `namespace/name` keys), for a burst of duplicate adds, and
//! for add_after.
//!
//! Run with `cargo bench -p kubeforge --bench workqueue`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kubeforge::cache::ObjectKey;
use kubeforge::workqueue::{PrometheusMetricsProvider, WorkQueue};
use prometheus_client::registry::Registry;

const ITEMS: u64 = 200_000;
const DELAYED: u64 = 100_000;

fn rate(n: u64, elapsed: Duration) -> String {
    let per_sec = n as f64 / elapsed.as_secs_f64();
    if per_sec >= 1e6 {
        format!("{:.2} M/s", per_sec / 1e6)
    } else {
        format!("{:.0} k/s", per_sec / 1e3)
    }
}

/// Spawns `workers` tasks that get and done until the queue shuts down;
/// returns how many items they processed.
fn spawn_workers<T>(q: &WorkQueue<T>, workers: usize) -> Vec<tokio::task::JoinHandle<u64>>
where
    T: Clone + Eq + std::hash::Hash + Send + Sync + 'static,
{
    (0..workers)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                let mut n = 0;
                while let Some(k) = q.get().await {
                    q.done(&k);
                    n += 1;
                }
                n
            })
        })
        .collect()
}

/// One producer adds `ITEMS` distinct keys while `workers` drain them.
async fn add_get_done(workers: usize, metrics: bool) -> Duration {
    add_get_done_of(workers, metrics, |k| k).await
}

/// The same, keys made by `key`.
async fn add_get_done_of<T>(workers: usize, metrics: bool, key: impl Fn(u64) -> T) -> Duration
where
    T: Clone + Eq + std::hash::Hash + Send + Sync + 'static,
{
    let mut builder = WorkQueue::builder().name("bench");
    if metrics {
        let provider = PrometheusMetricsProvider::new();
        provider.register(&mut Registry::default());
        builder = builder.metrics(Arc::new(provider));
    }
    let q: WorkQueue<T> = builder.build();
    let start = Instant::now();
    let handles = spawn_workers(&q, workers);
    for k in 0..ITEMS {
        q.add(key(k));
        if k % 256 == 0 {
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

/// Adds `ITEMS` times over 100 keys: most adds are dropped as duplicates.
async fn duplicate_adds(workers: usize) -> (Duration, u64) {
    let q: WorkQueue<u64> = WorkQueue::new();
    let start = Instant::now();
    let handles = spawn_workers(&q, workers);
    for i in 0..ITEMS {
        q.add(i % 100);
        if i % 256 == 0 {
            tokio::task::yield_now().await;
        }
    }
    q.shutdown_with_drain().await;
    let mut processed = 0;
    for h in handles {
        processed += h.await.unwrap_or(0);
    }
    (start.elapsed(), processed)
}

/// `DELAYED` add_after calls with delays spread over 0..50 ms, then the time
/// until 4 workers have received them all.
async fn add_after() -> (Duration, Duration) {
    let q: WorkQueue<u64> = WorkQueue::new();
    let mut rng = fastrand::Rng::with_seed(7);
    let delays: Vec<Duration> = (0..DELAYED)
        .map(|_| Duration::from_micros(rng.u64(1..50_000)))
        .collect();
    let handles = spawn_workers(&q, 4);
    let start = Instant::now();
    for (k, d) in delays.into_iter().enumerate() {
        q.add_after(k as u64, d);
    }
    let inserted = start.elapsed();
    // The longest delay is under 50 ms; wait for the queue to empty after it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    while !q.is_empty() {
        tokio::task::yield_now().await;
    }
    q.shutdown_with_drain().await;
    let mut processed = 0;
    for h in handles {
        processed += h.await.unwrap_or(0);
    }
    assert_eq!(processed, DELAYED);
    (inserted, start.elapsed())
}

fn main() {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!("workqueue benchmark ({threads} runtime threads, {ITEMS} items)");
    rt.block_on(async {
        // Warm up allocator and runtime.
        add_get_done(4, false).await;

        println!("\nadd + get + done, distinct keys (one item = 3 operations)");
        for workers in [1, 4, 16] {
            let e = add_get_done(workers, false).await;
            println!(
                "  {workers:>2} workers: {:>10} items  {:>10} ops  ({e:.2?})",
                rate(ITEMS, e),
                rate(3 * ITEMS, e)
            );
        }

        println!("\nsame, with Prometheus metrics");
        for workers in [1, 4, 16] {
            let e = add_get_done(workers, true).await;
            println!(
                "  {workers:>2} workers: {:>10} items  {:>10} ops  ({e:.2?})",
                rate(ITEMS, e),
                rate(3 * ITEMS, e)
            );
        }

        println!("\nsame, with a controller's namespace/name keys");
        let object_key = |k: u64| ObjectKey::namespaced("default", format!("configmap-{k}"));
        for workers in [1, 4, 16] {
            let e = add_get_done_of(workers, true, object_key).await;
            println!(
                "  {workers:>2} workers: {:>10} items  {:>10} ops  ({e:.2?})",
                rate(ITEMS, e),
                rate(3 * ITEMS, e)
            );
        }

        println!("\nadds over 100 keys (duplicates collapse)");
        for workers in [1, 4, 16] {
            let (e, processed) = duplicate_adds(workers).await;
            println!(
                "  {workers:>2} workers: {:>10} adds   {processed} reconciles for {ITEMS} adds  ({e:.2?})",
                rate(ITEMS, e)
            );
        }

        println!("\nadd_after, {DELAYED} items with delays up to 50 ms, 4 workers");
        let (inserted, total) = add_after().await;
        println!(
            "  add_after: {:>10} calls ({inserted:.2?}); all handed out after {total:.2?}",
            rate(DELAYED, inserted)
        );
    });
}
