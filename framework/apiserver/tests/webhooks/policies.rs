//! ValidatingAdmissionPolicies and their bindings
//! (`admissionregistration.k8s.io/v1`): served cluster-scoped with the v1
//! defaults and a status subresource for the policy, their writes checked
//! as kube-apiserver checks them (`validateValidatingAdmissionPolicySpec`,
//! `validateValidatingAdmissionPolicyBindingSpec`).

use serde_json::{json, Value};

use crate::common::Kube;

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
    let r = kube.post(collection, obj).await;
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

fn cause(reason: &str, field: &str, message: &str) -> (String, String, String) {
    (reason.into(), field.into(), message.into())
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
