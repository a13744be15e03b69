//! Webhook configuration writes checked as kube-apiserver checks them
//! (`pkg/apis/admissionregistration/validation`): each rule group refused
//! with a 422 Invalid naming the field and giving kube-apiserver's
//! message; the v1 defaults shown on a read.

use serde_json::{json, Value};

use crate::common::Kube;
use crate::{cause, invalid_causes, MUTATING, VALIDATING};

/// A valid webhook with `changes` applied (a null removes a field).
fn hook(changes: Value) -> Value {
    let mut w = json!({
        "name": "check.example.com",
        "clientConfig": {"url": "https://hooks.example.com/check"},
        "rules": [{
            "operations": ["CREATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["configmaps"],
        }],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(w), Some(changes)) = (w.as_object_mut(), changes.as_object()) {
        for (k, v) in changes {
            if v.is_null() {
                w.remove(k);
            } else {
                w.insert(k.clone(), v.clone());
            }
        }
    }
    w
}

fn configuration(collection: &str, webhooks: Vec<Value>) -> Value {
    let kind = if collection == MUTATING {
        "MutatingWebhookConfiguration"
    } else {
        "ValidatingWebhookConfiguration"
    };
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": "checks"},
        "webhooks": webhooks,
    })
}

/// The causes of the 422 a create of these webhooks gets, as
/// `(reason, field, message)`.
async fn refused(
    kube: &Kube,
    collection: &str,
    webhooks: Vec<Value>,
) -> Vec<(String, String, String)> {
    let r = kube
        .post(collection, &configuration(collection, webhooks))
        .await;
    let causes = invalid_causes(&r);
    assert_eq!(r.json()["details"]["name"], "checks");
    causes
}

#[tokio::test]
async fn policies_and_the_timeout_are_checked() {
    let kube = Kube::start().await;
    let causes = refused(
        &kube,
        MUTATING,
        vec![hook(json!({
            "failurePolicy": "Sometimes",
            "matchPolicy": "Approximately",
            "timeoutSeconds": 31,
            "reinvocationPolicy": "Always",
        }))],
    )
    .await;
    assert_eq!(
        causes,
        vec![
            cause(
                "FieldValueNotSupported",
                "webhooks[0].failurePolicy",
                "Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\""
            ),
            cause(
                "FieldValueNotSupported",
                "webhooks[0].matchPolicy",
                "Unsupported value: \"Approximately\": supported values: \"Equivalent\", \"Exact\""
            ),
            cause(
                "FieldValueInvalid",
                "webhooks[0].timeoutSeconds",
                "Invalid value: 31: the timeout value must be between 1 and 30 seconds"
            ),
            cause(
                "FieldValueNotSupported",
                "webhooks[0].reinvocationPolicy",
                "Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\""
            ),
        ]
    );
    let causes = refused(&kube, VALIDATING, vec![hook(json!({"timeoutSeconds": 0}))]).await;
    assert_eq!(
        causes,
        vec![cause(
            "FieldValueInvalid",
            "webhooks[0].timeoutSeconds",
            "Invalid value: 0: the timeout value must be between 1 and 30 seconds"
        )]
    );
    // Nothing was stored.
    assert_eq!(kube.get(&format!("{MUTATING}/checks")).await.code(), 404);
}

#[tokio::test]
async fn side_effects_and_review_versions_are_required_and_known() {
    let kube = Kube::start().await;
    let causes = refused(
        &kube,
        VALIDATING,
        vec![
            hook(json!({"name": "a.example.com", "sideEffects": null, "admissionReviewVersions": null})),
            hook(json!({"name": "b.example.com", "sideEffects": "Some", "admissionReviewVersions": ["v2"]})),
            hook(json!({"name": "c.example.com", "sideEffects": "Unknown", "admissionReviewVersions": ["v1", "v1", "V1beta1"]})),
        ],
    )
    .await;
    assert_eq!(
        causes,
        vec![
            cause("FieldValueRequired", "webhooks[0].sideEffects", "Required value: must specify one of None, NoneOnDryRun"),
            cause("FieldValueRequired", "webhooks[0].admissionReviewVersions", "Required value: must specify one of v1, v1beta1"),
            cause("FieldValueNotSupported", "webhooks[1].sideEffects", "Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\""),
            cause("FieldValueInvalid", "webhooks[1].admissionReviewVersions", "Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1"),
            cause("FieldValueNotSupported", "webhooks[2].sideEffects", "Unsupported value: \"Unknown\": supported values: \"None\", \"NoneOnDryRun\""),
            cause("FieldValueInvalid", "webhooks[2].admissionReviewVersions[1]", "Invalid value: \"v1\": duplicate version"),
            cause("FieldValueInvalid", "webhooks[2].admissionReviewVersions[2]", "Invalid value: \"V1beta1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"),
        ]
    );
}

#[tokio::test]
async fn webhook_names_are_fully_qualified_and_unique() {
    let kube = Kube::start().await;
    let r = kube
        .post(
            VALIDATING,
            &configuration(VALIDATING, vec![hook(json!({"name": "short.example"}))]),
        )
        .await;
    assert_eq!(r.code(), 422);
    assert_eq!(
        r.json()["message"],
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"checks\" is invalid: \
         webhooks[0].name: Invalid value: \"short.example\": should be a domain with at least three segments separated by dots"
    );
    let causes = refused(
        &kube,
        MUTATING,
        vec![
            hook(json!({"name": ""})),
            hook(json!({"name": "Check.Example.com"})),
            hook(json!({"name": "twice.example.com"})),
            hook(json!({"name": "twice.example.com"})),
        ],
    )
    .await;
    assert_eq!(
        causes,
        vec![
            cause("FieldValueRequired", "webhooks[0].name", "Required value"),
            cause("FieldValueInvalid", "webhooks[1].name", "Invalid value: \"Check.Example.com\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
            cause("FieldValueDuplicate", "webhooks[3].name", "Duplicate value: \"twice.example.com\""),
        ]
    );
}

#[tokio::test]
async fn client_configs_name_one_https_url_or_a_service() {
    let kube = Kube::start().await;
    let form = "; desired format: https://host[/path]";
    let causes = refused(
        &kube,
        VALIDATING,
        vec![
            hook(json!({"name": "a.example.com", "clientConfig": {}})),
            hook(json!({"name": "b.example.com", "clientConfig": {
                "url": "https://h.example.com/x",
                "service": {"namespace": "ns", "name": "svc"}}})),
            hook(json!({"name": "c.example.com", "clientConfig": {"url": "http://me:secret@h.example.com/x?a=b#top"}})),
            hook(json!({"name": "d.example.com", "clientConfig": {"url": "h.example.com/x"}})),
            hook(json!({"name": "e.example.com", "clientConfig": {"service": {
                "namespace": "", "name": "svc", "port": 0, "path": "validate//Me"}}})),
        ],
    )
    .await;
    assert_eq!(
        causes,
        vec![
            cause("FieldValueRequired", "webhooks[0].clientConfig", "Required value: exactly one of url or service is required"),
            cause("FieldValueRequired", "webhooks[1].clientConfig", "Required value: exactly one of url or service is required"),
            cause("FieldValueInvalid", "webhooks[2].clientConfig.url", &format!("Invalid value: \"http\": 'https' is the only allowed URL scheme{form}")),
            cause("FieldValueInvalid", "webhooks[2].clientConfig.url", "Invalid value: \"me:secret\": user information is not permitted in the URL"),
            cause("FieldValueInvalid", "webhooks[2].clientConfig.url", "Invalid value: \"top\": fragments are not permitted in the URL"),
            cause("FieldValueInvalid", "webhooks[2].clientConfig.url", "Invalid value: \"a=b\": query parameters are not permitted in the URL"),
            cause("FieldValueInvalid", "webhooks[3].clientConfig.url", &format!("Invalid value: \"\": 'https' is the only allowed URL scheme{form}")),
            cause("FieldValueInvalid", "webhooks[3].clientConfig.url", &format!("Invalid value: \"\": host must be specified{form}")),
            cause("FieldValueRequired", "webhooks[4].clientConfig.service.namespace", "Required value"),
            cause("FieldValueInvalid", "webhooks[4].clientConfig.service.port", "Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive"),
            cause("FieldValueInvalid", "webhooks[4].clientConfig.service.path", "Invalid value: \"validate//Me\": must start with a '/'"),
            cause("FieldValueInvalid", "webhooks[4].clientConfig.service.path", "Invalid value: \"validate//Me\": segment[1] may not be empty"),
            cause("FieldValueInvalid", "webhooks[4].clientConfig.service.path", "Invalid value: \"validate//Me\": segment[2]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
        ]
    );
}

#[tokio::test]
async fn rules_name_operations_groups_versions_resources_and_a_scope() {
    let kube = Kube::start().await;
    let rules = json!([
        {"operations": [], "apiGroups": [], "apiVersions": ["*", "v1"], "resources": []},
        {"operations": ["*", "CREATE", "GET"], "apiGroups": ["*", "apps"], "apiVersions": [""],
         "resources": ["*/*", "pods"], "scope": "Everywhere"},
    ]);
    let causes = refused(&kube, MUTATING, vec![hook(json!({"rules": rules}))]).await;
    assert_eq!(
        causes,
        vec![
            cause("FieldValueRequired", "webhooks[0].rules[0].operations", "Required value"),
            cause("FieldValueRequired", "webhooks[0].rules[0].apiGroups", "Required value"),
            cause("FieldValueInvalid", "webhooks[0].rules[0].apiVersions", "Invalid value: []string{\"*\", \"v1\"}: if '*' is present, must not specify other API versions"),
            cause("FieldValueRequired", "webhooks[0].rules[0].resources", "Required value"),
            cause("FieldValueInvalid", "webhooks[0].rules[1].operations", "Invalid value: []admissionregistration.OperationType{\"*\", \"CREATE\", \"GET\"}: if '*' is present, must not specify other operations"),
            cause("FieldValueNotSupported", "webhooks[0].rules[1].operations[2]", "Unsupported value: \"GET\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\""),
            cause("FieldValueInvalid", "webhooks[0].rules[1].apiGroups", "Invalid value: []string{\"*\", \"apps\"}: if '*' is present, must not specify other API groups"),
            cause("FieldValueRequired", "webhooks[0].rules[1].apiVersions[0]", "Required value"),
            cause("FieldValueInvalid", "webhooks[0].rules[1].resources", "Invalid value: []string{\"*/*\", \"pods\"}: if '*/*' is present, must not specify other resources"),
            cause("FieldValueNotSupported", "webhooks[0].rules[1].scope", "Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\""),
        ]
    );
}

#[tokio::test]
async fn selectors_are_valid_label_selectors() {
    let kube = Kube::start().await;
    let causes = refused(
        &kube,
        VALIDATING,
        vec![hook(json!({
            "namespaceSelector": {"matchExpressions": [
                {"key": "env", "operator": "Maybe"},
                {"key": "env", "operator": "In"},
                {"key": "-env", "operator": "Exists", "values": ["x"]},
            ]},
            "objectSelector": {"matchLabels": {"app": "-bad-"}},
        }))],
    )
    .await;
    let label_value = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    assert_eq!(
        causes,
        vec![
            cause("FieldValueInvalid", "webhooks[0].namespaceSelector.matchExpressions[0].operator", "Invalid value: \"Maybe\": not a valid selector operator"),
            cause("FieldValueRequired", "webhooks[0].namespaceSelector.matchExpressions[1].values", "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
            cause("FieldValueForbidden", "webhooks[0].namespaceSelector.matchExpressions[2].values", "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
            cause("FieldValueInvalid", "webhooks[0].namespaceSelector.matchExpressions[2].key", "Invalid value: \"-env\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
            cause("FieldValueInvalid", "webhooks[0].objectSelector.matchLabels", &format!("Invalid value: \"-bad-\": {label_value}")),
        ]
    );
}

#[tokio::test]
async fn match_conditions_are_named_once_and_compile() {
    let kube = Kube::start().await;
    let causes = refused(
        &kube,
        MUTATING,
        vec![hook(json!({"matchConditions": [
            {"name": "first", "expression": "true"},
            {"name": "first", "expression": "object.metadata.name =="},
        ]}))],
    )
    .await;
    let fields: Vec<(&str, &str)> = causes
        .iter()
        .map(|(reason, field, _)| (reason.as_str(), field.as_str()))
        .collect();
    assert_eq!(
        fields,
        vec![
            (
                "FieldValueInvalid",
                "webhooks[0].matchConditions[1].expression"
            ),
            ("FieldValueDuplicate", "webhooks[0].matchConditions[1].name"),
        ]
    );
    assert!(causes[0].2.contains("compilation failed"), "{causes:?}");
}

#[tokio::test]
async fn a_read_shows_the_v1_defaults() {
    let kube = Kube::start().await;
    let service = json!({"clientConfig": {"service": {"namespace": "system", "name": "webhook-service", "path": "/mutate"}}});
    for collection in [MUTATING, VALIDATING] {
        let r = kube
            .post(
                collection,
                &configuration(collection, vec![hook(service.clone())]),
            )
            .await;
        assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
        let read = kube.get(&format!("{collection}/checks")).await.json();
        let w = &read["webhooks"][0];
        assert_eq!(w["failurePolicy"], "Fail");
        assert_eq!(w["matchPolicy"], "Equivalent");
        assert_eq!(w["timeoutSeconds"], 10);
        assert_eq!(w["namespaceSelector"], json!({}));
        assert_eq!(w["objectSelector"], json!({}));
        assert_eq!(w["rules"][0]["scope"], "*");
        assert_eq!(w["clientConfig"]["service"]["port"], 443);
        let reinvocation = w.get("reinvocationPolicy").cloned();
        if collection == MUTATING {
            assert_eq!(reinvocation, Some(json!("Never")));
        } else {
            assert_eq!(reinvocation, None);
        }
        // An update that drops a defaulted field gets it back.
        let mut next = read.clone();
        next["webhooks"][0]
            .as_object_mut()
            .expect("webhook")
            .remove("failurePolicy");
        let r = kube.put(&format!("{collection}/checks"), &next).await;
        assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.json()["webhooks"][0]["failurePolicy"], "Fail");
    }
}
