//! A webhook's `matchConditions` (admissionregistration v1): CEL
//! expressions over `object`, `oldObject` and `request`, all true to call
//! the webhook. As kube-apiserver's `matchconditions` matcher decides: a
//! false condition skips the webhook whatever the others gave; otherwise
//! an evaluation error skips it under `failurePolicy: Ignore` and refuses
//! the request (403 Forbidden) under `Fail`.
//! The checks a configuration write makes of them
//! (`ValidateMatchConditions`) are the registry's
//! ([`crate::registry::admissionregistration::match_conditions`]).
//! `authorizer` and `authorizer.requestResource` ask the server's
//! authorizer about the requesting user ([`crate::apiextensions::authz`]); all of
//! one webhook's conditions share one runtime cost budget
//! (`RuntimeCELCostBudgetMatchConditions`), whose exhaustion is an
//! evaluation error like any other.

use std::sync::Arc;

use serde_json::Value;

use crate::apiextensions::authz::Session;
use crate::apiextensions::{evaluate_conditions, parse_unbound};

/// What a webhook's conditions decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    Call,
    Skip,
    /// The conditions could not be evaluated, under `Fail`: the request is
    /// refused with this error text.
    Refuse(String),
}

/// Evaluates `conditions` (the webhook's `matchConditions`) for a request,
/// with `authorizer` bound when given.
pub(crate) fn decide(
    conditions: &[Value],
    ignore_failures: bool,
    request: &Value,
    object: Option<&Value>,
    old: Option<&Value>,
    authorizer: Option<&Arc<Session>>,
) -> Decision {
    let null = Value::Null;
    let inputs = [
        ("object", object.unwrap_or(&null)),
        ("oldObject", old.unwrap_or(&null)),
        ("request", request),
    ];
    decide_with(conditions, ignore_failures, &inputs, authorizer)
}

/// [`decide`] over the variables given: a ValidatingAdmissionPolicy's
/// conditions see its `params` too.
pub(crate) fn decide_with(
    conditions: &[Value],
    ignore_failures: bool,
    inputs: &[(&str, &Value)],
    authorizer: Option<&Arc<Session>>,
) -> Decision {
    let expressions: Vec<&str> = conditions
        .iter()
        .map(|c| c.get("expression").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let parsed: Vec<_> = expressions
        .iter()
        .map(|e| parse_unbound(e).map_err(|e| format!("compilation failed: {e}")))
        .collect();
    let programs: Vec<_> = parsed.iter().map(|p| p.as_ref().ok()).collect();
    // All are evaluated before any is judged, as kube-apiserver's filter
    // does: the budget running out fails them all.
    let results = match evaluate_conditions(&programs, inputs, authorizer) {
        Ok(results) => results,
        Err(e) if ignore_failures => {
            tracing::debug!(error = %e, "match conditions failed, ignored");
            return Decision::Skip;
        }
        Err(e) => return Decision::Refuse(e),
    };
    let mut errors = Vec::new();
    for ((expression, parsed), result) in expressions.iter().zip(&parsed).zip(results) {
        let outcome = match (parsed, result) {
            (Err(e), _) => Err(e.clone()),
            (Ok(_), Some(r)) => r,
            (Ok(_), None) => Err("the expression was not evaluated".to_owned()),
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiextensions::authz::{Check, Principal, Verdict};
    use crate::registry::admissionregistration::match_conditions::validate;
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
            decide(
                &conditions(exprs),
                ignore,
                &request,
                Some(&object),
                None,
                None,
            )
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

    /// A principal allowed exactly `allowed` (verb, resource, subresource),
    /// which records what it was asked.
    struct Fake {
        user: String,
        allowed: Vec<(&'static str, &'static str, &'static str)>,
        asked: Arc<std::sync::Mutex<Vec<Check>>>,
    }

    impl Principal for Fake {
        fn authorize(&self, check: &Check) -> Verdict {
            self.asked
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(check.clone());
            let allowed = self.allowed.iter().any(|(verb, resource, sub)| {
                check.verb == *verb && check.resource == *resource && check.subresource == *sub
            });
            Verdict {
                allowed,
                reason: format!("asked about {}", self.user),
                error: (check.verb == "explode").then(|| "no authorizer".to_owned()),
            }
        }

        fn service_account(&self, namespace: &str, name: &str) -> Arc<dyn Principal> {
            Arc::new(Fake {
                user: format!("system:serviceaccount:{namespace}:{name}"),
                allowed: Vec::new(),
                asked: self.asked.clone(),
            })
        }
    }

    fn session(allowed: Vec<(&'static str, &'static str, &'static str)>) -> Arc<Session> {
        let fake = Fake {
            user: "alice".into(),
            allowed,
            asked: Arc::default(),
        };
        let request = Check {
            resource_request: true,
            group: "apps".into(),
            resource: "deployments".into(),
            subresource: "scale".into(),
            namespace: "ns".into(),
            name: "web".into(),
            ..Check::default()
        };
        Session::new(Arc::new(fake), request)
    }

    fn decide_as(session: &Arc<Session>, exprs: &[&str], ignore: bool) -> Decision {
        let request = json!({"operation": "CREATE"});
        decide(
            &conditions(exprs),
            ignore,
            &request,
            Some(&json!({})),
            None,
            Some(session),
        )
    }

    #[test]
    fn the_authorizer_asks_about_the_requesting_user() {
        let may_create = session(vec![("create", "pods", "")]);
        let may_not = session(vec![("get", "pods", "")]);
        let condition = "authorizer.group('').resource('pods').check('create').allowed()";
        assert_eq!(decide_as(&may_create, &[condition], false), Decision::Call);
        assert_eq!(decide_as(&may_not, &[condition], false), Decision::Skip);
        // The request's own resource, and the decision's accessors.
        let own = session(vec![("update", "deployments", "scale")]);
        for (expr, want) in [
            ("authorizer.requestResource.check('update').allowed()", Decision::Call),
            ("authorizer.requestResource.check('delete').allowed()", Decision::Skip),
            (
                "authorizer.requestResource.subresource('').check('update').allowed()",
                Decision::Skip,
            ),
            (
                "authorizer.path('/healthz').check('get').reason() == 'asked about alice'",
                Decision::Call,
            ),
            (
                "authorizer.serviceAccount('kube-system', 'robot').group('').resource('pods').check('list').reason() == 'asked about system:serviceaccount:kube-system:robot'",
                Decision::Call,
            ),
            (
                "authorizer.group('').resource('pods').check('explode').errored() && authorizer.group('').resource('pods').check('explode').error() == 'no authorizer'",
                Decision::Call,
            ),
            (
                "!authorizer.group('').resource('pods').check('get').errored() && authorizer.group('').resource('pods').check('get').error() == ''",
                Decision::Call,
            ),
        ] {
            assert_eq!(decide_as(&own, &[expr], false), want, "{expr}");
        }
    }

    #[test]
    fn checks_carry_what_the_expression_built() {
        let asked: Arc<std::sync::Mutex<Vec<Check>>> = Arc::default();
        let fake = Fake {
            user: "alice".into(),
            allowed: Vec::new(),
            asked: asked.clone(),
        };
        let request = Check {
            resource_request: true,
            group: "apps".into(),
            resource: "deployments".into(),
            namespace: "ns".into(),
            name: "web".into(),
            ..Check::default()
        };
        let s = Session::new(Arc::new(fake), request);
        decide_as(
            &s,
            &[
                "authorizer.group('example.com').resource('widgets').subresource('status').namespace('team').name('w1').labelSelector('a=b').check('patch').allowed() || true",
                "authorizer.requestResource.check('delete').allowed() || true",
                "authorizer.path('/metrics').check('get').allowed() || true",
            ],
            false,
        );
        let asked = asked.lock().unwrap_or_else(|e| e.into_inner()).clone();
        assert_eq!(
            asked,
            vec![
                Check {
                    verb: "patch".into(),
                    resource_request: true,
                    group: "example.com".into(),
                    resource: "widgets".into(),
                    subresource: "status".into(),
                    namespace: "team".into(),
                    name: "w1".into(),
                    label_selector: "a=b".into(),
                    ..Check::default()
                },
                Check {
                    verb: "delete".into(),
                    resource_request: true,
                    group: "apps".into(),
                    resource: "deployments".into(),
                    namespace: "ns".into(),
                    name: "web".into(),
                    ..Check::default()
                },
                Check {
                    verb: "get".into(),
                    path: "/metrics".into(),
                    ..Check::default()
                },
            ]
        );
    }

    #[test]
    fn the_library_refuses_what_kube_refuses() {
        let s = session(Vec::new());
        for (expr, error) in [
            ("authorizer.path(' ').check('get').allowed()", "path must not be empty"),
            (
                "authorizer.group('').resource('').check('get').allowed()",
                "resource must not be empty",
            ),
            (
                "authorizer.serviceAccount('ns', 'Not_Valid').group('').resource('pods').check('get').allowed()",
                "Invalid service account name",
            ),
            (
                "authorizer.serviceAccount('not.a.label', 'sa').group('').resource('pods').check('get').allowed()",
                "Invalid service account namespace",
            ),
            ("{'requestResource': 1}.group('').resource('pods').check('get').allowed()", "No such overload"),
        ] {
            let Decision::Refuse(text) = decide_as(&s, &[expr], false) else {
                panic!("{expr} must fail");
            };
            assert!(text.contains(error), "{expr}: {text}");
        }
    }

    #[test]
    fn authorization_checks_are_charged_to_the_budget() {
        let s = session(vec![("get", "pods", "")]);
        let check = "authorizer.group('').resource('pods').check('get').allowed()";
        // Two checks fit one expression (350000 each, limit 1000000);
        // a third is not made.
        let two = format!("{check} && {check}");
        let three = format!("{check} && {check} && {check}");
        assert_eq!(decide_as(&s, &[&two], false), Decision::Call);
        let Decision::Refuse(text) = decide_as(&s, &[&three], false) else {
            panic!("three checks are over the per-expression limit");
        };
        assert_eq!(
            text,
            format!("expression '{three}' resulted in error: operation cancelled: actual cost limit exceeded")
        );
        assert_eq!(decide_as(&s, &[&three], true), Decision::Skip);
        // Seven checks fit the 2500000 of one webhook's conditions; the
        // eighth runs the budget out, whatever the conditions gave.
        let seven = vec![check; 7];
        assert_eq!(decide_as(&s, &seven, false), Decision::Call);
        let mut eight = vec!["false"];
        eight.extend(vec![check; 8]);
        assert_eq!(
            decide_as(&s, &eight, false),
            Decision::Refuse(
                "validation failed due to running out of cost budget, no further validation rules will be run"
                    .into()
            )
        );
        assert_eq!(decide_as(&s, &eight, true), Decision::Skip);
        // Without an authorizer the variable is not there.
        let request = json!({});
        let Decision::Refuse(text) =
            decide(&conditions(&[check]), false, &request, None, None, None)
        else {
            panic!("an unbound authorizer is an error");
        };
        assert!(text.contains("authorizer"), "{text}");
    }

    #[test]
    fn an_expression_is_costed_with_the_sizes_of_what_it_reads() {
        // `all` within `all`: about 3 per pair of items, so a hundred
        // items cost some 30000 and eleven hundred over the limit.
        let nested = "object.items.all(x, object.items.all(y, true))";
        let request = json!({"operation": "CREATE"});
        let with_items = |n: usize| json!({"items": vec![1; n]});
        let small = with_items(100);
        let large = with_items(1100);
        let run = |object: &Value, ignore: bool| {
            decide(
                &conditions(&[nested]),
                ignore,
                &request,
                Some(object),
                None,
                None,
            )
        };
        assert_eq!(run(&small, false), Decision::Call);
        assert_eq!(
            run(&large, false),
            Decision::Refuse(format!(
                "expression '{nested}' resulted in error: operation cancelled: actual cost limit exceeded"
            ))
        );
        assert_eq!(run(&large, true), Decision::Skip);
        // Three expressions each near the limit run one webhook's budget
        // (2500000) out.
        let near = with_items(560);
        let three = conditions(&[nested, nested, nested]);
        assert_eq!(
            decide(&three[..2], false, &request, Some(&near), None, None),
            Decision::Call
        );
        assert_eq!(
            decide(&three, false, &request, Some(&near), None, None),
            Decision::Refuse(
                "validation failed due to running out of cost budget, no further validation rules will be run"
                    .into()
            )
        );
        // Strings are measured too: `contains` costs a tenth of each
        // length multiplied.
        let long = json!({"s": "x".repeat(200_000), "t": "y".repeat(1_000)});
        let Decision::Refuse(text) = decide(
            &conditions(&["object.s.contains(object.t)"]),
            false,
            &request,
            Some(&long),
            None,
            None,
        ) else {
            panic!("20000 * 100 is over the limit");
        };
        assert!(text.ends_with("actual cost limit exceeded"), "{text}");
    }

    #[test]
    fn policy_variables_see_the_authorizer_and_messages_do_not() {
        use crate::apiextensions::{evaluate_policy, Checked};
        let s = session(vec![("get", "pods", "")]);
        let compile = |e: &str| parse_unbound(e).expect("parses");
        let may_get = compile("authorizer.group('').resource('pods').check('get').allowed()");
        let uses_variable = compile("!variables.mayGet");
        let from_authorizer = compile("authorizer.requestResource.check('get').reason()");
        let plain = compile("'plain message'");
        let object = json!({});
        let request = json!({});
        let inputs = [("object", &object), ("request", &request)];
        let results = evaluate_policy(
            &inputs,
            Some(&s),
            &[("mayGet", &may_get)],
            &[
                (&uses_variable, Some(&from_authorizer)),
                (&uses_variable, Some(&plain)),
            ],
        );
        assert_eq!(
            results,
            Ok(vec![
                // The messageExpression failed: no `authorizer` there.
                Checked::Failed(None),
                Checked::Failed(Some("plain message".into())),
            ])
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
