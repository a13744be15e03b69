//! A webhook's `matchConditions` (admissionregistration v1): CEL
//! expressions over `object`, `oldObject` and `request`, all true to call
//! the webhook. As kube-apiserver's `matchconditions` matcher decides: a
//! false condition skips the webhook whatever the others gave; otherwise
//! an evaluation error skips it under `failurePolicy: Ignore` and refuses
//! the request (403 Forbidden) under `Fail`. The checks a configuration
//! write makes of them (`ValidateMatchConditions`) live here too. The
//! `authorizer` variable is not bound: the server has no authorizer to
//! ask.

use std::collections::HashSet;

use serde_json::Value;

use crate::schema::{evaluate_bool, parse_unbound};
use crate::status::Cause;
use crate::util;

/// The most conditions one webhook may have.
const MAX_CONDITIONS: usize = 64;

/// What a webhook's conditions decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    Call,
    Skip,
    /// The conditions could not be evaluated, under `Fail`: the request is
    /// refused with this error text.
    Refuse(String),
}

/// Evaluates `conditions` (the webhook's `matchConditions`) for a request.
pub(crate) fn decide(
    conditions: &[Value],
    ignore_failures: bool,
    request: &Value,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Decision {
    let null = Value::Null;
    let variables = [
        ("object", object.unwrap_or(&null)),
        ("oldObject", old.unwrap_or(&null)),
        ("request", request),
    ];
    decide_with(conditions, ignore_failures, &variables)
}

/// [`decide`] over the variables given: a ValidatingAdmissionPolicy's
/// conditions see its `params` too.
pub(crate) fn decide_with(
    conditions: &[Value],
    ignore_failures: bool,
    variables: &[(&str, &Value)],
) -> Decision {
    let mut errors = Vec::new();
    for condition in conditions {
        let expression = condition
            .get("expression")
            .and_then(Value::as_str)
            .unwrap_or("");
        let outcome = parse_unbound(expression)
            .map_err(|e| format!("compilation failed: {e}"))
            .and_then(|program| evaluate_bool(&program, variables));
        match outcome {
            Ok(true) => {}
            Ok(false) => return Decision::Skip,
            Err(e) => errors.push(format!("expression '{expression}' resulted in error: {e}")),
        }
    }
    match errors.len() {
        0 => Decision::Call,
        _ if ignore_failures => Decision::Skip,
        1 => Decision::Refuse(errors.concat()),
        _ => Decision::Refuse(format!("[{}]", errors.join(", "))),
    }
}

/// The field errors of one webhook's `matchConditions` at `path`
/// (`webhooks[0].matchConditions`).
pub(crate) fn validate(conditions: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(conditions) = conditions.filter(|c| !c.is_null()) else {
        return causes;
    };
    let Some(conditions) = conditions.as_array() else {
        causes.push(Cause::invalid(path, "Invalid value: must be a list"));
        return causes;
    };
    if conditions.len() > MAX_CONDITIONS {
        // Nothing else is checked past the limit.
        causes.push(Cause {
            reason: "FieldValueTooMany".into(),
            message: format!(
                "Too many: {}: must have at most {MAX_CONDITIONS} items",
                conditions.len()
            ),
            field: path.to_owned(),
        });
        return causes;
    }
    // Per condition as `validateMatchCondition` goes: the expression, the
    // name, then whether an earlier condition had the name.
    let mut names = HashSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let expression = condition
            .get("expression")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        if expression.is_empty() {
            causes.push(Cause::required(format!("{at}.expression")));
        } else if let Err(e) = parse_unbound(expression) {
            causes.push(Cause::invalid(
                format!("{at}.expression"),
                format!(
                    "Invalid value: {}: compilation failed: {e}",
                    serde_json::to_string(expression).unwrap_or_default()
                ),
            ));
        }
        let name = condition.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(Cause::required(format!("{at}.name")));
            continue;
        }
        if let Err(msg) = qualified_name(name) {
            causes.push(Cause::invalid(
                format!("{at}.name"),
                format!("Invalid value: \"{name}\": {msg}"),
            ));
        }
        if !names.insert(name) {
            causes.push(Cause {
                reason: "FieldValueDuplicate".into(),
                message: format!("Duplicate value: \"{name}\""),
                field: format!("{at}.name"),
            });
        }
    }
    causes
}

/// `IsQualifiedName`, the first message only.
fn qualified_name(name: &str) -> Result<(), String> {
    let part = match name.split_once('/') {
        Some((prefix, part)) => {
            util::validate_name(prefix, util::NameRule::Subdomain)
                .map_err(|e| format!("prefix part {e}"))?;
            part
        }
        None => name,
    };
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if part.is_empty() {
        Err("name part must be non-empty".into())
    } else if part.len() > 63 {
        Err("name part must be no more than 63 characters".into())
    } else if !(alnum(part.chars().next())
        && alnum(part.chars().last())
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        Err("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conditions(expressions: &[&str]) -> Vec<Value> {
        expressions
            .iter()
            .enumerate()
            .map(|(i, e)| json!({"name": format!("c{i}"), "expression": e}))
            .collect()
    }

    #[test]
    fn a_false_condition_skips_whatever_the_others_gave() {
        let request = json!({"operation": "CREATE", "namespace": "default"});
        let object = json!({"metadata": {"name": "x", "labels": {"a": "1"}}});
        let decide_with = |exprs: &[&str], ignore: bool| {
            decide(&conditions(exprs), ignore, &request, Some(&object), None)
        };
        assert_eq!(
            decide_with(
                &[
                    "request.operation == 'CREATE'",
                    "object.metadata.labels.a == '1'"
                ],
                false
            ),
            Decision::Call
        );
        assert_eq!(
            decide_with(
                &["oldObject == null", "request.namespace == 'other'"],
                false
            ),
            Decision::Skip
        );
        assert_eq!(
            decide_with(&["object.missing == 1", "false"], false),
            Decision::Skip
        );
        assert_eq!(decide_with(&["object.missing == 1"], true), Decision::Skip);
        let Decision::Refuse(text) = decide_with(&["object.missing == 1"], false) else {
            panic!("an error under Fail refuses");
        };
        assert!(
            text.starts_with("expression 'object.missing == 1' resulted in error: "),
            "{text}"
        );
    }

    #[test]
    fn configurations_are_checked() {
        let many: Vec<Value> = (0..65)
            .map(|i| json!({"name": format!("c{i}"), "expression": "true"}))
            .collect();
        let causes = validate(Some(&json!(many)), "webhooks[0].matchConditions");
        assert_eq!(causes.len(), 1);
        assert_eq!(
            causes[0].message,
            "Too many: 65: must have at most 64 items"
        );
        let causes = validate(
            Some(&json!([
                {"name": "a", "expression": "true"},
                {"name": "a", "expression": "1 +"},
                {"name": "-bad-"},
            ])),
            "webhooks[0].matchConditions",
        );
        let fields: Vec<(&str, &str)> = causes
            .iter()
            .map(|c| (c.field.as_str(), c.reason.as_str()))
            .collect();
        assert_eq!(
            fields,
            vec![
                (
                    "webhooks[0].matchConditions[1].expression",
                    "FieldValueInvalid"
                ),
                ("webhooks[0].matchConditions[1].name", "FieldValueDuplicate"),
                (
                    "webhooks[0].matchConditions[2].expression",
                    "FieldValueRequired"
                ),
                ("webhooks[0].matchConditions[2].name", "FieldValueInvalid"),
            ]
        );
        assert!(
            causes[0].message.contains("compilation failed: "),
            "{}",
            causes[0].message
        );
    }
}
