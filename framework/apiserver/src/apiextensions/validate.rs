//! Validation of a value against a schema node, with the semantics and the
//! messages of kube-openapi's `validate.SchemaValidator` as
//! apiextensions-apiserver converts them to field errors
//! (`kubeOpenAPIResultToFieldErrors` in pkg/apiserver/validation): the
//! error field is the kube-openapi path (`spec.items[2].name`), the detail
//! is kube-openapi's message (`spec.size in body should be less than or
//! equal to 10`).

use serde_json::Value;

use super::field::{format_number, go_float, go_json, FieldError, Path};
use super::formats;
use super::node::{AdditionalProperties, Node};
use crate::machinery::util::go_quote;

/// Validates values against nodes, reporting fields under `prefix` (the
/// `fldPath` kube-apiserver passes: none for a custom resource, the
/// `default` field of a schema when checking defaults).
pub(crate) struct Validator<'p> {
    prefix: Option<&'p Path>,
}

fn sch_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                "integer"
            } else {
                "number"
            }
        }
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn join_name(name: &str, child: &str) -> String {
    if name.is_empty() {
        child.to_string()
    } else {
        format!("{name}.{child}")
    }
}

impl<'p> Validator<'p> {
    /// A validator reporting fields under `prefix`.
    pub(crate) fn new(prefix: Option<&'p Path>) -> Self {
        Validator { prefix }
    }

    /// The field of an error at kube-openapi path `name`.
    fn field(&self, name: &str) -> String {
        if !name.is_empty() && name != "." {
            let trimmed = name.strip_prefix('.').unwrap_or(name);
            match self.prefix {
                Some(p) => p.child(trimmed).as_str().to_string(),
                None => trimmed.to_string(),
            }
        } else {
            self.composite_field()
        }
    }

    /// The field of errors that are not `*errors.Validation` (junctor
    /// failures): `fldPath`, which is nil (`<nil>`) for a custom resource.
    fn composite_field(&self) -> String {
        match self.prefix {
            Some(p) => p.as_str().to_string(),
            None => "<nil>".to_string(),
        }
    }

    /// Validates `value` against `node` at kube-openapi path `name`.
    pub(crate) fn validate(
        &self,
        node: &Node,
        value: &Value,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        let types: Vec<&str> = if node.int_or_string {
            vec!["integer", "string"]
        } else if node.typ.is_empty() {
            vec![]
        } else {
            vec![node.typ.as_str()]
        };

        if value.is_null() {
            if !types.is_empty() && !node.nullable {
                out.push(FieldError::type_invalid(
                    &self.field(name),
                    &Value::String("null".into()),
                    &format!(
                        "{name} in body must be of type {}: \"null\"",
                        types.join(",")
                    ),
                ));
            }
            self.check_enum(node, value, name, out);
            return;
        }

        // Type.
        let st = sch_type(value);
        if !types.is_empty() {
            let is_float_int = st == "number"
                && value.as_f64().is_some_and(|f| f.fract() == 0.0)
                && types.contains(&"integer");
            let is_int_float = st == "integer" && types.contains(&"number");
            if !(types.contains(&st) || is_float_int || is_int_float) {
                out.push(FieldError::type_invalid(
                    &self.field(name),
                    &Value::String(st.into()),
                    &format!(
                        "{name} in body must be of type {}: \"{st}\"",
                        types.join(",")
                    ),
                ));
            }
        }

        self.junctors(node, value, name, out);

        if let Value::String(s) = value {
            self.check_string(node, value, s, name, out);
        }
        if let Value::Number(n) = value {
            self.check_number(node, value, n, name, out);
        }
        if let Value::Array(items) = value {
            self.check_array(node, items, name, out);
        }
        self.check_enum(node, value, name, out);
        if let Value::Object(m) = value {
            self.check_object(node, m, name, out);
        }
    }

    fn junctors(&self, node: &Node, value: &Value, name: &str, out: &mut Vec<FieldError>) {
        if !node.any_of.is_empty() {
            let mut best: Option<Vec<FieldError>> = None;
            let mut ok = false;
            for sub in &node.any_of {
                let mut errs = Vec::new();
                self.validate(sub, value, name, &mut errs);
                if errs.is_empty() {
                    ok = true;
                    best = None;
                    break;
                }
                if best.as_ref().is_none_or(|b| errs.len() < b.len()) {
                    best = Some(errs);
                }
            }
            if !ok {
                out.push(FieldError::invalid_str(
                    &self.composite_field(),
                    "",
                    &format!("{name} must validate at least one schema (anyOf)"),
                ));
            }
            if let Some(b) = best {
                out.extend(b);
            }
        }
        if !node.one_of.is_empty() {
            let mut valid = 0;
            let mut best: Option<Vec<FieldError>> = None;
            for sub in &node.one_of {
                let mut errs = Vec::new();
                self.validate(sub, value, name, &mut errs);
                if errs.is_empty() {
                    valid += 1;
                } else if best.as_ref().is_none_or(|b| errs.len() < b.len()) {
                    best = Some(errs);
                }
            }
            if valid != 1 {
                let extra = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                out.push(FieldError::invalid_str(
                    &self.composite_field(),
                    "",
                    &format!("{name} must validate one and only one schema (oneOf). {extra}"),
                ));
                if valid == 0 {
                    if let Some(b) = best {
                        out.extend(b);
                    }
                }
            }
        }
        if !node.all_of.is_empty() {
            let mut valid = 0;
            for sub in &node.all_of {
                let mut errs = Vec::new();
                self.validate(sub, value, name, &mut errs);
                if errs.is_empty() {
                    valid += 1;
                }
                out.extend(errs);
            }
            if valid != node.all_of.len() {
                let extra = if valid == 0 { ". None validated" } else { "" };
                out.push(FieldError::invalid_str(
                    &self.composite_field(),
                    "",
                    &format!("{name} must validate all the schemas (allOf){extra}"),
                ));
            }
        }
        if let Some(not) = &node.not {
            let mut errs = Vec::new();
            self.validate(not, value, name, &mut errs);
            if errs.is_empty() {
                out.push(FieldError::invalid_str(
                    &self.composite_field(),
                    "",
                    &format!("{name} must not validate the schema (not)"),
                ));
            }
        }
    }

    fn check_string(
        &self,
        node: &Node,
        value: &Value,
        s: &str,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        let len = s.chars().count() as i64;
        if let Some(max) = node.max_length {
            if len > max {
                out.push(FieldError::too_long(&self.field(name), max));
            }
        }
        if let Some(min) = node.min_length {
            if len < min {
                out.push(FieldError::invalid(
                    &self.field(name),
                    value,
                    &format!("{name} in body should be at least {min} chars long"),
                ));
            }
        }
        if let Some(p) = &node.pattern {
            if let Some(re) = &p.regex {
                if !re.is_match(s) {
                    out.push(FieldError::invalid(
                        &self.field(name),
                        value,
                        &format!("{name} in body should match '{}'", p.source),
                    ));
                }
            }
        }
        if !node.format.is_empty() && formats::check(&node.format, s) == Some(false) {
            out.push(FieldError::type_invalid(
                &self.field(name),
                value,
                &format!(
                    "{name} in body must be of type {}: {}",
                    node.format,
                    go_quote(s)
                ),
            ));
        }
    }

    fn check_number(
        &self,
        node: &Node,
        value: &Value,
        n: &serde_json::Number,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        let f = n.as_f64().unwrap_or(0.0);
        let as_int = n.as_i64();
        let bound = |b: f64| -> String {
            if as_int.is_some() && b.fract() == 0.0 && b.abs() < 9.2e18 {
                (b as i64).to_string()
            } else {
                go_float(b)
            }
        };
        if let Some(m) = node.multiple_of {
            if m <= 0.0 {
                out.push(FieldError::invalid(
                    &self.field(name),
                    value,
                    &format!(
                        "factor MultipleOf declared for {name} must be positive: {}",
                        bound(m)
                    ),
                ));
            } else {
                let multiple = match as_int {
                    Some(i) if m.fract() == 0.0 && m.abs() < 9.2e18 => i % (m as i64) == 0,
                    _ => {
                        let q = f / m;
                        (q - q.round()).abs() < 1e-9
                    }
                };
                if !multiple {
                    out.push(FieldError::invalid(
                        &self.field(name),
                        value,
                        &format!("{name} in body should be a multiple of {}", bound(m)),
                    ));
                }
            }
        }
        if let Some(min) = node.minimum {
            let fails = match as_int {
                Some(i) if min.fract() == 0.0 && min.abs() < 9.2e18 => {
                    let m = min as i64;
                    if node.exclusive_minimum {
                        i <= m
                    } else {
                        i < m
                    }
                }
                _ => {
                    if node.exclusive_minimum {
                        f <= min
                    } else {
                        f < min
                    }
                }
            };
            if fails {
                let rel = if node.exclusive_minimum {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                out.push(FieldError::invalid(
                    &self.field(name),
                    value,
                    &format!("{name} in body should be {rel} {}", bound(min)),
                ));
            }
        }
        if let Some(max) = node.maximum {
            let fails = match as_int {
                Some(i) if max.fract() == 0.0 && max.abs() < 9.2e18 => {
                    let m = max as i64;
                    if node.exclusive_maximum {
                        i >= m
                    } else {
                        i > m
                    }
                }
                _ => {
                    if node.exclusive_maximum {
                        f >= max
                    } else {
                        f > max
                    }
                }
            };
            if fails {
                let rel = if node.exclusive_maximum {
                    "less than"
                } else {
                    "less than or equal to"
                };
                out.push(FieldError::invalid(
                    &self.field(name),
                    value,
                    &format!("{name} in body should be {rel} {}", bound(max)),
                ));
            }
        }
    }

    fn check_array(&self, node: &Node, items: &[Value], name: &str, out: &mut Vec<FieldError>) {
        if let Some(item_schema) = &node.items {
            for (i, v) in items.iter().enumerate() {
                self.validate(item_schema, v, &format!("{name}[{i}]"), out);
            }
        }
        let size = items.len() as i64;
        if let Some(min) = node.min_items {
            if size < min {
                out.push(FieldError::invalid(
                    &self.field(name),
                    &Value::from(size),
                    &format!("{name} in body should have at least {min} items"),
                ));
            }
        }
        if let Some(max) = node.max_items {
            if size > max {
                out.push(FieldError::too_many(&self.field(name), size, max));
            }
        }
        if node.unique_items {
            let mut dup = false;
            'outer: for (i, a) in items.iter().enumerate() {
                for b in &items[i + 1..] {
                    if json_eq(a, b) {
                        dup = true;
                        break 'outer;
                    }
                }
            }
            if dup {
                out.push(FieldError::invalid_str(
                    &self.field(name),
                    "",
                    &format!("{name} in body shouldn't contain duplicates"),
                ));
            }
        }
    }

    fn check_enum(&self, node: &Node, value: &Value, name: &str, out: &mut Vec<FieldError>) {
        let Some(values) = &node.enum_values else {
            return;
        };
        if values.is_empty() || values.iter().any(|e| json_eq(e, value)) {
            return;
        }
        let supported: Vec<String> = values
            .iter()
            .map(|e| match e {
                Value::String(s) => s.clone(),
                Value::Number(n) => format_number(n),
                other => go_json(other),
            })
            .collect();
        out.push(FieldError::not_supported(
            &self.field(name),
            value,
            &supported,
        ));
    }

    fn check_object(
        &self,
        node: &Node,
        m: &serde_json::Map<String, Value>,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        let n = m.len() as i64;
        if let Some(min) = node.min_properties {
            if n < min {
                out.push(FieldError::invalid(
                    &self.field(name),
                    &Value::from(min),
                    &format!("{name} in body should have at least {min} properties"),
                ));
            }
        }
        if let Some(max) = node.max_properties {
            if n > max {
                out.push(FieldError::too_many(&self.field(name), n, max));
            }
        }
        match &node.additional_properties {
            Some(AdditionalProperties::Bool(false)) => {
                for k in m.keys() {
                    if !node.properties.contains_key(k) {
                        out.push(FieldError::invalid_str(
                            &self.field(name),
                            k,
                            &format!("{name}.{k} in body is a forbidden property"),
                        ));
                    }
                }
            }
            Some(AdditionalProperties::Schema(ap)) => {
                for (k, v) in m {
                    if !node.properties.contains_key(k) {
                        // kube-openapi joins with "." even at the root.
                        self.validate(ap, v, &format!("{name}.{k}"), out);
                    }
                }
            }
            _ => {}
        }
        for (k, prop) in &node.properties {
            if let Some(v) = m.get(k) {
                self.validate(prop, v, &join_name(name, k), out);
            }
        }
        for k in &node.required {
            if !m.contains_key(k) {
                out.push(FieldError::required(
                    &self.field(&format!("{name}.{k}")),
                    "",
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(schema: Value, value: Value) -> Vec<String> {
        let node = Node::parse(&schema);
        let mut out = Vec::new();
        Validator::new(None).validate(&node, &value, "", &mut out);
        out.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn messages_match_kube_openapi() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "name": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^[a-z]+$"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1.5},
            "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
            "when": {"type": "string", "format": "date-time"},
            "count": {"type": "integer", "multipleOf": 3}
        }}}});
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (json!({"spec": {"size": 11}}), vec!["spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"]),
            (json!({"spec": {"size": 0}}), vec!["spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"]),
            (json!({"spec": {}}), vec!["spec.size: Required value"]),
            (json!({"spec": {"size": "x"}}), vec!["spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""]),
            (json!({"spec": {"size": 2.5}}), vec!["spec.size: Invalid value: \"number\": spec.size in body must be of type integer: \"number\""]),
            (json!({"spec": {"size": 3.0}}), vec![]),
            (json!({"spec": {"size": 1, "name": "abcdef"}}), vec!["spec.name: Too long: may not be more than 5 bytes"]),
            (json!({"spec": {"size": 1, "name": "a"}}), vec!["spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long"]),
            (json!({"spec": {"size": 1, "name": "AB"}}), vec!["spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"]),
            (json!({"spec": {"size": 1, "mode": "c"}}), vec!["spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\""]),
            (json!({"spec": {"size": 1, "ratio": 1.5}}), vec!["spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5"]),
            (json!({"spec": {"size": 1, "tags": ["a", "b", "c"]}}), vec!["spec.tags: Too many: 3: must have at most 2 items"]),
            (json!({"spec": {"size": 1, "tags": []}}), vec!["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]),
            (json!({"spec": {"size": 1, "tags": ["a", 1]}}), vec!["spec.tags[1]: Invalid value: \"integer\": spec.tags[1] in body must be of type string: \"integer\""]),
            (json!({"spec": {"size": 1, "when": "noon"}}), vec!["spec.when: Invalid value: \"noon\": spec.when in body must be of type date-time: \"noon\""]),
            (json!({"spec": {"size": 1, "count": 4}}), vec!["spec.count: Invalid value: 4: spec.count in body should be a multiple of 3"]),
            (json!({"spec": {"size": 1, "name": null}}), vec!["spec.name: Invalid value: \"null\": spec.name in body must be of type string: \"null\""]),
        ];
        for (value, want) in cases {
            assert_eq!(run(schema.clone(), value.clone()), want, "{value}");
        }
    }

    #[test]
    fn int_or_string_and_nullable() {
        let schema = json!({"type": "object", "properties": {
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "opt": {"type": "string", "nullable": true}
        }});
        assert!(run(schema.clone(), json!({"port": 80, "opt": null})).is_empty());
        assert!(run(schema.clone(), json!({"port": "http"})).is_empty());
        let errs = run(schema, json!({"port": true}));
        assert_eq!(errs[0], "port: Invalid value: \"boolean\": port in body must be of type integer,string: \"boolean\"");
        assert_eq!(
            errs[1],
            "<nil>: Invalid value: \"\": port must validate at least one schema (anyOf)"
        );
    }

    #[test]
    fn maps_and_forbidden_properties() {
        let schema = json!({"type": "object", "properties": {
            "labels": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
            "closed": {"type": "object", "additionalProperties": false}
        }});
        assert_eq!(
            run(schema.clone(), json!({"labels": {"a": 1}})),
            vec!["labels.a: Invalid value: \"integer\": labels.a in body must be of type string: \"integer\""]
        );
        assert_eq!(
            run(schema.clone(), json!({"labels": {"a": "x", "b": "y"}})),
            vec!["labels: Too many: 2: must have at most 1 item"]
        );
        assert_eq!(
            run(schema, json!({"closed": {"x": 1}})),
            vec!["closed: Invalid value: \"x\": closed.x in body is a forbidden property"]
        );
    }

    #[test]
    fn prefixed_paths_for_defaults() {
        let node =
            Node::parse(&json!({"type": "object", "properties": {"a": {"type": "integer"}}}));
        let prefix = Path::new("spec.validation.openAPIV3Schema").child("default");
        let mut out = Vec::new();
        Validator::new(Some(&prefix)).validate(&node, &json!({"a": "x"}), "", &mut out);
        assert_eq!(out[0].field, "spec.validation.openAPIV3Schema.default.a");
        let mut out = Vec::new();
        Validator::new(Some(&prefix)).validate(&node, &json!(5), "", &mut out);
        assert_eq!(
            out[0].to_string(),
            "spec.validation.openAPIV3Schema.default: Invalid value: \"integer\":  in body must be of type object: \"integer\""
        );
    }
}
