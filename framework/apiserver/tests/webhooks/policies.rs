//! ValidatingAdmissionPolicies and their bindings
//! (`admissionregistration.k8s.io/v1`): served cluster-scoped with the v1
//! defaults and a status subresource for the policy, their writes checked
//! as kube-apiserver checks them (`validateValidatingAdmissionPolicySpec`,
//! `validateValidatingAdmissionPolicyBindingSpec`).

use serde_json::{json, Value};

use crate::common::Kube;
use crate::{cause, invalid_causes, warnings, CONFIGMAPS};

pub(crate) const POLICIES: &str =
    "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
pub(crate) const BINDINGS: &str =
    "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

/// A policy on configmap creates and updates with `spec` merged over the
/// defaults (a null removes a field).
pub(crate) fn policy(name: &str, changes: Value) -> Value {
    let mut spec = json!({
        "matchConstraints": {"resourceRules": [{
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["configmaps"],
        }]},
        "validations": [{"expression": "object.metadata.name != 'bad'"}],
    });
    merge(&mut spec, changes);
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// A binding of `policy` with `changes` merged into its spec.
pub(crate) fn binding(name: &str, policy: &str, changes: Value) -> Value {
    let mut spec = json!({"policyName": policy, "validationActions": ["Deny"]});
    merge(&mut spec, changes);
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": spec,
    })
}

fn merge(into: &mut Value, changes: Value) {
    if let (Some(into), Value::Object(changes)) = (into.as_object_mut(), changes) {
        for (k, v) in changes {
            if v.is_null() {
                into.remove(&k);
            } else {
                into.insert(k, v);
            }
        }
    }
}

/// The `(reason, field, message)` causes of the 422 a create gets.
async fn refused(kube: &Kube, collection: &str, obj: &Value) -> Vec<(String, String, String)> {
    invalid_causes(&kube.post(collection, obj).await)
}

#[tokio::test]
async fn policies_and_bindings_are_served_with_the_v1_defaults() {
    let kube = Kube::start().await;
    let resources = kube
        .get("/apis/admissionregistration.k8s.io/v1")
        .await
        .json();
    let listed: Vec<(String, bool)> = resources["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| {
            let name = r["name"].as_str()?;
            name.starts_with("validatingadmissionpolic")
                .then(|| (name.to_owned(), r["namespaced"].as_bool().unwrap_or(true)))
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            ("validatingadmissionpolicies".to_owned(), false),
            ("validatingadmissionpolicies/status".to_owned(), false),
            ("validatingadmissionpolicybindings".to_owned(), false),
        ]
    );

    let r = kube.post(POLICIES, &policy("names", json!({}))).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    let spec = &r.json()["spec"];
    assert_eq!(spec["failurePolicy"], "Fail");
    assert_eq!(spec["matchConstraints"]["matchPolicy"], "Equivalent");
    assert_eq!(spec["matchConstraints"]["namespaceSelector"], json!({}));
    assert_eq!(spec["matchConstraints"]["objectSelector"], json!({}));
    assert_eq!(spec["matchConstraints"]["resourceRules"][0]["scope"], "*");
    assert_eq!(r.json()["metadata"]["generation"], 1);

    let r = kube
        .post(
            BINDINGS,
            &binding(
                "names",
                "names",
                json!({"matchResources": {"namespaceSelector": {"matchLabels": {"a": "b"}}}}),
            ),
        )
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    let resources = &r.json()["spec"]["matchResources"];
    assert_eq!(resources["matchPolicy"], "Equivalent");
    assert_eq!(resources["objectSelector"], json!({}));
    assert_eq!(
        resources["namespaceSelector"],
        json!({"matchLabels": {"a": "b"}})
    );

    // The status subresource writes the status alone.
    let mut stored = kube.get(&format!("{POLICIES}/names")).await.json();
    stored["status"] = json!({"observedGeneration": 1});
    stored["spec"]["failurePolicy"] = json!("Ignore");
    let r = kube.put(&format!("{POLICIES}/names/status"), &stored).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["status"]["observedGeneration"], 1);
    assert_eq!(r.json()["spec"]["failurePolicy"], "Fail");
}

#[tokio::test]
async fn policy_writes_are_checked_as_kube_apiserver_checks_them() {
    let kube = Kube::start().await;
    let causes = refused(
        &kube,
        POLICIES,
        &policy(
            "empty",
            json!({"matchConstraints": null, "validations": null}),
        ),
    )
    .await;
    assert_eq!(
        causes,
        vec![
            cause(
                "FieldValueRequired",
                "spec.matchConstraints",
                "Required value"
            ),
            cause(
                "FieldValueRequired",
                "spec.validations",
                "Required value: validations or auditAnnotations must contain at least one item"
            ),
            cause(
                "FieldValueRequired",
                "spec.auditAnnotations",
                "Required value: validations or auditAnnotations must contain at least one item"
            ),
        ]
    );

    let causes = refused(
        &kube,
        POLICIES,
        &policy(
            "bad-validations",
            json!({
                "failurePolicy": "Sometimes",
                "matchConstraints": {"resourceRules": [], "matchPolicy": "Roughly"},
                "validations": [
                    {"expression": "object.x ==", "reason": "Teapot"},
                    {"expression": " ", "message": "two\nlines"},
                    {"expression": "true", "messageExpression": "'a' +"},
                ],
                "variables": [{"name": "in", "expression": "1"}],
            }),
        ),
    )
    .await;
    let summary: Vec<(&str, &str)> = causes
        .iter()
        .map(|(reason, field, _)| (reason.as_str(), field.as_str()))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("FieldValueNotSupported", "spec.failurePolicy"),
            (
                "FieldValueNotSupported",
                "spec.matchConstraints.matchPolicy"
            ),
            ("FieldValueRequired", "spec.matchConstraints.resourceRules"),
            ("FieldValueInvalid", "spec.variables[0].name"),
            ("FieldValueInvalid", "spec.validations[0].expression"),
            ("FieldValueNotSupported", "spec.validations[0].reason"),
            ("FieldValueRequired", "spec.validations[1].expression"),
            ("FieldValueInvalid", "spec.validations[1].message"),
            ("FieldValueInvalid", "spec.validations[2].messageExpression"),
        ]
    );
    assert_eq!(
        causes[0].2,
        "Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\""
    );
    assert_eq!(
        causes[3].2,
        "Invalid value: \"in\": name is not a valid CEL identifier"
    );
    assert!(
        causes[4]
            .2
            .starts_with("Invalid value: \"object.x ==\": compilation failed: "),
        "{}",
        causes[4].2
    );
    assert_eq!(
        causes[5].2,
        "Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\""
    );
    assert_eq!(causes[6].2, "Required value: expression is not specified");
    assert_eq!(
        causes[7].2,
        "Invalid value: \"two\\nlines\": message must not contain line breaks"
    );

    // The paramKind and the rules.
    let causes = refused(
        &kube,
        POLICIES,
        &policy(
            "bad-kinds",
            json!({
                "paramKind": {"apiVersion": "a/b/c"},
                "matchConstraints": {
                    "resourceRules": [{"operations": [], "apiGroups": [""], "apiVersions": ["v1"],
                        "resources": ["configmaps"], "resourceNames": ["x/y", "x/y"]}],
                    "objectSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]},
                },
            }),
        ),
    )
    .await;
    assert_eq!(
        causes,
        vec![
            cause(
                "FieldValueInvalid",
                "spec.paramKind.apiVersion",
                "Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c"
            ),
            cause(
                "FieldValueRequired",
                "spec.paramKind.kind",
                "Required value"
            ),
            cause(
                "FieldValueRequired",
                "spec.matchConstraints.objectSelector.matchExpressions[0].values",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'"
            ),
            cause(
                "FieldValueInvalid",
                "spec.matchConstraints.resourceRules[0].resourceNames[0]",
                "Invalid value: \"x/y\": may not contain '/'"
            ),
            cause(
                "FieldValueInvalid",
                "spec.matchConstraints.resourceRules[0].resourceNames[1]",
                "Invalid value: \"x/y\": may not contain '/'"
            ),
            cause(
                "FieldValueDuplicate",
                "spec.matchConstraints.resourceRules[0].resourceNames[1]",
                "Duplicate value: \"x/y\""
            ),
            cause(
                "FieldValueRequired",
                "spec.matchConstraints.resourceRules[0].operations",
                "Required value"
            ),
        ]
    );
}

#[tokio::test]
async fn binding_writes_are_checked_as_kube_apiserver_checks_them() {
    let kube = Kube::start().await;
    let causes = refused(
        &kube,
        BINDINGS,
        &binding("none", "", json!({"validationActions": []})),
    )
    .await;
    assert_eq!(
        causes,
        vec![
            cause("FieldValueRequired", "spec.policyName", "Required value"),
            cause(
                "FieldValueRequired",
                "spec.validationActions",
                "Required value: at least one validation action is required"
            ),
        ]
    );

    let causes = refused(
        &kube,
        BINDINGS,
        &binding(
            "both",
            "Not_A_Name",
            json!({"validationActions": ["Deny", "Warn", "Deny", "Log"]}),
        ),
    )
    .await;
    assert_eq!(causes.len(), 4, "{causes:?}");
    assert_eq!(causes[0].1, "spec.policyName");
    assert_eq!(
        causes[1],
        cause(
            "FieldValueDuplicate",
            "spec.validationActions[2]",
            "Duplicate value: \"Deny\""
        )
    );
    assert_eq!(
        causes[2],
        cause(
            "FieldValueNotSupported",
            "spec.validationActions[3]",
            "Unsupported value: \"Log\": supported values: \"Audit\", \"Deny\", \"Warn\""
        )
    );
    assert_eq!(
        causes[3],
        cause(
            "FieldValueInvalid",
            "spec.validationActions",
            "Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\", \"Deny\", \"Log\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"
        )
    );

    let causes = refused(
        &kube,
        BINDINGS,
        &binding(
            "params",
            "p",
            json!({"paramRef": {"name": "a", "selector": {}, "parameterNotFoundAction": "Maybe"},
                   "matchResources": {"matchPolicy": "Roughly"}}),
        ),
    )
    .await;
    assert_eq!(
        causes,
        vec![
            cause(
                "FieldValueForbidden",
                "spec.paramRef.name",
                "Forbidden: name and selector are mutually exclusive"
            ),
            cause(
                "FieldValueForbidden",
                "spec.paramRef.selector",
                "Forbidden: name and selector are mutually exclusive"
            ),
            cause(
                "FieldValueNotSupported",
                "spec.paramRef.parameterNotFoundAction",
                "Unsupported value: \"Maybe\": supported values: \"Deny\", \"Allow\""
            ),
            cause(
                "FieldValueNotSupported",
                "spec.matchResources.matchPolicy",
                "Unsupported value: \"Roughly\": supported values: \"Equivalent\", \"Exact\""
            ),
        ]
    );

    // Audit alone is a valid binding; Warn with Audit too.
    for (name, actions) in [
        ("audit", json!(["Audit"])),
        ("warn", json!(["Warn", "Audit"])),
    ] {
        let r = kube
            .post(
                BINDINGS,
                &binding(name, "p", json!({"validationActions": actions})),
            )
            .await;
        assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    }
}

/// Creates a policy and a binding, asserting both were stored.
async fn install(kube: &Kube, policy: Value, binding: Value) {
    for (collection, obj) in [(POLICIES, policy), (BINDINGS, binding)] {
        let r = kube.post(collection, &obj).await;
        assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    }
}

#[tokio::test]
async fn a_deny_binding_refuses_with_kubes_message_reason_and_cause() {
    let kube = Kube::start().await;
    install(
        &kube,
        policy(
            "names",
            json!({"validations": [
                {"expression": "object.metadata.name != 'bad'"},
                {"expression": "!has(object.data) || !('secret' in object.data)",
                 "message": "  no secrets in configmaps  ", "reason": "Forbidden"},
            ]}),
        ),
        binding("names-binding", "names", json!({})),
    )
    .await;
    let r = kube
        .post(CONFIGMAPS, &crate::configmap("bad", json!({})))
        .await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    let status = r.json();
    let denial = "ValidatingAdmissionPolicy 'names' with binding 'names-binding' denied request: failed expression: object.metadata.name != 'bad'";
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        format!("configmaps \"bad\" is forbidden: {denial}")
    );
    assert_eq!(status["details"]["name"], "bad");
    assert_eq!(status["details"]["kind"], "configmaps");
    assert_eq!(status["details"]["causes"], json!([{"message": denial}]));
    assert_eq!(kube.get(&format!("{CONFIGMAPS}/bad")).await.code(), 404);

    // The message and reason of the validation that failed.
    let mut secret = crate::configmap("leaky", json!({}));
    secret["data"] = json!({"secret": "x"});
    let r = kube.post(CONFIGMAPS, &secret).await;
    assert_eq!(r.code(), 403, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["reason"], "Forbidden");
    assert_eq!(
        r.json()["message"],
        "configmaps \"leaky\" is forbidden: ValidatingAdmissionPolicy 'names' with binding 'names-binding' denied request: no secrets in configmaps"
    );

    // Anything else passes; an update is judged too, with oldObject.
    let r = kube
        .post(CONFIGMAPS, &crate::configmap("good", json!({})))
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    let mut good = r.json();
    good["data"] = json!({"secret": "x"});
    let r = kube.put(&format!("{CONFIGMAPS}/good"), &good).await;
    assert_eq!(r.code(), 403, "{}", String::from_utf8_lossy(&r.body));

    // Without its binding the policy does nothing.
    assert_eq!(
        kube.delete(&format!("{BINDINGS}/names-binding"))
            .await
            .code(),
        200
    );
    let r = kube
        .post(CONFIGMAPS, &crate::configmap("bad", json!({})))
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
}

#[tokio::test]
async fn a_warn_binding_admits_with_a_warning_header() {
    let kube = Kube::start().await;
    install(
        &kube,
        policy(
            "labels",
            json!({"validations": [{
                "expression": "has(object.metadata.labels) && 'team' in object.metadata.labels",
                "messageExpression": "'configmap ' + object.metadata.name + ' has no team label'",
            }]}),
        ),
        binding(
            "labels-warn",
            "labels",
            json!({"validationActions": ["Warn", "Audit"]}),
        ),
    )
    .await;
    let r = kube
        .post(CONFIGMAPS, &crate::configmap("orphan", json!({})))
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        warnings(&r),
        vec!["299 - \"Validation failed for ValidatingAdmissionPolicy 'labels' with binding 'labels-warn': configmap orphan has no team label\"".to_owned()]
    );
    let r = kube
        .post(CONFIGMAPS, &crate::configmap("owned", json!({"team": "a"})))
        .await;
    assert_eq!(r.code(), 201);
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
}

#[tokio::test]
async fn match_constraints_selectors_and_binding_resources_pick_the_requests() {
    let kube = Kube::start().await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "guarded", "labels": {"policy": "on"}}});
    assert_eq!(kube.post("/api/v1/namespaces", &ns).await.code(), 201);
    install(
        &kube,
        policy(
            "no-x",
            json!({
                "matchConstraints": {
                    "resourceRules": [{"operations": ["CREATE", "DELETE"], "apiGroups": [""],
                        "apiVersions": ["v1"], "resources": ["configmaps"]}],
                    "excludeResourceRules": [{"operations": ["*"], "apiGroups": [""],
                        "apiVersions": ["v1"], "resources": ["configmaps"], "resourceNames": ["exempt"]}],
                    "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
                },
                "validations": [{"expression": "request.operation == 'DELETE' ? oldObject.data.x != 'keep' : object.data.x != 'x'"}],
            }),
        ),
        binding(
            "no-x-guarded",
            "no-x",
            json!({"matchResources": {"namespaceSelector": {"matchLabels": {"policy": "on"}}}}),
        ),
    )
    .await;
    const GUARDED: &str = "/api/v1/namespaces/guarded/configmaps";
    let with_x = |name: &str, x: &str, labels: Value| {
        let mut cm = crate::configmap(name, labels);
        cm["data"] = json!({"x": x});
        cm
    };
    // The binding's namespaceSelector leaves `default` alone.
    let r = kube.post(CONFIGMAPS, &with_x("a", "x", json!({}))).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    // In the guarded namespace it is judged.
    let r = kube.post(GUARDED, &with_x("a", "x", json!({}))).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    // The excluded name and the objectSelector escape.
    let r = kube.post(GUARDED, &with_x("exempt", "x", json!({}))).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    let r = kube
        .post(GUARDED, &with_x("skipped", "x", json!({"skip": "yes"})))
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    // A delete is judged by its oldObject (object is null).
    let r = kube.post(GUARDED, &with_x("kept", "keep", json!({}))).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    let r = kube.delete(&format!("{GUARDED}/kept")).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    // UPDATE is not among the operations.
    let mut kept = kube.get(&format!("{GUARDED}/kept")).await.json();
    kept["data"]["x"] = json!("x");
    assert_eq!(
        kube.put(&format!("{GUARDED}/kept"), &kept).await.code(),
        200
    );
}

#[tokio::test]
async fn failure_policy_match_conditions_and_variables() {
    let kube = Kube::start().await;
    // An expression that errors on objects without data.
    let erroring = json!({
        "matchConditions": [{"name": "labelled", "expression": "has(object.metadata.labels) && 'checked' in object.metadata.labels"}],
        "variables": [{"name": "size", "expression": "object.data.size()"}],
        "validations": [{"expression": "variables.size < 2", "message": "too many keys"}],
    });
    let mut ignoring = erroring.clone();
    ignoring["failurePolicy"] = json!("Ignore");
    ignoring["matchConditions"][0]["expression"] =
        json!("has(object.metadata.labels) && 'lenient' in object.metadata.labels");
    install(
        &kube,
        policy("strict", erroring),
        binding("strict", "strict", json!({})),
    )
    .await;
    install(
        &kube,
        policy("lenient", ignoring),
        binding("lenient", "lenient", json!({})),
    )
    .await;

    let mut big = crate::configmap("big", json!({"checked": "yes"}));
    big["data"] = json!({"a": "1", "b": "2"});
    let r = kube.post(CONFIGMAPS, &big).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["details"]["causes"][0]["message"],
        "ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: too many keys"
    );
    // The match condition leaves unlabelled objects alone.
    big["metadata"]["labels"] = json!({});
    assert_eq!(kube.post(CONFIGMAPS, &big).await.code(), 201);

    // No data: the variable fails, so the validation errs: under Fail a
    // denial naming the expression, under Ignore nothing.
    let mut empty = crate::configmap("empty", json!({"checked": "yes"}));
    empty.as_object_mut().map(|o| o.remove("data"));
    let r = kube.post(CONFIGMAPS, &empty).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    let message = r.json()["details"]["causes"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.starts_with("ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: expression 'variables.size < 2' resulted in error: "),
        "{message}"
    );
    empty["metadata"]["labels"] = json!({"lenient": "yes"});
    let r = kube.post(CONFIGMAPS, &empty).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
}
