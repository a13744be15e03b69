//! Sharded controllers against the in-process API server: 20k ConfigMaps,
//! an I/O-bound reconcile (a fixed wait, as a real reconcile waits on the
//! API), and 1 to 4 replicas, each with its own client and cache as a
//! separate process would have. For each replica count, once the ring has
//! settled:
//!
//! - **throughput**: every object is changed (32 concurrent writers) and
//!   the time until every change was reconciled gives reconciles per
//!   second, against N × one replica's;
//! - **cache per replica**: the objects (and their JSON bytes) in each
//!   replica's primary cache, against one replica's whole;
//! - **moved on a join**: the objects whose replica changed when one
//!   more replica joined (1 to 2, 2 to 3, 3 to 4), as a fraction of all;
//! - **failover** (4 replicas): one replica is dropped without leaving
//!   (a crash: its Lease is left to expire), its objects are changed, and
//!   the time until the survivors reconciled them all is timed against
//!   the lease duration (15 s, client-go's default).
//!
//! Run with `cargo bench -p kubeforge --bench sharding`
//! (`SHARDING_BENCH_OBJECTS=2000` for a quicker run). The server and every
//! replica share the process and its cores.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_core::params::{Patch, PatchParams, PostParams};
use kube_core::ObjectMeta;
use kubeforge::cache::{InformerOptions, SharedInformerFactory, Slots};
use kubeforge::controller::{Action, Context, Controller};
use kubeforge::manager::CancellationToken;
use kubeforge::reconcile::CachedClient;
use kubeforge::sharding::{ShardGate, Sharding};
use kubeforge::testing::{ApiServer, ApiServerExt};
use kubeforge::{Api, Client};
use serde_json::json;

const NS: &str = "default";
const RING: &str = "bench-shards";
const WRITERS: usize = 32;
/// The reconcile's wait, and the workers per replica: one replica
/// reconciles at most WORKERS / RECONCILE_WAIT per second.
const RECONCILE_WAIT: Duration = Duration::from_millis(50);
const WORKERS: usize = 8;

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

/// The generation each object was last reconciled at, and when.
#[derive(Default)]
struct Seen(Mutex<HashMap<String, (u64, Instant)>>);

impl Seen {
    /// When the last of `names` was reconciled at `generation` or later,
    /// once all have been.
    fn all_at(&self, names: &[String], generation: u64) -> Option<Instant> {
        let seen = self.0.lock().unwrap();
        names
            .iter()
            .map(|n| {
                seen.get(n)
                    .filter(|(g, _)| *g >= generation)
                    .map(|(_, t)| *t)
            })
            .try_fold(None::<Instant>, |latest, t| {
                t.map(|t| Some(latest.map_or(t, |l: Instant| l.max(t))))
            })
            .flatten()
    }
}

async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Context<Arc<Seen>>>) -> Result<Action, Never> {
    tokio::time::sleep(RECONCILE_WAIT).await;
    let generation = cm
        .data
        .as_ref()
        .and_then(|d| d.get("generation"))
        .and_then(|g| g.parse().ok())
        .unwrap_or(0);
    let name = cm.metadata.name.clone().unwrap_or_default();
    ctx.data()
        .0
        .lock()
        .unwrap()
        .insert(name, (generation, Instant::now()));
    Ok(Action::done())
}

struct Replica {
    gate: ShardGate,
    cached: CachedClient,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), kubeforge::controller::Error>>,
}

impl Replica {
    fn start(client: &Client, name: &str, seen: &Arc<Seen>) -> Replica {
        let cached = CachedClient::new(client.clone(), SharedInformerFactory::new(client.clone()));
        let controller = Controller::<ConfigMap>::builder(cached.clone())
            .named("bench")
            .sharded(Sharding {
                identity: Some(name.to_owned()),
                ..Sharding::ring(RING)
            })
            .concurrency(WORKERS)
            .reconcile(reconcile, Arc::clone(seen));
        let gate = controller.shard_gate().expect("sharded").clone();
        let stop = CancellationToken::new();
        let task = tokio::spawn(controller.run(stop.clone()));
        Replica {
            gate,
            cached,
            stop,
            task,
        }
    }

    fn cached(&self) -> Vec<Arc<ConfigMap>> {
        self.cached
            .informer_with::<ConfigMap>(
                InformerOptions::default().holdings(self.gate.holdings(RING)),
            )
            .store()
            .list()
    }

    fn names(&self) -> BTreeSet<String> {
        self.cached()
            .iter()
            .filter_map(|cm| cm.metadata.name.clone())
            .collect()
    }
}

async fn settle(replicas: &[&Replica], objects: usize) {
    let share = Slots::ALL.len() / replicas.len() as u32;
    let started = Instant::now();
    loop {
        let mut union = Slots::NONE;
        let mut disjoint = true;
        for r in replicas {
            disjoint &= union.intersect(r.gate.active()).is_empty();
            union = union.union(r.gate.active());
        }
        let shares = replicas.iter().all(|r| r.gate.active().len() >= share);
        let cached: usize = replicas.iter().map(|r| r.cached().len()).sum();
        if disjoint && shares && union == Slots::ALL && cached == objects {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the ring did not settle"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Changes every object in `names` to `generation`; returns when the
/// last write was answered.
async fn change(client: &Client, names: &[String], generation: u64) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    futures::stream::iter(names)
        .map(|name| {
            let api = api.clone();
            async move {
                let patch = json!({"data": {"generation": generation.to_string()}});
                api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .expect("patch");
            }
        })
        .buffer_unordered(WRITERS)
        .collect::<Vec<()>>()
        .await;
}

async fn reconciled(seen: &Seen, names: &[String], generation: u64, deadline: Duration) -> Instant {
    let started = Instant::now();
    loop {
        if let Some(at) = seen.all_at(names, generation) {
            return at;
        }
        assert!(
            started.elapsed() < deadline,
            "not every change was reconciled within {deadline:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn json_bytes(objects: &[Arc<ConfigMap>]) -> usize {
    objects
        .iter()
        .map(|o| serde_json::to_vec(o.as_ref()).map_or(0, |v| v.len()))
        .sum()
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let objects: usize = std::env::var("SHARDING_BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let server = ApiServer::start().await.expect("server starts");
    let client = server.client().expect("client");
    let names: Vec<String> = (0..objects).map(|i| format!("cm-{i}")).collect();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    futures::stream::iter(&names)
        .map(|name| {
            let api = api.clone();
            async move {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        ..ObjectMeta::default()
                    },
                    data: Some([("generation".to_owned(), "0".to_owned())].into()),
                    ..ConfigMap::default()
                };
                api.create(&PostParams::default(), &cm)
                    .await
                    .expect("create");
            }
        })
        .buffer_unordered(WRITERS)
        .collect::<Vec<()>>()
        .await;
    println!(
        "sharded controllers: {objects} ConfigMaps, a {} ms reconcile, {WORKERS} workers per replica",
        RECONCILE_WAIT.as_millis()
    );

    let seen = Arc::new(Seen::default());
    let mut replicas: Vec<Replica> = Vec::new();
    let mut generation = 0;
    let mut single: Option<(f64, usize)> = None;
    for n in [1usize, 2, 3, 4] {
        let before: Vec<BTreeSet<String>> = replicas.iter().map(Replica::names).collect();
        while replicas.len() < n {
            let name = format!("r{}", replicas.len());
            replicas.push(Replica::start(&client, &name, &seen));
        }
        settle(&replicas.iter().collect::<Vec<_>>(), objects).await;
        // Moved: objects not held by the replica that held them before.
        let moved = if before.is_empty() {
            None
        } else {
            let after: Vec<BTreeSet<String>> = replicas.iter().map(Replica::names).collect();
            let kept: usize = before
                .iter()
                .zip(&after)
                .map(|(b, a)| b.intersection(a).count())
                .sum();
            Some((objects - kept) as f64 / objects as f64)
        };
        generation += 1;
        let started = Instant::now();
        change(&client, &names, generation).await;
        let written = started.elapsed();
        let last = reconciled(&seen, &names, generation, Duration::from_secs(600)).await;
        let rate = objects as f64 / last.duration_since(started).as_secs_f64();
        let caches: Vec<Vec<Arc<ConfigMap>>> = replicas.iter().map(Replica::cached).collect();
        let largest = caches.iter().map(Vec::len).max().unwrap_or(0);
        let largest_bytes = caches.iter().map(|c| json_bytes(c)).max().unwrap_or(0);
        let (one_rate, one_objects) = *single.get_or_insert((rate, largest));
        println!("  {n} replica(s):");
        println!(
            "    throughput        {rate:>8.0} reconciles/s   {:.2}x one replica (goal ≥ {:.1}x)",
            rate / one_rate,
            0.9 * n as f64
        );
        println!(
            "    (the {objects} writes took {:.1}s of the {:.1}s)",
            written.as_secs_f64(),
            last.duration_since(started).as_secs_f64()
        );
        println!(
            "    largest cache     {largest:>8} objects ({:.1} MiB of JSON)   {:.3} of one replica's (goal ≤ {:.3})",
            largest_bytes as f64 / (1 << 20) as f64,
            largest as f64 / one_objects as f64,
            1.0 / n as f64 + 0.1
        );
        if let Some(moved) = moved {
            println!(
                "    moved on the join {:>8.3} of the objects   (goal ≤ {:.3})",
                moved,
                1.2 / n as f64
            );
        }
    }

    // Failover: a replica crashes (its task dropped; its Lease expires).
    let crashed = replicas.pop().expect("four replicas");
    let orphaned: Vec<String> = crashed.names().into_iter().collect();
    crashed.task.abort();
    let killed = Instant::now();
    generation += 1;
    change(&client, &orphaned, generation).await;
    let last = reconciled(&seen, &orphaned, generation, Duration::from_secs(120)).await;
    let took = last.duration_since(killed);
    println!(
        "  failover: the survivors reconciled the crashed replica's {} objects {:.1}s after the crash (goal ≤ 2 lease durations: 30 s)",
        orphaned.len(),
        took.as_secs_f64()
    );
    for r in replicas {
        r.stop.cancel();
        let _ = r.task.await;
    }
    server.shutdown().await;
}
