//! The informer end to end against the in-process API server, for 10k and
//! 100k ConfigMaps of about 1 KiB each (with the server's managedFields):
//!
//! - time from `start()` to synced (list at resourceVersion 0, streamed
//!   decode, transform, store), with and without `strip_managed_fields()`;
//! - heap bytes and allocations per cached object, counted by a counting
//!   global allocator: what the cache frees when it is dropped. The
//!   in-process server does not record managedFields yet, so the
//!   with/without `strip_managed_fields()` comparison also caches the same
//!   list with a typical server-side-apply managedFields entry added to
//!   each item, through a `SharedInformer` without the network;
//! - steady-state events per second: updates replayed from the watch
//!   history, applied to the store and delivered to a handler;
//! - the floor: decoding the very same list bytes with
//!   `serde_json::from_slice::<ObjectList<ConfigMap>>`, and the heap the
//!   decoded list holds.
//!
//! Run with `cargo bench -p kubeforge --bench cache_informer`
//! (`CACHE_BENCH_SIZES=10000` to run one size). The server shares the
//! process (and the allocator); heap figures are measured as the bytes
//! freed by dropping the cache, so they exclude the server.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube_core::params::{Patch, PatchParams, PostParams};
use kube_core::{ObjectList, ObjectMeta, ResourceExt};
use kubeforge::cache::{
    strip_managed_fields, Backoff, DeltaSink, HandlerFns, InformerOptions, SharedInformer,
    SharedInformerFactory,
};
use kubeforge::testing::{ApiServer, ApiServerExt, Failure, RequestMatch};
use kubeforge::{Api, Client};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

const NAMESPACES: usize = 10;
const WRITERS: usize = 32;

/// Live heap: bytes and allocations.
#[derive(Clone, Copy, Debug)]
struct Heap {
    bytes: i128,
    blocks: i128,
}

fn heap() -> Heap {
    let s = GLOBAL.stats();
    Heap {
        bytes: s.bytes_allocated as i128 + s.bytes_reallocated as i128
            - s.bytes_deallocated as i128,
        blocks: s.allocations as i128 - s.deallocations as i128,
    }
}

fn configmap(i: usize) -> ConfigMap {
    // About 1 KiB as served: a 700-byte value, labels, an annotation and
    // the metadata the server adds.
    let value: String = (0..700)
        .map(|j| (b'a' + ((i + j) % 26) as u8) as char)
        .collect();
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("config-{i:06}")),
            labels: Some(BTreeMap::from([
                ("app".to_owned(), format!("app-{}", i % 50)),
                ("tier".to_owned(), "backend".to_owned()),
            ])),
            annotations: Some(BTreeMap::from([(
                "example.com/owner".to_owned(),
                "team-storage".to_owned(),
            )])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([
            ("settings.conf".to_owned(), value),
            ("mode".to_owned(), "fast".to_owned()),
        ])),
        ..Default::default()
    }
}

async fn populate(client: &Client, n: usize) {
    for i in 0..NAMESPACES {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(format!("bench-{i}")),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("namespace");
    }
    futures::stream::iter(0..n)
        .map(|i| {
            let api =
                Api::<ConfigMap>::namespaced(client.clone(), &format!("bench-{}", i % NAMESPACES));
            async move {
                api.create(&PostParams::default(), &configmap(i))
                    .await
                    .expect("create");
            }
        })
        .buffer_unordered(WRITERS)
        .collect::<()>()
        .await;
}

struct Synced {
    elapsed: Duration,
    bytes_per_object: f64,
    blocks_per_object: f64,
}

/// Starts a factory with one ConfigMap informer, waits for it to sync,
/// then drops it and measures what that freed.
async fn sync_once(client: &Client, n: usize, strip: bool) -> Synced {
    let start = Instant::now();
    let factory = SharedInformerFactory::new(client.clone());
    let options = if strip {
        InformerOptions::default().transform(strip_managed_fields())
    } else {
        InformerOptions::default()
    };
    let informer = factory.informer_with::<ConfigMap>(options);
    factory.start();
    for (id, result) in factory.wait_for_cache_sync(Duration::from_secs(600)).await {
        result.unwrap_or_else(|e| panic!("{id}: {e}"));
    }
    let elapsed = start.elapsed();
    assert_eq!(informer.store().len(), n);
    // Let the list's buffers on both sides be freed, then measure what
    // dropping the cache gives back.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let with_cache = heap();
    factory.shutdown();
    drop(informer);
    drop(factory);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let without = heap();
    Synced {
        elapsed,
        bytes_per_object: (with_cache.bytes - without.bytes) as f64 / n as f64,
        blocks_per_object: (with_cache.blocks - without.blocks) as f64 / n as f64,
    }
}

/// Updates replayed at full speed: the watch is held down while `updates`
/// writes pile up in the server's history, then released; measures the
/// time until the store has seen the last one and a handler has had every
/// event.
async fn steady_state(
    server: &ApiServer,
    client: &Client,
    n: usize,
    updates: usize,
    round: usize,
) -> Duration {
    let factory = SharedInformerFactory::builder(client.clone())
        .backoff(Backoff::new(
            Duration::from_millis(1),
            Duration::from_millis(5),
        ))
        .build();
    let informer = factory
        .informer_with::<ConfigMap>(InformerOptions::default().transform(strip_managed_fields()));
    let handled = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&handled);
    informer
        .add_handler(
            HandlerFns::new().on_update(move |_old, _new| {
                counter.fetch_add(1, Ordering::Relaxed);
            }),
            None,
        )
        .expect("handler");
    factory.start();
    for (id, result) in factory.wait_for_cache_sync(Duration::from_secs(600)).await {
        result.unwrap_or_else(|e| panic!("{id}: {e}"));
    }

    let faults = server.faults();
    faults.fail_next(
        usize::MAX,
        RequestMatch::verb("watch").resource("configmaps"),
        Failure::InternalError,
    );
    faults.close_watches();
    let last_rv = futures::stream::iter(0..updates)
        .map(|u| {
            let i = (u * 7919) % n;
            let api =
                Api::<ConfigMap>::namespaced(client.clone(), &format!("bench-{}", i % NAMESPACES));
            async move {
                // A new value each round, or the write is a no-op with no event.
                let patch = serde_json::json!({"data": {"mode": format!("update-{round}-{u}")}});
                let cm = api
                    .patch(
                        &format!("config-{i:06}"),
                        &PatchParams::default(),
                        &Patch::Merge(patch),
                    )
                    .await
                    .expect("patch");
                cm.resource_version()
                    .and_then(|rv| rv.parse::<u64>().ok())
                    .unwrap_or(0)
            }
        })
        .buffer_unordered(WRITERS)
        .fold(0u64, |max, rv| async move { max.max(rv) })
        .await;

    let start = Instant::now();
    faults.clear();
    informer
        .wait_for_resource_version(&last_rv.to_string(), Duration::from_secs(600))
        .await
        .expect("the informer catches up");
    let deadline = Instant::now() + Duration::from_secs(600);
    while handled.load(Ordering::Relaxed) < updates {
        assert!(
            Instant::now() < deadline,
            "the handler did not get every update"
        );
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let elapsed = start.elapsed();
    factory.shutdown();
    elapsed
}

async fn list_bytes(client: &Client) -> bytes::Bytes {
    let request = http::Request::get("/api/v1/configmaps?resourceVersion=0")
        .body(Vec::new())
        .expect("request");
    client.request_bytes(request).await.expect("list bytes")
}

/// The floor: decoding the same list bytes as one `serde_json` value.
fn decode_floor(bytes: &[u8], n: usize) -> (Duration, f64) {
    let mut best = Duration::MAX;
    let mut held = 0.0;
    for _ in 0..3 {
        let before = heap();
        let start = Instant::now();
        let list: ObjectList<ConfigMap> = serde_json::from_slice(bytes).expect("decodes");
        best = best.min(start.elapsed());
        held = (heap().bytes - before.bytes) as f64 / n as f64;
        assert_eq!(list.items.len(), n);
        black_box(list);
    }
    (best, held)
}

/// The managedFields entry kube-apiserver records for a server-side apply
/// of [`configmap`] by kubectl.
fn managed_fields() -> serde_json::Value {
    serde_json::json!([{
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "v1",
        "time": "2026-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:data": {"f:mode": {}, "f:settings.conf": {}},
            "f:metadata": {
                "f:annotations": {"f:example.com/owner": {}},
                "f:labels": {"f:app": {}, "f:tier": {}}
            }
        }
    }])
}

/// Heap per object of a cache holding `list`'s items, each decoded from
/// its own bytes, transformed, wrapped in an `Arc` and stored through an
/// informer (the reflector's path without the network).
fn cache_heap_offline(items: &[Vec<u8>], strip: bool) -> (f64, f64) {
    let before = heap();
    let (informer, mut writer) = SharedInformer::<ConfigMap>::new("configmaps");
    let transform = strip_managed_fields::<ConfigMap>();
    let objects: Vec<Arc<ConfigMap>> = items
        .iter()
        .map(|raw| {
            let cm: ConfigMap = serde_json::from_slice(raw).expect("item decodes");
            Arc::new(if strip { transform.apply(cm) } else { cm })
        })
        .collect();
    writer.replace(objects, "1".to_owned());
    let with_cache = heap();
    drop(writer);
    drop(informer);
    let n = items.len() as f64;
    (
        (with_cache.bytes - before.bytes) as f64 / n,
        (with_cache.blocks - before.blocks) as f64 / n,
    )
}

fn per_sec(n: usize, d: Duration) -> String {
    format!("{:.0}/s", n as f64 / d.as_secs_f64())
}

async fn bench(n: usize) {
    let server = ApiServer::builder()
        .watch_history(200_000)
        .watch_buffer(200_000)
        .start()
        .await
        .expect("server");
    let client = server.client().expect("client");
    let start = Instant::now();
    populate(&client, n).await;
    println!(
        "\n== {n} ConfigMaps (created in {:.1?}) ==",
        start.elapsed()
    );

    let mut fetch = Duration::MAX;
    let mut body = bytes::Bytes::new();
    for _ in 0..3 {
        let start = Instant::now();
        body = list_bytes(&client).await;
        fetch = fetch.min(start.elapsed());
    }
    let (decode, decoded_heap) = decode_floor(&body, n);
    println!(
        "list body                                 {:>10.1} MiB  ({:.0} bytes per object)",
        body.len() as f64 / (1024.0 * 1024.0),
        body.len() as f64 / n as f64
    );
    println!(
        "GET of the list bytes (no decode)         {:>10.1?}  (server, TLS and HTTP: best of 3)",
        fetch
    );
    println!(
        "serde_json decode of the list             {:>10.1?}  ({}, holds {:.0} bytes per object; best of 3)",
        decode,
        per_sec(n, decode),
        decoded_heap
    );
    for strip in [false, true] {
        // Median of three runs: the machine is shared.
        let mut runs = Vec::new();
        for _ in 0..3 {
            runs.push(sync_once(&client, n, strip).await);
        }
        runs.sort_by_key(|r| r.elapsed);
        let s = runs.swap_remove(1);
        let label = if strip {
            "informer synced, strip_managed_fields()"
        } else {
            "informer synced, as served"
        };
        println!(
            "{label:<42}{:>10.1?}  ({}, {:.2}x the decode floor; cache holds {:.0} bytes, {:.1} allocations per object; median of 3)",
            s.elapsed,
            per_sec(n, s.elapsed),
            s.elapsed.as_secs_f64() / decode.as_secs_f64(),
            s.bytes_per_object,
            s.blocks_per_object
        );
    }
    // The same items with a managedFields entry each, cached without the
    // network: what stripping managedFields saves.
    let mut list: serde_json::Value = serde_json::from_slice(&body).expect("list");
    let items: Vec<Vec<u8>> = list["items"]
        .as_array_mut()
        .expect("items")
        .iter_mut()
        .map(|item| {
            item["metadata"]["managedFields"] = managed_fields();
            serde_json::to_vec(item).expect("item")
        })
        .collect();
    drop(list);
    let item_bytes = items.iter().map(Vec::len).sum::<usize>() as f64 / n as f64;
    for strip in [false, true] {
        let (bytes, blocks) = cache_heap_offline(&items, strip);
        let label = if strip {
            "  with managedFields, stripped"
        } else {
            "  with managedFields, kept"
        };
        println!(
            "{label:<42}{:>10.0} bytes, {:.1} allocations per cached object ({item_bytes:.0} JSON bytes per item)",
            bytes, blocks
        );
    }
    drop(items);

    let updates = (n / 5).max(10_000);
    let mut took = Duration::MAX;
    for round in 0..2 {
        took = took.min(steady_state(&server, &client, n, updates, round).await);
    }
    println!(
        "steady state: {updates} watch events   {:>10.1?}  ({} applied and delivered to a handler; best of 2)",
        took,
        per_sec(updates, took)
    );
    server.shutdown().await;
}

fn main() {
    let sizes: Vec<usize> = std::env::var("CACHE_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // Region keeps the counting allocator's statistics alive and visible.
    let region = Region::new(GLOBAL);
    for n in sizes {
        runtime.block_on(bench(n));
    }
    let total = region.change();
    println!(
        "\n(total allocations during the run: {}, {:.1} GiB)",
        total.allocations,
        total.bytes_allocated as f64 / (1024.0 * 1024.0 * 1024.0)
    );
}
