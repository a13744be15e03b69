//! A minimal HTTPS server on 127.0.0.1 for the client's integration tests:
//! an rcgen CA, a server certificate, tokio-rustls and hyper. Each test
//! supplies a handler; the server records every request (method, URI,
//! headers, body, the client certificate presented) and counts TCP
//! connections so connection reuse can be asserted.

#![allow(dead_code)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use http_body_util::{combinators::BoxBody, BodyExt as _, Full, StreamBody};
use hyper::body::Frame;
use kubeforge::client::{Auth, Config, SecretString};
use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A response body: whole or streamed.
pub type Body = BoxBody<Bytes, Infallible>;
/// What a handler returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = http::Response<Body>> + Send>>;
/// A request handler.
pub type Handler = Arc<dyn Fn(Recorded) -> HandlerFuture + Send + Sync>;

/// A certificate authority that signs server and client certificates.
pub struct Ca {
    pub cert_der: Vec<u8>,
    pub cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    pub fn new(name: &str) -> Self {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        Self {
            cert_der: cert.der().to_vec(),
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A leaf certificate for `names` (DNS names or IPs): (cert PEM, cert DER, key PEM, key DER).
    pub fn leaf(&self, names: &[&str], client: bool) -> Leaf {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        if let Some(cn) = names.first() {
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, *cn);
        }
        params.extended_key_usages = vec![if client {
            ExtendedKeyUsagePurpose::ClientAuth
        } else {
            ExtendedKeyUsagePurpose::ServerAuth
        }];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Leaf {
            cert_pem: cert.pem(),
            cert_der: cert.der().to_vec(),
            key_pem: key.serialize_pem(),
            key_der: key.serialize_der(),
        }
    }
}

pub struct Leaf {
    pub cert_pem: String,
    pub cert_der: Vec<u8>,
    pub key_pem: String,
    pub key_der: Vec<u8>,
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: http::Method,
    pub uri: http::Uri,
    pub headers: http::HeaderMap,
    pub body: Bytes,
    /// The DER of the client certificate, when one was presented.
    pub client_cert: Option<Vec<u8>>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn path_and_query(&self) -> String {
        self.uri
            .path_and_query()
            .map(|pq| pq.to_string())
            .unwrap_or_default()
    }
}

pub struct Options {
    /// Names on the server certificate.
    pub names: Vec<&'static str>,
    /// Require a client certificate signed by the server CA.
    pub require_client_cert: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            names: vec!["127.0.0.1", "localhost"],
            require_client_cert: false,
        }
    }
}

pub struct Fixture {
    pub addr: SocketAddr,
    pub ca: Arc<Ca>,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
    pub connections: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fixture {
    pub async fn start(handler: Handler) -> Self {
        Self::start_with(Options::default(), handler).await
    }

    pub async fn start_with(options: Options, handler: Handler) -> Self {
        let ca = Arc::new(Ca::new("fixture-ca"));
        let leaf = ca.leaf(&options.names, false);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = if options.require_client_cert {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(CertificateDer::from(ca.cert_der.clone()))
                .unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let mut server_config = builder
            .with_single_cert(
                vec![CertificateDer::from(leaf.cert_der.clone())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf.key_der.clone())),
            )
            .unwrap();
        server_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_config));

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let (reqs, conns) = (requests.clone(), connections.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                conns.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                let handler = handler.clone();
                let reqs = reqs.clone();
                tokio::spawn(async move {
                    // A failed handshake (the wrong-CA test) just ends the connection.
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let client_cert = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .map(|c| c.to_vec());
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let handler = handler.clone();
                            let reqs = reqs.clone();
                            let client_cert = client_cert.clone();
                            async move {
                                let (parts, body) = req.into_parts();
                                let body = body
                                    .collect()
                                    .await
                                    .map(|c| c.to_bytes())
                                    .unwrap_or_default();
                                let recorded = Recorded {
                                    method: parts.method,
                                    uri: parts.uri,
                                    headers: parts.headers,
                                    body,
                                    client_cert,
                                };
                                reqs.lock().unwrap().push(recorded.clone());
                                Ok::<_, Infallible>(handler(recorded).await)
                            }
                        },
                    );
                    let _ = hyper_util::server::conn::auto::Builder::new(
                        hyper_util::rt::TokioExecutor::new(),
                    )
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
                });
            }
        });
        Fixture {
            addr,
            ca,
            requests,
            connections,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// A config trusting the fixture's CA, authenticating with `token`.
    pub fn config(&self, token: &str) -> Config {
        let mut config = Config::new(self.url().parse().unwrap());
        config.root_certs = Some(vec![self.ca.cert_der.clone()]);
        config.auth = Auth::Bearer(SecretString::new(token));
        config
    }

    pub fn recorded(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    pub fn last(&self) -> Recorded {
        self.recorded().pop().expect("no request recorded")
    }
}

/// Wraps an async closure as a [`Handler`].
pub fn handler<F, Fut>(f: F) -> Handler
where
    F: Fn(Recorded) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = http::Response<Body>> + Send + 'static,
{
    Arc::new(move |r| Box::pin(f(r)))
}

/// A JSON response.
pub fn json(status: u16, value: serde_json::Value) -> http::Response<Body> {
    http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(value.to_string())).boxed())
        .unwrap()
}

/// A plain-text response.
pub fn text(status: u16, body: &str) -> http::Response<Body> {
    http::Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(body.to_owned())).boxed())
        .unwrap()
}

/// A Status response.
pub fn status(code: u16, reason: &str, message: &str) -> http::Response<Body> {
    json(
        code,
        serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason, "code": code
        }),
    )
}

/// A chunked response that sends each chunk after `delay`.
pub fn streamed(chunks: Vec<Vec<u8>>, delay: Duration) -> http::Response<Body> {
    let stream = futures::stream::iter(chunks).then(move |chunk| async move {
        tokio::time::sleep(delay).await;
        Ok::<_, Infallible>(Frame::data(Bytes::from(chunk)))
    });
    streamed_from(stream)
}

pub fn streamed_from(
    stream: impl Stream<Item = Result<Frame<Bytes>, Infallible>> + Send + Sync + 'static,
) -> http::Response<Body> {
    http::Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(http_body_util::BodyExt::boxed(StreamBody::new(stream)))
        .unwrap()
}

/// Writes an executable shell script into `dir`.
pub fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}
