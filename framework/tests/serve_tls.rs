//! The HTTPS side of `kubeforge::serve`, the home the probe server shares
//! with the webhook server: a server given a rustls configuration answers
//! HTTP/2 when ALPN agrees on it and HTTP/1.1 otherwise, over real TLS on
//! 127.0.0.1 to a client that trusts only the test CA; a connection that
//! fails its handshake does not disturb the others; and it stops as the
//! plain server does.

mod client_support;

use std::sync::Arc;
use std::time::Duration;

use client_support::Ca;
use kubeforge::manager::CancellationToken;
use kubeforge::serve::{Bytes, Full, Incoming, Request, Response, Server, ServerConfig};
use kubeforge::{Client, Config};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

/// A server configuration for a leaf of `ca` naming 127.0.0.1, offering
/// `alpn`.
fn tls_config(ca: &Ca, alpn: &[&[u8]]) -> Arc<ServerConfig> {
    let leaf = ca.leaf(&["127.0.0.1"], false);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(leaf.cert_der)],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf.key_der)),
        )
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// Answers with the HTTP version and the path it was asked.
async fn echo(request: Request<Incoming>) -> Response<Full<Bytes>> {
    let text = format!("{:?} {}", request.version(), request.uri().path());
    Response::new(Full::new(Bytes::from(text)))
}

fn client_for(server: &Server, ca: &Ca) -> Client {
    let url = format!("https://{}", server.local_addr());
    let mut config = Config::new(url.parse().unwrap());
    config.root_certs = Some(vec![ca.cert_der.clone()]);
    Client::try_from(config).unwrap()
}

async fn get(client: &Client, path: &str) -> String {
    let request = http::Request::get(path).body(Vec::new()).unwrap();
    client.request_text(request).await.expect("an answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_alpn_serves_http2_and_survives_a_failed_handshake() {
    let ca = Ca::new("serve-test-ca");
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), echo)
        .await
        .unwrap()
        .with_tls(tls_config(&ca, &[b"h2", b"http/1.1"]));
    assert!(server.is_tls());
    let addr = server.local_addr();
    let client = client_for(&server, &ca);
    let stop = CancellationToken::new();
    let task = server.spawn(stop.clone());

    assert_eq!(get(&client, "/convert").await, "HTTP/2.0 /convert");

    // Plain HTTP on the HTTPS port: that connection's handshake fails...
    let mut plain = TcpStream::connect(addr).await.unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    drop(plain);
    // ...and the server goes on serving.
    assert_eq!(get(&client, "/validate").await, "HTTP/2.0 /validate");

    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the server stops")
        .unwrap()
        .unwrap();
    assert!(TcpStream::connect(addr).await.is_err(), "nobody listens");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_without_h2_in_alpn_serves_http1() {
    let ca = Ca::new("serve-test-ca");
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), echo)
        .await
        .unwrap()
        .with_tls(tls_config(&ca, &[b"http/1.1"]));
    let client = client_for(&server, &ca);
    let stop = CancellationToken::new();
    let task = server.spawn(stop.clone());
    assert_eq!(get(&client, "/mutate").await, "HTTP/1.1 /mutate");
    stop.cancel();
    task.await.unwrap().unwrap();
}
