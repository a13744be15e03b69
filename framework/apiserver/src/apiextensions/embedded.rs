//! Checks kube-apiserver runs on a custom resource beyond the OpenAPI
//! validator: embedded resources' TypeMeta and ObjectMeta
//! (pkg/apiserver/schema/objectmeta/validation.go) and the uniqueness of
//! `x-kubernetes-list-type: set` items and `map` keys
//! (pkg/apiserver/schema/listtype/validation.go).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::field::{go_json, FieldError, Path};
use super::node::Node;
use crate::machinery::names;

/// `objectmeta.Validate(nil, obj, s, false)`: every embedded resource under
/// the root needs `apiVersion` and `kind`, and valid metadata.
pub(crate) fn validate_embedded(path: &Path, x: &Value, s: &Node, out: &mut Vec<FieldError>) {
    match x {
        Value::Object(m) => {
            if s.embedded_resource {
                embedded_resource(path, m, out);
            }
            for (k, v) in m {
                if let Some(prop) = s.properties.get(k) {
                    validate_embedded(&path.child(k), v, prop, out);
                } else if let Some(ap) = s.additional_schema() {
                    validate_embedded(&path.key(k), v, ap, out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.items.as_deref() {
                for (i, v) in a.iter().enumerate() {
                    validate_embedded(&path.index(i), v, items, out);
                }
            }
        }
        _ => {}
    }
}

fn embedded_resource(path: &Path, m: &Map<String, Value>, out: &mut Vec<FieldError>) {
    if !m.contains_key("apiVersion") {
        out.push(FieldError::required(path.child("apiVersion").as_str(), ""));
    }
    if !m.contains_key("kind") {
        out.push(FieldError::required(path.child("kind").as_str(), ""));
    }
    for (k, v) in m {
        match k.as_str() {
            "apiVersion" => {
                let p = path.child("apiVersion");
                match v.as_str() {
                    None => out.push(FieldError::invalid(p.as_str(), v, "must be a string")),
                    Some("") => out.push(FieldError::required(p.as_str(), "")),
                    Some(av) => {
                        if av.matches('/').count() > 1 {
                            out.push(FieldError::invalid_str(
                                p.as_str(),
                                av,
                                &format!("unexpected GroupVersion string: {av}"),
                            ));
                        }
                    }
                }
            }
            "kind" => {
                let p = path.child("kind");
                match v.as_str() {
                    None => out.push(FieldError::invalid(p.as_str(), v, "must be a string")),
                    Some("") => out.push(FieldError::required(p.as_str(), "")),
                    Some(kind) => {
                        let errs = names::is_dns1035_label(&kind.to_lowercase());
                        if !errs.is_empty() {
                            out.push(FieldError::invalid_str(
                                p.as_str(),
                                kind,
                                &format!(
                                    "may have mixed case, but should otherwise match: {}",
                                    errs.join(",")
                                ),
                            ));
                        }
                    }
                }
            }
            "metadata" => object_meta(&path.child("metadata"), v, out),
            _ => {}
        }
    }
}

/// A subset of `ValidateObjectMeta` for embedded metadata: name,
/// generateName, namespace, label and annotation syntax.
fn object_meta(path: &Path, v: &Value, out: &mut Vec<FieldError>) {
    let Some(m) = v.as_object() else {
        out.push(FieldError::invalid(
            path.as_str(),
            v,
            "expected metadata to be an object",
        ));
        return;
    };
    let str_field = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
    let generate_name = str_field("generateName");
    if !generate_name.is_empty() {
        for msg in names::validate_path_segment_name(generate_name, true) {
            out.push(FieldError::invalid_str(
                path.child("generateName").as_str(),
                generate_name,
                &msg,
            ));
        }
    }
    let name = str_field("name");
    if !name.is_empty() {
        for msg in names::validate_path_segment_name(name, false) {
            out.push(FieldError::invalid_str(
                path.child("name").as_str(),
                name,
                &msg,
            ));
        }
    }
    let ns = str_field("namespace");
    if !ns.is_empty() {
        for msg in names::is_dns1123_label(ns) {
            out.push(FieldError::invalid_str(
                path.child("namespace").as_str(),
                ns,
                &msg,
            ));
        }
    }
    if let Some(labels) = m.get("labels").and_then(Value::as_object) {
        let lp = path.child("labels");
        for (k, val) in labels {
            for msg in names::is_qualified_name(k) {
                out.push(FieldError::invalid_str(lp.as_str(), k, &msg));
            }
            if let Some(s) = val.as_str() {
                for msg in names::is_valid_label_value(s) {
                    out.push(FieldError::invalid_str(lp.as_str(), s, &msg));
                }
            }
        }
    }
    if let Some(ann) = m.get("annotations").and_then(Value::as_object) {
        let ap = path.child("annotations");
        for k in ann.keys() {
            for msg in names::is_qualified_name(&k.to_lowercase()) {
                out.push(FieldError::invalid_str(ap.as_str(), k, &msg));
            }
        }
    }
}

/// `ValidateListSetsAndMaps(nil, s, obj)`.
pub(crate) fn validate_list_sets_and_maps(
    path: &Path,
    s: &Node,
    obj: &Map<String, Value>,
    out: &mut Vec<FieldError>,
) {
    if let Some(ap) = s.additional_schema() {
        for (k, v) in obj {
            list_set_and_maps(&path.key(k), ap, v, out);
        }
    }
    for (k, v) in obj {
        if let Some(sub) = s.properties.get(k) {
            list_set_and_maps(&path.child(k), sub, v, out);
        }
    }
}

fn list_set_and_maps(path: &Path, s: &Node, v: &Value, out: &mut Vec<FieldError>) {
    match v {
        Value::Array(a) => list_array(path, s, a, out),
        Value::Object(m) => validate_list_sets_and_maps(path, s, m, out),
        _ => {}
    }
}

/// A hashable identity of a value as listtype compares them: scalars by Go
/// value (an int64 1 differs from a float64 1.0), compounds by their JSON.
fn identity(v: &Value) -> String {
    match v {
        Value::Object(_) | Value::Array(_) => format!("c{}", go_json(v)),
        other => format!("s{other}"),
    }
}

/// Indices of the second appearance of each non-unique element.
fn non_unique(ids: &[String]) -> Vec<usize> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let n = seen.entry(id.as_str()).or_insert(0);
        *n += 1;
        if *n == 2 {
            out.push(i);
        }
    }
    out
}

fn list_array(path: &Path, s: &Node, a: &[Value], out: &mut Vec<FieldError>) {
    match s.list_type.as_deref() {
        Some("set") if a.len() > 1 => {
            let ids: Vec<String> = a.iter().map(identity).collect();
            for i in non_unique(&ids) {
                out.push(FieldError::duplicate(path.index(i).as_str(), &a[i]));
            }
        }
        Some("map") => list_map(path, s, a, out),
        _ => {}
    }
    if let Some(items) = s.items.as_deref() {
        for (i, v) in a.iter().enumerate() {
            list_set_and_maps(&path.index(i), items, v, out);
        }
    }
}

fn list_map(path: &Path, s: &Node, a: &[Value], out: &mut Vec<FieldError>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(FieldError::invalid(
                path.index(i).as_str(),
                x,
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    let keys: Vec<Value> = a
        .iter()
        .map(|x| {
            let mut key = Map::new();
            if let Some(m) = x.as_object() {
                for kf in &s.list_map_keys {
                    if let Some(kv) = m.get(kf) {
                        key.insert(kf.clone(), kv.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    let ids: Vec<String> = if s.list_map_keys.len() == 1 {
        // One key: compared as a scalar, an absent key being its own value.
        keys.iter()
            .map(|k| {
                k.as_object()
                    .and_then(|m| m.values().next())
                    .map_or_else(|| "unspecified".to_string(), identity)
            })
            .collect()
    } else {
        keys.iter().map(identity).collect()
    };
    for i in non_unique(&ids) {
        out.push(FieldError::duplicate(path.index(i).as_str(), &keys[i]));
    }
}
