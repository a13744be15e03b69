//! A small model of what kube-apiserver does to a custom resource on create
//! (apiextensions-apiserver: prune unknown fields, apply defaults, validate
//! against the structural schema), enough to check the corpus's samples
//! without a server. CEL rules are not evaluated.

use kubeforge::serde_json::{Map, Value};

/// Prune, default and validate `object` in place; return the errors as
/// (field path like `spec.rules[0].port`, message).
pub fn create(schema: &Value, object: &mut Value) -> Vec<(String, String)> {
    prune(schema, object, true);
    default(schema, object);
    let mut errors = Vec::new();
    validate(schema, object, "", &mut errors);
    errors
}

fn preserves(schema: &Value) -> bool {
    schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
}

fn prune(schema: &Value, value: &mut Value, root: bool) {
    if preserves(schema) && schema.get("properties").is_none() {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = schema.get("properties") {
                if !preserves(schema) {
                    map.retain(|k, _| {
                        props.contains_key(k)
                            || (root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
                    });
                }
                for (k, v) in map.iter_mut() {
                    if let Some(s) = props.get(k) {
                        if !(root && k == "metadata") {
                            prune(s, v, false);
                        }
                    }
                }
            } else if let Some(additional) = schema.get("additionalProperties") {
                for v in map.values_mut() {
                    prune(additional, v, false);
                }
            } else if schema.get("x-kubernetes-embedded-resource") != Some(&Value::Bool(true)) {
                map.clear();
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    prune(item_schema, item, false);
                }
            }
        }
        _ => {}
    }
}

fn default(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (k, s) in props {
                    if !map.contains_key(k) {
                        if let Some(d) = s.get("default") {
                            map.insert(k.clone(), d.clone());
                        }
                    }
                }
                for (k, v) in map.iter_mut() {
                    if let Some(s) = props.get(k) {
                        default(s, v);
                    }
                }
            } else if let Some(additional) = schema.get("additionalProperties") {
                for v in map.values_mut() {
                    default(additional, v);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                items.iter_mut().for_each(|i| default(s, i));
            }
        }
        _ => {}
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn type_ok(ty: &str, value: &Value) -> bool {
    match ty {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    }
}

fn num(schema: &Value, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

fn validate(schema: &Value, value: &Value, path: &str, errors: &mut Vec<(String, String)>) {
    let mut err = |m: String| errors.push((path.to_string(), m));
    if value.is_null() {
        if schema.get("nullable") != Some(&Value::Bool(true)) && !preserves(schema) {
            err("must not be null".into());
        }
        return;
    }
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        if !(value.is_i64() || value.is_u64() || value.is_string()) {
            err("must be an integer or a string".into());
        }
        return;
    }
    if let Some(ty) = schema.get("type").and_then(Value::as_str) {
        if !type_ok(ty, value) {
            err(format!("must be of type {ty}"));
            return;
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum") {
        if !allowed.contains(value) {
            err(format!("unsupported value {value}"));
        }
    }
    if let Some(f) = value.as_f64() {
        let excl_min = schema.get("exclusiveMinimum") == Some(&Value::Bool(true));
        let excl_max = schema.get("exclusiveMaximum") == Some(&Value::Bool(true));
        if let Some(min) = num(schema, "minimum") {
            if f < min || (excl_min && f == min) {
                err(format!(
                    "should be greater than {}{min}",
                    if excl_min { "" } else { "or equal to " }
                ));
            }
        }
        if let Some(max) = num(schema, "maximum") {
            if f > max || (excl_max && f == max) {
                err(format!(
                    "should be less than {}{max}",
                    if excl_max { "" } else { "or equal to " }
                ));
            }
        }
        if let Some(m) = num(schema, "multipleOf") {
            if (f / m).fract() != 0.0 {
                err(format!("should be a multiple of {m}"));
            }
        }
    }
    if let Some(s) = value.as_str() {
        let len = s.chars().count() as f64;
        if num(schema, "minLength").is_some_and(|m| len < m) {
            err("too short".into());
        }
        if num(schema, "maxLength").is_some_and(|m| len > m) {
            err("too long".into());
        }
        if let Some(p) = schema.get("pattern").and_then(Value::as_str) {
            match regex::Regex::new(p) {
                Ok(re) if !re.is_match(s) => err(format!("should match {p:?}")),
                Ok(_) => {}
                Err(e) => err(format!("bad pattern {p:?}: {e}")),
            }
        }
    }
    if let Some(items) = value.as_array() {
        let n = items.len() as f64;
        if num(schema, "minItems").is_some_and(|m| n < m) {
            err("too few items".into());
        }
        if num(schema, "maxItems").is_some_and(|m| n > m) {
            err("too many items".into());
        }
        if let Some(item_schema) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                validate(item_schema, item, &format!("{path}[{i}]"), errors);
            }
        }
        return;
    }
    if let Some(map) = value.as_object() {
        object(schema, map, path, errors);
    }
}

fn object(
    schema: &Value,
    map: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<(String, String)>,
) {
    let n = map.len() as f64;
    if num(schema, "minProperties").is_some_and(|m| n < m) {
        errors.push((path.to_string(), "too few properties".into()));
    }
    if num(schema, "maxProperties").is_some_and(|m| n > m) {
        errors.push((path.to_string(), "too many properties".into()));
    }
    if let Some(Value::Array(required)) = schema.get("required") {
        for r in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(r) {
                errors.push((child(path, r), "Required value".into()));
            }
        }
    }
    // oneOf/anyOf branches here only carry `required` lists (value validations).
    for junctor in ["oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = schema.get(junctor) {
            let matching = branches
                .iter()
                .filter(|b| {
                    b.get("required").and_then(Value::as_array).is_none_or(|r| {
                        r.iter()
                            .filter_map(Value::as_str)
                            .all(|k| map.contains_key(k))
                    })
                })
                .count();
            let ok = if junctor == "oneOf" {
                matching == 1
            } else {
                matching >= 1
            };
            if !ok {
                errors.push((path.to_string(), format!("must match {junctor}")));
            }
        }
    }
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (k, v) in map {
            if path.is_empty() && k == "metadata" {
                continue;
            }
            if let Some(s) = props.get(k) {
                validate(s, v, &child(path, k), errors);
            }
        }
    } else if let Some(additional) = schema.get("additionalProperties") {
        for (k, v) in map {
            validate(additional, v, &child(path, k), errors);
        }
    }
}
