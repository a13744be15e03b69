//! `x-kubernetes-validations` CEL rules, through kube-rs's `kube-cel` (the
//! `cel` feature of kube-core): rules are compiled when a CRD is written
//! (syntax errors are reported like apiextensions-apiserver's
//! `compilation failed`) and evaluated on every custom resource write,
//! after the OpenAPI validation and only when it found no blocking error,
//! as the custom resource strategy does (`hasBlockingErr`). Failures become
//! field errors the way `fieldErrorForReason` builds them: the value shown
//! is the schema type of the node carrying the rule.
//!
//! `optionalOldSelf` rules see `oldSelf` as a CEL optional, as in
//! kube-apiserver (kube-cel binds it bare; see [`optional_old_self`]).
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
    if !has_rules {
        return None;
    }
    let mut schema = schema.clone();
    optional_old_self(&mut schema);
    Some(Arc::new(compile_schema(&schema)))
}

/// The CEL spelling of an `optionalOldSelf` rule's `oldSelf`.
const OPTIONAL_OLD_SELF: &str = "(oldSelf == null ? optional.none() : optional.of(oldSelf))";

/// With `optionalOldSelf: true`, kube-apiserver binds `oldSelf` as a CEL
/// optional (`optional.none()` on create, `optional.of(old)` on update), so
/// rules are written `oldSelf.orValue(x)` / `oldSelf.hasValue()`; kube-cel
/// binds the bare old value, or `null` on create. Such rules are evaluated
/// with `oldSelf` rewritten into the optional, keeping the original text in
/// the message a failure reports (`failed rule: <rule>`).
fn optional_old_self(v: &mut Value) {
    let Some(m) = v.as_object_mut() else { return };
    if let Some(rules) = m
        .get_mut("x-kubernetes-validations")
        .and_then(Value::as_array_mut)
    {
        for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
            if rule.get("optionalOldSelf") != Some(&Value::Bool(true)) {
                continue;
            }
            let Some(text) = rule.get("rule").and_then(Value::as_str).map(str::to_owned) else {
                continue;
            };
            let rewritten = replace_identifier(&text, "oldSelf", OPTIONAL_OLD_SELF);
            if rewritten == text {
                continue;
            }
            let has_message = ["message", "messageExpression"].iter().any(|k| {
                rule.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.trim().is_empty())
            });
            if !has_message {
                rule.insert(
                    "message".into(),
                    Value::String(format!("failed rule: {text}")),
                );
            }
            rule.insert("rule".into(), Value::String(rewritten));
        }
    }
    for (k, sub) in m.iter_mut() {
        match k.as_str() {
            "properties" => {
                if let Some(props) = sub.as_object_mut() {
                    props.values_mut().for_each(optional_old_self);
                }
            }
            "items" | "additionalProperties" => optional_old_self(sub),
            _ => {}
        }
    }
}

/// Replaces the identifier `ident` in a CEL expression, outside string
/// literals and not as a field selection (`x.oldSelf`).
fn replace_identifier(expr: &str, ident: &str, with: &str) -> String {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let chars: Vec<char> = expr.chars().collect();
    let word: Vec<char> = ident.chars().collect();
    let mut out = String::with_capacity(expr.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' {
            // A string literal, triple-quoted or not; escapes skip a char.
            let triple = chars
                .get(i..i + 3)
                .is_some_and(|t| t.iter().all(|&x| x == c));
            let quote_len = if triple { 3 } else { 1 };
            let start = i;
            i += quote_len;
            while i < chars.len() {
                if chars[i] == '\\' {
                    i += 2;
                    continue;
                }
                if chars[i] == c
                    && (!triple
                        || chars
                            .get(i..i + 3)
                            .is_some_and(|t| t.iter().all(|&x| x == c)))
                {
                    i += quote_len;
                    break;
                }
                i += 1;
            }
            out.extend(&chars[start..i.min(chars.len())]);
            continue;
        }
        let before_ok = i == 0 || (!is_ident(chars[i - 1]) && chars[i - 1] != '.');
        let matches = chars.get(i..i + word.len()) == Some(&word[..]);
        let after_ok = chars.get(i + word.len()).is_none_or(|&n| !is_ident(n));
        if before_ok && matches && after_ok {
            out.push_str(with);
            i += word.len();
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_self_is_replaced_as_an_identifier_only() {
        assert_eq!(
            replace_identifier(
                "self >= oldSelf.orValue(0) && self.oldSelf == 'oldSelf' && oldSelfish",
                "oldSelf",
                "X"
            ),
            "self >= X.orValue(0) && self.oldSelf == 'oldSelf' && oldSelfish"
        );
        assert_eq!(
            replace_identifier(r#""a\"oldSelf" + oldSelf"#, "oldSelf", "X"),
            r#""a\"oldSelf" + X"#
        );
    }

    #[test]
    fn optional_old_self_rules_see_an_optional() {
        let schema = serde_json::json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "g": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "self >= oldSelf.orValue(0)", "optionalOldSelf": true},
            {"rule": "!oldSelf.hasValue() || oldSelf.value() != 7", "optionalOldSelf": true, "message": "was seven"}
        ]}}}}});
        let s = super::super::StructuralSchema::parse(&schema).expect("structural");
        let obj = |g: i64| serde_json::json!({"spec": {"g": g}});
        assert!(
            s.validate(&obj(1), None).is_empty(),
            "create: oldSelf is none"
        );
        assert!(s.validate(&obj(3), Some(&obj(2))).is_empty());
        let errs = s.validate(&obj(1), Some(&obj(2)));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(
            errs[0].message,
            "Invalid value: \"integer\": failed rule: self >= oldSelf.orValue(0)"
        );
        let errs = s.validate(&obj(8), Some(&obj(7)));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].message.ends_with("was seven"), "{errs:?}");
    }
}
