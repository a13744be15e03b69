//! `matchConditions`: all true calls the webhook, any false skips it, an
//! evaluation error refuses the request under `Fail` (403) and skips the
//! webhook under `Ignore`; configurations with bad conditions are refused.

use serde_json::json;

use crate::common::Kube;
use crate::server::{Answer, Webhook};
use crate::{configmap, configure, webhook, CONFIGMAPS, MUTATING, VALIDATING};

#[tokio::test]
async fn conditions_decide_whether_a_webhook_is_called() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    hook.on(
        "/deny",
        Answer::Deny(json!({"code": 403, "message": "denied by the webhook"})),
    );
    hook.on(
        "/label",
        Answer::Patch(json!([{"op": "add", "path": "/data/updated", "value": "yes"}])),
    );
    configure(
        &kube,
        VALIDATING,
        "conditional",
        vec![webhook(
            &hook,
            "deny.example.com",
            "/deny",
            json!({"matchConditions": [
                {"name": "not-exempt", "expression": "object.metadata.name != 'exempt'"},
                {"name": "labelled", "expression": "has(object.metadata.labels.check) && object.metadata.labels.check == 'yes'"},
            ]}),
        )],
    )
    .await;
    configure(
        &kube,
        MUTATING,
        "on-update",
        vec![webhook(
            &hook,
            "label.example.com",
            "/label",
            json!({"matchConditions": [
                {"name": "updates", "expression": "request.operation == 'UPDATE' && oldObject != null"},
            ]}),
        )],
    )
    .await;
    let r = kube
        .post(CONFIGMAPS, &configmap("exempt", json!({"check": "yes"})))
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    let r = kube.post(CONFIGMAPS, &configmap("plain", json!({}))).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert!(
        hook.seen("/deny").is_empty(),
        "a false condition skips the call"
    );
    let r = kube
        .post(CONFIGMAPS, &configmap("checked", json!({"check": "yes"})))
        .await;
    assert_eq!(r.code(), 403);
    assert_eq!(
        r.json()["message"],
        "admission webhook \"deny.example.com\" denied the request: denied by the webhook"
    );
    assert_eq!(hook.seen("/deny").len(), 1);
    // The mutating webhook's condition is false on creates, true on updates.
    assert!(hook.seen("/label").is_empty());
    let r = kube
        .merge(&format!("{CONFIGMAPS}/plain"), &json!({"data": {"b": "2"}}))
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["data"]["updated"], "yes");
    assert_eq!(hook.seen("/label").len(), 1);
}

#[tokio::test]
async fn a_condition_that_errors_fails_closed_under_fail_and_skips_under_ignore() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    let broken = json!({"matchConditions": [
        {"name": "broken", "expression": "object.data.missing == 'x'"},
    ]});
    let mut ignore = broken.clone();
    ignore["failurePolicy"] = json!("Ignore");
    configure(
        &kube,
        VALIDATING,
        "ignoring",
        vec![webhook(&hook, "ignore.example.com", "/ignore", ignore)],
    )
    .await;
    let r = kube.post(CONFIGMAPS, &configmap("one", json!({}))).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert!(hook.seen("/ignore").is_empty());

    configure(
        &kube,
        VALIDATING,
        "failing",
        vec![webhook(&hook, "fail.example.com", "/fail", broken)],
    )
    .await;
    let r = kube.post(CONFIGMAPS, &configmap("two", json!({}))).await;
    assert_eq!(r.code(), 403, "{}", String::from_utf8_lossy(&r.body));
    let status = r.json();
    assert_eq!(status["reason"], "Forbidden");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(
            "configmaps \"two\" is forbidden: expression 'object.data.missing == 'x'' resulted in error: "
        ),
        "{message}"
    );
    assert!(hook.seen("/fail").is_empty());
    assert_eq!(kube.get(&format!("{CONFIGMAPS}/two")).await.code(), 404);
}

#[tokio::test]
async fn configurations_with_bad_conditions_are_refused() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    let r = kube
        .post(
            VALIDATING,
            &json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "bad"},
                "webhooks": [webhook(&hook, "bad.example.com", "/bad", json!({"matchConditions": [
                    {"name": "a", "expression": "object.metadata.name =="},
                    {"name": "a", "expression": "true"},
                ]}))],
            }),
        )
        .await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    let causes = r.json()["details"]["causes"].clone();
    let fields: Vec<&str> = causes
        .as_array()
        .expect("causes")
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert_eq!(
        fields,
        vec![
            "webhooks[0].matchConditions[0].expression",
            "webhooks[0].matchConditions[1].name",
        ]
    );
}
