//! Many producers and workers on one queue, on a multi-threaded runtime:
//! no key is ever held by two workers at once, and no add is lost (each
//! key is processed after its last add). This is the guarantee a
//! controller's `concurrency(n)` rests on.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kubeforge::workqueue::{ItemExponentialFailure, WorkQueue};

const KEYS: usize = 32;
const WORKERS: usize = 16;
const PRODUCERS: usize = 4;
const ADDS_PER_PRODUCER: usize = 5_000;

struct Shared {
    /// Bumped before every add of the key.
    versions: Vec<AtomicU64>,
    /// The highest version a worker saw when it started processing the key.
    seen: Vec<AtomicU64>,
    active: Vec<AtomicBool>,
    overlaps: AtomicUsize,
    processed: AtomicUsize,
    /// Set once the producers are done: workers stop re-adding their keys,
    /// so the queue can settle. A re-add during the final drain would be
    /// dropped, as client-go's ShutDownWithDrain drops it, and is not a
    /// lost add.
    settling: AtomicBool,
}

impl Shared {
    fn bump(&self, k: usize) {
        self.versions[k].fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_workers_never_share_a_key_and_lose_no_add() {
    let q: WorkQueue<usize> = WorkQueue::builder()
        .name("concurrency")
        .rate_limiter(ItemExponentialFailure::new(
            Duration::from_micros(100),
            Duration::from_millis(2),
        ))
        .build();
    let s = Arc::new(Shared {
        versions: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
        seen: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
        active: (0..KEYS).map(|_| AtomicBool::new(false)).collect(),
        overlaps: AtomicUsize::new(0),
        processed: AtomicUsize::new(0),
        settling: AtomicBool::new(false),
    });

    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (q, s) = (q.clone(), s.clone());
            tokio::spawn(async move {
                let mut n = 0usize;
                while let Some(k) = q.get().await {
                    if s.active[k].swap(true, Ordering::SeqCst) {
                        s.overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    s.seen[k].fetch_max(s.versions[k].load(Ordering::SeqCst), Ordering::SeqCst);
                    n += 1;
                    // Hold the key across a few scheduling points.
                    for _ in 0..(n + w) % 4 {
                        tokio::task::yield_now().await;
                    }
                    // Sometimes the reconcile "fails" or re-adds itself.
                    let settling = s.settling.load(Ordering::SeqCst);
                    match (n + w) % 10 {
                        0 if !settling => {
                            s.bump(k);
                            q.add_rate_limited(k);
                        }
                        1 if !settling => {
                            s.bump(k);
                            q.add(k);
                        }
                        _ => q.forget(&k),
                    }
                    s.active[k].store(false, Ordering::SeqCst);
                    s.processed.fetch_add(1, Ordering::SeqCst);
                    q.done(&k);
                }
            })
        })
        .collect();

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (q, s) = (q.clone(), s.clone());
            tokio::spawn(async move {
                let mut rng = fastrand::Rng::with_seed(p as u64);
                for i in 0..ADDS_PER_PRODUCER {
                    let k = rng.usize(..KEYS);
                    s.bump(k);
                    if i % 7 == 0 {
                        q.add_after(k, Duration::from_micros(rng.u64(0..1_000)));
                    } else {
                        q.add(k);
                    }
                    if i % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    s.settling.store(true, Ordering::SeqCst);

    // Wait (bounded, against a hang) until every key was processed after its
    // last add. A worker still holding a key may have read `settling` before
    // it was set and re-add it, so no key may be held either (its re-add
    // comes before it lets go).
    let settled = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let held = (0..KEYS).any(|k| s.active[k].load(Ordering::SeqCst));
            let behind = held
                || (0..KEYS).any(|k| {
                    s.seen[k].load(Ordering::SeqCst) < s.versions[k].load(Ordering::SeqCst)
                });
            if !behind && q.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    assert!(
        settled.is_ok(),
        "some key was never processed after its last add"
    );

    q.shutdown_with_drain().await;
    for w in workers {
        w.await.unwrap();
    }
    assert_eq!(s.overlaps.load(Ordering::SeqCst), 0, "a key was held twice");
    for k in 0..KEYS {
        assert_eq!(
            s.seen[k].load(Ordering::SeqCst),
            s.versions[k].load(Ordering::SeqCst),
            "key {k}"
        );
        assert!(!s.active[k].load(Ordering::SeqCst));
    }
    assert!(s.processed.load(Ordering::SeqCst) >= KEYS);
}
