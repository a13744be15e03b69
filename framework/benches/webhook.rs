//! Admission webhooks end to end, against the in-process API server and
//! the manager's webhook server (both in this process, sharing the cores):
//!
//! - **direct round trips per second**: AdmissionReviews POSTed to the
//!   framework's webhook server over one HTTPS keep-alive connection (a
//!   typed defaulter computing its JSON patch), one at a time;
//! - **creates per second through the API server** with one mutating and
//!   one validating webhook (each create is two HTTPS calls from the
//!   server, on connections the server keeps alive between calls), and
//!   without;
//! - **added latency** of those two webhooks on one create: p50 / p99 of
//!   sequential creates with them minus without.
//!
//! Run with `cargo bench -p kubeforge --bench webhook`
//! (`WEBHOOK_BENCH_REQUESTS=500` for a quicker run).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use kube_core::params::PostParams;
use kubeforge::manager::CancellationToken;
use kubeforge::testing::{ApiServer, ApiServerExt, LocalWebhooks};
use kubeforge::webhook::{AdmissionRequest, AdmissionResult, Defaulter, Validator};
use kubeforge::{Api, Manager};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::json;

mod v1 {
    use kubeforge::prelude::*;

    /// A gadget with an optional size.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "bench.example.com", version = "v1", kind = "Gadget")]
    pub struct GadgetSpec {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub size: Option<i32>,
    }
}
use v1::Gadget;

struct Hooks;

impl Defaulter<Gadget> for Hooks {
    async fn default(&self, gadget: &mut Gadget, _: &AdmissionRequest) -> AdmissionResult {
        gadget.spec.size.get_or_insert(3);
        Ok(vec![])
    }
}

impl Validator<Gadget> for Hooks {
    async fn validate_create(&self, gadget: &Gadget, _: &AdmissionRequest) -> AdmissionResult {
        if gadget.spec.size.unwrap_or_default() > 100 {
            return Err(kubeforge::webhook::Denial::forbidden("too big"));
        }
        Ok(vec![])
    }
}

fn requests() -> usize {
    std::env::var("WEBHOOK_BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

async fn direct_round_trips(addr: std::net::SocketAddr, ca_pem: &str, n: usize) -> f64 {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("CA")).expect("CA");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").expect("name"), tcp)
        .await
        .expect("TLS");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .expect("HTTP");
    tokio::spawn(conn);
    let body = serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "bench", "operation": "CREATE",
            "kind": {"group": "bench.example.com", "version": "v1", "kind": "Gadget"},
            "resource": {"group": "bench.example.com", "version": "v1", "resource": "gadgets"},
            "name": "g", "namespace": "default", "userInfo": {"username": "bench"}, "dryRun": false,
            "object": {"apiVersion": "bench.example.com/v1", "kind": "Gadget",
                       "metadata": {"name": "g", "namespace": "default"}, "spec": {}}}
    }))
    .expect("JSON");
    let body = Bytes::from(body);
    let started = Instant::now();
    for _ in 0..n {
        let request = http::Request::post("/mutate-bench-example-com-v1-gadget")
            .header("content-type", "application/json")
            .header("host", "127.0.0.1")
            .body(Full::new(body.clone()))
            .expect("request");
        sender.ready().await.expect("connection ready");
        let response = sender.send_request(request).await.expect("answer");
        let answer = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        assert!(answer.windows(7).any(|w| w == b"\"patch\""), "a patch");
    }
    n as f64 / started.elapsed().as_secs_f64()
}

async fn creates(api: &Api<Gadget>, prefix: &str, n: usize) -> (f64, Vec<Duration>) {
    let mut latencies = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n {
        let gadget = Gadget::new(&format!("{prefix}-{i}"), v1::GadgetSpec { size: None });
        let t = Instant::now();
        api.create(&PostParams::default(), &gadget)
            .await
            .expect("create");
        latencies.push(t.elapsed());
    }
    let rate = n as f64 / started.elapsed().as_secs_f64();
    latencies.sort();
    (rate, latencies)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n = requests();
    let server = ApiServer::start().await.expect("server");
    server.install_crd_for::<Gadget>().expect("CRD");
    let client = server.client().expect("client");
    let api: Api<Gadget> = Api::namespaced(client.clone(), "default");

    // Without webhooks first.
    let (plain_rate, plain) = creates(&api, "plain", n).await;

    let local = LocalWebhooks::generate().expect("certificates");
    let mgr = Manager::builder()
        .client(client.clone())
        .metrics_bind_address("0")
        .health_probe_bind_address("0")
        .webhook_server(local.server_options())
        .build()
        .await
        .expect("manager");
    mgr.webhooks()
        .defaulter::<Gadget, _>(Hooks)
        .validator::<Gadget, _>(Hooks);
    local.install(&mgr).await.expect("configurations");
    let addr = mgr.webhook_address().expect("address");
    let stop = CancellationToken::new();
    let running = tokio::spawn(mgr.run_until(stop.clone()));
    // The server serves once the manager has started its servers group.
    while api
        .create(
            &PostParams::default(),
            &Gadget::new("warm", v1::GadgetSpec { size: None }),
        )
        .await
        .is_err()
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let direct = direct_round_trips(addr, local.ca_pem(), n).await;
    let (hooked_rate, hooked) = creates(&api, "hooked", n).await;

    println!("webhook bench: {n} requests each");
    println!("  direct admission round trips (1 keep-alive HTTPS connection): {direct:.0}/s");
    println!("  creates through the API server without webhooks: {plain_rate:.0}/s");
    println!("  creates through the API server with 1 mutating + 1 validating webhook: {hooked_rate:.0}/s");
    for (label, p) in [("p50", 0.5), ("p99", 0.99)] {
        let (a, b) = (percentile(&plain, p), percentile(&hooked, p));
        println!(
            "  create latency {label}: {:.0} us without, {:.0} us with; added {:.0} us",
            a.as_secs_f64() * 1e6,
            b.as_secs_f64() * 1e6,
            (b.as_secs_f64() - a.as_secs_f64()) * 1e6
        );
    }
    stop.cancel();
    running.await.expect("manager task").expect("manager");
    server.shutdown().await;
}
