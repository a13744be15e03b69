//! The manager's webhook server called by the in-process API server, as
//! kube-apiserver calls it: `LocalWebhooks` writes the configurations
//! (generated from the registered webhooks, `url` + test CA as
//! `caBundle`), then creates through the API server are defaulted by a
//! typed `Defaulter` (JSON patch computed by the framework), denied by a
//! typed `Validator` with its message and field causes, and carry its
//! warnings as `Warning` headers; a raw handler guards a kind the
//! operator does not own (ConfigMaps).

#[path = "../apiserver/tests/common/mod.rs"]
mod common;

use std::time::Duration;

use common::Kube;
use kubeforge::k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhookConfiguration,
};
use kubeforge::manager::CancellationToken;
use kubeforge::testing::{ApiServerExt, LocalWebhooks};
use kubeforge::webhook::{
    Admission, AdmissionRequest, AdmissionResult, Defaulter, Denial, Operation, Validator, Verdict,
    WebhookEntry, WebhookOptions, WebhookType,
};
use kubeforge::{Api, Manager};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

mod v1 {
    use kubeforge::prelude::*;

    /// A gadget with an optional size and colour.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "shop.example.com", version = "v1", kind = "Gadget")]
    pub struct GadgetSpec {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub size: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub colour: Option<String>,
    }
}
use v1::Gadget;

/// Sizes default to 3, with a warning.
struct DefaultSize;

impl Defaulter<Gadget> for DefaultSize {
    async fn default(&self, gadget: &mut Gadget, _: &AdmissionRequest) -> AdmissionResult {
        if gadget.spec.size.is_some() {
            return Ok(vec![]);
        }
        gadget.spec.size = Some(3);
        Ok(vec!["spec.size was not set: defaulted to 3".into()])
    }
}

/// Red gadgets are refused; sizes may not shrink; purple ones warn.
struct Rules;

impl Validator<Gadget> for Rules {
    async fn validate_create(
        &self,
        gadget: &Gadget,
        request: &AdmissionRequest,
    ) -> AdmissionResult {
        assert_eq!(request.operation, Operation::Create);
        match gadget.spec.colour.as_deref() {
            Some("red") => Err(
                Denial::invalid("Gadget.shop.example.com", request.name.clone()).with_cause(
                    "spec.colour",
                    "FieldValueForbidden",
                    "red gadgets are sold out",
                ),
            ),
            Some("purple") => Ok(vec!["purple is discontinued next year".into()]),
            _ => Ok(vec![]),
        }
    }

    async fn validate_update(
        &self,
        old: &Gadget,
        new: &Gadget,
        _: &AdmissionRequest,
    ) -> AdmissionResult {
        if new.spec.size < old.spec.size {
            return Err(Denial::forbidden(format!(
                "a gadget cannot shrink from {:?} to {:?}",
                old.spec.size, new.spec.size
            )));
        }
        Ok(vec![])
    }
}

/// Answers `GET path` on the probe server with the status line.
async fn probe(addr: std::net::SocketAddr, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer.lines().next().unwrap_or_default().to_owned()
}

async fn wait_ready(addr: std::net::SocketAddr) {
    for _ in 0..200 {
        if probe(addr, "/readyz").await.contains("200") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the manager never became ready");
}

fn warnings(resp: &common::Resp) -> Vec<String> {
    resp.headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

const GADGETS: &str = "/apis/shop.example.com/v1/namespaces/default/gadgets";

fn gadget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "shop.example.com/v1", "kind": "Gadget",
           "metadata": {"name": name}, "spec": spec})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_calls_the_managers_defaulter_validator_and_raw_handler() {
    let k = Kube::start().await;
    k.server.install_crd_for::<Gadget>().unwrap();
    let local = LocalWebhooks::generate().unwrap();
    let mgr = Manager::builder()
        .client(k.server.client().unwrap())
        .metrics_bind_address("0")
        .health_probe_bind_address("127.0.0.1:0")
        .webhook_server(local.server_options())
        .build()
        .await
        .unwrap();
    let probes = mgr.health_probe_address().unwrap();
    mgr.webhooks()
        .defaulter::<Gadget, _>(DefaultSize)
        .validator::<Gadget, _>(Rules);
    // A raw handler for a kind the operator does not own.
    let configmaps = WebhookEntry {
        name: "vconfigmap.kb.io".into(),
        path: "/validate-configmaps".into(),
        webhook_type: WebhookType::Validating,
        rules: vec![RuleWithOperations {
            api_groups: Some(vec!["".into()]),
            api_versions: Some(vec!["v1".into()]),
            operations: Some(vec!["CREATE".into()]),
            resources: Some(vec!["configmaps".into()]),
            scope: None,
        }],
        failure_policy: "Fail".into(),
        match_policy: None,
    };
    mgr.webhooks().handler(
        "/validate-configmaps",
        |admission: Admission| async move {
            let secret = admission
                .object
                .as_ref()
                .and_then(|o| o.pointer("/data/password"))
                .is_some();
            if secret {
                Verdict::denied(Denial::forbidden("passwords belong in Secrets"))
            } else {
                Verdict::allowed()
            }
        },
        Some(configmaps),
    );
    local.install(&mgr).await.unwrap();

    let stop = CancellationToken::new();
    let running = tokio::spawn(mgr.run_until(stop.clone()));
    wait_ready(probes).await;
    assert!(probe(probes, "/readyz/webhook").await.contains("200"));

    // The generated configurations: controller-gen's names, kubebuilder's paths.
    let client = k.server.client().unwrap();
    let mutating = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .get("mutating-webhook-configuration")
        .await
        .unwrap();
    let hook = &mutating.webhooks.as_ref().unwrap()[0];
    assert_eq!(hook.name, "mgadget-v1.kb.io");
    assert!(hook
        .client_config
        .url
        .as_deref()
        .unwrap()
        .ends_with("/mutate-shop-example-com-v1-gadget"));
    let validating = Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .get("validating-webhook-configuration")
        .await
        .unwrap();
    let names: Vec<_> = validating
        .webhooks
        .as_ref()
        .unwrap()
        .iter()
        .map(|h| h.name.clone())
        .collect();
    assert_eq!(names, ["vconfigmap.kb.io", "vgadget-v1.kb.io"]);

    // A default applied, with the defaulter's warning.
    let created = k
        .post(GADGETS, &gadget("plain", json!({"colour": "blue"})))
        .await;
    assert_eq!(
        created.code(),
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    assert_eq!(created.json()["spec"], json!({"size": 3, "colour": "blue"}));
    let warned = warnings(&created);
    assert!(
        warned
            .iter()
            .any(|w| w.contains("spec.size was not set: defaulted to 3")),
        "{warned:?}"
    );
    // A set size is left alone: no patch.
    let sized = k.post(GADGETS, &gadget("sized", json!({"size": 7}))).await;
    assert_eq!(sized.code(), 201);
    assert_eq!(sized.json()["spec"], json!({"size": 7}));
    assert!(warnings(&sized).is_empty());

    // A validator's warning on an allowed create.
    let purple = k
        .post(GADGETS, &gadget("purple", json!({"colour": "purple"})))
        .await;
    assert_eq!(purple.code(), 201);
    assert!(warnings(&purple)
        .iter()
        .any(|w| w.contains("purple is discontinued")));

    // A create denied with the validator's status: code, reason, message, causes.
    let red = k
        .post(GADGETS, &gadget("red", json!({"colour": "red"})))
        .await;
    assert_eq!(red.code(), 422, "{}", String::from_utf8_lossy(&red.body));
    let status = red.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "admission webhook \"vgadget-v1.kb.io\" denied the request: Gadget.shop.example.com \"red\" is invalid: spec.colour: red gadgets are sold out"
    );
    // The details as NewInvalid gives them, the group apart from the kind.
    assert_eq!(status["details"]["kind"], "Gadget");
    assert_eq!(status["details"]["group"], "shop.example.com");
    assert_eq!(status["details"]["name"], "red");
    assert_eq!(
        status["details"]["causes"],
        json!([{"field": "spec.colour", "reason": "FieldValueForbidden", "message": "red gadgets are sold out"}])
    );
    let typed = Api::<Gadget>::namespaced(client.clone(), "default");
    assert!(
        typed.get("red").await.is_err(),
        "a denied create stores nothing"
    );

    // An update checked against the old object.
    let shrink = k
        .merge(&format!("{GADGETS}/sized"), &json!({"spec": {"size": 2}}))
        .await;
    assert_eq!(
        shrink.code(),
        403,
        "{}",
        String::from_utf8_lossy(&shrink.body)
    );
    assert!(shrink.json()["message"]
        .as_str()
        .unwrap()
        .contains("a gadget cannot shrink from Some(7) to Some(2)"));
    let grow = k
        .merge(&format!("{GADGETS}/sized"), &json!({"spec": {"size": 9}}))
        .await;
    assert_eq!(grow.code(), 200);

    // The runtime's own client sees the same.
    let typed_red = typed
        .create(
            &Default::default(),
            &serde_json::from_value(gadget("red2", json!({"colour": "red"}))).unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(typed_red.status().map(|s| s.code), Some(422));

    // The raw handler on ConfigMaps.
    let cm = |name: &str, data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data});
    let refused = k
        .post(
            "/api/v1/namespaces/default/configmaps",
            &cm("creds", json!({"password": "x"})),
        )
        .await;
    assert_eq!(refused.code(), 403);
    assert!(refused.json()["message"]
        .as_str()
        .unwrap()
        .ends_with("denied the request: passwords belong in Secrets"));
    let fine = k
        .post(
            "/api/v1/namespaces/default/configmaps",
            &cm("settings", json!({"mode": "fast"})),
        )
        .await;
    assert_eq!(fine.code(), 201);

    stop.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test]
async fn custom_paths_and_operations_reach_the_configuration() {
    let local = LocalWebhooks::generate().unwrap();
    let k = Kube::start().await;
    k.server.install_crd_for::<Gadget>().unwrap();
    let mgr = Manager::builder()
        .client(k.server.client().unwrap())
        .metrics_bind_address("0")
        .health_probe_bind_address("0")
        .webhook_server(local.server_options())
        .build()
        .await
        .unwrap();
    mgr.webhooks().validator_with::<Gadget, _>(
        Rules,
        WebhookOptions::default()
            .path("/gadgets/check")
            .operations([Operation::Create, Operation::Update, Operation::Delete]),
    );
    local.install(&mgr).await.unwrap();
    let validating = Api::<ValidatingWebhookConfiguration>::all(k.server.client().unwrap())
        .get("validating-webhook-configuration")
        .await
        .unwrap();
    let hook = &validating.webhooks.unwrap()[0];
    let url = hook.client_config.url.clone().unwrap();
    assert_eq!(
        url,
        format!("https://{}/gadgets/check", mgr.webhook_address().unwrap())
    );
    assert_eq!(
        hook.client_config.ca_bundle.as_ref().unwrap().0,
        local.ca_pem().as_bytes()
    );
    assert_eq!(
        hook.rules.as_ref().unwrap()[0]
            .operations
            .as_deref()
            .unwrap(),
        ["CREATE", "UPDATE", "DELETE"]
    );
    assert!(k.server.client().is_ok());
    // Nothing registered under the mutating configuration: none written.
    let none = Api::<MutatingWebhookConfiguration>::all(k.server.client().unwrap())
        .get("mutating-webhook-configuration")
        .await;
    assert!(none.is_err());
}
