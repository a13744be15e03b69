//! A small HTTPS admission and conversion webhook for the server's tests,
//! written against the AdmissionReview and ConversionReview wire formats
//! directly (not the framework's webhook server, so the two sides cannot
//! share a bug): its own CA and serving certificate for 127.0.0.1, one
//! scripted answer per path, and every review it receives recorded.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{json, Value};

/// What a path answers.
#[derive(Clone)]
pub enum Answer {
    /// Allowed, with these warnings.
    Allow(Vec<&'static str>),
    /// Allowed with a JSONPatch, base64-encoded as the API defines it.
    Patch(Value),
    /// Allowed with a JSONPatch sent as a number array (kube-rs' form).
    PatchAsNumbers(Value),
    /// Denied with this `status`.
    Deny(Value),
    /// Answers after a delay.
    Slow(Duration),
    /// A body that is not an AdmissionReview.
    Garbage,
    /// A ConversionReview answered this way.
    Convert(Convert),
}

/// How a conversion is answered. Widgets are `spec.size` at v1 and
/// `spec.replicas` at v2.
#[derive(Clone, Copy, Debug)]
pub enum Convert {
    /// Converted correctly.
    Rename,
    /// Converted, with another uid.
    WrongUid,
    /// `result.status: Failure` with this message.
    Failure(&'static str),
    /// One object fewer than sent.
    TooFew,
    /// The objects back at the version they came at.
    SameVersion,
    /// Converted, each renamed.
    Renamed,
    /// Converted, with a label added and other metadata changed (which
    /// must not survive).
    Relabel,
    /// Converted, with a label value kube-apiserver refuses.
    BadLabel,
    /// HTTP 500 with an empty body.
    ServerError,
}

/// The running webhook.
pub struct Webhook {
    pub port: u16,
    /// The CA, PEM, base64-encoded for `caBundle`.
    pub ca_bundle: String,
    answers: Arc<Mutex<HashMap<String, Answer>>>,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
    connections: Arc<AtomicUsize>,
}

impl Webhook {
    pub async fn start() -> Self {
        let ca_key = KeyPair::generate().expect("key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).expect("CA");
        let issuer = Issuer::new(ca_params, ca_key);
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
        params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &issuer).expect("cert");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let answers: Arc<Mutex<HashMap<String, Answer>>> = Arc::default();
        let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let (a, s) = (answers.clone(), seen.clone());
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = connections.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                let (a, s) = (a.clone(), s.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req| {
                        let (a, s) = (a.clone(), s.clone());
                        async move { Ok::<_, Infallible>(answer(req, &a, &s).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self {
            port,
            ca_bundle: base64::engine::general_purpose::STANDARD.encode(ca.pem()),
            answers,
            seen,
            connections,
        }
    }

    /// The TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Scripts what `path` answers.
    pub fn on(&self, path: &str, answer: Answer) {
        self.answers
            .lock()
            .expect("answers")
            .insert(path.to_owned(), answer);
    }

    /// `https://127.0.0.1:PORT/path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The requests `path` received (`request` of each review), with the
    /// query string each came with.
    pub fn seen(&self, path: &str) -> Vec<(String, Value)> {
        self.seen
            .lock()
            .expect("seen")
            .iter()
            .filter(|(p, _)| p.split('?').next() == Some(path))
            .cloned()
            .collect()
    }
}

async fn answer(
    req: Request<Incoming>,
    answers: &Mutex<HashMap<String, Answer>>,
    seen: &Mutex<Vec<(String, Value)>>,
) -> Response<Full<Bytes>> {
    let path_and_query = req
        .uri()
        .path_and_query()
        .map_or(String::new(), |p| p.as_str().to_owned());
    let path = req.uri().path().to_owned();
    let body = req.into_body().collect().await.map(|b| b.to_bytes());
    let review: Value = body
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    let request = review.get("request").cloned().unwrap_or(Value::Null);
    let conversion_review_version = (review["kind"] == "ConversionReview")
        .then(|| review["apiVersion"].as_str().unwrap_or("").to_owned());
    seen.lock()
        .expect("seen")
        .push((path_and_query, request.clone()));
    let scripted = answers.lock().expect("answers").get(&path).cloned();
    let uid = request.get("uid").cloned().unwrap_or(Value::Null);
    if let Some(api_version) = conversion_review_version {
        let mode = match scripted {
            Some(Answer::Convert(mode)) => mode,
            _ => Convert::Rename,
        };
        return convert(&api_version, &request, mode);
    }
    let mut response = json!({"uid": uid, "allowed": true});
    match scripted.unwrap_or(Answer::Allow(Vec::new())) {
        Answer::Allow(warnings) => response["warnings"] = json!(warnings),
        Answer::Patch(ops) => {
            let bytes = serde_json::to_vec(&ops).expect("patch");
            response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(bytes));
            response["patchType"] = json!("JSONPatch");
        }
        Answer::PatchAsNumbers(ops) => {
            response["patch"] = json!(serde_json::to_vec(&ops).expect("patch"));
            response["patchType"] = json!("JSONPatch");
        }
        Answer::Deny(status) => {
            response["allowed"] = json!(false);
            response["status"] = status;
        }
        Answer::Slow(delay) => tokio::time::sleep(delay).await,
        Answer::Garbage => return Response::new(Full::new(Bytes::from_static(b"{\"x\":1}"))),
        Answer::Convert(_) => {}
    }
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": response,
    });
    let mut resp = Response::new(Full::new(Bytes::from(
        serde_json::to_vec(&review).expect("review"),
    )));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

/// One widget converted to `desired`: `spec.size` (v1) and
/// `spec.replicas` (v2) are the same field.
pub fn convert_widget(object: &Value, desired: &str) -> Value {
    let mut out = object.clone();
    out["apiVersion"] = json!(desired);
    if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
        let (from, to) = if desired.ends_with("/v2") {
            ("size", "replicas")
        } else {
            ("replicas", "size")
        };
        if let Some(v) = spec.remove(from) {
            spec.insert(to.to_owned(), v);
        }
    }
    out
}

fn convert(review_version: &str, request: &Value, mode: Convert) -> Response<Full<Bytes>> {
    if let Convert::ServerError = mode {
        let mut resp = Response::new(Full::new(Bytes::new()));
        *resp.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
        return resp;
    }
    let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let mut converted: Vec<Value> = objects
        .iter()
        .map(|o| match mode {
            Convert::SameVersion => o.clone(),
            _ => convert_widget(o, desired),
        })
        .collect();
    for o in &mut converted {
        match mode {
            Convert::Renamed => o["metadata"]["name"] = json!("renamed"),
            Convert::Relabel => {
                o["metadata"]["labels"]["converted"] = json!("yes");
                o["metadata"]["resourceVersion"] = json!("12345");
                o["metadata"]["finalizers"] = json!(["example.com/sneaky"]);
            }
            Convert::BadLabel => o["metadata"]["labels"] = json!({"converted": "-no-"}),
            _ => {}
        }
    }
    if let Convert::TooFew = mode {
        converted.pop();
    }
    let uid = match mode {
        Convert::WrongUid => json!("not-the-request-uid"),
        _ => request["uid"].clone(),
    };
    let result = match mode {
        Convert::Failure(message) => json!({"status": "Failure", "message": message}),
        _ => json!({"status": "Success"}),
    };
    let review = json!({
        "apiVersion": review_version,
        "kind": "ConversionReview",
        "response": {"uid": uid, "convertedObjects": converted, "result": result},
    });
    let mut resp = Response::new(Full::new(Bytes::from(
        serde_json::to_vec(&review).expect("review"),
    )));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}
