//! What the probe and metrics server answers ([`Endpoints`]: routing,
//! `/healthz` and `/readyz` in kube-apiserver's text format, `/metrics` in
//! OpenMetrics text), and [`HttpServer`], the [`serve::Server`] that
//! answers it (the lifecycle, limits and graceful stop are
//! [`crate::serve`]'s).

use std::net::SocketAddr;
use std::sync::{Arc, PoisonError, RwLock};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use super::checks::{aggregated, single, Answer, ProbeQuery, Probes};
use crate::manager::Error;
use crate::serve;

/// The registry `/metrics` serves, shared with whatever registers metrics
/// (workqueues, controllers, leader election), also after the server
/// started.
pub type SharedRegistry = Arc<RwLock<Registry>>;

/// The `Content-Type` of `/metrics`: OpenMetrics text, which is what
/// `prometheus-client` writes and Prometheus negotiates.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

const TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// What a server answers: probes (`/healthz`, `/readyz`), metrics
/// (`/metrics`), or both on one port.
#[derive(Clone, Debug, Default)]
pub struct Endpoints {
    probes: Option<Probes>,
    metrics: Option<SharedRegistry>,
}

impl Endpoints {
    /// Nothing yet (every path answers 404).
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves `/healthz` and `/readyz` (and `/<endpoint>/<check>`).
    pub fn with_probes(mut self, probes: Probes) -> Self {
        self.probes = Some(probes);
        self
    }

    /// Serves `/metrics` from `registry`.
    pub fn with_metrics(mut self, registry: SharedRegistry) -> Self {
        self.metrics = Some(registry);
        self
    }
}

/// The probe and metrics server: a [`serve::Server`] answering
/// [`Endpoints`], with the manager's errors. Bind it, then
/// [`run`](Self::run) or [`spawn`](Self::spawn) it.
///
/// ```no_run
/// # async fn demo() -> Result<(), kubeforge::manager::Error> {
/// use kubeforge::manager::probes::{DEFAULT_PROBE_ADDRESS, Endpoints, HttpServer, Probes};
/// use kubeforge::manager::CancellationToken;
///
/// let probes = Probes::new();
/// let shutdown = CancellationToken::new();
/// let server = HttpServer::bind(DEFAULT_PROBE_ADDRESS, Endpoints::new().with_probes(probes)).await?;
/// println!("probes on {}", server.local_addr());
/// let task = server.spawn(shutdown.clone());
/// shutdown.cancel();
/// task.await.expect("server task")?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct HttpServer {
    server: serve::Server,
}

impl HttpServer {
    /// Listens on `address` (port 0 picks a free port; see
    /// [`local_addr`](Self::local_addr)).
    pub async fn bind(address: SocketAddr, endpoints: Endpoints) -> Result<Self, Error> {
        let server = serve::Server::bind(address, endpoints).await?;
        Ok(Self { server })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// Serves until `shutdown` is cancelled, then stops gracefully (see
    /// [`serve::Server::run`]).
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), Error> {
        Ok(self.server.run(shutdown).await?)
    }

    /// Runs the server on a tokio task.
    pub fn spawn(self, shutdown: CancellationToken) -> tokio::task::JoinHandle<Result<(), Error>> {
        tokio::spawn(self.run(shutdown))
    }
}

impl serve::Handler for Endpoints {
    fn handle(&self, request: Request<Incoming>) -> BoxFuture<'_, Response<Full<Bytes>>> {
        Box::pin(route(self, request))
    }
}

/// Answers one request.
async fn route(endpoints: &Endpoints, req: Request<Incoming>) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut resp = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        resp.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return resp;
    }
    let path = req.uri().path();
    if path == "/metrics" {
        if let Some(registry) = &endpoints.metrics {
            return metrics(registry);
        }
    }
    if let Some(probes) = &endpoints.probes {
        for (endpoint, checks) in [("healthz", probes.healthz()), ("readyz", probes.readyz())] {
            let Some(rest) = path
                .strip_prefix('/')
                .and_then(|p| p.strip_prefix(endpoint))
            else {
                continue;
            };
            let answer = match rest {
                "" | "/" => {
                    let query = ProbeQuery::parse(req.uri().query());
                    Some(aggregated(endpoint, checks, &query).await)
                }
                _ => match rest.strip_prefix('/') {
                    Some(name) if !name.contains('/') => single(checks, name).await,
                    _ => None,
                },
            };
            return match answer {
                Some(answer) => probe_response(answer),
                None => not_found(),
            };
        }
    }
    not_found()
}

fn probe_response(answer: Answer) -> Response<Full<Bytes>> {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    text(status, answer.body)
}

fn metrics(registry: &SharedRegistry) -> Response<Full<Bytes>> {
    let mut body = String::new();
    let encoded = {
        let registry = registry.read().unwrap_or_else(PoisonError::into_inner);
        prometheus_client::encoding::text::encode(&mut body, &registry)
    };
    if let Err(e) = encoded {
        tracing::error!(error = %e, "cannot encode metrics");
        return text(StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics\n");
    }
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(OPENMETRICS_CONTENT_TYPE),
    );
    resp
}

fn not_found() -> Response<Full<Bytes>> {
    // The text Go's net/http answers, as controller-runtime's servers do.
    text(StatusCode::NOT_FOUND, "404 page not found\n")
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(body.into()));
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(TEXT_CONTENT_TYPE));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}
