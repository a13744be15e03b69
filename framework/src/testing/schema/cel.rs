//! `x-kubernetes-validations` CEL rules, through kube-rs's `kube-cel` (the
//! `cel` feature of kube-core): rules are compiled when a CRD is written
//! (syntax errors are reported like apiextensions-apiserver's
//! `compilation failed`) and evaluated on every custom resource write,
//! after the OpenAPI validation and only when it found no blocking error,
//! as the custom resource strategy does (`hasBlockingErr`). Failures become
//! field errors the way `fieldErrorForReason` builds them: the value shown
//! is the schema type of the node carrying the rule.
//!
//! Not covered: CEL cost estimation and limits, and type checking of rules
//! at CRD creation (only parsing).

use std::sync::{Arc, LazyLock};

use kube_core::cel::{cel, compile_schema, CompiledSchema, ErrorKind, ValidationError, Validator};
use serde_json::Value;

use super::field::{CauseType, FieldError, Path};
use super::node::Node;
use super::structural::schema_has;

static VALIDATOR: LazyLock<Validator> = LazyLock::new(Validator::new);

/// Compiled rules of a schema, `None` when it has none.
pub(crate) fn compile(schema: &Value) -> Option<Arc<CompiledSchema>> {
    let has_rules = schema_has(schema, &|m| {
        m.get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    });
    has_rules.then(|| Arc::new(compile_schema(schema)))
}

/// Whether OpenAPI errors keep CEL rules from running (apiextensions
/// `hasBlockingErr`).
pub(crate) fn blocking(errs: &[FieldError]) -> bool {
    errs.iter().any(|e| {
        matches!(
            e.cause,
            CauseType::NotSupported
                | CauseType::Required
                | CauseType::TooLong
                | CauseType::TooMany
                | CauseType::TypeInvalid
        )
    })
}

/// The error kube-apiserver adds when it skipped the rules.
pub(crate) fn not_checked() -> FieldError {
    FieldError::invalid(
        "<nil>",
        &Value::Null,
        "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
    )
}

/// The type of the schema node at a kube-cel field path (`spec.items[0]`).
fn type_at(root: &Node, path: &str) -> String {
    let mut cur = root;
    if !path.is_empty() {
        for part in path.split('.') {
            let (name, indices) = match part.find('[') {
                Some(i) => (&part[..i], part[i..].matches('[').count()),
                None => (part, 0),
            };
            if !name.is_empty() {
                match cur.properties.get(name).or_else(|| cur.additional_schema()) {
                    Some(n) => cur = n,
                    None => return "object".into(),
                }
            }
            for _ in 0..indices {
                match cur.items.as_deref() {
                    Some(n) => cur = n,
                    None => return "object".into(),
                }
            }
        }
    }
    if cur.int_or_string {
        return "string".into();
    }
    if cur.typ.is_empty() {
        "object".into()
    } else {
        cur.typ.clone()
    }
}

fn to_field_error(root: &Node, e: &ValidationError) -> FieldError {
    let field = if e.field_path.is_empty() {
        "<nil>".to_string()
    } else {
        e.field_path.trim_start_matches('.').to_string()
    };
    let typ = Value::String(type_at(root, &field));
    match e.kind {
        ErrorKind::ValidationFailure => match e.reason.as_deref() {
            Some("FieldValueForbidden") => FieldError::forbidden(&field, &e.message),
            Some("FieldValueRequired") => FieldError::required(&field, &e.message),
            Some("FieldValueDuplicate") => FieldError::duplicate(&field, &typ),
            _ => FieldError::invalid(&field, &typ, &e.message),
        },
        _ => FieldError::invalid(&field, &typ, &e.message),
    }
}

/// Evaluates the rules against `obj` (and `old` for transition rules).
pub(crate) fn evaluate(
    compiled: &CompiledSchema,
    root: &Node,
    obj: &Value,
    old: Option<&Value>,
) -> Vec<FieldError> {
    match VALIDATOR.validate_compiled(compiled, obj, old) {
        Ok(()) => Vec::new(),
        Err(errs) => errs.iter().map(|e| to_field_error(root, e)).collect(),
    }
}

/// Compiles every rule of a CRD schema at `path`, reporting the ones that
/// do not parse (`...x-kubernetes-validations[i].rule`).
pub(crate) fn compile_errors(schema: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk(schema, path, &mut errs);
    errs
}

fn walk(v: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(m) = v.as_object() else { return };
    if let Some(rules) = m.get("x-kubernetes-validations").and_then(Value::as_array) {
        for (i, rule) in rules.iter().enumerate() {
            let rp = path.child("x-kubernetes-validations").index(i);
            if let Some(expr) = rule
                .get("rule")
                .and_then(Value::as_str)
                .filter(|r| !r.trim().is_empty())
            {
                if let Err(e) = cel::Program::compile(expr) {
                    errs.push(FieldError::invalid(
                        rp.child("rule").as_str(),
                        rule,
                        &format!("compilation failed: {}", one_line(&e.to_string())),
                    ));
                }
            }
            if let Some(expr) = rule
                .get("messageExpression")
                .and_then(Value::as_str)
                .filter(|r| !r.trim().is_empty())
            {
                if let Err(e) = cel::Program::compile(expr) {
                    errs.push(FieldError::invalid(
                        rp.child("messageExpression").as_str(),
                        rule,
                        &format!(
                            "messageExpression compilation failed: {}",
                            one_line(&e.to_string())
                        ),
                    ));
                }
            }
        }
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, sub) in props {
            walk(sub, &path.child("properties").key(k), errs);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = m.get(key).filter(|s| s.is_object()) {
            walk(sub, &path.child(key), errs);
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
