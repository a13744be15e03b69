//! The checks and defaults a write of a ValidatingAdmissionPolicy or a
//! ValidatingAdmissionPolicyBinding (`admissionregistration.k8s.io/v1`)
//! gets, as kube-apiserver's `pkg/apis/admissionregistration/validation`
//! (`validateValidatingAdmissionPolicySpec`,
//! `validateValidatingAdmissionPolicyBindingSpec`) and the v1 defaulters
//! make them, with their field paths and messages. CEL expressions are
//! parsed, not type-checked: the variables are not typed here.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::apiextensions::{parse_unbound, CEL_RESERVED_WORDS};
use crate::machinery::names;
use crate::machinery::status::Cause;
use crate::registry::admissionregistration::validate::{
    array, duplicate, go_slice, invalid, label_selector, not_supported, one_of, quote, required,
    rule_with_operations, set_if_absent, str_at, strings, FAILURE_POLICIES, MATCH_POLICIES,
};

/// `supportedValidationPolicyReason`, sorted as Go's `sets.List` gives it.
const REASONS: &[&str] = &[
    "Forbidden",
    "Invalid",
    "RequestEntityTooLarge",
    "Unauthorized",
];
/// `validValidationActions`, sorted.
const ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];
const NOT_FOUND_ACTIONS: &[&str] = &["Deny", "Allow"];
/// The most auditAnnotations a policy may have.
const MAX_AUDIT_ANNOTATIONS: usize = 20;
/// The longest an audit annotation's valueExpression may be.
const MAX_VALUE_EXPRESSION: usize = 5 * 1024;

/// The field errors of a ValidatingAdmissionPolicy write; `old` is the
/// stored policy on an update (its matchConditions, when unchanged, are
/// not checked again).
pub(crate) fn validate_policy(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let mut out = Vec::new();
    match str_at(spec, "failurePolicy") {
        None => out.push(Cause::required("spec.failurePolicy")),
        Some(p) if !FAILURE_POLICIES.contains(&p) => {
            out.push(not_supported("spec.failurePolicy", p, FAILURE_POLICIES));
        }
        Some(_) => {}
    }
    if let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) {
        param_kind(kind, &mut out);
    }
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => out.push(Cause::required("spec.matchConstraints")),
        Some(constraints) => {
            match_resources(constraints, "spec.matchConstraints", &mut out);
            if array(constraints.get("resourceRules")).is_empty() {
                out.push(Cause::required("spec.matchConstraints.resourceRules"));
            }
        }
    }
    let conditions_unchanged = old.is_some_and(|old| {
        old.pointer("/spec/matchConditions") == obj.pointer("/spec/matchConditions")
    });
    if !conditions_unchanged {
        out.extend(
            crate::registry::admissionregistration::match_conditions::validate(
                spec.get("matchConditions"),
                "spec.matchConditions",
            ),
        );
    }
    for (i, variable) in array(spec.get("variables")).iter().enumerate() {
        variable_checks(variable, &format!("spec.variables[{i}]"), &mut out);
    }
    let validations = array(spec.get("validations"));
    let annotations = array(spec.get("auditAnnotations"));
    if validations.is_empty() && annotations.is_empty() {
        let why = "validations or auditAnnotations must contain at least one item";
        out.push(required("spec.validations", why));
        out.push(required("spec.auditAnnotations", why));
        return out;
    }
    for (i, v) in validations.iter().enumerate() {
        validation(v, &format!("spec.validations[{i}]"), &mut out);
    }
    if annotations.len() > MAX_AUDIT_ANNOTATIONS {
        out.push(Cause::invalid(
            "spec.auditAnnotations",
            format!(
                "Invalid value: must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"
            ),
        ));
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut keys = HashSet::new();
    for (i, annotation) in annotations.iter().enumerate() {
        let at = format!("spec.auditAnnotations[{i}]");
        audit_annotation(annotation, name, &at, &mut out);
        let key = str_at(annotation, "key").unwrap_or("");
        if !keys.insert(key) {
            out.push(duplicate(format!("{at}.key"), key));
        }
    }
    out
}

/// The field errors of a ValidatingAdmissionPolicyBinding write.
pub(crate) fn validate_binding(obj: &Value) -> Vec<Cause> {
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let mut out = Vec::new();
    match str_at(spec, "policyName").unwrap_or("") {
        "" => out.push(Cause::required("spec.policyName")),
        name => {
            for msg in names::is_dns1123_subdomain(name) {
                out.push(invalid("spec.policyName", &quote(name), &msg));
            }
        }
    }
    if let Some(param_ref) = spec.get("paramRef").filter(|p| !p.is_null()) {
        param_ref_checks(param_ref, &mut out);
    }
    if let Some(resources) = spec.get("matchResources").filter(|m| !m.is_null()) {
        match_resources(resources, "spec.matchResources", &mut out);
    }
    validation_actions(spec.get("validationActions"), &mut out);
    out
}

/// The v1 defaults (`SetDefaults_ValidatingAdmissionPolicySpec`,
/// `SetDefaults_MatchResources`, `SetDefaults_Rule`) of a policy or, with
/// `binding`, of a binding's `matchResources`.
pub(crate) fn default(obj: &mut Value, binding: bool) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let resources = if binding {
        "matchResources"
    } else {
        set_if_absent(spec, "failurePolicy", "Fail".into());
        "matchConstraints"
    };
    let Some(resources) = spec.get_mut(resources).and_then(Value::as_object_mut) else {
        return;
    };
    set_if_absent(resources, "matchPolicy", "Equivalent".into());
    set_if_absent(resources, "namespaceSelector", Value::Object(Map::new()));
    set_if_absent(resources, "objectSelector", Value::Object(Map::new()));
    for rules in ["resourceRules", "excludeResourceRules"] {
        if let Some(rules) = resources.get_mut(rules).and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                set_if_absent(rule, "scope", "*".into());
            }
        }
    }
}

/// `validateParamKind`.
fn param_kind(kind: &Value, out: &mut Vec<Cause>) {
    let at = "spec.paramKind.apiVersion";
    match str_at(kind, "apiVersion").unwrap_or("") {
        "" => out.push(Cause::required(at)),
        api_version => {
            let (group, version) = match api_version.matches('/').count() {
                0 => ("", api_version),
                1 => api_version.split_once('/').unwrap_or(("", api_version)),
                _ => {
                    out.push(invalid(
                        at,
                        &quote(api_version),
                        &format!("unexpected GroupVersion string: {api_version}"),
                    ));
                    ("", "")
                }
            };
            if api_version.matches('/').count() <= 1 {
                if !group.is_empty() {
                    let errs = names::is_dns1123_subdomain(group);
                    if !errs.is_empty() {
                        out.push(invalid(at, &quote(group), &errs.join(",")));
                    }
                }
                if version.is_empty() {
                    out.push(invalid(
                        at,
                        &quote(api_version),
                        "version must be specified",
                    ));
                } else {
                    let errs = names::is_dns1035_label(version);
                    if !errs.is_empty() {
                        out.push(invalid(at, &quote(version), &errs.join(",")));
                    }
                }
            }
        }
    }
    match str_at(kind, "kind").unwrap_or("") {
        "" => out.push(Cause::required("spec.paramKind.kind")),
        k => {
            let errs = names::is_dns1035_label(&k.to_lowercase());
            if !errs.is_empty() {
                out.push(invalid(
                    "spec.paramKind.kind",
                    &quote(k),
                    &format!(
                        "may have mixed case, but should otherwise match: {}",
                        errs.join(",")
                    ),
                ));
            }
        }
    }
}

/// `validateMatchResources`: the policy's `matchConstraints` or a
/// binding's `matchResources` at `path`.
fn match_resources(resources: &Value, path: &str, out: &mut Vec<Cause>) {
    match str_at(resources, "matchPolicy") {
        None => out.push(Cause::required(format!("{path}.matchPolicy"))),
        Some(_) => one_of(resources, "matchPolicy", MATCH_POLICIES, path, out),
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        match resources.get(selector).filter(|s| !s.is_null()) {
            None => out.push(Cause::required(format!("{path}.{selector}"))),
            // Strictly: these types came after kube's issue #99139.
            Some(s) => label_selector(s, false, &format!("{path}.{selector}"), out),
        }
    }
    for rules in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in array(resources.get(rules)).iter().enumerate() {
            let at = format!("{path}.{rules}[{i}]");
            let mut seen = HashSet::new();
            for (j, name) in strings(rule.get("resourceNames")).iter().enumerate() {
                let name_at = format!("{at}.resourceNames[{j}]");
                for msg in names::validate_path_segment_name(name, false) {
                    out.push(invalid(&name_at, &quote(name), &msg));
                }
                if !seen.insert(*name) {
                    out.push(duplicate(&name_at, name));
                }
            }
            rule_with_operations(rule, &at, out);
        }
    }
}

/// An expression that must parse: the `compilation failed` cause if not.
fn expression(text: &str, path: &str, out: &mut Vec<Cause>) {
    if let Err(e) = parse_unbound(text) {
        out.push(invalid(
            path,
            &quote(text),
            &format!("compilation failed: {e}"),
        ));
    }
}

/// `validateVariable`.
fn variable_checks(variable: &Value, path: &str, out: &mut Vec<Cause>) {
    let name = str_at(variable, "name").unwrap_or("");
    if name.trim().is_empty() {
        out.push(required(format!("{path}.name"), "name is not specified"));
    } else if !is_cel_identifier(name) {
        out.push(invalid(
            format!("{path}.name"),
            &quote(name),
            "name is not a valid CEL identifier",
        ));
    }
    required_expression(variable, path, out);
}

/// `{path}.expression`: required, and a CEL expression.
fn required_expression(item: &Value, path: &str, out: &mut Vec<Cause>) {
    let text = str_at(item, "expression").unwrap_or("");
    if text.trim().is_empty() {
        out.push(required(
            format!("{path}.expression"),
            "expression is not specified",
        ));
    } else {
        expression(text, &format!("{path}.expression"), out);
    }
}

/// `validateValidation`.
fn validation(v: &Value, path: &str, out: &mut Vec<Cause>) {
    required_expression(v, path, out);
    let message_expression = str_at(v, "messageExpression").unwrap_or("");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        out.push(invalid(
            format!("{path}.messageExpression"),
            &quote(message_expression),
            "must be non-empty if specified",
        ));
    } else if !message_expression.trim().is_empty() {
        expression(
            message_expression,
            &format!("{path}.messageExpression"),
            out,
        );
    }
    let message = str_at(v, "message").unwrap_or("");
    if !message.is_empty() && message.trim().is_empty() {
        out.push(invalid(
            format!("{path}.message"),
            &quote(message),
            "message must be non-empty if specified",
        ));
    } else if message.trim().contains(['\n', '\r']) {
        out.push(invalid(
            format!("{path}.message"),
            &quote(message),
            "message must not contain line breaks",
        ));
    }
    if let Some(reason) = str_at(v, "reason") {
        if !REASONS.contains(&reason) {
            out.push(not_supported(format!("{path}.reason"), reason, REASONS));
        }
    }
}

/// `validateAuditAnnotation`; `policy` is the policy's name.
fn audit_annotation(annotation: &Value, policy: &str, path: &str, out: &mut Vec<Cause>) {
    let key = str_at(annotation, "key").unwrap_or("");
    if policy.is_empty() {
        out.push(invalid(
            format!("{path}.key"),
            &quote(key),
            "requires metadata.name be non-empty",
        ));
    } else {
        let qualified = format!("{policy}/{key}");
        for msg in names::is_qualified_name(&qualified) {
            out.push(invalid(format!("{path}.key"), &quote(&qualified), &msg));
        }
    }
    let text = str_at(annotation, "valueExpression").unwrap_or("");
    let at = format!("{path}.valueExpression");
    if text.trim().is_empty() {
        out.push(required(at, "valueExpression is not specified"));
    } else if text.trim().len() > MAX_VALUE_EXPRESSION {
        out.push(required(
            at,
            &format!("must not exceed {MAX_VALUE_EXPRESSION} bytes in length"),
        ));
    } else {
        expression(text.trim(), &at, out);
    }
}

/// `validateParamRef`.
fn param_ref_checks(param_ref: &Value, out: &mut Vec<Cause>) {
    let name = str_at(param_ref, "name").unwrap_or("");
    let selector = param_ref.get("selector").filter(|s| !s.is_null());
    let exclusive = "name and selector are mutually exclusive";
    if !name.is_empty() {
        for msg in names::validate_path_segment_name(name, false) {
            out.push(invalid("spec.paramRef.name", &quote(name), &msg));
        }
        if selector.is_some() {
            out.push(Cause::forbidden("spec.paramRef.name", exclusive));
        }
    }
    if let Some(selector) = selector {
        label_selector(selector, false, "spec.paramRef.selector", out);
        if !name.is_empty() {
            out.push(Cause::forbidden("spec.paramRef.selector", exclusive));
        }
    }
    if name.is_empty() && selector.is_none() {
        out.push(required(
            "spec.paramRef",
            "one of name or selector must be specified",
        ));
    }
    match str_at(param_ref, "parameterNotFoundAction").unwrap_or("") {
        "" => out.push(Cause::required("spec.paramRef.parameterNotFoundAction")),
        a if !NOT_FOUND_ACTIONS.contains(&a) => out.push(not_supported(
            "spec.paramRef.parameterNotFoundAction",
            a,
            NOT_FOUND_ACTIONS,
        )),
        _ => {}
    }
}

/// `validateValidationActions`.
fn validation_actions(actions: Option<&Value>, out: &mut Vec<Cause>) {
    let path = "spec.validationActions";
    let actions = strings(actions);
    let mut seen = HashSet::new();
    for (i, action) in actions.iter().enumerate() {
        if !ACTIONS.contains(action) {
            out.push(not_supported(format!("{path}[{i}]"), action, ACTIONS));
        }
        if !seen.insert(*action) {
            out.push(duplicate(format!("{path}[{i}]"), action));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        out.push(invalid(
            path,
            &go_slice("admissionregistration.ValidationAction", &actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        out.push(required(path, "at least one validation action is required"));
    }
}

/// CEL's `IDENT`: `[_a-zA-Z][_a-zA-Z0-9]*`, not a reserved word.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !CEL_RESERVED_WORDS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cel_identifiers() {
        assert!(is_cel_identifier("_a1"));
        assert!(!is_cel_identifier("1a"));
        assert!(!is_cel_identifier("a-b"));
        assert!(!is_cel_identifier("namespace"));
        assert!(!is_cel_identifier(""));
    }

    #[test]
    fn defaults_fill_the_match_resources_of_both_kinds() {
        let mut policy = json!({"spec": {"matchConstraints": {"resourceRules": [{}]}}});
        default(&mut policy, false);
        assert_eq!(
            policy["spec"],
            json!({"failurePolicy": "Fail", "matchConstraints": {"matchPolicy": "Equivalent",
                "namespaceSelector": {}, "objectSelector": {}, "resourceRules": [{"scope": "*"}]}})
        );
        let mut binding = json!({"spec": {"policyName": "p"}});
        default(&mut binding, true);
        assert_eq!(binding["spec"], json!({"policyName": "p"}));
    }
}
