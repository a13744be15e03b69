//! Throughput of the in-process API server: creating objects, listing them
//! (whole and paginated) and fanning watch events out to many watchers,
//! over real HTTPS. Prints figures; asserts nothing about time.
//!
//! `cargo bench -p kubeforge-apiserver --bench apiserver`
//! (`APISERVER_BENCH_OBJECTS` and `APISERVER_BENCH_WATCHERS` scale it).

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Kube;
use http_body_util::BodyExt;
use kubeforge_apiserver::ApiServer;
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rate(n: usize, d: Duration) -> String {
    format!("{:.0}/s", n as f64 / d.as_secs_f64())
}

/// Reads a watch stream until `events` newline-terminated frames arrived.
async fn drain(k: Arc<Kube>, path: String, events: usize) -> (usize, usize) {
    let req = http::Request::get(format!("{}{path}", k.base()))
        .header("authorization", format!("Bearer {}", k.token()))
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .expect("request");
    let client = common::client(&k.server, false);
    let resp = client.request(req).await.expect("watch");
    let mut body = resp.into_body();
    let (mut seen, mut bytes) = (0, 0);
    while seen < events {
        match body.frame().await {
            Some(Ok(f)) => {
                if let Ok(d) = f.into_data() {
                    bytes += d.len();
                    seen += d.iter().filter(|b| **b == b'\n').count();
                }
            }
            _ => break,
        }
    }
    (seen, bytes)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let objects = env_usize("APISERVER_BENCH_OBJECTS", 100_000);
    let watchers = env_usize("APISERVER_BENCH_WATCHERS", 10);
    let k = Arc::new(
        Kube::with(
            ApiServer::builder()
                .watch_history(objects * 2 + 10)
                .watch_buffer(objects * 2 + 10),
        )
        .await,
    );
    println!("apiserver bench: {objects} configmaps, {watchers} watchers");
    let start_rv = k.get(CMS).await.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();

    // Live fan-out: watchers open before the writes.
    let live: Vec<_> = (0..watchers)
        .map(|_| {
            tokio::spawn(drain(
                k.clone(),
                format!("{CMS}?watch=1&resourceVersion={start_rv}"),
                objects,
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let t = Instant::now();
    let writers = 32;
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let k = k.clone();
            tokio::spawn(async move {
                let mut i = w;
                while i < objects {
                    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("cm-{i:06}"), "labels": {"shard": (i % 10).to_string()}},
                        "data": {"key": "value", "index": i.to_string()}});
                    let r = k.post(CMS, &body).await;
                    assert_eq!(r.code(), 201);
                    i += writers;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("writer");
    }
    let created = t.elapsed();
    println!(
        "create:            {objects} objects in {created:.2?} ({} over HTTPS, {writers} writers)",
        rate(objects, created)
    );
    let mut live_events = 0;
    for w in live {
        live_events += w.await.expect("watcher").0;
    }
    let live_time = t.elapsed();
    println!(
        "watch (live):      {live_events} events to {watchers} watchers in {live_time:.2?} ({} delivered)",
        rate(live_events, live_time)
    );

    // Lists.
    let rounds = 5;
    let t = Instant::now();
    let mut bytes = 0;
    for _ in 0..rounds {
        let r = k.get(&format!("{CMS}?resourceVersion=0")).await;
        assert_eq!(r.code(), 200);
        bytes += r.body.len();
    }
    let d = t.elapsed();
    println!(
        "list (whole):      {rounds} x {objects} objects in {d:.2?} ({} objects, {:.0} MiB/s)",
        rate(rounds * objects, d),
        bytes as f64 / d.as_secs_f64() / (1024.0 * 1024.0)
    );
    let t = Instant::now();
    let mut items = 0;
    let mut cont = String::new();
    loop {
        let path = if cont.is_empty() {
            format!("{CMS}?limit=500")
        } else {
            format!("{CMS}?limit=500&continue={cont}")
        };
        let page = k.get(&path).await.json();
        items += page["items"].as_array().map_or(0, Vec::len);
        match page["metadata"]["continue"].as_str() {
            Some(c) => cont = c.to_owned(),
            None => break,
        }
    }
    let d = t.elapsed();
    println!(
        "list (limit=500):  {items} objects in {d:.2?} ({})",
        rate(items, d)
    );
    let t = Instant::now();
    let sel = k
        .get(&format!("{CMS}?labelSelector=shard%3D3"))
        .await
        .json();
    println!(
        "list (selector):   {} of {objects} objects in {:.2?}",
        sel["items"].as_array().map_or(0, Vec::len),
        t.elapsed()
    );

    // Fan-out of the initial state and of the history to many watchers.
    for (what, path) in [
        ("watch (initial):  ", format!("{CMS}?watch=1")),
        (
            "watch (replay):   ",
            format!("{CMS}?watch=1&resourceVersion={start_rv}"),
        ),
    ] {
        let t = Instant::now();
        let ws: Vec<_> = (0..watchers)
            .map(|_| tokio::spawn(drain(k.clone(), path.clone(), objects)))
            .collect();
        let (mut events, mut bytes) = (0, 0);
        for w in ws {
            let (e, b) = w.await.expect("watcher");
            events += e;
            bytes += b;
        }
        let d = t.elapsed();
        println!(
            "{what} {events} events to {watchers} watchers in {d:.2?} ({}, {:.0} MiB/s)",
            rate(events, d),
            bytes as f64 / d.as_secs_f64() / (1024.0 * 1024.0)
        );
    }
}
