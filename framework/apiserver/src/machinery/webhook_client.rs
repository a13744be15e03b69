//! One webhook call on the wire, shared by admission webhooks and CRD
//! conversion webhooks: a JSON POST over HTTPS to a `url`
//! client config, trusting the configuration's `caBundle`, bounded by the
//! webhook's timeout (`?timeout=Ns` on the URL, as kube-apiserver's
//! REST client sends it). Errors read like the Go client's
//! (`Post "URL": context deadline exceeded`), since they reach clients
//! inside kube-apiserver's messages.
//!
//! Connections are kept alive and reused per server and CA bundle, as Go's
//! `http.Transport` under kube-apiserver's webhook client keeps them: a
//! bounded number idle per target, dropped when the server closes them or
//! after Go's idle timeout, and a request the server closed its pooled
//! connection before receiving is sent once more on a new one.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http::uri::Authority;
use http::{header, Method, Request, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;

/// The most of a webhook's response body that is read (kube-apiserver's
/// webhook client has no smaller bound than its request limit).
const MAX_RESPONSE_BYTES: usize = 3 << 20;

/// Where and how to reach one webhook (`WebhookClientConfig`).
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// The URL with `?timeout=` added.
    pub url: String,
    /// The PEM certificates the server must chain to.
    pub ca_pem: Vec<u8>,
    pub timeout: Duration,
}

impl Target {
    /// Reads a `clientConfig`. A `service` reference cannot be reached
    /// from an in-process server (there is no cluster network); it is an
    /// error at call time, which the failure policy judges.
    pub fn from_client_config(config: &Value, timeout: Duration) -> Result<Self, String> {
        let ca_pem = match config.get("caBundle").and_then(Value::as_str) {
            Some(b64) if !b64.is_empty() => base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| format!("invalid caBundle: {e}"))?,
            _ => Vec::new(),
        };
        let url = match (
            config.get("url").and_then(Value::as_str),
            config.get("service"),
        ) {
            (Some(url), _) => url.to_owned(),
            (None, Some(service)) => {
                let field = |f: &str| service.get(f).and_then(Value::as_str).unwrap_or("");
                return Err(format!(
                    "service {}/{} cannot be reached from the in-process API server; give the webhook a url",
                    field("namespace"),
                    field("name")
                ));
            }
            (None, None) => return Err("the client config has neither url nor service".into()),
        };
        let seconds = timeout.as_secs();
        let separator = if url.contains('?') { '&' } else { '?' };
        Ok(Self {
            url: format!("{url}{separator}timeout={seconds}s"),
            ca_pem,
            timeout,
        })
    }
}

/// POSTs `body` and returns the response body of a 200; anything else is
/// an error message.
pub(crate) async fn post(target: Target, body: Vec<u8>) -> Result<Bytes, String> {
    let url = target.url.clone();
    match tokio::time::timeout(target.timeout, exchange(target, body)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => Err(format!("Post \"{url}\": {e}")),
        Err(_) => Err(format!("Post \"{url}\": context deadline exceeded")),
    }
}

fn tls_config(ca_pem: &[u8]) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        let cert = cert.map_err(|e| format!("invalid caBundle: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("invalid caBundle: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

async fn exchange(target: Target, body: Vec<u8>) -> Result<Bytes, String> {
    let uri: Uri = target
        .url
        .parse()
        .map_err(|e| format!("invalid url: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err("webhook URLs must use the https scheme".into());
    }
    let authority = uri.authority().ok_or("the url has no host")?.clone();
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::HOST, authority.as_str())
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, */*")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let key = PoolKey {
        authority: authority.as_str().to_owned(),
        ca_pem: target.ca_pem,
    };
    let (idle, tls) = POOL.checkout(&key).await;
    if let Some(mut sender) = idle {
        match sender.try_send_request(request).await {
            Ok(response) => return finish(&key, tls, sender, response).await,
            Err(mut e) => match e.take_message() {
                // Not sent: the server closed the idle connection first. Go's
                // transport retries such a request once on a new connection.
                Some(unsent) => request = unsent,
                None => return Err(e.into_error().to_string()),
            },
        }
    }
    let tls = match tls {
        Some(tls) => tls,
        None => Arc::new(tls_config(&key.ca_pem)?),
    };
    let mut sender = connect(&authority, tls.clone()).await?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    finish(&key, Some(tls), sender, response).await
}

/// A new TLS connection to `authority`, its HTTP/1.1 side driven by a
/// task of its own until the sender is dropped or the server closes it.
async fn connect(
    authority: &Authority,
    tls: Arc<rustls::ClientConfig>,
) -> Result<SendRequest<Full<Bytes>>, String> {
    let host = authority.host();
    let port = authority.port_u16().unwrap_or(443);
    let bare_host = host.trim_start_matches('[').trim_end_matches(']');
    let server_name =
        ServerName::try_from(bare_host.to_owned()).map_err(|e| format!("invalid host: {e}"))?;
    let tcp = TcpStream::connect((bare_host, port))
        .await
        .map_err(|e| format!("dial tcp {bare_host}:{port}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let tls = tokio_rustls::TlsConnector::from(tls)
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// Reads the response; the connection goes back to the pool once its
/// body is read, whatever the status (as Go's transport does).
async fn finish(
    key: &PoolKey,
    tls: Option<Arc<rustls::ClientConfig>>,
    sender: SendRequest<Full<Bytes>>,
    response: http::Response<hyper::body::Incoming>,
) -> Result<Bytes, String> {
    let status = response.status();
    let bytes = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
        .collect()
        .await
        .map_err(|e| format!("reading the response: {e}"))?
        .to_bytes();
    if let Some(tls) = tls {
        POOL.checkin(key, tls, sender);
    }
    if status != http::StatusCode::OK {
        return Err(format!(
            "the server responded with the status code {} but did not return more information",
            status.as_u16()
        ));
    }
    Ok(bytes)
}

/// Idle connections kept per target: client-go's `MaxIdleConnsPerHost`
/// (`utilnet.SetTransportDefaults`).
const MAX_IDLE_PER_TARGET: usize = 25;
/// How long a connection may sit idle before it is dropped: Go's
/// `IdleConnTimeout` there.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Targets remembered at most (their TLS settings and idle connections);
/// past it the one used least recently is forgotten.
const MAX_TARGETS: usize = 64;

/// The keep-alive pool every webhook call draws from, as kube-apiserver's
/// webhook client reuses its `http.Transport`'s connections.
static POOL: LazyLock<Pool> = LazyLock::new(Pool::default);

/// Which connections may serve a call: the same server, trusted through
/// the same CA bundle.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PoolKey {
    authority: String,
    ca_pem: Vec<u8>,
}

/// Idle HTTP/1.1 connections by target, each target's TLS settings built
/// once.
#[derive(Default)]
struct Pool {
    targets: Mutex<HashMap<PoolKey, PoolEntry>>,
}

struct PoolEntry {
    tls: Arc<rustls::ClientConfig>,
    /// Most recently used last.
    idle: Vec<(SendRequest<Full<Bytes>>, Instant)>,
    used: Instant,
}

impl Pool {
    /// The most recently used live idle connection to `key` (dead and
    /// expired ones are dropped on the way), and the target's TLS
    /// settings when known.
    async fn checkout(
        &self,
        key: &PoolKey,
    ) -> (
        Option<SendRequest<Full<Bytes>>>,
        Option<Arc<rustls::ClientConfig>>,
    ) {
        loop {
            let (candidate, tls) = {
                let mut targets = self.targets.lock().unwrap_or_else(|e| e.into_inner());
                let Some(entry) = targets.get_mut(key) else {
                    return (None, None);
                };
                entry.used = Instant::now();
                let tls = entry.tls.clone();
                let candidate = loop {
                    match entry.idle.pop() {
                        Some((sender, since))
                            if since.elapsed() < IDLE_TIMEOUT && !sender.is_closed() =>
                        {
                            break Some(sender)
                        }
                        Some(_) => continue,
                        None => break None,
                    }
                };
                (candidate, tls)
            };
            let Some(mut sender) = candidate else {
                return (None, Some(tls));
            };
            // Ready once the previous response is fully read; an error
            // means the connection closed meanwhile.
            if sender.ready().await.is_ok() {
                return (Some(sender), Some(tls));
            }
        }
    }

    /// Keeps `sender` for the next call to `key`, unless it is closed or
    /// the target has enough idle connections.
    fn checkin(
        &self,
        key: &PoolKey,
        tls: Arc<rustls::ClientConfig>,
        sender: SendRequest<Full<Bytes>>,
    ) {
        if sender.is_closed() {
            return;
        }
        let now = Instant::now();
        let mut targets = self.targets.lock().unwrap_or_else(|e| e.into_inner());
        if !targets.contains_key(key) && targets.len() >= MAX_TARGETS {
            let oldest = targets
                .iter()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                targets.remove(&oldest);
            }
        }
        let entry = targets.entry(key.clone()).or_insert_with(|| PoolEntry {
            tls,
            idle: Vec::new(),
            used: now,
        });
        entry.used = now;
        entry
            .idle
            .retain(|(s, since)| !s.is_closed() && since.elapsed() < IDLE_TIMEOUT);
        if entry.idle.len() < MAX_IDLE_PER_TARGET {
            entry.idle.push((sender, now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rcgen::{CertificateParams, KeyPair};
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// When the test server closes a connection.
    #[derive(Clone, Copy)]
    enum Close {
        /// When the client does.
        Never,
        /// After it sat idle this long.
        IdleAfter(Duration),
        /// Right after each response, without saying so in a header (a
        /// server at its keep-alive limit, or restarting).
        AfterEachResponse,
    }

    /// A bare HTTPS/1.1 server on 127.0.0.1 answering every POST with
    /// `{"n":<request number>}`, counting the connections it accepts.
    struct CountingServer {
        url: String,
        ca_pem: Vec<u8>,
        connections: Arc<AtomicUsize>,
    }

    impl CountingServer {
        async fn start(close: Close) -> Self {
            let key = KeyPair::generate().expect("key");
            let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
                .expect("params")
                .self_signed(&key)
                .expect("cert");
            let config = rustls::ServerConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("server config");
            let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let port = listener.local_addr().expect("addr").port();
            let connections = Arc::new(AtomicUsize::new(0));
            let requests = Arc::new(AtomicUsize::new(0));
            let counted = connections.clone();
            tokio::spawn(async move {
                while let Ok((tcp, _)) = listener.accept().await {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let (acceptor, requests) = (acceptor.clone(), requests.clone());
                    tokio::spawn(async move {
                        if let Ok(mut tls) = acceptor.accept(tcp).await {
                            let idle = match close {
                                Close::IdleAfter(idle) => Some(idle),
                                _ => None,
                            };
                            while read_request(&mut tls, idle).await {
                                let n = requests.fetch_add(1, Ordering::SeqCst);
                                let body = format!("{{\"n\":{n}}}");
                                let response = format!(
                                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                                    body.len()
                                );
                                let written = tls.write_all(response.as_bytes()).await;
                                if written.is_err() || matches!(close, Close::AfterEachResponse) {
                                    break;
                                }
                            }
                            let _ = tls.shutdown().await;
                        }
                    });
                }
            });
            Self {
                url: format!("https://127.0.0.1:{port}/hook?timeout=10s"),
                ca_pem: cert.pem().into_bytes(),
                connections,
            }
        }

        fn target(&self) -> Target {
            Target {
                url: self.url.clone(),
                ca_pem: self.ca_pem.clone(),
                timeout: Duration::from_secs(10),
            }
        }
    }

    /// Reads one request (head and `content-length` body); false when the
    /// client closed the connection or it sat idle for `idle`.
    async fn read_request<S: tokio::io::AsyncRead + Unpin>(
        stream: &mut S,
        idle: Option<Duration>,
    ) -> bool {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let read = stream.read(&mut chunk);
            let n = match (idle, buf.is_empty()) {
                (Some(idle), true) => match tokio::time::timeout(idle, read).await {
                    Ok(n) => n,
                    Err(_) => return false,
                },
                _ => read.await,
            };
            let Ok(n) = n else { return false };
            if n == 0 {
                return false;
            }
            buf.extend_from_slice(&chunk[..n]);
            let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return true;
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sequential_calls_to_one_server_share_one_connection() {
        let server = CountingServer::start(Close::Never).await;
        for i in 0..20 {
            let body = post(server.target(), b"{}".to_vec())
                .await
                .expect("answered");
            assert_eq!(body, format!("{{\"n\":{i}}}"));
        }
        assert_eq!(server.connections.load(Ordering::SeqCst), 1);

        // Another CA bundle for the same server is another pool entry.
        let mut other = server.target();
        other.ca_pem.extend_from_slice(b"\n");
        post(other, b"{}".to_vec()).await.expect("answered");
        assert_eq!(server.connections.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_closing_idle_connections_still_answers_every_call() {
        let server = CountingServer::start(Close::IdleAfter(Duration::from_millis(300))).await;
        // Back to back, calls share a connection; after a pause longer than
        // the server keeps it, the pooled one is found closed and dropped.
        let pauses = [0, 0, 700, 0, 0, 700, 0];
        for (i, pause) in pauses.into_iter().enumerate() {
            tokio::time::sleep(Duration::from_millis(pause)).await;
            let body = post(server.target(), b"{}".to_vec())
                .await
                .unwrap_or_else(|e| panic!("call {i} after {pause} ms: {e}"));
            assert_eq!(body, format!("{{\"n\":{i}}}"));
        }
        assert_eq!(server.connections.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_closing_after_each_response_still_answers_every_call() {
        // Every pooled connection is dead by the next call, and skipped
        // once the client has seen it close. Before that, a call can race
        // the close: its request is written, then the connection ends with
        // no answer. Go's transport does not resend a POST then, nor does
        // this client, so the test lets the client see each close first.
        let server = CountingServer::start(Close::AfterEachResponse).await;
        for i in 0..10 {
            let body = post(server.target(), b"{}".to_vec())
                .await
                .unwrap_or_else(|e| panic!("call {i}: {e}"));
            assert_eq!(body, format!("{{\"n\":{i}}}"));
            until_pooled_connections_closed(&server.target()).await;
        }
        assert_eq!(server.connections.load(Ordering::SeqCst), 10);
    }

    /// Waits until no connection the pool keeps for `target` is open.
    async fn until_pooled_connections_closed(target: &Target) {
        let uri: Uri = target.url.parse().expect("a url");
        let key = PoolKey {
            authority: uri.authority().expect("an authority").to_string(),
            ca_pem: target.ca_pem.clone(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let open = POOL
                .targets
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&key)
                .is_some_and(|entry| entry.idle.iter().any(|(s, _)| !s.is_closed()));
            if !open {
                return;
            }
            assert!(Instant::now() < deadline, "the client never saw the close");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[test]
    fn the_timeout_goes_on_the_url_and_service_references_are_refused() {
        let target = Target::from_client_config(
            &serde_json::json!({"url": "https://127.0.0.1:9443/validate"}),
            Duration::from_secs(7),
        )
        .expect("a url config");
        assert_eq!(target.url, "https://127.0.0.1:9443/validate?timeout=7s");
        let err = Target::from_client_config(
            &serde_json::json!({"service": {"namespace": "system", "name": "webhook"}}),
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert!(err.contains("service system/webhook"), "{err}");
        let err = Target::from_client_config(
            &serde_json::json!({"url": "https://x", "caBundle": "%%%"}),
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(err.starts_with("invalid caBundle"), "{err}");
    }

    #[tokio::test]
    async fn plain_http_urls_are_refused() {
        let target = Target {
            url: "http://127.0.0.1:1/x?timeout=1s".into(),
            ca_pem: Vec::new(),
            timeout: Duration::from_secs(1),
        };
        let err = post(target, b"{}".to_vec()).await.unwrap_err();
        assert!(
            err.ends_with("webhook URLs must use the https scheme"),
            "{err}"
        );
    }
}
