//! [`Manager`]: holds the shared client, cache, metrics and probes; collects
//! controllers and runnables; runs them in controller-runtime's order and
//! stops them gracefully (see the module docs of [`manager`](super)).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use futures::FutureExt as _;
use tokio_util::sync::CancellationToken;

use super::builder::ManagerBuilder;
use super::runnables::{Groups, Runnable, StartFn};
use super::{
    Error, HttpServer, LeaderElectionConfig, LeaderElector, LeadershipHandle, Probes,
    SharedRegistry,
};
use crate::cache::SharedInformerFactory;
use crate::client::BoxError;
use crate::controller::{Controller, ControllerBuilder, ControllerMetrics};
use crate::controller::{ControllerDefaults, Target};
use crate::events::Recorder;
use crate::ids::hostname;
use crate::rbac::{Permissions, Rule};
use crate::reconcile::{CachedClient, CachedObject};
use crate::webhook::{WebhookServer, Webhooks};
use crate::{Client, Scheme};

/// The leader election a manager runs, ready to start.
pub(crate) struct Election {
    pub(crate) elector: LeaderElector,
    pub(crate) lease: String,
    pub(crate) config: LeaderElectionConfig,
}

/// What is registered before the manager runs.
#[derive(Default)]
pub(crate) struct Pending {
    pub(crate) groups: Groups,
    controller_names: HashSet<String>,
    pub(crate) errors: Vec<Error>,
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
    pub(crate) event_series_window: Duration,
    pub(crate) max_concurrent_reconciles: usize,
    pub(crate) permissions: Permissions,
    pub(crate) webhooks: Webhooks,
    /// The webhook server bound at build, when configured.
    pub(crate) webhook_server: Mutex<Option<WebhookServer>>,
    pub(crate) webhook_address: Option<SocketAddr>,
    /// Set while the webhook server serves (the `webhook` readiness check).
    pub(crate) webhook_serving: Arc<AtomicBool>,
}

/// Where a manager stands in leader election: empty until
/// [`Manager::run`] starts the election (or, without leader election,
/// leads at once). Cheap to clone; get it with [`Manager::leadership`]
/// before running the manager.
#[derive(Clone, Debug, Default)]
pub struct Leadership(pub(crate) Arc<OnceLock<LeadershipHandle>>);

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
    pub(crate) parts: ManagerParts,
    pending: Mutex<Pending>,
    pub(crate) leadership: Leadership,
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manager")
            .field("identity", &self.parts.identity)
            .field("namespace", &self.parts.factory.namespace())
            .field("metrics_address", &self.parts.metrics_address)
            .field("probe_address", &self.parts.probe_address)
            .field("runnables", &self.pending().groups.len())
            .finish_non_exhaustive()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded values are plain lists and maps changed by single
    // inserts: a panic elsewhere cannot leave them inconsistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
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

    pub(crate) fn pending(&self) -> MutexGuard<'_, Pending> {
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

    /// The webhooks this manager serves: register defaulters, validators,
    /// raw handlers and converters here before [`run`](Self::run). When
    /// anything is registered, `run` serves them over HTTPS (the server
    /// configured with
    /// [`ManagerBuilder::webhook_server`](super::ManagerBuilder::webhook_server),
    /// else controller-runtime's default: port 9443, certificates from
    /// [`default_cert_dir`](crate::webhook::default_cert_dir)), with a
    /// `webhook` readiness check that passes once it serves.
    pub fn webhooks(&self) -> &Webhooks {
        &self.parts.webhooks
    }

    /// Where the webhook server listens, when one was configured with
    /// [`ManagerBuilder::webhook_server`](super::ManagerBuilder::webhook_server).
    pub fn webhook_address(&self) -> Option<SocketAddr> {
        self.parts.webhook_address
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
                Recorder::with_series_window(
                    self.parts.client.clone(),
                    name.to_owned(),
                    // client-go's recorders report the host (pod) name.
                    hostname(),
                    self.parts.event_series_window,
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
        let grace = controller.shutdown_timeout();
        // A sharded controller splits the work with the other replicas
        // instead of waiting for leadership.
        let sharded = controller.is_sharded();
        let start_name = name.clone();
        let start: StartFn = Box::new(move |stop| {
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
        });
        let runnable = Runnable::new(name, start).with_grace(grace);
        if sharded {
            pending.groups.others.add(runnable);
        } else {
            pending.groups.leaders.add(runnable);
        }
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
        let start: StartFn = Box::new(move |stop| {
            let run = run(stop);
            async move {
                run.await.map_err(|e| Error::Runnable {
                    name: runnable_name,
                    source: e.into(),
                })
            }
            .boxed()
        });
        let runnable = Runnable::new(name, start);
        let mut pending = self.pending();
        if needs_leader {
            pending.groups.leaders.add(runnable);
        } else {
            pending.groups.others.add(runnable);
        }
    }
}

/// A builder from [`Manager::controller`] registers what it builds: its
/// `.reconcile(..)` returns nothing, and the manager's settings fill what
/// the builder left unset.
impl<K: CachedObject> Target<K> for &Manager {
    type Output = ();

    fn defaults(&self) -> Option<ControllerDefaults<'_>> {
        Some(ControllerDefaults {
            graceful_shutdown_timeout: self.parts.graceful_shutdown_timeout,
            cache_sync_timeout: self.parts.cache_sync_timeout,
            max_concurrent_reconciles: self.parts.max_concurrent_reconciles,
            metrics: &self.parts.controller_metrics,
            recorder: Box::new(|name| self.recorder(name)),
        })
    }

    fn record_rules(&self, controller: &str, mut rules: Vec<Rule>) {
        rules.push(Rule::for_events());
        self.parts
            .permissions
            .add_controller(controller.to_owned(), rules);
    }

    fn record_sharding(&self) {
        self.parts.permissions.set_sharded();
    }

    fn finish(self, controller: Controller<K>) {
        self.register_controller(controller);
    }
}
