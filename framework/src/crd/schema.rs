//! Makes a schemars schema structural, the way kube-apiserver requires CRD
//! schemas to be.
//!
//! The transforms are kube-core's ([`StructuralSchemaRewriter`],
//! [`OptionalEnum`]); this module adds what they lack: recursion and mixed-enum detection that reports the field instead of
//! panicking, unconstrained values (`serde_json::Value`) as
//! `x-kubernetes-preserve-unknown-fields`, internally tagged enums whose tag
//! property differs per variant, and a final check of every node against the
//! structural rules ([`super::structural`]).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use kube_core::schema::{OptionalEnum, StructuralSchemaRewriter};
use schemars::transform::Transform;
use schemars::Schema;
use serde_json::{Map, Value};

use super::structural::{check_schema, StructuralError};
use super::{CrdDescriptor, CrdError};

/// The schema schemars generates for `T` with the settings CRDs use
/// (OpenAPI 3, every subschema inlined), before the structural rewrite.
/// Handy to see what the markers of a type produce.
pub fn schema_for<T: schemars::JsonSchema>() -> Schema {
    super::build::root_schema_for::<T>()
}

/// Turn the generated object schema into a structural `JSONSchemaProps`, or
/// report every field that cannot be expressed.
pub(crate) fn structural(desc: &CrdDescriptor, raw: Schema) -> Result<JSONSchemaProps, CrdError> {
    let value = make_structural(raw.to_value()).map_err(|errors| not_structural(desc, errors))?;
    let props: JSONSchemaProps =
        serde_json::from_value(value).map_err(|source| CrdError::InvalidSchema {
            kind: desc.kind.into(),
            rust_type: desc.spec_type.into(),
            source,
        })?;
    Ok(props)
}

/// Check a hand-written schema against the structural rules.
pub(crate) fn check_props(desc: &CrdDescriptor, props: &JSONSchemaProps) -> Result<(), CrdError> {
    let value = serde_json::to_value(props).map_err(|source| CrdError::InvalidSchema {
        kind: desc.kind.into(),
        rust_type: desc.spec_type.into(),
        source,
    })?;
    let errors = check_schema(&value);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(not_structural(desc, errors))
    }
}

fn not_structural(desc: &CrdDescriptor, errors: Vec<StructuralError>) -> CrdError {
    CrdError::NotStructural {
        kind: desc.kind.into(),
        rust_type: desc.spec_type.into(),
        errors,
    }
}

/// Run the structural pipeline on a schema (as JSON): kube-core's rewriters
/// plus kubeforge's additions, then the structural check.
pub fn make_structural(mut value: Value) -> Result<Value, Vec<StructuralError>> {
    if let Some(root) = value.as_object_mut() {
        for key in ["$schema", "components", "$defs", "definitions", "title"] {
            root.remove(key);
        }
    }
    let mut errors = Vec::new();
    rewrite(&mut value, "", true, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut schema = Schema::try_from(value)
        .map_err(|_| vec![StructuralError::new("", "the schema is not a JSON object")])?;
    OptionalEnum.transform(&mut schema);
    // Not kube-core's `OptionalIntOrString`: it makes every int-or-string
    // property outside `required` nullable, Option or not. Whether a field
    // accepts `null` is the field's own business (`#[crd(nullable)]`, as
    // controller-gen's `+nullable`); an absent optional field needs no
    // `nullable`, and kube-apiserver drops a `null` sent for a non-nullable
    // field before defaulting, so `None` still round-trips.
    let mut value = schema.to_value();
    tidy(&mut value);
    let errors = check_schema(&value);
    if errors.is_empty() {
        Ok(value)
    } else {
        Err(errors)
    }
}

/// Bottom-up: children first, then this node through kube-core's rewriter,
/// after checking for the inputs that make the rewriter give up.
fn rewrite(node: &mut Value, path: &str, is_field: bool, errors: &mut Vec<StructuralError>) {
    match node {
        Value::Bool(true) => {
            *node = preserve_unknown();
            return;
        }
        Value::Bool(false) => {
            errors.push(StructuralError::new(path, "the schema accepts no value"));
            return;
        }
        Value::Object(_) => {}
        _ => {
            errors.push(StructuralError::new(path, "a schema must be a JSON object"));
            return;
        }
    }
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    if obj.contains_key("$ref") {
        errors.push(StructuralError::new(
            path,
            "a recursive type: the schema refers to itself, which a CRD schema cannot express \
             (break the cycle, or mark the field #[crd(schemaless)])",
        ));
        return;
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            rewrite(prop, &child_path(path, name), true, errors);
        }
    }
    if let Some(additional) = obj.get_mut("additionalProperties") {
        if additional.is_object() {
            rewrite(additional, &format!("{path}.*"), true, errors);
        }
    }
    match obj.get_mut("items") {
        Some(Value::Array(items)) => {
            for item in items {
                rewrite(item, &format!("{path}[*]"), true, errors);
            }
        }
        Some(items) => rewrite(items, &format!("{path}[*]"), true, errors),
        None => {}
    }
    for junctor in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = obj.get_mut(junctor) {
            for branch in branches.iter_mut() {
                rewrite(branch, path, false, errors);
            }
        }
    }
    if let Some(not) = obj.get_mut("not") {
        rewrite(not, path, false, errors);
    }

    if is_field && unconstrained(obj) {
        obj.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
    }
    merge_tag_properties(obj);
    if let Some(problem) = variant_conflict(obj) {
        errors.push(StructuralError::new(path, problem));
    }
    if !errors.is_empty() {
        // kube-core's rewriter recurses into children and panics on the
        // conflicts just reported; the result is an error anyway.
        return;
    }
    // The rewriter only changes enum unions, flattened maps and uniqueItems;
    // it re-walks the whole subtree, so leave other nodes alone.
    let flattened_map = obj.contains_key("properties")
        && matches!(obj.get("additionalProperties"), Some(Value::Bool(_)));
    let touches = obj.contains_key("oneOf")
        || obj.contains_key("anyOf")
        || obj.contains_key("uniqueItems")
        || flattened_map;
    if !touches {
        return;
    }
    let Ok(mut schema) = Schema::try_from(Value::Object(std::mem::take(obj))) else {
        return;
    };
    StructuralSchemaRewriter.transform(&mut schema);
    *node = schema.to_value();
}

fn child_path(path: &str, name: &str) -> String {
    if name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.is_empty()
    {
        format!("{path}.{name}")
    } else {
        format!("{path}[{name:?}]")
    }
}

fn preserve_unknown() -> Value {
    let mut obj = Map::new();
    obj.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
    Value::Object(obj)
}

/// A node that says nothing about its value (what schemars emits for
/// `serde_json::Value`): kept as is by the apiserver only when marked so.
fn unconstrained(obj: &Map<String, Value>) -> bool {
    const SHAPE: [&str; 12] = [
        "type",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "properties",
        "additionalProperties",
        "items",
        "enum",
        "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields",
        "const",
    ];
    !SHAPE.iter().any(|k| obj.contains_key(*k))
}

/// Internally tagged enums give each variant a tag property with its own
/// single-value enum; a structural schema has one tag property whose enum
/// lists every variant.
fn merge_tag_properties(obj: &mut Map<String, Value>) {
    for junctor in ["oneOf", "anyOf"] {
        let Some(Value::Array(variants)) = obj.get_mut(junctor) else {
            continue;
        };
        let mut merged: Map<String, Value> = Map::new();
        for variant in variants.iter() {
            let Some(Value::Object(props)) = variant.get("properties") else {
                continue;
            };
            for (name, prop) in props {
                match merged.get_mut(name) {
                    None => {
                        merged.insert(name.clone(), prop.clone());
                    }
                    Some(existing) if existing != prop => {
                        if let Some(union) = enum_union(existing, prop) {
                            *existing = union;
                        }
                    }
                    Some(_) => {}
                }
            }
        }
        for variant in variants.iter_mut() {
            let Some(Value::Object(props)) = variant.get_mut("properties") else {
                continue;
            };
            for (name, prop) in props.iter_mut() {
                if let Some(union) = merged.get(name) {
                    if prop.get("enum").is_some() && union.get("enum").is_some() {
                        *prop = union.clone();
                    }
                }
            }
        }
    }
}

/// Two schemas that differ only in their `enum` lists, merged.
fn enum_union(a: &Value, b: &Value) -> Option<Value> {
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        return None;
    };
    let (Some(Value::Array(ea)), Some(Value::Array(eb))) = (a.get("enum"), b.get("enum")) else {
        return None;
    };
    let strip = |m: &Map<String, Value>| {
        let mut m = m.clone();
        m.remove("enum");
        m.remove("description");
        m
    };
    if strip(a) != strip(b) {
        return None;
    }
    let mut values = ea.clone();
    for v in eb {
        if !values.contains(v) {
            values.push(v.clone());
        }
    }
    let mut out = a.clone();
    out.insert("enum".into(), Value::Array(values));
    Some(Value::Object(out))
}

const OBJECT_KEYS: [&str; 7] = [
    "properties",
    "required",
    "additionalProperties",
    "maxProperties",
    "minProperties",
    "patternProperties",
    "propertyNames",
];

/// The situations in which kube-core's rewriter cannot merge the variants of
/// an enum into one structural node (it would panic): variants of different
/// JSON types (a mixed enum) or one property with different schemas.
fn variant_conflict(obj: &Map<String, Value>) -> Option<String> {
    let mut types: Vec<String> = Vec::new();
    if let Some(t) = obj.get("type") {
        types.push(t.to_string());
    }
    let mut seen: Map<String, Value> = Map::new();
    for junctor in ["oneOf", "anyOf"] {
        let Some(Value::Array(variants)) = obj.get(junctor) else {
            continue;
        };
        let mut plain_types = Vec::new();
        for variant in variants {
            let Some(v) = variant.as_object() else {
                continue;
            };
            let is_enum = junctor == "oneOf" && v.contains_key("enum");
            let is_object = OBJECT_KEYS.iter().any(|k| v.contains_key(*k));
            if is_enum || is_object {
                if let Some(t) = v.get("type") {
                    let t = t.to_string();
                    if !types.contains(&t) {
                        types.push(t);
                    }
                }
            } else if let Some(t) = v.get("type") {
                plain_types.push(t.to_string());
            }
            if is_object {
                if let Some(Value::Object(props)) = v.get("properties") {
                    for (name, prop) in props {
                        match seen.get(name) {
                            Some(existing) if existing != prop => {
                                return Some(format!(
                                    "the enum variants give property `{name}` different schemas; \
                                     a structural schema has one schema per property"
                                ));
                            }
                            Some(_) => {}
                            None => {
                                seen.insert(name.clone(), prop.clone());
                            }
                        }
                    }
                }
            }
        }
        plain_types.sort();
        plain_types.dedup();
        let int_or_string = obj.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
        if plain_types.len() > 1 && !int_or_string && junctor == "anyOf" {
            return Some(format!(
                "an untagged enum whose variants have different JSON types ({}); a structural \
                 schema gives a field one type (use #[crd(int_or_string)] for int-or-string \
                 values, or #[crd(schemaless)])",
                plain_types.join(", ")
            ));
        }
    }
    if types.len() > 1 {
        return Some(format!(
            "a mixed enum: its variants serialize as different JSON types ({}); a structural \
             schema gives a field one type (make every variant a unit variant, or every variant \
             carry data, or use #[serde(tag = \"...\")])",
            types.join(", ")
        ));
    }
    None
}

/// Final clean-ups the apiserver would otherwise reject or rewrite.
fn tidy(node: &mut Value) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    // `null` in an enum is what `nullable` says already.
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        let before = values.len();
        values.retain(|v| !v.is_null());
        if values.len() != before {
            obj.insert("nullable".into(), true.into());
        }
    }
    if let Some(Value::Array(types)) = obj.get("type") {
        let non_null: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if non_null.len() == 1 {
            let nullable = non_null.len() != types.len();
            obj.insert("type".into(), non_null[0].clone());
            if nullable {
                obj.insert("nullable".into(), true.into());
            }
        }
    }
    if let Some(value) = obj.remove("const") {
        obj.insert("enum".into(), Value::Array(vec![value]));
    }
    // A map of anything: keep its values rather than pruning them.
    if obj.get("additionalProperties") == Some(&Value::Bool(true))
        && !obj.contains_key("properties")
    {
        obj.remove("additionalProperties");
        obj.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
    }
    // Sorted and unique, as kube-core's rewriter leaves the nodes it touches.
    if let Some(Value::Array(required)) = obj.get_mut("required") {
        required.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
        required.dedup();
    }
    obj.remove("examples");
    for (key, child) in obj.iter_mut() {
        match key.as_str() {
            "properties" => {
                if let Value::Object(props) = child {
                    props.values_mut().for_each(tidy);
                }
            }
            "items" | "additionalProperties" | "not" => tidy(child),
            "anyOf" | "oneOf" | "allOf" => {
                if let Value::Array(branches) = child {
                    branches.iter_mut().for_each(tidy);
                }
            }
            _ => {}
        }
    }
}
