//! The workload controllers and simulated nodes at scale: 100 simulated
//! nodes, 100 Deployments of 100 replicas (10 000 pods) created over
//! HTTPS, timed until every Deployment reports all replicas available.
//! Prints the wall time, the process's CPU time (user + system, the
//! server and this client together; the client only polls) and its peak
//! memory. Asserts nothing about time.
//!
//! `cargo bench -p kubeforge-apiserver --bench workloads`
//! (`WORKLOADS_BENCH_DEPLOYMENTS`, `WORKLOADS_BENCH_REPLICAS`,
//! `WORKLOADS_BENCH_NODES` scale it).

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::Kube;
use kubeforge_apiserver::{ApiServer, Workloads};
use serde_json::{json, Value};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// User + system CPU seconds of this process (`/proc/self/stat`).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // USER_HZ is 100 on Linux.
    Some((utime + stime) / 100.0)
}

/// A `/proc/self/status` field in MiB (`VmHWM`, `VmRSS`).
fn memory_mib(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let deployments = env_usize("WORKLOADS_BENCH_DEPLOYMENTS", 100);
    let replicas = env_usize("WORKLOADS_BENCH_REPLICAS", 100);
    let nodes = env_usize("WORKLOADS_BENCH_NODES", 100);
    let k = Kube::with(
        ApiServer::builder()
            .watch_buffer(1 << 16)
            .workloads(Workloads::fast().nodes(nodes)),
    )
    .await;
    let cpu0 = cpu_seconds().unwrap_or(0.0);
    let rss0 = memory_mib("VmRSS:").unwrap_or(0.0);
    let start = Instant::now();
    for i in 0..deployments {
        let name = format!("app-{i}");
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}});
        let r = k
            .post("/apis/apps/v1/namespaces/default/deployments", &d)
            .await;
        assert_eq!(r.code(), 201, "create {name}");
    }
    let created = start.elapsed();
    let total = deployments * replicas;
    let mut last_print = Instant::now();
    loop {
        let list = k
            .get("/apis/apps/v1/namespaces/default/deployments")
            .await
            .json();
        let available: i64 = list["items"]
            .as_array()
            .map(|ds| {
                ds.iter()
                    .map(|d| d["status"]["availableReplicas"].as_i64().unwrap_or(0))
                    .sum()
            })
            .unwrap_or(0);
        if available as usize >= total {
            break;
        }
        if last_print.elapsed() > Duration::from_secs(5) {
            eprintln!(
                "  {available}/{total} pods available after {:.1?}",
                start.elapsed()
            );
            last_print = Instant::now();
        }
        if start.elapsed() > Duration::from_secs(1800) {
            eprintln!("gave up after 30 min at {available}/{total}");
            std::process::exit(1);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let ready = start.elapsed();
    let cpu = cpu_seconds().unwrap_or(0.0) - cpu0;
    let count = |list: Value| list["items"].as_array().map_or(0, Vec::len);
    let remaining = count(k.get("/api/v1/pods").await.json());
    let event_count = count(k.get("/api/v1/events").await.json());
    println!(
        "workloads: {nodes} nodes, {deployments} Deployments x {replicas} replicas = {total} pods"
    );
    println!("  Deployments created in      {created:.2?}");
    println!(
        "  all pods Ready/available in {ready:.2?} ({:.0} pods/s)",
        total as f64 / ready.as_secs_f64()
    );
    println!("  pods stored: {remaining}, events recorded: {event_count}");
    println!(
        "  CPU time (server + client): {cpu:.1} s ({:.2} cores busy)",
        cpu / ready.as_secs_f64()
    );
    println!(
        "  memory: RSS {:.0} MiB (was {rss0:.0} MiB before the workloads), peak {:.0} MiB",
        memory_mib("VmRSS:").unwrap_or(0.0),
        memory_mib("VmHWM:").unwrap_or(0.0)
    );
    let _: Value = list_check(&k).await;
}

/// Every Deployment is rolled out as kubectl would see it.
async fn list_check(k: &Kube) -> Value {
    let list = k
        .get("/apis/apps/v1/namespaces/default/deployments")
        .await
        .json();
    for d in list["items"].as_array().into_iter().flatten() {
        assert_eq!(d["status"]["updatedReplicas"], d["spec"]["replicas"]);
        assert_eq!(
            d["status"]["observedGeneration"],
            d["metadata"]["generation"]
        );
    }
    list
}
