//! Mutating webhooks and the scheme's defaults: kube-apiserver defaults a
//! body when it decodes it, so a mutating webhook is sent the defaulted
//! object, and decodes each webhook's patched object with defaulting
//! again (`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/mutating/dispatcher.go`:
//! `o.GetObjectDefaulter().Default(attr.VersionedObject)` after the patch).

use serde_json::json;

use crate::common::Kube;
use crate::server::{Answer, Webhook};
use crate::{configure, webhook, MUTATING};

const PODS: &str = "/api/v1/namespaces/default/pods";

fn pods_rule() -> serde_json::Value {
    json!({"rules": [{
        "operations": ["CREATE"],
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "resources": ["pods"],
    }]})
}

#[tokio::test]
async fn webhooks_see_the_defaulted_object_and_their_patches_are_defaulted() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    // The first webhook injects a sidecar with no pull policy; the second
    // only looks.
    hook.on(
        "/inject",
        Answer::Patch(json!([{"op": "add", "path": "/spec/containers/-",
            "value": {"name": "sidecar", "image": "busybox"}}])),
    );
    hook.on("/look", Answer::Allow(vec![]));
    configure(
        &kube,
        MUTATING,
        "sidecars",
        vec![
            webhook(&hook, "inject.example.com", "/inject", pods_rule()),
            webhook(&hook, "look.example.com", "/look", pods_rule()),
        ],
    )
    .await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}});
    let r = kube.post(PODS, &pod).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));

    // What the first webhook was sent already has the PodSpec defaults.
    let sent = &hook.seen("/inject")[0].1["object"];
    assert_eq!(sent["spec"]["restartPolicy"], "Always");
    assert_eq!(sent["spec"]["dnsPolicy"], "ClusterFirst");
    assert_eq!(
        sent["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    // What the second was sent has the injected sidecar defaulted.
    let sent = &hook.seen("/look")[0].1["object"];
    let sidecar = &sent["spec"]["containers"][1];
    assert_eq!(sidecar["name"], "sidecar");
    assert_eq!(sidecar["imagePullPolicy"], "Always");
    assert_eq!(sidecar["terminationMessagePath"], "/dev/termination-log");
    // And so is what was stored.
    let stored = kube.get(&format!("{PODS}/p")).await.json();
    assert_eq!(stored["spec"]["containers"][1]["imagePullPolicy"], "Always");
    assert_eq!(
        stored["spec"]["containers"][1]["terminationMessagePolicy"],
        "File"
    );
}
