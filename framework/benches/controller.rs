//! The reconcile loop end to end against the in-process API server:
//!
//! - **event-to-reconcile latency**: from sending a write to the API server
//!   to the start of the reconcile that sees it (server commit, watch event,
//!   decode, informer, handler, workqueue, worker), one write at a time, as
//!   p50 / p99 / max;
//! - **reconciles per second for 10k objects**: a controller started over
//!   10k existing ConfigMaps (list, sync, one reconcile each), then 10k
//!   updates written while it runs, with 1 and 8 workers. The reconcile
//!   itself does nothing but count, so the figures are the framework's
//!   overhead.
//!
//! Run with `cargo bench -p kubeforge --bench controller`
//! (`CONTROLLER_BENCH_OBJECTS=2000` for a quicker run). The server shares
//! the process and the cores.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube_core::params::{Patch, PatchParams, PostParams};
use kube_core::ObjectMeta;
use kubeforge::cache::SharedInformerFactory;
use kubeforge::controller::{Action, Context, Controller};
use kubeforge::manager::CancellationToken;
use kubeforge::reconcile::CachedClient;
use kubeforge::testing::{ApiServer, ApiServerExt};
use kubeforge::{Api, Client};
use serde_json::json;

const NS: &str = "default";
const WRITERS: usize = 32;
const LATENCY_SAMPLES: usize = 1000;

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

fn configmap(namespace: &str, name: String) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        data: Some([("seq".to_owned(), "0".to_owned())].into()),
        ..Default::default()
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// When each write was sent, by sequence number; and when the reconcile
/// that saw it started.
#[derive(Default)]
struct Latencies {
    sent: Mutex<HashMap<u64, Instant>>,
    seen: Mutex<HashMap<u64, Duration>>,
}

async fn event_to_reconcile(client: &Client) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    api.create(&PostParams::default(), &configmap(NS, "latency".into()))
        .await
        .expect("create");
    let state = Arc::new(Latencies::default());
    let factory = SharedInformerFactory::new(client.clone());
    let controller = Controller::<ConfigMap>::builder(CachedClient::new(client.clone(), factory))
        .named("latency")
        .reconcile(
            |cm: Arc<ConfigMap>, ctx: Arc<Context<Arc<Latencies>>>| async move {
                let now = Instant::now();
                let seq: u64 = cm
                    .data
                    .as_ref()
                    .and_then(|d| d.get("seq"))
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                if let Some(sent) = ctx.sent.lock().unwrap().get(&seq) {
                    ctx.seen.lock().unwrap().entry(seq).or_insert(now - *sent);
                }
                Ok::<_, Never>(Action::done())
            },
            Arc::clone(&state),
        );
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(stop.clone()));

    // Warm up (connections, first sync), then one write at a time.
    let mut round_trips = Vec::with_capacity(LATENCY_SAMPLES + 50);
    for seq in 1..=(LATENCY_SAMPLES as u64 + 50) {
        let patch = Patch::Merge(json!({"data": {"seq": seq.to_string()}}));
        let sent = Instant::now();
        state.sent.lock().unwrap().insert(seq, sent);
        api.patch("latency", &PatchParams::default(), &patch)
            .await
            .expect("patch");
        round_trips.push(sent.elapsed());
        let deadline = Instant::now() + Duration::from_secs(10);
        while !state.seen.lock().unwrap().contains_key(&seq) {
            assert!(Instant::now() < deadline, "write {seq} never reconciled");
            tokio::task::yield_now().await;
        }
    }
    stop.cancel();
    task.await.expect("task").expect("controller");

    let seen = state.seen.lock().unwrap();
    let mut samples: Vec<Duration> = (51..=(LATENCY_SAMPLES as u64 + 50))
        .filter_map(|seq| seen.get(&seq).copied())
        .collect();
    samples.sort();
    println!(
        "event-to-reconcile latency ({} writes, one at a time): p50 {:>8.0?}  p99 {:>8.0?}  max {:>8.0?}",
        samples.len(),
        percentile(&samples, 0.50),
        percentile(&samples, 0.99),
        percentile(&samples, 1.0),
    );
    let mut round_trips = round_trips.split_off(50);
    round_trips.sort();
    println!(
        "  for scale, the write's own round trip:              p50 {:>8.0?}  p99 {:>8.0?}  (the watch event can overtake the response)",
        percentile(&round_trips, 0.50),
        percentile(&round_trips, 0.99),
    );
}

async fn populate(client: &Client, n: usize, namespace: &str) {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    futures::stream::iter(0..n)
        .map(|i| {
            let api = Api::<ConfigMap>::namespaced(client.clone(), namespace);
            async move {
                api.create(
                    &PostParams::default(),
                    &configmap(namespace, format!("cm-{i}")),
                )
                .await
                .expect("create");
            }
        })
        .buffer_unordered(WRITERS)
        .collect::<()>()
        .await;
}

async fn throughput(server: &ApiServer, n: usize, workers: usize) {
    let client = server.client().expect("client");
    // Each run has its own namespace and a cache restricted to it.
    let namespace = format!("throughput-{workers}");
    let created = Instant::now();
    populate(&client, n, &namespace).await;
    let created = created.elapsed();

    let count = Arc::new(AtomicUsize::new(0));
    let factory = SharedInformerFactory::builder(client.clone())
        .namespace(namespace.clone())
        .build();
    let controller = Controller::<ConfigMap>::builder(CachedClient::new(client.clone(), factory))
        .named(namespace.clone())
        .concurrency(workers)
        .reconcile(
            |_: Arc<ConfigMap>, ctx: Arc<Context<Arc<AtomicUsize>>>| async move {
                ctx.fetch_add(1, Ordering::Relaxed);
                Ok::<_, Never>(Action::done())
            },
            Arc::clone(&count),
        );
    let stop = CancellationToken::new();
    let started = Instant::now();
    let task = tokio::spawn(controller.run(stop.clone()));
    while count.load(Ordering::Relaxed) < n {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let initial = started.elapsed();

    // Updates while running: each write is one event; the queue collapses
    // what piles up per key.
    count.store(0, Ordering::Relaxed);
    let updating = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = Api::<ConfigMap>::namespaced(client.clone(), &namespace);
            let name = format!("cm-{i}");
            async move {
                let patch = Patch::Merge(json!({"data": {"seq": "1"}}));
                api.patch(&name, &PatchParams::default(), &patch)
                    .await
                    .expect("patch");
            }
        })
        .buffer_unordered(WRITERS)
        .collect::<()>()
        .await;
    let written = updating.elapsed();
    while count.load(Ordering::Relaxed) < n {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let updated = updating.elapsed();
    stop.cancel();
    task.await.expect("task").expect("controller");

    println!(
        "{n} objects, {workers} worker(s): start to all reconciled {:>8.2?} ({:>8.0} reconciles/s incl. list and sync; objects created in {created:.1?})",
        initial,
        n as f64 / initial.as_secs_f64()
    );
    println!(
        "{n} objects, {workers} worker(s): {n} updates written in {written:>8.2?}, all reconciled after {updated:>8.2?} ({:>8.0} reconciles/s)",
        n as f64 / updated.as_secs_f64()
    );
}

fn main() {
    let objects: usize = std::env::var("CONTROLLER_BENCH_OBJECTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let server = ApiServer::builder()
            .watch_history(100_000)
            .watch_buffer(100_000)
            .start()
            .await
            .expect("server");
        let client = server.client().expect("client");
        println!("\n== controller: event to reconcile ==");
        event_to_reconcile(&client).await;
        println!("\n== controller: throughput ==");
        for workers in [1, 8] {
            throughput(&server, objects, workers).await;
        }
    });
}
