//! The structural-schema rules kube-apiserver enforces on CRD schemas
//! (apiextensions-apiserver `pkg/apiserver/schema`: `validateStructural`,
//! `ValidateListSetsAndMaps`; kubernetes.io "Specifying a structural
//! schema"), as a checker that names the offending field.
//!
//! [`super::CustomResource::try_crd`] runs it on every derived schema, so a
//! CRD the apiserver would refuse is an error naming the field instead of a
//! failed install; tests run it on whole CRDs with [`check_crd`].

use std::fmt;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Map, Value};

/// One violation of the structural rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructuralError {
    /// The field, as a JSON path from the object root (`.spec.replicas`);
    /// `[*]` is a list item, `.*` a map value; empty for the root.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl StructuralError {
    pub(crate) fn new(path: &str, message: impl Into<String>) -> Self {
        StructuralError {
            path: path.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for StructuralError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "<root>"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.message)
    }
}

/// Check every version's schema of a CRD; paths are prefixed with
/// `versions[<name>]`.
pub fn check_crd(crd: &CustomResourceDefinition) -> Vec<StructuralError> {
    let mut errors = Vec::new();
    for version in &crd.spec.versions {
        let schema = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref());
        let Some(schema) = schema else {
            errors.push(StructuralError::new(
                &format!("versions[{}]", version.name),
                "apiextensions.k8s.io/v1 requires a schema",
            ));
            continue;
        };
        let Ok(value) = serde_json::to_value(schema) else {
            errors.push(StructuralError::new(
                &version.name,
                "schema cannot be serialized",
            ));
            continue;
        };
        for mut e in check_schema(&value) {
            e.path = format!("versions[{}]{}", version.name, e.path);
            errors.push(e);
        }
    }
    errors
}

/// Check an object schema (the `openAPIV3Schema` of a version, as JSON).
pub fn check_schema(root: &Value) -> Vec<StructuralError> {
    let mut errors = Vec::new();
    let Some(obj) = root.as_object() else {
        errors.push(StructuralError::new("", "the schema must be a JSON object"));
        return errors;
    };
    if obj.get("type").and_then(Value::as_str) != Some("object") {
        errors.push(StructuralError::new("", "the root must have type: object"));
    }
    if obj.contains_key("additionalProperties") {
        errors.push(StructuralError::new(
            "",
            "additionalProperties is not allowed at the root",
        ));
    }
    if obj.contains_key("nullable") {
        errors.push(StructuralError::new(
            "",
            "nullable is not allowed at the root",
        ));
    }
    if let Some(Value::Object(meta)) = obj.get("properties").and_then(|p| p.get("metadata")) {
        check_metadata(meta, &mut errors);
    }
    node(obj, "", &mut errors);
    errors
}

/// At the root, `metadata` may only restrict `name` and `generateName`.
fn check_metadata(meta: &Map<String, Value>, errors: &mut Vec<StructuralError>) {
    if meta.contains_key("default") {
        errors.push(StructuralError::new(
            ".metadata",
            "metadata cannot have a default",
        ));
    }
    if let Some(Value::Object(props)) = meta.get("properties") {
        for name in props.keys() {
            if name != "name" && name != "generateName" {
                errors.push(StructuralError::new(
                    &format!(".metadata.{name}"),
                    "only metadata.name and metadata.generateName may be specified",
                ));
            }
        }
    }
}

const FORBIDDEN: [(&str, &str); 7] = [
    (
        "$ref",
        "references ($ref) are not allowed; schemas must be inlined",
    ),
    ("definitions", "definitions are not allowed"),
    ("dependencies", "dependencies are not allowed"),
    ("additionalItems", "additionalItems is not allowed"),
    ("patternProperties", "patternProperties is not allowed"),
    ("id", "id is not allowed"),
    ("$schema", "$schema is not allowed"),
];

const TYPES: [&str; 6] = ["object", "array", "string", "integer", "number", "boolean"];

fn is_true(obj: &Map<String, Value>, key: &str) -> bool {
    obj.get(key) == Some(&Value::Bool(true))
}

/// A node that is a field of the structure (root, property, map value, item).
fn node(obj: &Map<String, Value>, path: &str, errors: &mut Vec<StructuralError>) {
    let mut local = Vec::new();
    let mut err = |m: String| local.push(StructuralError::new(path, m));
    for (key, message) in FORBIDDEN {
        if obj.contains_key(key) {
            err(message.to_string());
        }
    }
    let int_or_string = is_true(obj, "x-kubernetes-int-or-string");
    let preserve = is_true(obj, "x-kubernetes-preserve-unknown-fields");
    let ty = obj.get("type");
    match ty {
        None if !int_or_string && !preserve => err(
            "type is missing: every field needs a type unless it is int-or-string or preserves unknown fields".into(),
        ),
        None => {}
        Some(Value::String(t)) if TYPES.contains(&t.as_str()) && int_or_string => {
            err("x-kubernetes-int-or-string must not have a type".into());
        }
        Some(Value::String(t)) if TYPES.contains(&t.as_str()) => {}
        Some(other) => err(format!("type must be one of {TYPES:?}, found {other}")),
    }
    let ty = ty.and_then(Value::as_str);
    if obj.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        err("x-kubernetes-preserve-unknown-fields must be true or absent".into());
    }
    if is_true(obj, "uniqueItems") {
        err("uniqueItems cannot be true (use x-kubernetes-list-type: set)".into());
    }
    if obj.contains_key("properties") && obj.contains_key("additionalProperties") {
        err("properties and additionalProperties are mutually exclusive".into());
    }
    if let Some(additional) = obj.get("additionalProperties") {
        if !additional.is_object() {
            err("additionalProperties must be a schema".into());
        }
    }
    if (obj.contains_key("properties") || obj.contains_key("additionalProperties"))
        && ty != Some("object")
    {
        err("properties and additionalProperties need type: object".into());
    }
    match (ty, obj.get("items")) {
        (Some("array"), None) => err("an array needs items".into()),
        (_, Some(Value::Array(_))) => err("items must be a single schema, not a tuple".into()),
        (Some(t), Some(_)) if t != "array" => err("items needs type: array".into()),
        _ => {}
    }
    if is_true(obj, "x-kubernetes-embedded-resource") && ty != Some("object") {
        err("x-kubernetes-embedded-resource needs type: object".into());
    }
    if int_or_string {
        check_int_or_string(obj, &mut err);
    }
    check_default_and_enum(obj, ty, &mut err);
    check_list_and_map(obj, ty, &mut err);
    if let Some(rules) = obj.get("x-kubernetes-validations") {
        let ok = rules.as_array().is_some_and(|r| {
            r.iter().all(|rule| {
                rule.get("rule")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.trim().is_empty())
            })
        });
        if !ok {
            err("x-kubernetes-validations needs a non-empty rule in every entry".into());
        }
    }

    errors.append(&mut local);
    // Value validations in junctors must not carry structure of their own.
    for junctor in ["anyOf", "oneOf", "allOf"] {
        if let Some(branches) = obj.get(junctor) {
            let Some(branches) = branches.as_array() else {
                errors.push(StructuralError::new(
                    path,
                    format!("{junctor} must be a list"),
                ));
                continue;
            };
            for (i, branch) in branches.iter().enumerate() {
                let bpath = format!("{path}({junctor}[{i}])");
                if int_or_string && junctor == "anyOf" {
                    continue; // checked by check_int_or_string
                }
                junctor_branch(branch, obj, &bpath, errors);
            }
        }
    }
    if let Some(not) = obj.get("not") {
        junctor_branch(not, obj, &format!("{path}(not)"), errors);
    }

    if let Some(Value::Object(props)) = obj.get("properties") {
        for (name, prop) in props {
            child(prop, &field_path(path, name), errors);
        }
    }
    if let Some(additional @ Value::Object(_)) = obj.get("additionalProperties") {
        child(additional, &format!("{path}.*"), errors);
    }
    if let Some(items @ Value::Object(_)) = obj.get("items") {
        child(items, &format!("{path}[*]"), errors);
    }
}

fn field_path(path: &str, name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        format!("{path}.{name}")
    } else {
        format!("{path}[{name:?}]")
    }
}

fn child(value: &Value, path: &str, errors: &mut Vec<StructuralError>) {
    match value.as_object() {
        Some(obj) => node(obj, path, errors),
        None => errors.push(StructuralError::new(path, "a schema must be a JSON object")),
    }
}

fn check_int_or_string(obj: &Map<String, Value>, err: &mut impl FnMut(String)) {
    if let Some(any_of) = obj.get("anyOf") {
        let expected = serde_json::json!([{"type": "integer"}, {"type": "string"}]);
        if *any_of != expected {
            err(
                "x-kubernetes-int-or-string allows only anyOf: [{type: integer}, {type: string}]"
                    .into(),
            );
        }
    }
}

fn json_type_matches(value: &Value, ty: &str) -> bool {
    match ty {
        "string" => value.is_string(),
        "integer" => value.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => true,
    }
}

fn check_default_and_enum(
    obj: &Map<String, Value>,
    ty: Option<&str>,
    err: &mut impl FnMut(String),
) {
    let nullable = is_true(obj, "nullable");
    if let Some(default) = obj.get("default") {
        if default.is_null() && !nullable {
            err("default is null but the field is not nullable".into());
        } else if let Some(ty) = ty {
            if !default.is_null() && !json_type_matches(default, ty) {
                err(format!("default {default} is not of type {ty}"));
            }
        }
    }
    if let Some(values) = obj.get("enum") {
        match (values.as_array(), ty) {
            (None, _) => err("enum must be a list".into()),
            (Some(values), Some(ty)) => {
                for v in values {
                    if !(json_type_matches(v, ty) || (v.is_null() && nullable)) {
                        err(format!("enum value {v} is not of type {ty}"));
                    }
                }
            }
            _ => {}
        }
    }
}

fn is_scalar_type(schema: &Value) -> bool {
    matches!(
        schema.get("type").and_then(Value::as_str),
        Some("string" | "integer" | "number" | "boolean")
    ) || schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
}

fn check_list_and_map(obj: &Map<String, Value>, ty: Option<&str>, err: &mut impl FnMut(String)) {
    let list_type = obj.get("x-kubernetes-list-type").map(|v| v.as_str());
    let keys = obj.get("x-kubernetes-list-map-keys");
    if list_type.is_some() && ty != Some("array") {
        err("x-kubernetes-list-type needs type: array".into());
    }
    match list_type {
        None => {
            if keys.is_some() {
                err("x-kubernetes-list-map-keys needs x-kubernetes-list-type: map".into());
            }
        }
        Some(Some("atomic")) => {
            if keys.is_some() {
                err("x-kubernetes-list-map-keys needs x-kubernetes-list-type: map".into());
            }
        }
        Some(Some("set")) => {
            if keys.is_some() {
                err("x-kubernetes-list-map-keys needs x-kubernetes-list-type: map".into());
            }
            if let Some(items) = obj.get("items") {
                let atomic_map =
                    items.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
                if !is_scalar_type(items) && !atomic_map {
                    err(
                        "x-kubernetes-list-type: set needs scalar items (or atomic objects)".into(),
                    );
                }
            }
        }
        Some(Some("map")) => check_list_map(obj, keys, err),
        Some(other) => err(format!(
            "x-kubernetes-list-type must be atomic, set or map, found {}",
            other.unwrap_or("a non-string")
        )),
    }
    if let Some(map_type) = obj.get("x-kubernetes-map-type") {
        if !matches!(map_type.as_str(), Some("atomic" | "granular")) {
            err(format!(
                "x-kubernetes-map-type must be atomic or granular, found {map_type}"
            ));
        }
        if ty != Some("object") {
            err("x-kubernetes-map-type needs type: object".into());
        }
    }
}

fn check_list_map(obj: &Map<String, Value>, keys: Option<&Value>, err: &mut impl FnMut(String)) {
    let keys: Vec<&str> = keys
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if keys.is_empty() {
        err("x-kubernetes-list-type: map needs x-kubernetes-list-map-keys".into());
        return;
    }
    let Some(items) = obj.get("items") else {
        return;
    };
    if items.get("type").and_then(Value::as_str) != Some("object") {
        err("x-kubernetes-list-type: map needs items of type: object".into());
        return;
    }
    let required: Vec<&str> = items
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for key in keys {
        match items.get("properties").and_then(|p| p.get(key)) {
            None => err(format!(
                "list-map key {key:?} is not a property of the items"
            )),
            Some(prop) => {
                if !is_scalar_type(prop) {
                    err(format!("list-map key {key:?} must be a scalar"));
                }
                if !required.contains(&key) && prop.get("default").is_none() {
                    err(format!(
                        "list-map key {key:?} must be required or have a default"
                    ));
                }
            }
        }
    }
}

/// Keys a value validation inside anyOf/oneOf/allOf/not must not set.
const JUNCTOR_FORBIDDEN: [&str; 7] = [
    "type",
    "description",
    "default",
    "nullable",
    "additionalProperties",
    "title",
    "example",
];

fn junctor_branch(
    branch: &Value,
    outer: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<StructuralError>,
) {
    let Some(obj) = branch.as_object() else {
        errors.push(StructuralError::new(path, "a schema must be a JSON object"));
        return;
    };
    for key in JUNCTOR_FORBIDDEN {
        if obj.contains_key(key) {
            errors.push(StructuralError::new(
                path,
                format!(
                    "{key} is not allowed inside anyOf/oneOf/allOf/not (a mixed or untagged enum?)"
                ),
            ));
        }
    }
    for key in obj.keys() {
        if key.starts_with("x-kubernetes-") {
            errors.push(StructuralError::new(
                path,
                format!("{key} is not allowed inside anyOf/oneOf/allOf/not"),
            ));
        }
    }
    if let Some(Value::Object(props)) = obj.get("properties") {
        let outer_props = outer.get("properties").and_then(Value::as_object);
        for (name, prop) in props {
            let Some(outer_prop) = outer_props
                .and_then(|p| p.get(name))
                .and_then(Value::as_object)
            else {
                errors.push(StructuralError::new(
                    &field_path(path, name),
                    "a property inside anyOf/oneOf/allOf/not must also be specified outside",
                ));
                continue;
            };
            junctor_branch(prop, outer_prop, &field_path(path, name), errors);
        }
    }
    if let Some(items) = obj.get("items") {
        match outer.get("items").and_then(Value::as_object) {
            Some(outer_items) => junctor_branch(items, outer_items, &format!("{path}[*]"), errors),
            None => errors.push(StructuralError::new(
                path,
                "items inside anyOf/oneOf/allOf/not must also be specified outside",
            )),
        }
    }
    for junctor in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = obj.get(junctor) {
            for (i, b) in branches.iter().enumerate() {
                junctor_branch(b, outer, &format!("{path}({junctor}[{i}])"), errors);
            }
        }
    }
    if let Some(not) = obj.get("not") {
        junctor_branch(not, outer, &format!("{path}(not)"), errors);
    }
}
