//! Store throughput with 100k ConfigMaps in 100 namespaces, plus an `app`
//! label index with 10 values: prints the rate of `replace` (the initial
//! list and an unchanged relist), `apply` (adds, updates that keep or move
//! index entries, deletes), reads (`get_by`, `list`, `list_namespace`,
//! `by_index`), and `apply` through a `SharedInformer` with handlers
//! attached (the distribution cost).
//!
//! Run with `cargo bench -p kubeforge --bench cache_store`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube_core::ObjectMeta;
use kubeforge::cache::{Delta, DeltaSink, HandlerFns, SharedInformer, StoreWriter};

const OBJECTS: usize = 100_000;
const NAMESPACES: usize = 100;
const APPS: usize = 10;

fn rate(n: usize, elapsed: Duration) -> String {
    let per_sec = n as f64 / elapsed.as_secs_f64();
    if per_sec >= 1e6 {
        format!("{:>8.2} M/s", per_sec / 1e6)
    } else {
        format!("{:>8.0} k/s", per_sec / 1e3)
    }
}

fn report(what: &str, n: usize, elapsed: Duration) {
    println!(
        "{what:<52} {n:>7} in {:>9.2?}  {}",
        elapsed,
        rate(n, elapsed)
    );
}

/// A ConfigMap of about 1 KiB of data.
fn cm(i: usize, rv: u64, app: usize) -> Arc<ConfigMap> {
    let data = (0..8)
        .map(|k| (format!("key-{k}"), format!("{i:0>120}")))
        .collect::<BTreeMap<_, _>>();
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("cm-{i}")),
            namespace: Some(format!("ns-{}", i % NAMESPACES)),
            resource_version: Some(rv.to_string()),
            labels: Some(BTreeMap::from([("app".to_owned(), format!("app-{app}"))])),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    })
}

fn app_index(cm: &ConfigMap) -> Vec<String> {
    cm.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("app"))
        .cloned()
        .into_iter()
        .collect()
}

fn objects(rv_base: u64, app_shift: usize) -> Vec<Arc<ConfigMap>> {
    (0..OBJECTS)
        .map(|i| cm(i, rv_base + i as u64, (i + app_shift) % APPS))
        .collect()
}

fn store_bench() {
    println!(
        "-- Store ({OBJECTS} ConfigMaps, {NAMESPACES} namespaces, index `app` with {APPS} values)"
    );
    let initial = objects(1, 0);

    let mut w = StoreWriter::new();
    w.store().add_index("app", app_index).unwrap();
    let start = Instant::now();
    let out = w.replace(initial.clone(), "0".into());
    report(
        "replace: initial list into an empty store",
        OBJECTS,
        start.elapsed(),
    );
    drop(out);

    let start = Instant::now();
    let out = w.replace(initial.clone(), "1".into());
    report(
        "replace: relist, every resourceVersion unchanged",
        OBJECTS,
        start.elapsed(),
    );
    drop(out);

    let mut w = StoreWriter::new();
    w.store().add_index("app", app_index).unwrap();
    let start = Instant::now();
    for o in &initial {
        black_box(w.apply(Delta::Added(Arc::clone(o))));
    }
    report("apply: add", OBJECTS, start.elapsed());

    let updates = objects(1_000_000, 0);
    let start = Instant::now();
    for o in &updates {
        black_box(w.apply(Delta::Updated(Arc::clone(o))));
    }
    report(
        "apply: update, index values unchanged",
        OBJECTS,
        start.elapsed(),
    );

    let moves = objects(2_000_000, 1);
    let start = Instant::now();
    for o in &moves {
        black_box(w.apply(Delta::Updated(Arc::clone(o))));
    }
    report(
        "apply: update, `app` index value moves",
        OBJECTS,
        start.elapsed(),
    );

    let s = w.store();
    let start = Instant::now();
    for i in 0..OBJECTS {
        black_box(s.get_by(Some(&format!("ns-{}", i % NAMESPACES)), &format!("cm-{i}")));
    }
    report(
        "get_by (key strings built per call)",
        OBJECTS,
        start.elapsed(),
    );

    let rounds = 20;
    let start = Instant::now();
    for _ in 0..rounds {
        black_box(s.list());
    }
    report(
        &format!("list: all objects, x{rounds}"),
        OBJECTS * rounds,
        start.elapsed(),
    );

    let start = Instant::now();
    let mut n = 0;
    for r in 0..rounds {
        for ns in 0..NAMESPACES {
            n += black_box(s.list_namespace(&format!("ns-{}", (ns + r) % NAMESPACES))).len();
        }
    }
    report(
        &format!("list_namespace: every namespace, x{rounds}"),
        n,
        start.elapsed(),
    );

    let start = Instant::now();
    let mut n = 0;
    for _ in 0..rounds {
        for app in 0..APPS {
            n += black_box(s.by_index("app", &format!("app-{app}")).unwrap()).len();
        }
    }
    report(
        &format!("by_index: every `app` value, x{rounds}"),
        n,
        start.elapsed(),
    );

    let start = Instant::now();
    for o in &moves {
        black_box(w.apply(Delta::Deleted(Arc::clone(o))));
    }
    report("apply: delete", OBJECTS, start.elapsed());
}

async fn informer_bench(handlers: usize) {
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    informer.add_index("app", app_index).unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let mut registrations = Vec::new();
    for _ in 0..handlers {
        let seen = Arc::clone(&seen);
        let handler = HandlerFns::from_fn(move |_| {
            seen.fetch_add(1, Ordering::Relaxed);
        });
        registrations.push(informer.add_handler(handler, None).unwrap());
    }
    let initial = objects(1, 0);
    let updates = objects(1_000_000, 0);
    let expected = (2 * OBJECTS * handlers) as u64;

    let start = Instant::now();
    w.replace(initial, "0".into());
    for o in &updates {
        w.apply(Delta::Updated(Arc::clone(o)));
    }
    let written = start.elapsed();
    while seen.load(Ordering::Relaxed) < expected {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let delivered = start.elapsed();
    report(
        &format!("informer, {handlers} handler(s): list + updates written"),
        2 * OBJECTS,
        written,
    );
    report(
        &format!("informer, {handlers} handler(s): ... and handled by all"),
        2 * OBJECTS,
        delivered,
    );
    let max = registrations
        .iter()
        .map(|r| r.max_backlog())
        .max()
        .unwrap_or(0);
    println!("{:<52} {max:>7}", "  largest handler backlog");
}

fn main() {
    store_bench();
    println!("-- SharedInformer (no-op handlers on a 2-worker runtime)");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for handlers in [0, 1, 4] {
        rt.block_on(informer_bench(handlers));
    }
}
