//! The operator end to end against kubeforge's in-process API server: the
//! real manager and reconcile (through `memcached_operator::register`),
//! driven the way a user and the Deployment controller would drive them.
//!
//! `Operator::start`'s servers keep their state in a data directory, as
//! `kubeforge dev-server --data-dir` does; one test restarts such a server
//! under the running operator, which carries on.
//!
//! Most tests run the server without workload controllers and write the
//! Deployment's status themselves, as envtest users do; one runs it with
//! the Deployment controller and simulated nodes and writes no status at
//! all. Every wait is a poll with a deadline; the figures printed (run
//! with `--nocapture`) are for reading, not asserted.

use std::future::Future;
use std::time::{Duration, Instant};

use kubeforge::k8s_openapi::api::apps::v1::Deployment;
use kubeforge::k8s_openapi::api::core::v1::Pod;
use kubeforge::k8s_openapi::api::events::v1::Event;
use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kubeforge::kube_core::params::ListParams;
use kubeforge::manager::CancellationToken;
use kubeforge::prelude::*;
use kubeforge::reconcile::conditions::find_condition;
use kubeforge::testing::{ApiServer, ApiServerExt, Workloads};
use memcached_operator::controller::{CONTROLLER_NAME, FIELD_MANAGER, FINALIZED_REASON};
use memcached_operator::status::{AVAILABLE, DEGRADED, PROGRESSING};
use memcached_operator::{register, Memcached, MemcachedSpec, Settings, FINALIZER};
use serde_json::json;
use tokio::task::JoinHandle;

const NS: &str = "default";
const DEADLINE: Duration = Duration::from_secs(10);

/// The API server with the CRD installed and the operator's manager
/// running against it.
struct Operator {
    /// `None` only while a test restarts it.
    server: Option<ApiServer>,
    /// The data directory of a server [`Operator::start`] made.
    _data: Option<tempfile::TempDir>,
    client: Client,
    stop: CancellationToken,
    manager: JoinHandle<Result<(), kubeforge::manager::Error>>,
}

impl Operator {
    /// The operator on a server that keeps its state in a data directory,
    /// as `kubeforge dev-server --data-dir` does: every answer it gets was
    /// on disk first.
    async fn start() -> Operator {
        let data = tempfile::tempdir().expect("a data directory");
        let server = ApiServer::builder()
            .data_dir(data.path())
            .start()
            .await
            .expect("API server starts");
        let mut op = Operator::start_on(server).await;
        op._data = Some(data);
        op
    }

    async fn start_on(server: ApiServer) -> Operator {
        server.install_crd_for::<Memcached>().expect("CRD installs");
        let client = server.client().expect("client");
        let mgr = Manager::builder()
            .client(client.clone())
            .field_manager(FIELD_MANAGER)
            .metrics_bind_address("0")
            .health_probe_bind_address("0")
            .graceful_shutdown_timeout(Duration::from_secs(5))
            .build()
            .await
            .expect("manager builds");
        register(
            &mgr,
            Settings {
                resync: Duration::from_secs(30),
            },
            2,
            None,
        );
        let stop = CancellationToken::new();
        let manager = tokio::spawn(mgr.run_until(stop.clone()));
        Operator {
            server: Some(server),
            _data: None,
            client,
            stop,
            manager,
        }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = kubeforge::k8s_openapi::NamespaceResourceScope>,
    {
        Api::namespaced(self.client.clone(), NS)
    }

    /// Stops the manager gracefully and checks it ended without error.
    async fn stop(self) {
        self.stop.cancel();
        let ended = tokio::time::timeout(DEADLINE, self.manager)
            .await
            .expect("the manager stops in time")
            .expect("the manager task did not panic");
        ended.expect("the manager stops without error");
    }
}

/// Polls `probe` until it returns `Some`, at most [`DEADLINE`].
async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    kubeforge::testing::eventually(what, DEADLINE, probe).await
}

fn condition(mc: &Memcached, type_: &str) -> Option<Condition> {
    find_condition(&mc.status.as_ref()?.conditions, type_).cloned()
}

fn has_condition(mc: &Memcached, type_: &str, status: &str, reason: &str) -> bool {
    condition(mc, type_).is_some_and(|c| c.status == status && c.reason == reason)
}

fn replicas(d: &Deployment) -> Option<i32> {
    d.spec.replicas
}

/// What the Deployment controller would write once `n` pods run the
/// Deployment's current generation.
fn rolled_out(d: &Deployment, n: i32) -> serde_json::Value {
    json!({"status": {
        "observedGeneration": d.metadata.generation,
        "replicas": n,
        "updatedReplicas": n,
        "readyReplicas": n,
        "availableReplicas": n,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability."},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
             "message": "ReplicaSet has successfully progressed."},
        ],
    }})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_report_scale_reject_and_delete_a_memcached() {
    let op = Operator::start().await;
    let memcacheds: Api<Memcached> = op.api();
    let deployments: Api<Deployment> = op.api();

    // Create: a Deployment of `size` replicas, controlled by the Memcached.
    let started = Instant::now();
    let created = memcacheds
        .create(
            &PostParams::default(),
            &Memcached::new("cache", MemcachedSpec::with_size(2)),
        )
        .await
        .expect("create Memcached");
    let uid = created.metadata.uid.clone().expect("uid");
    let deployment = eventually("the Deployment", || async {
        deployments.get_opt("cache").await.expect("get Deployment")
    })
    .await;
    eprintln!("create -> Deployment: {:?}", started.elapsed());
    assert_eq!(replicas(&deployment), Some(2));
    let owner = &deployment
        .metadata
        .owner_references
        .as_ref()
        .expect("owner references")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Memcached", "cache")
    );
    assert_eq!(owner.uid, uid);
    assert_eq!(owner.controller, Some(true));
    let container = &deployment.spec.template.spec.as_ref().unwrap().containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some(memcached_operator::api::DEFAULT_IMAGE)
    );

    // The finalizer is on, and the status says what is true: nothing runs yet.
    let pending = eventually("the first status", || async {
        let mc = memcacheds.get("cache").await.expect("get Memcached");
        has_condition(&mc, PROGRESSING, "True", "DeploymentPending").then_some(mc)
    })
    .await;
    eprintln!("create -> first status: {:?}", started.elapsed());
    assert!(pending
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == FINALIZER)));
    assert!(has_condition(
        &pending,
        AVAILABLE,
        "False",
        "PodsUnavailable"
    ));
    assert!(has_condition(&pending, DEGRADED, "False", "AsExpected"));
    let status = pending.status.clone().unwrap();
    assert_eq!((status.replicas, status.ready_replicas), (0, 0));
    assert_eq!(status.observed_generation, Some(1));
    assert_eq!(
        status.selector.as_deref(),
        Some("app.kubernetes.io/instance=cache,app.kubernetes.io/name=memcached")
    );

    // The Deployment controller's part: both pods become available.
    let written = Instant::now();
    deployments
        .patch_status(
            "cache",
            &PatchParams::default(),
            &Patch::Merge(rolled_out(&deployment, 2)),
        )
        .await
        .expect("write Deployment status");
    let ready = eventually("Available=True", || async {
        let mc = memcacheds.get("cache").await.expect("get Memcached");
        has_condition(&mc, AVAILABLE, "True", "PodsAvailable").then_some(mc)
    })
    .await;
    eprintln!(
        "Deployment status -> Memcached status: {:?}",
        written.elapsed()
    );
    assert!(has_condition(
        &ready,
        PROGRESSING,
        "False",
        "RolloutComplete"
    ));
    let status = ready.status.clone().unwrap();
    assert_eq!(
        (
            status.replicas,
            status.ready_replicas,
            status.available_replicas
        ),
        (2, 2, 2)
    );
    // Transition times move with flips only: Degraded stayed False.
    let time = |mc: &Memcached, t: &str| condition(mc, t).unwrap().last_transition_time;
    assert_eq!(time(&ready, DEGRADED), time(&pending, DEGRADED));
    assert!(time(&ready, AVAILABLE).0 >= time(&pending, AVAILABLE).0);
    assert!(condition(&ready, AVAILABLE)
        .unwrap()
        .message
        .starts_with("2/2 pods available"));

    // Scale through the /scale subresource, as `kubectl scale` and an HPA do.
    let scale = memcacheds.get_scale("cache").await.expect("get scale");
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(2));
    assert_eq!(scale.status.as_ref().map(|s| s.replicas), Some(2));
    assert_eq!(
        scale.status.as_ref().and_then(|s| s.selector.as_deref()),
        Some("app.kubernetes.io/instance=cache,app.kubernetes.io/name=memcached")
    );
    let scaled_at = Instant::now();
    memcacheds
        .patch_scale(
            "cache",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await
        .expect("scale Memcached");
    let scaled = eventually("the Deployment to follow the scale", || async {
        let d = deployments.get("cache").await.expect("get Deployment");
        (replicas(&d) == Some(4)).then_some(d)
    })
    .await;
    eprintln!("scale -> Deployment replicas: {:?}", scaled_at.elapsed());
    let scaling = eventually("the status to report the scale-up", || async {
        let mc = memcacheds.get("cache").await.expect("get Memcached");
        has_condition(&mc, AVAILABLE, "False", "PodsUnavailable").then_some(mc)
    })
    .await;
    assert_eq!(scaling.spec.size, 4);
    assert_eq!(scaling.metadata.generation, Some(2));
    assert!(has_condition(
        &scaling,
        PROGRESSING,
        "True",
        "DeploymentPending"
    ));
    assert!(scaling
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .all(|c| c.observed_generation == Some(2)));
    deployments
        .patch_status(
            "cache",
            &PatchParams::default(),
            &Patch::Merge(rolled_out(&scaled, 4)),
        )
        .await
        .expect("write Deployment status");
    eventually("Available=True at 4 pods", || async {
        let mc = memcacheds.get("cache").await.expect("get Memcached");
        (has_condition(&mc, AVAILABLE, "True", "PodsAvailable")
            && mc.status.as_ref().is_some_and(|s| s.ready_replicas == 4))
        .then_some(())
    })
    .await;

    // Drift: someone scales the Deployment itself; the operator puts it back.
    let drifted_at = Instant::now();
    deployments
        .patch(
            "cache",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await
        .expect("scale the Deployment by hand");
    eventually("the operator to undo the drift", || async {
        let d = deployments.get("cache").await.expect("get Deployment");
        (replicas(&d) == Some(4)).then_some(())
    })
    .await;
    eprintln!("Deployment drift -> restored: {:?}", drifted_at.elapsed());

    // The CRD's schema rejects sizes outside 1..=10, naming the field.
    for size in [0, 11] {
        let err = memcacheds
            .create(
                &PostParams::default(),
                &Memcached::new("bad", MemcachedSpec::with_size(size)),
            )
            .await
            .expect_err("an out-of-range size is rejected");
        assert!(err.is_invalid(), "{err}");
        assert_eq!(err.code(), Some(422));
        assert!(err.to_string().contains("spec.size"), "{err}");
    }
    let err = memcacheds
        .patch_scale(
            "cache",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 11}})),
        )
        .await
        .expect_err("scaling past the maximum is rejected");
    assert_eq!(err.code(), Some(422), "{err}");
    assert!(err.to_string().contains("spec.size"), "{err}");

    // Delete: cleanup records an event, the finalizer goes, then the
    // Memcached, and the garbage collector takes the Deployment.
    let deleted_at = Instant::now();
    memcacheds
        .delete("cache", &DeleteParams::default())
        .await
        .expect("delete Memcached");
    eventually("the Memcached to go", || async {
        memcacheds
            .get_opt("cache")
            .await
            .expect("get Memcached")
            .is_none()
            .then_some(())
    })
    .await;
    eprintln!("delete -> Memcached gone: {:?}", deleted_at.elapsed());
    eventually("the Deployment to be garbage-collected", || async {
        deployments
            .get_opt("cache")
            .await
            .expect("get Deployment")
            .is_none()
            .then_some(())
    })
    .await;
    eprintln!("delete -> Deployment gone: {:?}", deleted_at.elapsed());
    let events: Api<Event> = op.api();
    let finalized: Vec<Event> = events
        .list(&ListParams::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(FINALIZED_REASON))
        .collect();
    assert_eq!(finalized.len(), 1, "{finalized:?}");
    let event = &finalized[0];
    let regarding = event.regarding.as_ref().expect("regarding");
    assert_eq!(regarding.kind.as_deref(), Some("Memcached"));
    assert_eq!(regarding.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(event.type_.as_deref(), Some("Normal"));
    assert_eq!(event.reporting_controller.as_deref(), Some(CONTROLLER_NAME));
    assert!(event
        .note
        .as_deref()
        .unwrap_or("")
        .contains("default/cache"));

    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memcacheds_are_reconciled_independently() {
    let op = Operator::start().await;
    let memcacheds: Api<Memcached> = op.api();
    let deployments: Api<Deployment> = op.api();
    let started = Instant::now();
    for (name, size) in [("a", 1), ("b", 3), ("c", 10)] {
        memcacheds
            .create(
                &PostParams::default(),
                &Memcached::new(name, MemcachedSpec::with_size(size)),
            )
            .await
            .expect("create Memcached");
    }
    for (name, size) in [("a", 1), ("b", 3), ("c", 10)] {
        eventually("each Deployment", || async {
            let d = deployments.get_opt(name).await.expect("get Deployment")?;
            (replicas(&d) == Some(size)).then_some(())
        })
        .await;
    }
    eprintln!("3 creates -> 3 Deployments: {:?}", started.elapsed());
    // Deleting one leaves the others alone.
    memcacheds
        .delete("b", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("b's Deployment to go", || async {
        deployments
            .get_opt("b")
            .await
            .expect("get Deployment")
            .is_none()
            .then_some(())
    })
    .await;
    let left: Vec<String> = deployments
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(|d| d.name_any())
        .collect();
    assert_eq!(left, ["a", "c"]);
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_run_and_the_memcached_becomes_available_with_the_workload_controllers() {
    let server = ApiServer::builder()
        .workloads(Workloads::fast())
        .start()
        .await
        .expect("API server starts");
    let op = Operator::start_on(server).await;
    let memcacheds: Api<Memcached> = op.api();
    let pods: Api<Pod> = op.api();
    memcacheds
        .create(
            &PostParams::default(),
            &Memcached::new("live", MemcachedSpec::with_size(2)),
        )
        .await
        .expect("create Memcached");
    // No status is written here: the Deployment controller, the scheduler
    // and the simulated kubelet bring the pods up.
    let ready = eventually("Available=True from running pods", || async {
        let mc = memcacheds.get("live").await.expect("get Memcached");
        has_condition(&mc, AVAILABLE, "True", "PodsAvailable").then_some(mc)
    })
    .await;
    let status = ready.status.clone().unwrap();
    assert_eq!(
        (
            status.replicas,
            status.ready_replicas,
            status.available_replicas
        ),
        (2, 2, 2)
    );
    let running = pods
        .list(&ListParams::default().labels("app.kubernetes.io/instance=live"))
        .await
        .expect("list pods");
    assert_eq!(running.items.len(), 2);
    assert!(running.items.iter().all(|p| {
        let s = p.status.as_ref();
        s.and_then(|s| s.phase.as_deref()) == Some("Running")
            && p.spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some()
    }));
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_carries_on_across_a_restart_of_a_persisted_server() {
    let dir = tempfile::tempdir().expect("a data directory");
    let server = ApiServer::builder()
        .data_dir(dir.path())
        .start()
        .await
        .expect("API server starts");
    let addr = server.addr();
    let mut op = Operator::start_on(server).await;
    let memcacheds: Api<Memcached> = op.api();
    let deployments: Api<Deployment> = op.api();
    memcacheds
        .create(
            &PostParams::default(),
            &Memcached::new("kept", MemcachedSpec::with_size(1)),
        )
        .await
        .expect("create Memcached");
    let before = eventually("the Deployment", || async {
        let d = deployments.get_opt("kept").await.expect("get Deployment")?;
        (replicas(&d) == Some(1)).then_some(d)
    })
    .await;
    // The server goes away and comes back on the same address and
    // directory; the operator's watches break, resume (410: the history
    // is gone) and relist.
    op.server.take().expect("the server").shutdown().await;
    let restarted = Instant::now();
    let server = ApiServer::builder()
        .bind(addr)
        .data_dir(dir.path())
        .start()
        .await
        .expect("the API server starts again on its directory");
    op.server = Some(server);
    let after = deployments
        .get("kept")
        .await
        .expect("the Deployment was kept");
    assert_eq!(after.metadata.uid, before.metadata.uid);
    memcacheds
        .patch(
            "kept",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 3}})),
        )
        .await
        .expect("resize");
    eventually("the Deployment resized after the restart", || async {
        let d = deployments.get_opt("kept").await.expect("get Deployment")?;
        (replicas(&d) == Some(3)).then_some(())
    })
    .await;
    eprintln!("restart -> resize reconciled: {:?}", restarted.elapsed());
    op.stop().await;
}
