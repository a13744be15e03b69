//! Authentication and authorization on the wire: every identity kind
//! (admin, token users, client certificates, service-account tokens,
//! anonymous), RBAC decisions and their 403s, the bootstrap roles, access
//! reviews, impersonation and escalation checks.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

#[path = "../common/mod.rs"]
mod common;

mod audit;
mod authn;
mod authz;
mod guards;
mod reviews;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use kubeforge_apiserver::{ApiServer, Credentials};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;

use common::{Kube, Resp};

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// A client speaking as one identity: a bearer token, a client
/// certificate, or nothing.
pub struct As {
    client: Client<Https, Full<Bytes>>,
    base: String,
    token: Option<String>,
    headers: Vec<(String, String)>,
}

fn tls(server: &ApiServer, cert: Option<(&str, &str)>) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(server.ca_der().to_vec()))
        .unwrap();
    let b = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    match cert {
        Some((cert, key)) => {
            let chain = vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()];
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
            b.with_client_auth_cert(chain, key).unwrap()
        }
        None => b.with_no_client_auth(),
    }
}

impl As {
    fn with(server: &ApiServer, token: Option<String>, cert: Option<(&str, &str)>) -> Self {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls(server, cert))
            .https_only()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        Self {
            client: Client::builder(TokioExecutor::new()).build(https),
            base: server.url().to_string().trim_end_matches('/').to_owned(),
            token,
            headers: Vec::new(),
        }
    }

    /// Speaks with `creds` (token or certificate).
    pub fn creds(server: &ApiServer, creds: &Credentials) -> Self {
        Self::with(
            server,
            creds.bearer_token().map(str::to_owned),
            creds.client_certificate(),
        )
    }

    /// Sends `token` as the bearer token.
    pub fn token(server: &ApiServer, token: &str) -> Self {
        Self::with(server, Some(token.to_owned()), None)
    }

    /// Sends no credential.
    pub fn nobody(server: &ApiServer) -> Self {
        Self::with(server, None, None)
    }

    /// Adds a header to every request (impersonation).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sends one request and reads the whole answer.
    pub async fn send(&self, method: &str, path: &str, body: Option<Value>) -> Resp {
        self.send_as(method, path, body, "application/json").await
    }

    /// A server-side apply of `body` to `path` by field manager `test`.
    pub async fn apply(&self, path: &str, body: Value) -> Resp {
        let path = format!("{path}?fieldManager=test");
        self.send_as("PATCH", &path, Some(body), "application/apply-patch+yaml")
            .await
    }

    /// [`send`](Self::send) with a body of media type `content_type`.
    pub async fn send_as(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        content_type: &str,
    ) -> Resp {
        let mut b = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        for (k, v) in &self.headers {
            b = b.header(k.as_str(), v.as_str());
        }
        let body = match body {
            Some(v) => {
                b = b.header("content-type", content_type);
                Bytes::from(v.to_string())
            }
            None => Bytes::new(),
        };
        let req = b.body(Full::new(body)).unwrap();
        let resp = tokio::time::timeout(Duration::from_secs(20), self.client.request(req))
            .await
            .expect("in time")
            .expect("request");
        let status = resp.status();
        let headers = resp.headers().clone();
        let version = resp.version();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        Resp {
            status,
            headers,
            version,
            body,
        }
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> Resp {
        self.send("GET", path, None).await
    }

    /// `POST path` with a JSON body.
    pub async fn post(&self, path: &str, body: Value) -> Resp {
        self.send("POST", path, Some(body)).await
    }
}

/// Asserts `resp` is kube-apiserver's 401.
pub fn assert_unauthorized(resp: &Resp) {
    assert_eq!(resp.code(), 401, "{}", String::from_utf8_lossy(&resp.body));
    let s = resp.json();
    assert_eq!(s["kind"], "Status");
    assert_eq!(s["status"], "Failure");
    assert_eq!(s["message"], "Unauthorized");
    assert_eq!(s["reason"], "Unauthorized");
    assert_eq!(s["code"], 401);
}
