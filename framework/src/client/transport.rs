//! [`Client`]: HTTPS to one API server over hyper 1 (hyper-util's pooled
//! client, so connections are reused) and rustls with ring. Every request
//! gets `User-Agent: kubeforge/<version>` and its credentials; a 401 makes
//! refreshable credentials (exec plugin, token file) refresh and the request
//! is retried once. Non-watch requests are bounded by the read timeout;
//! streaming requests only until the response headers arrive, since a watch
//! is meant to stay open.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use http::header::{HeaderValue, ACCEPT, AUTHORIZATION, USER_AGENT};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube_core::WatchEvent;
use serde::de::DeserializeOwned;

use super::auth::Authenticator;
use super::config::Config;
use super::error::{api_error, ConfigError, Error};
use super::tls::{self, find_tls_error, ClientCertStore};
use super::watch::EventStream;

/// The `User-Agent` every request carries.
pub const USER_AGENT_VALUE: &str = concat!("kubeforge/", env!("CARGO_PKG_VERSION"));

/// The largest error body read into an [`Error::Api`].
const MAX_ERROR_BODY: usize = 1024 * 1024;

type HyperClient = hyper_util::client::legacy::Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A handle on one API server. Cheap to clone: clones share connections,
/// credentials and caches.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    /// The URL path prefix (for servers behind a path-routing proxy), no
    /// trailing slash.
    prefix: String,
    cluster_url: http::Uri,
    default_namespace: String,
    tls: Arc<rustls::ClientConfig>,
    tls_server_name: Option<rustls::pki_types::ServerName<'static>>,
    connect_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
    certs: Arc<ClientCertStore>,
    auth: Authenticator,
    /// The pooled client and the certificate generation it was built for.
    http: RwLock<(u64, HyperClient)>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("cluster_url", &self.inner.cluster_url)
            .field("default_namespace", &self.inner.default_namespace)
            .finish_non_exhaustive()
    }
}

impl TryFrom<Config> for Client {
    type Error = Error;

    fn try_from(config: Config) -> Result<Self, Error> {
        Client::new(config)
    }
}

impl Client {
    /// A client for `config`. Fails on unusable TLS material; does not
    /// contact the server.
    pub fn new(config: Config) -> Result<Self, Error> {
        let url = &config.cluster_url;
        let scheme = url
            .scheme()
            .cloned()
            .ok_or_else(|| ConfigError::new(format!("cluster URL {url} has no scheme")))?;
        let authority = url
            .authority()
            .cloned()
            .ok_or_else(|| ConfigError::new(format!("cluster URL {url} has no host")))?;
        let prefix = url.path().trim_end_matches('/').to_owned();

        let provider = tls::provider();
        let certs = Arc::new(ClientCertStore::new(provider));
        if let Some(identity) = &config.client_identity {
            certs
                .set_pem(&identity.cert_pem, identity.key_pem.expose())
                .map_err(|e| ConfigError::new(format!("client certificate: {e}")))?;
        }
        let tls = Arc::new(tls::client_config(&config, certs.clone())?);
        let tls_server_name = match &config.tls_server_name {
            Some(name) => {
                let trimmed = name.trim_start_matches('[').trim_end_matches(']');
                Some(
                    rustls::pki_types::ServerName::try_from(trimmed.to_owned()).map_err(|e| {
                        ConfigError::new(format!("tls-server-name {name:?} is invalid"))
                            .caused_by(e)
                    })?,
                )
            }
            None => None,
        };
        let auth = Authenticator::new(&config, certs.clone())?;
        if scheme == http::uri::Scheme::HTTP && !matches!(config.auth, super::config::Auth::None) {
            tracing::warn!(server = %url, "credentials will be sent over plain HTTP");
        }

        let http = build_http(&tls, tls_server_name.as_ref(), config.connect_timeout);
        let inner = Inner {
            scheme,
            authority,
            prefix,
            cluster_url: config.cluster_url.clone(),
            default_namespace: config.default_namespace.clone(),
            http: RwLock::new((certs.generation(), http)),
            tls,
            tls_server_name,
            connect_timeout: config.connect_timeout,
            read_timeout: config.read_timeout,
            certs,
            auth,
        };
        Ok(Client {
            inner: Arc::new(inner),
        })
    }

    /// A client for the inferred configuration ([`Config::infer`]).
    pub async fn try_default() -> Result<Self, Error> {
        Client::new(Config::infer().await?)
    }

    /// The namespace `Api::default_namespaced` uses.
    pub fn default_namespace(&self) -> &str {
        &self.inner.default_namespace
    }

    /// The API server's base URL.
    pub fn cluster_url(&self) -> &http::Uri {
        &self.inner.cluster_url
    }

    /// Sends a request and returns the whole response, whatever its status.
    /// The request's URI is a path (and query) relative to the cluster URL.
    /// Bounded by the read timeout.
    pub async fn send(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<http::Response<Bytes>, Error> {
        let url = self.url_for(request.uri())?;
        self.timed(&url, async {
            let response = self.execute(request, &url).await?;
            let (parts, body) = response.into_parts();
            let body = body
                .collect()
                .await
                .map_err(|e| transport_error(&url, e))?
                .to_bytes();
            Ok(http::Response::from_parts(parts, body))
        })
        .await
    }

    /// Sends a request and returns the response with its body as a stream
    /// of chunks, whatever its status. Only waiting for the headers is
    /// bounded by the read timeout.
    pub async fn send_stream(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<http::Response<ByteStream>, Error> {
        let url = self.url_for(request.uri())?;
        let response = self.timed(&url, self.execute(request, &url)).await?;
        Ok(response.map(|body| ByteStream { body, url }))
    }

    /// Sends a request and decodes a successful JSON answer; an error status
    /// becomes [`Error::Api`].
    pub async fn request<T: DeserializeOwned>(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<T, Error> {
        let what = describe(&request);
        let body = self.request_bytes(request).await?;
        serde_json::from_slice(&body).map_err(|source| Error::Decode {
            what: format!("response to {what}"),
            source,
        })
    }

    /// Sends a request and returns a successful answer's body as text.
    pub async fn request_text(&self, request: http::Request<Vec<u8>>) -> Result<String, Error> {
        let body = self.request_bytes(request).await?;
        String::from_utf8(body.to_vec())
            .map_err(|e| Error::Protocol(format!("response body is not UTF-8: {e}")))
    }

    /// Sends a request and returns a successful answer's raw body.
    pub async fn request_bytes(&self, request: http::Request<Vec<u8>>) -> Result<Bytes, Error> {
        let method = request.method().clone();
        let response = self.send(request).await?;
        if !response.status().is_success() {
            return Err(api_error(
                response.status(),
                &method,
                response.headers(),
                response.body(),
            ));
        }
        Ok(response.into_body())
    }

    /// Sends a request and streams a successful answer's body; an error
    /// status becomes [`Error::Api`] (its body is read, up to 1 MiB).
    pub async fn request_stream(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<ByteStream, Error> {
        let method = request.method().clone();
        let url = self.url_for(request.uri())?;
        let response = self.send_stream(request).await?;
        if response.status().is_success() {
            return Ok(response.into_body());
        }
        let (parts, body) = response.into_parts();
        let body = self
            .timed(&url, async {
                Limited::new(body.body, MAX_ERROR_BODY)
                    .collect()
                    .await
                    .map(|c| c.to_bytes())
                    .map_err(|e| Error::Transport {
                        url: url.clone(),
                        source: e,
                    })
            })
            .await?;
        Err(api_error(parts.status, &method, &parts.headers, &body))
    }

    /// Sends a watch request and decodes its events one at a time.
    pub async fn request_events<T: DeserializeOwned>(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<impl Stream<Item = Result<WatchEvent<T>, Error>> + Send + use<T>, Error> {
        let body = self.request_stream(request).await?;
        Ok(EventStream::<_, T>::new(body))
    }

    /// The server's `/version`.
    pub async fn apiserver_version(
        &self,
    ) -> Result<k8s_openapi::apimachinery::pkg::version::Info, Error> {
        let request = http::Request::get("/version")
            .body(Vec::new())
            .map_err(|e| Error::Request(kube_core::request::Error::BuildRequest(e)))?;
        self.request(request).await
    }

    fn url_for(&self, uri: &http::Uri) -> Result<String, Error> {
        let path = canonical_path_and_query(uri);
        Ok(format!(
            "{}://{}{}{}",
            self.inner.scheme, self.inner.authority, self.inner.prefix, path
        ))
    }

    async fn timed<T>(
        &self,
        url: &str,
        fut: impl std::future::Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        match self.inner.read_timeout {
            Some(timeout) => {
                tokio::time::timeout(timeout, fut)
                    .await
                    .map_err(|_| Error::Timeout {
                        url: url.to_owned(),
                        timeout,
                    })?
            }
            None => fut.await,
        }
    }

    /// Sends with credentials; after a 401, refreshes them and retries once.
    async fn execute(
        &self,
        request: http::Request<Vec<u8>>,
        url: &str,
    ) -> Result<http::Response<Incoming>, Error> {
        let (parts, body) = request.into_parts();
        let body = Bytes::from(body);
        let caller_auth = parts.headers.contains_key(AUTHORIZATION);
        let auth = if caller_auth {
            None
        } else {
            self.inner.auth.header().await?
        };
        let response = self
            .send_once(&parts, url, body.clone(), auth.clone())
            .await?;
        if response.status() != http::StatusCode::UNAUTHORIZED || caller_auth {
            return Ok(response);
        }
        if !self
            .inner
            .auth
            .refresh_after_unauthorized(auth.as_ref())
            .await?
        {
            return Ok(response);
        }
        drop(response);
        let auth = self.inner.auth.header().await?;
        self.send_once(&parts, url, body, auth).await
    }

    async fn send_once(
        &self,
        parts: &http::request::Parts,
        url: &str,
        body: Bytes,
        auth: Option<HeaderValue>,
    ) -> Result<http::Response<Incoming>, Error> {
        let mut builder = http::Request::builder()
            .method(parts.method.clone())
            .uri(url);
        if let Some(headers) = builder.headers_mut() {
            headers.clone_from(&parts.headers);
            if !headers.contains_key(USER_AGENT) {
                headers.insert(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
            }
            if !headers.contains_key(ACCEPT) {
                headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
            }
            if let Some(auth) = auth {
                headers.insert(AUTHORIZATION, auth);
            }
        }
        let request = builder
            .body(Full::new(body))
            .map_err(|e| Error::Request(kube_core::request::Error::BuildRequest(e)))?;
        tracing::trace!(method = %parts.method, url, "sending request");
        self.http()
            .request(request)
            .await
            .map_err(|e| transport_error(url, e))
    }

    /// The pooled client, rebuilt when the client certificate changed so
    /// no request rides a connection authenticated with the old one.
    fn http(&self) -> HyperClient {
        let generation = self.inner.certs.generation();
        {
            let current = self.inner.http.read().unwrap_or_else(|p| p.into_inner());
            if current.0 == generation {
                return current.1.clone();
            }
        }
        let mut current = self.inner.http.write().unwrap_or_else(|p| p.into_inner());
        if current.0 != generation {
            tracing::debug!("client certificate changed; opening new connections");
            let inner = &self.inner;
            let http = build_http(
                &inner.tls,
                inner.tls_server_name.as_ref(),
                inner.connect_timeout,
            );
            *current = (generation, http);
        }
        current.1.clone()
    }
}

fn build_http(
    tls: &rustls::ClientConfig,
    server_name: Option<&rustls::pki_types::ServerName<'static>>,
    connect_timeout: Option<Duration>,
) -> HyperClient {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(connect_timeout);
    let builder = HttpsConnectorBuilder::new()
        .with_tls_config(tls.clone())
        .https_or_http();
    let builder = match server_name {
        Some(name) => builder.with_server_name_resolver(FixedServerNameResolver::new(name.clone())),
        None => builder,
    };
    let connector = builder.enable_http1().enable_http2().wrap_connector(http);
    hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .timer(TokioTimer::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .build(connector)
}

/// The request target as sent: kube-core's builders leave `?&a=b`, or a
/// bare `?` when there are no parameters; tidy them so logs and servers see
/// a canonical query.
pub(crate) fn canonical_path_and_query(uri: &http::Uri) -> String {
    let path = uri.path_and_query().map_or("/", |pq| pq.as_str());
    let mut path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    if let Some(q) = path.find("?&") {
        path.remove(q + 1);
    }
    if path.ends_with('?') {
        path.pop();
    }
    path
}

fn describe(request: &http::Request<Vec<u8>>) -> String {
    format!(
        "{} {}",
        request.method(),
        request.uri().path_and_query().map_or("/", |pq| pq.as_str())
    )
}

fn transport_error(url: &str, err: impl std::error::Error + Send + Sync + 'static) -> Error {
    if let Some(tls) = find_tls_error(&err) {
        return Error::Tls {
            url: url.to_owned(),
            source: tls.clone(),
        };
    }
    Error::Transport {
        url: url.to_owned(),
        source: Box::new(err),
    }
}

/// A response body as a stream of byte chunks.
pub struct ByteStream {
    body: Incoming,
    url: String,
}

impl std::fmt::Debug for ByteStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteStream")
            .field("url", &self.url)
            .finish()
    }
}

impl ByteStream {
    /// Reads the rest of the body into memory.
    pub async fn collect_bytes(mut self) -> Result<Bytes, Error> {
        let mut out = bytes::BytesMut::new();
        while let Some(chunk) = self.next().await {
            out.extend_from_slice(&chunk?);
        }
        Ok(out.freeze())
    }
}

impl Stream for ByteStream {
    type Item = Result<Bytes, Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use hyper::body::Body as _;
        loop {
            let frame = std::task::ready!(std::pin::Pin::new(&mut self.body).poll_frame(cx));
            match frame {
                None => return std::task::Poll::Ready(None),
                Some(Err(e)) => {
                    let url = self.url.clone();
                    return std::task::Poll::Ready(Some(Err(transport_error(&url, e))));
                }
                Some(Ok(frame)) => {
                    // Trailers carry no data; skip them.
                    if let Ok(data) = frame.into_data() {
                        if !data.is_empty() {
                            return std::task::Poll::Ready(Some(Ok(data)));
                        }
                    }
                }
            }
        }
    }
}
