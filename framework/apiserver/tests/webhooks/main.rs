//! Admission webhooks called by the API server, against a small webhook
//! server of the test's own ([`server`]): JSONPatch mutations in both
//! encodings, denials with kube-apiserver's messages, warnings, failure
//! policies, timeouts, rule and selector matching, dry run, delete,
//! reinvocation, a PUT that creates admitted as a create, defaults before
//! and after each webhook ([`defaulting`]), the
//! configuration objects kept out of reach, and calls sharing a kept-alive
//! connection.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod authorizer;
#[path = "../common/mod.rs"]
mod common;
mod conditions;
mod conversion;
mod defaulting;
mod policies;
mod policy_params;
mod policy_versions;
mod scale;
mod server;
mod validation;

use std::time::Duration;

use common::Kube;
use serde_json::{json, Value};
use server::{Answer, Webhook};

pub(crate) const MUTATING: &str =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
pub(crate) const VALIDATING: &str =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
pub(crate) const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// One webhook entry calling `path` on `hook`, for `rules`.
pub(crate) fn webhook(hook: &Webhook, name: &str, path: &str, extra: Value) -> Value {
    let mut w = json!({
        "name": name,
        "clientConfig": {"url": hook.url(path), "caBundle": hook.ca_bundle},
        "rules": [{
            "operations": ["CREATE", "UPDATE", "DELETE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["configmaps"],
        }],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(w), Some(extra)) = (w.as_object_mut(), extra.as_object()) {
        w.extend(extra.clone());
    }
    w
}

pub(crate) async fn configure(kube: &Kube, collection: &str, name: &str, webhooks: Vec<Value>) {
    let kind = if collection == MUTATING {
        "MutatingWebhookConfiguration"
    } else {
        "ValidatingWebhookConfiguration"
    };
    let r = kube
        .post(
            collection,
            &json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": name},
                "webhooks": webhooks,
            }),
        )
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
}

pub(crate) fn configmap(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"a": "1"},
    })
}

/// The `Warning` headers of a response.
pub(crate) fn warnings(r: &common::Resp) -> Vec<String> {
    r.headers
        .get_all(http::header::WARNING)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect()
}

/// The `(reason, field, message)` causes of a 422 Invalid from the
/// admissionregistration group, asserting its code, reason and group.
pub(crate) fn invalid_causes(r: &common::Resp) -> Vec<(String, String, String)> {
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    let status = r.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["group"], "admissionregistration.k8s.io");
    status["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            let s = |f: &str| c[f].as_str().unwrap_or("").to_owned();
            (s("reason"), s("field"), s("message"))
        })
        .collect()
}

/// One expected cause, as [`invalid_causes`] gives it.
pub(crate) fn cause(reason: &str, field: &str, message: &str) -> (String, String, String) {
    (reason.into(), field.into(), message.into())
}

#[tokio::test]
async fn mutating_webhooks_patch_the_object_in_both_patch_encodings() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    hook.on(
        "/b64",
        Answer::Patch(json!([{"op": "add", "path": "/data/b64", "value": "yes"}])),
    );
    hook.on(
        "/numbers",
        Answer::PatchAsNumbers(json!([{"op": "add", "path": "/data/numbers", "value": "yes"}])),
    );
    configure(
        &kube,
        MUTATING,
        "defaults",
        vec![
            webhook(&hook, "b64.example.com", "/b64", json!({})),
            webhook(&hook, "numbers.example.com", "/numbers", json!({})),
        ],
    )
    .await;
    let r = kube.post(CONFIGMAPS, &configmap("one", json!({}))).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["data"],
        json!({"a": "1", "b64": "yes", "numbers": "yes"})
    );
    let stored = kube.get(&format!("{CONFIGMAPS}/one")).await.json();
    assert_eq!(stored["data"]["numbers"], "yes");

    // The review is the one kube-apiserver sends.
    let seen = hook.seen("/b64");
    assert_eq!(seen.len(), 1);
    let (url, request) = &seen[0];
    assert!(url.ends_with("?timeout=10s"), "{url}");
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(request["namespace"], "default");
    assert_eq!(request["name"], "one");
    assert_eq!(request["dryRun"], false);
    assert_eq!(request["options"]["kind"], "CreateOptions");
    assert!(request["oldObject"].is_null());
    assert_eq!(request["object"]["data"], json!({"a": "1"}));
    assert_eq!(request["uid"].as_str().map(str::len), Some(36));
    // The second webhook saw the first one's patch.
    assert_eq!(hook.seen("/numbers")[0].1["object"]["data"]["b64"], "yes");
}

#[tokio::test]
async fn a_put_that_creates_is_admitted_as_a_create() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    hook.on(
        "/label",
        Answer::Patch(
            json!([{"op": "add", "path": "/metadata/labels", "value": {"admitted": "yes"}}]),
        ),
    );
    let leases = json!({"rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["coordination.k8s.io"],
        "apiVersions": ["v1"], "resources": ["leases"]}]});
    configure(
        &kube,
        MUTATING,
        "label",
        vec![webhook(
            &hook,
            "label.example.com",
            "/label",
            leases.clone(),
        )],
    )
    .await;
    configure(
        &kube,
        VALIDATING,
        "check",
        vec![webhook(&hook, "check.example.com", "/check", leases)],
    )
    .await;
    const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases/held";
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "held"}, "spec": {"holderIdentity": "me"}});
    let r = kube.put(LEASE, &lease).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["metadata"]["labels"], json!({"admitted": "yes"}));
    for path in ["/label", "/check"] {
        let seen = hook.seen(path);
        assert_eq!(seen.len(), 1, "{path}");
        let request = &seen[0].1;
        assert_eq!(request["operation"], "CREATE", "{path}");
        assert_eq!(request["options"]["kind"], "CreateOptions", "{path}");
        assert_eq!(request["name"], "held", "{path}");
        assert!(request["oldObject"].is_null(), "{path}");
    }
    assert_eq!(
        hook.seen("/check")[0].1["object"]["metadata"]["labels"]["admitted"],
        "yes"
    );
    // Put again: an update.
    let r = kube.put(LEASE, &r.json()).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let seen = hook.seen("/check");
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].1["operation"], "UPDATE");
    assert_eq!(seen[1].1["options"]["kind"], "UpdateOptions");
}

#[tokio::test]
async fn a_denial_carries_the_webhooks_code_reason_message_and_warnings() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    hook.on(
        "/deny",
        Answer::Deny(
            json!({"code": 403, "reason": "Forbidden", "message": "name \"bad\" is not allowed"}),
        ),
    );
    hook.on("/warn", Answer::Allow(vec!["data.a is deprecated"]));
    configure(
        &kube,
        VALIDATING,
        "checks",
        vec![
            webhook(
                &hook,
                "deny.example.com",
                "/deny",
                json!({"objectSelector": {"matchLabels": {"deny": "yes"}}}),
            ),
            webhook(&hook, "warn.example.com", "/warn", json!({})),
        ],
    )
    .await;
    let r = kube
        .post(CONFIGMAPS, &configmap("bad", json!({"deny": "yes"})))
        .await;
    assert_eq!(r.code(), 403);
    let status = r.json();
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "admission webhook \"deny.example.com\" denied the request: name \"bad\" is not allowed"
    );
    assert_eq!(
        warnings(&r),
        vec!["299 - \"data.a is deprecated\"".to_owned()]
    );
    assert_eq!(kube.get(&format!("{CONFIGMAPS}/bad")).await.code(), 404);

    // The objectSelector lets an unlabelled object through, with the warning.
    let r = kube.post(CONFIGMAPS, &configmap("good", json!({}))).await;
    assert_eq!(r.code(), 201);
    assert_eq!(
        warnings(&r),
        vec!["299 - \"data.a is deprecated\"".to_owned()]
    );
    assert_eq!(hook.seen("/deny").len(), 1);
}

#[tokio::test]
async fn failure_policies_timeouts_and_the_ca_bundle() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    hook.on("/slow", Answer::Slow(Duration::from_secs(3)));
    hook.on("/garbage", Answer::Garbage);
    let closed = format!("https://127.0.0.1:{}/none", unused_port());
    configure(
        &kube,
        VALIDATING,
        "failing",
        vec![
            webhook(
                &hook,
                "slow.example.com",
                "/slow",
                json!({"timeoutSeconds": 1, "objectSelector": {"matchLabels": {"case": "slow"}}}),
            ),
            webhook(
                &hook,
                "garbage.example.com",
                "/garbage",
                json!({"objectSelector": {"matchLabels": {"case": "garbage"}}}),
            ),
            json!({
                "name": "down.example.com",
                "clientConfig": {"url": closed, "caBundle": hook.ca_bundle},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
                "objectSelector": {"matchLabels": {"case": "down"}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }),
            json!({
                "name": "down-ignored.example.com",
                "clientConfig": {"url": closed, "caBundle": hook.ca_bundle},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
                "objectSelector": {"matchLabels": {"case": "ignored"}},
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }),
            // The right URL, but a CA that did not sign the webhook's certificate.
            json!({
                "name": "wrong-ca.example.com",
                "clientConfig": {"url": hook.url("/x"), "caBundle": Webhook::start().await.ca_bundle},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
                "objectSelector": {"matchLabels": {"case": "wrong-ca"}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }),
        ],
    )
    .await;

    let r = kube
        .post(CONFIGMAPS, &configmap("slow", json!({"case": "slow"})))
        .await;
    assert_eq!(r.code(), 500);
    let message = r.json()["message"].as_str().unwrap_or_default().to_owned();
    let url = hook.url("/slow");
    assert_eq!(
        message,
        format!("Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"{url}?timeout=1s\": context deadline exceeded")
    );

    let r = kube
        .post(
            CONFIGMAPS,
            &configmap("garbage", json!({"case": "garbage"})),
        )
        .await;
    assert_eq!(r.code(), 500);
    assert_eq!(
        r.json()["message"],
        "Internal error occurred: failed calling webhook \"garbage.example.com\": received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got , Kind="
    );

    let r = kube
        .post(CONFIGMAPS, &configmap("down", json!({"case": "down"})))
        .await;
    assert_eq!(r.code(), 500);
    let message = r.json()["message"].as_str().unwrap_or_default().to_owned();
    assert!(
        message.starts_with(&format!("Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post \"{closed}?timeout=10s\": ")),
        "{message}"
    );

    let r = kube
        .post(
            CONFIGMAPS,
            &configmap("ignored", json!({"case": "ignored"})),
        )
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));

    let r = kube
        .post(
            CONFIGMAPS,
            &configmap("wrong-ca", json!({"case": "wrong-ca"})),
        )
        .await;
    assert_eq!(r.code(), 500);
    assert!(
        hook.seen("/x").is_empty(),
        "the TLS handshake must fail first"
    );
}

/// A port nothing listens on.
fn unused_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[tokio::test]
async fn rules_match_operations_subresources_scope_and_namespace_labels() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    let rule = |ops: Value, resources: Value, scope: &str| json!({"rules": [{"operations": ops, "apiGroups": ["", "apps"], "apiVersions": ["*"], "resources": resources, "scope": scope}]});
    configure(
        &kube,
        VALIDATING,
        "rules",
        vec![
            webhook(&hook, "update-only.example.com", "/update", rule(json!(["UPDATE"]), json!(["configmaps"]), "*")),
            webhook(&hook, "main-only.example.com", "/main", rule(json!(["*"]), json!(["*"]), "Namespaced")),
            webhook(&hook, "status.example.com", "/status", rule(json!(["UPDATE"]), json!(["*/status"]), "*")),
            webhook(&hook, "cluster.example.com", "/cluster", rule(json!(["CREATE"]), json!(["*"]), "Cluster")),
            webhook(
                &hook,
                "labelled-ns.example.com",
                "/labelled",
                json!({
                    "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps", "namespaces"]}],
                    "namespaceSelector": {"matchExpressions": [{"key": "webhooks", "operator": "In", "values": ["on"]}]},
                }),
            ),
        ],
    )
    .await;
    let cm = kube.post(CONFIGMAPS, &configmap("cm", json!({}))).await;
    assert_eq!(cm.code(), 201);
    assert!(hook.seen("/update").is_empty());
    assert_eq!(hook.seen("/main").len(), 1);
    assert!(hook.seen("/cluster").is_empty());
    assert!(hook.seen("/labelled").is_empty());

    let mut cm = cm.json();
    cm["data"]["a"] = json!("2");
    assert_eq!(kube.put(&format!("{CONFIGMAPS}/cm"), &cm).await.code(), 200);
    let updates = hook.seen("/update");
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].1["operation"], "UPDATE");
    assert_eq!(updates[0].1["oldObject"]["data"]["a"], "1");
    assert_eq!(updates[0].1["object"]["data"]["a"], "2");
    assert_eq!(updates[0].1["options"]["kind"], "UpdateOptions");

    // A Namespace is cluster-scoped and judged by its own labels.
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "on", "labels": {"webhooks": "on"}}});
    assert_eq!(kube.post("/api/v1/namespaces", &ns).await.code(), 201);
    assert_eq!(hook.seen("/cluster").len(), 1);
    assert_eq!(hook.seen("/labelled").len(), 1);
    assert_eq!(hook.seen("/main").len(), 2, "an update of configmaps");
    // A namespaced object is judged by its namespace's labels.
    let r = kube
        .post(
            "/api/v1/namespaces/on/configmaps",
            &configmap("in-on", json!({})),
        )
        .await;
    assert_eq!(r.code(), 201);
    assert_eq!(hook.seen("/labelled").len(), 2);
    assert_eq!(hook.seen("/labelled")[1].1["namespace"], "on");

    // The status subresource matches `*/status`, not `*`.
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
    });
    let d = kube
        .post("/apis/apps/v1/namespaces/default/deployments", &deployment)
        .await;
    assert_eq!(d.code(), 201, "{}", String::from_utf8_lossy(&d.body));
    let main_calls = hook.seen("/main").len();
    let mut d = d.json();
    d["status"] = json!({"observedGeneration": 1});
    let r = kube
        .put("/apis/apps/v1/namespaces/default/deployments/d/status", &d)
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let status = hook.seen("/status");
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].1["subResource"], "status");
    assert_eq!(hook.seen("/main").len(), main_calls);
}

#[tokio::test]
async fn dry_run_needs_side_effect_free_webhooks_and_stores_nothing() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    configure(
        &kube,
        VALIDATING,
        "dry",
        vec![webhook(
            &hook,
            "safe.example.com",
            "/safe",
            json!({"sideEffects": "NoneOnDryRun"}),
        )],
    )
    .await;
    let r = kube
        .post(
            &format!("{CONFIGMAPS}?dryRun=All"),
            &configmap("dry", json!({})),
        )
        .await;
    assert_eq!(r.code(), 201);
    let safe = hook.seen("/safe");
    assert_eq!(safe.len(), 1);
    assert_eq!(safe[0].1["dryRun"], true);
    assert_eq!(safe[0].1["options"]["dryRun"], json!(["All"]));
    assert_eq!(kube.get(&format!("{CONFIGMAPS}/dry")).await.code(), 404);

    // admissionregistration/v1 takes no webhook with side effects, so a
    // dry run never meets one.
    let r = kube
        .post(
            VALIDATING,
            &json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "unsafe"},
                "webhooks": [webhook(&hook, "unsafe.example.com", "/unsafe", json!({"sideEffects": "Some"}))],
            }),
        )
        .await;
    assert_eq!(r.code(), 422);
    assert_eq!(
        r.json()["details"]["causes"][0]["field"],
        "webhooks[0].sideEffects"
    );
}

#[tokio::test]
async fn deletes_send_the_old_object_and_may_not_be_patched() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    kube.configmap("default", "gone", json!({"k": "v"})).await;
    kube.configmap("default", "patched", json!({"k": "v"}))
        .await;
    hook.on(
        "/patch",
        Answer::Patch(json!([{"op": "add", "path": "/data/x", "value": "y"}])),
    );
    configure(
        &kube,
        MUTATING,
        "on-delete",
        vec![
            webhook(&hook, "observe.example.com", "/observe", json!({})),
            webhook(
                &hook,
                "patch.example.com",
                "/patch",
                json!({"rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
                       "objectSelector": {"matchLabels": {"never": "set"}}}),
            ),
        ],
    )
    .await;
    assert_eq!(kube.delete(&format!("{CONFIGMAPS}/gone")).await.code(), 200);
    let seen = hook.seen("/observe");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1["operation"], "DELETE");
    assert!(seen[0].1["object"].is_null());
    assert_eq!(seen[0].1["oldObject"]["data"]["k"], "v");
    assert_eq!(seen[0].1["options"]["kind"], "DeleteOptions");

    // Label the second object so the patching webhook matches its delete.
    let r = kube
        .merge(
            &format!("{CONFIGMAPS}/patched"),
            &json!({"metadata": {"labels": {"never": "set"}}}),
        )
        .await;
    assert_eq!(r.code(), 200);
    let r = kube.delete(&format!("{CONFIGMAPS}/patched")).await;
    assert_eq!(r.code(), 500);
    assert_eq!(
        r.json()["message"],
        "admission webhook \"patch.example.com\" attempted to modify the object, which is not supported for this operation"
    );
    assert_eq!(kube.get(&format!("{CONFIGMAPS}/patched")).await.code(), 200);
}

#[tokio::test]
async fn if_needed_webhooks_are_reinvoked_once_after_a_later_change() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    hook.on(
        "/later",
        Answer::Patch(json!([{"op": "add", "path": "/data/later", "value": "x"}])),
    );
    configure(
        &kube,
        MUTATING,
        "a-first",
        vec![
            webhook(
                &hook,
                "again.example.com",
                "/again",
                json!({"reinvocationPolicy": "IfNeeded"}),
            ),
            webhook(&hook, "never.example.com", "/never", json!({})),
        ],
    )
    .await;
    configure(
        &kube,
        MUTATING,
        "b-second",
        vec![webhook(&hook, "later.example.com", "/later", json!({}))],
    )
    .await;
    assert_eq!(
        kube.post(CONFIGMAPS, &configmap("r", json!({})))
            .await
            .code(),
        201
    );
    let again = hook.seen("/again");
    assert_eq!(again.len(), 2);
    assert!(again[0].1["object"]["data"].get("later").is_none());
    assert_eq!(again[1].1["object"]["data"]["later"], "x");
    assert_eq!(hook.seen("/never").len(), 1);
    assert_eq!(hook.seen("/later").len(), 1);
}

#[tokio::test]
async fn configuration_objects_are_never_sent_to_webhooks() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    hook.on("/deny", Answer::Deny(json!({"message": "no"})));
    configure(
        &kube,
        VALIDATING,
        "deny-all",
        vec![webhook(
            &hook,
            "all.example.com",
            "/deny",
            json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]}),
        )],
    )
    .await;
    let r = kube.post(CONFIGMAPS, &configmap("denied", json!({}))).await;
    assert_eq!(r.code(), 400, "a denial without a code is a 400");
    assert_eq!(
        r.json()["message"],
        "admission webhook \"all.example.com\" denied the request: no"
    );
    // The configuration itself can still be repaired and removed.
    let r = kube.delete(&format!("{VALIDATING}/deny-all")).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        kube.post(CONFIGMAPS, &configmap("denied", json!({})))
            .await
            .code(),
        201
    );
    assert_eq!(hook.seen("/deny").len(), 1);
}

#[tokio::test]
async fn sequential_calls_share_one_kept_alive_connection() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    hook.on("/mutate", Answer::Allow(vec![]));
    hook.on("/validate", Answer::Allow(vec![]));
    configure(
        &kube,
        MUTATING,
        "keepalive-mutating",
        vec![webhook(
            &hook,
            "m.keepalive.example.com",
            "/mutate",
            json!({}),
        )],
    )
    .await;
    configure(
        &kube,
        VALIDATING,
        "keepalive-validating",
        vec![webhook(
            &hook,
            "v.keepalive.example.com",
            "/validate",
            json!({}),
        )],
    )
    .await;
    for i in 0..10 {
        let r = kube
            .post(CONFIGMAPS, &configmap(&format!("kept-{i}"), json!({})))
            .await;
        assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    }
    // Twenty calls (a mutating and a validating webhook on each create),
    // both webhooks at one server trusted through one CA bundle.
    assert_eq!(
        hook.seen("/mutate").len() + hook.seen("/validate").len(),
        20
    );
    assert_eq!(hook.connections(), 1);
}
