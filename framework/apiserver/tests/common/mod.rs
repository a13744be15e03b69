//! A minimal HTTPS client for the API server tests: hyper-util over rustls,
//! trusting only the server's CA, sending its bearer token. Deliberately
//! not kubeforge's client: the server is tested on the wire.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use kubeforge_apiserver::{ApiServer, ApiServerBuilder};
use rustls::pki_types::CertificateDer;
use serde_json::Value;

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// The CustomResourceDefinition collection.
pub const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// A running server and a client for it.
pub struct Kube {
    pub server: ApiServer,
    client: Client<Https, Full<Bytes>>,
    base: String,
    token: String,
}

/// A response, fully read.
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub version: Version,
    pub body: Bytes,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn code(&self) -> u16 {
        self.status.as_u16()
    }
}

fn tls_config(ca: &[u8]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(ca.to_vec()))
        .expect("CA certificate");
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// TCP without Nagle's algorithm: small request frames must not wait for
/// delayed ACKs.
fn tcp() -> HttpConnector {
    let mut c = HttpConnector::new();
    c.enforce_http(false);
    c.set_nodelay(true);
    c
}

/// Sends `request` as raw bytes over HTTP/1.1 on a new TLS connection
/// and returns everything the server answers until it closes.
pub async fn raw_http1(server: &ApiServer, request: &[u8]) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut config = tls_config(server.ca_der());
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(server.addr())
        .await
        .expect("connect");
    let name = rustls::pki_types::ServerName::from(server.addr().ip());
    let mut tls = connector.connect(name, tcp).await.expect("TLS");
    // The server may answer (and close) before reading all of it.
    let _ = tls.write_all(request).await;
    let _ = tls.flush().await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), tls.read_to_end(&mut out)).await;
    out
}

/// A client that only offers HTTP/1.1 in ALPN.
pub fn client_http1(server: &ApiServer) -> Client<Https, Full<Bytes>> {
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(server.ca_der()))
        .https_only()
        .enable_http1()
        .wrap_connector(tcp());
    Client::builder(TokioExecutor::new()).build(https)
}

/// A client for `server` (`h2_only` forces HTTP/2 through ALPN).
pub fn client(server: &ApiServer, h2_only: bool) -> Client<Https, Full<Bytes>> {
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(server.ca_der()))
        .https_only()
        .enable_http1()
        .enable_http2()
        .wrap_connector(tcp());
    let mut b = Client::builder(TokioExecutor::new());
    if h2_only {
        b.http2_only(true);
    }
    b.build(https)
}

impl Kube {
    pub async fn start() -> Self {
        Self::with(ApiServer::builder()).await
    }

    pub async fn with(builder: ApiServerBuilder) -> Self {
        let server = builder.start().await.expect("server starts");
        let client = client(&server, false);
        let base = server.url().to_string().trim_end_matches('/').to_owned();
        let token = server.token().to_owned();
        Self {
            server,
            client,
            base,
            token,
        }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    fn request(
        &self,
        method: Method,
        path: &str,
        ct: Option<&str>,
        body: Bytes,
        accept: Option<&str>,
    ) -> Request<Full<Bytes>> {
        let mut b = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("authorization", format!("Bearer {}", self.token))
            .header("user-agent", "kubeforge-tests/v0.1.0 (linux)");
        if let Some(ct) = ct {
            b = b.header("content-type", ct);
        }
        if let Some(a) = accept {
            b = b.header("accept", a);
        }
        b.body(Full::new(body)).expect("request")
    }

    pub async fn send(&self, req: Request<Full<Bytes>>) -> Resp {
        let resp = tokio::time::timeout(Duration::from_secs(20), self.client.request(req))
            .await
            .expect("response in time")
            .expect("request succeeds");
        let status = resp.status();
        let headers = resp.headers().clone();
        let version = resp.version();
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        Resp {
            status,
            headers,
            version,
            body,
        }
    }

    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        ct: Option<&str>,
        body: impl Into<Bytes>,
        accept: Option<&str>,
    ) -> Resp {
        let m = Method::from_bytes(method.as_bytes()).expect("method");
        self.send(self.request(m, path, ct, body.into(), accept))
            .await
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.raw("GET", path, None, Bytes::new(), None).await
    }

    pub async fn get_accept(&self, path: &str, accept: &str) -> Resp {
        self.raw("GET", path, None, Bytes::new(), Some(accept))
            .await
    }

    pub async fn post(&self, path: &str, obj: &Value) -> Resp {
        self.raw(
            "POST",
            path,
            Some("application/json"),
            serde_json::to_vec(obj).unwrap(),
            None,
        )
        .await
    }

    pub async fn put(&self, path: &str, obj: &Value) -> Resp {
        self.raw(
            "PUT",
            path,
            Some("application/json"),
            serde_json::to_vec(obj).unwrap(),
            None,
        )
        .await
    }

    pub async fn patch(&self, path: &str, ct: &str, patch: &Value) -> Resp {
        self.raw(
            "PATCH",
            path,
            Some(ct),
            serde_json::to_vec(patch).unwrap(),
            None,
        )
        .await
    }

    pub async fn merge(&self, path: &str, patch: &Value) -> Resp {
        self.patch(path, "application/merge-patch+json", patch)
            .await
    }

    pub async fn delete(&self, path: &str) -> Resp {
        self.raw("DELETE", path, None, Bytes::new(), None).await
    }

    pub async fn delete_with(&self, path: &str, opts: &Value) -> Resp {
        self.raw(
            "DELETE",
            path,
            Some("application/json"),
            serde_json::to_vec(opts).unwrap(),
            None,
        )
        .await
    }

    /// Opens a watch (or any streaming GET).
    pub async fn watch(&self, path: &str) -> Watch {
        self.watch_accept(path, None).await
    }

    pub async fn watch_accept(&self, path: &str, accept: Option<&str>) -> Watch {
        let req = self.request(Method::GET, path, None, Bytes::new(), accept);
        let resp = tokio::time::timeout(Duration::from_secs(20), self.client.request(req))
            .await
            .expect("watch response in time")
            .expect("watch request succeeds");
        assert_eq!(resp.status(), StatusCode::OK, "watch status");
        Watch {
            version: resp.version(),
            body: resp.into_body(),
            buf: Vec::new(),
            ended: false,
        }
    }

    /// Creates a CustomResourceDefinition, which must be accepted.
    pub async fn create_crd(&self, crd: &Value) {
        let r = self.post(CRDS, crd).await;
        assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    }

    /// Creates a ConfigMap in `ns` and returns it.
    pub async fn configmap(&self, ns: &str, name: &str, data: Value) -> Value {
        let r = self
            .post(
                &format!("/api/v1/namespaces/{ns}/configmaps"),
                &serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}),
            )
            .await;
        assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
        r.json()
    }
}

/// An open watch, decoded one newline-terminated event at a time.
pub struct Watch {
    /// The HTTP version the server answered with.
    pub version: Version,
    body: Incoming,
    buf: Vec<u8>,
    ended: bool,
}

impl Watch {
    /// The next event, `None` when the stream ended or nothing came within
    /// `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                return Some(serde_json::from_slice(&line[..line.len() - 1]).expect("event JSON"));
            }
            if self.ended {
                return None;
            }
            match tokio::time::timeout(wait, self.body.frame()).await {
                Err(_) => return None,
                Ok(None) => {
                    self.ended = true;
                }
                Ok(Some(Err(_))) => {
                    self.ended = true;
                }
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// The next event within 5 s; panics otherwise.
    pub async fn next(&mut self) -> Value {
        self.next_within(Duration::from_secs(5))
            .await
            .expect("a watch event within 5s")
    }

    /// Whether the stream ends (cleanly) within `wait`, skipping events.
    pub async fn ends_within(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            if self.next_within(left).await.is_none() {
                return self.ended;
            }
        }
    }
}

/// `(type, name)` of an event.
pub fn ev(e: &Value) -> (String, String) {
    (
        e["type"].as_str().unwrap_or("").to_owned(),
        e["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    )
}

/// The resourceVersion of an object as a number.
pub fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("resourceVersion")
}
