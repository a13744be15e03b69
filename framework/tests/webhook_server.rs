//! The webhook server on the wire, without the API server: HTTPS with the
//! certificate from its directory, reloaded when the files change (and the
//! old pair kept when the new one is broken); every way an admission body
//! can be wrong answered with `allowed: false` and a 400 result (never a
//! panic or a dropped connection); the defaulter's JSON patch as base64
//! `JSONPatch` that keeps fields the type does not know; and `/convert`
//! answering ConversionReviews as kube-apiserver requires, spoke to spoke
//! through the hub, with failures as `result.status: Failure`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use kubeforge::crd::conversion::{ConversionError, Converter, Convertible, Hub};
use kubeforge::manager::CancellationToken;
use kubeforge::testing::LocalWebhooks;
use kubeforge::webhook::{AdmissionRequest, AdmissionResult, Defaulter, Webhooks};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{json, Value};

mod v2 {
    use kubeforge::prelude::*;

    /// The hub: millimetres.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "units.example.com", version = "v2", kind = "Rod", storage)]
    pub struct RodSpec {
        pub millimetres: u64,
    }
}

mod v1 {
    use kubeforge::prelude::*;

    /// A spoke: centimetres.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "units.example.com", version = "v1", kind = "Rod")]
    pub struct RodSpec {
        pub centimetres: u64,
    }
}

mod v3 {
    use kubeforge::prelude::*;

    /// Another spoke: metres, as text.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "units.example.com", version = "v3", kind = "Rod")]
    pub struct RodSpec {
        pub length: String,
    }
}

impl Hub for v2::Rod {}

impl Convertible<v2::Rod> for v1::Rod {
    fn to_hub(&self) -> Result<v2::Rod, ConversionError> {
        Ok(v2::Rod::new(
            "",
            v2::RodSpec {
                millimetres: self.spec.centimetres * 10,
            },
        ))
    }
    fn from_hub(hub: &v2::Rod) -> Result<Self, ConversionError> {
        if hub.spec.millimetres % 10 != 0 {
            return Err(ConversionError::Failed(format!(
                "{} mm is not a whole number of centimetres",
                hub.spec.millimetres
            )));
        }
        // A conversion may change labels: it records where it came from.
        let mut rod = v1::Rod::new(
            "",
            v1::RodSpec {
                centimetres: hub.spec.millimetres / 10,
            },
        );
        rod.metadata.labels = Some([("converted-from".to_owned(), "v2".to_owned())].into());
        // ...and may not change anything else: this is dropped.
        rod.metadata.generation = Some(99);
        Ok(rod)
    }
}

impl Convertible<v2::Rod> for v3::Rod {
    fn to_hub(&self) -> Result<v2::Rod, ConversionError> {
        let metres: f64 = self
            .spec
            .length
            .trim_end_matches('m')
            .parse()
            .map_err(|_| ConversionError::Failed(format!("bad length {:?}", self.spec.length)))?;
        Ok(v2::Rod::new(
            "",
            v2::RodSpec {
                millimetres: (metres * 1000.0).round() as u64,
            },
        ))
    }
    fn from_hub(hub: &v2::Rod) -> Result<Self, ConversionError> {
        Ok(v3::Rod::new(
            "",
            v3::RodSpec {
                length: format!("{}m", hub.spec.millimetres as f64 / 1000.0),
            },
        ))
    }
}

mod cm {
    use kubeforge::prelude::*;

    /// A kind whose Rust type knows `size` only.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "shop.example.com", version = "v1", kind = "Box")]
    pub struct BoxSpec {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub size: Option<i32>,
    }
}

struct Sized;

impl Defaulter<cm::Box> for Sized {
    async fn default(&self, b: &mut cm::Box, _: &AdmissionRequest) -> AdmissionResult {
        b.spec.size.get_or_insert(1);
        Ok(vec![])
    }
}

struct Running {
    addr: SocketAddr,
    stop: CancellationToken,
    serving: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Result<(), kubeforge::webhook::Error>>,
}

async fn start(local: &LocalWebhooks, webhooks: Webhooks) -> Running {
    let serving = Arc::new(AtomicBool::new(false));
    let server = local
        .server_options()
        .cert_poll_interval(Duration::from_millis(20))
        .bind(webhooks, Arc::clone(&serving))
        .await
        .unwrap();
    let addr = server.local_addr();
    assert!(
        !serving.load(Ordering::Acquire),
        "not serving before it runs"
    );
    let stop = CancellationToken::new();
    let task = tokio::spawn(server.run(stop.clone()));
    for _ in 0..100 {
        if serving.load(Ordering::Acquire) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Running {
        addr,
        stop,
        serving,
        task,
    }
}

/// POSTs `body` over a new TLS connection trusting `ca_pem` only.
async fn post(
    addr: SocketAddr,
    ca_pem: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<(StatusCode, Bytes), String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let request = Request::post(path)
        .header("content-type", content_type)
        .header("host", "127.0.0.1")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, body))
}

async fn post_json(addr: SocketAddr, ca: &str, path: &str, body: &Value) -> Value {
    let (status, body) = post(
        addr,
        ca,
        path,
        "application/json",
        serde_json::to_vec(body).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

fn review(object: Value) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-42",
        "kind": {"group": "shop.example.com", "version": "v1", "kind": "Box"},
        "resource": {"group": "shop.example.com", "version": "v1", "resource": "boxes"},
        "namespace": "default", "name": "b", "operation": "CREATE",
        "userInfo": {"username": "admin"}, "dryRun": false, "object": object}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defaulter_patches_are_base64_jsonpatch_that_keep_unknown_fields() {
    let local = LocalWebhooks::generate().unwrap();
    let webhooks = Webhooks::new();
    webhooks.defaulter::<cm::Box, _>(Sized);
    let server = start(&local, webhooks).await;
    let object = json!({"apiVersion": "shop.example.com/v1", "kind": "Box",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": {"colourUnknownToTheType": "teal"}});
    let answer = post_json(
        server.addr,
        local.ca_pem(),
        "/mutate-shop-example-com-v1-box",
        &review(object.clone()),
    )
    .await;
    assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(answer["kind"], "AdmissionReview");
    let response = &answer["response"];
    assert_eq!(response["uid"], "u-42");
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(
            response["patch"]
                .as_str()
                .expect("base64 text, not a number array"),
        )
        .unwrap();
    let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
    let mut patched = object;
    json_patch::patch(&mut patched, &patch).unwrap();
    assert_eq!(
        patched["spec"],
        json!({"colourUnknownToTheType": "teal", "size": 1})
    );

    // Nothing to change: no patch at all.
    let sized = json!({"apiVersion": "shop.example.com/v1", "kind": "Box",
        "metadata": {"name": "b"}, "spec": {"size": 5}});
    let answer = post_json(
        server.addr,
        local.ca_pem(),
        "/mutate-shop-example-com-v1-box",
        &review(sized),
    )
    .await;
    assert_eq!(answer["response"]["allowed"], true);
    assert!(answer["response"].get("patch").is_none());
    assert!(answer["response"].get("patchType").is_none());
    server.stop.cancel();
    server.task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_admission_requests_get_a_400_review_never_a_panic() {
    let local = LocalWebhooks::generate().unwrap();
    let webhooks = Webhooks::new();
    webhooks.defaulter::<cm::Box, _>(Sized);
    let server = start(&local, webhooks).await;
    let path = "/mutate-shop-example-com-v1-box";
    let ca = local.ca_pem();
    let refused = |answer: &Value, needle: &str| {
        let response = &answer["response"];
        assert_eq!(response["allowed"], false, "{answer}");
        assert_eq!(response["status"]["code"], 400, "{answer}");
        let message = response["status"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
    };
    let send = |body: Vec<u8>, content_type: &'static str| async move {
        let (status, body) = post(server.addr, ca, path, content_type, body)
            .await
            .unwrap();
        (status, serde_json::from_slice::<Value>(&body).unwrap())
    };

    let (status, answer) = send(b"{not json".to_vec(), "application/json").await;
    assert_eq!(status, StatusCode::OK);
    refused(&answer, "not an AdmissionReview");

    let wrong_version =
        json!({"apiVersion": "admission.k8s.io/v2", "kind": "AdmissionReview", "request": {}});
    refused(
        &send(
            serde_json::to_vec(&wrong_version).unwrap(),
            "application/json",
        )
        .await
        .1,
        "unsupported AdmissionReview apiVersion \"admission.k8s.io/v2\"",
    );

    let no_request = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"});
    refused(
        &send(serde_json::to_vec(&no_request).unwrap(), "application/json")
            .await
            .1,
        "has no request",
    );

    let mut no_uid = review(json!({}));
    no_uid["request"]["uid"] = json!("");
    refused(
        &send(serde_json::to_vec(&no_uid).unwrap(), "application/json")
            .await
            .1,
        "no uid",
    );

    let mut bad_operation = review(json!({}));
    bad_operation["request"]["operation"] = json!("EXPLODE");
    let answer = send(
        serde_json::to_vec(&bad_operation).unwrap(),
        "application/json",
    )
    .await
    .1;
    refused(&answer, "invalid request");
    assert_eq!(
        answer["response"]["uid"], "u-42",
        "the uid is echoed when known"
    );

    // The object does not decode as the Rust type: a 400 naming the type.
    let wrong_object = review(
        json!({"apiVersion": "shop.example.com/v1", "kind": "Box", "metadata": {}, "spec": {"size": "big"}}),
    );
    refused(
        &send(
            serde_json::to_vec(&wrong_object).unwrap(),
            "application/json",
        )
        .await
        .1,
        "cannot decode the object as",
    );

    refused(
        &send(b"{}".to_vec(), "text/plain").await.1,
        "expected application/json",
    );

    let huge = vec![b' '; kubeforge::webhook::MAX_BODY_BYTES + 1];
    let (status, answer) = send(huge, "application/json").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["response"]["status"]["code"], 413);

    // Unknown paths are 404s; the server still serves afterwards.
    let (status, _) = post(
        server.addr,
        ca,
        "/mutate-nothing",
        "application/json",
        b"{}".to_vec(),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::NOT_FOUND);
    let ok = post_json(
        server.addr,
        ca,
        path,
        &review(
            json!({"apiVersion": "shop.example.com/v1", "kind": "Box", "metadata": {}, "spec": {}}),
        ),
    )
    .await;
    assert_eq!(ok["response"]["allowed"], true);
    server.stop.cancel();
    server.task.await.unwrap().unwrap();
}

fn rod(api_version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": "Rod",
           "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                        "generation": 4, "labels": {"team": "a"}},
           "spec": spec})
}

fn conversion_review(desired: &str, objects: Vec<Value>) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
           "request": {"uid": "conv-1", "desiredAPIVersion": desired, "objects": objects}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn convert_answers_conversion_reviews_as_kube_apiserver_requires() {
    let local = LocalWebhooks::generate().unwrap();
    let webhooks = Webhooks::new();
    webhooks.converter(
        Converter::<v2::Rod>::new()
            .spoke::<v1::Rod>()
            .spoke::<v3::Rod>(),
    );
    assert_eq!(webhooks.conversion_crds(), ["rods.units.example.com"]);
    let server = start(&local, webhooks).await;
    let ca = local.ca_pem();

    // Mixed source versions, spoke to spoke through the hub, in order.
    let objects = vec![
        rod("units.example.com/v3", "a", json!({"length": "1.5m"})),
        rod("units.example.com/v2", "b", json!({"millimetres": 20})),
        rod("units.example.com/v1", "c", json!({"centimetres": 7})),
    ];
    let answer = post_json(
        server.addr,
        ca,
        "/convert",
        &conversion_review("units.example.com/v1", objects.clone()),
    )
    .await;
    assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(answer["kind"], "ConversionReview");
    let response = &answer["response"];
    assert_eq!(response["uid"], "conv-1");
    assert_eq!(response["result"]["status"], "Success");
    let converted = response["convertedObjects"].as_array().unwrap();
    assert_eq!(converted.len(), 3);
    let specs: Vec<_> = converted.iter().map(|o| o["spec"].clone()).collect();
    assert_eq!(
        specs,
        [
            json!({"centimetres": 150}),
            json!({"centimetres": 2}),
            json!({"centimetres": 7})
        ]
    );
    for (out, original) in converted.iter().zip(&objects) {
        assert_eq!(out["apiVersion"], "units.example.com/v1");
        assert_eq!(out["kind"], "Rod");
        let (mut expected, mut got) = (original["metadata"].clone(), out["metadata"].clone());
        // Only labels may change; the rest of the metadata is the original's.
        if original["apiVersion"] != "units.example.com/v1" {
            assert_eq!(got["labels"], json!({"converted-from": "v2"}));
        }
        expected.as_object_mut().unwrap().remove("labels");
        got.as_object_mut().unwrap().remove("labels");
        assert_eq!(got, expected);
    }

    // A refusal: Failure with the conversion's message as is (as
    // controller-runtime answers with err.Error()); nothing converted.
    let answer = post_json(
        server.addr,
        ca,
        "/convert",
        &conversion_review(
            "units.example.com/v1",
            vec![
                rod("units.example.com/v2", "ok", json!({"millimetres": 10})),
                rod("units.example.com/v2", "odd", json!({"millimetres": 3})),
            ],
        ),
    )
    .await;
    let response = &answer["response"];
    assert_eq!(response["uid"], "conv-1");
    assert_eq!(response["result"]["status"], "Failure");
    assert_eq!(
        response["result"]["message"],
        "3 mm is not a whole number of centimetres"
    );
    assert_eq!(response["convertedObjects"], json!([]));

    // Unknown versions and kinds, a wrong review version, bad JSON.
    let unknown = post_json(
        server.addr,
        ca,
        "/convert",
        &conversion_review(
            "units.example.com/v9",
            vec![rod("units.example.com/v1", "x", json!({"centimetres": 1}))],
        ),
    )
    .await;
    assert_eq!(unknown["response"]["result"]["status"], "Failure");
    assert!(unknown["response"]["result"]["message"]
        .as_str()
        .unwrap()
        .contains("v9"));
    let mut other_kind = rod("units.example.com/v1", "x", json!({}));
    other_kind["kind"] = json!("Bar");
    let other = post_json(
        server.addr,
        ca,
        "/convert",
        &conversion_review("units.example.com/v2", vec![other_kind]),
    )
    .await;
    assert!(other["response"]["result"]["message"]
        .as_str()
        .unwrap()
        .contains("no conversion is registered for Bar"));
    let mut v1beta1 = conversion_review("units.example.com/v2", vec![]);
    v1beta1["apiVersion"] = json!("apiextensions.k8s.io/v1beta1");
    let answer = post_json(server.addr, ca, "/convert", &v1beta1).await;
    assert_eq!(answer["response"]["result"]["status"], "Failure");
    let (status, body) = post(
        server.addr,
        ca,
        "/convert",
        "application/json",
        b"[1,2".to_vec(),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK);
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert!(body["response"]["result"]["message"]
        .as_str()
        .unwrap()
        .contains("not a ConversionReview"));
    server.stop.cancel();
    server.task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_certificate_is_reloaded_when_its_files_change() {
    let first = LocalWebhooks::generate().unwrap();
    let second = LocalWebhooks::generate().unwrap();
    let webhooks = Webhooks::new();
    webhooks.defaulter::<cm::Box, _>(Sized);
    let server = start(&first, webhooks).await;
    assert!(server.serving.load(Ordering::Acquire));
    let path = "/mutate-nothing";
    let reach = |ca: String| async move {
        post(server.addr, &ca, path, "application/json", b"{}".to_vec()).await
    };
    assert!(reach(first.ca_pem().to_owned()).await.is_ok());
    assert!(
        reach(second.ca_pem().to_owned()).await.is_err(),
        "signed by the first CA only"
    );

    // A broken key is not loaded: the first pair stays.
    let key = first.cert_dir().join("tls.key");
    std::fs::write(
        &key,
        "-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        reach(first.ca_pem().to_owned()).await.is_ok(),
        "the previous pair is kept"
    );

    // The second pair, written in place: served from the next poll on.
    for name in ["tls.crt", "tls.key"] {
        std::fs::copy(second.cert_dir().join(name), first.cert_dir().join(name)).unwrap();
    }
    let mut switched = false;
    for _ in 0..100 {
        if reach(second.ca_pem().to_owned()).await.is_ok() {
            switched = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(switched, "the new certificate is served");
    assert!(reach(first.ca_pem().to_owned()).await.is_err());
    server.stop.cancel();
    server.task.await.unwrap().unwrap();
    assert!(!server.serving.load(Ordering::Acquire));
}

#[tokio::test]
async fn a_missing_certificate_fails_the_start_naming_the_file() {
    let webhooks = Webhooks::new();
    let dir = std::env::temp_dir().join(format!("kubeforge-no-certs-{}", std::process::id()));
    let server = kubeforge::webhook::WebhookServerOptions::default()
        .host("127.0.0.1".parse().unwrap())
        .port(0)
        .cert_dir(&dir)
        .bind(webhooks, Arc::new(AtomicBool::new(false)))
        .await
        .unwrap();
    let error = server.run(CancellationToken::new()).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains(&dir.join("tls.crt").display().to_string()),
        "{text}"
    );
}
