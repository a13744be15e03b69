//! The API server's CRD admission with arbitrary schemas and objects: the
//! CRD is defaulted and validated (structural rules, CEL compilation and
//! cost estimation), then custom resources are pruned, defaulted and
//! validated against it (CEL evaluation included), as a create of each
//! would be. Rejections are 422s; their `Status` may list each problem,
//! but not repeat the input without bound (a deeply nested rule once gave
//! a 159 MB answer).
//!
//! Input: parts separated by `%%` lines, each JSON. The first is a whole
//! `CustomResourceDefinition` (when it has a `spec`) or the
//! `openAPIV3Schema` of a namespaced `widgets.fuzz.example.com`, version
//! `v1`; the others are objects of it (`apiVersion`, `kind` and
//! `metadata` are added when missing).

use serde_json::{json, Map, Value};

use crate::input::parts;
use crate::{bounded, timed, Checked, FindingKind, Limits};

/// The most objects one input admits.
const MAX_OBJECTS: usize = 8;

pub(crate) fn check(data: &[u8], limits: &Limits) -> Checked {
    let parts = parts(data, MAX_OBJECTS + 1);
    let Some(Ok(first)) = parts.first().map(|p| serde_json::from_slice::<Value>(p)) else {
        return Ok(());
    };
    let crd = if first.get("spec").is_some() {
        first
    } else {
        wrap_schema(first)
    };
    let objects: Vec<Value> = parts[1..]
        .iter()
        .filter_map(|p| serde_json::from_slice::<Value>(p).ok())
        .map(complete_object)
        .collect();
    let outcome = timed(limits, "admitting the CRD and its objects", || {
        kubeforge_apiserver::fuzzing::crd_admission(crd, objects)
    })?
    .map_err(|panic| (FindingKind::Panic, format!("admission panicked: {panic}")))?;
    let answers = outcome
        .crd_rejected
        .iter()
        .chain(outcome.objects_rejected.iter().flatten());
    for status in answers {
        bounded("a 422 Status", status.len(), data.len(), 64, 1 << 20)?;
    }
    Ok(())
}

fn wrap_schema(schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.fuzz.example.com"},
        "spec": {
            "group": "fuzz.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": schema},
                "subresources": {"status": {}}
            }]
        }
    })
}

fn complete_object(obj: Value) -> Value {
    let mut map = match obj {
        Value::Object(map) => map,
        other => {
            let mut map = Map::new();
            map.insert("spec".to_owned(), other);
            map
        }
    };
    map.entry("apiVersion")
        .or_insert_with(|| json!("fuzz.example.com/v1"));
    map.entry("kind").or_insert_with(|| json!("Widget"));
    map.entry("metadata")
        .or_insert_with(|| json!({"name": "w", "namespace": "default"}));
    Value::Object(map)
}
