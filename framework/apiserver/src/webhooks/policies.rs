//! ValidatingAdmissionPolicies evaluated in process, as kube-apiserver's
//! ValidatingAdmissionPolicy plugin (`policy/validating`) evaluates them:
//! after mutating admission, before the validating webhooks. Each policy
//! (by name) whose `matchConstraints` take in the request is judged once
//! per binding naming it (by name) whose `matchResources` do: its
//! `matchConditions`, then its `variables` and `validations` over
//! `object`, `oldObject`, `request` and `params` (null: no `paramKind`).
//! A failed validation is acted on per the binding's `validationActions`:
//! Deny refuses the request (the first denial answers, with the
//! validation's `reason`, Invalid by default), Warn adds a `Warning`,
//! Audit has no audit log to reach here. An evaluation error counts as a
//! failure under `failurePolicy: Fail` and is ignored under `Ignore`.
//! A policy with a `paramKind` is refused as a binding configuration
//! error (under Fail): parameter resources are not read yet.

use std::borrow::Cow;
use std::sync::Arc;

use kube_core::cel::cel::Program;
use serde_json::Value;

use super::conditions::{self, Decision};
use super::config::resources_match;
use crate::objects::admit::Attributes;
use crate::registry::ResKey;
use crate::schema::authz::Session;
use crate::schema::{evaluate_policy, parse_unbound, Checked};
use crate::state::Shared;
use crate::status::{ApiError, Cause};
use crate::storage::{Filter, StoredObject};

const GROUP: &str = "admissionregistration.k8s.io";

/// A failed validation to act on: its text and `reason`.
struct Failure {
    message: String,
    reason: Option<String>,
}

/// A denial, with the policy and binding that gave it.
struct Denial {
    policy: String,
    binding: String,
    failure: Failure,
}

/// Judges a request by every policy bound to it: the warnings to add, and
/// the denial if any.
pub(crate) fn admit(
    shared: &Shared,
    attrs: &Attributes<'_>,
    object: Option<&Value>,
    old: Option<&Value>,
    authorizer: &Arc<Session>,
) -> (Vec<String>, Result<(), ApiError>) {
    let bindings = stored(shared, "validatingadmissionpolicybindings");
    if bindings.is_empty() {
        return (Vec::new(), Ok(()));
    }
    let policies = stored(shared, "validatingadmissionpolicies");
    let (_, review) = super::review::request(attrs, attrs.version, object, old);
    let request = review.get("request").unwrap_or(&Value::Null);
    let mut warnings = Vec::new();
    let mut denials = Vec::new();
    for policy in policies.iter().map(|p| p.value()) {
        let null = Value::Null;
        let spec = policy.get("spec").unwrap_or(&null);
        let constraints = spec.get("matchConstraints").unwrap_or(&null);
        if !resources_match(constraints, shared, attrs, object, old) {
            continue;
        }
        let policy_name = name_of(policy);
        for binding in bindings
            .iter()
            .map(|b| b.value())
            .filter(|b| b.pointer("/spec/policyName").and_then(Value::as_str) == Some(policy_name))
        {
            if let Some(resources) = binding
                .pointer("/spec/matchResources")
                .filter(|r| !r.is_null())
            {
                if !resources_match(resources, shared, attrs, object, old) {
                    continue;
                }
            }
            let failures = judge(spec, request, object, old, Some(authorizer));
            let actions: Vec<&str> = binding
                .pointer("/spec/validationActions")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for failure in failures {
                if actions.contains(&"Warn") {
                    warnings.push(format!(
                        "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{}': {}",
                        name_of(binding),
                        failure.message
                    ));
                }
                if actions.contains(&"Deny") {
                    denials.push(Denial {
                        policy: policy_name.to_owned(),
                        binding: name_of(binding).to_owned(),
                        failure,
                    });
                }
            }
        }
    }
    let outcome = match denials.into_iter().next() {
        None => Ok(()),
        Some(denial) => Err(denied(attrs, denial)),
    };
    (warnings, outcome)
}

/// The failures one policy's evaluation gave a request.
fn judge(
    spec: &Value,
    request: &Value,
    object: Option<&Value>,
    old: Option<&Value>,
    authorizer: Option<&Arc<Session>>,
) -> Vec<Failure> {
    let ignore_failures = spec.get("failurePolicy").and_then(Value::as_str) == Some("Ignore");
    let error = |message: String| {
        if ignore_failures {
            Vec::new()
        } else {
            vec![Failure {
                message,
                reason: None,
            }]
        }
    };
    if spec.get("paramKind").is_some_and(|k| !k.is_null()) {
        return error(
            "failed to configure binding: policies with a paramKind are not supported by this server"
                .into(),
        );
    }
    let conditions_given = array(spec.get("matchConditions"));
    match conditions::decide(
        conditions_given,
        ignore_failures,
        request,
        object,
        old,
        authorizer,
    ) {
        Decision::Call => {}
        Decision::Skip => return Vec::new(),
        Decision::Refuse(text) => return error(text),
    }
    let compiled = match compile(spec) {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    let variables: Vec<(&str, &Program)> = compiled
        .variables
        .iter()
        .map(|(n, p)| (n.as_str(), p))
        .collect();
    let validations: Vec<(&Program, Option<&Program>)> = compiled
        .validations
        .iter()
        .map(|(p, m)| (p, m.as_ref()))
        .collect();
    let null = Value::Null;
    let inputs = [
        ("object", object.unwrap_or(&null)),
        ("oldObject", old.unwrap_or(&null)),
        ("request", request),
        ("params", &null),
    ];
    let results = match evaluate_policy(&inputs, authorizer, &variables, &validations) {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    let mut failures = Vec::new();
    for (validation, result) in array(spec.get("validations")).iter().zip(results) {
        let text = |field: &str| {
            validation
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
        };
        match result {
            Checked::Passed => {}
            Checked::Failed(from_expression) => {
                let message = from_expression.unwrap_or_else(|| match text("message") {
                    "" => format!("failed expression: {}", text("expression")),
                    m => m.to_owned(),
                });
                failures.push(Failure {
                    message,
                    reason: Some(text("reason").to_owned()).filter(|r| !r.is_empty()),
                });
            }
            Checked::Error(e) => failures.extend(error(format!(
                "expression '{}' resulted in error: {e}",
                validation
                    .get("expression")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ))),
        }
    }
    failures
}

/// A policy's programs.
struct Compiled {
    variables: Vec<(String, Program)>,
    /// Each validation's expression and messageExpression.
    validations: Vec<(Program, Option<Program>)>,
}

/// Compiles a policy's expressions (checked when it was written, so an
/// error here is a configuration error).
fn compile(spec: &Value) -> Result<Compiled, String> {
    let parse = |text: &str| {
        parse_unbound(text)
            .map_err(|e| format!("failed to configure policy: compilation of '{text}' failed: {e}"))
    };
    let field = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
    let mut variables = Vec::new();
    for v in array(spec.get("variables")) {
        variables.push((field(v, "name"), parse(&field(v, "expression"))?));
    }
    let mut validations = Vec::new();
    for v in array(spec.get("validations")) {
        let message = field(v, "messageExpression");
        let message = if message.trim().is_empty() {
            None
        } else {
            Some(parse(&message)?)
        };
        validations.push((parse(&field(v, "expression"))?, message));
    }
    Ok(Compiled {
        variables,
        validations,
    })
}

/// The error a denial answers: `admission.NewForbidden`'s message and
/// details, with the validation's reason and its code, and the message as
/// a cause.
fn denied(attrs: &Attributes<'_>, denial: Denial) -> ApiError {
    let message = format!(
        "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
        denial.policy, denial.binding, denial.failure.message
    );
    let mut err = super::review::forbidden(attrs, &message);
    let (code, reason) = match denial.failure.reason.as_deref() {
        Some("Forbidden") => (403, "Forbidden"),
        Some("Unauthorized") => (401, "Unauthorized"),
        Some("RequestEntityTooLarge") => (413, "RequestEntityTooLarge"),
        _ => (422, "Invalid"),
    };
    err.code = code;
    err.reason = Cow::Borrowed(reason);
    if let Some(details) = err.details.as_mut() {
        details.causes.push(Cause {
            reason: String::new(),
            message,
            field: String::new(),
        });
    }
    err
}

/// The stored objects of one admissionregistration resource, by name.
fn stored(shared: &Shared, plural: &str) -> Vec<Arc<StoredObject>> {
    let page = shared.storage.lock().list(
        &ResKey::new(GROUP, plural),
        &Filter::default(),
        None,
        None,
        None,
    );
    page.map(|p| p.items).unwrap_or_default()
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn array(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn failures(spec: Value, object: Value) -> Vec<(String, Option<String>)> {
        let request = json!({"operation": "CREATE"});
        judge(&spec, &request, Some(&object), None, None)
            .into_iter()
            .map(|f| (f.message, f.reason))
            .collect()
    }

    #[test]
    fn messages_come_from_the_expression_the_message_or_the_validation() {
        let object = json!({"metadata": {"name": "x"}, "data": {"long": "x".repeat(6000)}});
        let spec = json!({"validations": [
            {"expression": "false", "messageExpression": "'from ' + object.metadata.name", "message": "fixed"},
            {"expression": "false", "messageExpression": "'two\\nlines'", "message": " fixed "},
            {"expression": "false", "messageExpression": "1", "reason": "Forbidden"},
            {"expression": " false ", "messageExpression": "'   '"},
            {"expression": "false", "messageExpression": "object.data.long"},
            {"expression": "false", "messageExpression": "object.data.long.substring(0, 5120)"},
            {"expression": "true", "message": "never"},
        ]});
        assert_eq!(
            failures(spec, object),
            vec![
                ("from x".to_owned(), None),
                ("fixed".to_owned(), None),
                (
                    "failed expression: false".to_owned(),
                    Some("Forbidden".to_owned())
                ),
                ("failed expression: false".to_owned(), None),
                ("failed expression: false".to_owned(), None),
                ("x".repeat(5120), None),
            ]
        );
    }

    #[test]
    fn variables_see_earlier_variables_and_errors_follow_the_failure_policy() {
        let object = json!({"metadata": {"name": "x"}, "data": {"a": "1", "b": "2"}});
        let spec = json!({
            "variables": [
                {"name": "keys", "expression": "object.data.size()"},
                {"name": "many", "expression": "variables.keys > 1"},
                {"name": "broken", "expression": "object.missing.field"},
            ],
            "validations": [
                {"expression": "!variables.many", "message": "too many"},
                {"expression": "variables.broken == 1"},
            ],
        });
        let got = failures(spec.clone(), object.clone());
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], ("too many".to_owned(), None));
        assert!(
            got[1]
                .0
                .starts_with("expression 'variables.broken == 1' resulted in error: "),
            "{got:?}"
        );
        let mut ignoring = spec;
        ignoring["failurePolicy"] = json!("Ignore");
        assert_eq!(
            failures(ignoring, object),
            vec![("too many".to_owned(), None)]
        );
    }
}
