//! What a ValidatingAdmissionPolicy's expressions see: under `matchPolicy:
//! Equivalent` the object at the version the policy's `matchConstraints`
//! named (converted through the CRD's webhook, its failure a binding
//! configuration error), `request.kind` at that version and
//! `request.requestKind` at the request's; and `namespaceObject`, the
//! request's Namespace (null for a cluster-scoped request and for a
//! Namespace itself).

use serde_json::{json, Value};

use crate::common::{Kube, Resp};
use crate::conversion::{install as install_widgets, widget};
use crate::policies::{binding, policy, BINDINGS, POLICIES};
use crate::server::{Answer, Convert, Webhook};
use crate::{warnings, CONFIGMAPS};

const V1: &str = "/apis/ex.com/v1/namespaces/default/widgets";
const V2: &str = "/apis/ex.com/v2/namespaces/default/widgets";

/// Resource rules for widgets at `version`.
fn widgets_at(version: &str) -> Value {
    json!([{"operations": ["CREATE", "UPDATE"], "apiGroups": ["ex.com"],
        "apiVersions": [version], "resources": ["widgets"]}])
}

async fn create(kube: &Kube, collection: &str, obj: &Value) {
    let r = kube.post(collection, obj).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
}

/// The text of the warning a Warn binding gave, without the header's
/// `299 - "..."` framing.
fn warned(r: &Resp) -> Vec<String> {
    warnings(r)
        .iter()
        .map(|w| {
            w.trim_start_matches("299 - \"")
                .trim_end_matches('"')
                .replace("\\\"", "\"")
        })
        .collect()
}

#[tokio::test]
async fn an_equivalent_policy_judges_the_object_at_the_version_it_named() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    install_widgets(&kube, &hook, "/convert", json!(["v1"])).await;
    // Named at v1 only (the default matchPolicy, Equivalent); reports
    // what it saw. `spec.size` is v1's name of v2's `spec.replicas`.
    let seen = "object.apiVersion + ' size=' + string(object.spec.size) \
        + (oldObject == null ? '' : ' old=' + string(oldObject.spec.size)) \
        + ' kind=' + request.kind.version + ' resource=' + request.resource.version \
        + ' requestKind=' + request.requestKind.version \
        + ' requestResource=' + request.requestResource.version";
    create(
        &kube,
        POLICIES,
        &policy(
            "sizes",
            json!({
                "matchConstraints": {"resourceRules": widgets_at("v1")},
                "validations": [{"expression": "false", "messageExpression": seen}],
            }),
        ),
    )
    .await;
    // The binding takes in v2 requests only, exactly: the policy's match,
    // not the binding's, decides the version.
    create(
        &kube,
        BINDINGS,
        &binding(
            "sizes-at-v2",
            "sizes",
            json!({"validationActions": ["Warn"],
                "matchResources": {"resourceRules": widgets_at("v2"), "matchPolicy": "Exact"}}),
        ),
    )
    .await;

    let r = kube.post(V2, &widget("v2", "a", 3)).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        warned(&r),
        vec![
            "Validation failed for ValidatingAdmissionPolicy 'sizes' with binding 'sizes-at-v2': \
            ex.com/v1 size=3 kind=v1 resource=v1 requestKind=v2 requestResource=v2"
        ]
    );
    assert!(!hook.seen("/convert").is_empty(), "converted to v1");
    // An update: the old object is converted too.
    let mut at_v2 = kube.get(&format!("{V2}/a")).await.json();
    at_v2["spec"]["replicas"] = json!(4);
    let r = kube.put(&format!("{V2}/a"), &at_v2).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        warned(&r),
        vec![
            "Validation failed for ValidatingAdmissionPolicy 'sizes' with binding 'sizes-at-v2': \
            ex.com/v1 size=4 old=3 kind=v1 resource=v1 requestKind=v2 requestResource=v2"
        ]
    );
    // A v1 request is outside the binding.
    let r = kube.post(V1, &widget("v1", "b", 1)).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));

    // A Deny binding over the v1 field: a v2 request is refused by it.
    create(
        &kube,
        POLICIES,
        &policy(
            "small",
            json!({
                "matchConstraints": {"resourceRules": widgets_at("v1")},
                "validations": [{"expression": "object.spec.size < 10", "message": "too big"}],
            }),
        ),
    )
    .await;
    create(&kube, BINDINGS, &binding("small", "small", json!({}))).await;
    let r = kube.post(V2, &widget("v2", "big", 20)).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        "widgets.ex.com \"big\" is forbidden: ValidatingAdmissionPolicy 'small' with binding 'small' denied request: too big"
    );
    let r = kube.post(V2, &widget("v2", "little", 2)).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
}

#[tokio::test]
async fn an_exact_policy_leaves_requests_at_other_versions_alone() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    install_widgets(&kube, &hook, "/convert", json!(["v1"])).await;
    create(
        &kube,
        POLICIES,
        &policy(
            "v1-only",
            json!({
                "matchConstraints": {"resourceRules": widgets_at("v1"), "matchPolicy": "Exact"},
                "validations": [{"expression": "false", "message": "no widgets at v1"}],
            }),
        ),
    )
    .await;
    create(&kube, BINDINGS, &binding("v1-only", "v1-only", json!({}))).await;
    let r = kube.post(V2, &widget("v2", "a", 1)).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    let r = kube.post(V1, &widget("v1", "b", 1)).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
}

#[tokio::test]
async fn a_failed_conversion_is_a_binding_configuration_error() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    install_widgets(&kube, &hook, "/convert", json!(["v1"])).await;
    // Named at v2: a v1 write (the storage version, no conversion of its
    // own) has to be converted for it.
    let named_at_v2 = |name: &str, failure_policy: &str| {
        policy(
            name,
            json!({
                "matchConstraints": {"resourceRules": widgets_at("v2")},
                "failurePolicy": failure_policy,
                "validations": [{"expression": "object.spec.replicas < 10"}],
            }),
        )
    };
    create(&kube, POLICIES, &named_at_v2("strict", "Fail")).await;
    create(&kube, BINDINGS, &binding("strict-b", "strict", json!({}))).await;
    create(&kube, POLICIES, &named_at_v2("lenient", "Ignore")).await;
    create(&kube, BINDINGS, &binding("lenient-b", "lenient", json!({}))).await;
    // Converting works: the v2 field is judged.
    let r = kube.post(V1, &widget("v1", "big", 20)).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));

    hook.on("/convert", Answer::Convert(Convert::Failure("down")));
    let r = kube.post(V1, &widget("v1", "a", 1)).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    let status = r.json();
    let denial = "ValidatingAdmissionPolicy 'strict' with binding 'strict-b' denied request: \
        failed to configure binding: failed to convert object version: \
        conversion webhook for ex.com/v1, Kind=Widget failed: down";
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        format!("widgets.ex.com \"a\" is forbidden: {denial}")
    );
    assert_eq!(status["details"]["causes"], json!([{"message": denial}]));
    assert_eq!(kube.get(&format!("{V1}/a")).await.code(), 404);

    // Under Ignore the failure is passed over.
    let r = kube.delete(&format!("{BINDINGS}/strict-b")).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let r = kube.post(V1, &widget("v1", "a", 1)).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
}

#[tokio::test]
async fn namespace_object_is_the_requests_namespace() {
    let kube = Kube::start().await;
    let gold = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "gold", "labels": {"tier": "gold"}}});
    create(&kube, "/api/v1/namespaces", &gold).await;
    create(
        &kube,
        POLICIES,
        &policy(
            "gold-only",
            json!({
                "matchConditions": [{"name": "namespaced", "expression": "namespaceObject != null"}],
                "variables": [{"name": "tier", "expression":
                    "has(namespaceObject.metadata.labels) && 'tier' in namespaceObject.metadata.labels \
                        ? namespaceObject.metadata.labels.tier : 'none'"}],
                "validations": [{
                    "expression": "variables.tier == 'gold' && !has(namespaceObject.metadata.managedFields)",
                    "messageExpression": "'namespace ' + namespaceObject.metadata.name + ' is ' + variables.tier",
                }],
            }),
        ),
    )
    .await;
    create(
        &kube,
        BINDINGS,
        &binding("gold-only", "gold-only", json!({})),
    )
    .await;
    let r = kube
        .post(
            "/api/v1/namespaces/gold/configmaps",
            &crate::configmap("a", json!({})),
        )
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    let r = kube
        .post(CONFIGMAPS, &crate::configmap("a", json!({})))
        .await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        "configmaps \"a\" is forbidden: ValidatingAdmissionPolicy 'gold-only' with binding 'gold-only' denied request: namespace default is none"
    );
}

#[tokio::test]
async fn namespace_object_is_null_for_cluster_scoped_requests_and_namespaces() {
    let kube = Kube::start().await;
    create(
        &kube,
        POLICIES,
        &policy(
            "no-namespace",
            json!({
                "matchConstraints": {"resourceRules": [
                    {"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                        "apiVersions": ["v1"], "resources": ["namespaces", "configmaps"]},
                    {"operations": ["CREATE"], "apiGroups": ["rbac.authorization.k8s.io"],
                        "apiVersions": ["v1"], "resources": ["clusterroles"]},
                ]},
                "validations": [{
                    "expression": "namespaceObject == null",
                    "messageExpression": "'namespaceObject is ' + namespaceObject.metadata.name",
                }],
            }),
        ),
    )
    .await;
    create(
        &kube,
        BINDINGS,
        &binding("no-namespace", "no-namespace", json!({})),
    )
    .await;
    // A namespaced request sees its namespace: the policy is bound.
    let r = kube
        .post(CONFIGMAPS, &crate::configmap("a", json!({})))
        .await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    assert!(
        r.json()["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("namespaceObject is default")),
        "{}",
        r.json()
    );

    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "reader"}, "rules": []});
    create(
        &kube,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        &role,
    )
    .await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "blue"}});
    create(&kube, "/api/v1/namespaces", &ns).await;
    // An update of a Namespace, which is its own namespace once it exists.
    let mut blue = kube.get("/api/v1/namespaces/blue").await.json();
    blue["metadata"]["labels"] = json!({"colour": "blue"});
    let r = kube.put("/api/v1/namespaces/blue", &blue).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
}
