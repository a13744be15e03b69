//! Writes through the scale subresource reach webhooks as kube-apiserver
//! sends them: an `autoscaling/v1` `Scale` object and old object,
//! subresource `scale`; a mutating webhook's replicas reach the workload
//! and a validating webhook's denial stops the write.

use serde_json::{json, Value};

use crate::common::Kube;
use crate::server::{Answer, Webhook};
use crate::{configure, MUTATING, VALIDATING};

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn scale_hook(hook: &Webhook, name: &str, path: &str) -> Value {
    json!({
        "name": name,
        "clientConfig": {"url": hook.url(path), "caBundle": hook.ca_bundle},
        "rules": [{"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments/scale"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

#[tokio::test]
async fn scale_writes_send_scale_objects_to_webhooks() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    hook.on(
        "/cap",
        Answer::Patch(json!([{"op": "replace", "path": "/spec/replicas", "value": 4}])),
    );
    configure(
        &kube,
        MUTATING,
        "cap",
        vec![scale_hook(&hook, "cap.example.com", "/cap")],
    )
    .await;
    let r = kube
        .post(
            DEPLOYMENTS,
            &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        )
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert!(
        hook.seen("/cap").is_empty(),
        "the rule names the scale subresource only"
    );

    let r = kube
        .merge(
            &format!("{DEPLOYMENTS}/web/scale"),
            &json!({"spec": {"replicas": 9}}),
        )
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["spec"]["replicas"], 4, "the webhook's replicas");
    let stored = kube.get(&format!("{DEPLOYMENTS}/web")).await.json();
    assert_eq!(stored["spec"]["replicas"], 4);

    let seen = hook.seen("/cap");
    assert_eq!(seen.len(), 1);
    let request = &seen[0].1;
    assert_eq!(
        request["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "apps", "version": "v1", "resource": "deployments"})
    );
    assert_eq!(request["subResource"], "scale");
    assert_eq!(request["operation"], "UPDATE");
    assert_eq!(request["object"]["kind"], "Scale");
    assert_eq!(request["object"]["spec"], json!({"replicas": 9}));
    assert_eq!(request["oldObject"]["kind"], "Scale");
    assert_eq!(request["oldObject"]["spec"], json!({"replicas": 1}));

    hook.on(
        "/deny",
        Answer::Deny(json!({"code": 403, "message": "no scaling today"})),
    );
    configure(
        &kube,
        VALIDATING,
        "deny",
        vec![scale_hook(&hook, "deny.example.com", "/deny")],
    )
    .await;
    let r = kube
        .put(
            &format!("{DEPLOYMENTS}/web/scale"),
            &json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 2}}),
        )
        .await;
    assert_eq!(r.code(), 403, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        "admission webhook \"deny.example.com\" denied the request: no scaling today"
    );
    // Validating webhooks see the Scale after mutation.
    assert_eq!(
        hook.seen("/deny")[0].1["object"]["spec"],
        json!({"replicas": 4})
    );
    assert_eq!(
        kube.get(&format!("{DEPLOYMENTS}/web")).await.json()["spec"]["replicas"],
        4
    );
}
