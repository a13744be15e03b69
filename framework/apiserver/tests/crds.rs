//! Custom resources beyond the basics: several served versions, selectable
//! fields, printer columns and discovery of CRD groups.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod common;
mod poll;

use common::{ev, rv, Kube};
use serde_json::json;

async fn install(k: &Kube) {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.ex.com"},
        "spec": {"group": "ex.com", "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                // A selectable field must name a scalar the schema declares
                // (apiextensions validation.go, validateSelectableFields).
                {"name": "v1", "served": true, "storage": true,
                 "selectableFields": [{"jsonPath": ".spec.color"}],
                 "additionalPrinterColumns": [{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}],
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                     "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                              "properties": {"color": {"type": "string"}}},
                     "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}});
    k.create_crd(&crd).await;
}

#[tokio::test]
async fn every_served_version_reads_and_writes_the_same_objects() {
    let k = Kube::start().await;
    install(&k).await;
    let g = k.get("/apis/ex.com").await.json();
    assert_eq!(g["preferredVersion"]["version"], "v1");
    let versions: Vec<&str> = g["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v1", "v1beta1"]);
    let created = k
        .post("/apis/ex.com/v1beta1/namespaces/default/things", &json!({"apiVersion": "ex.com/v1beta1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"color": "red"}}))
        .await;
    assert_eq!(created.code(), 201);
    assert_eq!(created.json()["apiVersion"], "ex.com/v1beta1");
    let v1 = k
        .get("/apis/ex.com/v1/namespaces/default/things/t")
        .await
        .json();
    assert_eq!(v1["apiVersion"], "ex.com/v1");
    let list = k
        .get("/apis/ex.com/v1beta1/namespaces/default/things")
        .await
        .json();
    assert_eq!(list["apiVersion"], "ex.com/v1beta1");
    assert_eq!(list["items"][0]["apiVersion"], "ex.com/v1beta1");
    let mut w = k
        .watch(&format!(
            "/apis/ex.com/v1beta1/namespaces/default/things?watch=1&resourceVersion={}",
            rv(&v1)
        ))
        .await;
    k.merge(
        "/apis/ex.com/v1/namespaces/default/things/t",
        &json!({"spec": {"color": "blue"}}),
    )
    .await;
    let e = w.next().await;
    assert_eq!(ev(&e), ("MODIFIED".into(), "t".into()));
    assert_eq!(e["object"]["apiVersion"], "ex.com/v1beta1");
    assert_eq!(
        k.get("/apis/ex.com/v2/namespaces/default/things")
            .await
            .code(),
        404
    );
}

#[tokio::test]
async fn selectable_fields_and_printer_columns_with_filters() {
    let k = Kube::start().await;
    install(&k).await;
    for (n, c) in [("a", "red"), ("b", "blue")] {
        k.post("/apis/ex.com/v1/namespaces/default/things", &json!({"apiVersion": "ex.com/v1", "kind": "Thing", "metadata": {"name": n}, "spec": {"color": c}})).await;
    }
    let l = k
        .get("/apis/ex.com/v1/namespaces/default/things?fieldSelector=spec.color%3Dblue")
        .await
        .json();
    let names: Vec<&str> = l["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b"]);
    let bad = k
        .get("/apis/ex.com/v1/namespaces/default/things?fieldSelector=spec.size%3D1")
        .await;
    assert_eq!(bad.code(), 400);
    assert_eq!(
        bad.json()["message"],
        "field label not supported: spec.size"
    );
    k.merge("/apis/ex.com/v1/namespaces/default/things/a", &json!({"status": {"conditions": [{"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]}})).await;
    let t = k
        .get_accept(
            "/apis/ex.com/v1/namespaces/default/things",
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await
        .json();
    assert_eq!(t["rows"][0]["cells"], json!(["a", "True"]));
    assert_eq!(t["rows"][1]["cells"], json!(["b", null]));
}

#[tokio::test]
async fn a_terminating_crd_waits_for_its_objects_and_refuses_new_ones() {
    let k = Kube::start().await;
    install(&k).await;
    let things = "/apis/ex.com/v1/namespaces/default/things";
    k.post(things, &json!({"apiVersion": "ex.com/v1", "kind": "Thing", "metadata": {"name": "held", "finalizers": ["ex.com/x"]}})).await;
    k.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.ex.com")
        .await;
    let crd = k
        .get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.ex.com")
        .await
        .json();
    let conds = crd["status"]["conditions"].as_array().unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c["type"] == "Terminating" && c["status"] == "True"),
        "{crd}"
    );
    let r = k
        .post(
            things,
            &json!({"apiVersion": "ex.com/v1", "kind": "Thing", "metadata": {"name": "new"}}),
        )
        .await;
    assert_eq!(r.code(), 405);
    assert_eq!(
        r.json()["message"],
        "create not allowed while custom resource definition is terminating"
    );
    k.patch(
        &format!("{things}/held"),
        "application/json-patch+json",
        &json!([{"op": "remove", "path": "/metadata/finalizers"}]),
    )
    .await;
    poll::eventually("the CRD to go away", async || {
        k.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.ex.com")
            .await
            .code()
            == 404
    })
    .await;
    assert_eq!(k.get(things).await.code(), 404);
}

/// A CRD with one rule on a `spec` declaring `a` (a string).
fn crd_with_rule(name: &str, rule: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{name}.rules.example.com")},
        "spec": {"group": "rules.example.com", "scope": "Namespaced",
            "names": {"plural": name, "kind": "Rule"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object",
                             "properties": {"a": {"type": "string"}},
                             "x-kubernetes-validations": [rule]}}}}}]}})
}

#[tokio::test]
async fn rules_that_do_not_compile_are_refused_naming_the_rule_and_the_error() {
    let k = Kube::start().await;
    let field = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";
    for (rule, detail) in [
        (
            "self.nope == 1",
            "compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.nope == 1\n | ....^",
        ),
        ("1", "cel expression must evaluate to a bool"),
        (
            "self.a.matches(\"(\")",
            "compilation failed: ERROR: <input>:1:16: invalid matches argument\n | self.a.matches(\"(\")\n | ...............^",
        ),
    ] {
        let r = k
            .post(
                common::CRDS,
                &crd_with_rule("things", json!({"rule": rule})),
            )
            .await;
        assert_eq!(r.code(), 422, "{rule}: {}", String::from_utf8_lossy(&r.body));
        let cause = &r.json()["details"]["causes"][0];
        assert_eq!(cause["field"], field);
        assert_eq!(
            cause["message"],
            format!(
                "Invalid value: {}: {detail}",
                serde_json::to_string(&json!({"rule": rule})).unwrap()
            ),
            "{rule}"
        );
    }
    // What kube-apiserver accepts is accepted.
    for (i, rule) in [
        "self.a.matches('^[a-z]+$') && size(self.a) < 10",
        "!has(self.a) || self.a.startsWith('x')",
        "self.a.size() >= 0 && self.a != 'z'",
        "type(self.a) == string",
    ]
    .iter()
    .enumerate()
    {
        let r = k
            .post(
                common::CRDS,
                &crd_with_rule(&format!("ok{i}s"), json!({"rule": rule})),
            )
            .await;
        assert_eq!(
            r.code(),
            201,
            "{rule}: {}",
            String::from_utf8_lossy(&r.body)
        );
    }
}
