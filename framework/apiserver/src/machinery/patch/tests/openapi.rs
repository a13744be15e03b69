//! Merge schemas read from a CRD's `openAPIV3Schema`, and apply on a custom
//! resource with them.

use serde_json::{json, Value};

use super::super::{apply, ApplyError, ListType, MergeSchema, OpenApiMergeSchema};
use super::{fields_of, yaml};

fn widget_schema() -> OpenApiMergeSchema {
    OpenApiMergeSchema::new(yaml(
        r#"
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  spec:
    type: object
    properties:
      size: {type: integer}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [port, protocol]
        items:
          type: object
          properties:
            port: {type: integer}
            protocol: {type: string, default: TCP}
            name: {type: string}
      tags:
        type: array
        x-kubernetes-list-type: set
        items: {type: string}
      plain:
        type: array
        items: {type: string}
      ref:
        type: object
        x-kubernetes-map-type: atomic
        properties:
          name: {type: string}
          kind: {type: string}
      settings:
        type: object
        additionalProperties: {type: string}
      raw:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#,
    ))
}

#[test]
fn crd_schema_extensions_become_merge_rules() {
    let s = widget_schema();
    assert_eq!(
        s.list_type(&["spec", "ports"]),
        ListType::Map(vec!["port".into(), "protocol".into()])
    );
    assert_eq!(
        s.list_key_default(&["spec", "ports"], "protocol"),
        Some(json!("TCP"))
    );
    assert_eq!(s.list_key_default(&["spec", "ports"], "port"), None);
    assert_eq!(s.list_type(&["spec", "tags"]), ListType::Set);
    assert_eq!(s.list_type(&["spec", "plain"]), ListType::Atomic);
    assert_eq!(s.list_type(&["spec", "nothere"]), ListType::Atomic);
    assert!(s.map_is_atomic(&["spec", "ref"]));
    assert!(!s.map_is_atomic(&["spec"]));
    assert!(s.is_open_map(&["spec", "settings"]));
    assert!(s.is_open_map(&["spec", "raw"]));
    assert!(!s.is_open_map(&["spec"]));
    // metadata is ObjectMeta whatever the CRD says.
    assert_eq!(s.list_type(&["metadata", "finalizers"]), ListType::Set);
    assert!(s.is_open_map(&["metadata", "labels"]));
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": "w", "namespace": "default"}, "spec": spec})
}

#[test]
fn apply_on_a_custom_resource_uses_the_crd_rules() {
    let s = widget_schema();
    let a = apply(
        None,
        &widget(
            json!({"size": 1, "ports": [{"port": 80}], "tags": ["x"], "ref": {"name": "n"},
                       "settings": {"k": "v"}}),
        ),
        "a",
        false,
        None,
        "2024-01-01T00:00:00Z",
        &s,
    )
    .unwrap();
    assert_eq!(
        fields_of(&a, "a", "Apply"),
        Some(json!({"f:spec": {
            "f:size": {},
            "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}},
            "f:tags": {"v:\"x\"": {}},
            "f:ref": {},
            "f:settings": {"f:k": {}}
        }}))
    );
    // Another manager adds a port and a tag: merged, not replaced.
    let b = apply(
        Some(&a),
        &widget(json!({"ports": [{"port": 81, "protocol": "UDP"}], "tags": ["y"]})),
        "b",
        false,
        None,
        "2024-01-01T00:01:00Z",
        &s,
    )
    .unwrap();
    assert_eq!(
        b["spec"]["ports"],
        json!([{"port": 80}, {"port": 81, "protocol": "UDP"}])
    );
    assert_eq!(b["spec"]["tags"], json!(["x", "y"]));
    // The atomic `ref` conflicts as a whole.
    let err = apply(
        Some(&b),
        &widget(json!({"ref": {"name": "n", "kind": "K"}})),
        "b",
        false,
        None,
        "2024-01-01T00:02:00Z",
        &s,
    )
    .unwrap_err();
    assert!(matches!(&err, ApplyError::Conflicts(c) if c.len() == 1 && c[0].field == ".spec.ref"));
}
