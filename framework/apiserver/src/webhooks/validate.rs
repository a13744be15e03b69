//! The checks a write of a Mutating/ValidatingWebhookConfiguration makes
//! (`admissionregistration.k8s.io/v1`), as kube-apiserver's
//! `pkg/apis/admissionregistration/validation` makes them, with its field
//! paths and messages: webhook names (fully qualified, unique), rules,
//! failure, match, reinvocation policies and side effects, the timeout,
//! the AdmissionReview versions, the selectors, the client config (`url`
//! through `ValidateWebhookURL`, `service` through
//! `ValidateWebhookService`) and the match conditions
//! ([`super::conditions::validate`]). An update is held to the rules the
//! stored object already met, as `Validate*WebhookConfigurationUpdate`
//! relaxes them.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::schema::names;
use crate::status::Cause;

pub(super) const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
pub(super) const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
const NO_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
/// `AcceptedAdmissionReviewVersions`.
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const URL_FORM: &str = "; desired format: https://host[/path]";

/// Which rules apply: all of them on create; on update, a rule the stored
/// object already broke is not enforced (`validationOptions`).
struct Options {
    check_match_conditions: bool,
    require_no_side_effects: bool,
    require_known_review_version: bool,
    require_unique_names: bool,
    allow_invalid_label_values: bool,
}

impl Options {
    fn for_write(webhooks: &[Value], old: Option<&Value>) -> Self {
        let Some(old) = old else {
            return Options {
                check_match_conditions: true,
                require_no_side_effects: true,
                require_known_review_version: true,
                require_unique_names: true,
                allow_invalid_label_values: false,
            };
        };
        let before = webhooks_of(old);
        let unchanged_conditions = webhooks.len() == before.len()
            && webhooks
                .iter()
                .zip(before)
                .all(|(a, b)| a.get("matchConditions") == b.get("matchConditions"));
        let mut names = HashSet::new();
        Options {
            check_match_conditions: !unchanged_conditions,
            require_no_side_effects: before
                .iter()
                .all(|w| str_at(w, "sideEffects").is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))),
            require_known_review_version: before.iter().all(|w| {
                let versions = strings(w.get("admissionReviewVersions"));
                versions.is_empty() || versions.iter().any(|v| REVIEW_VERSIONS.contains(v))
            }),
            require_unique_names: before
                .iter()
                .all(|w| names.insert(str_at(w, "name").unwrap_or(""))),
            allow_invalid_label_values: before.iter().any(|w| {
                ["namespaceSelector", "objectSelector"].iter().any(|s| {
                    w.get(*s).is_some_and(|sel| {
                        let mut causes = Vec::new();
                        label_selector(sel, false, "", &mut causes);
                        !causes.is_empty()
                    })
                })
            }),
        }
    }
}

/// The field errors of a configuration write; `old` is the stored object
/// on an update.
pub(crate) fn validate(mutating: bool, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let webhooks = webhooks_of(obj);
    let opts = Options::for_write(webhooks, old);
    let mut causes = Vec::new();
    let mut names = HashSet::new();
    for (i, hook) in webhooks.iter().enumerate() {
        let path = format!("webhooks[{i}]");
        webhook(hook, mutating, &opts, &path, &mut causes);
        review_versions(
            hook.get("admissionReviewVersions"),
            opts.require_known_review_version,
            &format!("{path}.admissionReviewVersions"),
            &mut causes,
        );
        let name = str_at(hook, "name").unwrap_or("");
        if opts.require_unique_names && !name.is_empty() && !names.insert(name) {
            causes.push(duplicate(format!("{path}.name"), name));
        }
    }
    causes
}

/// `validateValidatingWebhook` / `validateMutatingWebhook`.
fn webhook(hook: &Value, mutating: bool, opts: &Options, path: &str, out: &mut Vec<Cause>) {
    fully_qualified_name(
        str_at(hook, "name").unwrap_or(""),
        &format!("{path}.name"),
        out,
    );
    for (i, rule) in array(hook.get("rules")).iter().enumerate() {
        rule_with_operations(rule, &format!("{path}.rules[{i}]"), out);
    }
    one_of(hook, "failurePolicy", FAILURE_POLICIES, path, out);
    one_of(hook, "matchPolicy", MATCH_POLICIES, path, out);
    let allowed = if opts.require_no_side_effects {
        NO_SIDE_EFFECTS
    } else {
        SIDE_EFFECTS
    };
    match str_at(hook, "sideEffects") {
        None => out.push(required(
            format!("{path}.sideEffects"),
            &format!("must specify one of {}", allowed.join(", ")),
        )),
        Some(s) if !allowed.contains(&s) => {
            out.push(not_supported(format!("{path}.sideEffects"), s, allowed));
        }
        Some(_) => {}
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64) {
        if !(1..=30).contains(&t) {
            out.push(invalid(
                format!("{path}.timeoutSeconds"),
                &t.to_string(),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        if let Some(s) = hook.get(selector).filter(|s| !s.is_null()) {
            label_selector(
                s,
                opts.allow_invalid_label_values,
                &format!("{path}.{selector}"),
                out,
            );
        }
    }
    if mutating {
        one_of(hook, "reinvocationPolicy", REINVOCATION_POLICIES, path, out);
    }
    client_config(
        hook.get("clientConfig"),
        &format!("{path}.clientConfig"),
        out,
    );
    if opts.check_match_conditions {
        out.extend(super::conditions::validate(
            hook.get("matchConditions"),
            &format!("{path}.matchConditions"),
        ));
    }
}

/// An optional enum field: absent, or one of `supported`.
pub(super) fn one_of(
    hook: &Value,
    field: &str,
    supported: &[&str],
    path: &str,
    out: &mut Vec<Cause>,
) {
    if let Some(v) = str_at(hook, field) {
        if !supported.contains(&v) {
            out.push(not_supported(format!("{path}.{field}"), v, supported));
        }
    }
}

/// `utilvalidation.IsFullyQualifiedName`.
fn fully_qualified_name(name: &str, path: &str, out: &mut Vec<Cause>) {
    if name.is_empty() {
        out.push(Cause::required(path));
        return;
    }
    let errs = names::is_dns1123_subdomain(name);
    if !errs.is_empty() {
        out.push(invalid(path, &quote(name), &errs.join(",")));
    } else if name.split('.').count() < 3 {
        out.push(invalid(
            path,
            &quote(name),
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

/// `validateRuleWithOperations` and `validateRule` (subresources allowed).
pub(super) fn rule_with_operations(rule: &Value, path: &str, out: &mut Vec<Cause>) {
    let operations = strings(rule.get("operations"));
    let at = format!("{path}.operations");
    if operations.is_empty() {
        out.push(Cause::required(&at));
    }
    if operations.len() > 1 && operations.contains(&"*") {
        out.push(invalid(
            &at,
            &go_slice("admissionregistration.OperationType", &operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            out.push(not_supported(format!("{at}[{i}]"), op, OPERATIONS));
        }
    }
    for (field, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let values = strings(rule.get(field));
        let at = format!("{path}.{field}");
        if values.is_empty() {
            out.push(Cause::required(&at));
        }
        if values.len() > 1 && values.contains(&"*") {
            out.push(invalid(
                &at,
                &go_slice("string", &values),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
        // A group may be empty (the core group); a version may not.
        if field == "apiVersions" {
            for (i, v) in values.iter().enumerate() {
                if v.is_empty() {
                    out.push(Cause::required(format!("{at}[{i}]")));
                }
            }
        }
    }
    resources(
        &strings(rule.get("resources")),
        &format!("{path}.resources"),
        out,
    );
    if let Some(scope) = str_at(rule, "scope") {
        if !SCOPES.contains(&scope) {
            out.push(not_supported(format!("{path}.scope"), scope, SCOPES));
        }
    }
}

/// `validateResources`: `*`, `*/*`, `res/*` and `*/sub` may not overlap
/// with the other entries.
fn resources(resources: &[&str], path: &str, out: &mut Vec<Cause>) {
    if resources.is_empty() {
        out.push(Cause::required(path));
    }
    let mut with_any_sub = HashSet::new();
    let mut sub_of_any = HashSet::new();
    let (mut double_wildcard, mut single_wildcard, mut plain) = (false, false, false);
    for (i, entry) in resources.iter().enumerate() {
        if entry.is_empty() {
            out.push(Cause::required(format!("{path}[{i}]")));
            continue;
        }
        double_wildcard |= *entry == "*/*";
        single_wildcard |= *entry == "*";
        let Some((res, sub)) = entry.split_once('/') else {
            // As kube-apiserver tracks it: the last entry without a
            // subresource decides.
            plain = *entry != "*";
            continue;
        };
        if with_any_sub.contains(res) {
            out.push(invalid(
                format!("{path}[{i}]"),
                &quote(entry),
                &format!("if '{res}/*' is present, must not specify {entry}"),
            ));
        }
        if sub_of_any.contains(sub) {
            out.push(invalid(
                format!("{path}[{i}]"),
                &quote(entry),
                &format!("if '*/{sub}' is present, must not specify {entry}"),
            ));
        }
        if sub == "*" {
            with_any_sub.insert(res);
        }
        if res == "*" {
            sub_of_any.insert(sub);
        }
    }
    if resources.len() > 1 && double_wildcard {
        out.push(invalid(
            path,
            &go_slice("string", resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && plain {
        out.push(invalid(
            path,
            &go_slice("string", resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// `validateAdmissionReviewVersions`.
fn review_versions(
    versions: Option<&Value>,
    require_known: bool,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let versions = strings(versions);
    if versions.is_empty() {
        out.push(required(
            path,
            &format!("must specify one of {}", REVIEW_VERSIONS.join(", ")),
        ));
        return;
    }
    let mut seen = HashSet::new();
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(*v) {
            out.push(invalid(
                format!("{path}[{i}]"),
                &quote(v),
                "duplicate version",
            ));
            continue;
        }
        for msg in names::is_dns1035_label(v) {
            out.push(invalid(format!("{path}[{i}]"), &quote(v), &msg));
        }
    }
    if require_known && !versions.iter().any(|v| REVIEW_VERSIONS.contains(v)) {
        out.push(invalid(
            path,
            &go_slice("string", &versions),
            &format!(
                "must include at least one of {}",
                REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
}

/// `metav1validation.ValidateLabelSelector`.
pub(super) fn label_selector(
    selector: &Value,
    allow_invalid_values: bool,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let labels = selector.get("matchLabels").and_then(Value::as_object);
    for (key, value) in labels.into_iter().flatten() {
        let at = format!("{path}.matchLabels");
        for msg in names::is_qualified_name(key) {
            out.push(invalid(&at, &quote(key), &msg));
        }
        let value = value.as_str().unwrap_or("");
        for msg in names::is_valid_label_value(value) {
            out.push(invalid(&at, &quote(value), &msg));
        }
    }
    for (i, req) in array(selector.get("matchExpressions")).iter().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        let values = strings(req.get("values"));
        match str_at(req, "operator").unwrap_or("") {
            "In" | "NotIn" if values.is_empty() => out.push(required(
                format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => out.push(Cause::forbidden(
                format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => out.push(invalid(
                format!("{at}.operator"),
                &quote(other),
                "not a valid selector operator",
            )),
        }
        let key = str_at(req, "key").unwrap_or("");
        for msg in names::is_qualified_name(key) {
            out.push(invalid(format!("{at}.key"), &quote(key), &msg));
        }
        if !allow_invalid_values {
            for (j, v) in values.iter().enumerate() {
                for msg in names::is_valid_label_value(v) {
                    out.push(invalid(format!("{at}.values[{j}]"), &quote(v), &msg));
                }
            }
        }
    }
}

/// Exactly one of `url` and `service`, each checked.
fn client_config(config: Option<&Value>, path: &str, out: &mut Vec<Cause>) {
    let config = config.and_then(Value::as_object);
    let field = |f: &str| config.and_then(|c| c.get(f)).filter(|v| !v.is_null());
    match (field("url"), field("service")) {
        (Some(url), None) => webhook_url(url.as_str().unwrap_or(""), &format!("{path}.url"), out),
        (None, Some(service)) => webhook_service(service, &format!("{path}.service"), out),
        _ => out.push(required(path, "exactly one of url or service is required")),
    }
}

/// `webhook.ValidateWebhookURL` with https required.
fn webhook_url(raw: &str, path: &str, out: &mut Vec<Cause>) {
    let url = match GoUrl::parse(raw) {
        Ok(url) => url,
        Err(e) => {
            out.push(required(
                path,
                &format!(
                    "url must be a valid URL: parse {}: {e}{URL_FORM}",
                    quote(raw)
                ),
            ));
            return;
        }
    };
    if url.scheme != "https" {
        out.push(invalid(
            path,
            &quote(url.scheme),
            &format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    if url.host.is_empty() {
        out.push(invalid(
            path,
            &quote(url.host),
            &format!("host must be specified{URL_FORM}"),
        ));
    }
    if let Some(user) = url.user {
        out.push(invalid(
            path,
            &quote(user),
            "user information is not permitted in the URL",
        ));
    }
    if !url.fragment.is_empty() {
        out.push(invalid(
            path,
            &quote(url.fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !url.query.is_empty() {
        out.push(invalid(
            path,
            &quote(url.query),
            "query parameters are not permitted in the URL",
        ));
    }
}

/// `webhook.ValidateWebhookService` (the port defaults to 443).
fn webhook_service(service: &Value, path: &str, out: &mut Vec<Cause>) {
    for field in ["name", "namespace"] {
        if str_at(service, field).unwrap_or("").is_empty() {
            out.push(Cause::required(format!("{path}.{field}")));
        }
    }
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        out.push(invalid(
            format!("{path}.port"),
            &port.to_string(),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = str_at(service, "path") else {
        return;
    };
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    let at = format!("{path}.path");
    if url_path == "//" {
        out.push(invalid(
            &at,
            &quote(url_path),
            "segment[0] may not be empty",
        ));
        return;
    }
    if !url_path.starts_with('/') {
        out.push(invalid(&at, &quote(url_path), "must start with a '/'"));
    }
    // Go slices off the first byte whatever it is.
    let rest = url_path.get(1..).unwrap_or("");
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    for (i, step) in rest.split('/').enumerate() {
        if step.is_empty() {
            out.push(invalid(
                &at,
                &quote(url_path),
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in names::is_dns1123_subdomain(step) {
            out.push(invalid(
                &at,
                &quote(url_path),
                &format!("segment[{i}]: {failure}"),
            ));
        }
    }
}

/// The parts of a URL `ValidateWebhookURL` looks at, split as Go's
/// `url.Parse` splits them.
struct GoUrl<'a> {
    scheme: &'a str,
    user: Option<&'a str>,
    host: &'a str,
    query: &'a str,
    fragment: &'a str,
}

impl<'a> GoUrl<'a> {
    fn parse(raw: &'a str) -> Result<Self, String> {
        if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
            return Err("net/url: invalid control character in URL".into());
        }
        let (rest, fragment) = raw.split_once('#').unwrap_or((raw, ""));
        let (scheme, rest) =
            match rest.find(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c))) {
                Some(0) if rest.starts_with(':') => return Err("missing protocol scheme".into()),
                Some(i)
                    if rest[i..].starts_with(':')
                        && rest.starts_with(|c: char| c.is_ascii_alphabetic()) =>
                {
                    (&rest[..i], &rest[i + 1..])
                }
                _ => ("", rest),
            };
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (mut user, mut host) = (None, "");
        if let Some(authority) = rest.strip_prefix("//") {
            let authority = authority.split('/').next().unwrap_or("");
            host = authority;
            if let Some(at) = authority.rfind('@') {
                user = Some(&authority[..at]);
                host = &authority[at + 1..];
            }
            // A port must be digits (`validOptionalPort`).
            let port = match host.rfind(']') {
                Some(close) => host[close + 1..].strip_prefix(':'),
                None => host.rfind(':').map(|c| &host[c + 1..]),
            };
            if let Some(port) = port.filter(|p| !p.bytes().all(|b| b.is_ascii_digit())) {
                return Err(format!("invalid port \":{port}\" after host"));
            }
        } else if scheme.is_empty() && rest.split('/').next().is_some_and(|s| s.contains(':')) {
            return Err("first path segment in URL cannot contain colon".into());
        }
        Ok(GoUrl {
            scheme,
            user,
            host,
            query,
            fragment,
        })
    }
}

fn webhooks_of(obj: &Value) -> &[Value] {
    array(obj.get("webhooks"))
}

pub(super) fn array(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

pub(super) fn strings(v: Option<&Value>) -> Vec<&str> {
    array(v).iter().map(|s| s.as_str().unwrap_or("")).collect()
}

pub(super) fn str_at<'v>(obj: &'v Value, field: &str) -> Option<&'v str> {
    obj.get(field).and_then(Value::as_str)
}

/// Go's `%q`.
pub(super) fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// Go's `%#v` of a string slice of `elem` type.
pub(super) fn go_slice(elem: &str, values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| quote(v)).collect();
    format!("[]{elem}{{{}}}", quoted.join(", "))
}

/// `field.Invalid`; `value` as Go prints it.
pub(super) fn invalid(path: impl Into<String>, value: &str, detail: &str) -> Cause {
    Cause::invalid(path, format!("Invalid value: {value}: {detail}"))
}

/// `field.Required` with a detail.
pub(super) fn required(path: impl Into<String>, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueRequired".into(),
        message: format!("Required value: {detail}"),
        field: path.into(),
    }
}

/// `field.NotSupported`.
pub(super) fn not_supported(path: impl Into<String>, value: &str, supported: &[&str]) -> Cause {
    let quoted: Vec<String> = supported.iter().map(|s| quote(s)).collect();
    Cause {
        reason: "FieldValueNotSupported".into(),
        message: format!(
            "Unsupported value: {}: supported values: {}",
            quote(value),
            quoted.join(", ")
        ),
        field: path.into(),
    }
}

/// `field.Duplicate`.
pub(super) fn duplicate(path: impl Into<String>, value: &str) -> Cause {
    Cause {
        reason: "FieldValueDuplicate".into(),
        message: format!("Duplicate value: {}", quote(value)),
        field: path.into(),
    }
}

/// The v1 defaults (`SetDefaults_ValidatingWebhook`,
/// `SetDefaults_MutatingWebhook`, `SetDefaults_Rule`,
/// `SetDefaults_ServiceReference`), applied whenever a configuration is
/// decoded.
pub(crate) fn default(obj: &mut Value, mutating: bool) {
    let Some(webhooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else {
        return;
    };
    for hook in webhooks.iter_mut().filter_map(Value::as_object_mut) {
        set_if_absent(hook, "failurePolicy", "Fail".into());
        set_if_absent(hook, "matchPolicy", "Equivalent".into());
        set_if_absent(hook, "namespaceSelector", Value::Object(Map::new()));
        set_if_absent(hook, "objectSelector", Value::Object(Map::new()));
        set_if_absent(hook, "timeoutSeconds", 10.into());
        if mutating {
            set_if_absent(hook, "reinvocationPolicy", "Never".into());
        }
        if let Some(rules) = hook.get_mut("rules").and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                set_if_absent(rule, "scope", "*".into());
            }
        }
        if let Some(service) = hook
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            set_if_absent(service, "port", 443.into());
        }
    }
}

pub(super) fn set_if_absent(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.into(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(mutating: bool, hook: Value) -> Vec<(String, String)> {
        validate(mutating, &json!({"webhooks": [hook]}), None)
            .into_iter()
            .map(|c| (c.field, c.message))
            .collect()
    }

    fn valid() -> Value {
        json!({
            "name": "check.example.com",
            "clientConfig": {"url": "https://hooks.example.com:8443/check"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "pods/status"], "scope": "*"}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail", "matchPolicy": "Equivalent", "timeoutSeconds": 10,
            "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]},
            "objectSelector": {},
            "reinvocationPolicy": "IfNeeded",
        })
    }

    #[test]
    fn a_valid_webhook_passes() {
        assert_eq!(messages(true, valid()), vec![]);
    }

    #[test]
    fn urls_are_split_as_go_splits_them() {
        let url = GoUrl::parse("https://u:p@h.example.com:443/x?a=b#frag").expect("parses");
        assert_eq!(
            (url.scheme, url.user, url.host, url.query, url.fragment),
            ("https", Some("u:p"), "h.example.com:443", "a=b", "frag")
        );
        let url = GoUrl::parse("hooks.example.com/x").expect("parses");
        assert_eq!((url.scheme, url.host), ("", ""));
        assert!(GoUrl::parse("https://[::1]:8443/x").is_ok());
        assert_eq!(
            GoUrl::parse("https://h:port/x").err().as_deref(),
            Some("invalid port \":port\" after host")
        );
        assert_eq!(
            GoUrl::parse("://h").err().as_deref(),
            Some("missing protocol scheme")
        );
    }

    #[test]
    fn resource_wildcards_may_not_overlap() {
        let mut causes = Vec::new();
        resources(&["*/*", "pods"], "r", &mut causes);
        resources(
            &[
                "*",
                "pods",
                "pods/*",
                "pods/log",
                "*/scale",
                "deployments/scale",
            ],
            "s",
            &mut causes,
        );
        let got: Vec<(&str, &str)> = causes
            .iter()
            .map(|c| (c.field.as_str(), c.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("r", "Invalid value: []string{\"*/*\", \"pods\"}: if '*/*' is present, must not specify other resources"),
                ("s[3]", "Invalid value: \"pods/log\": if 'pods/*' is present, must not specify pods/log"),
                ("s[5]", "Invalid value: \"deployments/scale\": if '*/scale' is present, must not specify deployments/scale"),
                ("s", "Invalid value: []string{\"*\", \"pods\", \"pods/*\", \"pods/log\", \"*/scale\", \"deployments/scale\"}: if '*' is present, must not specify other resources without subresources"),
            ]
        );
    }

    #[test]
    fn updates_keep_what_the_stored_object_already_had() {
        let mut old_hook = valid();
        old_hook["sideEffects"] = json!("Unknown");
        let old = json!({"webhooks": [old_hook.clone(), old_hook.clone()]});
        // Created now, these would be refused twice over.
        let next = json!({"webhooks": [old_hook.clone(), old_hook]});
        assert_eq!(validate(true, &next, None).len(), 3);
        assert_eq!(validate(true, &next, Some(&old)), vec![]);
    }

    #[test]
    fn defaults_are_kubes_v1_defaults() {
        let mut obj = json!({"webhooks": [{
            "name": "a.b.c", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
            "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}],
        }]});
        default(&mut obj, true);
        let hook = &obj["webhooks"][0];
        assert_eq!(hook["failurePolicy"], "Fail");
        assert_eq!(hook["matchPolicy"], "Equivalent");
        assert_eq!(hook["timeoutSeconds"], 10);
        assert_eq!(hook["reinvocationPolicy"], "Never");
        assert_eq!(hook["namespaceSelector"], json!({}));
        assert_eq!(hook["objectSelector"], json!({}));
        assert_eq!(hook["rules"][0]["scope"], "*");
        assert_eq!(hook["clientConfig"]["service"]["port"], 443);
        let mut validating = json!({"webhooks": [{"name": "a.b.c"}]});
        default(&mut validating, false);
        assert!(validating["webhooks"][0]
            .get("reinvocationPolicy")
            .is_none());
    }
}
