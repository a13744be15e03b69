//! What the API server holds per stored object, and how fast it serves
//! them: fills a server (default settings, as `kubeforge dev-server` runs
//! it) with ConfigMaps of about 1.4 KiB as served (managedFields
//! included), then prints the live heap per object (a counting global
//! allocator: exact) and the process's RSS, after the writes and again
//! after the objects were listed and watched, and the median times of a
//! whole list, a paginated list and a watch from resourceVersion 0.
//! Prints figures; asserts nothing about time.
//!
//! `cargo bench -p kubeforge-apiserver --bench memory` (10 000 objects);
//! `APISERVER_MEMORY_OBJECTS=100000` or `-- 100000` for more, and
//! `APISERVER_MEMORY_RUNS` for the number of timed runs (default 5).

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::alloc::System;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cap::Cap;
use common::Kube;
use futures::StreamExt as _;
use http_body_util::BodyExt;
use kubeforge_apiserver::ApiServer;
use serde_json::{json, Value};

#[global_allocator]
static HEAP: Cap<System> = Cap::new(System, usize::MAX);

/// The namespaces the ConfigMaps are spread over.
const NAMESPACES: usize = 10;

/// Writes in flight while filling the server.
const WRITERS: usize = 32;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The object count: the first numeric argument, else the environment.
fn objects() -> usize {
    std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or_else(|| env_usize("APISERVER_MEMORY_OBJECTS", 10_000))
}

/// The `i`th ConfigMap: a 700-byte value, two labels and an annotation
/// (the cache benchmark's, so the figures compare).
fn configmap(i: usize) -> Value {
    let value: String = (0..700)
        .map(|j| char::from(b'a' + ((i + j) % 26) as u8))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("config-{i:06}"),
            "labels": {"app": format!("app-{}", i % 50), "tier": "backend"},
            "annotations": {"example.com/owner": "team-storage"},
        },
        "data": {"settings.conf": value, "mode": "fast"},
    })
}

/// The process's resident set size in bytes (Linux; 0 elsewhere).
fn rss() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<usize>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

/// Reads a watch stream until `events` newline-terminated frames arrived.
async fn drain_watch(k: &Kube, path: &str, events: usize) -> usize {
    let req = http::Request::get(format!("{}{path}", k.base()))
        .header("authorization", format!("Bearer {}", k.token()))
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .expect("request");
    let client = common::client(&k.server, false);
    let resp = client.request(req).await.expect("watch");
    let mut body = resp.into_body();
    let mut seen = 0;
    while seen < events {
        match body.frame().await {
            Some(Ok(f)) => {
                if let Ok(d) = f.into_data() {
                    seen += d.iter().filter(|b| **b == b'\n').count();
                }
            }
            _ => break,
        }
    }
    seen
}

/// Live heap and RSS, printed per object above `base`.
struct Sample {
    heap: usize,
    rss: usize,
}

impl Sample {
    fn now() -> Self {
        Self {
            heap: HEAP.allocated(),
            rss: rss(),
        }
    }

    fn print(&self, what: &str, base: &Sample, objects: usize) {
        let per = |now: usize, then: usize| now.saturating_sub(then) as f64 / objects as f64;
        println!(
            "{what:<34} live heap {:>7.0} B/object ({:.1} MiB), RSS {:>7.0} B/object ({:.1} MiB total)",
            per(self.heap, base.heap),
            self.heap.saturating_sub(base.heap) as f64 / (1024.0 * 1024.0),
            per(self.rss, base.rss),
            self.rss as f64 / (1024.0 * 1024.0),
        );
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let objects = objects();
    let runs = env_usize("APISERVER_MEMORY_RUNS", 5).max(1);
    let k = Arc::new(Kube::with(ApiServer::builder()).await);
    for n in 0..NAMESPACES {
        let r = k
            .post(
                "/api/v1/namespaces",
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("bench-{n}")}}),
            )
            .await;
        assert_eq!(
            r.code(),
            201,
            "namespace: {}",
            String::from_utf8_lossy(&r.body)
        );
    }
    // Warm the connection pool and the server's lazily built state.
    assert_eq!(k.get("/api/v1/configmaps?limit=1").await.code(), 200);
    let base = Sample::now();

    let t = Instant::now();
    futures::stream::iter(0..objects)
        .map(|i| {
            let k = k.clone();
            async move {
                let path = format!("/api/v1/namespaces/bench-{}/configmaps", i % NAMESPACES);
                let r = k.post(&path, &configmap(i)).await;
                assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
            }
        })
        .buffer_unordered(WRITERS)
        .collect::<()>()
        .await;
    let created = t.elapsed();
    let after_create = Sample::now();

    // One whole list, to know the size as served.
    let list = k.get("/api/v1/configmaps").await;
    assert_eq!(list.code(), 200);
    let served = list.json()["items"].as_array().map_or(0, Vec::len);
    assert_eq!(served, objects, "every object listed");
    let item_bytes = list.body.len() / objects.max(1);
    drop(list);
    println!(
        "apiserver memory bench: {objects} ConfigMaps, about {item_bytes} bytes each as listed, created in {} ({WRITERS} writers); medians of {runs} runs",
        secs(created)
    );
    after_create.print("after the writes:", &base, objects);

    let mut whole = Vec::new();
    let mut paged = Vec::new();
    let mut watched = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let r = k.get("/api/v1/configmaps").await;
        whole.push(t.elapsed());
        assert_eq!(r.code(), 200);
        drop(r);

        let t = Instant::now();
        let mut items = 0;
        let mut cont = String::new();
        loop {
            let path = if cont.is_empty() {
                "/api/v1/configmaps?limit=500".to_owned()
            } else {
                format!("/api/v1/configmaps?limit=500&continue={cont}")
            };
            let page = k.get(&path).await.json();
            items += page["items"].as_array().map_or(0, Vec::len);
            match page["metadata"]["continue"].as_str() {
                Some(c) => cont = c.to_owned(),
                None => break,
            }
        }
        paged.push(t.elapsed());
        assert_eq!(items, objects, "every object listed in pages");

        let t = Instant::now();
        let seen = drain_watch(&k, "/api/v1/configmaps?watch=1&resourceVersion=0", objects).await;
        watched.push(t.elapsed());
        assert_eq!(seen, objects, "an ADDED event per object");
    }
    // Let the closed watches' tasks finish before sampling.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after_serving = Sample::now();
    after_serving.print("after listing and watching:", &base, objects);
    println!("list (whole):                      {}", secs(median(whole)));
    println!("list (limit=500):                  {}", secs(median(paged)));
    println!(
        "watch from resourceVersion 0:      {} (ADDED for every object)",
        secs(median(watched))
    );
}
