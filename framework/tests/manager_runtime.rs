//! The manager against the in-process API server: `/readyz` turns ready
//! only once the caches have synced, `/metrics` scrapes and parses with the
//! reconcile and workqueue series, graceful shutdown finishes an in-flight
//! reconcile (and abandons one past the timeout), leader election between
//! two managers on one Lease (exactly one reconciles; the other takes over
//! when the leader stops, with and without releasing the lease; never two
//! leaders at once), losing the lease stops the controllers at once (no
//! grace for a reconcile in flight) and the manager with an error,
//! start-up failures are named, and the manager's worker count is the
//! default of controllers that set none.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kubeforge::controller::{Action, Context, ControllerMetrics};
use kubeforge::kube_core::params::{Patch, PatchParams, PostParams};
use kubeforge::kube_core::ObjectMeta;
use kubeforge::manager::{CancellationToken, Error, Leadership, Manager, ManagerBuilder};
use kubeforge::testing::{ApiServer, ApiServerExt, Failure, RequestMatch};
use kubeforge::Api;
use prometheus_client::registry::Registry;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio::time::{sleep, Instant};

const NS: &str = "default";
const PATIENCE: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A kind whose CRD is never installed.
#[derive(
    kubeforge::CustomResource,
    serde::Serialize,
    serde::Deserialize,
    Clone,
    Debug,
    kubeforge::JsonSchema,
)]
#[crd(group = "absent.kubeforge.dev", version = "v1", kind = "Ghost")]
pub struct GhostSpec {
    /// Nothing.
    pub x: i32,
}

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn builder(server: &ApiServer) -> ManagerBuilder {
    Manager::builder()
        .client(server.client().expect("client"))
        .metrics_bind_address("0")
        .health_probe_bind_address("0")
}

/// A plain HTTP/1.1 GET: status code and body.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8(response).expect("UTF-8 response");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .expect("a complete response");
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    (code, body.to_owned())
}

async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        sleep(Duration::from_millis(10)).await;
    }
}

fn run(mgr: Manager) -> (CancellationToken, JoinHandle<Result<(), Error>>) {
    let stop = CancellationToken::new();
    let task = tokio::spawn(mgr.run_until(stop.clone()));
    (stop, task)
}

/// Parses an OpenMetrics text exposition into `series -> value`, failing
/// on any malformed line.
fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    assert!(
        text.trim_end().ends_with("# EOF"),
        "OpenMetrics text ends with # EOF"
    );
    let mut samples = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        if let Some((name, labels)) = series.split_once('{') {
            assert!(labels.ends_with('}'), "bad labels in {line:?}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
                "bad name in {line:?}"
            );
        }
        samples.insert(series.to_owned(), value);
    }
    samples
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_flips_after_cache_sync_and_metrics_scrape_with_reconcile_and_queue_series() {
    init_tracing();
    let server = ApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), NS);
    api.create(&PostParams::default(), &cm("seed"))
        .await
        .unwrap();
    // The first lists fail: the cache syncs only after the reflector's
    // backoff (800 ms and up).
    server.faults().fail_next(
        2,
        RequestMatch::verb("list").resource("configmaps"),
        Failure::InternalError,
    );
    let mgr = builder(&server)
        .metrics_bind_address("127.0.0.1:0")
        .health_probe_bind_address("127.0.0.1:0")
        .build()
        .await
        .unwrap();
    let probes = mgr.health_probe_address().expect("probes on");
    let metrics = mgr.metrics_address().expect("metrics on");
    assert_ne!(probes, metrics);
    let reconciled = Arc::new(AtomicUsize::new(0));
    mgr.controller::<ConfigMap>().concurrency(2).reconcile(
        |_: Arc<ConfigMap>, ctx: Arc<Context<Arc<AtomicUsize>>>| async move {
            ctx.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Never>(Action::done())
        },
        Arc::clone(&reconciled),
    );
    let (stop, task) = run(mgr);

    let (code, body) = http_get(probes, "/readyz").await;
    assert_eq!(code, 500, "not ready before the caches sync: {body}");
    assert!(body.contains("[-]informer-sync failed"), "{body}");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (code, body) = http_get(probes, "/readyz").await;
        if code == 200 {
            assert_eq!(body, "ok");
            break;
        }
        assert!(Instant::now() < deadline, "never ready: {body}");
        sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(http_get(probes, "/healthz").await.0, 200);
    eventually("the seed object's reconcile", || {
        reconciled.load(Ordering::SeqCst) >= 1
    })
    .await;

    let (code, text) = http_get(metrics, "/metrics").await;
    assert_eq!(code, 200);
    let samples = parse_metrics(&text);
    let get = |series: &str| {
        *samples
            .get(series)
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    assert!(
        get(r#"controller_runtime_reconcile_total{controller="configmap",result="success"}"#)
            >= 1.0
    );
    assert_eq!(
        get(r#"controller_runtime_reconcile_errors_total{controller="configmap"}"#),
        0.0
    );
    assert_eq!(
        get(r#"controller_runtime_max_concurrent_reconciles{controller="configmap"}"#),
        2.0
    );
    assert_eq!(
        get(r#"controller_runtime_active_workers{controller="configmap"}"#),
        0.0
    );
    assert!(
        get(r#"controller_runtime_reconcile_time_seconds_count{controller="configmap"}"#) >= 1.0
    );
    assert!(get(r#"workqueue_adds_total{name="configmap",controller="configmap"}"#) >= 1.0);
    assert_eq!(
        get(r#"workqueue_depth{name="configmap",controller="configmap",priority="0"}"#),
        0.0
    );
    assert!(
        get(r#"workqueue_queue_duration_seconds_count{name="configmap",controller="configmap"}"#)
            >= 1.0
    );
    assert!(
        samples.contains_key(r#"workqueue_retries_total{name="configmap",controller="configmap"}"#)
    );

    stop.cancel();
    task.await.unwrap().unwrap();
    assert!(
        TcpStream::connect(probes).await.is_err(),
        "servers stop with the manager"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_lets_an_in_flight_reconcile_finish() {
    init_tracing();
    let server = ApiServer::start().await.unwrap();
    let mgr = builder(&server).build().await.unwrap();

    #[derive(Default)]
    struct Flags {
        started: AtomicBool,
        finished: AtomicBool,
    }
    let flags = Arc::new(Flags::default());
    mgr.controller::<ConfigMap>().reconcile(
        |_: Arc<ConfigMap>, ctx: Arc<Context<Arc<Flags>>>| async move {
            ctx.started.store(true, Ordering::SeqCst);
            sleep(Duration::from_millis(500)).await;
            ctx.finished.store(true, Ordering::SeqCst);
            Ok::<_, Never>(Action::done())
        },
        Arc::clone(&flags),
    );
    let (stop, task) = run(mgr);
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), NS);
    api.create(&PostParams::default(), &cm("slow"))
        .await
        .unwrap();
    eventually("the reconcile to start", || {
        flags.started.load(Ordering::SeqCst)
    })
    .await;
    stop.cancel();
    task.await.unwrap().unwrap();
    assert!(
        flags.finished.load(Ordering::SeqCst),
        "the manager returned before the in-flight reconcile finished"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_abandons_reconciles_that_outlast_the_timeout() {
    init_tracing();
    let server = ApiServer::start().await.unwrap();
    let mgr = builder(&server)
        .graceful_shutdown_timeout(Duration::from_millis(200))
        .build()
        .await
        .unwrap();
    let started = Arc::new(AtomicBool::new(false));
    mgr.controller::<ConfigMap>().reconcile(
        |_: Arc<ConfigMap>, ctx: Arc<Context<Arc<AtomicBool>>>| async move {
            ctx.store(true, Ordering::SeqCst);
            sleep(Duration::from_secs(3600)).await;
            Ok::<_, Never>(Action::done())
        },
        Arc::clone(&started),
    );
    let (stop, task) = run(mgr);
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), NS);
    api.create(&PostParams::default(), &cm("stuck"))
        .await
        .unwrap();
    eventually("the reconcile to start", || started.load(Ordering::SeqCst)).await;
    let asked = Instant::now();
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the manager gives up on the stuck reconcile")
        .unwrap()
        .unwrap();
    assert!(
        asked.elapsed() >= Duration::from_millis(200),
        "it waited the timeout first"
    );
}

/// controller-runtime's `DefaultFromConfig`: the manager's graceful
/// shutdown timeout is only the default of the controllers it runs. One
/// that sets a shorter one abandons its stuck reconcile without waiting for
/// the manager's hour; one that sets a longer one gets to finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controllers_own_graceful_shutdown_timeout_wins_over_the_managers() {
    init_tracing();
    let server = ApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), NS);

    // Shorter than the manager's: the manager's hour is not waited for.
    let mgr = builder(&server)
        .graceful_shutdown_timeout(Duration::from_secs(3600))
        .build()
        .await
        .unwrap();
    let started = Arc::new(AtomicBool::new(false));
    mgr.controller::<ConfigMap>()
        .graceful_shutdown_timeout(Duration::from_millis(100))
        .reconcile(
            |_: Arc<ConfigMap>, ctx: Arc<Context<Arc<AtomicBool>>>| async move {
                ctx.store(true, Ordering::SeqCst);
                sleep(Duration::from_secs(3600)).await;
                Ok::<_, Never>(Action::done())
            },
            Arc::clone(&started),
        );
    let (stop, task) = run(mgr);
    api.create(&PostParams::default(), &cm("stuck"))
        .await
        .unwrap();
    eventually("the reconcile to start", || started.load(Ordering::SeqCst)).await;
    stop.cancel();
    tokio::time::timeout(PATIENCE, task)
        .await
        .expect("the controller's 100 ms, not the manager's hour")
        .unwrap()
        .unwrap();

    // Longer than the manager's: the reconcile in flight finishes.
    let mgr = builder(&server)
        .graceful_shutdown_timeout(Duration::from_millis(1))
        .build()
        .await
        .unwrap();
    #[derive(Default)]
    struct Flags {
        started: AtomicBool,
        finished: AtomicBool,
    }
    let flags = Arc::new(Flags::default());
    mgr.controller::<ConfigMap>()
        .graceful_shutdown_timeout(PATIENCE)
        .reconcile(
            |_: Arc<ConfigMap>, ctx: Arc<Context<Arc<Flags>>>| async move {
                ctx.started.store(true, Ordering::SeqCst);
                sleep(Duration::from_millis(300)).await;
                ctx.finished.store(true, Ordering::SeqCst);
                Ok::<_, Never>(Action::done())
            },
            Arc::clone(&flags),
        );
    let (stop, task) = run(mgr);
    eventually("the reconcile to start", || {
        flags.started.load(Ordering::SeqCst)
    })
    .await;
    stop.cancel();
    task.await.unwrap().unwrap();
    assert!(
        flags.finished.load(Ordering::SeqCst),
        "the manager's 1 ms overrode the controller's own timeout"
    );
}

/// A controller given its own metrics reports into them, not into the
/// manager's registry (the manager's are only the default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controllers_own_metrics_are_not_replaced_by_the_managers() {
    init_tracing();
    let server = ApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), NS);
    api.create(&PostParams::default(), &cm("seen"))
        .await
        .unwrap();
    let mgr = builder(&server)
        .metrics_bind_address("127.0.0.1:0")
        .build()
        .await
        .unwrap();
    let metrics_address = mgr.metrics_address().expect("metrics on");
    let own = ControllerMetrics::new();
    let mut own_registry = Registry::default();
    own.register(&mut own_registry);
    let reconciled = Arc::new(AtomicUsize::new(0));
    mgr.controller::<ConfigMap>()
        .named("own-metrics")
        .metrics(own)
        .reconcile(
            |_: Arc<ConfigMap>, ctx: Arc<Context<Arc<AtomicUsize>>>| async move {
                ctx.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Never>(Action::done())
            },
            Arc::clone(&reconciled),
        );
    let (stop, task) = run(mgr);
    eventually("a reconcile", || reconciled.load(Ordering::SeqCst) >= 1).await;

    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &own_registry).unwrap();
    let own_samples = parse_metrics(&text);
    let success =
        r#"controller_runtime_reconcile_total{controller="own-metrics",result="success"}"#;
    assert!(
        own_samples.get(success).copied().unwrap_or(0.0) >= 1.0,
        "the controller's own metrics saw no reconcile:\n{text}"
    );
    let (code, scraped) = http_get(metrics_address, "/metrics").await;
    assert_eq!(code, 200);
    assert!(
        !scraped.contains(r#"controller="own-metrics""#),
        "the manager's registry has the controller's series:\n{scraped}"
    );
    stop.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_that_cannot_sync_fails_the_start_naming_the_informer() {
    init_tracing();
    let server = ApiServer::start().await.unwrap();
    let mgr = builder(&server)
        .cache_sync_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    // No CRD serves this type: every list answers 404.
    mgr.controller::<Ghost>().reconcile(
        |_: Arc<Ghost>, _: Arc<Context<()>>| async { Ok::<_, Never>(Action::done()) },
        (),
    );
    let err = mgr.run_until(CancellationToken::new()).await.unwrap_err();
    let Error::CacheSync(failures) = &err else {
        panic!("expected a cache-sync error, got {err}");
    };
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].informer().plural, "ghosts");
    assert!(
        err.to_string()
            .starts_with("caches did not sync: ghosts.absent.kubeforge.dev at the cluster scope did not sync within 2s"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_controller_names_and_failing_runnables_stop_the_manager() {
    init_tracing();
    let server = ApiServer::start().await.unwrap();
    let mgr = builder(&server).build().await.unwrap();
    let noop = |_: Arc<ConfigMap>, _: Arc<Context<()>>| async { Ok::<_, Never>(Action::done()) };
    mgr.controller::<ConfigMap>().reconcile(noop, ());
    mgr.controller::<ConfigMap>().reconcile(noop, ());
    let err = mgr.run_until(CancellationToken::new()).await.unwrap_err();
    assert!(
        matches!(&err, Error::DuplicateController(name) if name == "configmap"),
        "{err}"
    );

    let mgr = builder(&server).build().await.unwrap();
    mgr.add_runnable("broken", false, |_stop| async {
        sleep(Duration::from_millis(50)).await;
        Err::<(), _>(std::io::Error::other("disk on fire"))
    });
    let err = tokio::time::timeout(PATIENCE, mgr.run_until(CancellationToken::new()))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.to_string(), "runnable broken: disk on fire");
}

/// One of two managers on one Lease.
struct Candidate {
    name: &'static str,
    leadership: Leadership,
    reconciled: Arc<Mutex<Vec<String>>>,
    leader_runnable_started: Arc<AtomicBool>,
    other_runnable_started: Arc<AtomicBool>,
    stop: CancellationToken,
    task: JoinHandle<Result<(), Error>>,
}

const LEASE: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_millis(1500);
const RETRY: Duration = Duration::from_millis(250);

/// Its reconcile records every object and never finishes one named
/// `stuck`; `grace` is the graceful shutdown timeout.
async fn candidate(
    server: &ApiServer,
    name: &'static str,
    release: bool,
    grace: Duration,
) -> Candidate {
    let mgr = builder(server)
        .leader_election("shared-lease")
        .leader_election_namespace(NS)
        .lease_duration(LEASE)
        .renew_deadline(RENEW)
        .retry_period(RETRY)
        .leader_election_release_on_cancel(release)
        .graceful_shutdown_timeout(grace)
        .build()
        .await
        .unwrap();
    let reconciled = Arc::new(Mutex::new(Vec::new()));
    mgr.controller::<ConfigMap>().reconcile(
        |cm: Arc<ConfigMap>, ctx: Arc<Context<Arc<Mutex<Vec<String>>>>>| async move {
            let name = cm.metadata.name.clone().unwrap_or_default();
            ctx.lock().unwrap().push(name.clone());
            if name == "stuck" {
                std::future::pending::<()>().await;
            }
            Ok::<_, Never>(Action::done())
        },
        Arc::clone(&reconciled),
    );
    let leader_runnable_started = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&leader_runnable_started);
    mgr.add_runnable("leader-only", true, move |stop| async move {
        flag.store(true, Ordering::SeqCst);
        stop.cancelled().await;
        Ok::<_, Never>(())
    });
    let other_runnable_started = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&other_runnable_started);
    mgr.add_runnable("everywhere", false, move |stop| async move {
        flag.store(true, Ordering::SeqCst);
        stop.cancelled().await;
        Ok::<_, Never>(())
    });
    let leadership = mgr.leadership();
    let (stop, task) = run(mgr);
    Candidate {
        name,
        leadership,
        reconciled,
        leader_runnable_started,
        other_runnable_started,
        stop,
        task,
    }
}

/// Samples both candidates every few milliseconds; counts the samples in
/// which both claimed to lead.
fn watch_for_split_brain(a: Leadership, b: Leadership) -> (Arc<AtomicUsize>, CancellationToken) {
    let overlaps = Arc::new(AtomicUsize::new(0));
    let stop = CancellationToken::new();
    let (count, done) = (Arc::clone(&overlaps), stop.clone());
    tokio::spawn(async move {
        while !done.is_cancelled() {
            if a.is_leader() && b.is_leader() {
                count.fetch_add(1, Ordering::SeqCst);
            }
            sleep(Duration::from_millis(2)).await;
        }
    });
    (overlaps, stop)
}

async fn wait_for_leader(candidates: [&Candidate; 2]) -> usize {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(i) = candidates.iter().position(|c| c.leadership.is_leader()) {
            return i;
        }
        assert!(Instant::now() < deadline, "nobody was elected");
        sleep(Duration::from_millis(5)).await;
    }
}

async fn lease_holder(server: &ApiServer) -> String {
    let lease: Lease = Api::namespaced(server.client().unwrap(), NS)
        .get("shared-lease")
        .await
        .unwrap();
    lease
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default()
}

async fn leader_election_scenario(release: bool) {
    init_tracing();
    let server = ApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), NS);
    for i in 0..3 {
        api.create(&PostParams::default(), &cm(&format!("obj{i}")))
            .await
            .unwrap();
    }
    let a = candidate(&server, "a", release, Duration::from_secs(5)).await;
    let b = candidate(&server, "b", release, Duration::from_secs(5)).await;
    let (overlaps, stop_watching) =
        watch_for_split_brain(a.leadership.clone(), b.leadership.clone());

    let first = wait_for_leader([&a, &b]).await;
    let (leader, follower) = if first == 0 { (a, b) } else { (b, a) };
    eventually("the leader's reconciles", || {
        leader.reconciled.lock().unwrap().len() >= 3
    })
    .await;
    // The follower watches (its caches and non-leader runnables run) but
    // reconciles nothing.
    api.patch(
        "obj0",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    eventually("the leader's reconcile of the change", || {
        leader.reconciled.lock().unwrap().len() >= 4
    })
    .await;
    sleep(Duration::from_millis(300)).await;
    assert!(
        follower.reconciled.lock().unwrap().is_empty(),
        "{} reconciled while following",
        follower.name
    );
    assert!(follower.other_runnable_started.load(Ordering::SeqCst));
    assert!(!follower.leader_runnable_started.load(Ordering::SeqCst));
    assert!(leader.leader_runnable_started.load(Ordering::SeqCst));
    let leader_identity = leader
        .leadership
        .handle()
        .map(|h| h.status().identity)
        .expect("the leader's election handle");
    assert_eq!(lease_holder(&server).await, leader_identity);

    // Stop the leader; the follower takes over.
    let stopped = Instant::now();
    leader.stop.cancel();
    leader.task.await.unwrap().unwrap();
    if release {
        // Released before the manager returned: the lease names nobody (or
        // already the follower), never the stopped leader.
        assert_ne!(
            lease_holder(&server).await,
            leader_identity,
            "the stopped leader did not release the lease"
        );
    }
    wait_for_leader([&follower, &follower]).await;
    let takeover = stopped.elapsed();
    // client-go's bound: the lease must look unrenewed for a whole lease
    // duration, and attempts come every retry period (jittered up to 2.2x).
    let bound = LEASE + RETRY.mul_f64(2.2) + Duration::from_secs(2);
    assert!(
        takeover <= bound,
        "took over after {takeover:?}, beyond {bound:?}"
    );
    if release {
        assert!(
            takeover < LEASE,
            "a released lease is taken at once, not after {takeover:?}"
        );
    }
    eventually("the new leader's reconciles", || {
        follower.reconciled.lock().unwrap().len() >= 3
    })
    .await;
    assert!(follower.leader_runnable_started.load(Ordering::SeqCst));

    follower.stop.cancel();
    follower.task.await.unwrap().unwrap();
    stop_watching.cancel();
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two leaders at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_one_of_two_managers_leads_and_the_other_takes_over_after_the_lease_expires() {
    leader_election_scenario(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_lease_is_taken_over_at_once() {
    leader_election_scenario(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_lease_stops_the_controllers_and_fails_the_manager() {
    init_tracing();
    let server = ApiServer::start().await.unwrap();
    // A grace period far beyond PATIENCE: only stopping the controllers at
    // once, without waiting for the reconcile in flight, ends in time.
    let a = candidate(&server, "a", false, Duration::from_secs(600)).await;
    wait_for_leader([&a, &a]).await;
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), NS);
    api.create(&PostParams::default(), &cm("stuck"))
        .await
        .unwrap();
    eventually("the reconcile that never finishes to start", || {
        a.reconciled.lock().unwrap().iter().any(|n| n == "stuck")
    })
    .await;
    // Every renewal fails from now on: after the renew deadline the leader
    // must give up.
    server.faults().fail_next(
        100_000,
        RequestMatch::verb("update").resource("leases"),
        Failure::InternalError,
    );
    let failing = Instant::now();
    let result = tokio::time::timeout(PATIENCE, a.task)
        .await
        .expect("the controllers are stopped at once, not drained, when the lease is lost")
        .unwrap();
    match result {
        Err(Error::LeadershipLost { lease }) => assert_eq!(lease, "default/shared-lease"),
        other => panic!("expected a lost lease, got {other:?}"),
    }
    assert!(
        failing.elapsed() >= RENEW - RETRY,
        "gave up before the renew deadline"
    );
    assert!(!a.leadership.is_leader());
    // Its controllers are gone: a new object is not reconciled.
    let before = a.reconciled.lock().unwrap().len();
    api.create(&PostParams::default(), &cm("after-loss"))
        .await
        .unwrap();
    sleep(Duration::from_millis(300)).await;
    assert_eq!(a.reconciled.lock().unwrap().len(), before);
    let _ = a.stop;
    let _ = a.other_runnable_started;
    server.faults().clear();
}

/// `ManagerBuilder::config`: the manager makes its client from the
/// configuration (its server, CA, token and default namespace), so a
/// `main` with `--kubeconfig`/`--context` flags hands over the `Config`; a
/// configuration that cannot make a client is `Error::Client`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_built_from_a_config_talks_to_that_server() {
    init_tracing();
    let server = ApiServer::start().await.expect("server starts");
    let mut config = server.config();
    config.default_namespace = "team-a".into();
    let mgr = Manager::builder()
        .config(config)
        .metrics_bind_address("0")
        .health_probe_bind_address("0")
        .build()
        .await
        .expect("manager builds");
    assert_eq!(mgr.live_client().default_namespace(), "team-a");
    let created = Api::<ConfigMap>::namespaced(mgr.live_client().clone(), NS)
        .create(&PostParams::default(), &cm("from-config"))
        .await
        .expect("the client reaches the server with its credentials");
    assert_eq!(created.metadata.name.as_deref(), Some("from-config"));

    // The last of client and config wins.
    let mgr = Manager::builder()
        .config(kubeforge::Config::new(http::Uri::from_static("/no-scheme")))
        .client(server.client().expect("client"))
        .metrics_bind_address("0")
        .health_probe_bind_address("0")
        .build()
        .await
        .expect("the client given last is used");
    drop(mgr);

    let err = Manager::builder()
        .client(server.client().expect("client"))
        .config(kubeforge::Config::new(http::Uri::from_static("/no-scheme")))
        .metrics_bind_address("0")
        .health_probe_bind_address("0")
        .build()
        .await
        .expect_err("a config without a server URL cannot make a client");
    assert!(matches!(err, Error::Client(_)), "{err:?}");
    assert!(err.to_string().contains("no scheme"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_managers_max_concurrent_reconciles_is_each_controllers_default() {
    init_tracing();
    let server = ApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), NS);
    for i in 0..6 {
        api.create(&PostParams::default(), &cm(&format!("c{i}")))
            .await
            .unwrap();
    }
    let mgr = builder(&server)
        .metrics_bind_address("127.0.0.1:0")
        .max_concurrent_reconciles(3)
        .build()
        .await
        .unwrap();
    let metrics = mgr.metrics_address().expect("metrics on");

    #[derive(Default)]
    struct Gauge {
        running: AtomicUsize,
        max_running: AtomicUsize,
        done: AtomicUsize,
    }
    let gauge = Arc::new(Gauge::default());
    // Leaves its concurrency to the manager.
    mgr.controller::<ConfigMap>().reconcile(
        |_: Arc<ConfigMap>, ctx: Arc<Context<Arc<Gauge>>>| async move {
            let now = ctx.running.fetch_add(1, Ordering::SeqCst) + 1;
            ctx.max_running.fetch_max(now, Ordering::SeqCst);
            sleep(Duration::from_millis(300)).await;
            ctx.running.fetch_sub(1, Ordering::SeqCst);
            ctx.done.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Never>(Action::done())
        },
        Arc::clone(&gauge),
    );
    // Says its own.
    mgr.controller::<ConfigMap>()
        .named("single")
        .concurrency(1)
        .reconcile(
            |_: Arc<ConfigMap>, _: Arc<Context<()>>| async move { Ok::<_, Never>(Action::done()) },
            (),
        );
    let (stop, task) = run(mgr);
    eventually("the six objects reconciled", || {
        gauge.done.load(Ordering::SeqCst) >= 6
    })
    .await;
    assert_eq!(
        gauge.max_running.load(Ordering::SeqCst),
        3,
        "six slow keys should fill the manager's three workers, and no more"
    );
    let (code, text) = http_get(metrics, "/metrics").await;
    assert_eq!(code, 200);
    let samples = parse_metrics(&text);
    let workers = |controller: &str| {
        samples
            .get(&format!(
                r#"controller_runtime_max_concurrent_reconciles{{controller="{controller}"}}"#
            ))
            .copied()
    };
    assert_eq!(workers("configmap"), Some(3.0), "{text}");
    assert_eq!(workers("single"), Some(1.0), "{text}");
    stop.cancel();
    task.await.unwrap().unwrap();
}

/// controller-runtime's `EnableWarmup` (kubernetes-sigs/controller-runtime
/// #3019) by construction: the sources of a controller registered with a
/// manager are informers of its shared factory, and the manager syncs
/// every one before the election. So a follower holds a warm cache even of
/// a kind only one controller `watches` and nothing else reads, and a new
/// leader starts from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followers_watches_of_kinds_nothing_else_caches_are_warm_before_it_leads() {
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use kubeforge::cache::ObjectKey;
    init_tracing();
    let server = ApiServer::start().await.unwrap();
    let client = server.client().unwrap();
    // Someone else holds the Lease for a long while: this manager follows.
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("held-elsewhere".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("someone-else".into()),
            lease_duration_seconds: Some(3600),
            renew_time: Some(MicroTime(kubeforge::k8s_openapi::jiff::Timestamp::now())),
            ..LeaseSpec::default()
        }),
    };
    Api::<Lease>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &lease)
        .await
        .unwrap();
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("only-watched".into()),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    Api::<Secret>::namespaced(client, NS)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();

    let mgr = builder(&server)
        .leader_election("held-elsewhere")
        .leader_election_namespace(NS)
        .build()
        .await
        .unwrap();
    mgr.controller::<ConfigMap>()
        .watches(|s: &Secret| vec![ObjectKey::new(s.metadata.namespace.clone(), "from-secret")])
        .reconcile(
            |_: Arc<ConfigMap>, _: Arc<Context<()>>| async { Ok::<_, Never>(Action::done()) },
            (),
        );
    let factory = mgr.factory().clone();
    let leadership = mgr.leadership();
    let (stop, task) = run(mgr);
    let secrets = factory.informer::<Secret>();
    eventually("the follower's Secret informer to sync", || {
        secrets.has_synced() && secrets.store().len() == 1
    })
    .await;
    assert!(!leadership.is_leader(), "the Lease is someone else's");
    stop.cancel();
    task.await.unwrap().unwrap();
}

/// A sharded controller is granted `patch` for its slot labels: on each
/// owned kind whose children it labels with their owner's slot (not with
/// every owner enqueued: those stay unlabelled), and on the primary
/// unless its ring never shards it by label.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_controller_is_granted_the_patch_of_its_slot_labels() {
    use k8s_openapi::api::core::v1::Secret;
    use kubeforge::controller::Owns;
    use kubeforge::rbac::Write;
    use kubeforge::sharding::{Mechanism, Sharding};

    let server = ApiServer::start().await.expect("server starts");
    let cases = [
        (Mechanism::Auto, false, true, true),
        (Mechanism::Labels, false, true, true),
        (Mechanism::ShardSelector, false, false, true),
        (Mechanism::Auto, true, true, false),
    ];
    for (mechanism, every_owner, primary_patched, owned_patched) in cases {
        let mgr = builder(&server).build().await.expect("manager builds");
        // The children are only created: any patch of them is the label's.
        let owns = Owns::new().writes([Write::Create]);
        let owns = if every_owner {
            owns.every_owner()
        } else {
            owns
        };
        mgr.controller::<ConfigMap>()
            .sharded(Sharding {
                mechanism,
                ..Sharding::ring("configmap-shards")
            })
            .owns_with::<Secret>(owns)
            .reconcile(
                |_: Arc<ConfigMap>, _: Arc<Context<()>>| async { Ok::<_, Never>(Action::done()) },
                (),
            );
        let patched: Vec<String> = mgr
            .permissions()
            .rules()
            .iter()
            .map(|rule| rule.to_policy_rule())
            .filter(|rule| rule.verbs.iter().any(|v| v == "patch"))
            .flat_map(|rule| rule.resources.unwrap_or_default())
            .collect();
        let case = format!("{mechanism:?}, every owner {every_owner}: {patched:?}");
        assert_eq!(
            patched.contains(&"configmaps".to_owned()),
            primary_patched,
            "{case}"
        );
        assert_eq!(
            patched.contains(&"secrets".to_owned()),
            owned_patched,
            "{case}"
        );
    }
}
