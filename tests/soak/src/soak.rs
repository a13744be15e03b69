//! The soak run: the memcached operator (its manager and controller, as the
//! binary registers them) on the in-process API server, while writers
//! create, resize and delete Memcacheds and touch their Deployments at a
//! steady rate and faults are injected (closed watches, 410 Expired, 429,
//! 500, compaction). Every few seconds it samples memory and the
//! controller's metrics; at the end it checks that everything converged.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubeforge::events::Recorder;
use kubeforge::k8s_openapi::api::apps::v1::Deployment;
use kubeforge::k8s_openapi::api::events::v1::Event;
use kubeforge::k8s_openapi::jiff::Timestamp;
use kubeforge::manager::{CancellationToken, SharedRegistry};
use kubeforge::prelude::*;
use memcached_operator::controller::{CONTROLLER_NAME, FIELD_MANAGER};
use memcached_operator::status::observe;
use memcached_operator::{register, Memcached, MemcachedSpec, MemcachedStatus, Settings};
use serde_json::json;
use std::path::PathBuf;
use tokio::sync::Mutex;

use crate::sampling::{after_warm_up, controller_figures, rss_bytes, slope, ControllerFigures};
use crate::server::{Fault, SoakServer};

const NS: &str = "default";

/// How a soak run goes.
#[derive(Clone, Debug)]
pub struct SoakOptions {
    /// How long writers and faults run.
    pub duration: Duration,
    /// How often memory and metrics are sampled and printed.
    pub sample_every: Duration,
    /// How many Memcached names the writers cycle through.
    pub memcacheds: usize,
    /// Pause between two Memcached writes.
    pub write_every: Duration,
    /// Pause between two Deployment touches.
    pub touch_every: Duration,
    /// Pause between two injected faults.
    pub fault_every: Duration,
    /// How long convergence may take once the writers stop.
    pub settle: Duration,
    /// The seed of the writers' and the fault injector's choices.
    pub seed: u64,
    /// Runs the API server in a child process (this program, started with
    /// [`SERVE_FLAG`](crate::server::SERVE_FLAG)) so that its heap is
    /// measured apart from the operator's; in process when `None`.
    pub server_process: Option<PathBuf>,
    /// How long the server keeps an Event after its last write
    /// (kube-apiserver's `--event-ttl`, an hour there); `None`: forever.
    /// A soak of minutes shortens it to reach the steady state an hour
    /// would.
    pub event_ttl: Option<Duration>,
    /// The operator's event recorders' series window (client-go's six
    /// minutes): how long a recorder keeps an event to aggregate repeats.
    /// Shortened with the Event TTL, for the same reason: the recorder
    /// holds one event per deleted Memcached for that long, so with six
    /// minutes its heap would still be growing when a 10-minute soak's
    /// warm-up ends.
    pub event_window: Duration,
}

impl Default for SoakOptions {
    fn default() -> Self {
        Self {
            duration: Duration::from_secs(600),
            sample_every: Duration::from_secs(5),
            memcacheds: 24,
            write_every: Duration::from_millis(50),
            touch_every: Duration::from_millis(100),
            fault_every: Duration::from_millis(1500),
            settle: Duration::from_secs(60),
            seed: 1,
            server_process: None,
            event_ttl: Some(Duration::from_secs(60)),
            event_window: Duration::from_secs(60),
        }
    }
}

/// One sample of the run.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Seconds since the run started.
    pub at: f64,
    /// Resident set, bytes.
    pub rss: Option<u64>,
    /// Live heap, bytes.
    pub heap: Option<u64>,
    /// The API server's process's resident set and live heap, bytes, when
    /// it runs apart.
    pub server: Option<(Option<u64>, Option<u64>)>,
    /// The controller's metrics.
    pub figures: ControllerFigures,
    /// Events the operator's recorder holds for aggregation.
    pub events_cached: usize,
}

/// What a run found.
#[derive(Debug)]
pub struct SoakReport {
    /// Every sample, in order.
    pub samples: Vec<Sample>,
    /// Least-squares slope of the live heap after warm-up, bytes/minute.
    pub heap_slope: Option<f64>,
    /// Least-squares slope of the resident set after warm-up, bytes/minute.
    pub rss_slope: Option<f64>,
    /// The same two slopes of the API server's process, when it runs apart.
    pub server_slopes: Option<(Option<f64>, Option<f64>)>,
    /// Writes the writers made that the server acknowledged.
    pub writes: u64,
    /// Writes refused (injected faults, conflicts, a name still being deleted).
    pub refused: u64,
    /// Faults injected.
    pub faults: u64,
    /// Memcacheds present at the end / absent at the end.
    pub present: usize,
    /// Memcached names expected absent at the end.
    pub absent: usize,
    /// How long convergence took after the writers stopped.
    pub converged_after: Option<Duration>,
    /// What had not converged when the settle time ran out (empty if all did).
    pub unconverged: Vec<String>,
    /// Events (events.k8s.io) the server held at the end.
    pub events_kept: usize,
}

impl SoakReport {
    /// Whether every check passed.
    pub fn converged(&self) -> bool {
        self.unconverged.is_empty()
    }
}

/// What the writers believe each name should be at the end: its size, or
/// absent; `Unknown` after an answer that does not say whether the write
/// happened (a dropped connection), settled from the server at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expected {
    Present(i32),
    Absent,
    Unknown,
}

fn name_of(slot: usize) -> String {
    format!("soak-{slot:03}")
}

/// Whether an error is an answer from the server (the write certainly did
/// not happen) rather than a transport failure (it may have).
fn refused(e: &kubeforge::Error) -> bool {
    e.code().is_some()
}

/// Runs a soak with `options`, reading the live heap with `heap`, printing
/// a line per sample to stderr.
pub async fn run(options: SoakOptions, heap: fn() -> Option<u64>) -> anyhow::Result<SoakReport> {
    let server = Arc::new(match &options.server_process {
        Some(program) => SoakServer::child(program, options.event_ttl).await?,
        None => SoakServer::in_process(options.event_ttl).await?,
    });
    let client = server.client().await?;
    let mgr = Manager::builder()
        .client(client.clone())
        .field_manager(FIELD_MANAGER)
        .metrics_bind_address("0")
        .health_probe_bind_address("0")
        .graceful_shutdown_timeout(Duration::from_secs(5))
        .event_series_window(options.event_window)
        .build()
        .await?;
    register(
        &mgr,
        Settings {
            resync: Duration::from_secs(30),
        },
        2,
        None,
    );
    let registry: SharedRegistry = mgr.registry().clone();
    let recorder = mgr.recorder(CONTROLLER_NAME);
    let stop_manager = CancellationToken::new();
    let manager = tokio::spawn(mgr.run_until(stop_manager.clone()));

    let expected = Arc::new(Mutex::new(vec![Expected::Absent; options.memcacheds]));
    let writes = Arc::new(AtomicU64::new(0));
    let refusals = Arc::new(AtomicU64::new(0));
    let faults_injected = Arc::new(AtomicU64::new(0));
    let stop_writers = CancellationToken::new();
    let started = Instant::now();

    let writer = tokio::spawn(write_memcacheds(
        client.clone(),
        options.clone(),
        expected.clone(),
        writes.clone(),
        refusals.clone(),
        stop_writers.clone(),
    ));
    let toucher = tokio::spawn(touch_deployments(
        client.clone(),
        options.clone(),
        writes.clone(),
        refusals.clone(),
        stop_writers.clone(),
    ));
    let injector = tokio::spawn(inject_faults(
        server.clone(),
        options.clone(),
        faults_injected.clone(),
        stop_writers.clone(),
    ));

    let mut samples = Vec::new();
    let mut previous: Option<Sample> = None;
    let apart = if options.server_process.is_some() {
        "   server rss MiB   server heap MiB"
    } else {
        ""
    };
    eprintln!(
        "     t      rss MiB   heap MiB   reconciles/s   errors/s   queue   active   events{apart}"
    );
    while started.elapsed() < options.duration {
        let left = options.duration.saturating_sub(started.elapsed());
        tokio::time::sleep(options.sample_every.min(left)).await;
        let sample = take_sample(started, &registry, &recorder, heap, &server).await;
        print_sample(&sample, previous.as_ref());
        previous = Some(sample);
        samples.push(sample);
    }
    stop_writers.cancel();
    for task in [writer, toucher, injector] {
        task.await?;
    }
    server.inject(Fault::Clear).await?;

    // Settle: names the writers could not be sure about take the server's word.
    let memcacheds: Api<Memcached> = Api::namespaced(client.clone(), NS);
    let mut expected = expected.lock().await.clone();
    for (slot, e) in expected.iter_mut().enumerate() {
        if *e == Expected::Unknown {
            *e = match memcacheds.get_opt(&name_of(slot)).await? {
                Some(mc) if mc.metadata.deletion_timestamp.is_none() => {
                    Expected::Present(mc.spec.size)
                }
                _ => Expected::Absent,
            };
        }
    }
    let settle_started = Instant::now();
    let mut unconverged;
    loop {
        let figures = controller_figures(
            &registry.read().unwrap_or_else(|e| e.into_inner()),
            CONTROLLER_NAME,
        );
        unconverged = check_convergence(&client, &expected, &figures).await?;
        if unconverged.is_empty() || settle_started.elapsed() > options.settle {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let converged_after = unconverged.is_empty().then(|| settle_started.elapsed());
    let final_sample = take_sample(started, &registry, &recorder, heap, &server).await;
    print_sample(&final_sample, previous.as_ref());
    // What the server keeps that the run keeps adding to: one Event per
    // finalized Memcached, until the Event TTL expires it.
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    let events_kept = events.list(&Default::default()).await?.items.len();

    stop_manager.cancel();
    manager.await??;
    if let Ok(server) = Arc::try_unwrap(server) {
        server.shutdown().await;
    }

    let per_minute = |pick: fn(&Sample) -> Option<u64>| {
        let points: Vec<(f64, f64)> = after_warm_up(&samples)
            .iter()
            .filter_map(|s| Some((s.at / 60.0, pick(s)? as f64)))
            .collect();
        slope(&points)
    };
    Ok(SoakReport {
        heap_slope: per_minute(|s| s.heap),
        rss_slope: per_minute(|s| s.rss),
        server_slopes: options.server_process.is_some().then(|| {
            (
                per_minute(|s| s.server.and_then(|(_, heap)| heap)),
                per_minute(|s| s.server.and_then(|(rss, _)| rss)),
            )
        }),
        samples,
        writes: writes.load(Ordering::Relaxed),
        refused: refusals.load(Ordering::Relaxed),
        faults: faults_injected.load(Ordering::Relaxed),
        present: expected
            .iter()
            .filter(|e| matches!(e, Expected::Present(_)))
            .count(),
        absent: expected.iter().filter(|e| **e == Expected::Absent).count(),
        converged_after,
        unconverged,
        events_kept,
    })
}

async fn take_sample(
    started: Instant,
    registry: &SharedRegistry,
    recorder: &Recorder,
    heap: fn() -> Option<u64>,
    server: &SoakServer,
) -> Sample {
    let figures = controller_figures(
        &registry.read().unwrap_or_else(|e| e.into_inner()),
        CONTROLLER_NAME,
    );
    let at = started.elapsed().as_secs_f64();
    let (rss, heap) = (rss_bytes(), heap());
    Sample {
        at,
        rss,
        heap,
        server: server.memory().await.map(|(heap, rss)| (rss, heap)),
        figures,
        events_cached: recorder.cached_events(),
    }
}

fn print_sample(s: &Sample, previous: Option<&Sample>) {
    let mib = |b: Option<u64>| b.map_or(f64::NAN, |b| b as f64 / 1048576.0);
    let (rate, error_rate) = match previous {
        Some(p) if s.at > p.at => (
            (s.figures.reconciles - p.figures.reconciles) / (s.at - p.at),
            (s.figures.errors - p.figures.errors) / (s.at - p.at),
        ),
        _ => (
            s.figures.reconciles / s.at.max(1e-3),
            s.figures.errors / s.at.max(1e-3),
        ),
    };
    let apart = s.server.map_or(String::new(), |(rss, heap)| {
        format!("{:>17.1} {:>17.2}", mib(rss), mib(heap))
    });
    eprintln!(
        "{:>6.1}s {:>10.1} {:>10.2} {:>14.1} {:>10.2} {:>7} {:>8} {:>8}{apart}",
        s.at,
        mib(s.rss),
        mib(s.heap),
        rate,
        error_rate,
        s.figures.queue_depth,
        s.figures.active_workers,
        s.events_cached
    );
}

/// Creates, resizes and deletes Memcacheds over `options.memcacheds`
/// names, one write per `write_every`, keeping `expected` in step with what
/// the server acknowledged.
async fn write_memcacheds(
    client: Client,
    options: SoakOptions,
    expected: Arc<Mutex<Vec<Expected>>>,
    writes: Arc<AtomicU64>,
    refusals: Arc<AtomicU64>,
    stop: CancellationToken,
) {
    let api: Api<Memcached> = Api::namespaced(client, NS);
    let mut rng = fastrand::Rng::with_seed(options.seed);
    let mut tick = tokio::time::interval(options.write_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.is_cancelled() {
        tick.tick().await;
        let slot = rng.usize(..options.memcacheds);
        let name = name_of(slot);
        let current = expected.lock().await[slot];
        let size = rng.i32(1..=5);
        let (result, after) = match current {
            Expected::Absent | Expected::Unknown => (
                api.create(
                    &PostParams::default(),
                    &Memcached::new(&name, MemcachedSpec::with_size(size)),
                )
                .await
                .map(drop),
                Expected::Present(size),
            ),
            Expected::Present(_) if rng.u8(..10) < 3 => (
                api.delete(&name, &DeleteParams::default()).await.map(drop),
                Expected::Absent,
            ),
            Expected::Present(_) => (
                api.patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"size": size}})),
                )
                .await
                .map(drop),
                Expected::Present(size),
            ),
        };
        let mut expected = expected.lock().await;
        match result {
            Ok(()) => {
                writes.fetch_add(1, Ordering::Relaxed);
                expected[slot] = after;
            }
            // Still being deleted, already gone, or a fault: nothing changed.
            Err(e) if refused(&e) => {
                refusals.fetch_add(1, Ordering::Relaxed);
                if e.is_not_found() {
                    expected[slot] = Expected::Absent;
                }
            }
            Err(_) => expected[slot] = Expected::Unknown,
        }
    }
}

/// Touches the operator's Deployments as others would: scales one by hand
/// (drift the operator undoes), writes its status as the Deployment
/// controller would, or labels it.
async fn touch_deployments(
    client: Client,
    options: SoakOptions,
    writes: Arc<AtomicU64>,
    refusals: Arc<AtomicU64>,
    stop: CancellationToken,
) {
    let api: Api<Deployment> = Api::namespaced(client, NS);
    let mut rng = fastrand::Rng::with_seed(options.seed.wrapping_add(1));
    let mut tick = tokio::time::interval(options.touch_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.is_cancelled() {
        tick.tick().await;
        let name = name_of(rng.usize(..options.memcacheds));
        let deployment = match api.get_opt(&name).await {
            Ok(Some(d)) => d,
            Ok(None) => continue,
            Err(_) => {
                refusals.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        };
        let pp = PatchParams::default();
        let result = match rng.u8(..3) {
            0 => {
                let patch = json!({"spec": {"replicas": rng.i32(1..=10)}});
                api.patch(&name, &pp, &Patch::Merge(patch)).await
            }
            1 => {
                let n = deployment.spec.replicas.unwrap_or(1);
                let ready = rng.i32(0..=n);
                api.patch_status(
                    &name,
                    &pp,
                    &Patch::Merge(deployment_status(&deployment, ready)),
                )
                .await
            }
            _ => {
                let patch =
                    json!({"metadata": {"labels": {"soak/touched": rng.u32(..).to_string()}}});
                api.patch(&name, &pp, &Patch::Merge(patch)).await
            }
        };
        match result {
            Ok(_) => writes.fetch_add(1, Ordering::Relaxed),
            Err(_) => refusals.fetch_add(1, Ordering::Relaxed),
        };
    }
}

/// The status the Deployment controller writes when `ready` of the
/// Deployment's pods run its current generation.
fn deployment_status(d: &Deployment, ready: i32) -> serde_json::Value {
    let n = d.spec.replicas.unwrap_or(1);
    let available = if ready >= n { "True" } else { "False" };
    json!({"status": {
        "observedGeneration": d.metadata.generation,
        "replicas": n,
        "updatedReplicas": n,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "conditions": [
            {"type": "Available", "status": available, "reason": "MinimumReplicasAvailable",
             "message": "Deployment availability."},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
             "message": "ReplicaSet has successfully progressed."},
        ],
    }})
}

/// Injects one fault per `fault_every`, in turn: every watch closed, the
/// next watch answered 410 Expired, three requests answered 429, three
/// answered 500, the watch history compacted.
async fn inject_faults(
    server: Arc<SoakServer>,
    options: SoakOptions,
    injected: Arc<AtomicU64>,
    stop: CancellationToken,
) {
    let mut rng = fastrand::Rng::with_seed(options.seed.wrapping_add(2));
    let mut tick = tokio::time::interval(options.fault_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    while !stop.is_cancelled() {
        tick.tick().await;
        let fault = match rng.u8(..5) {
            0 => Fault::CloseWatches,
            1 => Fault::Expired,
            2 => Fault::TooManyRequests,
            3 => Fault::InternalError,
            _ => Fault::Compact,
        };
        if server.inject(fault).await.is_ok() {
            injected.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The status fields that must match, without transition times.
fn comparable(status: &MemcachedStatus) -> serde_json::Value {
    let conditions: BTreeMap<&str, _> = status
        .conditions
        .iter()
        .map(|c| {
            (
                c.type_.as_str(),
                (&c.status, &c.reason, &c.message, c.observed_generation),
            )
        })
        .collect();
    json!({
        "replicas": status.replicas,
        "readyReplicas": status.ready_replicas,
        "availableReplicas": status.available_replicas,
        "selector": status.selector,
        "observedGeneration": status.observed_generation,
        "conditions": format!("{conditions:?}"),
    })
}

/// What has not converged: each expected Memcached with its Deployment at
/// `spec.size` and a status computed from that Deployment, each absent one
/// gone with its Deployment, no other Memcached, and an empty queue with
/// no worker busy.
async fn check_convergence(
    client: &Client,
    expected: &[Expected],
    figures: &ControllerFigures,
) -> anyhow::Result<Vec<String>> {
    let memcacheds: Api<Memcached> = Api::namespaced(client.clone(), NS);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let mut wrong = Vec::new();
    let mut names = BTreeMap::new();
    for mc in memcacheds.list(&Default::default()).await?.items {
        names.insert(mc.name_any(), mc);
    }
    let mut ds = BTreeMap::new();
    for d in deployments.list(&Default::default()).await?.items {
        ds.insert(d.name_any(), d);
    }
    for (slot, e) in expected.iter().enumerate() {
        let name = name_of(slot);
        let mc = names.remove(&name);
        let d = ds.remove(&name);
        match (e, mc, d) {
            (Expected::Present(size), Some(mc), Some(d)) => {
                if mc.spec.size != *size {
                    wrong.push(format!("{name}: size {} not {size}", mc.spec.size));
                }
                if d.spec.replicas != Some(*size) {
                    wrong.push(format!(
                        "{name}: Deployment at {:?} replicas, not {size}",
                        d.spec.replicas
                    ));
                }
                let want = comparable(&observe(&mc, &d, Timestamp::now()));
                let got = mc.status.as_ref().map(comparable);
                if got.as_ref() != Some(&want) {
                    wrong.push(format!("{name}: status {got:?}, want {want}"));
                }
            }
            (Expected::Present(_), mc, d) => wrong.push(format!(
                "{name}: Memcached {} Deployment {}",
                if mc.is_some() { "present" } else { "missing" },
                if d.is_some() { "present" } else { "missing" }
            )),
            (_, None, None) => {}
            (_, mc, d) => wrong.push(format!(
                "{name}: deleted, but Memcached {} Deployment {}",
                if mc.is_some() { "left" } else { "gone" },
                if d.is_some() { "left" } else { "gone" }
            )),
        }
    }
    wrong.extend(
        names
            .keys()
            .map(|n| format!("{n}: a Memcached nobody wrote")),
    );
    wrong.extend(
        ds.keys()
            .map(|n| format!("{n}: a Deployment without its Memcached")),
    );
    if figures.queue_depth != 0.0 || figures.active_workers != 0.0 {
        wrong.push(format!(
            "queue: {} keys queued, {} being reconciled",
            figures.queue_depth, figures.active_workers
        ));
    }
    Ok(wrong)
}

/// Prints the summary of `report` and returns whether it passed.
pub fn print_report(report: &SoakReport) -> bool {
    let mib_per_min = |s: Option<f64>| {
        s.map_or("n/a".to_owned(), |s| {
            format!("{:+.3} MiB/min", s / 1048576.0)
        })
    };
    let last = report.samples.last();
    eprintln!("samples: {}", report.samples.len());
    eprintln!(
        "writes acknowledged: {}, refused: {}, faults injected: {}",
        report.writes, report.refused, report.faults
    );
    if let Some(last) = last {
        eprintln!(
            "reconciles: {} ({} errors)",
            last.figures.reconciles, last.figures.errors
        );
    }
    eprintln!(
        "heap slope after warm-up: {}; RSS slope after warm-up: {}",
        mib_per_min(report.heap_slope),
        mib_per_min(report.rss_slope)
    );
    if let Some((heap, rss)) = report.server_slopes {
        eprintln!(
            "(the slopes above are the operator's process alone) the API server's process: heap slope {}; RSS slope {}",
            mib_per_min(heap),
            mib_per_min(rss)
        );
    }
    eprintln!(
        "at the end: {} Memcacheds expected present, {} absent; {} Events kept by the server",
        report.present, report.absent, report.events_kept
    );
    match report.converged_after {
        Some(d) => eprintln!(
            "converged {:.1}s after the writers stopped",
            d.as_secs_f64()
        ),
        None => {
            eprintln!("NOT CONVERGED:");
            for w in &report.unconverged {
                eprintln!("  {w}");
            }
        }
    }
    report.converged()
}
