//! ValidatingAdmissionPolicy parameters: a policy's `paramKind` resolved
//! to a built-in or custom resource, a binding's `paramRef` by name or
//! selector, in its namespace or the request's, `parameterNotFoundAction`,
//! and `params` in the expressions; the configuration errors kube-apiserver
//! gives, under `Fail` and `Ignore`.

use serde_json::{json, Value};

use crate::common::Kube;
use crate::policies::{binding, policy, BINDINGS, POLICIES};
use crate::warnings;

const PARAMS_NS: &str = "/api/v1/namespaces/params/configmaps";

/// A policy limiting how many keys a ConfigMap holds to its ConfigMap
/// param's `maxKeys`; ConfigMaps labelled `param` are not judged.
fn max_keys(name: &str, changes: Value) -> Value {
    let mut spec = json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {
            "resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "objectSelector": {"matchExpressions": [{"key": "param", "operator": "DoesNotExist"}]},
        },
        "variables": [{"name": "limit", "expression": "int(params.data.maxKeys)"}],
        "validations": [{
            "expression": "size(object.data) <= variables.limit",
            "messageExpression": "'at most ' + params.data.maxKeys + ' keys (' + params.metadata.name + ')'",
        }],
    });
    if let (Some(spec), Value::Object(changes)) = (spec.as_object_mut(), changes) {
        spec.extend(changes);
    }
    policy(name, spec)
}

/// A ConfigMap with `keys` data entries.
fn with_keys(name: &str, keys: usize) -> Value {
    let data: serde_json::Map<String, Value> =
        (0..keys).map(|i| (format!("k{i}"), json!("v"))).collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

/// A param ConfigMap (labelled `param`, with `labels` too).
fn limit(name: &str, max_keys: &str, labels: Value) -> Value {
    let mut labels = labels;
    labels["param"] = json!("true");
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels}, "data": {"maxKeys": max_keys}})
}

async fn created(kube: &Kube, collection: &str, obj: &Value) -> Value {
    let r = kube.post(collection, obj).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

async fn namespace(kube: &Kube, name: &str) {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    created(kube, "/api/v1/namespaces", &ns).await;
}

/// The Status message of a refused create, asserting its code.
async fn refused(kube: &Kube, collection: &str, obj: &Value, code: u16) -> String {
    let r = kube.post(collection, obj).await;
    assert_eq!(r.code(), code, "{}", String::from_utf8_lossy(&r.body));
    let status = r.json();
    let message = status["message"].as_str().unwrap_or_default().to_owned();
    // The denial is also the Status's last cause.
    let causes = status["details"]["causes"].as_array().cloned();
    let last = causes.and_then(|c| c.last().cloned()).unwrap_or_default();
    assert!(
        message.ends_with(last["message"].as_str().unwrap_or("-")),
        "{status}"
    );
    message
}

#[tokio::test]
async fn a_configmap_param_by_name_sets_the_limit_and_is_read_at_admission() {
    let kube = Kube::start().await;
    created(&kube, POLICIES, &max_keys("max-keys", json!({}))).await;
    created(
        &kube,
        BINDINGS,
        &binding(
            "max-keys",
            "max-keys",
            json!({"paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}}),
        ),
    )
    .await;
    let cms = crate::CONFIGMAPS;

    // No param yet: Deny refuses, as a binding configuration error.
    assert_eq!(
        refused(&kube, cms, &with_keys("early", 1), 422).await,
        "configmaps \"early\" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );

    // The param, in the request's namespace, is seen at once.
    created(&kube, cms, &limit("limits", "2", json!({}))).await;
    assert_eq!(
        refused(&kube, cms, &with_keys("three", 3), 422).await,
        "configmaps \"three\" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys' denied request: at most 2 keys (limits)"
    );
    created(&kube, cms, &with_keys("two", 2)).await;

    // A changed param changes the verdict.
    let r = kube
        .merge(&format!("{cms}/limits"), &json!({"data": {"maxKeys": "3"}}))
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    created(&kube, cms, &with_keys("three", 3)).await;

    // Another namespace has no `limits`: refused there.
    namespace(&kube, "other").await;
    const OTHER: &str = "/api/v1/namespaces/other/configmaps";
    let message = refused(&kube, OTHER, &with_keys("any", 1), 422).await;
    assert!(
        message.ends_with("no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{message}"
    );

    // Under Allow a missing param admits, without evaluating anything.
    let mut allowing = kube.get(&format!("{BINDINGS}/max-keys")).await.json();
    allowing["spec"]["paramRef"]["parameterNotFoundAction"] = json!("Allow");
    let r = kube.put(&format!("{BINDINGS}/max-keys"), &allowing).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    created(&kube, OTHER, &with_keys("many", 9)).await;
    // Where the param exists it still limits.
    let message = refused(&kube, cms, &with_keys("four", 4), 422).await;
    assert!(message.ends_with("at most 3 keys (limits)"), "{message}");

    // A paramRef naming a namespace reads the param there whatever the
    // request's namespace.
    allowing = kube.get(&format!("{BINDINGS}/max-keys")).await.json();
    allowing["spec"]["paramRef"]["namespace"] = json!("default");
    let r = kube.put(&format!("{BINDINGS}/max-keys"), &allowing).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let message = refused(&kube, OTHER, &with_keys("four", 4), 422).await;
    assert!(message.ends_with("at most 3 keys (limits)"), "{message}");
}

#[tokio::test]
async fn a_selector_evaluates_every_matching_param_and_any_denial_denies() {
    let kube = Kube::start().await;
    namespace(&kube, "params").await;
    created(
        &kube,
        PARAMS_NS,
        &limit("loose", "5", json!({"tier": "limits"})),
    )
    .await;
    created(
        &kube,
        PARAMS_NS,
        &limit("tight", "2", json!({"tier": "limits"})),
    )
    .await;
    // Not selected: it would refuse even two keys.
    created(&kube, PARAMS_NS, &limit("unselected", "1", json!({}))).await;
    // Selected, but in another namespace.
    created(
        &kube,
        crate::CONFIGMAPS,
        &limit("elsewhere", "1", json!({"tier": "limits"})),
    )
    .await;
    created(&kube, POLICIES, &max_keys("max-keys", json!({}))).await;
    created(
        &kube,
        BINDINGS,
        &binding(
            "tiers",
            "max-keys",
            json!({"paramRef": {"namespace": "params", "parameterNotFoundAction": "Deny",
                "selector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["limits"]}]}}}),
        ),
    )
    .await;
    let cms = crate::CONFIGMAPS;
    created(&kube, cms, &with_keys("two", 2)).await;
    assert_eq!(
        refused(&kube, cms, &with_keys("three", 3), 422).await,
        "configmaps \"three\" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'tiers' denied request: at most 2 keys (tight)"
    );

    // Warn reports each param's failure.
    let mut warning = kube.get(&format!("{BINDINGS}/tiers")).await.json();
    warning["spec"]["validationActions"] = json!(["Warn"]);
    let r = kube.put(&format!("{BINDINGS}/tiers"), &warning).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let r = kube.post(cms, &with_keys("six", 6)).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        warnings(&r),
        vec![
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'max-keys' with binding 'tiers': at most 5 keys (loose)\"",
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'max-keys' with binding 'tiers': at most 2 keys (tight)\"",
        ]
    );

    // A selector matching nothing under Deny is refused.
    let mut none = kube.get(&format!("{BINDINGS}/tiers")).await.json();
    none["spec"]["validationActions"] = json!(["Deny"]);
    none["spec"]["paramRef"]["selector"] = json!({"matchLabels": {"tier": "absent"}});
    let r = kube.put(&format!("{BINDINGS}/tiers"), &none).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let message = refused(&kube, cms, &with_keys("one", 1), 422).await;
    assert!(
        message.ends_with("with binding 'tiers' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{message}"
    );
}

/// A policy on Namespace creates whose params are ConfigMaps.
fn on_namespaces(name: &str, failure_policy: &str) -> Value {
    policy(
        name,
        json!({
            "failurePolicy": failure_policy,
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""],
                "apiVersions": ["v1"], "resources": ["namespaces"]}]},
            "validations": [{
                "expression": "!object.metadata.name.startsWith(params.data.forbiddenPrefix)",
                "messageExpression": "'no namespaces named ' + params.data.forbiddenPrefix + '*'",
            }],
        }),
    )
}

#[tokio::test]
async fn a_cluster_scoped_request_needs_the_namespace_of_a_namespaced_param() {
    let kube = Kube::start().await;
    let mut prefix = limit("prefix", "0", json!({}));
    prefix["data"] = json!({"forbiddenPrefix": "tmp-"});
    created(&kube, crate::CONFIGMAPS, &prefix).await;
    created(&kube, POLICIES, &on_namespaces("strict", "Fail")).await;
    created(
        &kube,
        BINDINGS,
        &binding(
            "strict",
            "strict",
            json!({"paramRef": {"name": "prefix", "parameterNotFoundAction": "Allow"}}),
        ),
    )
    .await;
    let ns =
        |name: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    assert_eq!(
        refused(&kube, "/api/v1/namespaces", &ns("plain"), 422).await,
        "namespaces \"plain\" is forbidden: ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: failed to configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
    );

    // With the namespace given, the param is read there.
    let mut bound = kube.get(&format!("{BINDINGS}/strict")).await.json();
    bound["spec"]["paramRef"]["namespace"] = json!("default");
    let r = kube.put(&format!("{BINDINGS}/strict"), &bound).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    created(&kube, "/api/v1/namespaces", &ns("plain")).await;
    assert_eq!(
        refused(&kube, "/api/v1/namespaces", &ns("tmp-a"), 422).await,
        "namespaces \"tmp-a\" is forbidden: ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: no namespaces named tmp-*"
    );

    // The same misconfiguration under Ignore admits.
    created(&kube, POLICIES, &on_namespaces("lenient", "Ignore")).await;
    created(
        &kube,
        BINDINGS,
        &binding(
            "lenient",
            "lenient",
            json!({"paramRef": {"name": "prefix", "parameterNotFoundAction": "Deny"}}),
        ),
    )
    .await;
    created(&kube, "/api/v1/namespaces", &ns("other")).await;
}

#[tokio::test]
async fn an_unresolvable_param_kind_is_a_policy_error_under_fail_only() {
    let kube = Kube::start().await;
    let missing = json!({"paramKind": {"apiVersion": "ex.com/v1", "kind": "Missing"}});
    created(&kube, POLICIES, &max_keys("strict", missing.clone())).await;
    // The binding does not even match the request: the policy's own
    // error refuses it all the same.
    created(
        &kube,
        BINDINGS,
        &binding(
            "strict",
            "strict",
            json!({"paramRef": {"name": "limits", "parameterNotFoundAction": "Allow"},
                "matchResources": {"namespaceSelector": {"matchLabels": {"no": "such"}}}}),
        ),
    )
    .await;
    assert_eq!(
        refused(&kube, crate::CONFIGMAPS, &with_keys("a", 1), 422).await,
        "configmaps \"a\" is forbidden: ValidatingAdmissionPolicy 'strict' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'ex.com/v1, Kind=Missing'"
    );
    // A core kind that does not exist reads with an empty group.
    let mut core = kube.get(&format!("{POLICIES}/strict")).await.json();
    core["spec"]["paramKind"] = json!({"apiVersion": "v1", "kind": "Nothing"});
    let r = kube.put(&format!("{POLICIES}/strict"), &core).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let message = refused(&kube, crate::CONFIGMAPS, &with_keys("a", 1), 422).await;
    assert!(
        message.ends_with("failed to find resource referenced by paramKind: '/v1, Kind=Nothing'"),
        "{message}"
    );

    // Under Ignore the policy is skipped.
    let mut core = kube.get(&format!("{POLICIES}/strict")).await.json();
    core["spec"]["failurePolicy"] = json!("Ignore");
    let r = kube.put(&format!("{POLICIES}/strict"), &core).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    created(&kube, crate::CONFIGMAPS, &with_keys("a", 1)).await;
}

#[tokio::test]
async fn a_custom_resource_is_a_param_once_its_crd_serves_it() {
    let kube = Kube::start().await;
    let crd_kind = json!({"paramKind": {"apiVersion": "ex.com/v1", "kind": "Limit"},
    "variables": [{"name": "limit", "expression": "params.spec.maxKeys"}],
    "validations": [{
        "expression": "size(object.data) <= variables.limit",
        "messageExpression": "'at most ' + string(params.spec.maxKeys) + ' keys, says ' + params.kind + ' ' + params.metadata.name",
    }]});
    created(&kube, POLICIES, &max_keys("crd-limit", crd_kind)).await;
    created(
        &kube,
        BINDINGS,
        &binding(
            "crd-limit",
            "crd-limit",
            json!({"paramRef": {"name": "house", "parameterNotFoundAction": "Deny"}}),
        ),
    )
    .await;
    let cms = crate::CONFIGMAPS;
    let message = refused(&kube, cms, &with_keys("a", 1), 422).await;
    assert!(
        message.ends_with("denied request: failed to configure policy: failed to find resource referenced by paramKind: 'ex.com/v1, Kind=Limit'"),
        "{message}"
    );

    kube.create_crd(&json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "limits.ex.com"},
        "spec": {"group": "ex.com", "scope": "Cluster",
            "names": {"plural": "limits", "kind": "Limit"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "maxKeys": {"type": "integer"}}}}}}}]}
    }))
    .await;
    // Served now, but no `house` yet.
    let message = refused(&kube, cms, &with_keys("a", 1), 422).await;
    assert!(
        message.ends_with("with binding 'crd-limit' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{message}"
    );
    let house = json!({"apiVersion": "ex.com/v1", "kind": "Limit",
        "metadata": {"name": "house"}, "spec": {"maxKeys": 1}});
    created(&kube, "/apis/ex.com/v1/limits", &house).await;
    created(&kube, cms, &with_keys("one", 1)).await;
    assert_eq!(
        refused(&kube, cms, &with_keys("two", 2), 422).await,
        "configmaps \"two\" is forbidden: ValidatingAdmissionPolicy 'crd-limit' with binding 'crd-limit' denied request: at most 1 keys, says Limit house"
    );

    // A cluster-scoped kind takes no paramRef namespace.
    let mut namespaced = kube.get(&format!("{BINDINGS}/crd-limit")).await.json();
    namespaced["spec"]["paramRef"]["namespace"] = json!("default");
    let r = kube
        .put(&format!("{BINDINGS}/crd-limit"), &namespaced)
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let message = refused(&kube, cms, &with_keys("one-more", 1), 422).await;
    assert!(
        message.ends_with("failed to configure binding: paramRef.namespace must not be provided for a cluster-scoped `paramKind`"),
        "{message}"
    );
}

#[tokio::test]
async fn a_param_is_seen_at_its_param_kinds_version_through_the_conversion_webhook() {
    use crate::server::{Answer, Convert, Webhook};
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    // Widgets: `spec.size` at v1 (stored), `spec.replicas` at v2.
    crate::conversion::install(&kube, &hook, "/convert", json!(["v1"])).await;
    created(
        &kube,
        "/apis/ex.com/v1/namespaces/default/widgets",
        &crate::conversion::widget("v1", "cap", 1),
    )
    .await;
    let at_v2 = json!({"paramKind": {"apiVersion": "ex.com/v2", "kind": "Widget"},
    "variables": [{"name": "limit", "expression": "params.spec.replicas"}],
    "validations": [{
        "expression": "size(object.data) <= variables.limit",
        "messageExpression": "'at most ' + string(params.spec.replicas) + ' keys, says ' + params.apiVersion",
    }]});
    created(&kube, POLICIES, &max_keys("widget-limit", at_v2)).await;
    created(
        &kube,
        BINDINGS,
        &binding(
            "widget-limit",
            "widget-limit",
            json!({"paramRef": {"name": "cap", "parameterNotFoundAction": "Deny"}}),
        ),
    )
    .await;
    let cms = crate::CONFIGMAPS;
    created(&kube, cms, &with_keys("one", 1)).await;
    assert_eq!(
        refused(&kube, cms, &with_keys("two", 2), 422).await,
        "configmaps \"two\" is forbidden: ValidatingAdmissionPolicy 'widget-limit' with binding 'widget-limit' denied request: at most 1 keys, says ex.com/v2"
    );
    let seen = hook.seen("/convert");
    assert!(!seen.is_empty());
    assert!(seen
        .iter()
        .all(|(_, request)| request["desiredAPIVersion"] == "ex.com/v2"));

    // A conversion that fails is the binding's configuration error.
    hook.on("/convert", Answer::Convert(Convert::Failure("down")));
    let message = refused(&kube, cms, &with_keys("three", 1), 422).await;
    assert!(
        message
            .contains("with binding 'widget-limit' denied request: failed to configure binding: ")
            && message.ends_with("conversion webhook for ex.com/v1, Kind=Widget failed: down"),
        "{message}"
    );
}

#[tokio::test]
async fn a_binding_without_param_ref_evaluates_with_null_params() {
    let kube = Kube::start().await;
    created(
        &kube,
        POLICIES,
        &policy(
            "unparameterized",
            json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "validations": [{
                "expression": "params != null || object.metadata.name != 'bad'",
                "message": "judged without params",
            }]}),
        ),
    )
    .await;
    created(
        &kube,
        BINDINGS,
        &binding("unparameterized", "unparameterized", json!({})),
    )
    .await;
    assert_eq!(
        refused(&kube, crate::CONFIGMAPS, &with_keys("bad", 1), 422).await,
        "configmaps \"bad\" is forbidden: ValidatingAdmissionPolicy 'unparameterized' with binding 'unparameterized' denied request: judged without params"
    );
    created(&kube, crate::CONFIGMAPS, &with_keys("good", 1)).await;
}
