//! [`Server`]: a bound listener, a [`Handler`], and optionally TLS; the
//! accept loop, the per-connection HTTP/1.1 or HTTP/2 service, and the
//! graceful stop.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// How long a client may take to send its request headers, and to finish
/// the TLS handshake.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a graceful stop waits for requests in flight.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// Open connections beyond this wait until one closes.
const MAX_CONNECTIONS: usize = 128;

/// Why a server could not listen or stopped listening.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The address could not be listened on.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// The listener failed while accepting connections.
    #[error("the HTTP server on {address} failed: {source}")]
    Serve {
        /// The address it listened on.
        address: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
}

/// What a server answers: one response per request. Implemented by every
/// `Fn(Request<Incoming>) -> impl Future<Output = Response<Full<Bytes>>>`.
pub trait Handler: Send + Sync + 'static {
    /// The response to `request`.
    fn handle(&self, request: Request<Incoming>) -> BoxFuture<'_, Response<Full<Bytes>>>;
}

impl<F, Fut> Handler for F
where
    F: Fn(Request<Incoming>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    fn handle(&self, request: Request<Incoming>) -> BoxFuture<'_, Response<Full<Bytes>>> {
        Box::pin(self(request))
    }
}

/// A bound HTTP or HTTPS server; [`run`](Self::run) or
/// [`spawn`](Self::spawn) it.
///
/// ```no_run
/// # async fn demo(tls: std::sync::Arc<kubeforge::serve::ServerConfig>) -> Result<(), kubeforge::serve::Error> {
/// use kubeforge::manager::CancellationToken;
/// use kubeforge::serve::{Bytes, Full, Incoming, Request, Response, Server};
///
/// let server = Server::bind("127.0.0.1:9443".parse().unwrap(), |request: Request<Incoming>| async move {
///     let _ = request;
///     Response::new(Full::new(Bytes::from_static(b"ok")))
/// })
/// .await?
/// .with_tls(tls);
/// let stop = CancellationToken::new();
/// let task = server.spawn(stop.clone());
/// stop.cancel();
/// task.await.expect("server task")?;
/// # Ok(())
/// # }
/// ```
pub struct Server {
    listener: TcpListener,
    address: SocketAddr,
    handler: Arc<dyn Handler>,
    tls: Option<TlsAcceptor>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("address", &self.address)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Listens on `address` (port 0 picks a free port; see
    /// [`local_addr`](Self::local_addr)) for plain HTTP/1.1 answered by
    /// `handler`.
    pub async fn bind(address: SocketAddr, handler: impl Handler) -> Result<Self, Error> {
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| Error::Bind { address, source })?;
        let address = listener
            .local_addr()
            .map_err(|source| Error::Bind { address, source })?;
        Ok(Self {
            listener,
            address,
            handler: Arc::new(handler),
            tls: None,
        })
    }

    /// Serves HTTPS instead: each connection is a TLS handshake with
    /// `config` first (its certificate resolver picks the certificate per
    /// handshake, so one that reloads from disk takes effect for new
    /// connections), then HTTP/2 when ALPN agreed on `h2`, else HTTP/1.1.
    pub fn with_tls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(TlsAcceptor::from(config));
        self
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Whether it serves HTTPS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Serves until `shutdown` is cancelled, then stops gracefully: no new
    /// connections, requests in flight finish (at most a few seconds), idle
    /// connections close. Fails only when the listener itself fails.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), Error> {
        let address = self.address;
        let scheme = if self.tls.is_some() { "HTTPS" } else { "HTTP" };
        tracing::info!(%address, "serving {scheme}");
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
            connections.spawn(serve_connection(
                stream,
                self.tls.clone(),
                Arc::clone(&self.handler),
                close.clone(),
            ));
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
        tracing::info!(%address, "{scheme} server stopped");
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

/// One connection: the TLS handshake if any, then HTTP until the client
/// closes or the server stops.
async fn serve_connection(
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    handler: Arc<dyn Handler>,
    shutdown: CancellationToken,
) {
    let Some(acceptor) = tls else {
        return serve_http(TokioIo::new(stream), false, handler, shutdown).await;
    };
    let handshake = tokio::select! {
        () = shutdown.cancelled() => return,
        handshake = tokio::time::timeout(HEADER_READ_TIMEOUT, acceptor.accept(stream)) => handshake,
    };
    let stream = match handshake {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!("TLS handshake timed out");
            return;
        }
    };
    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
    serve_http(TokioIo::new(stream), h2, handler, shutdown).await;
}

async fn serve_http<I>(io: I, h2: bool, handler: Arc<dyn Handler>, shutdown: CancellationToken)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let handler = Arc::clone(&handler);
        async move { Ok::<_, Infallible>(handler.handle(request).await) }
    });
    let result = if h2 {
        let conn = http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .serve_connection(io, service);
        tokio::pin!(conn);
        tokio::select! {
            r = conn.as_mut() => r,
            () = shutdown.cancelled() => {
                conn.as_mut().graceful_shutdown();
                conn.await
            }
        }
    } else {
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT)
            .serve_connection(io, service);
        tokio::pin!(conn);
        tokio::select! {
            r = conn.as_mut() => r,
            () = shutdown.cancelled() => {
                conn.as_mut().graceful_shutdown();
                conn.await
            }
        }
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}
