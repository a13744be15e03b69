//! The checks every write makes: `apiVersion`/`kind` against the endpoint,
//! names, decode-validation of built-ins and their semantic rules, the
//! admission hooks for CRDs and custom resources, unknown fields (dropped
//! from built-in kinds) and duplicate keys per `fieldValidation`, and the
//! namespace lifecycle gate.

use serde_json::{json, Value};

use super::opts::WriteOpts;
use crate::machinery::status::{qualified, ApiError, Cause, Details};
use crate::machinery::util::{self, go_quote};
use crate::objects::engines::{self, FieldValidation};
use crate::registry::state::Shared;
use crate::registry::{ResKey, ResourceDef};

/// `ValidateObjectMeta`'s name checks with the kind's rule: on a create a
/// `generateName` is checked as a prefix, then the name, each message a
/// cause of its own as kube-apiserver lists them.
fn name_causes(def: &ResourceDef, obj: &Value, create: bool) -> Vec<Cause> {
    let rule = def.name_rule();
    let mut causes = Vec::new();
    let mut check = |field: &str, value: &str, prefix: bool| {
        for msg in util::name_errors(value, rule, prefix) {
            causes.push(Cause::invalid(
                field,
                format!("Invalid value: {}: {msg}", go_quote(value)),
            ));
        }
    };
    if let Some(prefix) = util::meta_str(obj, "generateName").filter(|g| create && !g.is_empty()) {
        check("metadata.generateName", prefix, true);
    }
    check(
        "metadata.name",
        util::meta_str(obj, "name").unwrap_or(""),
        false,
    );
    causes
}

/// Checks `apiVersion`/`kind` against the endpoint and rewrites
/// `apiVersion` to the storage version.
///
/// Built-in kinds are decoded as kube-apiserver's typed decoder does, with
/// the endpoint's kind and version as defaults (apimachinery's
/// `gvkWithDefaults`): a body without `kind`, or without `apiVersion`, is
/// the endpoint's type, which is how the official Python client's models
/// are sent. Custom resources are decoded as unstructured objects, which
/// must name their kind (`unstructuredJSONScheme`); one without
/// `apiVersion` fails the create/update handler's group-version check.
pub(super) fn check_type_meta(
    def: &ResourceDef,
    obj: &mut Value,
    version: &str,
) -> Result<(), ApiError> {
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON or YAML object",
        ));
    };
    let expected = def.api_version(version);
    let text = |key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (mut kind, mut api_version) = (text("kind"), text("apiVersion"));
    if def.is_custom() {
        if kind.is_empty() {
            let body = Value::Object(map.clone()).to_string();
            return Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): Object 'Kind' is missing in '{body}' ({})",
                def.kind,
                summarize(&body, 30)
            )));
        }
    } else {
        // `gvkWithDefaults`: the kind, and the group and version together.
        if kind.is_empty() {
            kind = def.kind.clone();
        }
        if api_version.is_empty() {
            api_version = expected.clone();
        }
    }
    let served_versions_ok = def
        .versions
        .iter()
        .any(|v| def.api_version(v) == api_version);
    if api_version != expected && !served_versions_ok {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({expected})"
        )));
    }
    if kind != def.kind {
        return Err(ApiError::bad_request(format!(
            "{kind} in version {:?} cannot be handled as a {}: the kind in the data ({kind}) does not match the expected kind ({})",
            api_version.rsplit('/').next().unwrap_or_default(),
            def.kind,
            def.kind
        )));
    }
    map.insert("kind".into(), json!(kind));
    map.insert(
        "apiVersion".into(),
        json!(def.api_version(&def.storage_version)),
    );
    if !map.get("metadata").is_some_and(Value::is_object) {
        if map.get("metadata").is_some_and(|m| !m.is_null()) {
            return Err(ApiError::bad_request("metadata must be an object"));
        }
        map.insert("metadata".into(), json!({}));
    }
    Ok(())
}

/// The start of a body for an error message, as apimachinery's
/// `summarizeData` gives it.
fn summarize(body: &str, max_chars: usize) -> String {
    match body.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{} ...", &body[..cut]),
        None => body.to_owned(),
    }
}

/// Decode-validation for built-ins, schema admission for custom resources,
/// CRD checks; also unknown-field handling per `fieldValidation`.
pub(super) fn validate(
    def: &ResourceDef,
    obj: &mut Value,
    old: Option<&Value>,
    opts: &WriteOpts,
) -> Result<Vec<String>, ApiError> {
    let name = util::meta_str(obj, "name").unwrap_or("").to_owned();
    let mut causes = name_causes(def, obj, old.is_none());
    let mut warnings = Vec::new();
    let mut unknown = Vec::new();
    if let Some(b) = def.builtin() {
        match (b.decode)(obj) {
            Ok(understood) => {
                // Decoding into the kind's type drops what it does not
                // know, whatever fieldValidation says; that only decides
                // whether the client hears of it.
                drop_unknown(obj, &understood, "", &mut unknown);
            }
            Err((path, msg)) => {
                if let Some(field) = msg
                    .strip_prefix("missing field `")
                    .and_then(|r| r.split('`').next())
                {
                    let full = if path.is_empty() {
                        field.to_owned()
                    } else {
                        format!("{path}.{field}")
                    };
                    causes.push(Cause::required(full));
                } else {
                    let at = if path.is_empty() {
                        String::new()
                    } else {
                        format!("{path}: ")
                    };
                    return Err(ApiError::bad_request(format!(
                        "{} in version \"{}\" cannot be handled as a {}: {at}{msg}",
                        def.kind, def.storage_version, def.kind
                    )));
                }
            }
        }
        causes.extend(def.validate_kind(obj, old));
        if def.is(crate::registry::BuiltinKind::CustomResourceDefinition) {
            causes.extend(engines::admit_crd(obj, old));
        }
    } else {
        let admitted = engines::admit_custom_resource(def, &opts.version, obj, old);
        causes.extend(admitted.causes);
        unknown = admitted.pruned;
    }
    let list: Vec<String> = opts
        .duplicates
        .iter()
        .map(|p| format!("duplicate field \"{p}\""))
        .chain(unknown.iter().map(|p| format!("unknown field \"{p}\"")))
        .collect();
    if !list.is_empty() {
        match opts.validation {
            FieldValidation::Strict => {
                return Err(ApiError::bad_request(format!(
                    "strict decoding error: {}",
                    list.join(", ")
                )));
            }
            FieldValidation::Warn => warnings.extend(list),
            FieldValidation::Ignore => {}
        }
    }
    if causes.is_empty() {
        Ok(warnings)
    } else {
        // Decoding and validation may both report a missing field.
        let mut unique: Vec<Cause> = Vec::with_capacity(causes.len());
        for c in causes {
            if !unique.contains(&c) {
                unique.push(c);
            }
        }
        Err(ApiError::invalid(&def.kind, &def.group, &name, unique))
    }
}

/// Removes from `sent` the fields the typed decode dropped (those missing
/// from `understood`), listing their paths in `out` as apimachinery's
/// strict decoding lists unknown fields. Nulls are not fields.
fn drop_unknown(sent: &mut Value, understood: &Value, path: &str, out: &mut Vec<String>) {
    match (sent, understood) {
        (Value::Object(s), Value::Object(u)) => {
            for (k, v) in s.iter_mut() {
                if v.is_null() {
                    continue;
                }
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match u.get(k) {
                    Some(uv) => drop_unknown(v, uv, &p, out),
                    None => out.push(p),
                }
            }
            s.retain(|k, v| v.is_null() || u.contains_key(k));
        }
        (Value::Array(s), Value::Array(u)) => {
            for (i, (sv, uv)) in s.iter_mut().zip(u).enumerate() {
                drop_unknown(sv, uv, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

pub(super) fn namespace_gate(shared: &Shared, def: &ResourceDef, ns: &str) -> Result<(), ApiError> {
    if !def.namespaced {
        return Ok(());
    }
    let ns_key = ResKey::new("", "namespaces");
    let found = shared
        .storage
        .lock()
        .get(&ns_key, &(String::new(), ns.to_owned()));
    match found {
        None => Err(ApiError::not_found("namespaces", "", ns)),
        Some(n) if n.deleting() => {
            Err(ApiError::forbidden(format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                qualified(&def.plural, &def.group),
                util::meta_str(&n.value(), "name").unwrap_or("")
            ))
            .with_details(Details {
                name: Some(String::new()),
                group: Some(def.group.clone()),
                kind: Some(def.plural.clone()),
                causes: vec![Cause {
                    reason: "NamespaceTerminating".into(),
                    message: format!("namespace {ns} is being terminated"),
                    field: "metadata.namespace".into(),
                }],
                ..Details::default()
            }))
        }
        Some(_) => Ok(()),
    }
}
