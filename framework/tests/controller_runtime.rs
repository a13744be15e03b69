//! The reconcile loop against the in-process API server: what enqueues a
//! reconcile (the primary object, owned objects through a metadata-only
//! watch, mapped objects), level-triggered collapsing of bursts,
//! controller-runtime's result handling (requeue-after, exponential error
//! backoff, terminal errors, caught panics), the concurrency limit and
//! per-key exclusivity, predicates, a finalizer flow on a derived custom
//! resource, the metrics, and named cache-sync failures.
//!
//! Timing assertions are lower bounds (a delay is never shorter than asked)
//! plus generous upper bounds on "it happens at all".

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubeforge::cache::{ObjectForm, ObjectKey, SharedInformerFactory};
use kubeforge::controller::predicate::{self, GenerationChanged};
use kubeforge::controller::{
    Action, Channel, Context, Controller, ControllerMetrics, Error, Owns, TerminalError, Watch,
};
use kubeforge::kube_core::params::{DeleteParams, Patch, PatchParams, PostParams};
use kubeforge::kube_core::ObjectMeta;
use kubeforge::manager::CancellationToken;
use kubeforge::prelude::{
    set_controller_reference, CustomResource, Deserialize, FinalizerEvent, JsonSchema, Serialize,
};
use kubeforge::reconcile::CachedClient;
use kubeforge::testing::{ApiServer, ApiServerExt};
use kubeforge::workqueue::ItemExponentialFailure;
use kubeforge::{Api, Client};
use prometheus_client::registry::Registry;
use serde_json::json;
use tokio::time::{sleep, Instant};

const NS: &str = "default";
const PATIENCE: Duration = Duration::from_secs(20);

/// A custom resource with a status subresource, for predicates and
/// finalizers.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(
    group = "test.kubeforge.dev",
    version = "v1",
    kind = "Widget",
    status = "WidgetStatus"
)]
pub struct WidgetSpec {
    /// How many.
    pub size: i32,
}

/// What the controller reports.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub struct WidgetStatus {
    /// The size last reconciled.
    pub observed: i32,
}

#[derive(Debug, thiserror::Error)]
enum TestError {
    #[error("transient failure")]
    Transient,
    #[error("invalid: {0}")]
    Invalid(#[from] TerminalError),
    #[error(transparent)]
    Controller(#[from] Error),
}

struct Harness {
    server: ApiServer,
    client: Client,
    cached: CachedClient,
}

async fn harness() -> Harness {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let server = ApiServer::start().await.expect("server starts");
    let client = server.client().expect("client");
    let factory = SharedInformerFactory::new(client.clone());
    let cached = CachedClient::new(client.clone(), factory);
    Harness {
        server,
        client,
        cached,
    }
}

fn fast_retries() -> ItemExponentialFailure<ObjectKey> {
    ItemExponentialFailure::new(Duration::from_millis(10), Duration::from_secs(2))
}

fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        ..Default::default()
    }
}

/// Runs `controller` until the returned token is cancelled.
fn spawn<K: kubeforge::reconcile::CachedObject>(
    controller: Controller<K>,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<Result<(), Error>>,
) {
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(stop.clone()));
    (stop, task)
}

async fn stop(stop: CancellationToken, task: tokio::task::JoinHandle<Result<(), Error>>) {
    stop.cancel();
    task.await
        .expect("controller task")
        .expect("controller stops cleanly");
}

/// Polls `cond` until it holds, failing after [`PATIENCE`].
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        sleep(Duration::from_millis(10)).await;
    }
}

/// One reconcile: the object's name, when, and its data.
type Seen = (String, Instant, BTreeMap<String, String>);

/// Every reconcile seen, per key, with when and what it saw.
#[derive(Default)]
struct Log {
    seen: Mutex<Vec<Seen>>,
}

impl Log {
    fn record(&self, cm: &ConfigMap) {
        self.seen.lock().unwrap().push((
            cm.metadata.name.clone().unwrap_or_default(),
            Instant::now(),
            cm.data.clone().unwrap_or_default(),
        ));
    }

    fn count(&self, name: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, ..)| n == name)
            .count()
    }

    fn times(&self, name: &str) -> Vec<Instant> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, ..)| n == name)
            .map(|(_, t, _)| *t)
            .collect()
    }

    fn last(&self, name: &str) -> Option<BTreeMap<String, String>> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|(n, ..)| n == name)
            .map(|(.., d)| d.clone())
    }
}

async fn log_reconcile(
    cm: Arc<ConfigMap>,
    ctx: Arc<Context<Arc<Log>>>,
) -> Result<Action, TestError> {
    ctx.record(&cm);
    Ok(Action::done())
}

fn metric(registry: &Registry, series: &str) -> f64 {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no series {series} in\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconciles_the_primary_on_create_and_update() {
    let h = harness().await;
    let log = Arc::new(Log::default());
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .rate_limiter(fast_retries())
        .reconcile(log_reconcile, Arc::clone(&log));
    assert_eq!(controller.name(), "configmap");
    let (token, task) = spawn(controller);

    let api: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    api.create(&PostParams::default(), &cm("a", &[("v", "1")]))
        .await
        .unwrap();
    eventually("a reconcile of the created object", || log.count("a") == 1).await;
    assert_eq!(log.last("a").unwrap()["v"], "1");

    let patch = Patch::Merge(json!({"data": {"v": "2"}}));
    api.patch("a", &PatchParams::default(), &patch)
        .await
        .unwrap();
    eventually("a reconcile of the update", || {
        log.last("a").is_some_and(|d| d["v"] == "2")
    })
    .await;
    stop(token, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owned_object_wakes_its_controller_owner_through_a_metadata_only_watch() {
    let h = harness().await;
    let log = Arc::new(Log::default());
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .owns::<Secret>()
        .reconcile(log_reconcile, Arc::clone(&log));
    let (token, task) = spawn(controller);

    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    let owner = cms
        .create(&PostParams::default(), &cm("owner", &[]))
        .await
        .unwrap();
    let other = cms
        .create(&PostParams::default(), &cm("bystander", &[]))
        .await
        .unwrap();
    eventually("the owners' first reconciles", || {
        log.count("owner") == 1 && log.count("bystander") == 1
    })
    .await;

    let reference = |o: &ConfigMap, controller: bool| OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: o.metadata.name.clone().unwrap(),
        uid: o.metadata.uid.clone().unwrap(),
        controller: Some(controller),
        ..Default::default()
    };
    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), NS);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("owned".into()),
            namespace: Some(NS.into()),
            // Only the controller reference wakes its owner.
            owner_references: Some(vec![reference(&owner, true), reference(&other, false)]),
            ..Default::default()
        },
        ..Default::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    eventually("the controller owner's reconcile on create", || {
        log.count("owner") == 2
    })
    .await;

    let patch = Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}}));
    secrets
        .patch("owned", &PatchParams::default(), &patch)
        .await
        .unwrap();
    eventually("the controller owner's reconcile on update", || {
        log.count("owner") == 3
    })
    .await;
    // A metadata-only watch: one watch on secrets, through an informer that
    // holds metadata only (a full one would also wake the owner).
    assert_eq!(h.server.faults().open_watches_for("", "secrets"), 1);
    let secret_informers: Vec<ObjectForm> = h
        .cached
        .factory()
        .informer_ids()
        .into_iter()
        .filter(|id| id.plural == "secrets")
        .map(|id| id.form)
        .collect();
    assert_eq!(secret_informers, [ObjectForm::MetadataOnly]);
    sleep(Duration::from_millis(200)).await;
    assert_eq!(
        log.count("bystander"),
        1,
        "a non-controller owner is not enqueued"
    );
    stop(token, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_owner_enqueues_non_controller_owners_too() {
    let h = harness().await;
    let log = Arc::new(Log::default());
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .owns_with::<Secret>(Owns::new().every_owner())
        .reconcile(log_reconcile, Arc::clone(&log));
    let (token, task) = spawn(controller);
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    let owner = cms
        .create(&PostParams::default(), &cm("plain-owner", &[]))
        .await
        .unwrap();
    eventually("the first reconcile", || log.count("plain-owner") == 1).await;
    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), NS);
    let mut secret = Secret::default();
    secret.metadata.name = Some("s".into());
    secret.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "plain-owner".into(),
        uid: owner.metadata.uid.clone().unwrap(),
        ..Default::default()
    }]);
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    eventually("the plain owner's reconcile", || {
        log.count("plain-owner") == 2
    })
    .await;
    stop(token, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_object_wakes_the_keys_its_mapper_returns() {
    let h = harness().await;
    let log = Arc::new(Log::default());
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .watches_with(
            Watch::new(|s: &Secret| {
                let target = s
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("target"))
                    .cloned();
                target
                    .map(|t| vec![ObjectKey::namespaced(NS, t)])
                    .unwrap_or_default()
            })
            .predicate(kubeforge::controller::predicate::from_fn(|s: &Secret| {
                s.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("target"))
            })),
        )
        .reconcile(log_reconcile, Arc::clone(&log));
    let (token, task) = spawn(controller);
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    cms.create(&PostParams::default(), &cm("mapped", &[]))
        .await
        .unwrap();
    eventually("the first reconcile", || log.count("mapped") == 1).await;

    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), NS);
    let mut secret = Secret::default();
    secret.metadata.name = Some("pointer".into());
    secret.metadata.labels = Some([("target".to_owned(), "mapped".to_owned())].into());
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    eventually("the mapped reconcile", || log.count("mapped") == 2).await;
    stop(token, task).await;
}

/// A channel source turns objects from outside the cluster into generic
/// events: its predicates decide with `generic`, and each object passing
/// them reconciles its own key, or the keys its mapper returns. (The
/// primary watch here enqueues nothing, so every reconcile comes from the
/// channel.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_delivers_generic_events_through_its_predicates() {
    let h = harness().await;
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    for name in ["skipped", "nudged", "mapped-to"] {
        cms.create(&PostParams::default(), &cm(name, &[]))
            .await
            .unwrap();
    }
    let log = Arc::new(Log::default());
    let (nudge, nudges) = tokio::sync::mpsc::channel(8);
    let (point, pointers) = tokio::sync::mpsc::channel::<Secret>(8);
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .for_predicate(predicate::from_fn(|_: &ConfigMap| false))
        .watches_channel(Channel::new(nudges).predicate(predicate::from_generic(
            |cm: &ConfigMap| cm.metadata.name.as_deref() != Some("skipped"),
        )))
        .watches_channel(
            Channel::new(pointers).map(|_: &Secret| vec![ObjectKey::namespaced(NS, "mapped-to")]),
        )
        .reconcile(log_reconcile, Arc::clone(&log));
    let (token, task) = spawn(controller);

    nudge.send(cm("skipped", &[])).await.unwrap();
    nudge.send(cm("nudged", &[])).await.unwrap();
    eventually("the nudged reconcile", || log.count("nudged") == 1).await;
    // One worker takes keys in order: had "skipped" passed, it would have
    // been reconciled before "nudged".
    assert_eq!(log.count("skipped"), 0);

    point.send(Secret::default()).await.unwrap();
    eventually("the mapped reconcile", || log.count("mapped-to") == 1).await;
    stop(token, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_updates_collapses_into_few_reconciles_of_the_latest_state() {
    let h = harness().await;
    let log = Arc::new(Log::default());
    let controller = Controller::<ConfigMap>::builder(h.cached.clone()).reconcile(
        |cm: Arc<ConfigMap>, ctx: Arc<Context<Arc<Log>>>| async move {
            ctx.record(&cm);
            // A slow reconcile: updates pile up behind it.
            sleep(Duration::from_millis(200)).await;
            Ok::<_, TestError>(Action::done())
        },
        Arc::clone(&log),
    );
    let (token, task) = spawn(controller);
    let api: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    api.create(&PostParams::default(), &cm("burst", &[("n", "0")]))
        .await
        .unwrap();
    for n in 1..=100 {
        let patch = Patch::Merge(json!({"data": {"n": n.to_string()}}));
        api.patch("burst", &PatchParams::default(), &patch)
            .await
            .unwrap();
    }
    eventually("a reconcile of the last state", || {
        log.last("burst").is_some_and(|d| d["n"] == "100")
    })
    .await;
    sleep(Duration::from_millis(300)).await;
    let reconciles = log.count("burst");
    assert!(
        reconciles <= 30,
        "101 writes should collapse into far fewer reconciles, got {reconciles}"
    );
    assert_eq!(
        log.last("burst").unwrap()["n"],
        "100",
        "the last state wins"
    );
    stop(token, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_after_reconciles_again_after_the_delay() {
    let h = harness().await;
    let log = Arc::new(Log::default());
    let controller = Controller::<ConfigMap>::builder(h.cached.clone()).reconcile(
        |cm: Arc<ConfigMap>, ctx: Arc<Context<Arc<Log>>>| async move {
            ctx.record(&cm);
            Ok::<_, TestError>(Action::requeue_after(Duration::from_millis(300)))
        },
        Arc::clone(&log),
    );
    let (token, task) = spawn(controller);
    let api: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    api.create(&PostParams::default(), &cm("periodic", &[]))
        .await
        .unwrap();
    eventually("three reconciles", || log.count("periodic") >= 3).await;
    let times = log.times("periodic");
    for pair in times.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Duration::from_millis(300),
            "requeued after {gap:?}, before the 300 ms asked for"
        );
    }
    stop(token, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_retried_with_exponential_backoff_until_success() {
    let h = harness().await;
    let log = Arc::new(Log::default());
    let metrics = ControllerMetrics::new();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .named("backoff")
        .metrics(metrics)
        .rate_limiter(ItemExponentialFailure::new(
            Duration::from_millis(40),
            Duration::from_secs(10),
        ))
        .reconcile(
            |cm: Arc<ConfigMap>, ctx: Arc<Context<Arc<Log>>>| async move {
                ctx.record(&cm);
                if ctx.count("flaky") <= 5 {
                    Err(TestError::Transient)
                } else {
                    Ok(Action::done())
                }
            },
            Arc::clone(&log),
        );
    let (token, task) = spawn(controller);
    let api: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    api.create(&PostParams::default(), &cm("flaky", &[]))
        .await
        .unwrap();
    eventually("five failures and a success", || log.count("flaky") == 6).await;
    let times = log.times("flaky");
    // client-go's per-item exponential limiter: 40 ms x 2^failures.
    for (i, pair) in times.windows(2).enumerate() {
        let gap = pair[1] - pair[0];
        let floor = Duration::from_millis(40) * 2u32.pow(i as u32);
        assert!(gap >= floor, "retry {i} after {gap:?}, before {floor:?}");
    }
    let gaps: Vec<Duration> = times.windows(2).map(|p| p[1] - p[0]).collect();
    assert!(
        gaps[4] > gaps[0] * 3,
        "the backoff grows exponentially: {gaps:?}"
    );
    sleep(Duration::from_millis(200)).await;
    assert_eq!(
        log.count("flaky"),
        6,
        "success forgets the failures and stops retrying"
    );
    assert_eq!(
        metric(
            &registry,
            r#"controller_runtime_reconcile_total{controller="backoff",result="error"}"#
        ),
        5.0
    );
    assert_eq!(
        metric(
            &registry,
            r#"controller_runtime_reconcile_total{controller="backoff",result="success"}"#
        ),
        1.0
    );
    assert_eq!(
        metric(
            &registry,
            r#"controller_runtime_reconcile_errors_total{controller="backoff"}"#
        ),
        5.0
    );
    assert_eq!(
        metric(
            &registry,
            r#"workqueue_retries_total{name="backoff",controller="backoff"}"#
        ),
        5.0
    );
    stop(token, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_errors_are_logged_and_not_retried() {
    let h = harness().await;
    let log = Arc::new(Log::default());
    let metrics = ControllerMetrics::new();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .named("terminal")
        .metrics(metrics)
        .rate_limiter(fast_retries())
        .reconcile(
            |cm: Arc<ConfigMap>, ctx: Arc<Context<Arc<Log>>>| async move {
                ctx.record(&cm);
                Err::<Action, _>(TestError::from(TerminalError::new("size must be positive")))
            },
            Arc::clone(&log),
        );
    let (token, task) = spawn(controller);
    let api: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    api.create(&PostParams::default(), &cm("doomed", &[]))
        .await
        .unwrap();
    eventually("the first reconcile", || log.count("doomed") == 1).await;
    // A retry would come within 10 ms.
    sleep(Duration::from_millis(300)).await;
    assert_eq!(log.count("doomed"), 1, "terminal errors are not retried");
    assert_eq!(
        metric(
            &registry,
            r#"controller_runtime_terminal_reconcile_errors_total{controller="terminal"}"#
        ),
        1.0
    );
    // The next change is reconciled again.
    let patch = Patch::Merge(json!({"data": {"fixed": "yes"}}));
    api.patch("doomed", &PatchParams::default(), &patch)
        .await
        .unwrap();
    eventually("a reconcile of the next change", || {
        log.count("doomed") == 2
    })
    .await;
    stop(token, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_reconcile_is_caught_and_retried() {
    let h = harness().await;
    let log = Arc::new(Log::default());
    let metrics = ControllerMetrics::new();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .named("panicky")
        .metrics(metrics)
        .rate_limiter(fast_retries())
        .reconcile(
            |cm: Arc<ConfigMap>, ctx: Arc<Context<Arc<Log>>>| async move {
                ctx.record(&cm);
                if ctx.count("fragile") == 1 {
                    panic!("first reconcile explodes");
                }
                Ok::<_, TestError>(Action::done())
            },
            Arc::clone(&log),
        );
    let (token, task) = spawn(controller);
    let api: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    api.create(&PostParams::default(), &cm("fragile", &[]))
        .await
        .unwrap();
    eventually("a retry after the panic", || log.count("fragile") == 2).await;
    assert_eq!(
        metric(
            &registry,
            r#"controller_runtime_reconcile_panics_total{controller="panicky"}"#
        ),
        1.0
    );
    assert_eq!(
        metric(
            &registry,
            r#"controller_runtime_reconcile_total{controller="panicky",result="success"}"#
        ),
        1.0
    );
    stop(token, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_panic_recovery_a_panic_stops_the_controller_with_an_error() {
    let h = harness().await;
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .recover_panic(false)
        .reconcile(
            |_: Arc<ConfigMap>, _: Arc<Context<()>>| async move {
                if true {
                    panic!("unrecoverable");
                }
                Ok::<_, TestError>(Action::done())
            },
            (),
        );
    let (_token, task) = spawn(controller);
    let api: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    api.create(&PostParams::default(), &cm("bomb", &[]))
        .await
        .unwrap();
    let result = tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
    match result {
        Err(Error::ReconcilerPanicked { key, message, .. }) => {
            assert_eq!(key, "default/bomb");
            assert_eq!(message, "unrecoverable");
        }
        other => panic!("expected a panic error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_is_limited_and_no_key_has_two_workers() {
    let h = harness().await;

    #[derive(Default)]
    struct Gauge {
        running: AtomicUsize,
        max_running: AtomicUsize,
        per_key: Mutex<HashMap<String, usize>>,
        max_per_key: AtomicUsize,
        done: AtomicUsize,
    }
    let gauge = Arc::new(Gauge::default());
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .concurrency(3)
        .reconcile(
            |cm: Arc<ConfigMap>, ctx: Arc<Context<Arc<Gauge>>>| async move {
                let name = cm.metadata.name.clone().unwrap_or_default();
                let now = ctx.running.fetch_add(1, Ordering::SeqCst) + 1;
                ctx.max_running.fetch_max(now, Ordering::SeqCst);
                let mine = {
                    let mut per_key = ctx.per_key.lock().unwrap();
                    let n = per_key.entry(name.clone()).or_default();
                    *n += 1;
                    *n
                };
                ctx.max_per_key.fetch_max(mine, Ordering::SeqCst);
                sleep(Duration::from_millis(100)).await;
                *ctx.per_key.lock().unwrap().get_mut(&name).unwrap() -= 1;
                ctx.running.fetch_sub(1, Ordering::SeqCst);
                ctx.done.fetch_add(1, Ordering::SeqCst);
                Ok::<_, TestError>(Action::done())
            },
            Arc::clone(&gauge),
        );
    // Twelve objects exist before the controller starts: its initial list
    // queues them all at once.
    let api: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    for i in 0..12 {
        api.create(&PostParams::default(), &cm(&format!("c{i}"), &[]))
            .await
            .unwrap();
    }
    let (token, task) = spawn(controller);
    // Hammer a few keys while they are being reconciled.
    for round in 0..10 {
        for i in 0..3 {
            let patch = Patch::Merge(json!({"data": {"round": round.to_string()}}));
            api.patch(&format!("c{i}"), &PatchParams::default(), &patch)
                .await
                .unwrap();
        }
        sleep(Duration::from_millis(15)).await;
    }
    eventually("every object reconciled", || {
        gauge.done.load(Ordering::SeqCst) >= 12
    })
    .await;
    // The patched keys go first (live changes outrank the initial list),
    // so twelve reconciles done need not be the last: wait for the queue
    // to drain, and no reconcile to be left running.
    eventually("no reconcile left running", || {
        gauge.running.load(Ordering::SeqCst) == 0
    })
    .await;
    let max_running = gauge.max_running.load(Ordering::SeqCst);
    assert!(
        max_running <= 3,
        "{max_running} reconciles ran at once; the limit is 3"
    );
    assert_eq!(max_running, 3, "12 slow keys should fill all 3 workers");
    assert_eq!(
        gauge.max_per_key.load(Ordering::SeqCst),
        1,
        "a key was reconciled by two workers at once"
    );
    stop(token, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_changed_ignores_status_only_changes() {
    let h = harness().await;
    h.server.install_crd_for::<Widget>().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let controller = Controller::<Widget>::builder(h.cached.clone())
        .for_predicate(GenerationChanged)
        .reconcile(
            |_: Arc<Widget>, ctx: Arc<Context<Arc<AtomicUsize>>>| async move {
                ctx.fetch_add(1, Ordering::SeqCst);
                Ok::<_, TestError>(Action::done())
            },
            Arc::clone(&count),
        );
    let (token, task) = spawn(controller);
    let api: Api<Widget> = Api::namespaced(h.client.clone(), NS);
    api.create(
        &PostParams::default(),
        &Widget::new("w", WidgetSpec { size: 1 }),
    )
    .await
    .unwrap();
    eventually("the create", || count.load(Ordering::SeqCst) == 1).await;

    let status = Patch::Merge(json!({"status": {"observed": 1}}));
    api.patch_status("w", &PatchParams::default(), &status)
        .await
        .unwrap();
    let labels = Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}}));
    api.patch("w", &PatchParams::default(), &labels)
        .await
        .unwrap();
    sleep(Duration::from_millis(300)).await;
    assert_eq!(
        count.load(Ordering::SeqCst),
        1,
        "status and metadata changes leave the generation alone"
    );

    let spec = Patch::Merge(json!({"spec": {"size": 2}}));
    api.patch("w", &PatchParams::default(), &spec)
        .await
        .unwrap();
    eventually("the spec change", || count.load(Ordering::SeqCst) == 2).await;
    stop(token, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_wide_event_filters_apply_to_every_watch() {
    let h = harness().await;
    let log = Arc::new(Log::default());
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .with_event_filter(kubeforge::controller::filter::meta_fn(|meta| {
            meta.labels.as_ref().and_then(|l| l.get("skip")).is_none()
        }))
        .reconcile(log_reconcile, Arc::clone(&log));
    let (token, task) = spawn(controller);
    let api: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    let mut skipped = cm("skipped", &[]);
    skipped.metadata.labels = Some([("skip".to_owned(), "1".to_owned())].into());
    api.create(&PostParams::default(), &skipped).await.unwrap();
    api.create(&PostParams::default(), &cm("kept", &[]))
        .await
        .unwrap();
    eventually("the kept object", || log.count("kept") == 1).await;
    sleep(Duration::from_millis(200)).await;
    assert_eq!(log.count("skipped"), 0);
    stop(token, task).await;
}

/// The finalizer flow on a derived custom resource, through the cached
/// client: the finalizer is added before the first apply, the apply
/// creates a dependent (create-or-update) and writes status, and deleting the resource runs
/// cleanup (removing the dependent) before the finalizer is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finalizer_runs_cleanup_before_a_custom_resource_goes() {
    const FINALIZER: &str = "test.kubeforge.dev/cleanup";
    let h = harness().await;
    h.server.install_crd_for::<Widget>().unwrap();

    #[derive(Default)]
    struct Seen {
        applies: AtomicUsize,
        cleanups: AtomicUsize,
    }

    // The reconciler's error type is the controller layer's own: `?`
    // works on every client call and on the finalizer flow.
    async fn reconcile(w: Arc<Widget>, ctx: Arc<Context<Arc<Seen>>>) -> Result<Action, Error> {
        let client = ctx.client();
        let outcome = client
            .finalizer(FINALIZER, w, |event| async {
                match event {
                    FinalizerEvent::Apply(w) => {
                        let name =
                            format!("{}-data", w.metadata.name.as_deref().unwrap_or_default());
                        let mut owned = Ok(());
                        client
                            .create_or_update::<ConfigMap, _>(NS, &name, |data| {
                                owned = set_controller_reference(&*w, data);
                                data.data =
                                    Some([("size".to_owned(), w.spec.size.to_string())].into());
                            })
                            .await?;
                        owned?;
                        client
                            .patch_status(
                                &*w,
                                &WidgetStatus {
                                    observed: w.spec.size,
                                },
                            )
                            .await?;
                        ctx.applies.fetch_add(1, Ordering::SeqCst);
                        Ok(Action::requeue_after(Duration::from_secs(300)))
                    }
                    FinalizerEvent::Cleanup(w) => {
                        let name =
                            format!("{}-data", w.metadata.name.as_deref().unwrap_or_default());
                        match client
                            .delete::<ConfigMap>(NS, &name, &DeleteParams::default())
                            .await
                        {
                            Err(e) if !e.is_not_found() => return Err(e),
                            _ => {}
                        }
                        ctx.cleanups.fetch_add(1, Ordering::SeqCst);
                        Ok(Action::done())
                    }
                }
            })
            .await?;
        Ok(Action::from(outcome))
    }

    let seen = Arc::new(Seen::default());
    let controller = Controller::<Widget>::builder(h.cached.clone())
        .owns::<ConfigMap>()
        .rate_limiter(fast_retries())
        .reconcile(reconcile, Arc::clone(&seen));
    let (token, task) = spawn(controller);

    let widgets: Api<Widget> = Api::namespaced(h.client.clone(), NS);
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    widgets
        .create(
            &PostParams::default(),
            &Widget::new("gizmo", WidgetSpec { size: 3 }),
        )
        .await
        .unwrap();
    eventually("the first apply", || {
        seen.applies.load(Ordering::SeqCst) >= 1
    })
    .await;
    let stored = widgets.get("gizmo").await.unwrap();
    assert_eq!(
        stored.metadata.finalizers.as_deref(),
        Some(&[FINALIZER.to_owned()][..])
    );
    assert_eq!(stored.status.as_ref().map(|s| s.observed), Some(3));
    let data = cms.get("gizmo-data").await.unwrap();
    assert_eq!(data.data.unwrap()["size"], "3");
    assert_eq!(
        data.metadata.owner_references.unwrap()[0].uid,
        stored.metadata.uid.clone().unwrap()
    );

    widgets
        .delete("gizmo", &DeleteParams::default())
        .await
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while widgets.get_opt("gizmo").await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "the widget was never released");
        sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen.cleanups.load(Ordering::SeqCst), 1, "cleanup ran once");
    assert!(
        cms.get_opt("gizmo-data").await.unwrap().is_none(),
        "cleanup removed the dependent"
    );
    stop(token, task).await;
}

/// `Context::finalizer`: the closure gets its own `Arc` of the context, so
/// an `async move` block hands `&ctx` to plain async functions with no
/// re-borrowing first; the flow is the cached client's (finalizer added
/// before the first apply, cleanup before it is released).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_finalizer_hands_the_closure_its_own_context() {
    const FINALIZER: &str = "test.kubeforge.dev/context";
    let h = harness().await;
    h.server.install_crd_for::<Widget>().unwrap();

    #[derive(Default)]
    struct Seen {
        applies: AtomicUsize,
        cleanups: AtomicUsize,
    }

    async fn reconcile(w: Arc<Widget>, ctx: Arc<Context<Arc<Seen>>>) -> Result<Action, Error> {
        let outcome = ctx
            .finalizer(FINALIZER, w, |event, ctx| async move {
                match event {
                    FinalizerEvent::Apply(w) => apply(&w, &ctx).await,
                    FinalizerEvent::Cleanup(w) => cleanup(&w, &ctx).await,
                }
            })
            .await?;
        Ok(outcome.into())
    }

    async fn apply(w: &Widget, ctx: &Context<Arc<Seen>>) -> Result<Action, Error> {
        let status = WidgetStatus {
            observed: w.spec.size,
        };
        ctx.client().patch_status(w, &status).await?;
        ctx.applies.fetch_add(1, Ordering::SeqCst);
        Ok(Action::done())
    }

    async fn cleanup(_: &Widget, ctx: &Context<Arc<Seen>>) -> Result<Action, Error> {
        ctx.cleanups.fetch_add(1, Ordering::SeqCst);
        Ok(Action::done())
    }

    let seen = Arc::new(Seen::default());
    let controller = Controller::<Widget>::builder(h.cached.clone())
        .rate_limiter(fast_retries())
        .reconcile(reconcile, Arc::clone(&seen));
    let (token, task) = spawn(controller);

    let widgets: Api<Widget> = Api::namespaced(h.client.clone(), NS);
    widgets
        .create(
            &PostParams::default(),
            &Widget::new("dial", WidgetSpec { size: 2 }),
        )
        .await
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    let stored = loop {
        let w = widgets.get("dial").await.unwrap();
        if w.status.as_ref().is_some_and(|s| s.observed == 2) {
            break w;
        }
        assert!(Instant::now() < deadline, "the widget was never applied");
        sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        stored.metadata.finalizers.as_deref(),
        Some(&[FINALIZER.to_owned()][..])
    );

    widgets
        .delete("dial", &DeleteParams::default())
        .await
        .unwrap();
    while widgets.get_opt("dial").await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "the widget was never released");
        sleep(Duration::from_millis(20)).await;
    }
    assert!(seen.applies.load(Ordering::SeqCst) >= 1);
    assert_eq!(seen.cleanups.load(Ordering::SeqCst), 1, "cleanup ran once");
    stop(token, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_that_cannot_sync_fails_the_start_naming_it_and_why() {
    let h = harness().await;
    // The CRD is never installed: every list of widgets answers 404.
    let controller = Controller::<Widget>::builder(h.cached.clone())
        .cache_sync_timeout(Duration::from_secs(2))
        .reconcile(
            |_: Arc<Widget>, _: Arc<Context<()>>| async { Ok::<_, TestError>(Action::done()) },
            (),
        );
    let err = controller
        .run(CancellationToken::new())
        .await
        .expect_err("an unserved resource cannot sync");
    let Error::CacheSync(sync) = &err else {
        panic!("expected a cache-sync error, got {err:?}");
    };
    assert_eq!(sync.informer().plural, "widgets");
    let text = err.to_string();
    assert!(
        text.starts_with(
            "widgets.test.kubeforge.dev at the cluster scope did not sync within 2s; last error:"
        ),
        "{text}"
    );
    assert!(text.contains("404") || text.contains("not found"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_and_metadata_only_watches_map_to_keys() {
    use kubeforge::kube_core::{ApiResource, DynamicObject, PartialObjectMeta};

    let h = harness().await;
    let log = Arc::new(Log::default());
    let target_of = |labels: Option<&BTreeMap<String, String>>| {
        labels
            .and_then(|l| l.get("target"))
            .map(|t| vec![ObjectKey::namespaced(NS, t.clone())])
            .unwrap_or_default()
    };
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .watches_dynamic(
            ApiResource::erase::<Secret>(&()),
            Watch::new(move |s: &DynamicObject| target_of(s.metadata.labels.as_ref())),
        )
        .watches_metadata(Watch::new(move |s: &PartialObjectMeta<Secret>| {
            // Maps to a second object, so both watches are observable.
            target_of(s.metadata.labels.as_ref())
                .into_iter()
                .map(|k| ObjectKey::namespaced(NS, format!("{}-meta", k.name)))
                .collect()
        }))
        .reconcile(log_reconcile, Arc::clone(&log));
    let (token, task) = spawn(controller);
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    cms.create(&PostParams::default(), &cm("dyn", &[]))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &cm("dyn-meta", &[]))
        .await
        .unwrap();
    eventually("the first reconciles", || {
        log.count("dyn") == 1 && log.count("dyn-meta") == 1
    })
    .await;

    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), NS);
    let mut secret = Secret::default();
    secret.metadata.name = Some("pointer".into());
    secret.metadata.labels = Some([("target".to_owned(), "dyn".to_owned())].into());
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    eventually("both mapped reconciles", || {
        log.count("dyn") == 2 && log.count("dyn-meta") == 2
    })
    .await;
    // Two informers on secrets (full dynamic objects and metadata only).
    assert_eq!(h.server.faults().open_watches_for("", "secrets"), 2);
    stop(token, task).await;
}

/// Every watch caches as the cached client does, without `managedFields`:
/// dynamic watches and metadata-only watches with their own informer
/// options too, not only the client's default informers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mapped_watches_cache_objects_without_managed_fields() {
    use kubeforge::kube_core::{ApiResource, DynamicObject, PartialObjectMeta};

    #[derive(Default)]
    struct Seen {
        mapped: AtomicUsize,
        with_managed_fields: AtomicUsize,
    }
    impl Seen {
        fn note(&self, meta: &ObjectMeta) -> Vec<ObjectKey> {
            self.mapped.fetch_add(1, Ordering::SeqCst);
            if meta.managed_fields.is_some() {
                self.with_managed_fields.fetch_add(1, Ordering::SeqCst);
            }
            Vec::new()
        }
    }

    let h = harness().await;
    let (dynamic, metadata) = (Arc::new(Seen::default()), Arc::new(Seen::default()));
    let (d, m) = (Arc::clone(&dynamic), Arc::clone(&metadata));
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .watches_dynamic(
            ApiResource::erase::<Secret>(&()),
            Watch::new(move |s: &DynamicObject| d.note(&s.metadata)),
        )
        .watches_metadata(
            Watch::new(move |s: &PartialObjectMeta<Secret>| m.note(&s.metadata)).labels("app"),
        )
        .reconcile(log_reconcile, Arc::new(Log::default()));
    let (token, task) = spawn(controller);

    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), NS);
    let mut secret = Secret::default();
    secret.metadata.name = Some("labelled".into());
    secret.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
    let created = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    assert!(
        created.metadata.managed_fields.is_some(),
        "the server tracks managed fields, so there is something to strip"
    );
    eventually("both watches to map the secret", || {
        dynamic.mapped.load(Ordering::SeqCst) >= 1 && metadata.mapped.load(Ordering::SeqCst) >= 1
    })
    .await;
    assert_eq!(dynamic.with_managed_fields.load(Ordering::SeqCst), 0);
    assert_eq!(metadata.with_managed_fields.load(Ordering::SeqCst), 0);
    stop(token, task).await;
}

/// Log output captured from a subscriber set for one future.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A controller that gives up on reconciles at its graceful shutdown
/// timeout says which: the keys its workers still held, sorted, in the
/// warning it logs (controller-runtime logs the timeout; naming the keys
/// tells an operator's author which objects to look at).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reconciles_abandoned_at_shutdown_are_named_in_the_log() {
    use tracing::instrument::WithSubscriber as _;

    let h = harness().await;
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    let started = Arc::new(AtomicUsize::new(0));
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .concurrency(2)
        .graceful_shutdown_timeout(Duration::from_millis(200))
        .reconcile(
            |_: Arc<ConfigMap>, ctx: Arc<Context<Arc<AtomicUsize>>>| async move {
                ctx.fetch_add(1, Ordering::SeqCst);
                sleep(Duration::from_secs(3600)).await;
                Ok::<_, Error>(Action::done())
            },
            Arc::clone(&started),
        );
    let token = CancellationToken::new();
    let task = tokio::spawn(controller.run(token.clone()).with_subscriber(subscriber));
    let api: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    for name in ["stuck-b", "stuck-a"] {
        api.create(&PostParams::default(), &cm(name, &[]))
            .await
            .unwrap();
    }
    eventually("both reconciles to start", || {
        started.load(Ordering::SeqCst) == 2
    })
    .await;
    token.cancel();
    tokio::time::timeout(PATIENCE, task)
        .await
        .expect("the controller gives up on the stuck reconciles")
        .expect("controller task")
        .expect("controller stops cleanly");
    let text = logs.text();
    assert!(
        text.contains(r#"abandoned=["default/stuck-a", "default/stuck-b"]"#),
        "{text}"
    );
    assert!(text.contains("abandoning them"), "{text}");
}

/// A reconcile that takes 5 ms, so a backlog builds.
async fn slow_reconcile(
    cm: Arc<ConfigMap>,
    ctx: Arc<Context<Arc<Log>>>,
) -> Result<Action, TestError> {
    sleep(Duration::from_millis(5)).await;
    ctx.record(&cm);
    Ok(Action::done())
}

/// A reconcile slow enough that the informer has handed every listed
/// object to the queue before the worker takes its second key, even on a
/// loaded machine: the fairness test counts turns in that queue.
async fn slower_reconcile(
    cm: Arc<ConfigMap>,
    ctx: Arc<Context<Arc<Log>>>,
) -> Result<Action, TestError> {
    sleep(Duration::from_millis(50)).await;
    ctx.record(&cm);
    Ok(Action::done())
}

/// Where `name` first appears among the reconciles, in order.
fn position(log: &Log, name: &str) -> Option<usize> {
    let mut seen: Vec<(String, Instant)> = log
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|(n, t, _)| (n.clone(), *t))
        .collect();
    seen.sort_by_key(|(_, t)| *t);
    seen.iter().position(|(n, _)| n == name)
}

/// Starts a one-worker controller of slow reconciles over `listed` existing
/// ConfigMaps, creates `live` once the first reconcile has run, and returns
/// where the live one came among the reconciles.
async fn live_change_position(priority_queue: bool, listed: usize) -> usize {
    let h = harness().await;
    let api: Api<ConfigMap> = Api::namespaced(h.client.clone(), NS);
    for i in 0..listed {
        api.create(&PostParams::default(), &cm(&format!("listed-{i:03}"), &[]))
            .await
            .unwrap();
    }
    let log = Arc::new(Log::default());
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .priority_queue(priority_queue)
        .reconcile(slow_reconcile, Arc::clone(&log));
    let (token, task) = spawn(controller);
    eventually("the first reconcile of the initial list", || {
        !log.seen.lock().unwrap().is_empty()
    })
    .await;
    api.create(&PostParams::default(), &cm("live", &[]))
        .await
        .unwrap();
    eventually("the live change's reconcile", || log.count("live") == 1).await;
    eventually("every reconcile", || {
        log.seen.lock().unwrap().len() > listed
    })
    .await;
    stop(token, task).await;
    position(&log, "live").expect("live reconciled")
}

/// controller-runtime's priority queue (cr #3014): the initial list goes in
/// at low priority, so a change made while a restarted controller works
/// through it is reconciled next, not after the whole list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_change_is_reconciled_before_the_rest_of_the_initial_list() {
    let at = live_change_position(true, 150).await;
    assert!(at < 20, "the live change came {at}th of 151");
}

/// The opt-out: client-go's FIFO, where the live change waits behind every
/// key of the initial list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_priority_queue_a_live_change_waits_behind_the_initial_list() {
    assert_eq!(live_change_position(false, 150).await, 150);
}

/// Where the one ConfigMap of namespace `zz-other` came among the
/// reconciles of 100 in namespace `flood` (all in the initial list, which
/// lists `flood` first).
async fn other_namespace_position(fair: bool) -> usize {
    use k8s_openapi::api::core::v1::Namespace;
    let h = harness().await;
    let namespaces: Api<Namespace> = Api::all(h.client.clone());
    for ns in ["flood", "zz-other"] {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(ns.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    let in_ns = |ns: &str, name: &str| {
        let mut c = cm(name, &[]);
        c.metadata.namespace = Some(ns.into());
        c
    };
    let flood: Api<ConfigMap> = Api::namespaced(h.client.clone(), "flood");
    for i in 0..100 {
        flood
            .create(
                &PostParams::default(),
                &in_ns("flood", &format!("f-{i:03}")),
            )
            .await
            .unwrap();
    }
    let other: Api<ConfigMap> = Api::namespaced(h.client.clone(), "zz-other");
    other
        .create(&PostParams::default(), &in_ns("zz-other", "tenant"))
        .await
        .unwrap();
    let log = Arc::new(Log::default());
    let controller = Controller::<ConfigMap>::builder(h.cached.clone())
        .fairness(fair)
        .reconcile(slower_reconcile, Arc::clone(&log));
    let (token, task) = spawn(controller);
    eventually("every reconcile", || log.seen.lock().unwrap().len() >= 101).await;
    stop(token, task).await;
    position(&log, "tenant").expect("tenant reconciled")
}

/// controller-runtime PR #3261's fairness, by namespace: a namespace that
/// floods the queue delays another namespace's key by a turn, where
/// without fairness it waits behind all 100. Counted from the controller's
/// start, the first take can come before the informer has queued the
/// tenant's key, and on a loaded machine (this binary's other tests run
/// beside it) a few more can; the exact one-turn bound is the queue's own
/// test (`workqueue::priority_tests::groups_take_turns_within_a_priority`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_namespace_delays_another_by_one_turn() {
    let position = other_namespace_position(true).await;
    assert!(
        position < 10,
        "the tenant came {position}th, behind the flood"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_fairness_another_namespace_waits_behind_the_flood() {
    assert_eq!(other_namespace_position(false).await, 100);
}
