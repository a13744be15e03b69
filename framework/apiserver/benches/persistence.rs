//! What a data directory costs: creates per second over HTTPS with 1 and 16
//! clients, in memory and persisted (each acknowledged only once fsynced;
//! group commit lets concurrent writers share a sync); how long a server
//! takes to start on a directory of many objects; and how large the
//! database is after many updates to a few objects (it keeps only each
//! object's latest version, so updates must not grow it). Prints figures
//! beside their goals; asserts nothing about time.
//!
//! `cargo bench -p kubeforge-apiserver --bench persistence`
//! (`PERSISTENCE_BENCH_CREATES`, `PERSISTENCE_BENCH_OBJECTS` and
//! `PERSISTENCE_BENCH_UPDATES` scale it; the README's figures are from
//! `PERSISTENCE_BENCH_UPDATES=1000000`). `PERSISTENCE_BENCH_ARM=memory` or
//! `persisted` runs only that arm's creates (`PERSISTENCE_BENCH_CLIENTS`,
//! default 16) and exits, to time the two arms as whole processes.

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use common::Kube;
use kubeforge_apiserver::ApiServer;
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn configmap(i: usize) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i:07}"), "labels": {"app": "bench"}},
        "data": {"key": "value", "index": i.to_string()}})
}

/// Creates `n` ConfigMaps from `clients` concurrent clients; the rate.
async fn create(k: &Arc<Kube>, n: usize, clients: usize) -> f64 {
    let t = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let k = k.clone();
            tokio::spawn(async move {
                let mut i = c;
                while i < n {
                    let r = k.post(CMS, &configmap(i)).await;
                    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
                    i += clients;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("client");
    }
    n as f64 / t.elapsed().as_secs_f64()
}

/// Updates `objects` ConfigMaps round robin, `updates` times in all, from
/// 16 clients.
async fn update(k: &Arc<Kube>, objects: usize, updates: usize) {
    let clients = 16;
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let k = k.clone();
            tokio::spawn(async move {
                let mut i = c;
                while i < updates {
                    let name = format!("cm-{:07}", i % objects);
                    let patch = json!({"data": {"index": i.to_string()}});
                    let r = k.merge(&format!("{CMS}/{name}"), &patch).await;
                    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
                    i += clients;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("client");
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let creates = env_usize("PERSISTENCE_BENCH_CREATES", 4_000);
    let objects = env_usize("PERSISTENCE_BENCH_OBJECTS", 100_000);
    let updates = env_usize("PERSISTENCE_BENCH_UPDATES", 100_000);
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a scratch directory");
    if let Ok(arm) = std::env::var("PERSISTENCE_BENCH_ARM") {
        let clients = env_usize("PERSISTENCE_BENCH_CLIENTS", 16);
        let builder = match arm.as_str() {
            "memory" => ApiServer::builder(),
            "persisted" => ApiServer::builder().data_dir(scratch.path().join("arm")),
            other => panic!("PERSISTENCE_BENCH_ARM is memory or persisted, not {other:?}"),
        };
        let k = Arc::new(Kube::with(builder).await);
        let rate = create(&k, creates, clients).await;
        println!("{arm}: {creates} creates from {clients} clients, {rate:.0}/s");
        return;
    }
    println!("persistence bench: in {}", scratch.path().display());

    println!("\ncreates/s over HTTPS   in memory   persisted   ratio   goal");
    for clients in [1, 16] {
        let memory = Arc::new(Kube::start().await);
        let in_memory = create(&memory, creates, clients).await;
        let dir = scratch.path().join(format!("creates-{clients}"));
        let persisted = Arc::new(Kube::with(ApiServer::builder().data_dir(&dir)).await);
        let on_disk = create(&persisted, creates, clients).await;
        let goal = if clients == 16 { ">= 0.5x" } else { "" };
        println!(
            "  {clients:2} client(s)          {in_memory:9.0}   {on_disk:9.0}   {:.2}x   {goal}",
            on_disk / in_memory
        );
    }

    let dir = scratch.path().join("start");
    let filled = Arc::new(Kube::with(ApiServer::builder().data_dir(&dir)).await);
    let t = Instant::now();
    create(&filled, objects, 16).await;
    let fill = t.elapsed();
    drop(filled);
    // Dropping the server committed what was queued and closed the
    // database, so the directory is free.
    let t = Instant::now();
    let server = ApiServer::builder()
        .data_dir(&dir)
        .start()
        .await
        .expect("the server starts on the filled directory");
    let started = t.elapsed();
    server.shutdown().await;
    println!(
        "\nstart-up on {objects} objects ({} on disk, filled in {fill:.1?}): {started:.2?}   goal <= 5 s",
        mib(dir_bytes(&dir))
    );

    let dir = scratch.path().join("updates");
    let k = Arc::new(Kube::with(ApiServer::builder().data_dir(&dir)).await);
    let few = 1_000;
    create(&k, few, 16).await;
    let after_create = dir_bytes(&dir);
    let t = Instant::now();
    update(&k, few, updates).await;
    let took = t.elapsed();
    println!(
        "database after {updates} updates to {few} objects: {} (after their creation: {}), {:.0} updates/s",
        mib(dir_bytes(&dir)),
        mib(after_create),
        updates as f64 / took.as_secs_f64()
    );
}
