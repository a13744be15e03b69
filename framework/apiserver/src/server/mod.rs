//! `ApiServer`, the crate's front door: binds the listener, generates the CA
//! and token, seeds the system namespaces, starts the in-server controllers
//! and serves every connection ([`accept`]) until shut down. It hands out
//! what any client needs: the URL, the CA, the token, a kubeconfig.

mod accept;
mod audit;
pub(crate) mod bootstrap;
mod compaction;
pub(crate) mod credentials;
mod faults;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod identity;
pub(crate) mod kubeconfig;
mod kubernetes_service;
mod tls;
mod unreadable;
mod users;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

pub use faults::Faults;

use crate::auth::audit::AuditLog;
use crate::auth::identities::AuthnState;
use crate::auth::jwt::Signer;
use crate::auth::rbac::RbacCache;
use crate::controllers::config::{ClusterApi, NodeControls, SimulatedNodes, Workloads};
use crate::machinery::error::Error;
use crate::machinery::faults::{Failure, FaultRules, RequestMatch};
use crate::objects::{self, WriteOpts};
use crate::registry::openapi_docs::OpenApiDocs;
use crate::registry::state::{ControllerQueue, Options, Shared};
use crate::registry::Registry;
use crate::storage::durable::DataDir;
use crate::storage::Storage;
use identity::Kept;
use tls::Certificates;

/// The default bound of the watch history in bytes. kube-apiserver bounds
/// its history by time (etcd is compacted every 5 minutes,
/// `--etcd-compaction-interval`) and its watch cache by count (up to
/// 102,400 events); in bytes only etcd's backend quota bounds it (2 GiB,
/// `--quota-backend-bytes`), which is no bound for a server living in a
/// test's memory.
const DEFAULT_HISTORY_BYTES: usize = 64 << 20;

/// Configures and starts an [`ApiServer`].
#[derive(Debug, Clone)]
pub struct ApiServerBuilder {
    bind: SocketAddr,
    history: usize,
    history_bytes: usize,
    watch_buffer: usize,
    bookmark_interval: Duration,
    event_ttl: Option<Duration>,
    latency: Option<Duration>,
    failures: Vec<(usize, RequestMatch, Failure)>,
    workloads: Option<Workloads>,
    anonymous: bool,
    owner_references_permission_enforcement: bool,
    permission_audit: bool,
    sharded_list_and_watch: bool,
    data_dir: Option<PathBuf>,
    compaction_interval: Option<Duration>,
    images: Vec<(String, PathBuf)>,
}

impl Default for ApiServerBuilder {
    fn default() -> Self {
        Self {
            bind: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            history: 10_000,
            history_bytes: DEFAULT_HISTORY_BYTES,
            watch_buffer: 4096,
            bookmark_interval: Duration::from_secs(60),
            event_ttl: Some(crate::controllers::event_ttl::DEFAULT_EVENT_TTL),
            latency: None,
            failures: Vec::new(),
            workloads: None,
            anonymous: false,
            owner_references_permission_enforcement: false,
            permission_audit: true,
            sharded_list_and_watch: true,
            data_dir: None,
            compaction_interval: Some(compaction::DEFAULT_INTERVAL),
            images: Vec::new(),
        }
    }
}

impl ApiServerBuilder {
    /// The address to listen on (default `127.0.0.1:0`, a random port).
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.bind = addr;
        self
    }

    /// How many events per resource the watch history keeps (default
    /// 10 000); older resourceVersions answer 410 Expired.
    pub fn watch_history(mut self, events: usize) -> Self {
        self.history = events;
        self
    }

    /// How many bytes of events (counted as the JSON of the objects they
    /// carry) the watch history keeps across all resources (default 64
    /// MiB); older resourceVersions answer 410 Expired, as compacted ones
    /// do.
    pub fn watch_history_bytes(mut self, bytes: usize) -> Self {
        self.history_bytes = bytes;
        self
    }

    /// How many undelivered events a watcher may have before it is dropped
    /// (default 4096).
    pub fn watch_buffer(mut self, events: usize) -> Self {
        self.watch_buffer = events;
        self
    }

    /// How often watches with `allowWatchBookmarks` get a BOOKMARK
    /// (default 60 s, as kube-apiserver).
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// How long an Event lives after its last write (kube-apiserver's
    /// `--event-ttl`, default one hour); `None` keeps Events forever.
    pub fn event_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.event_ttl = ttl;
        self
    }

    /// Delays every request from the start.
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency = Some(latency);
        self
    }

    /// Fails the first `n` requests matching `matcher` (see
    /// [`Faults::fail_next`]).
    pub fn fail_next(mut self, n: usize, matcher: RequestMatch, failure: Failure) -> Self {
        self.failures.push((n, matcher, failure));
        self
    }

    /// Runs kube-controller-manager's workload controllers (Deployment,
    /// ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, disruption, node
    /// lifecycle) and simulated nodes whose scheduler and kubelet take
    /// pods from `Pending` to `Running` and `Ready`, crash, fail and
    /// finish (see [`Workloads`]). Off by default: without it Deployments
    /// get no ReplicaSets and Pods never run, as with envtest.
    pub fn workloads(mut self, workloads: Workloads) -> Self {
        self.workloads = Some(workloads);
        self
    }

    /// Shorthand for [`workloads`](Self::workloads) with `n` nodes and
    /// real-cluster timings ([`Workloads::new`]).
    pub fn nodes(self, n: usize) -> Self {
        let workloads = self.workloads.clone().unwrap_or_default().nodes(n);
        self.workloads(workloads)
    }

    /// Serves requests without credentials as `system:anonymous` in
    /// `system:unauthenticated` (kube-apiserver's `--anonymous-auth`), so
    /// RBAC decides what they may do. Off by default: such requests are
    /// a 401. A credential that is present but invalid is a 401 either way.
    pub fn anonymous(mut self, allow: bool) -> Self {
        self.anonymous = allow;
        self
    }

    /// Turns on kube-apiserver's `OwnerReferencesPermissionEnforcement`
    /// admission (off by default, as upstream; OpenShift turns it on):
    /// changing an object's `ownerReferences` needs `delete` on it, and a
    /// reference with `blockOwnerDeletion: true` needs `update` on the
    /// owner's `finalizers` subresource, which is why an operator's RBAC
    /// grants `<kind>/finalizers`.
    pub fn owner_references_permission_enforcement(mut self, on: bool) -> Self {
        self.owner_references_permission_enforcement = on;
        self
    }

    /// Whether the permission audit records requests from the start (on
    /// by default; see [`ApiServer::permission_audit`]). Off, each request
    /// skips it after one atomic load;
    /// [`ApiServer::set_permission_audit`] turns it on later.
    pub fn permission_audit(mut self, record: bool) -> Self {
        self.permission_audit = record;
        self
    }

    /// Whether list and watch serve `shardSelector` (KEP-5866, the
    /// `ShardedListAndWatch` feature gate of Kubernetes 1.36; on by
    /// default here). Off, the server ignores the parameter and answers
    /// no `shardInfo`, as one without the gate does, so clients fall back
    /// to sharding by label.
    pub fn sharded_list_and_watch(mut self, on: bool) -> Self {
        self.sharded_list_and_watch = on;
        self
    }

    /// Keeps the server's whole state in `dir` (created if missing): every
    /// object at its resourceVersion, the resourceVersion counter, CRDs,
    /// the CA, the admin token, token users and the service-account key,
    /// so a server started again on it has everything and kubeconfigs
    /// written before still work. A request is answered only once what it
    /// wrote (or read) is on disk. Without it (the default) the state lives
    /// in memory. A directory another server holds, written in another
    /// format, or corrupt fails [`start`](Self::start) with an error naming
    /// it; the server never starts empty on it.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// How often the watch history is compacted (kube-apiserver's
    /// `--etcd-compaction-interval`, default 5 minutes): at each tick, to
    /// the resourceVersion of the tick before, so a watch can resume from
    /// at least one interval back; older resourceVersions answer 410.
    /// `None` never compacts by time (the history's count and byte bounds
    /// still hold).
    pub fn compaction_interval(mut self, interval: Option<Duration>) -> Self {
        self.compaction_interval = interval;
        self
    }

    /// Runs the containers whose image is `image` as real processes of the
    /// executable at `path` (the image's one entrypoint: a pod's
    /// `command` names it, `args` are passed), in Linux namespaces of
    /// their own, with what a kubelet gives a container; repeatable.
    /// Needs [`workloads`](Self::workloads) with at least one node. The
    /// image matches as a container runtime resolves names
    /// (`controller` is `controller:latest`, `docker.io/library/…` is
    /// implied). An `image` that is empty or a `path` that is not an
    /// executable file fails [`start`](Self::start).
    pub fn image(mut self, image: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        self.images.push((image.into(), path.into()));
        self
    }

    /// Starts serving.
    pub async fn start(mut self) -> Result<ApiServer, Error> {
        if !self.images.is_empty() {
            let images = checked_images(std::mem::take(&mut self.images))?;
            match &mut self.workloads {
                Some(w) if !w.nodes.is_empty() => w.images = images,
                _ => {
                    return Err(Error::Image(
                        "images run as processes on the simulated nodes, and the server has none: \
                         turn the workloads on with at least one node, e.g. \
                         `.workloads(Workloads::new())`"
                            .into(),
                    ))
                }
            }
        }
        // Opened first: a directory that cannot be used fails before the
        // port is taken.
        let data = self.data_dir.as_deref().map(DataDir::open).transpose()?;
        let kept = data
            .as_ref()
            .map(Kept::read)
            .transpose()?
            .unwrap_or_default();
        let listener = TcpListener::bind(self.bind)
            .await
            .map_err(|e| Error::Bind(self.bind, e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::Bind(self.bind, e))?;
        let certs = Certificates::generate(Some(addr.ip()), kept.ca.clone())?;
        let token = match &kept.admin_token {
            Some(t) => t.clone(),
            None => random_token()?,
        };
        let signer = match &kept.service_account_key {
            Some(key) => Signer::from_pkcs8(key)?,
            None => Signer::generate()?,
        };
        let mut storage =
            Storage::new(self.history, self.watch_buffer).with_history_bytes(self.history_bytes);
        let restored = data.is_some();
        if let Some(dir) = data {
            kept.write_new(&dir, &certs.ca_kept, &token, signer.pkcs8())?;
            let snapshot = dir.snapshot()?;
            let (journal, durable) = dir.start(snapshot.rv)?;
            storage = storage.persisted(snapshot, journal, durable);
        }
        let host = if addr.ip().is_unspecified() {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), addr.port())
        } else {
            addr
        };
        let url: http::Uri = format!("https://{host}")
            .parse()
            .map_err(|e: http::uri::InvalidUri| Error::Address(e.to_string()))?;
        let (close_tx, _) = watch::channel(0u64);
        let workloads = self.workloads.map(Arc::new);
        let node_controls = Arc::<NodeControls>::default();
        let shared = Arc::new(Shared {
            storage,
            registry: RwLock::new(Registry::with_builtins()),
            faults: FaultRules::default(),
            token: token.clone(),
            server_address: host.to_string(),
            close_watches: close_tx,
            controllers: ControllerQueue::default(),
            options: Options {
                bookmark_interval: self.bookmark_interval,
                event_ttl: self.event_ttl,
                default_toleration_seconds: workloads.as_ref().map(|w| w.timing.toleration_seconds),
                kubelets: workloads.as_ref().is_some_and(|w| !w.nodes.is_empty()),
                owner_references_permission_enforcement: self
                    .owner_references_permission_enforcement,
                sharded_list_and_watch: self.sharded_list_and_watch,
            },
            next_cluster_ip: AtomicU32::new(crate::registry::core::service::FIRST_ALLOCATED_IP),
            openapi: OpenApiDocs::default(),
            authn: AuthnState::new(certs.ca, signer, self.anonymous)?,
            rbac: RbacCache::default(),
            audit: AuditLog::new(self.permission_audit),
            pod_logs: Default::default(),
        });
        for (token, user) in kept.token_users {
            shared.authn.add_token(token, user);
        }
        if restored {
            restore(&shared);
        }
        seed(&shared)?;
        kubernetes_service::ensure(&shared, host)?;
        // The system namespaces have their ServiceAccounts before the first
        // request, as a cluster that has been up a while does.
        crate::controllers::process(&shared);
        shared.faults.set_latency(self.latency);
        for (n, m, f) in self.failures {
            shared.faults.add(n, m, f);
        }
        let cancel = CancellationToken::new();
        let acceptor = TlsAcceptor::from(certs.server_config.clone());
        let _ = node_controls.cluster_api.set(ClusterApi {
            serve: api_listeners(&acceptor, &certs.client_certs, &shared, &cancel),
            ca_pem: certs.ca_pem.clone(),
        });
        let accept_task = tokio::spawn(accept::serve(
            listener,
            acceptor,
            certs.client_certs,
            shared.clone(),
            cancel.clone(),
        ));
        if let Some(interval) = self.compaction_interval {
            tokio::spawn(compaction::run(shared.clone(), interval, cancel.clone()));
        }
        tokio::spawn(crate::controllers::run(
            shared.clone(),
            workloads,
            node_controls.clone(),
            cancel.clone(),
        ));
        tracing::info!(%url, "API server listening");
        Ok(ApiServer {
            shared,
            node_controls,
            url,
            addr: host,
            ca_der: certs.ca_der,
            ca_pem: certs.ca_pem,
            token,
            cancel,
            accept_task: Some(accept_task),
        })
    }
}

/// Serves the API on listeners the kubelet opens in pods' network
/// namespaces, as on the server's own.
fn api_listeners(
    acceptor: &TlsAcceptor,
    client_certs: &Arc<crate::auth::certs::ClientCertPolicy>,
    shared: &Arc<Shared>,
    cancel: &CancellationToken,
) -> Arc<dyn Fn(std::net::TcpListener) + Send + Sync> {
    let (acceptor, client_certs) = (acceptor.clone(), client_certs.clone());
    let (shared, cancel) = (shared.clone(), cancel.clone());
    let runtime = tokio::runtime::Handle::current();
    Arc::new(move |listener: std::net::TcpListener| {
        let _entered = runtime.enter();
        let listener = listener
            .set_nonblocking(true)
            .and_then(|()| TcpListener::from_std(listener));
        match listener {
            Ok(listener) => {
                runtime.spawn(accept::serve(
                    listener,
                    acceptor.clone(),
                    client_certs.clone(),
                    shared.clone(),
                    cancel.clone(),
                ));
            }
            Err(e) => tracing::warn!(error = %e, "cannot serve a pod's listener"),
        }
    })
}

/// Each mapping's image is named and its path is an executable file.
fn checked_images(images: Vec<(String, PathBuf)>) -> Result<Vec<(String, PathBuf)>, Error> {
    use std::os::unix::fs::PermissionsExt;
    const EXAMPLE: &str = "controller:latest=target/debug/manager";
    let mut out = Vec::with_capacity(images.len());
    for (image, path) in images {
        if image.trim().is_empty() {
            return Err(Error::Image(format!(
                "an image mapping has no image name (path {}); map IMAGE=PATH, e.g. {EXAMPLE}",
                path.display()
            )));
        }
        let meta = std::fs::metadata(&path).map_err(|e| {
            Error::Image(format!(
                "image {image} maps to {}, which cannot be read ({e}); map it to an executable file, e.g. {EXAMPLE}",
                path.display()
            ))
        })?;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(Error::Image(format!(
                "image {image} maps to {}, which is not an executable file; map it to one (chmod +x), e.g. {EXAMPLE}",
                path.display()
            )));
        }
        // Relative paths are the caller's: the process runs elsewhere.
        let path = path
            .canonicalize()
            .map_err(|e| Error::Io(path.clone(), e))?;
        out.push((image, path));
    }
    Ok(out)
}

fn random_token() -> Result<String, Error> {
    let mut buf = [0u8; 32];
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(&mut buf)
        .map_err(|_| Error::Tls("no secure random source".into()))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// What a restart from a data directory picks up: the next free cluster
/// IP after the Services' own, and every write hook once per object
/// (CRDs served again, deletions resumed).
fn restore(shared: &Shared) {
    let services = crate::registry::ResKey::new("", "services");
    let listed = shared.storage.lock().list(
        &services,
        &crate::storage::Filter::default(),
        None,
        None,
        None,
    );
    let highest = listed
        .map(|page| page.items)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|svc| {
            let ip = svc.field(&["spec".to_owned(), "clusterIP".to_owned()])?;
            let mut octets = ip.as_str()?.strip_prefix("10.96.")?.split('.');
            let hi: u32 = octets.next()?.parse().ok()?;
            let lo: u32 = octets.next()?.parse().ok()?;
            Some((hi << 8) | lo)
        })
        .max();
    if let Some(n) = highest {
        shared
            .next_cluster_ip
            .store(n + 1, std::sync::atomic::Ordering::Relaxed);
    }
    objects::after_restart(shared);
}

/// The namespaces every cluster has (a restarted one has them already).
fn seed(shared: &Shared) -> Result<(), Error> {
    let def = shared
        .registry()
        .get("", "v1", "namespaces")
        .ok_or_else(|| Error::Rejected("namespaces are not registered".into()))?;
    let opts = WriteOpts::internal(&def, "kube-apiserver");
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        match objects::create(shared, &def, None, obj, &opts) {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => {
                return Err(Error::Rejected(format!(
                    "seeding namespace {ns}: {}",
                    e.message
                )))
            }
        }
    }
    crate::server::bootstrap::seed(shared)
        .map_err(|e| Error::Rejected(format!("seeding the bootstrap RBAC policy: {}", e.message)))
}

/// An in-process Kubernetes API server on HTTPS, for tests and demos.
///
/// ```no_run
/// # async fn demo() -> Result<(), kubeforge_apiserver::Error> {
/// let server = kubeforge_apiserver::ApiServer::start().await?;
/// server.write_kubeconfig("/tmp/kubeconfig")?; // for kubectl, or any client
/// println!("serving at {}", server.url());
/// server.shutdown().await;
/// # Ok(())
/// # }
/// ```
pub struct ApiServer {
    shared: Arc<Shared>,
    node_controls: Arc<NodeControls>,
    url: http::Uri,
    addr: SocketAddr,
    ca_der: Vec<u8>,
    ca_pem: String,
    token: String,
    cancel: CancellationToken,
    accept_task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("url", &self.url)
            .field("token", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl ApiServer {
    /// Starts a server on `127.0.0.1` with a random port.
    pub async fn start() -> Result<Self, Error> {
        Self::builder().start().await
    }

    /// A builder for non-default options.
    pub fn builder() -> ApiServerBuilder {
        ApiServerBuilder::default()
    }

    /// The base URL, `https://127.0.0.1:PORT`.
    pub fn url(&self) -> &http::Uri {
        &self.url
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The CA certificate (DER) that signed the serving certificate.
    pub fn ca_der(&self) -> &[u8] {
        &self.ca_der
    }

    /// The CA certificate (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The bearer token of the server's admin (what envtest hands its
    /// tests). Keep it out of logs.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// A kubeconfig for this server as YAML text: one cluster (URL and CA
    /// data), the admin token user, and the context
    /// [`KUBECONFIG_CONTEXT`](crate::KUBECONFIG_CONTEXT), made current. Any
    /// client that reads kubeconfigs (kube-rs, client-go, kubectl) can use
    /// it.
    pub fn kubeconfig(&self) -> Result<String, Error> {
        kubeconfig::render(&self.url.to_string(), &self.ca_pem, &self.token)
    }

    /// The fault-injection handle.
    pub fn faults(&self) -> Faults {
        Faults {
            shared: self.shared.clone(),
        }
    }

    /// Fault injection on the simulated nodes (they exist only with
    /// [`ApiServerBuilder::workloads`]).
    pub fn nodes(&self) -> SimulatedNodes {
        SimulatedNodes {
            controls: self.node_controls.clone(),
        }
    }

    /// Writes a kubeconfig (cluster with CA data, token user, context
    /// `kubeforge`, current) to `path`, readable by the owner only.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        kubeconfig::write(
            path.as_ref(),
            &self.url.to_string(),
            &self.ca_pem,
            &self.token,
        )
    }

    /// Creates (or replaces the spec of) a CustomResourceDefinition
    /// in-process, as `kubectl apply` would; its resource is served when
    /// this returns. `crd` is anything that serializes to a CRD: a
    /// `serde_json::Value` read from a manifest, or a
    /// `&CustomResourceDefinition` from k8s-openapi (`CustomResource::crd()`
    /// of a kube-rs derive, say).
    pub fn install_crd(&self, crd: impl serde::Serialize) -> Result<(), Error> {
        let crd = serde_json::to_value(crd).map_err(|source| Error::Json {
            what: "the CustomResourceDefinition",
            source,
        })?;
        let def = self
            .shared
            .registry()
            .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .ok_or_else(|| Error::Rejected("CRDs are not served".into()))?;
        let opts = WriteOpts::internal(&def, "kubeforge");
        let name = crd
            .pointer("/metadata/name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned();
        match objects::create(&self.shared, &def, None, crd.clone(), &opts) {
            Ok(_) => {}
            Err(e) if e.code == 409 => {
                let key = (String::new(), name);
                objects::update(&self.shared, &def, &key, &opts, |cur| {
                    let mut next = cur.clone();
                    next["spec"] = crd.get("spec").cloned().unwrap_or_default();
                    Ok((next, objects::Precondition::None))
                })
                .map_err(|e| Error::Rejected(e.message))?;
            }
            Err(e) => return Err(Error::Rejected(e.message)),
        }
        // Installed means kept, with a data directory.
        self.shared.storage.sync()
    }

    /// Stops accepting connections and closes the open ones.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.accept_task.take() {
            let _ = task.await;
        }
        // Commits what is queued and frees the data directory for the
        // next server.
        self.shared.storage.close();
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.shared.storage.close();
    }
}
