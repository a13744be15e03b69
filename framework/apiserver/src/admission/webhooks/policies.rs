//! ValidatingAdmissionPolicies evaluated in process, as kube-apiserver's
//! ValidatingAdmissionPolicy plugin (`policy/validating`, over
//! `policy/generic`) evaluates them: after mutating admission, before the
//! validating webhooks. Each policy (by name) that has a binding and whose
//! `matchConstraints` take in the request is judged once per binding
//! naming it (by name) whose `matchResources` do, and per parameter that
//! binding selects: its `matchConditions`, then its `variables` and
//! `validations` over `object`, `oldObject`, `request`, `params` and
//! `namespaceObject`.
//!
//! Versions: the policy's `matchConstraints` (not the binding) decide the
//! version a policy judges at: the request's when a rule names it, else,
//! under `matchPolicy: Equivalent`, the other served version a rule names.
//! `object` and `oldObject` are converted there (through the CRD's
//! conversion webhook when it has one; a failure is a configuration error
//! of the binding, `failed to convert object version: ...`), and
//! `request.kind`/`resource` name that version while
//! `request.requestKind`/`requestResource` name the request's.
//! `namespaceObject` is the request's Namespace as stored, trimmed to the
//! fields kube-apiserver shows; null for a cluster-scoped request and for a
//! Namespace itself.
//!
//! Parameters: the policy's `paramKind` is resolved to a served resource
//! (built-in or custom) through the registry; one that is not served is a
//! policy configuration error. The binding's `paramRef` picks one object
//! by `name` or every object its `selector` matches, in its `namespace`
//! (else the request's) for a namespaced kind; they are read from storage
//! when the request is admitted, so a parameter written just before is
//! seen, and are shown at the `paramKind`'s version (through the CRD's
//! conversion webhook when it has one). None found is a configuration
//! error under `parameterNotFoundAction: Deny` and skips the binding under
//! `Allow`. A binding without `paramRef`, and any policy without
//! `paramKind`, is evaluated once with `params` null.
//!
//! A failed validation is acted on per the binding's `validationActions`:
//! Deny refuses the request (the first denial answers, with the
//! validation's `reason`, Invalid by default), Warn adds a `Warning`,
//! Audit has no audit log to reach here. An evaluation or configuration
//! error counts as a failure under `failurePolicy: Fail` (the message
//! `failed to configure policy: ...` or `failed to configure binding:
//! ...` for the latter) and is ignored under `Ignore`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use kube_core::cel::cel::Program;
use serde_json::{Map, Value};

use super::conditions::{self, Decision};
use super::config::resources_match;
use crate::admission::attributes::{Admission, Attributes};
use crate::apiextensions::authz::Session;
use crate::apiextensions::{evaluate_policy, parse_unbound, Checked};
use crate::auth::UserInfo;
use crate::machinery::selectors::selector_matches;
use crate::machinery::status::{ApiError, Cause};
use crate::registry::state::Shared;
use crate::registry::{ResKey, ResourceDef};
use crate::storage::{Filter, StoredObject};

const GROUP: &str = "admissionregistration.k8s.io";

/// `params` when there are none.
static NULL: Value = Value::Null;

/// A failed validation to act on: its text and `reason`.
struct Failure {
    message: String,
    reason: Option<String>,
}

/// A denial, with the policy and (unless the policy itself is
/// misconfigured) the binding that gave it.
struct Denial {
    policy: String,
    binding: Option<String>,
    failure: Failure,
}

/// A policy's `paramKind` resolved: the resource serving it and the
/// version its params are shown at.
struct ParamSource {
    def: Arc<ResourceDef>,
    version: String,
}

/// What a policy's `paramKind` gave.
enum ParamKind {
    /// No `paramKind`: `params` is null.
    Absent,
    Served(ParamSource),
    /// An `apiVersion` that does not parse: kube-apiserver leaves such a
    /// policy out of its hooks (the write checks refuse it first).
    Unparsable,
    /// Not served: the configuration error's text.
    Unresolved(String),
}

/// One parameter object as a policy sees it.
enum Param {
    /// No `paramKind`, or a binding without `paramRef`.
    Null,
    /// Stored at the `paramKind`'s version: the stored object's tree.
    Stored(Arc<Value>),
    /// Converted to the `paramKind`'s version.
    Converted(Value),
}

impl Param {
    fn value(&self) -> &Value {
        match self {
            Param::Null => &NULL,
            Param::Stored(tree) => tree,
            Param::Converted(value) => value,
        }
    }
}

/// The request as the policies matched at one version judge it.
struct Versioned<'v> {
    object: Option<Cow<'v, Value>>,
    old: Option<Cow<'v, Value>>,
    /// The `request` variable: `kind` and `resource` at this version,
    /// `requestKind` and `requestResource` at the request's. Like
    /// kube-apiserver's `CreateAdmissionRequest`, without the objects
    /// (`object` and `oldObject` are variables of their own).
    request: Value,
}

impl<'v> Versioned<'v> {
    /// The old object converted first, as `NewVersionedAttributes` does.
    fn at(
        admission: &dyn Admission,
        attrs: &Attributes<'_>,
        object: Option<&'v Value>,
        old: Option<&'v Value>,
        version: &str,
        user: Option<&UserInfo>,
    ) -> Result<Self, ApiError> {
        let old = super::versioned::at(admission, attrs, old, version)?;
        let object = super::versioned::at(admission, attrs, object, version)?;
        let (_, mut review) = super::review::request(attrs, version, None, None, user);
        let request = review
            .get_mut("request")
            .map(Value::take)
            .unwrap_or_default();
        Ok(Self {
            object,
            old,
            request,
        })
    }
}

/// The `namespaceObject` variable: the request's Namespace with the fields
/// kube-apiserver's `CreateNamespaceObject` keeps; null for a cluster-scoped
/// request and for a request on a Namespace itself (whose namespace is its
/// own name). A namespace that does not exist fails the request with its
/// NotFound, as the namespace lister's answer does there.
fn namespace_object(shared: &Shared, attrs: &Attributes<'_>) -> Result<Value, ApiError> {
    let def = attrs.def;
    let itself = def.is(crate::registry::BuiltinKind::Namespace);
    if itself || attrs.namespace.is_empty() {
        return Ok(Value::Null);
    }
    let stored = shared.storage.lock().get(
        &ResKey::new("", "namespaces"),
        &(String::new(), attrs.namespace.to_owned()),
    );
    let Some(stored) = stored else {
        return Err(ApiError::not_found("namespaces", "", attrs.namespace));
    };
    let namespace = stored.value();
    let mut kept = Map::new();
    for field in ["spec", "status"] {
        if let Some(v) = namespace.get(field) {
            kept.insert(field.to_owned(), v.clone());
        }
    }
    if let Some(meta) = namespace.get("metadata").and_then(Value::as_object) {
        let meta: Map<String, Value> = NAMESPACE_METADATA
            .iter()
            .filter_map(|f| meta.get(*f).map(|v| ((*f).to_owned(), v.clone())))
            .collect();
        kept.insert("metadata".to_owned(), Value::Object(meta));
    }
    Ok(Value::Object(kept))
}

/// The metadata of a Namespace that policies see (no managed fields, no
/// owner references).
const NAMESPACE_METADATA: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "finalizers",
];

/// Judges a request by every policy bound to it: the warnings to add, and
/// the denial if any. `admission` converts parameters of a CRD whose
/// conversion takes its webhook; `user` made the request (none: a server
/// without authentication).
pub(crate) fn admit(
    shared: &Shared,
    admission: &dyn Admission,
    attrs: &Attributes<'_>,
    object: Option<&Value>,
    old: Option<&Value>,
    user: Option<&UserInfo>,
    authorizer: &Arc<Session>,
) -> (Vec<String>, Result<(), ApiError>) {
    let bindings = stored(shared, "validatingadmissionpolicybindings");
    if bindings.is_empty() {
        return (Vec::new(), Ok(()));
    }
    let policies = stored(shared, "validatingadmissionpolicies");
    // The request's objects at each version a policy matched, converted
    // once (kube-apiserver keeps only the conversions that succeeded).
    let mut versions: HashMap<String, Versioned> = HashMap::new();
    let mut namespace: Option<Value> = None;
    let mut warnings = Vec::new();
    let mut denials = Vec::new();
    for policy in policies.iter().map(|p| p.value()) {
        let spec = policy.get("spec").unwrap_or(&NULL);
        let policy_name = name_of(&policy);
        let bound: Vec<Arc<Value>> = bindings
            .iter()
            .map(|b| b.value())
            .filter(|b| b.pointer("/spec/policyName").and_then(Value::as_str) == Some(policy_name))
            .collect();
        // kube-apiserver builds a hook only for a policy with bindings.
        if bound.is_empty() {
            continue;
        }
        // The policy's own match decides the version it judges at; a
        // binding's only whether it applies.
        let constraints = spec.get("matchConstraints").unwrap_or(&NULL);
        let Some(version) = resources_match(constraints, shared, attrs, object, old) else {
            continue;
        };
        let ignore_failures = spec.get("failurePolicy").and_then(Value::as_str) == Some("Ignore");
        let configuration_error = |binding: Option<&Value>, why: &str| Denial {
            policy: policy_name.to_owned(),
            binding: binding.map(|b| name_of(b).to_owned()),
            failure: Failure {
                message: match binding {
                    None => format!("failed to configure policy: {why}"),
                    Some(_) => format!("failed to configure binding: {why}"),
                },
                reason: None,
            },
        };
        let source = match param_kind(shared, spec) {
            ParamKind::Absent => None,
            ParamKind::Served(source) => Some(source),
            ParamKind::Unparsable => continue,
            ParamKind::Unresolved(why) => {
                // Whatever the bindings: the policy itself is misconfigured.
                if !ignore_failures {
                    denials.push(configuration_error(None, &why));
                }
                continue;
            }
        };
        let mut compiled = None;
        for binding in bound.iter().map(|b| &**b) {
            if let Some(resources) = binding
                .pointer("/spec/matchResources")
                .filter(|r| !r.is_null())
            {
                if resources_match(resources, shared, attrs, object, old).is_none() {
                    continue;
                }
            }
            let param_ref = binding.pointer("/spec/paramRef").filter(|r| !r.is_null());
            let params = match collect_params(shared, admission, source.as_ref(), param_ref, attrs)
            {
                Ok(params) => params,
                Err(why) => {
                    if !ignore_failures {
                        denials.push(configuration_error(Some(binding), &why));
                    }
                    continue;
                }
            };
            if !params.is_empty() && !versions.contains_key(&version) {
                match Versioned::at(admission, attrs, object, old, &version, user) {
                    Ok(seen) => {
                        versions.insert(version.clone(), seen);
                    }
                    Err(e) => {
                        if !ignore_failures {
                            let why = format!("failed to convert object version: {}", e.message);
                            denials.push(configuration_error(Some(binding), &why));
                        }
                        continue;
                    }
                }
            }
            // Read once a binding applies, params or not, as kube-apiserver
            // reads it; its absence fails the request whatever the policy.
            let namespace = match &namespace {
                Some(ns) => ns,
                None => match namespace_object(shared, attrs) {
                    Ok(ns) => namespace.insert(ns),
                    Err(e) => return (warnings, Err(e)),
                },
            };
            let Some(seen) = versions.get(&version).filter(|_| !params.is_empty()) else {
                continue;
            };
            let compiled = compiled.get_or_insert_with(|| compile(spec));
            let actions: Vec<&str> = binding
                .pointer("/spec/validationActions")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for param in &params {
                let inputs = [
                    ("object", seen.object.as_deref().unwrap_or(&NULL)),
                    ("oldObject", seen.old.as_deref().unwrap_or(&NULL)),
                    ("request", &seen.request),
                    ("params", param.value()),
                    ("namespaceObject", namespace),
                ];
                for failure in judge(spec, compiled, &inputs, Some(authorizer)) {
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
                            binding: Some(name_of(binding).to_owned()),
                            failure,
                        });
                    }
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

/// Resolves a policy's `paramKind` as kube-apiserver's policy source does
/// (`schema.ParseGroupVersion`, then the REST mapper: the kind served at
/// that group and version).
fn param_kind(shared: &Shared, spec: &Value) -> ParamKind {
    let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) else {
        return ParamKind::Absent;
    };
    let field = |f: &str| kind.get(f).and_then(Value::as_str).unwrap_or("");
    let api_version = field("apiVersion");
    let (group, version) = match api_version.split_once('/') {
        None => ("", api_version),
        Some((_, version)) if version.contains('/') => return ParamKind::Unparsable,
        Some(split) => split,
    };
    let kind = field("kind");
    match shared.registry().by_kind(group, version, kind) {
        Some(def) => ParamKind::Served(ParamSource {
            def,
            version: version.to_owned(),
        }),
        // `schema.GroupVersionKind`'s `String()`.
        None => ParamKind::Unresolved(format!(
            "failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind}'"
        )),
    }
}

/// The params one binding evaluates its policy with, as kube-apiserver's
/// `CollectParams` finds them; an error is a binding configuration error.
/// Empty: none found under `parameterNotFoundAction: Allow`, nothing to
/// evaluate.
fn collect_params(
    shared: &Shared,
    admission: &dyn Admission,
    source: Option<&ParamSource>,
    param_ref: Option<&Value>,
    attrs: &Attributes<'_>,
) -> Result<Vec<Param>, String> {
    // Without a paramKind a paramRef is ignored; without a paramRef the
    // policy is evaluated with null params.
    let (Some(source), Some(param_ref)) = (source, param_ref) else {
        return Ok(vec![Param::Null]);
    };
    let field = |f: &str| param_ref.get(f).and_then(Value::as_str).unwrap_or("");
    let namespace = match (source.def.namespaced, field("namespace")) {
        (true, "") if attrs.namespace.is_empty() => {
            return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
        }
        (true, "") => Some(attrs.namespace),
        (true, given) => Some(given),
        (false, "") => None,
        (false, _) => {
            return Err(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
            )
        }
    };
    let key = source.def.key();
    let selector = param_ref.get("selector").filter(|s| !s.is_null());
    // Read under the lock, converted after it: a conversion may call out.
    let found: Vec<Arc<StoredObject>> = match (field("name"), selector) {
        ("", None) => return Err("one of name or selector must be provided".into()),
        (_, Some(_)) if !field("name").is_empty() => {
            return Err("paramRef.name and paramRef.selector are mutually exclusive".into());
        }
        (name, None) => {
            let at = (namespace.unwrap_or("").to_owned(), name.to_owned());
            shared.storage.lock().get(&key, &at).into_iter().collect()
        }
        (_, Some(selector)) => {
            let filter = Filter {
                namespace: namespace.map(str::to_owned),
                ..Filter::default()
            };
            let page = shared.storage.lock().list(&key, &filter, None, None, None);
            page.map(|p| p.items)
                .unwrap_or_default()
                .into_iter()
                .filter(|obj| {
                    let labels = obj.labels().map(Value::Object);
                    selector_matches(selector, labels.as_ref())
                })
                .collect()
        }
    };
    if found.is_empty() && field("parameterNotFoundAction") == "Deny" {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    found
        .into_iter()
        .map(|obj| at_version(admission, source, obj))
        .collect()
}

/// A stored parameter at its `paramKind`'s version, as the param informer
/// (which lists at that version) holds it.
fn at_version(
    admission: &dyn Admission,
    source: &ParamSource,
    obj: Arc<StoredObject>,
) -> Result<Param, String> {
    let def = &source.def;
    let api_version = def.api_version(&source.version);
    if def.conversion().is_none() && obj.api_version() == Some(api_version.as_str()) {
        return Ok(Param::Stored(obj.value()));
    }
    let value = obj.to_value();
    let value = def.view(&value).unwrap_or(value);
    admission
        .convert(def, value, &api_version)
        .map(Param::Converted)
        .map_err(|e| e.message)
}

/// The failures one policy's evaluation with one param gave a request:
/// `inputs` binds `object`, `oldObject`, `request`, `params` and
/// `namespaceObject`.
fn judge(
    spec: &Value,
    compiled: &Result<Compiled, String>,
    inputs: &[(&str, &Value)],
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
    let conditions_given = array(spec.get("matchConditions"));
    match conditions::decide_with(conditions_given, ignore_failures, inputs, authorizer) {
        Decision::Call => {}
        Decision::Skip => return Vec::new(),
        Decision::Refuse(text) => return error(text),
    }
    let compiled = match compiled {
        Ok(c) => c,
        Err(e) => return error(e.clone()),
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
    let results = match evaluate_policy(inputs, authorizer, &variables, &validations) {
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
    let message = match &denial.binding {
        Some(binding) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{binding}' denied request: {}",
            denial.policy, denial.failure.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            denial.policy, denial.failure.message
        ),
    };
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
        failures_with(spec, object, &Value::Null)
    }

    fn failures_with(spec: Value, object: Value, params: &Value) -> Vec<(String, Option<String>)> {
        let request = json!({"operation": "CREATE"});
        let inputs = [
            ("object", &object),
            ("oldObject", &NULL),
            ("request", &request),
            ("params", params),
            ("namespaceObject", &NULL),
        ];
        judge(&spec, &compile(&spec), &inputs, None)
            .into_iter()
            .map(|f| (f.message, f.reason))
            .collect()
    }

    #[test]
    fn params_reach_conditions_variables_validations_and_messages() {
        let spec = json!({
            "matchConditions": [{"name": "enforced", "expression": "params.data.enforce == 'yes'"}],
            "variables": [{"name": "limit", "expression": "int(params.data.limit)"}],
            "validations": [{
                "expression": "size(object.data) <= variables.limit",
                "messageExpression": "'at most ' + params.data.limit + ' keys, per ' + params.metadata.name",
            }],
        });
        let object = json!({"metadata": {"name": "x"}, "data": {"a": "1", "b": "2"}});
        let params = |enforce: &str, limit: &str| json!({"metadata": {"name": "limits"}, "data": {"enforce": enforce, "limit": limit}});
        assert_eq!(
            failures_with(spec.clone(), object.clone(), &params("yes", "1")),
            vec![("at most 1 keys, per limits".to_owned(), None)]
        );
        assert!(failures_with(spec.clone(), object.clone(), &params("yes", "2")).is_empty());
        // The condition, over params, leaves the request alone.
        assert!(failures_with(spec, object.clone(), &params("no", "1")).is_empty());
        // A binding without paramRef: `params` is null.
        let null_check =
            json!({"validations": [{"expression": "params == null", "message": "params set"}]});
        assert!(failures_with(null_check.clone(), object.clone(), &Value::Null).is_empty());
        assert_eq!(
            failures_with(null_check, object, &params("yes", "1")),
            vec![("params set".to_owned(), None)]
        );
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
