//! [`WebhookServer`]: the HTTPS server (a [`crate::serve::Server`]) that
//! answers the registered [`Webhooks`], with controller-runtime's defaults:
//! port 9443, the certificate and key read from
//! `<tmp>/k8s-webhook-server/serving-certs/tls.{crt,key}` and reloaded when
//! they change. Requests are POSTs of `application/json` bodies of at most
//! 7 MiB (controller-runtime's limit); anything else is answered with a
//! clear error, never a panic.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use tokio_util::sync::CancellationToken;

use super::admission;
use super::certs::CertWatcher;
use super::conversion::CONVERT_PATH;
use super::{Error, Webhooks};
use crate::serve::{Handler, Server};

/// The port controller-runtime's webhook server listens on.
pub const DEFAULT_WEBHOOK_PORT: u16 = 9443;
/// The serving certificate's file name in the certificate directory.
pub const DEFAULT_CERT_NAME: &str = "tls.crt";
/// The serving key's file name in the certificate directory.
pub const DEFAULT_KEY_NAME: &str = "tls.key";
/// The largest request body answered (controller-runtime's 7 MiB).
pub const MAX_BODY_BYTES: usize = 7 * 1024 * 1024;
/// How often the certificate files are checked for changes.
pub const DEFAULT_CERT_POLL_INTERVAL: Duration = Duration::from_secs(2);

/// controller-runtime's default certificate directory:
/// `<tmp>/k8s-webhook-server/serving-certs`.
pub fn default_cert_dir() -> PathBuf {
    std::env::temp_dir()
        .join("k8s-webhook-server")
        .join("serving-certs")
}

/// Where the webhook server listens and where it finds its certificate.
#[derive(Clone, Debug)]
pub struct WebhookServerOptions {
    host: IpAddr,
    port: u16,
    cert_dir: PathBuf,
    cert_name: String,
    key_name: String,
    poll_interval: Duration,
}

impl Default for WebhookServerOptions {
    fn default() -> Self {
        Self {
            host: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port: DEFAULT_WEBHOOK_PORT,
            cert_dir: default_cert_dir(),
            cert_name: DEFAULT_CERT_NAME.into(),
            key_name: DEFAULT_KEY_NAME.into(),
            poll_interval: DEFAULT_CERT_POLL_INTERVAL,
        }
    }
}

impl WebhookServerOptions {
    /// The address to listen on (default every interface, `0.0.0.0`).
    pub fn host(mut self, host: IpAddr) -> Self {
        self.host = host;
        self
    }

    /// The port (default 9443; 0 picks a free one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The directory holding the certificate and key.
    pub fn cert_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cert_dir = dir.into();
        self
    }

    /// The certificate's file name (default `tls.crt`).
    pub fn cert_name(mut self, name: impl Into<String>) -> Self {
        self.cert_name = name.into();
        self
    }

    /// The key's file name (default `tls.key`).
    pub fn key_name(mut self, name: impl Into<String>) -> Self {
        self.key_name = name.into();
        self
    }

    /// How often the files are checked for a new pair (default 2 s).
    pub fn cert_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// The certificate's path.
    pub fn cert_path(&self) -> PathBuf {
        self.cert_dir.join(&self.cert_name)
    }

    /// The key's path.
    pub fn key_path(&self) -> PathBuf {
        self.cert_dir.join(&self.key_name)
    }

    /// Listens (the address is known from here on) without loading the
    /// certificate yet: [`WebhookServer::run`] does.
    /// `serving` is set while it serves (a readiness check reads it).
    pub async fn bind(
        self,
        webhooks: Webhooks,
        serving: Arc<AtomicBool>,
    ) -> Result<WebhookServer, Error> {
        let server = Server::bind(SocketAddr::new(self.host, self.port), Router { webhooks })
            .await
            .map_err(Error::Serve)?;
        Ok(WebhookServer {
            server,
            options: self,
            serving,
        })
    }
}

/// A bound webhook server; [`run`](Self::run) it.
#[derive(Debug)]
pub struct WebhookServer {
    server: Server,
    options: WebhookServerOptions,
    serving: Arc<AtomicBool>,
}

impl WebhookServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// Loads the certificate (failing with the file and the problem), then
    /// serves HTTPS until `stop`, reloading the certificate as it changes.
    pub async fn run(self, stop: CancellationToken) -> Result<(), Error> {
        let (cert, key) = (self.options.cert_path(), self.options.key_path());
        let watcher = tokio::task::spawn_blocking(move || CertWatcher::load(cert, key))
            .await
            .map_err(|e| Error::Tls(e.to_string()))??;
        let watcher = Arc::new(watcher);
        let server = self.server.with_tls(watcher.server_config()?);
        let watch =
            tokio::spawn(Arc::clone(&watcher).watch(self.options.poll_interval, stop.clone()));
        self.serving.store(true, Ordering::Release);
        let result = server.run(stop).await;
        self.serving.store(false, Ordering::Release);
        watch.abort();
        result.map_err(Error::Serve)
    }
}

/// What a path is served by.
enum Target {
    Admission(Arc<dyn admission::AdmissionHandler>),
    Conversion(super::conversion::Conversions),
}

/// Routes requests to the registered webhooks.
struct Router {
    webhooks: Webhooks,
}

impl Handler for Router {
    fn handle(&self, request: Request<Incoming>) -> BoxFuture<'_, Response<Full<Bytes>>> {
        Box::pin(self.route(request))
    }
}

fn respond(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response
}

fn plain(status: StatusCode, message: String) -> Response<Full<Bytes>> {
    respond(status, "text/plain; charset=utf-8", message.into_bytes())
}

impl Router {
    async fn route(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path().to_owned();
        let target = match self.webhooks.admission_handler(&path) {
            Some(handler) => Target::Admission(handler),
            None => match (path == CONVERT_PATH).then(|| self.webhooks.conversions()) {
                Some(Some(conversions)) => Target::Conversion(conversions),
                _ => {
                    return plain(
                        StatusCode::NOT_FOUND,
                        format!("no webhook is served at {path}\n"),
                    )
                }
            },
        };
        if request.method() != Method::POST {
            return plain(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{} is not allowed: webhooks take POST\n", request.method()),
            );
        }
        let body = match read_json_body(request).await {
            Ok(body) => body,
            Err((status, message)) => {
                tracing::debug!(%path, %message, "refused a webhook request");
                return match target {
                    Target::Admission(_) => respond(
                        StatusCode::OK,
                        "application/json",
                        admission::refusal(status.as_u16(), "BadRequest", message),
                    ),
                    Target::Conversion(_) => plain(status, format!("{message}\n")),
                };
            }
        };
        let answer = match target {
            Target::Admission(handler) => admission::answer(handler.as_ref(), &body).await,
            Target::Conversion(conversions) => conversions.answer(&body),
        };
        respond(StatusCode::OK, "application/json", answer)
    }
}

/// The body of a JSON request, at most [`MAX_BODY_BYTES`].
async fn read_json_body(request: Request<Incoming>) -> Result<Bytes, (StatusCode, String)> {
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let media_type = content_type.split(';').next().unwrap_or_default().trim();
    if !media_type.eq_ignore_ascii_case("application/json") {
        return Err((
            StatusCode::BAD_REQUEST,
            format!("contentType={content_type}, expected application/json"),
        ));
    }
    match Limited::new(request.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(collected) => {
            let body = collected.to_bytes();
            if body.is_empty() {
                Err((StatusCode::BAD_REQUEST, "request body is empty".into()))
            } else {
                Ok(body)
            }
        }
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request entity is too large; limit is {MAX_BODY_BYTES} bytes"),
        )),
        Err(e) => Err((
            StatusCode::BAD_REQUEST,
            format!("cannot read the request body: {e}"),
        )),
    }
}
