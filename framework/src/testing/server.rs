//! `ApiServer`: binds the listener, generates the CA and token, seeds the
//! system namespaces, and serves every TLS connection (h2 or HTTP/1.1) with
//! the request router until shut down. `Shared` is the state every request
//! and the in-server controllers see.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::apidocs::OpenApiDocs;
use super::faults::{Failure, FaultRules, Faults, RequestMatch};
use super::gc::GcState;
use super::objects::{self, WriteOpts};
use super::registry::Registry;
use super::storage::Storage;
use super::tls::Certificates;
use super::{handlers, kubeconfig, Error};
use crate::client::{Auth, Config, SecretString};

/// Tunables of a server.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// Interval between watch bookmarks (kube-apiserver: about a minute).
    pub bookmark_interval: Duration,
}

/// State shared by requests and the controllers.
pub(crate) struct Shared {
    pub storage: Storage,
    registry: RwLock<Registry>,
    pub faults: FaultRules,
    token: SecretString,
    /// `host:port` clients reach the server at.
    pub server_address: String,
    /// Bumped to end every open watch stream.
    pub close_watches: watch::Sender<u64>,
    /// Wakes the controllers after writes.
    pub controllers: Notify,
    pub gc: GcState,
    pub options: Options,
    /// The next Service cluster IP.
    pub next_cluster_ip: AtomicU32,
    /// The `/openapi/v3` documents.
    pub openapi: OpenApiDocs,
}

impl Shared {
    pub fn registry(&self) -> RwLockReadGuard<'_, Registry> {
        self.registry.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn registry_mut(&self) -> RwLockWriteGuard<'_, Registry> {
        self.registry.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Constant-time comparison of a presented bearer token.
    pub fn token_matches(&self, presented: &str) -> bool {
        let want = self.token.expose().as_bytes();
        let got = presented.as_bytes();
        if want.len() != got.len() {
            return false;
        }
        want.iter().zip(got).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

/// Configures and starts an [`ApiServer`].
#[derive(Debug, Clone)]
pub struct ApiServerBuilder {
    bind: SocketAddr,
    history: usize,
    watch_buffer: usize,
    bookmark_interval: Duration,
    latency: Option<Duration>,
    failures: Vec<(usize, RequestMatch, Failure)>,
}

impl Default for ApiServerBuilder {
    fn default() -> Self {
        Self {
            bind: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            history: 10_000,
            watch_buffer: 4096,
            bookmark_interval: Duration::from_secs(60),
            latency: None,
            failures: Vec::new(),
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

    /// Starts serving.
    pub async fn start(self) -> Result<ApiServer, Error> {
        let listener = TcpListener::bind(self.bind)
            .await
            .map_err(|e| Error::Bind(self.bind, e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::Bind(self.bind, e))?;
        let certs = Certificates::generate(Some(addr.ip()))?;
        let token = random_token()?;
        let host = if addr.ip().is_unspecified() {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), addr.port())
        } else {
            addr
        };
        let url: http::Uri = format!("https://{host}")
            .parse()
            .map_err(|e: http::uri::InvalidUri| Error::Address(e.to_string()))?;
        let (close_tx, _) = watch::channel(0u64);
        let shared = Arc::new(Shared {
            storage: Storage::new(self.history, self.watch_buffer),
            registry: RwLock::new(Registry::with_builtins()),
            faults: FaultRules::default(),
            token: SecretString::new(token.clone()),
            server_address: host.to_string(),
            close_watches: close_tx,
            controllers: Notify::new(),
            gc: GcState::default(),
            options: Options {
                bookmark_interval: self.bookmark_interval,
            },
            next_cluster_ip: AtomicU32::new(1),
            openapi: OpenApiDocs::default(),
        });
        seed(&shared)?;
        shared.faults.set_latency(self.latency);
        for (n, m, f) in self.failures {
            shared.faults.add(n, m, f);
        }
        let cancel = CancellationToken::new();
        let acceptor = TlsAcceptor::from(certs.server_config.clone());
        let accept_task = tokio::spawn(accept_loop(
            listener,
            acceptor,
            shared.clone(),
            cancel.clone(),
        ));
        tokio::spawn(super::gc::run(shared.clone(), cancel.clone()));
        tracing::info!(%url, "API server listening");
        Ok(ApiServer {
            shared,
            url,
            addr: host,
            ca_der: certs.ca_der,
            ca_pem: certs.ca_pem,
            token: SecretString::new(token),
            cancel,
            accept_task: Some(accept_task),
        })
    }
}

fn random_token() -> Result<String, Error> {
    let mut buf = [0u8; 32];
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(&mut buf)
        .map_err(|_| Error::Tls("no secure random source".into()))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The namespaces every cluster has.
fn seed(shared: &Shared) -> Result<(), Error> {
    let def = shared
        .registry()
        .get("", "v1", "namespaces")
        .ok_or_else(|| Error::Rejected("namespaces are not registered".into()))?;
    let opts = WriteOpts::internal(&def, "kube-apiserver");
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        objects::create(shared, &def, None, obj, &opts)
            .map_err(|e| Error::Rejected(format!("seeding namespace {ns}: {}", e.message)))?;
    }
    Ok(())
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    shared: Arc<Shared>,
    cancel: CancellationToken,
) {
    loop {
        let (tcp, peer) = tokio::select! {
            _ = cancel.cancelled() => return,
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let shared = shared.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let tls =
                match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake failed");
                        return;
                    }
                    Err(_) => return,
                };
            let service = service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, std::convert::Infallible>(handlers::handle(shared, req).await) }
            });
            let mut builder = auto::Builder::new(TokioExecutor::new());
            // Informers multiplex their watches over one connection:
            // kube-apiserver allows 1000 streams per HTTP/2 connection.
            builder.http2().max_concurrent_streams(1000);
            let conn = builder.serve_connection(TokioIo::new(tls), service);
            tokio::select! {
                _ = cancel.cancelled() => {}
                r = conn => {
                    if let Err(e) = r {
                        tracing::trace!(%peer, error = %e, "connection ended");
                    }
                }
            }
        });
    }
}

/// An in-process Kubernetes API server on HTTPS, for tests and demos.
///
/// ```no_run
/// # async fn demo() -> Result<(), kubeforge::testing::Error> {
/// let server = kubeforge::testing::ApiServer::start().await?;
/// let config = server.config();
/// server.write_kubeconfig("/tmp/kubeconfig")?;
/// server.shutdown().await;
/// # let _ = config;
/// # Ok(())
/// # }
/// ```
pub struct ApiServer {
    shared: Arc<Shared>,
    url: http::Uri,
    addr: SocketAddr,
    ca_der: Vec<u8>,
    ca_pem: String,
    token: SecretString,
    cancel: CancellationToken,
    accept_task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("url", &self.url)
            .field("token", &self.token)
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

    /// A client configuration for this server: its URL, CA and token.
    pub fn config(&self) -> Config {
        let mut config = Config::new(self.url.clone());
        config.root_certs = Some(vec![self.ca_der.clone()]);
        config.auth = Auth::Bearer(self.token.clone());
        config
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

    /// The bearer token requests must carry.
    pub fn token(&self) -> &SecretString {
        &self.token
    }

    /// The fault-injection handle.
    pub fn faults(&self) -> Faults {
        Faults {
            shared: self.shared.clone(),
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
    /// `&CustomResourceDefinition` (e.g. several versions combined with
    /// `kubeforge::crd::combine`). For one derived kind,
    /// [`install_crd_for`](Self::install_crd_for) is shorter.
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
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => {
                let key = (String::new(), name);
                objects::update(&self.shared, &def, &key, &opts, |cur| {
                    let mut next = cur.clone();
                    next["spec"] = crd.get("spec").cloned().unwrap_or_default();
                    Ok((next, objects::Precondition::None))
                })
                .map(|_| ())
                .map_err(|e| Error::Rejected(e.message))
            }
            Err(e) => Err(Error::Rejected(e.message)),
        }
    }

    /// Installs the CRD `#[derive(CustomResource)]` made for `K` (its
    /// [`try_crd`](crate::crd::CustomResource::try_crd)): a CRD the derive
    /// cannot build is [`Error::Crd`], one the server refuses is
    /// [`Error::Rejected`]. The CRD enters as JSON, through the same
    /// validation as any other, so the server still checks the derive.
    ///
    /// ```no_run
    /// # use kubeforge::prelude::*;
    /// # #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    /// # #[crd(group = "cache.example.com", version = "v1alpha1", kind = "Memcached")]
    /// # pub struct MemcachedSpec { pub size: i32 }
    /// # async fn demo() -> Result<(), kubeforge::testing::Error> {
    /// let server = kubeforge::testing::ApiServer::start().await?;
    /// server.install_crd_for::<Memcached>()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn install_crd_for<K: crate::crd::CustomResource>(&self) -> Result<(), Error> {
        self.install_crd(&K::try_crd()?)
    }

    /// Stops accepting connections and closes the open ones.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.accept_task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}
