//! One webhook call on the wire, shared by admission webhooks and CRD
//! conversion webhooks: a JSON POST over HTTPS to a `url`
//! client config, trusting the configuration's `caBundle`, bounded by the
//! webhook's timeout (`?timeout=Ns` on the URL, as kube-apiserver's
//! REST client sends it). Errors read like the Go client's
//! (`Post "URL": context deadline exceeded`), since they reach clients
//! inside kube-apiserver's messages.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http::{header, Method, Request, Uri};
use http_body_util::{BodyExt, Full, Limited};
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
    match tokio::time::timeout(target.timeout, exchange(&target, body)).await {
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
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

async fn exchange(target: &Target, body: Vec<u8>) -> Result<Bytes, String> {
    let uri: Uri = target
        .url
        .parse()
        .map_err(|e| format!("invalid url: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err("webhook URLs must use the https scheme".into());
    }
    let host = uri.host().ok_or("the url has no host")?;
    let port = uri.port_u16().unwrap_or(443);
    let bare_host = host.trim_start_matches('[').trim_end_matches(']');
    let server_name =
        ServerName::try_from(bare_host.to_owned()).map_err(|e| format!("invalid host: {e}"))?;
    let tcp = TcpStream::connect((bare_host, port))
        .await
        .map_err(|e| format!("dial tcp {bare_host}:{port}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let mut config = tls_config(&target.ca_pem)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let request = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::HOST, uri.authority().map_or(host, |a| a.as_str()))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, */*")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let bytes = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
        .collect()
        .await
        .map_err(|e| format!("reading the response: {e}"))?
        .to_bytes();
    if status != http::StatusCode::OK {
        return Err(format!(
            "the server responded with the status code {} but did not return more information",
            status.as_u16()
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

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
