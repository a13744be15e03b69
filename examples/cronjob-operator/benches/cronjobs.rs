//! The CronJob controller at scale, against the in-process API server, on
//! a clock running `CRONJOB_BENCH_SPEED` times real time (default 60: a
//! virtual minute per real second):
//!
//! - `CRONJOB_BENCH_OBJECTS` CronJobs (default 1,000) on `* * * * *` with
//!   `concurrencyPolicy: Replace` (one Job each at a time, as no Job
//!   controller runs), created suspended;
//! - **heap per CronJob** once the operator has reconciled them all
//!   (caches, index, queue; process-wide, so the server's growth from the
//!   status writes counts too), and again in steady state with Jobs;
//! - unsuspended, then run for `CRONJOB_BENCH_MINUTES` virtual minutes
//!   (default 30): **reconciles per second**, **Jobs created per second**,
//!   and the **lag** from a Job's scheduled time to its ADDED event on a
//!   watch, p50 / p99 / max, in real milliseconds and virtual seconds.
//!
//! The controller runs `CRONJOB_BENCH_WORKERS` reconciles at once (default
//! 1, controller-runtime's default, set through the manager's
//! `max_concurrent_reconciles`).
//!
//! Every virtual minute is a burst of one Job per CronJob, the worst case.
//! The server shares the process and the cores. Run with
//! `cargo bench -p cronjob-operator --bench cronjobs`
//! (`CRONJOB_BENCH_OBJECTS=50 CRONJOB_BENCH_MINUTES=2` for a quick run).

use std::time::Instant;

use cronjob_operator::api::batch::v1::{ConcurrencyPolicy, CronJob, CronJobSpec};
use cronjob_operator::clock::ScaledClock;
use cronjob_operator::controllers::batch::cron_job::status::AVAILABLE;
use cronjob_operator::controllers::batch::cron_job::{self, CONTROLLER_NAME, SCHEDULED_AT};
use futures::{StreamExt as _, TryStreamExt as _};
use jiff::Timestamp;
use kubeforge::k8s_openapi::api::batch::v1::{Job, JobSpec, JobTemplateSpec};
use kubeforge::k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use kubeforge::kube_core::params::WatchParams;
use kubeforge::kube_core::WatchEvent;
use kubeforge::manager::{CancellationToken, SharedRegistry};
use kubeforge::prelude::*;
use kubeforge::testing::{ApiServer, ApiServerExt};
use serde_json::json;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

const NS: &str = "default";
const WRITERS: usize = 32;

/// Live heap bytes.
fn heap() -> i128 {
    let s = GLOBAL.stats();
    s.bytes_allocated as i128 + s.bytes_reallocated as i128 - s.bytes_deallocated as i128
}

/// Resident set size in MiB, from `/proc/self/statm` (0 where absent).
fn rss_mib() -> f64 {
    let pages: f64 = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / (1024.0 * 1024.0)
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn cron_job(i: usize) -> CronJob {
    let mut cj = CronJob::new(
        &format!("cj-{i:05}"),
        CronJobSpec {
            schedule: "* * * * *".into(),
            starting_deadline_seconds: None,
            concurrency_policy: Some(ConcurrencyPolicy::Replace),
            suspend: Some(true),
            job_template: JobTemplateSpec {
                metadata: None,
                spec: Some(JobSpec {
                    template: PodTemplateSpec {
                        metadata: None,
                        spec: Some(PodSpec {
                            containers: vec![Container {
                                name: "hello".into(),
                                image: Some("busybox".into()),
                                ..Default::default()
                            }],
                            restart_policy: Some("OnFailure".into()),
                            ..Default::default()
                        }),
                    },
                    ..Default::default()
                }),
            },
            successful_jobs_history_limit: Some(3),
            failed_jobs_history_limit: Some(1),
        },
    );
    cj.metadata.namespace = Some(NS.into());
    cj
}

/// Runs `write(i)` for every `i < n` from [`WRITERS`] concurrent writers.
async fn in_parallel<F, Fut>(n: usize, write: F)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    futures::stream::iter(0..n)
        .map(write)
        .buffer_unordered(WRITERS)
        .collect::<()>()
        .await;
}

/// The controller's finished reconciles, whatever their result.
fn reconciles(registry: &SharedRegistry) -> f64 {
    let registry = registry
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("metrics encode");
    let series = format!(r#"controller_runtime_reconcile_total{{controller="{CONTROLLER_NAME}""#);
    text.lines()
        .filter(|line| line.starts_with(&series))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    // `RUST_LOG=cronjob_operator=debug` shows each reconcile.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let n = env("CRONJOB_BENCH_OBJECTS", 1_000) as usize;
    let speed = env("CRONJOB_BENCH_SPEED", 60) as u32;
    let minutes = env("CRONJOB_BENCH_MINUTES", 30);
    let workers = env("CRONJOB_BENCH_WORKERS", 1) as usize;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(n, speed, minutes, workers));
}

async fn run(n: usize, speed: u32, minutes: u64, workers: usize) {
    println!(
        "\n== cronjobs: {n} CronJobs, clock x{speed}, {minutes} virtual minutes, {workers} worker(s) =="
    );
    let server = ApiServer::builder()
        .watch_history(100_000)
        .watch_buffer(100_000)
        .start()
        .await
        .expect("server");
    server.install_crd_for::<CronJob>().expect("CRD installs");
    let client = server.client().expect("client");
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), NS);
    in_parallel(n, |i| {
        let cronjobs = cronjobs.clone();
        async move {
            cronjobs
                .create(&PostParams::default(), &cron_job(i))
                .await
                .expect("create CronJob");
        }
    })
    .await;

    let h0 = heap();
    let rss0 = rss_mib();
    let mgr = Manager::builder()
        .client(client.clone())
        .metrics_bind_address("0")
        .health_probe_bind_address("0")
        .max_concurrent_reconciles(workers)
        .build()
        .await
        .expect("manager builds");
    let clock = Arc::new(ScaledClock::new(Timestamp::now(), speed));
    cron_job::register_with(&mgr, clock.clone(), None).expect("controller registers");
    let registry = mgr.registry().clone();
    let stop = CancellationToken::new();
    let manager = tokio::spawn(mgr.run_until(stop.clone()));

    let started = Instant::now();
    loop {
        let list = cronjobs.list(&Default::default()).await.expect("list");
        let suspended = list
            .items
            .iter()
            .filter(|cj| {
                cj.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == AVAILABLE && c.reason == "Suspended")
                })
            })
            .count();
        if suspended == n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let h1 = heap();
    println!(
        "first reconcile of all: {:.2} s; operator heap per CronJob {:.0} B (RSS {:.0} -> {:.0} MiB)",
        started.elapsed().as_secs_f64(),
        (h1 - h0) as f64 / n as f64,
        rss0,
        rss_mib()
    );

    // Every ADDED Job: the real lag from its scheduled time.
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    let events = jobs
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch Jobs");
    let watch_clock = clock.clone();
    let watch_stop = CancellationToken::new();
    let watching = watch_stop.clone();
    let lags = tokio::spawn(async move {
        let mut lags = Vec::new();
        let mut events = std::pin::pin!(events.into_stream());
        loop {
            let event = tokio::select! {
                _ = watching.cancelled() => break,
                event = events.next() => event,
            };
            let Some(Ok(WatchEvent::Added(job))) = event else {
                if matches!(event, None | Some(Err(_))) {
                    break;
                }
                continue;
            };
            let arrived = Instant::now();
            let scheduled = job
                .annotations()
                .get(SCHEDULED_AT)
                .and_then(|s| s.parse::<Timestamp>().ok());
            if let Some(at) = scheduled {
                lags.push(arrived.saturating_duration_since(watch_clock.real_instant(at)));
            }
        }
        lags
    });

    let unsuspend = json!({"spec": {"suspend": false}});
    in_parallel(n, |i| {
        let cronjobs = cronjobs.clone();
        let patch = Patch::Merge(unsuspend.clone());
        async move {
            cronjobs
                .patch(&format!("cj-{i:05}"), &PatchParams::default(), &patch)
                .await
                .expect("unsuspend");
        }
    })
    .await;
    let r0 = reconciles(&registry);
    let run_start = Instant::now();
    tokio::time::sleep(Duration::from_secs(minutes * 60) / speed).await;
    let elapsed = run_start.elapsed().as_secs_f64();
    let r1 = reconciles(&registry);
    let h2 = heap();
    let rss2 = rss_mib();
    watch_stop.cancel();
    let mut lags = lags.await.expect("watch task");
    stop.cancel();
    manager
        .await
        .expect("manager task")
        .expect("manager stops cleanly");

    lags.sort();
    println!(
        "reconciles: {:.0}/s ({} in {elapsed:.1} s)",
        (r1 - r0) / elapsed,
        r1 - r0
    );
    println!(
        "Jobs created: {:.0}/s ({} in {elapsed:.1} s)",
        lags.len() as f64 / elapsed,
        lags.len()
    );
    println!(
        "steady-state heap per CronJob, with Jobs: {:.0} B (RSS {rss2:.0} MiB)",
        (h2 - h0) as f64 / n as f64
    );
    let virtual_s = |d: Duration| d.as_secs_f64() * f64::from(speed);
    for (label, p) in [("p50", 0.5), ("p99", 0.99), ("max", 1.0)] {
        let lag = percentile(&lags, p);
        println!(
            "lag scheduled -> created {label}: {:.1} ms real, {:.1} s virtual",
            lag.as_secs_f64() * 1000.0,
            virtual_s(lag)
        );
    }
}
