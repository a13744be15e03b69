//! [`ManagerBuilder`]: the client, cache scope, endpoints, leader election
//! and timeouts of a [`Manager`], with controller-runtime's defaults.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use prometheus_client::registry::Registry;

use super::leader_election::{LeaderElectionMetrics, LeaseLock};
use super::probes::{parse_bind_address, DEFAULT_METRICS_ADDRESS, DEFAULT_PROBE_ADDRESS};
use super::runtime::{Election, Manager, ManagerParts};
use super::{
    ApiLeaseLock, Endpoints, Error, HttpServer, LeaderElectionConfig, LeaderElector, Probes,
};
use crate::cache::SharedInformerFactory;
use crate::controller::{ControllerMetrics, DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT};
use crate::rbac::{Permissions, Rule};
use crate::reconcile::{
    CachedClient, DEFAULT_CACHE_SYNC_TIMEOUT, DEFAULT_FIELD_MANAGER,
    DEFAULT_READ_YOUR_WRITES_TIMEOUT,
};
use crate::webhook::{WebhookServerOptions, Webhooks};
use crate::{Client, Config, Scheme};

/// The `/readyz` check that passes once every cache has synced.
pub const READYZ_INFORMER_SYNC: &str = "informer-sync";

/// Where the manager's client comes from.
#[derive(Debug, Default)]
enum ClientSource {
    /// `KUBECONFIG`, `~/.kube/config`, then in-cluster.
    #[default]
    Infer,
    /// A client made elsewhere.
    Client(Client),
    /// A configuration the client is made from at build.
    Config(Box<Config>),
}

/// Where an endpoint listens: the default, an address, or off.
#[derive(Clone, Debug)]
enum Bind {
    Default(SocketAddr),
    Text(String),
}

impl Bind {
    fn resolve(&self) -> Result<Option<SocketAddr>, Error> {
        match self {
            Bind::Default(addr) => Ok(Some(*addr)),
            Bind::Text(text) => parse_bind_address(text),
        }
    }
}

/// Configures a [`Manager`]. Every setting has controller-runtime's default.
///
/// ```no_run
/// # async fn demo() -> Result<(), kubeforge::manager::Error> {
/// use std::time::Duration;
/// use kubeforge::Manager;
///
/// let mgr = Manager::builder()
///     .namespace("shop")                          // cache one namespace only
///     .metrics_bind_address(":8080")              // "0" turns it off
///     .health_probe_bind_address(":8081")
///     .leader_election("shop-operator")           // a Lease in the client's namespace
///     .leader_election_release_on_cancel(true)
///     .graceful_shutdown_timeout(Duration::from_secs(20))
///     .build()
///     .await?;
/// # let _ = mgr;
/// # Ok(())
/// # }
/// ```
pub struct ManagerBuilder {
    client: ClientSource,
    namespace: Option<String>,
    scheme: Option<Scheme>,
    metrics_address: Bind,
    probe_address: Bind,
    lease_name: Option<String>,
    lease_namespace: Option<String>,
    election: LeaderElectionConfig,
    lease_lock: Option<Box<dyn LeaseLock>>,
    graceful_shutdown_timeout: Duration,
    cache_sync_timeout: Duration,
    event_series_window: Duration,
    max_concurrent_reconciles: usize,
    read_your_writes_timeout: Duration,
    field_manager: String,
    keep_managed_fields: bool,
    rules: Vec<Rule>,
    webhook_server: Option<WebhookServerOptions>,
}

impl std::fmt::Debug for ManagerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let client = match &self.client {
            ClientSource::Infer => "inferred",
            ClientSource::Client(_) => "given",
            ClientSource::Config(_) => "from a config",
        };
        f.debug_struct("ManagerBuilder")
            .field("client", &client)
            .field("namespace", &self.namespace)
            .field("metrics_address", &self.metrics_address)
            .field("probe_address", &self.probe_address)
            .field("lease_name", &self.lease_name)
            .field("lease_namespace", &self.lease_namespace)
            .field("election", &self.election)
            .field("graceful_shutdown_timeout", &self.graceful_shutdown_timeout)
            .field("cache_sync_timeout", &self.cache_sync_timeout)
            .finish_non_exhaustive()
    }
}

impl Default for ManagerBuilder {
    fn default() -> Self {
        Self {
            client: ClientSource::Infer,
            namespace: None,
            scheme: None,
            metrics_address: Bind::Default(DEFAULT_METRICS_ADDRESS),
            probe_address: Bind::Default(DEFAULT_PROBE_ADDRESS),
            lease_name: None,
            lease_namespace: None,
            election: LeaderElectionConfig::default(),
            lease_lock: None,
            graceful_shutdown_timeout: DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
            cache_sync_timeout: DEFAULT_CACHE_SYNC_TIMEOUT,
            event_series_window: crate::events::SERIES_WINDOW,
            max_concurrent_reconciles: 1,
            read_your_writes_timeout: DEFAULT_READ_YOUR_WRITES_TIMEOUT,
            field_manager: DEFAULT_FIELD_MANAGER.to_owned(),
            keep_managed_fields: false,
            rules: Vec::new(),
            webhook_server: None,
        }
    }
}

impl ManagerBuilder {
    /// The client to use; without one (or a [`config`](Self::config)),
    /// [`build`](Self::build) infers it (`KUBECONFIG`, `~/.kube/config`,
    /// then in-cluster). The last of `client` and `config` wins.
    pub fn client(mut self, client: Client) -> Self {
        self.client = ClientSource::Client(client);
        self
    }

    /// The cluster to connect to, e.g. from [`Config::infer_with`] with a
    /// `--context` flag or [`Config::from_kubeconfig_file`] with a
    /// `--kubeconfig` one; [`build`](Self::build) makes the client, and a
    /// configuration that cannot make one is [`Error::Client`]. The last of
    /// `client` and `config` wins.
    ///
    /// ```no_run
    /// # async fn demo() -> anyhow::Result<()> {
    /// use kubeforge::client::config::KubeConfigOptions;
    /// use kubeforge::{Config, Manager};
    ///
    /// let options = KubeConfigOptions { context: Some("staging".into()), ..Default::default() };
    /// let mgr = Manager::builder()
    ///     .config(Config::infer_with(&options).await?)
    ///     .build()
    ///     .await?;
    /// # let _ = mgr;
    /// # Ok(())
    /// # }
    /// ```
    pub fn config(mut self, config: Config) -> Self {
        self.client = ClientSource::Config(Box::new(config));
        self
    }

    /// Cache (and so watch and reconcile) objects of namespaced types in
    /// `namespace` only; cluster-scoped types are unaffected.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// The scheme [`Manager::scheme`] returns (default: the built-in kinds).
    pub fn scheme(mut self, scheme: Scheme) -> Self {
        self.scheme = Some(scheme);
        self
    }

    /// Where `/metrics` is served, as controller-runtime's
    /// `--metrics-bind-address`: `"127.0.0.1:8080"` (the default), `":8080"`
    /// (every interface), `"127.0.0.1:0"` (a free port), or `"0"` (off).
    pub fn metrics_bind_address(mut self, address: impl Into<String>) -> Self {
        self.metrics_address = Bind::Text(address.into());
        self
    }

    /// Where `/healthz` and `/readyz` are served (default
    /// `127.0.0.1:8081`; `"0"` turns them off). The same address (with a
    /// port other than 0) as the metrics serves all three from one server.
    pub fn health_probe_bind_address(mut self, address: impl Into<String>) -> Self {
        self.probe_address = Bind::Text(address.into());
        self
    }

    /// Run controllers only while holding the `coordination.k8s.io/v1`
    /// Lease `name` (controller-runtime's `LeaderElectionID`), in the
    /// client's default namespace unless
    /// [`leader_election_namespace`](Self::leader_election_namespace) says
    /// otherwise.
    pub fn leader_election(mut self, name: impl Into<String>) -> Self {
        self.lease_name = Some(name.into());
        self
    }

    /// The namespace of the leader-election Lease.
    pub fn leader_election_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.lease_namespace = Some(namespace.into());
        self
    }

    /// How long non-leaders wait before taking over an unrenewed lease
    /// (default 15 s).
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.election = self.election.with_lease_duration(duration);
        self
    }

    /// How long the leader retries renewing before giving up (default 10 s).
    pub fn renew_deadline(mut self, deadline: Duration) -> Self {
        self.election = self.election.with_renew_deadline(deadline);
        self
    }

    /// How long candidates wait between attempts (default 2 s).
    pub fn retry_period(mut self, period: Duration) -> Self {
        self.election = self.election.with_retry_period(period);
        self
    }

    /// Release the lease on a graceful shutdown, after the controllers have
    /// stopped, so a successor takes over at once instead of after the
    /// lease duration (off by default, as in controller-runtime).
    pub fn leader_election_release_on_cancel(mut self, release: bool) -> Self {
        self.election = self.election.with_release_on_cancel(release);
        self
    }

    /// The whole leader-election configuration (identity, timings, release,
    /// clock); the lease is still named by
    /// [`leader_election`](Self::leader_election).
    pub fn leader_election_config(mut self, config: LeaderElectionConfig) -> Self {
        self.election = config;
        self
    }

    /// Keeps the leader record somewhere other than a Lease through the
    /// API server (e.g. the in-memory lock in tests). Turns leader
    /// election on.
    pub fn leader_election_lock(mut self, lock: impl LeaseLock) -> Self {
        self.lease_lock = Some(Box::new(lock));
        self
    }

    /// How long a stopping manager lets in-flight reconciles and runnables
    /// finish before abandoning them (default 30 s).
    pub fn graceful_shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.graceful_shutdown_timeout = timeout;
        self
    }

    /// The series window of the manager's event recorders (default
    /// client-go's six minutes; see [`Recorder::with_series_window`]):
    /// repeats further apart are separate events, and a recorder holds
    /// about this long of events. Shorter bounds the memory of an operator
    /// that records events about many objects.
    ///
    /// [`Recorder::with_series_window`]: crate::events::Recorder::with_series_window
    pub fn event_series_window(mut self, window: Duration) -> Self {
        self.event_series_window = window;
        self
    }

    /// How many reconciles each controller runs at once unless it says
    /// otherwise with [`concurrency`](crate::controller::ControllerBuilder::concurrency)
    /// (controller-runtime's `Controller.MaxConcurrentReconciles` manager
    /// option; default 1). Zero counts as one.
    pub fn max_concurrent_reconciles(mut self, workers: usize) -> Self {
        self.max_concurrent_reconciles = workers.max(1);
        self
    }

    /// How long starting waits for the caches to sync (default 2 min); also
    /// the default of every controller and of cached reads of new types.
    pub fn cache_sync_timeout(mut self, timeout: Duration) -> Self {
        self.cache_sync_timeout = timeout;
        self
    }

    /// How long a cached read waits for the cache to catch up with this
    /// process's last write of the type (default 10 s; the cached client's
    /// [`read_your_writes_timeout`](crate::reconcile::CachedClientBuilder::read_your_writes_timeout)).
    pub fn read_your_writes_timeout(mut self, timeout: Duration) -> Self {
        self.read_your_writes_timeout = timeout;
        self
    }

    /// The field manager of the client's server-side applies (default
    /// `kubeforge`).
    pub fn field_manager(mut self, manager: impl Into<String>) -> Self {
        self.field_manager = manager.into();
        self
    }

    /// Cache objects with their `managedFields` (stripped by default).
    pub fn keep_managed_fields(mut self) -> Self {
        self.keep_managed_fields = true;
        self
    }

    /// A rule the operator needs beyond its controllers' (see
    /// [`Manager::permissions`]), e.g. for a runnable's requests.
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Serve [`Manager::webhooks`] with these settings (address, port,
    /// certificate directory); the server listens from
    /// [`build`](Self::build) on, so its address is known
    /// ([`Manager::webhook_address`]; port 0 picks a free one), and its
    /// `webhook` readiness check is added then. Without this call a
    /// manager with webhooks registered serves them with the defaults.
    pub fn webhook_server(mut self, options: WebhookServerOptions) -> Self {
        self.webhook_server = Some(options);
        self
    }

    /// Builds the manager: configures the client if none was given, checks
    /// the leader-election settings, and binds the endpoints (so their
    /// addresses are known before [`Manager::run`]).
    pub async fn build(self) -> Result<Manager, Error> {
        let client = match self.client {
            ClientSource::Client(client) => client,
            ClientSource::Config(config) => Client::try_from(*config).map_err(Error::Client)?,
            ClientSource::Infer => Client::try_default().await.map_err(Error::Client)?,
        };
        let mut factory = SharedInformerFactory::builder(client.clone());
        if let Some(ns) = &self.namespace {
            factory = factory.namespace(ns.clone());
        }
        let factory = factory.build();
        let mut cached = CachedClient::builder(client.clone(), factory.clone())
            .sync_timeout(self.cache_sync_timeout)
            .read_your_writes_timeout(self.read_your_writes_timeout)
            .field_manager(self.field_manager);
        if self.keep_managed_fields {
            cached = cached.keep_managed_fields();
        }
        let cached = cached.build();

        let controller_metrics = ControllerMetrics::new();
        let election_metrics = LeaderElectionMetrics::new();
        let mut registry = Registry::default();
        controller_metrics.register(&mut registry);
        election_metrics.register(&mut registry);
        let registry = Arc::new(RwLock::new(registry));

        let probes = Probes::new();
        let synced = Arc::new(AtomicBool::new(false));
        let ready = Arc::clone(&synced);
        probes.add_readyz_check(READYZ_INFORMER_SYNC, move || {
            if ready.load(Ordering::Acquire) {
                Ok(())
            } else {
                Err("caches have not synced yet")
            }
        })?;

        let permissions = Permissions::new();
        for rule in self.rules {
            permissions.add_rule(rule);
        }
        if let Some(name) = &self.lease_name {
            permissions.set_leader_election_lease(name.clone());
        }
        let election = match (self.lease_name, self.lease_lock) {
            (None, None) => None,
            (name, lock) => {
                let namespace = self
                    .lease_namespace
                    .unwrap_or_else(|| client.default_namespace().to_owned());
                let name = name.unwrap_or_else(|| "kubeforge-manager".to_owned());
                let lease = format!("{namespace}/{name}");
                let lock = lock.unwrap_or_else(|| {
                    Box::new(ApiLeaseLock::new(client.clone(), &namespace, &name))
                });
                let elector = LeaderElector::new(self.election.clone(), lock)?
                    .with_metrics(election_metrics.clone());
                Some(Election {
                    elector,
                    lease,
                    config: self.election.clone(),
                })
            }
        };

        let metrics_address = self.metrics_address.resolve()?;
        let probe_address = self.probe_address.resolve()?;
        let mut servers = Vec::new();
        let (mut bound_metrics, mut bound_probes) = (None, None);
        // One server for both when given one fixed address; port 0 means a
        // free port each.
        let shared =
            metrics_address.is_some_and(|m| m.port() != 0) && metrics_address == probe_address;
        if shared {
            let endpoints = Endpoints::new()
                .with_metrics(Arc::clone(&registry))
                .with_probes(probes.clone());
            let server = HttpServer::bind(
                metrics_address.unwrap_or(DEFAULT_METRICS_ADDRESS),
                endpoints,
            )
            .await?;
            bound_metrics = Some(server.local_addr());
            bound_probes = Some(server.local_addr());
            servers.push(server);
        } else {
            if let Some(addr) = metrics_address {
                let server =
                    HttpServer::bind(addr, Endpoints::new().with_metrics(Arc::clone(&registry)))
                        .await?;
                bound_metrics = Some(server.local_addr());
                servers.push(server);
            }
            if let Some(addr) = probe_address {
                let server =
                    HttpServer::bind(addr, Endpoints::new().with_probes(probes.clone())).await?;
                bound_probes = Some(server.local_addr());
                servers.push(server);
            }
        }

        let webhooks = Webhooks::new();
        let webhook_serving = Arc::new(AtomicBool::new(false));
        let (webhook_server, webhook_address) = match self.webhook_server {
            Some(options) => {
                let server = options
                    .bind(webhooks.clone(), Arc::clone(&webhook_serving))
                    .await
                    .map_err(Error::from)?;
                add_webhook_check(&probes, &webhook_serving)?;
                let address = server.local_addr();
                (Some(server), Some(address))
            }
            None => (None, None),
        };

        Ok(Manager::from_parts(ManagerParts {
            identity: self.election.identity().to_owned(),
            client,
            cached,
            factory,
            scheme: self.scheme.unwrap_or_else(Scheme::with_builtins),
            registry,
            controller_metrics,
            probes,
            synced,
            election: Mutex::new(election),
            servers: Mutex::new(servers),
            metrics_address: bound_metrics,
            probe_address: bound_probes,
            graceful_shutdown_timeout: self.graceful_shutdown_timeout,
            cache_sync_timeout: self.cache_sync_timeout,
            recorders: Mutex::new(HashMap::new()),
            event_series_window: self.event_series_window,
            max_concurrent_reconciles: self.max_concurrent_reconciles,
            permissions,
            webhooks,
            webhook_server: Mutex::new(webhook_server),
            webhook_address,
            webhook_serving,
        }))
    }
}

/// The readiness check named `webhook`: fails until the webhook server
/// serves.
pub(crate) fn add_webhook_check(probes: &Probes, serving: &Arc<AtomicBool>) -> Result<(), Error> {
    let serving = Arc::clone(serving);
    probes.add_readyz_check(READYZ_WEBHOOK, move || {
        if serving.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err("the webhook server is not serving yet")
        }
    })
}

/// The `/readyz` check that passes once the webhook server serves.
pub const READYZ_WEBHOOK: &str = "webhook";
