//! [`HttpServer`]: plain HTTP/1.1 on hyper 1 for the probe and metrics
//! endpoints, with a bound on header reading time and on open connections,
//! and a graceful stop: on shutdown it stops accepting, lets requests in
//! flight finish (up to a drain timeout) and closes idle keep-alive
//! connections.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::checks::{aggregated, single, Answer, ProbeQuery, Probes};
use crate::manager::Error;

/// The registry `/metrics` serves, shared with whatever registers metrics
/// (workqueues, controllers, leader election), also after the server
/// started.
pub type SharedRegistry = Arc<RwLock<Registry>>;

/// The `Content-Type` of `/metrics`: OpenMetrics text, which is what
/// `prometheus-client` writes and Prometheus negotiates.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

const TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// How long a client may take to send its request headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a graceful stop waits for requests in flight.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// Open connections beyond this wait until one closes.
const MAX_CONNECTIONS: usize = 128;

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

/// A bound HTTP server for [`Endpoints`]; [`run`](Self::run) or
/// [`spawn`](Self::spawn) it.
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
    listener: TcpListener,
    address: SocketAddr,
    endpoints: Arc<Endpoints>,
}

impl HttpServer {
    /// Listens on `address` (port 0 picks a free port; see
    /// [`local_addr`](Self::local_addr)).
    pub async fn bind(address: SocketAddr, endpoints: Endpoints) -> Result<Self, Error> {
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| Error::Bind { address, source })?;
        let address = listener
            .local_addr()
            .map_err(|source| Error::Bind { address, source })?;
        Ok(Self {
            listener,
            address,
            endpoints: Arc::new(endpoints),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Serves until `shutdown` is cancelled, then stops gracefully.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), Error> {
        let address = self.address;
        tracing::info!(%address, "serving probes/metrics over HTTP");
        let mut connections = JoinSet::new();
        // Connections stop on shutdown, and also when the listener fails.
        let close = shutdown.child_token();
        let result = loop {
            while connections.try_join_next().is_some() {}
            if connections.len() >= MAX_CONNECTIONS {
                tokio::select! {
                    () = shutdown.cancelled() => break Ok(()),
                    _ = connections.join_next() => continue,
                }
            }
            let accepted = tokio::select! {
                () = shutdown.cancelled() => break Ok(()),
                accepted = self.listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _peer)) => stream,
                Err(e) if is_transient(&e) => {
                    tracing::debug!(%address, error = %e, "accept failed");
                    if is_out_of_descriptors(&e) {
                        // Retrying at once would spin until a descriptor frees up.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    continue;
                }
                Err(source) => break Err(Error::Serve { address, source }),
            };
            let endpoints = self.endpoints.clone();
            connections.spawn(serve_connection(stream, endpoints, close.clone()));
        };
        drop(self.listener);
        // Connections finish their current request, idle ones close.
        close.cancel();
        let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(%address, "closing connections still busy after the drain timeout");
            connections.abort_all();
        }
        tracing::info!(%address, "HTTP server stopped");
        result
    }

    /// Runs the server on a tokio task.
    pub fn spawn(self, shutdown: CancellationToken) -> tokio::task::JoinHandle<Result<(), Error>> {
        tokio::spawn(self.run(shutdown))
    }
}

/// Errors from `accept` that concern one connection, not the listener.
fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::ConnectionAborted
            | ErrorKind::ConnectionReset
            | ErrorKind::Interrupted
            | ErrorKind::WouldBlock
    ) || is_out_of_descriptors(e)
}

/// EMFILE or ENFILE: the process or system is out of file descriptors.
fn is_out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 24))
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    endpoints: Arc<Endpoints>,
    shutdown: CancellationToken,
) {
    let service = service_fn(move |req| {
        let endpoints = endpoints.clone();
        async move { Ok::<_, Infallible>(route(&endpoints, req).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        () = shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "probe/metrics connection ended with an error");
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
