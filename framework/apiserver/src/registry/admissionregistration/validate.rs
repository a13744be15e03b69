//! The checks a write of a Mutating/ValidatingWebhookConfiguration makes
//! (`admissionregistration.k8s.io/v1`), as kube-apiserver's
//! `pkg/apis/admissionregistration/validation` makes them, with its field
//! paths and messages: webhook names (fully qualified, unique), rules,
//! failure, match, reinvocation policies and side effects, the timeout,
//! the AdmissionReview versions, the selectors, the client config (`url`
//! through `ValidateWebhookURL`, `service` through
//! `ValidateWebhookService`) and the match conditions
//! ([`crate::registry::admissionregistration::match_conditions::validate`]). An update is held to the rules the
//! stored object already met, as `Validate*WebhookConfigurationUpdate`
//! relaxes them.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::machinery::names;
use crate::machinery::status::Cause;
use crate::machinery::util;

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
        out.extend(
            crate::registry::admissionregistration::match_conditions::validate(
                hook.get("matchConditions"),
                &format!("{path}.matchConditions"),
            ),
        );
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

/// `webhook.ValidateWebhookURL` with https required: Go's `url.Parse`
/// must accept the URL, whose scheme must then be `https` (in any case),
/// with a host and without user information, fragment or query. Values
/// are printed as Go prints them (the user information re-escaped, the
/// fragment unescaped, the query raw).
fn webhook_url(raw: &str, path: &str, out: &mut Vec<Cause>) {
    let url = match GoUrl::parse(raw) {
        Ok(url) => url,
        Err(e) => {
            out.push(required(
                path,
                &format!("url must be a valid URL: {e}{URL_FORM}"),
            ));
            return;
        }
    };
    if url.scheme != "https" {
        out.push(invalid(
            path,
            &quote(&url.scheme),
            &format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    if url.host.is_empty() {
        out.push(invalid(
            path,
            &util::go_quote_bytes(&url.host),
            &format!("host must be specified{URL_FORM}"),
        ));
    }
    if let Some(user) = url.user_string() {
        out.push(invalid(
            path,
            &quote(&user),
            "user information is not permitted in the URL",
        ));
    }
    if !url.fragment.is_empty() {
        out.push(invalid(
            path,
            &util::go_quote_bytes(&url.fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !url.raw_query.is_empty() {
        out.push(invalid(
            path,
            &quote(url.raw_query),
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

/// The parts of a URL `ValidateWebhookURL` looks at, as Go's `url.Parse`
/// (Go 1.22–1.24) splits, unescapes and refuses them: the fragment is cut
/// off first, the scheme is lower-cased, a rootless path after a scheme is
/// opaque (no host), and `%` escapes are checked in the user information,
/// host, path and fragment but not the query.
#[derive(Debug)]
struct GoUrl<'a> {
    /// Lower-cased.
    scheme: String,
    /// Unescaped user name, and password when a `:` gave one.
    user: Option<(Vec<u8>, Option<Vec<u8>>)>,
    /// Unescaped; `host:port`, brackets kept.
    host: Vec<u8>,
    raw_query: &'a str,
    /// Unescaped.
    fragment: Vec<u8>,
}

/// Why Go's `url.Parse` refuses a URL, printed as its `*url.Error` is:
/// `parse "<url>": <reason>`.
#[derive(Debug, PartialEq, Eq)]
struct GoUrlError {
    /// The URL the error names: without the fragment unless the fragment
    /// was at fault.
    url: String,
    reason: String,
}

impl std::fmt::Display for GoUrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "parse {}: {}", quote(&self.url), self.reason)
    }
}

/// Which part of a URL is unescaped (Go's `encoding` modes that parsing
/// uses).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Path,
    Host,
    Zone,
    UserPassword,
    Fragment,
}

impl<'a> GoUrl<'a> {
    /// `url.Parse`.
    fn parse(raw: &'a str) -> Result<Self, GoUrlError> {
        let (before, fragment) = match raw.split_once('#') {
            Some((before, fragment)) => (before, Some(fragment)),
            None => (raw, None),
        };
        let mut url = Self::parse_without_fragment(before).map_err(|reason| GoUrlError {
            url: before.to_owned(),
            reason,
        })?;
        if let Some(fragment) = fragment {
            url.fragment = unescape(fragment, Part::Fragment).map_err(|reason| GoUrlError {
                url: raw.to_owned(),
                reason,
            })?;
        }
        Ok(url)
    }

    /// Go's `parse(rawURL, viaRequest = false)`.
    fn parse_without_fragment(raw: &'a str) -> Result<Self, String> {
        if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
            return Err("net/url: invalid control character in URL".into());
        }
        let (scheme, rest) = scheme(raw)?;
        let mut url = GoUrl {
            scheme: scheme.to_ascii_lowercase(),
            user: None,
            host: Vec::new(),
            raw_query: "",
            fragment: Vec::new(),
        };
        // A lone trailing `?` is an empty query (`ForceQuery`).
        let rest = match rest.strip_suffix('?') {
            Some(rest) if !rest.contains('?') => rest,
            _ => match rest.split_once('?') {
                Some((rest, query)) => {
                    url.raw_query = query;
                    rest
                }
                None => rest,
            },
        };
        if !rest.starts_with('/') {
            if !url.scheme.is_empty() {
                // A rootless path after a scheme is opaque: no host, and
                // nothing unescaped.
                return Ok(url);
            }
            if rest.split('/').next().is_some_and(|s| s.contains(':')) {
                return Err("first path segment in URL cannot contain colon".into());
            }
        }
        let mut path = rest;
        if let Some(after) = rest.strip_prefix("//") {
            if !url.scheme.is_empty() || !rest.starts_with("///") {
                let (authority, tail) = match after.find('/') {
                    Some(i) => after.split_at(i),
                    None => (after, ""),
                };
                path = tail;
                let (user, host) = authority_parts(authority)?;
                url.user = user;
                url.host = host;
            }
        }
        unescape(path, Part::Path)?;
        Ok(url)
    }

    /// `Userinfo.String()`: the user information re-escaped.
    fn user_string(&self) -> Option<String> {
        let (name, password) = self.user.as_ref()?;
        let mut out = escape_user_password(name);
        if let Some(password) = password {
            out.push(':');
            out.push_str(&escape_user_password(password));
        }
        Some(out)
    }
}

/// `getScheme`: a letter, then letters, digits, `+`, `-` and `.`, ended by
/// `:`; anything else means no scheme.
fn scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, b) in raw.bytes().enumerate() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// `parseAuthority`: the user information before the last `@`, checked
/// and unescaped, and the host.
type Authority = (Option<(Vec<u8>, Option<Vec<u8>>)>, Vec<u8>);

fn authority_parts(authority: &str) -> Result<Authority, String> {
    let (userinfo, host) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    let host = parse_host(host)?;
    let Some(userinfo) = userinfo else {
        return Ok((None, host));
    };
    let valid = userinfo
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&b));
    if !valid {
        return Err("net/url: invalid userinfo".into());
    }
    let user = match userinfo.split_once(':') {
        None => (unescape(userinfo, Part::UserPassword)?, None),
        Some((name, password)) => (
            unescape(name, Part::UserPassword)?,
            Some(unescape(password, Part::UserPassword)?),
        ),
    };
    Ok((Some(user), host))
}

/// `parseHost`: a bracketed IP literal (with an RFC 6874 zone after `%25`)
/// or a name, either with an optional `:digits` port.
fn parse_host(host: &str) -> Result<Vec<u8>, String> {
    let bad_port = |port: &str| format!("invalid port {} after host", quote(port));
    if host.starts_with('[') {
        let close = host.rfind(']').ok_or("missing ']' in host")?;
        let port = &host[close + 1..];
        if !valid_optional_port(port) {
            return Err(bad_port(port));
        }
        if let Some(zone) = host[..close].find("%25") {
            let mut out = unescape(&host[..zone], Part::Host)?;
            out.extend(unescape(&host[zone..close], Part::Zone)?);
            out.extend(unescape(&host[close..], Part::Host)?);
            return Ok(out);
        }
    } else if let Some(colon) = host.rfind(':') {
        let port = &host[colon..];
        if !valid_optional_port(port) {
            return Err(bad_port(port));
        }
    }
    unescape(host, Part::Host)
}

/// `validOptionalPort`: empty, or `:` and digits (maybe none).
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `unescape` for `part`: every `%` followed by two hex digits; in a
/// host only non-ASCII bytes (and `%25`) escaped and no character a host
/// may not hold.
fn unescape(s: &str, part: Part) -> Result<Vec<u8>, String> {
    let bytes = s.as_bytes();
    let escape_error = |from: usize, len: usize| {
        let end = (from + len).min(bytes.len());
        format!(
            "invalid URL escape {}",
            util::go_quote_bytes(&bytes[from..end])
        )
    };
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex_value),
                bytes.get(i + 2).copied().and_then(hex_value),
            ) else {
                return Err(escape_error(i, 3));
            };
            let value = hi << 4 | lo;
            let is_percent = &bytes[i..i + 3] == b"%25";
            if part == Part::Host && hi < 8 && !is_percent {
                return Err(escape_error(i, 3));
            }
            if part == Part::Zone && !is_percent && value != b' ' && host_must_escape(value) {
                return Err(escape_error(i, 3));
            }
            out.push(value);
            i += 3;
            continue;
        }
        if matches!(part, Part::Host | Part::Zone) && b < 0x80 && host_must_escape(b) {
            return Err(format!(
                "invalid character {} in host name",
                util::go_quote_bytes(&bytes[i..i + 1])
            ));
        }
        out.push(b);
        i += 1;
    }
    Ok(out)
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// `shouldEscape(c, encodeHost)`: what a host may not hold unescaped.
fn host_must_escape(b: u8) -> bool {
    !(b.is_ascii_alphanumeric() || b"!$&'()*+,;=:[]<>\"-_.~".contains(&b))
}

/// `escape(s, encodeUserPassword)`.
fn escape_user_password(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s {
        let keep = b.is_ascii_alphanumeric() || b"-_.~$&+,;=".contains(&b);
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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

/// Go's `%q` of a string.
pub(super) fn quote(s: &str) -> String {
    util::go_quote(s)
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

    /// The messages of a webhook at `url`, otherwise valid.
    fn url_messages(url: &str) -> Vec<String> {
        let mut hook = valid();
        hook["clientConfig"] = json!({ "url": url });
        messages(true, hook)
            .into_iter()
            .map(|(field, message)| {
                assert_eq!(field, "webhooks[0].clientConfig.url");
                message
            })
            .collect()
    }

    const FORM: &str = "; desired format: https://host[/path]";

    fn unparsable(url: &str, reason: &str) -> Vec<String> {
        vec![format!(
            "Required value: url must be a valid URL: parse {}: {reason}{FORM}",
            quote(url)
        )]
    }

    fn no_host() -> String {
        format!("Invalid value: \"\": host must be specified{FORM}")
    }

    #[test]
    fn url_parts_that_are_not_permitted_are_named_as_go_prints_them() {
        assert_eq!(
            url_messages("https://u:p@h.example.com:443/x?a=b#frag"),
            [
                "Invalid value: \"u:p\": user information is not permitted in the URL",
                "Invalid value: \"frag\": fragments are not permitted in the URL",
                "Invalid value: \"a=b\": query parameters are not permitted in the URL",
            ]
        );
        // The user information re-escaped, the fragment unescaped (bytes
        // that are not UTF-8 as `\x..`), the query raw.
        assert_eq!(
            url_messages("https://u%40x@h/"),
            ["Invalid value: \"u%40x\": user information is not permitted in the URL"]
        );
        assert_eq!(
            url_messages("https://a!b:@h/"),
            ["Invalid value: \"a%21b:\": user information is not permitted in the URL"]
        );
        assert_eq!(
            url_messages("https://h/x#a%20b%ff"),
            ["Invalid value: \"a b\\xff\": fragments are not permitted in the URL"]
        );
        assert_eq!(
            url_messages("https://h/x?a=%zz"),
            ["Invalid value: \"a=%zz\": query parameters are not permitted in the URL"]
        );
        // A lone `?` is an empty query; a second one is a query.
        assert_eq!(url_messages("https://h/x?"), Vec::<String>::new());
        assert_eq!(
            url_messages("https://h/x??"),
            ["Invalid value: \"?\": query parameters are not permitted in the URL"]
        );
        // A control character after `#` is not a parse error: the
        // fragment is cut off first.
        assert_eq!(
            url_messages("https://h/#\u{1}"),
            ["Invalid value: \"\\x01\": fragments are not permitted in the URL"]
        );
    }

    #[test]
    fn the_scheme_is_https_in_any_case_and_a_rootless_url_has_no_host() {
        assert_eq!(
            url_messages("HTTPS://hooks.example.com/x"),
            Vec::<String>::new()
        );
        assert_eq!(
            url_messages("http://hooks.example.com/x"),
            [format!(
                "Invalid value: \"http\": 'https' is the only allowed URL scheme{FORM}"
            )]
        );
        // Opaque: `scheme:rest` without `/` has no host, and its escapes
        // are not checked; its query still counts.
        assert_eq!(url_messages("https:foo"), [no_host()]);
        assert_eq!(url_messages("https:%zz"), [no_host()]);
        assert_eq!(
            url_messages("https:foo?x=1"),
            [
                no_host(),
                "Invalid value: \"x=1\": query parameters are not permitted in the URL".to_owned()
            ]
        );
        assert_eq!(url_messages("https:///x"), [no_host()]);
        assert_eq!(
            url_messages("hooks.example.com/x"),
            [
                format!("Invalid value: \"\": 'https' is the only allowed URL scheme{FORM}"),
                no_host()
            ]
        );
        assert_eq!(
            url_messages(":foo"),
            unparsable(":foo", "missing protocol scheme")
        );
        assert_eq!(
            url_messages("1https://h"),
            unparsable(
                "1https://h",
                "first path segment in URL cannot contain colon"
            )
        );
    }

    #[test]
    fn escapes_are_checked_where_go_checks_them() {
        for (url, named, reason) in [
            (
                "https://h/%zz",
                "https://h/%zz",
                "invalid URL escape \"%zz\"",
            ),
            (
                "https://h/a%2",
                "https://h/a%2",
                "invalid URL escape \"%2\"",
            ),
            ("https://h/a%", "https://h/a%", "invalid URL escape \"%\""),
            // A bad path names the URL without its fragment...
            (
                "https://h/%zz#f",
                "https://h/%zz",
                "invalid URL escape \"%zz\"",
            ),
            // ...a bad fragment the whole URL.
            (
                "https://h/x#%zz",
                "https://h/x#%zz",
                "invalid URL escape \"%zz\"",
            ),
            (
                "https://u%zz@h/",
                "https://u%zz@h/",
                "invalid URL escape \"%zz\"",
            ),
            // A host escapes only bytes beyond ASCII.
            (
                "https://h%41.example.com/",
                "https://h%41.example.com/",
                "invalid URL escape \"%41\"",
            ),
            (
                "https://h x/",
                "https://h x/",
                "invalid character \" \" in host name",
            ),
            (
                "https://h{x}/",
                "https://h{x}/",
                "invalid character \"{\" in host name",
            ),
            (
                "https://u^x@h/",
                "https://u^x@h/",
                "net/url: invalid userinfo",
            ),
            (
                "https://h/\u{1}",
                "https://h/\u{1}",
                "net/url: invalid control character in URL",
            ),
        ] {
            assert_eq!(url_messages(url), unparsable(named, reason), "{url}");
        }
        assert_eq!(
            url_messages("https://h%C3%A9.example.com/"),
            Vec::<String>::new()
        );
        assert_eq!(url_messages("https://h/a%2Fb%20c"), Vec::<String>::new());
        // Go's %q: a control character as `\x01`, not Rust's `\u{1}`.
        assert!(url_messages("https://h/\u{1}")[0].contains("parse \"https://h/\\x01\""));
    }

    #[test]
    fn hosts_ports_and_ip_literals_follow_go() {
        for ok in [
            "https://[::1]:8443/x",
            "https://[::1]/x",
            "https://[fe80::1%25en0]:8443/x",
            "https://h:/x",
            "https://h.example.com:8443",
            // Go keeps ":8443" as the host: not empty, so not refused.
            "https://:8443/x",
        ] {
            assert_eq!(url_messages(ok), Vec::<String>::new(), "{ok}");
        }
        for (url, reason) in [
            ("https://h:port/x", "invalid port \":port\" after host"),
            ("https://h:84a3/x", "invalid port \":84a3\" after host"),
            ("https://[::1]x/", "invalid port \"x\" after host"),
            ("https://[::1]:p/", "invalid port \":p\" after host"),
            ("https://[::1/", "missing ']' in host"),
            ("https://[fe80::1%25%0a]/", "invalid URL escape \"%0a\""),
        ] {
            assert_eq!(url_messages(url), unparsable(url, reason), "{url}");
        }
    }

    #[test]
    fn quoting_is_gos() {
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(quote("\n\t\u{7f}\u{1}"), "\"\\n\\t\\x7f\\x01\"");
        assert_eq!(quote("é\u{a0}\u{200b}"), "\"é\\u00a0\\u200b\"");
        assert_eq!(util::go_quote_bytes(b"a\xffb"), "\"a\\xffb\"");
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
