//! The structural-schema rules a CRD's `openAPIV3Schema` must follow, as
//! apiextensions-apiserver checks them: `ValidateStructural`
//! (pkg/apiserver/schema/validation.go, complete.go: typed nodes, junctor
//! restrictions, metadata at the root) and
//! `ValidateCustomResourceDefinitionOpenAPISchema`
//! (pkg/apis/apiextensions/validation/validation.go: supported keywords,
//! `x-kubernetes-*` extension rules, list types and map keys).
//!
//! Both walk the schema as written (raw JSON), because the rules are about
//! what was specified, not about what it means.

use serde_json::{Map, Value};

use super::field::{FieldError, Path};

/// Which `ValidateCustomResourceDefinition` options are in force (they are
/// relaxed on update when the old object already broke the rule).
#[derive(Clone, Debug)]
pub(crate) struct SchemaOptions {
    pub(crate) allow_defaults: bool,
    pub(crate) require_valid_property_type: bool,
    pub(crate) require_atomic_set_type: bool,
    pub(crate) require_map_list_keys_map_set_validation: bool,
}

impl Default for SchemaOptions {
    fn default() -> Self {
        SchemaOptions {
            allow_defaults: true,
            require_valid_property_type: true,
            require_atomic_set_type: true,
            require_map_list_keys_map_set_validation: true,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Level {
    Root,
    Item,
    Field,
}

fn obj(v: &Value) -> Option<&Map<String, Value>> {
    v.as_object()
}

fn s<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

fn b(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn props(m: &Map<String, Value>) -> Option<&Map<String, Value>> {
    m.get("properties").and_then(Value::as_object)
}

fn additional_schema(m: &Map<String, Value>) -> Option<&Value> {
    m.get("additionalProperties").filter(|a| a.is_object())
}

// ---------------------------------------------------------------------
// ValidateStructural
// ---------------------------------------------------------------------

/// `ValidateStructural(fldPath, NewStructural(schema))`, errors sorted by
/// their text as apiextensions-apiserver sorts them.
pub(crate) fn validate_structural(schema: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    invariants(schema, Level::Root, path, &mut errs);
    completeness(schema, path, &mut errs);
    errs.sort_by_key(|e| e.to_string());
    errs
}

fn is_int_or_string_any_of(list: Option<&Value>) -> bool {
    let Some(Value::Array(a)) = list else {
        return false;
    };
    a.len() == 2
        && a[0] == serde_json::json!({"type": "integer"})
        && a[1] == serde_json::json!({"type": "string"})
}

fn invariants(v: &Value, lvl: Level, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(m) = obj(v) else { return };
    let typ = s(m, "type");
    let items = m.get("items").filter(|i| i.is_object());
    if typ == "array" && items.is_none() {
        errs.push(FieldError::required(
            path.child("items").as_str(),
            "must be specified",
        ));
    }
    if let Some(i) = items {
        invariants(i, Level::Item, &path.child("items"), errs);
    }
    if let Some(p) = props(m) {
        for (k, sub) in p {
            invariants(sub, Level::Field, &path.child("properties").key(k), errs);
        }
    }
    if m.contains_key("additionalProperties") {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                path.child("additionalProperties").as_str(),
                "must not be used at the root",
            ));
        }
        if let Some(a) = additional_schema(m) {
            invariants(a, Level::Field, &path.child("additionalProperties"), errs);
        }
    }

    let int_or_string = b(m, "x-kubernetes-int-or-string");
    let preserve = b(m, "x-kubernetes-preserve-unknown-fields");
    let embedded = b(m, "x-kubernetes-embedded-resource");
    if int_or_string && preserve {
        errs.push(FieldError::invalid(
            path.child("x-kubernetes-preserve-unknown-fields").as_str(),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldError::invalid(
            path.child("x-kubernetes-embedded-resource").as_str(),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }

    let skip_any_of = is_int_or_string_any_of(m.get("anyOf"));
    let skip_first_all_of_any_of = m
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_object)
        .is_some_and(|first| is_int_or_string_any_of(first.get("anyOf")));
    value_validation(m, skip_any_of, skip_first_all_of_any_of, lvl, path, errs);

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && typ != "object" {
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        if typ.is_empty() {
            errs.push(FieldError::required(path.child("type").as_str(), msg));
        } else {
            errs.push(FieldError::invalid_str(
                path.child("type").as_str(),
                typ,
                msg,
            ));
        }
    } else if typ.is_empty() && !int_or_string && !preserve {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(path.child("type").as_str(), msg));
    }
    if embedded && m.contains_key("additionalProperties") {
        errs.push(FieldError::forbidden(
            path.child("additionalProperties").as_str(),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !typ.is_empty() && typ != "object" {
        errs.push(FieldError::invalid_str(
            path.child("type").as_str(),
            typ,
            "must be object at the root",
        ));
    }
    let properties = props(m);
    if check_metadata {
        for meta in ["kind", "apiVersion"] {
            if let Some(p) = properties
                .and_then(|p| p.get(meta))
                .and_then(Value::as_object)
            {
                let t = s(p, "type");
                if t != "string" {
                    errs.push(FieldError::invalid_str(
                        path.child("properties").key(meta).child("type").as_str(),
                        t,
                        "must be string",
                    ));
                }
            }
        }
    }
    if let Some(meta) = properties.and_then(|p| p.get("metadata")) {
        metadata_invariants(
            meta,
            check_metadata,
            lvl,
            &path.child("properties").key("metadata"),
            errs,
        );
    }
    if embedded && !preserve && properties.is_none_or(|p| p.is_empty()) {
        errs.push(FieldError::required(
            path.child("properties").as_str(),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Keys of a schema object that `NewStructural` keeps in a node (anything
/// else, such as `example`, is dropped before the metadata comparison).
const STRUCTURAL_KEYS: &[&str] = &[
    "type",
    "description",
    "title",
    "default",
    "nullable",
    "externalDocs",
    "items",
    "properties",
    "additionalProperties",
    "format",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// Whether a schema keyword holds its Go zero value, which the
/// apiextensions Go types cannot tell from unset.
pub(super) fn is_go_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        // Numeric keywords are pointers in Go: present means set.
        Value::Number(_) => false,
    }
}

fn metadata_invariants(
    v: &Value,
    check: bool,
    lvl: Level,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let empty = Map::new();
    let m = obj(v).unwrap_or(&empty);
    let typ = s(m, "type");
    if check && typ != "object" {
        errs.push(FieldError::invalid_str(
            path.child("type").as_str(),
            typ,
            "must be object",
        ));
    }
    if lvl == Level::Root {
        let p = props(m);
        let n = p.map_or(0, Map::len);
        let found_name = p.is_some_and(|p| p.contains_key("name"));
        let found_generate = p.is_some_and(|p| p.contains_key("generateName"));
        let props_cleared =
            (found_name && found_generate && n == 2) || ((found_name || found_generate) && n == 1);
        let leftover = m.iter().any(|(k, val)| {
            if !STRUCTURAL_KEYS.contains(&k.as_str()) {
                return false;
            }
            match k.as_str() {
                "type" | "default" => false,
                "properties" => !props_cleared && !is_go_zero(val),
                _ => !is_go_zero(val),
            }
        });
        if leftover {
            errs.push(FieldError::forbidden(
                path.as_str(),
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
}

fn value_validation(
    m: &Map<String, Value>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        junctor_list(m, "anyOf", lvl, path, None, errs);
    }
    junctor_list(
        m,
        "allOf",
        lvl,
        path,
        if skip_first_all_of_any_of {
            Some(0)
        } else {
            None
        },
        errs,
    );
    junctor_list(m, "oneOf", lvl, path, None, errs);
    if let Some(not) = m.get("not").and_then(Value::as_object) {
        nested_value_validation(not, false, lvl, &path.child("not"), errs);
    }
    if let Some(p) = m.get("pattern").and_then(Value::as_str) {
        if !p.is_empty() {
            if let Err(e) = regex::Regex::new(p) {
                errs.push(FieldError::invalid_str(
                    path.child("pattern").as_str(),
                    p,
                    &format!(
                        "must be a valid regular expression, but isn't: {}",
                        first_line(&e.to_string())
                    ),
                ));
            }
        }
    }
}

fn first_line(s: &str) -> String {
    s.lines().last().unwrap_or(s).trim().to_string()
}

fn junctor_list(
    m: &Map<String, Value>,
    key: &str,
    lvl: Level,
    path: &Path,
    skip_any_of_at: Option<usize>,
    errs: &mut Vec<FieldError>,
) {
    if let Some(list) = m.get(key).and_then(Value::as_array) {
        for (i, x) in list.iter().enumerate() {
            if let Some(xm) = x.as_object() {
                nested_value_validation(
                    xm,
                    skip_any_of_at == Some(i),
                    lvl,
                    &path.child(key).index(i),
                    errs,
                );
            }
        }
    }
}

fn nested_value_validation(
    m: &Map<String, Value>,
    skip_any_of: bool,
    lvl: Level,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    value_validation(m, skip_any_of, false, lvl, path, errs);
    if let Some(items) = m.get("items").and_then(Value::as_object) {
        nested_value_validation(items, false, lvl, &path.child("items"), errs);
    }
    if let Some(p) = props(m) {
        for (k, sub) in p {
            if let Some(sm) = sub.as_object() {
                nested_value_validation(
                    sm,
                    false,
                    Level::Field,
                    &path.child("properties").key(k),
                    errs,
                );
            }
        }
    }
    if !s(m, "type").is_empty() {
        errs.push(FieldError::forbidden(
            path.child("type").as_str(),
            "must be empty to be structural",
        ));
    }
    if m.contains_key("additionalProperties") {
        errs.push(FieldError::forbidden(
            path.child("additionalProperties").as_str(),
            "must be undefined to be structural",
        ));
    }
    if m.get("default").is_some_and(|d| !d.is_null()) {
        errs.push(FieldError::forbidden(
            path.child("default").as_str(),
            "must be undefined to be structural",
        ));
    }
    if !s(m, "title").is_empty() {
        errs.push(FieldError::forbidden(
            path.child("title").as_str(),
            "must be empty to be structural",
        ));
    }
    if !s(m, "description").is_empty() {
        errs.push(FieldError::forbidden(
            path.child("description").as_str(),
            "must be empty to be structural",
        ));
    }
    if b(m, "nullable") {
        errs.push(FieldError::forbidden(
            path.child("nullable").as_str(),
            "must be false to be structural",
        ));
    }
    if m.contains_key("externalDocs") {
        errs.push(FieldError::forbidden(
            path.child("externalDocs").as_str(),
            "must be undefined to be structural",
        ));
    }
    for (k, msg) in [
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        ),
    ] {
        if b(m, k) {
            errs.push(FieldError::forbidden(path.child(k).as_str(), msg));
        }
    }
    if m.get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        errs.push(FieldError::forbidden(
            path.child("x-kubernetes-list-map-keys").as_str(),
            "must be empty to be structural",
        ));
    }
    for k in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if m.get(k).is_some_and(|x| !x.is_null()) {
            errs.push(FieldError::forbidden(
                path.child(k).as_str(),
                "must be undefined to be structural",
            ));
        }
    }
    if m.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        errs.push(FieldError::forbidden(
            path.child("x-kubernetes-validations").as_str(),
            "must be empty to be structural",
        ));
    }
    if props(m).is_some_and(|p| p.contains_key("metadata")) {
        errs.push(FieldError::forbidden(
            path.child("properties").key("metadata").as_str(),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralCompleteness`: every property or items named inside
/// the root's junctors must also be specified outside of them.
fn completeness(root: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(m) = obj(root) else { return };
    value_validation_completeness(m, Some(root), path, path, errs);
}

fn value_validation_completeness(
    v: &Map<String, Value>,
    s: Option<&Value>,
    spath: &Path,
    vpath: &Path,
    errs: &mut Vec<FieldError>,
) {
    if let Some(not) = v.get("not").and_then(Value::as_object) {
        nested_completeness(not, s, spath, &vpath.child("not"), errs);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = v.get(key).and_then(Value::as_array) {
            for (i, x) in list.iter().enumerate() {
                if let Some(xm) = x.as_object() {
                    nested_completeness(xm, s, spath, &vpath.child(key).index(i), errs);
                }
            }
        }
    }
}

fn nested_completeness(
    v: &Map<String, Value>,
    s: Option<&Value>,
    spath: &Path,
    vpath: &Path,
    errs: &mut Vec<FieldError>,
) {
    let Some(sv) = s else {
        errs.push(FieldError::required(
            spath.as_str(),
            &format!("because it is defined in {vpath}"),
        ));
        return;
    };
    value_validation_completeness(v, Some(sv), spath, vpath, errs);
    let sm = sv.as_object();
    if let Some(items) = v.get("items").and_then(Value::as_object) {
        let s_items = sm.and_then(|m| m.get("items")).filter(|i| i.is_object());
        nested_completeness(
            items,
            s_items,
            &spath.child("items"),
            &vpath.child("items"),
            errs,
        );
    }
    if let Some(p) = props(v) {
        let s_props = sm.and_then(props);
        for (k, vf) in p {
            let Some(vfm) = vf.as_object() else { continue };
            match s_props.and_then(|sp| sp.get(k)) {
                None => errs.push(FieldError::required(
                    spath.child("properties").key(k).as_str(),
                    &format!(
                        "because it is defined in {}",
                        vpath.child("properties").key(k)
                    ),
                )),
                Some(sf) => nested_completeness(
                    vfm,
                    Some(sf),
                    &spath.child("properties").key(k),
                    &vpath.child("properties").key(k),
                    errs,
                ),
            }
        }
    }
}

// ---------------------------------------------------------------------
// ValidateCustomResourceDefinitionOpenAPISchema
// ---------------------------------------------------------------------

/// Context threaded through the OpenAPI schema checks
/// (`specStandardValidatorV3`).
#[derive(Clone, Debug)]
struct Ssv {
    allow_defaults: bool,
    disallow_defaults_reason: String,
    inside_resource_meta: bool,
    require_valid_property_type: bool,
}

const META_FIELDS: [&str; 3] = ["metadata", "kind", "apiVersion"];

/// The OpenAPI schema checks of `ValidateCustomResourceDefinitionOpenAPISchema`
/// for the root schema at `path`.
pub(crate) fn validate_openapi_schema(
    schema: &Value,
    path: &Path,
    opts: &SchemaOptions,
) -> Vec<FieldError> {
    let ssv = Ssv {
        allow_defaults: opts.allow_defaults,
        disallow_defaults_reason: String::new(),
        inside_resource_meta: false,
        require_valid_property_type: opts.require_valid_property_type,
    };
    let mut errs = Vec::new();
    openapi_schema(Some(schema), path, &ssv, true, opts, &mut errs);
    errs
}

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

fn ssv_validate(m: &Map<String, Value>, path: &Path, ssv: &Ssv, errs: &mut Vec<FieldError>) {
    let typ = s(m, "type");
    if ssv.require_valid_property_type && !typ.is_empty() && !OPENAPI_V3_TYPES.contains(&typ) {
        errs.push(FieldError::not_supported_str(
            path.child("type").as_str(),
            typ,
            &OPENAPI_V3_TYPES,
        ));
    }
    if m.get("default").is_some_and(|d| !d.is_null()) && !ssv.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !ssv.disallow_defaults_reason.is_empty() {
            detail.push(' ');
            detail.push_str(&ssv.disallow_defaults_reason);
        }
        errs.push(FieldError::forbidden(
            path.child("default").as_str(),
            &detail,
        ));
    }
    if !s(m, "id").is_empty() {
        errs.push(FieldError::forbidden(
            path.child("id").as_str(),
            "id is not supported",
        ));
    }
    if m.contains_key("additionalItems") {
        errs.push(FieldError::forbidden(
            path.child("additionalItems").as_str(),
            "additionalItems is not supported",
        ));
    }
    if m.get("patternProperties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
    {
        errs.push(FieldError::forbidden(
            path.child("patternProperties").as_str(),
            "patternProperties is not supported",
        ));
    }
    if m.get("definitions")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
    {
        errs.push(FieldError::forbidden(
            path.child("definitions").as_str(),
            "definitions is not supported",
        ));
    }
    if m.contains_key("dependencies") {
        errs.push(FieldError::forbidden(
            path.child("dependencies").as_str(),
            "dependencies is not supported",
        ));
    }
    if m.contains_key("$ref") {
        errs.push(FieldError::forbidden(
            path.child("$ref").as_str(),
            "$ref is not supported",
        ));
    }
    if typ == "null" {
        errs.push(FieldError::forbidden(
            path.child("type").as_str(),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if m.get("items").is_some_and(Value::is_array) {
        errs.push(FieldError::forbidden(
            path.child("items").as_str(),
            "items must be a schema object and not an array",
        ));
    }
    if ssv.inside_resource_meta && b(m, "x-kubernetes-embedded-resource") {
        errs.push(FieldError::forbidden(
            path.child("x-kubernetes-embedded-resource").as_str(),
            "must not be used inside of resource meta",
        ));
    }
}

fn openapi_schema(
    schema: Option<&Value>,
    path: &Path,
    ssv: &Ssv,
    is_root: bool,
    opts: &SchemaOptions,
    errs: &mut Vec<FieldError>,
) {
    let Some(m) = schema.and_then(Value::as_object) else {
        return;
    };
    ssv_validate(m, path, ssv, errs);

    if b(m, "uniqueItems") {
        errs.push(FieldError::forbidden(
            path.child("uniqueItems").as_str(),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let properties = props(m);
    if let Some(ap) = m.get("additionalProperties") {
        if properties.is_some_and(|p| !p.is_empty())
            && (ap == &Value::Bool(false) || ap.is_object())
        {
            errs.push(FieldError::forbidden(
                path.child("additionalProperties").as_str(),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let mut sub = ssv.clone();
        if ssv.inside_resource_meta {
            sub.allow_defaults = false;
            sub.disallow_defaults_reason =
                "inside additionalProperties applying to object metadata".into();
        }
        if ap.is_object() {
            openapi_schema(
                Some(ap),
                &path.child("additionalProperties"),
                &sub,
                false,
                opts,
                errs,
            );
        }
    }
    let embedded = b(m, "x-kubernetes-embedded-resource");
    if let Some(p) = properties {
        for (k, sub_schema) in p {
            let mut sub = ssv.clone();
            if (is_root || embedded) && META_FIELDS.contains(&k.as_str()) {
                sub.inside_resource_meta = true;
                if is_root {
                    sub.allow_defaults = false;
                    sub.disallow_defaults_reason = format!("in top-level {k}");
                }
            }
            openapi_schema(
                Some(sub_schema),
                &path.child("properties").key(k),
                &sub,
                false,
                opts,
                errs,
            );
        }
    }
    openapi_schema(m.get("not"), &path.child("not"), ssv, false, opts, errs);
    for key in ["allOf", "oneOf", "anyOf"] {
        if let Some(list) = m.get(key).and_then(Value::as_array) {
            for (i, x) in list.iter().enumerate() {
                openapi_schema(Some(x), &path.child(key).index(i), ssv, false, opts, errs);
            }
        }
    }
    if let Some(defs) = m.get("definitions").and_then(Value::as_object) {
        for (k, x) in defs {
            openapi_schema(
                Some(x),
                &path.child("definitions").key(k),
                ssv,
                false,
                opts,
                errs,
            );
        }
    }
    let items = m.get("items");
    if let Some(i) = items {
        match i {
            Value::Array(list) => {
                for (idx, x) in list.iter().enumerate() {
                    openapi_schema(
                        Some(x),
                        &path.child("items").index(idx),
                        ssv,
                        false,
                        opts,
                        errs,
                    );
                }
            }
            _ => openapi_schema(Some(i), &path.child("items"), ssv, false, opts, errs),
        }
    }
    if let Some(deps) = m.get("dependencies").and_then(Value::as_object) {
        for (k, x) in deps {
            if x.is_object() {
                openapi_schema(
                    Some(x),
                    &path.child("dependencies").key(k),
                    ssv,
                    false,
                    opts,
                    errs,
                );
            }
        }
    }

    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(FieldError::invalid(
            path.child("x-kubernetes-preserve-unknown-fields").as_str(),
            &Value::Bool(false),
            "must be true or undefined",
        ));
    }

    check_map_type(m, path, errs);
    check_list_type(m, path, opts, errs);

    if opts.require_map_list_keys_map_set_validation {
        errs.extend(map_list_keys_map_set(m, path));
    }
    x_validations_static(m, path, errs);
}

/// `x-kubernetes-map-type`: only on objects, `atomic` or `granular`.
fn check_map_type(m: &Map<String, Value>, path: &Path, errs: &mut Vec<FieldError>) {
    let typ = s(m, "type");
    let map_type = m.get("x-kubernetes-map-type").and_then(Value::as_str);
    if let Some(mt) = map_type {
        if typ != "object" {
            let msg = "must be object if x-kubernetes-map-type is specified";
            if typ.is_empty() {
                errs.push(FieldError::required(path.child("type").as_str(), msg));
            } else {
                errs.push(FieldError::invalid_str(
                    path.child("type").as_str(),
                    typ,
                    msg,
                ));
            }
        }
        if mt != "atomic" && mt != "granular" {
            errs.push(FieldError::not_supported_str(
                path.child("x-kubernetes-map-type").as_str(),
                mt,
                &["atomic", "granular"],
            ));
        }
    }
}

/// `x-kubernetes-list-type` and `x-kubernetes-list-map-keys`: only on
/// arrays, set items atomic, map keys naming scalar item properties.
fn check_list_type(
    m: &Map<String, Value>,
    path: &Path,
    opts: &SchemaOptions,
    errs: &mut Vec<FieldError>,
) {
    let typ = s(m, "type");
    let items = m.get("items");
    let list_type = m.get("x-kubernetes-list-type").and_then(Value::as_str);
    let item_schema = items.and_then(Value::as_object);
    if let Some(lt) = list_type {
        if typ != "array" {
            let msg = "must be array if x-kubernetes-list-type is specified";
            if typ.is_empty() {
                errs.push(FieldError::required(path.child("type").as_str(), msg));
            } else {
                errs.push(FieldError::invalid_str(
                    path.child("type").as_str(),
                    typ,
                    msg,
                ));
            }
        } else if opts.require_atomic_set_type && lt == "set" {
            if let Some(is) = item_schema {
                match s(is, "type") {
                    "array" => {
                        if let Some(inner) =
                            is.get("x-kubernetes-list-type").and_then(Value::as_str)
                        {
                            if inner != "atomic" {
                                errs.push(FieldError::invalid_str(
                                    path.child("items").child("x-kubernetes-list-type").as_str(),
                                    inner,
                                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                                ));
                            }
                        }
                    }
                    "object"
                        if is.get("x-kubernetes-map-type").and_then(Value::as_str)
                            != Some("atomic") =>
                    {
                        // apiextensions-apiserver reports the item's list
                        // type here (nil for an object), hence `null`.
                        let shown = is
                            .get("x-kubernetes-list-type")
                            .cloned()
                            .unwrap_or(Value::Null);
                        errs.push(FieldError::invalid(
                            path.child("items").child("x-kubernetes-map-type").as_str(),
                            &shown,
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        ));
                    }
                    _ => {}
                }
            }
        }
        if lt != "atomic" && lt != "set" && lt != "map" {
            errs.push(FieldError::not_supported_str(
                path.child("x-kubernetes-list-type").as_str(),
                lt,
                &["atomic", "set", "map"],
            ));
        }
    }

    let map_keys: Vec<&str> = m
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let map_keys_value = m
        .get("x-kubernetes-list-map-keys")
        .cloned()
        .unwrap_or(Value::Null);
    if !map_keys.is_empty() {
        let msg = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errs.push(FieldError::required(
                path.child("x-kubernetes-list-type").as_str(),
                msg,
            )),
            Some(lt) if lt != "map" => errs.push(FieldError::invalid_str(
                path.child("x-kubernetes-list-type").as_str(),
                lt,
                msg,
            )),
            _ => {}
        }
    }
    if list_type == Some("map") {
        if map_keys.is_empty() {
            errs.push(FieldError::required(
                path.child("x-kubernetes-list-map-keys").as_str(),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match items {
            None => errs.push(FieldError::required(
                path.child("items").as_str(),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(i @ Value::Array(_)) => errs.push(FieldError::invalid(
                path.child("items").as_str(),
                i,
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            _ => {}
        }
        if let Some(is) = item_schema {
            let it = s(is, "type");
            if it != "object" {
                errs.push(FieldError::invalid_str(
                    path.child("items").child("type").as_str(),
                    it,
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            } else {
                let item_props = props(is);
                let mut seen = std::collections::HashSet::new();
                for k in &map_keys {
                    match item_props
                        .and_then(|p| p.get(*k))
                        .and_then(Value::as_object)
                    {
                        Some(kp) => {
                            let kt = s(kp, "type");
                            if kt == "array" || kt == "object" {
                                errs.push(FieldError::invalid_str(
                                    path.child("items").child("properties").key(k).child("type").as_str(),
                                    it,
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => errs.push(FieldError::invalid(
                            path.child("x-kubernetes-list-map-keys").as_str(),
                            &map_keys_value,
                            "entries must all be names of item properties",
                        )),
                    }
                    if !seen.insert(*k) {
                        errs.push(FieldError::invalid(
                            path.child("x-kubernetes-list-map-keys").as_str(),
                            &map_keys_value,
                            "must not contain duplicate entries",
                        ));
                    }
                }
            }
        }
    }
}

/// `validateMapListKeysMapSet`.
pub(crate) fn map_list_keys_map_set(m: &Map<String, Value>, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(is) = m.get("items").and_then(Value::as_object) else {
        return errs;
    };
    let Some(lt) = m.get("x-kubernetes-list-type").and_then(Value::as_str) else {
        return errs;
    };
    if lt != "set" && lt != "map" {
        return errs;
    }
    if b(is, "nullable") {
        errs.push(FieldError::forbidden(
            path.child("items").child("nullable").as_str(),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        let required: Vec<&str> = is
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let keys: Vec<&str> = m
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for k in keys {
            let Some(kp) = props(is).and_then(|p| p.get(k)).and_then(Value::as_object) else {
                continue;
            };
            if !required.contains(&k) && kp.get("default").is_none_or(Value::is_null) {
                errs.push(FieldError::required(
                    path.child("items").child("properties").key(k).child("default").as_str(),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ));
            }
            if b(kp, "nullable") {
                errs.push(FieldError::forbidden(
                    path.child("items")
                        .child("properties")
                        .key(k)
                        .child("nullable")
                        .as_str(),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    errs
}

const SUPPORTED_VALIDATION_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

fn has_newlines(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

/// The static (non-CEL) checks of `x-kubernetes-validations` entries.
fn x_validations_static(m: &Map<String, Value>, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(list) = m.get("x-kubernetes-validations").and_then(Value::as_array) else {
        return;
    };
    for (i, rule) in list.iter().enumerate() {
        let p = path.child("x-kubernetes-validations").index(i);
        let empty = Map::new();
        let r = rule.as_object().unwrap_or(&empty);
        let rule_s = s(r, "rule");
        let msg = s(r, "message");
        let msg_expr = s(r, "messageExpression");
        let trimmed_rule = rule_s.trim();
        let trimmed_msg = msg.trim();
        if trimmed_rule.is_empty() {
            errs.push(FieldError::required(
                p.child("rule").as_str(),
                "rule is not specified",
            ));
        } else if !msg.is_empty() && trimmed_msg.is_empty() {
            errs.push(FieldError::invalid_str(
                p.child("message").as_str(),
                msg,
                "must be non-empty if specified",
            ));
        } else if has_newlines(trimmed_msg) {
            errs.push(FieldError::invalid_str(
                p.child("message").as_str(),
                msg,
                "must not contain line breaks",
            ));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(FieldError::required(
                p.child("message").as_str(),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            errs.push(FieldError::required(
                p.child("messageExpression").as_str(),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = r.get("reason").and_then(Value::as_str) {
            if !SUPPORTED_VALIDATION_REASONS.contains(&reason) {
                errs.push(FieldError::not_supported_str(
                    p.child("reason").as_str(),
                    reason,
                    &SUPPORTED_VALIDATION_REASONS,
                ));
            }
        }
        let fp = s(r, "fieldPath");
        if !fp.is_empty() && fp.trim().is_empty() {
            errs.push(FieldError::invalid_str(
                p.child("fieldPath").as_str(),
                fp,
                "must be non-empty if specified",
            ));
        }
        if has_newlines(fp) {
            errs.push(FieldError::invalid_str(
                p.child("fieldPath").as_str(),
                fp,
                "must not contain line breaks",
            ));
        }
    }
}

/// Whether any schema node satisfies `pred` (`SchemaHas`).
pub(crate) fn schema_has(v: &Value, pred: &dyn Fn(&Map<String, Value>) -> bool) -> bool {
    let Some(m) = v.as_object() else { return false };
    if pred(m) {
        return true;
    }
    let single = ["items", "not", "additionalProperties", "additionalItems"];
    for k in single {
        if let Some(x) = m.get(k) {
            match x {
                Value::Array(a) => {
                    if a.iter().any(|y| schema_has(y, pred)) {
                        return true;
                    }
                }
                _ => {
                    if schema_has(x, pred) {
                        return true;
                    }
                }
            }
        }
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        if let Some(a) = m.get(k).and_then(Value::as_array) {
            if a.iter().any(|y| schema_has(y, pred)) {
                return true;
            }
        }
    }
    for k in [
        "properties",
        "patternProperties",
        "definitions",
        "dependencies",
    ] {
        if let Some(o) = m.get(k).and_then(Value::as_object) {
            if o.values().any(|y| schema_has(y, pred)) {
                return true;
            }
        }
    }
    false
}
