//! [`Manager`]: holds the shared client, cache, metrics and probes; collects
//! controllers and runnables; runs them in controller-runtime's order and
//! stops them gracefully (see the module docs of [`manager`](super)).

use std::collections::{HashMap, HashSet};
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt as _;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::builder::ManagerBuilder;
use super::{
    shutdown_on_signals, Error, HttpServer, LeaderElectionConfig, LeaderElector, LeadershipHandle,
    Phase, Probes, SharedRegistry,
};
use crate::cache::SharedInformerFactory;
use crate::client::BoxError;
use crate::controller::{default_error_policy, hostname};
use crate::controller::{
    Action, CachedClient, CachedObject, Context, Controller, ControllerBuilder, ControllerMetrics,
    Recorder,
};
use crate::rbac::{Permissions, Rule};
use crate::{Client, Scheme};

/// How long, beyond the graceful shutdown timeout, the manager waits for
/// controllers that are abandoning their reconciles themselves.
const ABANDON_MARGIN: Duration = Duration::from_secs(1);

/// How long recorders may take to write their open event series at exit.
const RECORDER_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// The leader election a manager runs, ready to start.
pub(crate) struct Election {
    pub(crate) elector: LeaderElector,
    pub(crate) lease: String,
    pub(crate) config: LeaderElectionConfig,
}

type StartFn = Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, Result<(), Error>> + Send>;

/// A controller or a user runnable, not yet started.
struct Runnable {
    name: String,
    needs_leader: bool,
    start: StartFn,
}

#[derive(Default)]
struct Pending {
    runnables: Vec<Runnable>,
    controller_names: HashSet<String>,
    errors: Vec<Error>,
}

/// What the builder hands over.
pub(crate) struct ManagerParts {
    pub(crate) identity: String,
    pub(crate) client: Client,
    pub(crate) cached: CachedClient,
    pub(crate) factory: SharedInformerFactory,
    pub(crate) scheme: Scheme,
    pub(crate) registry: SharedRegistry,
    pub(crate) controller_metrics: ControllerMetrics,
    pub(crate) probes: Probes,
    pub(crate) synced: Arc<AtomicBool>,
    pub(crate) election: Mutex<Option<Election>>,
    pub(crate) servers: Mutex<Vec<HttpServer>>,
    pub(crate) metrics_address: Option<SocketAddr>,
    pub(crate) probe_address: Option<SocketAddr>,
    pub(crate) graceful_shutdown_timeout: Duration,
    pub(crate) cache_sync_timeout: Duration,
    pub(crate) recorders: Mutex<HashMap<String, Recorder>>,
    pub(crate) permissions: Permissions,
}

/// Where a manager stands in leader election: empty until
/// [`Manager::run`] starts the election (or, without leader election,
/// leads at once). Cheap to clone; get it with [`Manager::leadership`]
/// before running the manager.
#[derive(Clone, Debug, Default)]
pub struct Leadership(Arc<OnceLock<LeadershipHandle>>);

impl Leadership {
    /// The election's handle, once the manager has started it.
    pub fn handle(&self) -> Option<&LeadershipHandle> {
        self.0.get()
    }

    /// Whether the manager leads right now.
    pub fn is_leader(&self) -> bool {
        self.0.get().is_some_and(LeadershipHandle::is_leader)
    }
}

/// Runs controllers with one shared cache, leader election, probes, metrics
/// and graceful shutdown. Build it with [`Manager::builder`], register
/// controllers with [`controller`](Self::controller) and runnables with
/// [`add_runnable`](Self::add_runnable), then [`run`](Self::run) it.
///
/// A whole operator:
///
/// ```no_run
/// use kubeforge::prelude::*;
/// use kubeforge::k8s_openapi::api::apps::v1::Deployment;
///
/// /// A memcached cluster.
/// #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
/// #[crd(group = "cache.example.com", version = "v1alpha1", kind = "Memcached",
///       status = "MemcachedStatus")]
/// pub struct MemcachedSpec {
///     /// Number of memcached pods.
///     pub size: i32,
/// }
///
/// /// What the operator observed.
/// #[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
/// pub struct MemcachedStatus {
///     /// Pods running.
///     pub replicas: i32,
/// }
///
/// const FINALIZER: &str = "cache.example.com/cleanup";
///
/// async fn reconcile(mc: Arc<Memcached>, ctx: Arc<Context<()>>) -> Result<Action, kubeforge::controller::Error> {
///     let outcome = ctx.finalizer(FINALIZER, mc, |event, ctx| async move {
///         let client = ctx.client();
///         match event {
///             FinalizerEvent::Apply(mc) => {
///                 let ns = mc.metadata.namespace.clone().unwrap_or_default();
///                 let name = mc.metadata.name.clone().unwrap_or_default();
///                 let mut deploy = Deployment::default();
///                 deploy.metadata.name = Some(name.clone());
///                 deploy.metadata.namespace = Some(ns.clone());
///                 deploy.spec.replicas = Some(mc.spec.size);
///                 set_controller_reference(&*mc, &mut deploy)?;
///                 let deploy = client.apply(&deploy).await?; // server-side apply, forced
///                 let replicas = deploy.status.and_then(|s| s.ready_replicas).unwrap_or(0);
///                 client.patch_status(&*mc, &MemcachedStatus { replicas }).await?;
///                 Ok(Action::requeue_after(Duration::from_secs(300)))
///             }
///             FinalizerEvent::Cleanup(mc) => {
///                 ctx.recorder()
///                     .event(&*mc)
///                     .normal("Deleted", "Cleanup")
///                     .note("cleaned up")
///                     .publish()
///                     .await;
///                 Ok(Action::done())
///             }
///         }
///     })
///     .await?;
///     Ok(Action::from(outcome))
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), kubeforge::manager::Error> {
///     let mgr = Manager::builder().leader_election("memcached-operator").build().await?;
///     mgr.controller::<Memcached>()
///         .owns::<Deployment>()
///         .concurrency(4)
///         .reconcile(reconcile, ());
///     mgr.run().await // probes, metrics, graceful shutdown on SIGTERM
/// }
/// ```
pub struct Manager {
    parts: ManagerParts,
    pending: Mutex<Pending>,
    leadership: Leadership,
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manager")
            .field("identity", &self.parts.identity)
            .field("namespace", &self.parts.factory.namespace())
            .field("metrics_address", &self.parts.metrics_address)
            .field("probe_address", &self.parts.probe_address)
            .field("runnables", &self.pending().runnables.len())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded values are plain lists and maps changed by single
    // inserts: a panic elsewhere cannot leave them inconsistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why the manager stops.
enum Ending {
    Requested,
    LeadershipLost,
    Failed(Error),
}

/// Waits for the first runnable of `set` to fail; runnables that end well
/// are done. Pends forever once the set is empty.
async fn first_failure(set: &mut JoinSet<(String, Result<(), Error>)>) -> Error {
    loop {
        match set.join_next().await {
            Some(Ok((name, Ok(())))) => tracing::info!(runnable = %name, "runnable finished"),
            Some(Ok((_, Err(e)))) => return e,
            Some(Err(e)) => {
                return Error::Runnable {
                    name: "unknown".to_owned(),
                    source: Box::new(e),
                }
            }
            None => std::future::pending::<()>().await,
        }
    }
}

fn spawn_all(
    set: &mut JoinSet<(String, Result<(), Error>)>,
    runnables: Vec<Runnable>,
    stop: &CancellationToken,
) {
    for r in runnables {
        let name = r.name;
        let run = (r.start)(stop.clone());
        tracing::info!(runnable = %name, "starting");
        set.spawn(async move { (name, run.await) });
    }
}

/// Waits until `set` is empty or `deadline` passes; then aborts what is
/// left, saying so. Errors of runnables that stop badly are logged.
async fn drain(set: &mut JoinSet<(String, Result<(), Error>)>, deadline: Instant, what: &str) {
    let drained = tokio::time::timeout_at(deadline, async {
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok((name, Err(e))) => {
                    tracing::error!(runnable = %name, error = %e, "stopped with an error")
                }
                Ok((name, Ok(()))) => tracing::debug!(runnable = %name, "stopped"),
                Err(e) if e.is_cancelled() => {}
                Err(e) => tracing::error!(error = %e, "runnable task failed"),
            }
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = set.len(),
            "{what} still running after the graceful shutdown timeout: abandoning them"
        );
        set.abort_all();
    }
}

impl Manager {
    /// A builder with controller-runtime's defaults.
    pub fn builder() -> ManagerBuilder {
        ManagerBuilder::default()
    }

    pub(crate) fn from_parts(parts: ManagerParts) -> Self {
        Self {
            parts,
            pending: Mutex::new(Pending::default()),
            leadership: Leadership::default(),
        }
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        lock(&self.pending)
    }

    /// The cached client: reads from the manager's cache, writes to the API
    /// server, reads its own writes. Reads work once [`run`](Self::run) has
    /// started the caches.
    pub fn client(&self) -> &CachedClient {
        &self.parts.cached
    }

    /// The plain client, for uncached reads and writes.
    pub fn live_client(&self) -> &Client {
        &self.parts.client
    }

    /// The informer factory every controller and cached read shares.
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.parts.factory
    }

    /// The scheme (GVK <-> Rust type registry).
    pub fn scheme(&self) -> &Scheme {
        &self.parts.scheme
    }

    /// The registry `/metrics` serves; register your own metrics in it.
    pub fn registry(&self) -> &SharedRegistry {
        &self.parts.registry
    }

    /// The health and readiness checks `/healthz` and `/readyz` serve; add
    /// your own.
    pub fn probes(&self) -> &Probes {
        &self.parts.probes
    }

    /// The address `/metrics` is served on, `None` when disabled.
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.parts.metrics_address
    }

    /// The address `/healthz` and `/readyz` are served on, `None` when
    /// disabled.
    pub fn health_probe_address(&self) -> Option<SocketAddr> {
        self.parts.probe_address
    }

    /// Where this manager stands in leader election (filled in when it
    /// runs).
    pub fn leadership(&self) -> Leadership {
        self.leadership.clone()
    }

    /// What the operator needs from the API server: what each registered
    /// controller watches and writes, the extra rules declared on the
    /// builders, the leader-election Lease. The standard command line's
    /// `manifests` renders it as RBAC (see [`rbac`](crate::rbac)).
    pub fn permissions(&self) -> &Permissions {
        &self.parts.permissions
    }

    /// This process's identity in leader election.
    pub fn identity(&self) -> &str {
        &self.parts.identity
    }

    /// An event recorder reporting as `name` (one per name, shared); its
    /// open series are written when the manager stops.
    pub fn recorder(&self, name: &str) -> Recorder {
        lock(&self.parts.recorders)
            .entry(name.to_owned())
            .or_insert_with(|| {
                Recorder::new(
                    self.parts.client.clone(),
                    name.to_owned(),
                    // client-go's recorders report the host (pod) name.
                    hostname(),
                )
            })
            .clone()
    }

    /// Starts configuring a controller for `K`; `.reconcile(fn, data)`
    /// registers it. Controllers run only while this process leads.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use kubeforge::prelude::*;
    /// # use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
    /// # async fn reconcile(_: Arc<ConfigMap>, _: Arc<Context<()>>) -> Result<Action, kubeforge::controller::Error> { Ok(Action::done()) }
    /// # fn demo(mgr: &Manager) {
    /// mgr.controller::<ConfigMap>().concurrency(2).reconcile(reconcile, ());
    /// # }
    /// ```
    pub fn controller<K: CachedObject>(&self) -> ControllerBuilder<K, &Manager> {
        ControllerBuilder::new(self, self.parts.cached.clone())
    }

    fn register_controller<K: CachedObject>(&self, controller: Controller<K>) {
        let name = controller.name().to_owned();
        let mut pending = self.pending();
        if !pending.controller_names.insert(name.clone()) {
            pending.errors.push(Error::DuplicateController(name));
            return;
        }
        let start_name = name.clone();
        pending.runnables.push(Runnable {
            name,
            needs_leader: true,
            start: Box::new(move |stop| {
                async move {
                    controller
                        .run(stop)
                        .await
                        .map_err(|source| Error::Controller {
                            name: start_name,
                            source: Box::new(source),
                        })
                }
                .boxed()
            }),
        });
    }

    /// Adds work to run with the manager: `run(stop)` starts after the
    /// caches have synced (and, with `needs_leader`, once elected) and must
    /// return soon after `stop` is cancelled. An error stops the manager.
    pub fn add_runnable<F, Fut, E>(&self, name: impl Into<String>, needs_leader: bool, run: F)
    where
        F: FnOnce(CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Into<BoxError>,
    {
        let name = name.into();
        let runnable_name = name.clone();
        self.pending().runnables.push(Runnable {
            name,
            needs_leader,
            start: Box::new(move |stop| {
                let run = run(stop);
                async move {
                    run.await.map_err(|e| Error::Runnable {
                        name: runnable_name,
                        source: e.into(),
                    })
                }
                .boxed()
            }),
        });
    }

    /// Runs until SIGTERM or SIGINT, then stops gracefully (a second signal
    /// exits at once). See [`run_until`](Self::run_until).
    pub async fn run(self) -> Result<(), Error> {
        let stop = shutdown_on_signals()?;
        self.run_until(stop).await
    }

    /// Runs until `stop` is cancelled, then stops gracefully; returns early
    /// with an error if a cache does not sync, leadership is lost, or a
    /// controller or runnable fails. See the [module docs](super).
    pub async fn run_until(self, stop: CancellationToken) -> Result<(), Error> {
        let Pending {
            runnables, errors, ..
        } = std::mem::take(&mut *self.pending());
        if let Some(error) = errors.into_iter().next() {
            return Err(error);
        }
        let (leader_runnables, other_runnables): (Vec<_>, Vec<_>) =
            runnables.into_iter().partition(|r| r.needs_leader);
        let parts = &self.parts;

        // 1. The probe and metrics servers.
        let servers_stop = CancellationToken::new();
        let servers: Vec<JoinHandle<Result<(), Error>>> =
            std::mem::take(&mut *lock(&parts.servers))
                .into_iter()
                .map(|server| {
                    tracing::info!(address = %server.local_addr(), "serving probes/metrics");
                    server.spawn(servers_stop.clone())
                })
                .collect();
        let stop_servers = |servers: Vec<JoinHandle<Result<(), Error>>>| async move {
            servers_stop.cancel();
            for server in servers {
                match server.await {
                    Ok(Err(e)) => tracing::error!(error = %e, "probe/metrics server failed"),
                    Err(e) if !e.is_cancelled() => {
                        tracing::error!(error = %e, "probe/metrics server task failed")
                    }
                    _ => {}
                }
            }
        };

        // 2. The caches, blocking until every informer has synced.
        tracing::info!(
            informers = parts.factory.informer_ids().len(),
            "starting caches"
        );
        parts.factory.start();
        let synced = tokio::select! {
            results = parts.factory.wait_for_cache_sync(parts.cache_sync_timeout) => results,
            () = stop.cancelled() => {
                parts.factory.shutdown();
                stop_servers(servers).await;
                return Ok(());
            }
        };
        let failures: Vec<_> = synced.into_iter().filter_map(|(_, r)| r.err()).collect();
        if !failures.is_empty() {
            for failure in &failures {
                tracing::error!(error = %failure, "cache did not sync");
            }
            parts.factory.shutdown();
            stop_servers(servers).await;
            return Err(Error::CacheSync(failures));
        }
        parts.synced.store(true, Ordering::Release);
        tracing::info!("caches synced");

        // 3. Runnables that need no leadership.
        let others_stop = CancellationToken::new();
        let mut others = JoinSet::new();
        spawn_all(&mut others, other_runnables, &others_stop);

        // 4. Leader election.
        let election_stop = CancellationToken::new();
        let election = lock(&parts.election).take();
        let (leadership, lease) = match election {
            Some(Election {
                elector,
                lease,
                config,
            }) => {
                tracing::info!(%lease, identity = %parts.identity, "starting leader election");
                let handle = elector.run(election_stop.clone());
                let check = handle.healthz_check(config.lease_duration());
                if let Err(e) = parts.probes.add_healthz_check("leader-election", check) {
                    tracing::warn!(error = %e, "cannot add the leader-election health check");
                }
                (handle, Some((lease, config)))
            }
            None => (
                LeadershipHandle::always_leading(parts.identity.clone(), election_stop.clone()),
                None,
            ),
        };
        let _ = self.leadership.0.set(leadership.clone());
        let lease_name = || lease.as_ref().map(|(l, _)| l.clone()).unwrap_or_default();

        // 5. Once elected: controllers and leader-only runnables.
        let leaders_stop = CancellationToken::new();
        let mut leaders = JoinSet::new();
        let mut ending = tokio::select! {
            elected = leadership.elected() => {
                if elected {
                    tracing::info!("elected: starting controllers");
                    spawn_all(&mut leaders, leader_runnables, &leaders_stop);
                    None
                } else {
                    Some(Ending::LeadershipLost)
                }
            }
            () = stop.cancelled() => Some(Ending::Requested),
            e = first_failure(&mut others) => Some(Ending::Failed(e)),
        };

        // 6. Run until told to stop, leadership is lost, or something fails.
        if ending.is_none() {
            ending = Some(tokio::select! {
                () = stop.cancelled() => Ending::Requested,
                () = leadership.lost() => Ending::LeadershipLost,
                e = first_failure(&mut leaders) => Ending::Failed(e),
                e = first_failure(&mut others) => Ending::Failed(e),
            });
        }
        let ending = ending.unwrap_or(Ending::Requested);

        // 7. Stop: work first, then caches, lease, servers.
        let deadline = Instant::now() + parts.graceful_shutdown_timeout + ABANDON_MARGIN;
        leaders_stop.cancel();
        if matches!(ending, Ending::LeadershipLost) {
            // Another process may lead already: stop at once, no grace.
            tracing::error!(lease = %lease_name(), "leader election lost: stopping controllers now");
            leaders.abort_all();
        } else {
            tracing::info!("stopping: waiting for in-flight reconciles");
        }
        others_stop.cancel();
        drain(&mut leaders, deadline, "controllers and leader runnables").await;
        drain(&mut others, deadline, "runnables").await;
        parts.factory.shutdown();
        election_stop.cancel();
        if let Some((_, config)) = &lease {
            // A release on cancel happens now; bounded by the renew deadline.
            let bound = config.renew_deadline() + config.retry_period();
            match tokio::time::timeout(bound, leadership.ended()).await {
                Ok(Phase::Stopped) => tracing::info!("left leader election"),
                Ok(_) => {}
                Err(_) => tracing::warn!("leader election did not stop in time"),
            }
        }
        let recorders: Vec<Recorder> = lock(&parts.recorders).values().cloned().collect();
        let flush = futures::future::join_all(recorders.iter().map(Recorder::flush));
        if tokio::time::timeout(RECORDER_FLUSH_TIMEOUT, flush)
            .await
            .is_err()
        {
            tracing::warn!("event recorders did not flush in time");
        }
        stop_servers(servers).await;
        tracing::info!("manager stopped");
        match ending {
            Ending::Requested => Ok(()),
            Ending::LeadershipLost => Err(Error::LeadershipLost {
                lease: lease_name(),
            }),
            Ending::Failed(e) => Err(e),
        }
    }
}

impl<K: CachedObject> ControllerBuilder<K, &Manager> {
    /// Registers the controller with the manager: `reconcile(object,
    /// context)` runs for every key the watches enqueue, once the manager
    /// runs and leads. Problems (a duplicate name) are reported by
    /// [`Manager::run`].
    pub fn reconcile<F, Fut, E, D>(self, reconcile: F, data: D)
    where
        F: Fn(Arc<K>, Arc<Context<D>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: StdError + Send + Sync + 'static,
        D: Send + Sync + 'static,
    {
        self.reconcile_with(reconcile, default_error_policy::<K, E, D>, data);
    }

    /// [`reconcile`](Self::reconcile) with an error policy (see
    /// [`ControllerBuilder::reconcile_with`](ControllerBuilder#method.reconcile_with-1)).
    pub fn reconcile_with<F, Fut, E, P, D>(self, reconcile: F, error_policy: P, data: D)
    where
        F: Fn(Arc<K>, Arc<Context<D>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: StdError + Send + Sync + 'static,
        P: Fn(Arc<K>, &E, Arc<Context<D>>) -> Action + Send + Sync + 'static,
        D: Send + Sync + 'static,
    {
        let manager = self.target;
        let mut parts = self.parts;
        parts.set_metrics(manager.parts.controller_metrics.clone());
        parts.set_shutdown_timeout(manager.parts.graceful_shutdown_timeout);
        parts.set_cache_sync_timeout_if_unset(manager.parts.cache_sync_timeout);
        parts.set_recorder_if_unset(|name| manager.recorder(name));
        let mut rules = parts.rules().to_vec();
        rules.push(Rule::for_events());
        manager
            .parts
            .permissions
            .add_controller(parts.name(), rules);
        let controller = parts.build(reconcile, error_policy, data);
        manager.register_controller(controller);
    }
}
