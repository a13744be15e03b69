//! CRD validation and custom-resource schemas on the wire: 422s with one
//! cause per field error (apiextensions validation), and custom resources
//! pruned, defaulted and validated — CEL rules included — on create,
//! update, every patch type, server-side apply and `/status`, with
//! `fieldValidation` Strict/Warn/Ignore, and defaulted on read after the
//! schema changes.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod common;

use common::{Kube, Resp, CRDS};
use serde_json::{json, Value};

const GADGETS: &str = "/apis/ex.com/v1/namespaces/default/gadgets";

fn gadget_schema() -> Value {
    json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "color": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
                "mode": {"type": "object", "default": {}, "properties": {
                    "level": {"type": "string", "default": "low"}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"}
            },
            "x-kubernetes-validations": [
                {"rule": "self.size <= 5 || self.color == 'red'", "message": "big gadgets must be red"},
                {"rule": "!has(oldSelf.name) || self.name == oldSelf.name", "message": "name is immutable", "fieldPath": ".name"}
            ]},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
    }})
}

fn gadget_crd(schema: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.ex.com"},
        "spec": {"group": "ex.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": schema}}]}})
}

async fn install(k: &Kube) {
    k.create_crd(&gadget_crd(gadget_schema())).await;
}

fn gadget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "ex.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec})
}

fn causes(r: &Resp) -> Vec<(String, String)> {
    r.json()["details"]["causes"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c["reason"].as_str().unwrap_or("").to_owned(),
                        c["field"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn warnings(r: &Resp) -> Vec<String> {
    r.headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn invalid_crds_are_422_with_one_cause_per_error() {
    let k = Kube::start().await;
    let bad = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "bads.ex.com"},
        "spec": {"group": "ex.com", "scope": "Namespaced",
            "names": {"plural": "bads", "kind": "Bad"},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                     "spec": {"properties": {"x": {"type": "string"}}}}}}},
                {"name": "v2", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    let r = k.post(CRDS, &bad).await;
    assert_eq!(r.code(), 422);
    let s = r.json();
    assert_eq!(s["reason"], "Invalid");
    assert_eq!(s["details"]["kind"], "CustomResourceDefinition");
    assert_eq!(s["details"]["group"], "apiextensions.k8s.io");
    assert_eq!(s["details"]["name"], "bads.ex.com");
    let message = s["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "CustomResourceDefinition.apiextensions.k8s.io \"bads.ex.com\" is invalid: ["
        ),
        "{message}"
    );
    let cs = causes(&r);
    assert!(
        cs.contains(&("FieldValueInvalid".into(), "spec.versions".into())),
        "two storage versions: {cs:?}"
    );
    assert!(
        cs.iter()
            .any(|(reason, field)| reason == "FieldValueRequired"
                && field.ends_with("openAPIV3Schema.properties[spec].type")),
        "untyped node: {cs:?}"
    );
    // Every cause is in the message.
    for c in s["details"]["causes"].as_array().unwrap() {
        assert!(message.contains(c["message"].as_str().unwrap()), "{c}");
    }
    // The name must be <plural>.<group>.
    let mut misnamed = gadget_crd(gadget_schema());
    misnamed["metadata"]["name"] = json!("gadget.ex.com");
    let r = k.post(CRDS, &misnamed).await;
    assert_eq!(r.code(), 422);
    assert_eq!(
        causes(&r),
        [("FieldValueInvalid".to_owned(), "metadata.name".to_owned())]
    );
    // A default that breaks its own schema.
    let r = k
        .post(
            CRDS,
            &gadget_crd(json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "default": "big"}}}}})),
        )
        .await;
    assert_eq!(r.code(), 422);
    assert!(
        causes(&r)
            .iter()
            .any(|(_, f)| f.ends_with("properties[size].default")),
        "{:?}",
        causes(&r)
    );
}

#[tokio::test]
async fn crds_get_their_defaults_and_updates_are_validated() {
    let k = Kube::start().await;
    install(&k).await;
    let crd = k.get(&format!("{CRDS}/gadgets.ex.com")).await.json();
    assert_eq!(crd["spec"]["names"]["singular"], "gadget");
    assert_eq!(crd["spec"]["names"]["listKind"], "GadgetList");
    assert_eq!(crd["spec"]["conversion"]["strategy"], "None");
    // Changing the scope of a CRD is forbidden (immutable once stored).
    let mut update = crd.clone();
    update["spec"]["scope"] = json!("Cluster");
    let r = k.put(&format!("{CRDS}/gadgets.ex.com"), &update).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    assert!(
        causes(&r).iter().any(|(_, f)| f == "spec.scope"),
        "{:?}",
        causes(&r)
    );
}

#[tokio::test]
async fn custom_resources_are_pruned_and_defaulted_with_field_validation() {
    let k = Kube::start().await;
    install(&k).await;
    // Warn (the default): dropped, with a 299 warning each.
    let r = k
        .post(
            GADGETS,
            &gadget(
                "a",
                json!({"size": 2, "bogus": 1, "free": {"any": {"thing": 1}},
                "mode": {"extra": true}}),
            ),
        )
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        warnings(&r),
        [
            "299 - \"unknown field \\\"spec.bogus\\\"\"",
            "299 - \"unknown field \\\"spec.mode.extra\\\"\""
        ]
    );
    let obj = r.json();
    assert_eq!(
        obj["spec"],
        json!({"size": 2, "color": "blue", "mode": {"level": "low"}, "free": {"any": {"thing": 1}}}),
        "pruned and defaulted (nested defaults of a defaulted object too)"
    );
    // Strict: a 400 naming every unknown field.
    let r = k
        .post(
            &format!("{GADGETS}?fieldValidation=Strict"),
            &gadget("b", json!({"size": 2, "bogus": 1, "more": 2})),
        )
        .await;
    assert_eq!(r.code(), 400);
    assert_eq!(
        r.json()["message"],
        "strict decoding error: unknown field \"spec.bogus\", unknown field \"spec.more\""
    );
    // Ignore: dropped silently.
    let r = k
        .post(
            &format!("{GADGETS}?fieldValidation=Ignore"),
            &gadget("c", json!({"size": 2, "bogus": 1})),
        )
        .await;
    assert_eq!(r.code(), 201);
    assert!(warnings(&r).is_empty());
    assert!(r.json()["spec"].get("bogus").is_none());
    // Unknown metadata fields are pruned too; apiVersion/kind stay.
    let mut odd = gadget("d", json!({"size": 1}));
    odd["metadata"]["bogus"] = json!("x");
    odd["top"] = json!(1);
    let r = k.post(GADGETS, &odd).await;
    assert_eq!(r.code(), 201);
    let obj = r.json();
    assert!(obj.get("top").is_none() && obj["metadata"].get("bogus").is_none());
    // Merge patches, JSON patches and apply are pruned and defaulted as well.
    let r = k
        .merge(
            &format!("{GADGETS}/a?fieldValidation=Strict"),
            &json!({"spec": {"nope": 1}}),
        )
        .await;
    assert_eq!(r.code(), 400);
    let r = k
        .patch(
            &format!("{GADGETS}/a"),
            "application/json-patch+json",
            &json!([{"op": "remove", "path": "/spec/color"}]),
        )
        .await;
    assert_eq!(r.code(), 200);
    assert_eq!(r.json()["spec"]["color"], "blue", "defaulted again");
    let r = k
        .patch(
            &format!("{GADGETS}/e?fieldManager=tool"),
            "application/apply-patch+yaml",
            &gadget("e", json!({"size": 3, "junk": 1})),
        )
        .await;
    assert_eq!(r.code(), 201);
    assert_eq!(
        r.json()["spec"],
        json!({"size": 3, "color": "blue", "mode": {"level": "low"}})
    );
    let r = k
        .patch(
            &format!("{GADGETS}/e?fieldManager=tool&fieldValidation=Strict"),
            "application/apply-patch+yaml",
            &gadget("e", json!({"size": 3, "junk": 1})),
        )
        .await;
    assert_eq!(r.code(), 400);
}

#[tokio::test]
async fn custom_resources_are_validated_on_every_write() {
    let k = Kube::start().await;
    install(&k).await;
    // Schema errors: one cause each, message as kube-apiserver words it.
    let r = k
        .post(
            GADGETS,
            &gadget("a", json!({"size": 11, "color": "green", "name": "ABC"})),
        )
        .await;
    assert_eq!(r.code(), 422);
    let s = r.json();
    assert_eq!(s["details"]["kind"], "Gadget");
    assert_eq!(s["details"]["group"], "ex.com");
    assert_eq!(
        causes(&r),
        [
            ("FieldValueNotSupported".to_owned(), "spec.color".to_owned()),
            ("FieldValueInvalid".to_owned(), "spec.name".to_owned()),
            ("FieldValueInvalid".to_owned(), "spec.size".to_owned()),
            ("FieldValueInvalid".to_owned(), "<nil>".to_owned()),
        ],
        "{s}"
    );
    let message = s["message"].as_str().unwrap();
    assert!(
        message.starts_with("Gadget.ex.com \"a\" is invalid: ["),
        "{message}"
    );
    assert!(
        message.contains(
            "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"
        ),
        "{message}"
    );
    // Required.
    let r = k.post(GADGETS, &gadget("a", json!({}))).await;
    assert_eq!(r.code(), 422);
    assert!(causes(&r).contains(&("FieldValueRequired".into(), "spec.size".into())));
    // CEL.
    let r = k.post(GADGETS, &gadget("a", json!({"size": 7}))).await;
    assert_eq!(r.code(), 422);
    assert_eq!(
        r.json()["message"],
        "Gadget.ex.com \"a\" is invalid: spec: Invalid value: \"object\": big gadgets must be red"
    );
    assert_eq!(
        k.post(
            GADGETS,
            &gadget("a", json!({"size": 7, "color": "red", "name": "abc"}))
        )
        .await
        .code(),
        201
    );
    // Transition rules see the old object on updates and patches.
    let r = k
        .merge(&format!("{GADGETS}/a"), &json!({"spec": {"name": "xyz"}}))
        .await;
    assert_eq!(r.code(), 422);
    assert_eq!(
        causes(&r),
        [("FieldValueInvalid".to_owned(), "spec.name".to_owned())]
    );
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .contains("name is immutable"));
    let r = k
        .merge(&format!("{GADGETS}/a"), &json!({"spec": {"size": 0}}))
        .await;
    assert_eq!(r.code(), 422);
    // Server-side apply.
    let r = k
        .patch(
            &format!("{GADGETS}/a?fieldManager=tool&force=true"),
            "application/apply-patch+yaml",
            &gadget("a", json!({"size": 100})),
        )
        .await;
    assert_eq!(r.code(), 422);
    // The status subresource: validated and pruned, spec untouched.
    let status = format!("{GADGETS}/a/status");
    let r = k.merge(&status, &json!({"status": {"ready": "yes"}})).await;
    assert_eq!(r.code(), 422);
    // With a type error the CEL rules are not run, and kube-apiserver says so
    // (customresource validator: hasBlockingErr).
    assert_eq!(
        causes(&r),
        [
            (
                "FieldValueTypeInvalid".to_owned(),
                "status.ready".to_owned()
            ),
            ("FieldValueInvalid".to_owned(), "<nil>".to_owned())
        ]
    );
    let r = k
        .merge(&status, &json!({"status": {"ready": true, "extra": 1}}))
        .await;
    assert_eq!(r.code(), 200);
    assert_eq!(r.json()["status"], json!({"ready": true}));
    assert_eq!(
        warnings(&r),
        ["299 - \"unknown field \\\"status.extra\\\"\""]
    );
}

#[tokio::test]
async fn an_invalid_stored_value_does_not_block_unrelated_updates() {
    // Validation ratcheting: errors about values that did not change are
    // dropped on update, so tightening a schema does not lock objects.
    let k = Kube::start().await;
    install(&k).await;
    assert_eq!(
        k.post(GADGETS, &gadget("a", json!({"size": 9, "color": "red"})))
            .await
            .code(),
        201
    );
    let mut tighter = gadget_schema();
    tighter["properties"]["spec"]["properties"]["size"]["maximum"] = json!(5);
    let mut crd = k.get(&format!("{CRDS}/gadgets.ex.com")).await.json();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = tighter;
    assert_eq!(
        k.put(&format!("{CRDS}/gadgets.ex.com"), &crd).await.code(),
        200
    );
    let r = k
        .merge(
            &format!("{GADGETS}/a"),
            &json!({"metadata": {"labels": {"x": "y"}}}),
        )
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let r = k
        .merge(&format!("{GADGETS}/a"), &json!({"spec": {"size": 8}}))
        .await;
    assert_eq!(r.code(), 422);
}

#[tokio::test]
async fn stored_objects_are_defaulted_on_read_after_the_schema_changes() {
    let k = Kube::start().await;
    install(&k).await;
    let created = k
        .post(GADGETS, &gadget("a", json!({"size": 1})))
        .await
        .json();
    let rv = created["metadata"]["resourceVersion"].clone();
    let mut schema = gadget_schema();
    schema["properties"]["spec"]["properties"]["shape"] =
        json!({"type": "string", "default": "round"});
    let mut crd = k.get(&format!("{CRDS}/gadgets.ex.com")).await.json();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema;
    assert_eq!(
        k.put(&format!("{CRDS}/gadgets.ex.com"), &crd).await.code(),
        200
    );
    let read = k.get(&format!("{GADGETS}/a")).await.json();
    assert_eq!(read["spec"]["shape"], "round");
    assert_eq!(
        read["metadata"]["resourceVersion"], rv,
        "defaulting on read is not a write"
    );
    let list = k.get(GADGETS).await.json();
    assert_eq!(list["items"][0]["spec"]["shape"], "round");
}
