//! The probe and metrics server over real HTTP on 127.0.0.1: status codes,
//! kube-apiserver's verbose check listing, single checks, excludes, the
//! OpenMetrics text of `/metrics` (parsed line by line), methods, unknown
//! paths, bind errors and graceful shutdown.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Empty};
use hyper_util::rt::TokioIo;
use kubeforge::manager::leader_election::LeaderElectionMetrics;
use kubeforge::manager::probes::{
    DEFAULT_METRICS_ADDRESS, DEFAULT_PROBE_ADDRESS, OPENMETRICS_CONTENT_TYPE,
};
use kubeforge::manager::{CancellationToken, Endpoints, Error, HttpServer, Probes};
use kubeforge::workqueue::{PrometheusMetricsProvider, WorkQueue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use tokio::io::AsyncReadExt as _;
use tokio::net::TcpStream;

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

async fn call(addr: SocketAddr, method: Method, path: &str) -> Reply {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

async fn get(addr: SocketAddr, path: &str) -> Reply {
    call(addr, Method::GET, path).await
}

async fn serve(endpoints: Endpoints) -> (SocketAddr, CancellationToken) {
    let shutdown = CancellationToken::new();
    let server = HttpServer::bind("127.0.0.1:0".parse().unwrap(), endpoints)
        .await
        .unwrap();
    let addr = server.local_addr();
    server.spawn(shutdown.clone());
    (addr, shutdown)
}

#[test]
fn default_addresses_are_loopback_on_controller_runtime_ports() {
    assert!(DEFAULT_PROBE_ADDRESS.ip().is_loopback());
    assert_eq!(DEFAULT_PROBE_ADDRESS.port(), 8081);
    assert!(DEFAULT_METRICS_ADDRESS.ip().is_loopback());
    assert_eq!(DEFAULT_METRICS_ADDRESS.port(), 8080);
}

#[tokio::test]
async fn healthz_and_readyz_follow_named_checks() {
    let probes = Probes::new();
    let synced = Arc::new(AtomicBool::new(false));
    let s = synced.clone();
    probes
        .add_readyz_check("informers", move || {
            if s.load(Ordering::Acquire) {
                Ok(())
            } else {
                Err("cache for apps/v1 Deployment not synced")
            }
        })
        .unwrap();
    probes
        .add_readyz_check("webhook", || Ok::<(), &str>(()))
        .unwrap();
    let (addr, _shutdown) = serve(Endpoints::new().with_probes(probes.clone())).await;

    // No liveness checks: the built-in ping.
    let r = get(addr, "/healthz").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, "ok");
    assert_eq!(r.headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(r.headers["x-content-type-options"], "nosniff");
    assert_eq!(
        get(addr, "/healthz?verbose").await.body,
        "[+]ping ok\nhealthz check passed\n"
    );
    assert_eq!(get(addr, "/healthz/ping").await.status, StatusCode::OK);

    // Not ready: 500, always verbose, the failing check named, its reason
    // withheld from the aggregate.
    let r = get(addr, "/readyz").await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        r.body,
        "[-]informers failed: reason withheld\n[+]webhook ok\nreadyz check failed\n"
    );
    // The single-check endpoint says why.
    let r = get(addr, "/readyz/informers").await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        r.body,
        "internal server error: cache for apps/v1 Deployment not synced\n"
    );
    assert_eq!(get(addr, "/readyz/webhook").await.body, "ok");
    assert_eq!(
        get(addr, "/readyz/nope").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(get(addr, "/readyz/a/b").await.status, StatusCode::NOT_FOUND);
    let r = get(addr, "/readyz?exclude=informers").await;
    assert_eq!(r.status, StatusCode::OK);

    // Ready.
    synced.store(true, Ordering::Release);
    let r = get(addr, "/readyz").await;
    assert_eq!((r.status, r.body.as_str()), (StatusCode::OK, "ok"));
    let r = get(addr, "/readyz/?verbose=true").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body,
        "[+]informers ok\n[+]webhook ok\nreadyz check passed\n"
    );

    // Checks added while serving are served.
    probes
        .healthz()
        .add_async("deadlock", || async { Err::<(), _>("worker stuck") })
        .unwrap();
    let r = get(addr, "/healthz").await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        r.body,
        "[-]deadlock failed: reason withheld\nhealthz check failed\n"
    );
    assert_eq!(
        get(addr, "/healthz/ping").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn only_get_and_head_are_served_and_unknown_paths_are_404() {
    let (addr, _shutdown) = serve(Endpoints::new().with_probes(Probes::new())).await;
    let r = call(addr, Method::POST, "/healthz").await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.headers["allow"], "GET, HEAD");
    let r = call(addr, Method::HEAD, "/readyz").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, "");
    for path in ["/", "/healthzx", "/metrics", "/livez"] {
        let r = get(addr, path).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(r.body, "404 page not found\n");
    }
}

#[tokio::test]
async fn metrics_are_openmetrics_text_that_parses() {
    let mut registry = Registry::default();
    let reconciles: Counter = Counter::default();
    registry.register(
        "example_reconciles",
        "Reconciles with a \"quoted\" help text",
        reconciles.clone(),
    );
    let queue_metrics = PrometheusMetricsProvider::new();
    queue_metrics.register(&mut registry);
    let election = LeaderElectionMetrics::new();
    election.register(&mut registry);
    let registry = Arc::new(RwLock::new(registry));
    let (addr, _shutdown) = serve(Endpoints::new().with_metrics(registry.clone())).await;

    let queue: WorkQueue<String> = WorkQueue::builder()
        .name("memcached")
        .metrics(Arc::new(queue_metrics))
        .build();
    queue.add("default/a".into());
    queue.add("default/b".into());
    reconciles.inc_by(3);

    let r = get(addr, "/metrics").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers["content-type"], OPENMETRICS_CONTENT_TYPE);
    assert_eq!(
        OPENMETRICS_CONTENT_TYPE,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let families = parse_openmetrics(&r.body);
    let reconciles = &families["example_reconciles"];
    assert_eq!(reconciles.kind, "counter");
    assert_eq!(
        reconciles.samples,
        [("example_reconciles_total".to_owned(), String::new(), 3.0)]
    );
    let depth = &families["workqueue_depth"];
    assert_eq!(depth.kind, "gauge");
    assert!(
        depth
            .samples
            .iter()
            .any(|(_, labels, v)| labels.contains("name=\"memcached\"") && *v == 2.0),
        "{:?}",
        depth.samples
    );
    let adds = &families["workqueue_adds"];
    assert!(adds
        .samples
        .iter()
        .any(|(n, _, v)| n == "workqueue_adds_total" && *v == 2.0));
    let latency = &families["workqueue_queue_duration_seconds"];
    assert_eq!(latency.kind, "histogram");

    // A family registered after the server started is served too.
    let late: Counter = Counter::default();
    registry
        .write()
        .unwrap()
        .register("late", "Registered while serving", late.clone());
    late.inc();
    let families = parse_openmetrics(&get(addr, "/metrics").await.body);
    assert_eq!(families["late"].samples[0].2, 1.0);

    // A metrics-only server has no probes.
    assert_eq!(get(addr, "/healthz").await.status, StatusCode::NOT_FOUND);
}

#[derive(Debug, Default)]
struct Family {
    kind: String,
    samples: Vec<(String, String, f64)>,
}

/// A strict-enough OpenMetrics text parser: every line is a HELP, TYPE or
/// UNIT comment for a declared family, or a sample of the family declared
/// last whose name is the family name plus an allowed suffix, with a label
/// set and a float value; the exposition ends with `# EOF`.
fn parse_openmetrics(text: &str) -> BTreeMap<String, Family> {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut current: Option<String> = None;
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    assert_eq!(
        lines.last(),
        Some(&"# EOF"),
        "the exposition ends with # EOF"
    );
    for line in &lines[..lines.len() - 1] {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (keyword, name) = (parts.next().unwrap(), parts.next().unwrap());
            let value = parts.next().unwrap_or_default();
            match keyword {
                "HELP" => assert!(!value.contains('\n')),
                "TYPE" => {
                    assert!(
                        [
                            "counter",
                            "gauge",
                            "histogram",
                            "summary",
                            "info",
                            "stateset",
                            "unknown",
                            "gaugehistogram"
                        ]
                        .contains(&value),
                        "{line}"
                    );
                    families.entry(name.to_owned()).or_default().kind = value.to_owned();
                    current = Some(name.to_owned());
                }
                "UNIT" => {}
                other => panic!("unexpected comment {other:?} in {line:?}"),
            }
            continue;
        }
        let family = current
            .as_ref()
            .unwrap_or_else(|| panic!("sample before TYPE: {line}"));
        let (name_and_labels, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("bad value in {line:?}")),
        };
        let (name, labels) = match name_and_labels.split_once('{') {
            Some((name, labels)) => {
                let labels = labels.strip_suffix('}').unwrap_or_else(|| panic!("{line}"));
                for pair in split_labels(labels) {
                    let (k, v) = pair.split_once('=').unwrap();
                    assert!(
                        k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                        "{line}"
                    );
                    assert!(
                        v.starts_with('"') && v.ends_with('"') && v.len() >= 2,
                        "{line}"
                    );
                }
                (name, labels.to_owned())
            }
            None => (name_and_labels, String::new()),
        };
        let suffix = name
            .strip_prefix(family.as_str())
            .unwrap_or_else(|| panic!("sample {name} outside its family {family}"));
        assert!(
            ["", "_total", "_created", "_bucket", "_count", "_sum", "_info"].contains(&suffix),
            "{line}"
        );
        families
            .get_mut(family)
            .unwrap()
            .samples
            .push((name.to_owned(), labels, value));
    }
    families
}

/// Splits `a="x",b="y,z"` on the commas between pairs.
fn split_labels(labels: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in labels.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&labels[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < labels.len() {
        out.push(&labels[start..]);
    }
    out
}

#[tokio::test]
async fn binding_a_taken_port_names_the_address() {
    let first = HttpServer::bind("127.0.0.1:0".parse().unwrap(), Endpoints::new())
        .await
        .unwrap();
    let taken = first.local_addr();
    let err = HttpServer::bind(taken, Endpoints::new()).await.unwrap_err();
    assert!(matches!(err, Error::Bind { address, .. } if address == taken));
    assert!(err.to_string().contains(&taken.to_string()), "{err}");
}

#[tokio::test]
async fn shutdown_finishes_requests_in_flight_then_stops_listening() {
    let probes = Probes::new();
    probes
        .readyz()
        .add_async("slow", || async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok::<(), &str>(())
        })
        .unwrap();
    let shutdown = CancellationToken::new();
    let server = HttpServer::bind(
        "127.0.0.1:0".parse().unwrap(),
        Endpoints::new().with_probes(probes),
    )
    .await
    .unwrap();
    let addr = server.local_addr();
    let task = server.spawn(shutdown.clone());

    // An idle keep-alive connection, and a request in flight.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let in_flight = tokio::spawn(async move { get(addr, "/readyz").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    shutdown.cancel();

    let r = in_flight.await.unwrap();
    assert_eq!((r.status, r.body.as_str()), (StatusCode::OK, "ok"));
    tokio::time::timeout(Duration::from_secs(3), task)
        .await
        .expect("the server stops well within its drain timeout")
        .unwrap()
        .unwrap();
    // The idle connection was closed and nobody listens any more.
    let mut buf = [0u8; 16];
    assert_eq!(idle.read(&mut buf).await.unwrap_or(0), 0);
    assert!(TcpStream::connect(addr).await.is_err());
}
