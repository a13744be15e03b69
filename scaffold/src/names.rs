//! The names a project is made of, checked against the Kubernetes rules
//! they must follow (each error names the rule and gives a valid example),
//! and the spellings derived from them: plurals (as the derive makes them),
//! Rust module and file names.

use std::fmt;

/// A name that breaks a rule: what it was, the rule, a valid example.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidName {
    /// Which flag or argument.
    pub what: &'static str,
    /// The value given.
    pub value: String,
    /// The rule it breaks.
    pub rule: String,
    /// A valid value.
    pub example: &'static str,
}

impl fmt::Display for InvalidName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} {:?}: {} (for example {:?})",
            self.what, self.value, self.rule, self.example
        )
    }
}

impl std::error::Error for InvalidName {}

fn invalid(
    what: &'static str,
    value: &str,
    rule: impl Into<String>,
    example: &'static str,
) -> InvalidName {
    InvalidName {
        what,
        value: value.to_owned(),
        rule: rule.into(),
        example,
    }
}

/// Kubernetes' DNS-1123 label: at most 63 lowercase letters, digits and
/// `-`, starting and ending with a letter or digit.
fn dns1123_label_problem(label: &str) -> Option<String> {
    if label.is_empty() {
        return Some("it is empty".to_owned());
    }
    if label.len() > 63 {
        return Some(format!(
            "it is {} characters long, more than 63",
            label.len()
        ));
    }
    if let Some(c) = label
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Some(format!("{c:?} is not a lowercase letter, digit or '-'"));
    }
    if label.starts_with('-') || label.ends_with('-') {
        return Some("it starts or ends with '-'".to_owned());
    }
    None
}

const DNS1123_LABEL: &str =
    "a DNS-1123 label: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit";

const DNS1123_SUBDOMAIN: &str =
    "a DNS-1123 subdomain: at most 253 characters, dot-separated DNS-1123 labels of lowercase letters, digits and '-'";

/// Kubernetes' DNS-1123 subdomain: dot-separated labels, at most 253
/// characters.
fn dns1123_subdomain_problem(name: &str) -> Option<String> {
    if name.len() > 253 {
        return Some(format!(
            "it is {} characters long, more than 253",
            name.len()
        ));
    }
    name.split('.')
        .find_map(|label| dns1123_label_problem(label).map(|p| format!("label {label:?}: {p}")))
}

const WEBHOOK_PATH: &str = "a webhook path must be '/' and '/'-separated segments of lowercase letters, digits and '-', each starting and ending with a letter or digit (the API server checks each segment of a webhook's service path as a DNS-1123 name; controller-runtime allows no '.', '?' or '#')";

/// What is wrong with a webhook's service path, by kube-apiserver's rule
/// (`ValidateWebhookService`: it starts with '/', no segment is empty, each
/// segment is a DNS-1123 subdomain) narrowed by controller-runtime's
/// (`^((/[a-zA-Z0-9-_]+)+|/)$`: no '.'), so the path is valid for both.
fn webhook_path_problem(path: &str) -> Option<String> {
    if path.is_empty() {
        return Some("it is empty".to_owned());
    }
    if !path.starts_with('/') {
        return Some("it does not start with '/'".to_owned());
    }
    if let Some(c) = path.chars().find(|c| c.is_whitespace()) {
        return Some(format!("it contains whitespace ({c:?})"));
    }
    if path.contains('?') {
        return Some("it has a query ('?...')".to_owned());
    }
    if path.contains('#') {
        return Some("it has a fragment ('#...')".to_owned());
    }
    if path == "/" {
        return None;
    }
    for (i, segment) in path[1..].split('/').enumerate() {
        if segment.is_empty() {
            return Some(format!("segment {i} is empty ('//' or a trailing '/')"));
        }
        if segment.len() > 253 {
            return Some(format!(
                "segment {segment:?} is {} characters long, more than 253",
                segment.len()
            ));
        }
        if let Some(c) = segment
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
        {
            return Some(format!(
                "segment {segment:?}: {c:?} is not a lowercase letter, digit or '-'"
            ));
        }
        if segment.starts_with('-') || segment.ends_with('-') {
            return Some(format!("segment {segment:?} starts or ends with '-'"));
        }
    }
    None
}

/// `--defaulting-path`/`--validation-path` (`what`): a path the API server
/// accepts in a webhook configuration and a webhook server can route.
pub fn check_webhook_path(
    what: &'static str,
    path: &str,
    example: &'static str,
) -> Result<(), InvalidName> {
    match webhook_path_problem(path) {
        Some(problem) => Err(invalid(
            what,
            path,
            format!("{WEBHOOK_PATH}; {problem}"),
            example,
        )),
        None => Ok(()),
    }
}

/// `--domain`: a DNS-1123 subdomain (the API groups end with it).
pub fn check_domain(domain: &str) -> Result<(), InvalidName> {
    match dns1123_subdomain_problem(domain) {
        Some(problem) => Err(invalid(
            "domain",
            domain,
            format!("a domain must be {DNS1123_SUBDOMAIN}; {problem}"),
            "my.domain",
        )),
        None => Ok(()),
    }
}

/// `--group`, with the domain appended: the API group must be a DNS-1123
/// subdomain, and the group's first label a Rust module name.
pub fn check_group(group: &str, domain: &str) -> Result<(), InvalidName> {
    let full = full_group(group, domain);
    let problem = if group.is_empty() {
        Some("it is empty".to_owned())
    } else {
        dns1123_subdomain_problem(&full)
    };
    match problem {
        Some(problem) => Err(invalid(
            "group",
            group,
            format!("the API group {full:?} must be {DNS1123_SUBDOMAIN}; {problem}"),
            "webapp",
        )),
        None if group.starts_with(|c: char| c.is_ascii_digit()) => Err(invalid(
            "group",
            group,
            "a group must start with a letter (it names a Rust module)",
            "webapp",
        )),
        None => Ok(()),
    }
}

/// `--version`: Kubernetes' API version format, `v` then a number, then
/// optionally `alpha` or `beta` and a number.
pub fn check_version(version: &str) -> Result<(), InvalidName> {
    let rule = "an API version must be 'v' and a number, optionally followed by 'alpha' or 'beta' and a number";
    let ok = version
        .strip_prefix('v')
        .and_then(|rest| {
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let (major, tail) = rest.split_at(digits);
            (!major.is_empty() && !major.starts_with('0')).then_some(tail)
        })
        .is_some_and(|tail| {
            tail.is_empty()
                || ["alpha", "beta"].iter().any(|stage| {
                    tail.strip_prefix(stage).is_some_and(|n| {
                        !n.is_empty()
                            && !n.starts_with('0')
                            && n.chars().all(|c| c.is_ascii_digit())
                    })
                })
        });
    if ok {
        Ok(())
    } else {
        Err(invalid("version", version, rule, "v1alpha1"))
    }
}

/// `--kind`: UpperCamelCase letters and digits, starting with an
/// uppercase letter; its lowercase form must be a DNS-1035 label (at most
/// 63 characters).
pub fn check_kind(kind: &str) -> Result<(), InvalidName> {
    let rule = "a kind must be UpperCamelCase: an uppercase letter, then letters and digits, at most 63 characters";
    let ok = kind.len() <= 63
        && kind.starts_with(|c: char| c.is_ascii_uppercase())
        && kind.chars().all(|c| c.is_ascii_alphanumeric());
    if ok && kind != "Self" {
        Ok(())
    } else {
        Err(invalid("kind", kind, rule, "CronJob"))
    }
}

/// `--plural`: a DNS-1035 label (lowercase letters, digits and `-`,
/// starting with a letter).
pub fn check_plural(plural: &str) -> Result<(), InvalidName> {
    let problem = dns1123_label_problem(plural).or_else(|| {
        (!plural.starts_with(|c: char| c.is_ascii_lowercase()))
            .then(|| "it does not start with a letter".to_owned())
    });
    match problem {
        Some(problem) => Err(invalid(
            "plural",
            plural,
            format!("a plural resource name must be a DNS-1035 label: at most 63 lowercase letters, digits and '-', starting with a letter; {problem}"),
            "cronjobs",
        )),
        None => Ok(()),
    }
}

/// `--project-name` (and a directory name used as one): a DNS-1123 label,
/// since it prefixes every object's name and names the namespace.
pub fn check_project_name(name: &str) -> Result<(), InvalidName> {
    match dns1123_label_problem(name) {
        Some(problem) => Err(invalid(
            "project name",
            name,
            format!("a project name must be {DNS1123_LABEL}; {problem}"),
            "guestbook-operator",
        )),
        None if name.starts_with(|c: char| c.is_ascii_digit()) => Err(invalid(
            "project name",
            name,
            "a project name must start with a letter (it names a Rust crate)",
            "guestbook-operator",
        )),
        None => Ok(()),
    }
}

/// The API group: the group, a dot, the domain.
pub fn full_group(group: &str, domain: &str) -> String {
    format!("{group}.{domain}")
}

/// The plural the derive gives a kind without `plural = ...` (the same
/// English rules): `cronjob` -> `cronjobs`, `policy` -> `policies`,
/// `ingress` -> `ingresses`.
pub fn plural_of(kind: &str) -> String {
    let word = kind.to_ascii_lowercase();
    if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|end| word.ends_with(end))
    {
        return format!("{word}es");
    }
    if let Some(stem) = word.strip_suffix('y') {
        if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) {
            return format!("{stem}ies");
        }
    }
    format!("{word}s")
}

/// `CronJob` -> `cron_job`: a kind's Rust module and file name.
pub fn snake_case(kind: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = kind.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let after_lower = i > 0 && !chars[i - 1].is_ascii_uppercase();
            let before_lower = i > 0
                && chars[i - 1].is_ascii_uppercase()
                && chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if after_lower || before_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(*c);
        }
    }
    out
}

/// A group's Rust module name: `web-app.tools` -> `web_app_tools`.
pub fn group_module(group: &str) -> String {
    group.replace(['-', '.'], "_")
}

/// A project's crate name: `guestbook-operator` -> `guestbook_operator`.
pub fn crate_name(project: &str) -> String {
    project.replace('-', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_paths_follow_the_api_servers_and_controller_runtimes_rules() {
        for ok in [
            "/custom-default",
            "/webhooks/v1/mutate-guestbook",
            "/a",
            "/0-x-9",
            "/",
        ] {
            assert_eq!(webhook_path_problem(ok), None, "{ok}");
        }
        for (bad, problem) in [
            ("", "it is empty"),
            ("custom", "it does not start with '/'"),
            ("/custom path", "it contains whitespace (' ')"),
            ("/custom?x=1", "it has a query ('?...')"),
            ("/custom#top", "it has a fragment ('#...')"),
            ("//custom", "segment 0 is empty"),
            ("/custom/", "segment 1 is empty"),
            ("/a//b", "segment 1 is empty"),
            (
                "/Custom",
                "segment \"Custom\": 'C' is not a lowercase letter",
            ),
            ("/custom_path", "segment \"custom_path\": '_' is not"),
            ("/custom.path", "'.' is not"),
            ("/%41", "'%' is not"),
            ("/-custom", "starts or ends with '-'"),
        ] {
            let found = webhook_path_problem(bad).unwrap_or_default();
            assert!(found.contains(problem), "{bad:?}: {found}");
        }
        let long = format!("/{}", "a".repeat(254));
        assert!(webhook_path_problem(&long)
            .unwrap_or_default()
            .contains("more than 253"));
        let err = check_webhook_path("defaulting path", "custom", "/custom-default")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("invalid defaulting path \"custom\": a webhook path must be '/' and")
                && err.ends_with("it does not start with '/' (for example \"/custom-default\")"),
            "{err}"
        );
    }

    #[test]
    fn versions_follow_the_kubernetes_format() {
        for ok in ["v1", "v2", "v1alpha1", "v10beta3", "v1beta12"] {
            assert!(check_version(ok).is_ok(), "{ok}");
        }
        for bad in [
            "1",
            "V1",
            "v",
            "v0",
            "v01",
            "v1alpha",
            "v1gamma1",
            "v1alpha0",
            "v1-alpha1",
            "v1beta1x",
        ] {
            let err = check_version(bad).unwrap_err().to_string();
            assert!(
                err.contains("'alpha' or 'beta'") && err.contains("v1alpha1"),
                "{err}"
            );
        }
    }

    #[test]
    fn kinds_are_upper_camel_case() {
        for ok in ["Guestbook", "CronJob", "V1Thing"] {
            assert!(check_kind(ok).is_ok(), "{ok}");
        }
        for bad in ["guestbook", "Cron-Job", "Cron_Job", "", "Kind!", "Self"] {
            let err = check_kind(bad).unwrap_err().to_string();
            assert!(
                err.contains("UpperCamelCase") && err.contains("CronJob"),
                "{err}"
            );
        }
    }

    #[test]
    fn groups_with_the_domain_are_dns_subdomains() {
        assert!(check_group("webapp", "my.domain").is_ok());
        assert!(check_group("batch-jobs", "example.com").is_ok());
        let err = check_group("Web_App", "my.domain").unwrap_err().to_string();
        assert!(
            err.contains("DNS-1123 subdomain") && err.contains("'W'"),
            "{err}"
        );
        assert!(check_group("-web", "my.domain").is_err());
        assert!(check_group("", "my.domain").is_err());
        assert!(check_group("1web", "my.domain").is_err());
        assert!(check_group(&"a".repeat(64), "my.domain")
            .unwrap_err()
            .to_string()
            .contains("63"));
    }

    #[test]
    fn plurals_match_the_derive() {
        assert_eq!(plural_of("Guestbook"), "guestbooks");
        assert_eq!(plural_of("Policy"), "policies");
        assert_eq!(plural_of("Gateway"), "gateways");
        assert_eq!(plural_of("Ingress"), "ingresses");
        assert_eq!(plural_of("Box"), "boxes");
        assert_eq!(plural_of("Match"), "matches");
    }

    #[test]
    fn rust_names() {
        assert_eq!(snake_case("CronJob"), "cron_job");
        assert_eq!(snake_case("Guestbook"), "guestbook");
        assert_eq!(snake_case("HTTPRoute"), "http_route");
        assert_eq!(snake_case("V1Thing"), "v1_thing");
        assert_eq!(group_module("web-app.tools"), "web_app_tools");
        assert_eq!(crate_name("guestbook-operator"), "guestbook_operator");
    }

    #[test]
    fn project_names_are_labels() {
        assert!(check_project_name("guestbook-operator").is_ok());
        let err = check_project_name("Guestbook").unwrap_err().to_string();
        assert!(err.contains("DNS-1123 label"), "{err}");
        assert!(check_project_name("9lives").is_err());
    }
}
