//! How long a live change waits in a busy controller's queue, FIFO against
//! priorities + fairness, in the two situations they are for:
//!
//! - restart: an informer's initial list of 100k objects (over 100
//!   namespaces) enters the queue at once; meanwhile 100 live changes, one
//!   a second, each to a random one of those objects;
//! - flood: one namespace enqueues 10k keys at once; meanwhile 100 keys of
//!   another namespace arrive, one every 400 ms.
//!
//! One worker, and a reconcile of 5 ms. The wait of a change is from its
//! add to the end of the first reconcile that started after it (the
//! reconcile that sees it). Printed: p50, p99 and max of the 100 waits per
//! arm, and the time from the start to the whole queue reconciled.
//!
//! It drives the real `WorkQueue` as the controller builds and feeds it
//! (initial-list adds at `LOW_PRIORITY`, live ones at the default; fairness
//! by a hash of the namespace), from a simulated informer feed rather than
//! an API server, and on tokio's paused clock: the reconcile is a 5 ms
//! sleep of virtual time, so the 500 s FIFO takes to work through 100k keys
//! run in a few seconds of this machine's time, and the figures do not
//! depend on how busy its two cores are. The queue's own costs (a few
//! microseconds per key) are real time and not in the figures; the
//! throughput bench (`workqueue_priority`) measures them.
//!
//! Run with `cargo bench -p kubeforge --bench workqueue_latency`.

use std::collections::HashMap;
use std::hash::BuildHasher as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubeforge::cache::ObjectKey;
use kubeforge::workqueue::{Priority, WorkQueue, DEFAULT_PRIORITY, LOW_PRIORITY};
use tokio::time::Instant;

const RECONCILE: Duration = Duration::from_millis(5);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Arm {
    Fifo,
    PriorityFair,
}

/// The controller's queue: client-go's FIFO, or with priorities and
/// fairness by namespace.
fn queue(arm: Arm) -> WorkQueue<ObjectKey> {
    match arm {
        Arm::Fifo => WorkQueue::builder().priorities(false).build(),
        Arm::PriorityFair => {
            let hasher = hashbrown::DefaultHashBuilder::default();
            WorkQueue::builder()
                .fairness(move |k: &ObjectKey| hasher.hash_one(k.namespace_or_empty()))
                .build()
        }
    }
}

/// A scenario: the keys queued at the start, each with its priority, and
/// the live changes, each with its time from the start.
struct Scenario {
    initial: Vec<(ObjectKey, Priority)>,
    changes: Vec<(Duration, ObjectKey)>,
}

/// What a run measured.
struct Outcome {
    waits: Vec<Duration>,
    all_reconciled: Duration,
}

/// Queues `initial` at once, adds each of `changes` at its time (from the
/// start) at the default priority, and runs one worker of 5 ms reconciles
/// until every change has been seen and the queue is empty.
async fn simulate(
    arm: Arm,
    initial: Vec<(ObjectKey, Priority)>,
    changes: Vec<(Duration, ObjectKey)>,
) -> Outcome {
    let q = queue(arm);
    let start = Instant::now();
    for (key, priority) in initial {
        q.add_with_priority(key, priority);
    }
    let expected = changes.len();
    // Each key's oldest change not yet seen by a reconcile.
    let pending: Arc<Mutex<HashMap<ObjectKey, Instant>>> = Arc::default();
    let producer = {
        let (q, pending) = (q.clone(), Arc::clone(&pending));
        tokio::spawn(async move {
            for (at, key) in changes {
                tokio::time::sleep_until(start + at).await;
                pending
                    .lock()
                    .unwrap()
                    .entry(key.clone())
                    .or_insert_with(Instant::now);
                q.add_with_priority(key, DEFAULT_PRIORITY);
            }
        })
    };
    let mut waits = Vec::with_capacity(expected);
    while let Some(key) = q.get().await {
        let began = Instant::now();
        tokio::time::sleep(RECONCILE).await;
        let ended = Instant::now();
        {
            let mut pending = pending.lock().unwrap();
            if let Some(&changed) = pending.get(&key) {
                if changed <= began {
                    waits.push(ended - changed);
                    pending.remove(&key);
                }
            }
        }
        q.done(&key);
        if waits.len() == expected && q.is_empty() {
            break;
        }
    }
    let all_reconciled = start.elapsed();
    q.shutdown();
    producer.await.expect("producer");
    Outcome {
        waits,
        all_reconciled,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn seconds(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

fn report(name: &str, goal: &str, runs: [(Arm, Outcome); 2]) {
    println!("\n{name} (goal: {goal})");
    println!(
        "  {:<16} {:>10} {:>10} {:>10}   {:>16}",
        "queue", "p50", "p99", "max", "all reconciled"
    );
    for (arm, mut outcome) in runs {
        outcome.waits.sort();
        let w = &outcome.waits;
        println!(
            "  {:<16} {:>10} {:>10} {:>10}   {:>16}",
            match arm {
                Arm::Fifo => "FIFO",
                Arm::PriorityFair => "priority+fair",
            },
            seconds(percentile(w, 0.50)),
            seconds(percentile(w, 0.99)),
            seconds(percentile(w, 1.0)),
            seconds(outcome.all_reconciled),
        );
    }
}

/// 100k objects over 100 namespaces, listed in key order, at low
/// priority; 100 changes a second apart to random ones of them.
fn restart() -> Scenario {
    let mut listed: Vec<ObjectKey> = (0..100_000)
        .map(|i| ObjectKey::namespaced(format!("ns-{:03}", i % 100), format!("cm-{i:06}")))
        .collect();
    listed.sort();
    let mut rng = fastrand::Rng::with_seed(42);
    let changes = (1..=100u64)
        .map(|s| {
            let key = listed[rng.usize(..listed.len())].clone();
            (Duration::from_secs(s), key)
        })
        .collect();
    let initial = listed.into_iter().map(|k| (k, LOW_PRIORITY)).collect();
    Scenario { initial, changes }
}

/// 10k keys of namespace `flood` at once; 100 keys of namespace `tenant`,
/// 400 ms apart.
fn flood() -> Scenario {
    let initial = (0..10_000)
        .map(|i| {
            (
                ObjectKey::namespaced("flood", format!("cm-{i:05}")),
                DEFAULT_PRIORITY,
            )
        })
        .collect();
    let changes = (1..=100u64)
        .map(|i| {
            (
                Duration::from_millis(400 * i),
                ObjectKey::namespaced("tenant", format!("cm-{i:03}")),
            )
        })
        .collect();
    Scenario { initial, changes }
}

fn run(arm: Arm, scenario: fn() -> Scenario) -> Outcome {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("tokio runtime");
    let Scenario { initial, changes } = scenario();
    rt.block_on(simulate(arm, initial, changes))
}

fn main() {
    let started = std::time::Instant::now();
    println!("workqueue latency of live changes: 1 worker, 5 ms reconciles, virtual time");
    report(
        "restart: 100k objects in the initial list, 100 live changes, 1/s",
        "p99 <= 1 s",
        [
            (Arm::Fifo, run(Arm::Fifo, restart)),
            (Arm::PriorityFair, run(Arm::PriorityFair, restart)),
        ],
    );
    report(
        "flood: 10k keys of one namespace, 100 keys of another, 1 per 400 ms",
        "p99 <= 1 s",
        [
            (Arm::Fifo, run(Arm::Fifo, flood)),
            (Arm::PriorityFair, run(Arm::PriorityFair, flood)),
        ],
    );
    println!("\n(real time: {:.1?})", started.elapsed());
}
