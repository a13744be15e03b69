//! Tests of the patch engine: strategic merge patch cases from
//! apimachinery's `strategicpatch/patch_test.go`, apply scenarios after
//! structured-merge-diff's `merge/*_test.go` and kube-apiserver's
//! `fieldmanager` tests, and property tests.

use serde_json::Value;

mod apply;
mod builtin;
mod fieldpath;
mod openapi;
mod properties;
mod strategic;
mod typed;
mod update;

/// Parses a YAML test fixture.
pub(super) fn yaml(s: &str) -> Value {
    match serde_saphyr::from_str::<Value>(s) {
        Ok(v) => v,
        Err(e) => panic!("bad test YAML: {e}\n{s}"),
    }
}

/// The `fieldsV1` of `manager`'s entry with `operation` in `obj`.
pub(super) fn fields_of(obj: &Value, manager: &str, operation: &str) -> Option<Value> {
    obj.pointer("/metadata/managedFields")?
        .as_array()?
        .iter()
        .find(|e| {
            e.get("manager").and_then(Value::as_str) == Some(manager)
                && e.get("operation").and_then(Value::as_str) == Some(operation)
        })
        .and_then(|e| e.get("fieldsV1").cloned())
}

/// `(manager, operation)` of every managedFields entry, in order.
pub(super) fn managers(obj: &Value) -> Vec<(String, String)> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e.get("manager")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        e.get("operation")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `obj` without `metadata.managedFields`.
pub(super) fn content(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        meta.remove("managedFields");
    }
    obj
}
