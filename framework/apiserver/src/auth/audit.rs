//! The permission audit: per identity, the distinct request attributes
//! (verb, API group, resource, subresource, namespace, whether a name was
//! given; the path of a non-resource request) it was authorized for, each
//! with how often it was allowed and denied and which granted rules
//! allowed it. A set with counts, not a log: recording is one hash of
//! borrowed strings and a map lookup under a mutex, and allocates only the
//! first time an identity or attribute set is seen. Bounded: past
//! [`MAX_IDENTITIES`] identities or [`MAX_ENTRIES`] attribute sets per
//! identity, requests are counted as dropped, not stored.
//!
//! [`PermissionAudit`] compares what an identity asked for with what it
//! was granted: the requests denied (the rules it is missing), the
//! granted rules that never allowed a request (over-privilege), and, of
//! the rules that did, the verbs (per resource) that never allowed one
//! (over-privilege within a used rule), each printed as an RBAC rule to
//! paste into a Role. `audit2rbac` derives
//! rules from an audit log the same way; this keeps only the distinct
//! attributes, so it costs little to leave on. Recording can still be
//! switched off (one relaxed atomic load per request then), to measure
//! that cost or to serve a long-lived dev server without it.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::rbac::{Grant, Index, Rule};
use super::user::{UserInfo, AUTHENTICATED, SERVICE_ACCOUNTS, UNAUTHENTICATED};
use crate::auth::attributes::Attributes;

/// How many identities the audit keeps.
pub const MAX_IDENTITIES: usize = 1024;
/// How many distinct attribute sets it keeps per identity.
pub const MAX_ENTRIES: usize = 4096;

/// A granted rule: the binding and role it comes from, and its position
/// in the role's rules.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RuleRef {
    source: Arc<str>,
    rule: usize,
}

/// The outcome of one authorization.
pub(crate) enum Outcome<'a> {
    /// Allowed by this grant's rule; `None` for `system:masters`.
    Allowed(Option<(&'a Grant, usize)>),
    Denied,
}

/// The attribute set an entry counts.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Key {
    resource_request: bool,
    verb: String,
    group: String,
    resource: String,
    subresource: String,
    namespace: String,
    named: bool,
    /// Non-resource requests only.
    path: String,
}

impl Key {
    fn path_of(attrs: &Attributes) -> &str {
        if attrs.resource_request {
            ""
        } else {
            &attrs.path
        }
    }

    fn of(attrs: &Attributes) -> Self {
        Self {
            resource_request: attrs.resource_request,
            verb: attrs.verb.clone(),
            group: attrs.api_group.clone(),
            resource: attrs.resource.clone(),
            subresource: attrs.subresource.clone(),
            namespace: attrs.namespace.clone(),
            named: !attrs.name.is_empty(),
            path: Self::path_of(attrs).to_owned(),
        }
    }

    fn matches(&self, attrs: &Attributes) -> bool {
        self.resource_request == attrs.resource_request
            && self.named != attrs.name.is_empty()
            && self.verb == attrs.verb
            && self.resource == attrs.resource
            && self.group == attrs.api_group
            && self.subresource == attrs.subresource
            && self.namespace == attrs.namespace
            && self.path == Self::path_of(attrs)
    }
}

struct Entry {
    key: Key,
    allowed: u64,
    denied: u64,
    allowed_by: Vec<RuleRef>,
}

#[derive(Default)]
struct Identity {
    groups: Vec<String>,
    /// Entries by the hash of their key (collisions share a bucket).
    entries: HashMap<u64, Vec<Entry>>,
    len: usize,
    dropped: u64,
}

#[derive(Default)]
struct Identities {
    by_name: HashMap<String, Identity>,
    /// Requests of identities past [`MAX_IDENTITIES`].
    dropped: u64,
}

/// The server's permission audit.
pub(crate) struct AuditLog {
    hasher: RandomState,
    identities: Mutex<Identities>,
    /// Whether [`record`](Self::record) keeps anything; what was recorded
    /// before it was switched off stays until [`clear`](Self::clear).
    recording: AtomicBool,
}

impl Default for AuditLog {
    fn default() -> Self {
        Self::new(true)
    }
}

impl AuditLog {
    /// An empty audit, recording or not.
    pub fn new(recording: bool) -> Self {
        Self {
            hasher: RandomState::new(),
            identities: Mutex::default(),
            recording: AtomicBool::new(recording),
        }
    }

    /// Switches recording on or off.
    pub fn set_recording(&self, on: bool) {
        self.recording.store(on, Ordering::Relaxed);
    }

    /// Whether requests are being recorded.
    pub fn recording(&self) -> bool {
        self.recording.load(Ordering::Relaxed)
    }

    fn hash(&self, attrs: &Attributes) -> u64 {
        self.hasher.hash_one((
            attrs.resource_request,
            attrs.verb.as_str(),
            attrs.api_group.as_str(),
            attrs.resource.as_str(),
            attrs.subresource.as_str(),
            attrs.namespace.as_str(),
            attrs.name.is_empty(),
            Key::path_of(attrs),
        ))
    }

    /// Counts one authorization of `attrs` for `user`, unless recording
    /// is off.
    pub fn record(&self, user: &UserInfo, attrs: &Attributes, outcome: Outcome<'_>) {
        if !self.recording() {
            return;
        }
        let hash = self.hash(attrs);
        let mut all = self.identities.lock().unwrap_or_else(|e| e.into_inner());
        let all = &mut *all;
        if !all.by_name.contains_key(&user.name) {
            if all.by_name.len() >= MAX_IDENTITIES {
                all.dropped += 1;
                return;
            }
            let identity = Identity {
                groups: user.groups.clone(),
                ..Identity::default()
            };
            all.by_name.insert(user.name.clone(), identity);
        }
        let Some(identity) = all.by_name.get_mut(&user.name) else {
            return;
        };
        let bucket = identity.entries.entry(hash).or_default();
        let entry = match bucket.iter().position(|e| e.key.matches(attrs)) {
            Some(i) => &mut bucket[i],
            None if identity.len >= MAX_ENTRIES => {
                identity.dropped += 1;
                return;
            }
            None => {
                identity.len += 1;
                bucket.push(Entry {
                    key: Key::of(attrs),
                    allowed: 0,
                    denied: 0,
                    allowed_by: Vec::new(),
                });
                let last = bucket.len() - 1;
                &mut bucket[last]
            }
        };
        match outcome {
            Outcome::Denied => entry.denied += 1,
            Outcome::Allowed(by) => {
                entry.allowed += 1;
                if let Some((grant, rule)) = by {
                    let seen = entry
                        .allowed_by
                        .iter()
                        .any(|r| r.rule == rule && *r.source == *grant.source);
                    if !seen {
                        entry.allowed_by.push(RuleRef {
                            source: grant.source.clone(),
                            rule,
                        });
                    }
                }
            }
        }
    }

    /// Forgets everything recorded.
    pub fn clear(&self) {
        *self.identities.lock().unwrap_or_else(|e| e.into_inner()) = Identities::default();
    }

    /// The user names recorded, sorted.
    pub fn identities(&self) -> Vec<String> {
        let all = self.identities.lock().unwrap_or_else(|e| e.into_inner());
        let mut names: Vec<String> = all.by_name.keys().cloned().collect();
        names.sort();
        names
    }

    /// The audit of the identity `user` against the grants of `index`.
    pub fn report(&self, user: &str, index: &Index) -> PermissionAudit {
        let all = self.identities.lock().unwrap_or_else(|e| e.into_inner());
        let identity = all.by_name.get(user);
        let groups = match identity {
            Some(identity) => identity.groups.clone(),
            None => implied_groups(user),
        };
        let mut requests = Vec::new();
        let mut used: BTreeMap<RuleRef, BTreeSet<Allowed>> = BTreeMap::new();
        for entry in identity.iter().flat_map(|i| i.entries.values().flatten()) {
            for by in &entry.allowed_by {
                used.entry(by.clone())
                    .or_default()
                    .insert(Allowed::of(&entry.key));
            }
            requests.push(AuditedRequest::of(entry));
        }
        requests.sort();
        let dropped = identity.map_or(0, |i| i.dropped);
        drop(all);
        let info = UserInfo {
            name: user.to_owned(),
            groups,
            ..UserInfo::default()
        };
        let (unused, unused_verbs) = if info.is_master() {
            (Vec::new(), Vec::new())
        } else {
            unused_grants(index, &info, &used)
        };
        PermissionAudit {
            user: user.to_owned(),
            denied: missing_rules(&requests),
            unused,
            unused_verbs,
            requests,
            dropped,
        }
    }
}

/// The groups an identity never seen would have: a service account's.
fn implied_groups(user: &str) -> Vec<String> {
    match user
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
    {
        Some((ns, _)) => vec![
            SERVICE_ACCOUNTS.to_owned(),
            format!("{SERVICE_ACCOUNTS}:{ns}"),
        ],
        None => Vec::new(),
    }
}

/// Groups every identity of a kind is in; what they grant (discovery,
/// self-reviews) is the cluster's default policy, not this identity's.
fn implicit_group(group: &str) -> bool {
    group == AUTHENTICATED
        || group == UNAUTHENTICATED
        || group == SERVICE_ACCOUNTS
        || group.starts_with("system:serviceaccounts:")
}

/// What one request a rule allowed asked for, as a rule can name it: the
/// API group, the resource (`res` or `res/sub`) or non-resource path, and
/// the verb.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Allowed {
    group: String,
    /// `res`, `res/sub`, or the path of a non-resource request.
    what: String,
    verb: String,
}

impl Allowed {
    fn of(key: &Key) -> Self {
        let what = if !key.resource_request {
            key.path.clone()
        } else if key.subresource.is_empty() {
            key.resource.clone()
        } else {
            format!("{}/{}", key.resource, key.subresource)
        };
        Self {
            group: key.group.clone(),
            what,
            verb: key.verb.clone(),
        }
    }
}

/// The granted rules (through bindings naming the identity or one of its
/// explicit groups) that allowed no recorded request, and the verbs of
/// the others that allowed none.
fn unused_grants(
    index: &Index,
    user: &UserInfo,
    used: &BTreeMap<RuleRef, BTreeSet<Allowed>>,
) -> (Vec<AuditRule>, Vec<UnusedVerbs>) {
    let explicit = user.groups.iter().filter(|g| !implicit_group(g));
    let grants = index
        .grants_to_user(&user.name)
        .chain(explicit.flat_map(|g| index.grants_to_group(g)));
    let (mut rules, mut verbs) = (Vec::new(), Vec::new());
    for grant in grants {
        for (i, rule) in grant.rules.iter().enumerate() {
            let this = RuleRef {
                source: grant.source.clone(),
                rule: i,
            };
            match used.get(&this) {
                None => rules.push(AuditRule {
                    namespace: grant.namespace.clone(),
                    granted_by: Some(grant.source.to_string()),
                    rule: PolicyRule::from(rule),
                }),
                Some(allowed) => verbs.extend(unused_verbs(grant, rule, allowed)),
            }
        }
    }
    (rules, verbs)
}

/// Whether a rule names what it grants only through wildcards somewhere
/// (`*` verbs, groups or resources, `*/sub`, a `prefix*` URL): then what
/// it grants cannot be listed verb by verb.
fn has_wildcard(rule: &Rule) -> bool {
    rule.verbs.iter().any(|v| v == "*")
        || rule.api_groups.iter().any(|g| g == "*")
        || rule
            .resources
            .iter()
            .any(|r| r == "*" || r.starts_with("*/"))
        || rule.non_resource_urls.iter().any(|u| u.ends_with('*'))
}

/// The parts of a used rule that allowed nothing: for each group and
/// resource (or URL) it names, the verbs no request used there. `None`
/// when every verb was used.
fn unused_verbs(grant: &Grant, rule: &Rule, allowed: &BTreeSet<Allowed>) -> Option<UnusedVerbs> {
    let granted = PolicyRule::from(rule);
    let entry = |unused, wildcard_allowed| UnusedVerbs {
        namespace: grant.namespace.clone(),
        granted_by: grant.source.to_string(),
        granted: granted.clone(),
        unused,
        wildcard_allowed,
    };
    if has_wildcard(rule) {
        return Some(entry(Vec::new(), Some(allowed_rules(rule, allowed))));
    }
    // (group, resource or URL) -> verbs never used on it.
    let mut idle: BTreeMap<(Option<&str>, &str), Vec<String>> = BTreeMap::new();
    let targets: Vec<(Option<&str>, &str)> = if rule.non_resource_urls.is_empty() {
        let groups = rule.api_groups.iter().map(|g| Some(g.as_str()));
        groups
            .flat_map(|g| rule.resources.iter().map(move |r| (g, r.as_str())))
            .collect()
    } else {
        rule.non_resource_urls
            .iter()
            .map(|u| (None, u.as_str()))
            .collect()
    };
    for (group, what) in targets {
        for verb in &rule.verbs {
            let hit = allowed
                .iter()
                .any(|a| a.verb == *verb && a.what == what && group.is_none_or(|g| a.group == g));
            if !hit {
                idle.entry((group, what)).or_default().push(verb.clone());
            }
        }
    }
    if idle.is_empty() {
        return None;
    }
    // One rule per group and set of idle verbs, listing its resources.
    let mut compact: BTreeMap<(Option<&str>, Vec<String>), Vec<String>> = BTreeMap::new();
    for ((group, what), verbs) in idle {
        compact
            .entry((group, verbs))
            .or_default()
            .push(what.to_owned());
    }
    let mut unused: Vec<PolicyRule> = compact
        .into_iter()
        .map(|((group, verbs), whats)| match group {
            Some(group) => PolicyRule {
                verbs,
                api_groups: vec![group.to_owned()],
                resources: whats,
                resource_names: rule.resource_names.clone(),
                ..PolicyRule::default()
            },
            None => PolicyRule {
                verbs,
                non_resource_urls: whats,
                ..PolicyRule::default()
            },
        })
        .collect();
    unused.sort_by(|a, b| {
        (&a.api_groups, &a.resources, &a.non_resource_urls).cmp(&(
            &b.api_groups,
            &b.resources,
            &b.non_resource_urls,
        ))
    });
    Some(entry(unused, None))
}

/// What a rule allowed, as the narrower rules that would have allowed
/// exactly that: one per group and resource (or URL), with its verbs.
fn allowed_rules(rule: &Rule, allowed: &BTreeSet<Allowed>) -> Vec<PolicyRule> {
    let resource_rule = rule.non_resource_urls.is_empty();
    let mut by_target: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    for a in allowed {
        by_target
            .entry((a.group.as_str(), a.what.as_str()))
            .or_default()
            .push(a.verb.clone());
    }
    by_target
        .into_iter()
        .map(|((group, what), verbs)| {
            if resource_rule {
                PolicyRule {
                    verbs,
                    api_groups: vec![group.to_owned()],
                    resources: vec![what.to_owned()],
                    resource_names: rule.resource_names.clone(),
                    ..PolicyRule::default()
                }
            } else {
                PolicyRule {
                    verbs,
                    non_resource_urls: vec![what.to_owned()],
                    ..PolicyRule::default()
                }
            }
        })
        .collect()
}

/// The denied requests as the rules that would allow them: one per scope
/// (namespace or cluster) and resource (or path), with the verbs asked.
fn missing_rules(requests: &[AuditedRequest]) -> Vec<AuditRule> {
    let mut grouped: BTreeMap<(Option<String>, String, String, bool), BTreeSet<String>> =
        BTreeMap::new();
    for r in requests.iter().filter(|r| r.denied > 0) {
        let (scope, group, what, is_path) = match &r.path {
            Some(path) => (None, String::new(), path.clone(), true),
            None => {
                let resource = if r.subresource.is_empty() {
                    r.resource.clone()
                } else {
                    format!("{}/{}", r.resource, r.subresource)
                };
                let scope = (!r.namespace.is_empty()).then(|| r.namespace.clone());
                (scope, r.group.clone(), resource, false)
            }
        };
        grouped
            .entry((scope, group, what, is_path))
            .or_default()
            .insert(r.verb.clone());
    }
    grouped
        .into_iter()
        .map(|((namespace, group, what, is_path), verbs)| {
            let verbs = verbs.into_iter().collect();
            let rule = if is_path {
                PolicyRule {
                    verbs,
                    non_resource_urls: vec![what],
                    ..PolicyRule::default()
                }
            } else {
                PolicyRule {
                    verbs,
                    api_groups: vec![group],
                    resources: vec![what],
                    ..PolicyRule::default()
                }
            };
            AuditRule {
                namespace,
                granted_by: None,
                rule,
            }
        })
        .collect()
}

/// One distinct set of request attributes an identity was authorized for,
/// with how often it was allowed and denied.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct AuditedRequest {
    /// The verb (`get`, `list`, `watch`, `create`, ...; for a non-resource
    /// request the lowercase HTTP method).
    pub verb: String,
    /// The API group (`""` for the core group).
    pub group: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource, or `""`.
    pub subresource: String,
    /// The namespace, or `""` at the cluster scope.
    pub namespace: String,
    /// Whether the request named an object (a get, update, patch, delete,
    /// or a list or watch pinned to one name by a field selector).
    pub named: bool,
    /// The path of a non-resource request (`/healthz`, `/apis`, ...).
    pub path: Option<String>,
    /// How often it was allowed.
    pub allowed: u64,
    /// How often it was denied (answered 403).
    pub denied: u64,
}

impl AuditedRequest {
    fn of(entry: &Entry) -> Self {
        let k = &entry.key;
        Self {
            verb: k.verb.clone(),
            group: k.group.clone(),
            resource: k.resource.clone(),
            subresource: k.subresource.clone(),
            namespace: k.namespace.clone(),
            named: k.named,
            path: (!k.resource_request).then(|| k.path.clone()),
            allowed: entry.allowed,
            denied: entry.denied,
        }
    }
}

/// An RBAC `PolicyRule`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct PolicyRule {
    /// `verbs`.
    pub verbs: Vec<String>,
    /// `apiGroups`.
    pub api_groups: Vec<String>,
    /// `resources`.
    pub resources: Vec<String>,
    /// `resourceNames`.
    pub resource_names: Vec<String>,
    /// `nonResourceURLs`.
    pub non_resource_urls: Vec<String>,
}

impl From<&Rule> for PolicyRule {
    fn from(rule: &Rule) -> Self {
        Self {
            verbs: rule.verbs.clone(),
            api_groups: rule.api_groups.clone(),
            resources: rule.resources.clone(),
            resource_names: rule.resource_names.clone(),
            non_resource_urls: rule.non_resource_urls.clone(),
        }
    }
}

/// A rule in a permission audit: one an identity lacks, or one it was
/// granted and never used.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct AuditRule {
    /// Where the rule applies: the namespace of the Role (or RoleBinding)
    /// it belongs in, or `None` for a ClusterRole's rule bound cluster-wide.
    pub namespace: Option<String>,
    /// For a granted rule, the binding and role it comes from
    /// (`ClusterRoleBinding "b" of ClusterRole "r"`).
    pub granted_by: Option<String>,
    /// The rule.
    pub rule: PolicyRule,
}

/// A granted rule that allowed some requests, and the part of it that
/// allowed none: verbs granted on a resource (or URL) and never used
/// there.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct UnusedVerbs {
    /// Where the rule applies: the namespace of the RoleBinding that
    /// grants it, or `None` for a ClusterRoleBinding.
    pub namespace: Option<String>,
    /// The binding and role the rule comes from
    /// (`ClusterRoleBinding "b" of ClusterRole "r"`).
    pub granted_by: String,
    /// The rule as granted.
    pub granted: PolicyRule,
    /// Its verbs never used, per group and resource (resources sharing
    /// the same idle verbs in one rule). Empty when the rule grants a
    /// wildcard.
    pub unused: Vec<PolicyRule>,
    /// For a rule granting through a wildcard (`*` verbs, groups or
    /// resources, `*/sub`, a `prefix*` URL), which cannot be reported
    /// verb by verb: the requests it did allow, as the rules that would
    /// allow exactly those (what to replace it with). `None` otherwise.
    pub wildcard_allowed: Option<Vec<PolicyRule>>,
}

impl fmt::Display for UnusedVerbs {
    /// A comment naming the granted rule, then either the part of it never
    /// used or, for a wildcard, what it allowed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scope = match &self.namespace {
            Some(ns) => format!("in namespace {ns}"),
            None => "cluster-wide".to_owned(),
        };
        let granted = self.granted.to_string();
        let granted: Vec<&str> = granted
            .lines()
            .map(|l| l.trim_start_matches("- ").trim())
            .collect();
        writeln!(f, "# {scope}, granted by {}:", self.granted_by)?;
        writeln!(f, "#   {}", granted.join(", "))?;
        match &self.wildcard_allowed {
            Some(allowed) => {
                writeln!(
                    f,
                    "# it grants a wildcard, so its unused verbs cannot be listed one by one; it allowed only:"
                )?;
                if allowed.is_empty() {
                    writeln!(f, "# (nothing)")?;
                }
                for rule in allowed {
                    write!(f, "{rule}")?;
                }
            }
            None => {
                writeln!(f, "# never used of it:")?;
                for rule in &self.unused {
                    write!(f, "{rule}")?;
                }
            }
        }
        Ok(())
    }
}

fn quoted(items: &[String]) -> String {
    let items: Vec<String> = items
        .iter()
        .map(|s| serde_json::Value::from(s.as_str()).to_string())
        .collect();
    format!("[{}]", items.join(", "))
}

impl fmt::Display for PolicyRule {
    /// The rule as an item of a Role's `rules:` list in YAML, ready to
    /// paste.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (field, values) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
            ("verbs", &self.verbs),
        ] {
            let include =
                !values.is_empty() || (field == "apiGroups" && !self.resources.is_empty());
            if !include {
                continue;
            }
            let lead = if first { "- " } else { "  " };
            first = false;
            writeln!(f, "{lead}{field}: {}", quoted(values))?;
        }
        Ok(())
    }
}

impl fmt::Display for AuditRule {
    /// A comment saying where the rule applies, then the rule.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.namespace, &self.granted_by) {
            (Some(ns), Some(by)) => writeln!(f, "# in namespace {ns}, granted by {by}")?,
            (None, Some(by)) => writeln!(f, "# cluster-wide, granted by {by}")?,
            (Some(ns), None) => writeln!(f, "# in namespace {ns}")?,
            (None, None) => writeln!(f, "# cluster-wide (a ClusterRole)")?,
        }
        write!(f, "{}", self.rule)
    }
}

/// What one identity asked for and what it was granted, from the server's
/// permission audit ([`ApiServer::permission_audit`](crate::ApiServer::permission_audit)).
///
/// Its [`Display`](fmt::Display) prints both lists as RBAC rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PermissionAudit {
    /// The user name (`system:serviceaccount:NS:NAME` for a service
    /// account).
    pub user: String,
    /// Every distinct request, sorted.
    pub requests: Vec<AuditedRequest>,
    /// The requests denied at least once, as the rules that would have
    /// allowed them: what the identity is missing.
    pub denied: Vec<AuditRule>,
    /// The rules granted to the identity (by bindings that name it, or a
    /// group of its own; not the default policy every authenticated
    /// identity gets) that allowed none of its requests: over-privilege.
    /// Empty for `system:masters`, which RBAC does not govern.
    pub unused: Vec<AuditRule>,
    /// Of the granted rules that did allow requests, those with verbs
    /// that never allowed one on some resource they name (or that grant
    /// wildcards, which cannot be checked verb by verb): over-privilege
    /// within a used rule. Empty for `system:masters`.
    pub unused_verbs: Vec<UnusedVerbs>,
    /// Requests not recorded because the audit was full.
    pub dropped: u64,
}

impl PermissionAudit {
    /// Whether the identity was denied nothing and used every verb of
    /// every rule it was granted (and was granted no wildcard): its RBAC
    /// is exactly what it needed.
    pub fn is_least_privilege(&self) -> bool {
        self.denied.is_empty() && self.unused.is_empty() && self.unused_verbs.is_empty()
    }
}

impl fmt::Display for PermissionAudit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let allowed: u64 = self.requests.iter().map(|r| r.allowed).sum();
        let denied: u64 = self.requests.iter().map(|r| r.denied).sum();
        writeln!(
            f,
            "permission audit of {}: {} distinct requests, {allowed} allowed, {denied} denied",
            self.user,
            self.requests.len()
        )?;
        if self.dropped > 0 {
            writeln!(
                f,
                "({} requests not recorded: the audit is full)",
                self.dropped
            )?;
        }
        if self.denied.is_empty() {
            writeln!(f, "denied: none")?;
        } else {
            writeln!(f, "denied (rules missing):")?;
            for rule in &self.denied {
                write!(f, "{rule}")?;
            }
        }
        if self.unused.is_empty() {
            writeln!(f, "granted and never used: none")?;
        } else {
            writeln!(f, "granted and never used (over-privilege):")?;
            for rule in &self.unused {
                write!(f, "{rule}")?;
            }
        }
        if self.unused_verbs.is_empty() {
            writeln!(f, "verbs granted and never used: none")?;
        } else {
            writeln!(
                f,
                "verbs granted and never used (over-privilege in used rules):"
            )?;
            for verbs in &self.unused_verbs {
                write!(f, "{verbs}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StoredObject;
    use serde_json::json;

    fn stored(value: serde_json::Value) -> Arc<StoredObject> {
        Arc::new(StoredObject::encode(value, 1))
    }

    fn robot() -> UserInfo {
        UserInfo::service_account("ns1", "robot", "u").with_authenticated_group()
    }

    fn index() -> Index {
        let role = stored(json!({
            "metadata": {"name": "r"},
            "rules": [
                {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]},
                {"verbs": ["delete"], "apiGroups": ["apps"], "resources": ["deployments"]},
            ],
        }));
        let binding = stored(json!({
            "metadata": {"name": "b"},
            "roleRef": {"kind": "ClusterRole", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "ns1"}],
        }));
        let everyone = stored(json!({
            "metadata": {"name": "discovery"},
            "roleRef": {"kind": "ClusterRole", "name": "r"},
            "subjects": [{"kind": "Group", "name": AUTHENTICATED}],
        }));
        Index::build(&[], &[role], &[], &[binding, everyone])
    }

    fn authorize(log: &AuditLog, index: &Index, user: &UserInfo, attrs: &Attributes) {
        let outcome = match super::super::rbac::allowing(index, user, attrs) {
            Some(by) => Outcome::Allowed(Some(by)),
            None => Outcome::Denied,
        };
        log.record(user, attrs, outcome);
    }

    #[test]
    fn distinct_attributes_are_counted_once_each() {
        let (log, index, user) = (AuditLog::default(), index(), robot());
        let list = Attributes::resource("list", "", "configmaps", "ns1");
        for _ in 0..3 {
            authorize(&log, &index, &user, &list);
        }
        // Names are not kept, only whether there was one.
        authorize(&log, &index, &user, &list.clone().named("a"));
        authorize(&log, &index, &user, &list.clone().named("b"));
        let audit = log.report(&user.name, &index);
        let counts: Vec<(bool, u64)> = audit
            .requests
            .iter()
            .map(|r| (r.named, r.allowed))
            .collect();
        assert_eq!(counts, [(false, 3), (true, 2)]);
    }

    #[test]
    fn denied_requests_become_missing_rules_and_unused_grants_over_privilege() {
        let (log, index, user) = (AuditLog::default(), index(), robot());
        authorize(
            &log,
            &index,
            &user,
            &Attributes::resource("get", "", "configmaps", "ns1").named("c"),
        );
        authorize(
            &log,
            &index,
            &user,
            &Attributes::resource("watch", "", "configmaps", "ns1"),
        );
        authorize(
            &log,
            &index,
            &user,
            &Attributes::resource("create", "", "configmaps", "ns1"),
        );
        authorize(
            &log,
            &index,
            &user,
            &Attributes::resource("list", "apps", "deployments", "").sub("scale"),
        );
        authorize(
            &log,
            &index,
            &user,
            &Attributes::non_resource("get", "/metrics"),
        );
        let audit = log.report(&user.name, &index);
        let denied: Vec<String> = audit.denied.iter().map(ToString::to_string).collect();
        assert_eq!(
            denied,
            [
                "# cluster-wide (a ClusterRole)\n- nonResourceURLs: [\"/metrics\"]\n  verbs: [\"get\"]\n",
                "# cluster-wide (a ClusterRole)\n- apiGroups: [\"apps\"]\n  resources: [\"deployments/scale\"]\n  verbs: [\"list\"]\n",
                "# in namespace ns1\n- apiGroups: [\"\"]\n  resources: [\"configmaps\"]\n  verbs: [\"create\", \"watch\"]\n",
            ]
        );
        // The configmaps rule allowed the get; the deployments rule nothing.
        // The same role bound to system:authenticated is not the robot's own.
        assert_eq!(audit.unused.len(), 1, "{audit}");
        assert_eq!(
            audit.unused[0].to_string(),
            "# cluster-wide, granted by ClusterRoleBinding \"b\" of ClusterRole \"r\"\n- apiGroups: [\"apps\"]\n  resources: [\"deployments\"]\n  verbs: [\"delete\"]\n"
        );
        assert!(!audit.is_least_privilege());
        // Of the used configmaps rule, `list` allowed nothing.
        let verbs: Vec<String> = audit.unused_verbs.iter().map(ToString::to_string).collect();
        assert_eq!(
            verbs,
            ["# cluster-wide, granted by ClusterRoleBinding \"b\" of ClusterRole \"r\":\n#   apiGroups: [\"\"], resources: [\"configmaps\"], verbs: [\"get\", \"list\"]\n# never used of it:\n- apiGroups: [\"\"]\n  resources: [\"configmaps\"]\n  verbs: [\"list\"]\n"],
            "{audit}"
        );
    }

    fn bound(rules: serde_json::Value) -> Index {
        let role = stored(json!({"metadata": {"name": "r"}, "rules": rules}));
        let binding = stored(json!({
            "metadata": {"name": "b"},
            "roleRef": {"kind": "ClusterRole", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "ns1"}],
        }));
        Index::build(&[], &[role], &[], &[binding])
    }

    #[test]
    fn unused_verbs_are_reported_per_resource_of_a_used_rule() {
        let index = bound(json!([{
            "verbs": ["get", "list", "watch", "delete"],
            "apiGroups": ["apps"],
            "resources": ["deployments", "replicasets", "deployments/scale"],
        }]));
        let (log, user) = (AuditLog::default(), robot());
        for verb in ["list", "watch"] {
            for resource in ["deployments", "replicasets"] {
                let attrs = Attributes::resource(verb, "apps", resource, "ns1");
                authorize(&log, &index, &user, &attrs);
            }
        }
        let get = Attributes::resource("get", "apps", "deployments", "ns1").named("d");
        authorize(&log, &index, &user, &get);
        let audit = log.report(&user.name, &index);
        assert!(
            audit.unused.is_empty() && audit.denied.is_empty(),
            "{audit}"
        );
        assert_eq!(audit.unused_verbs.len(), 1, "{audit}");
        let idle = &audit.unused_verbs[0];
        assert_eq!(idle.granted.resources.len(), 3);
        assert!(idle.wildcard_allowed.is_none());
        let unused: Vec<(Vec<String>, Vec<String>)> = idle
            .unused
            .iter()
            .map(|r| (r.resources.clone(), r.verbs.clone()))
            .collect();
        let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            unused,
            [
                (strings(&["deployments"]), strings(&["delete"])),
                (
                    strings(&["deployments/scale"]),
                    strings(&["get", "list", "watch", "delete"])
                ),
                (strings(&["replicasets"]), strings(&["get", "delete"])),
            ],
            "{audit}"
        );
        assert!(!audit.is_least_privilege());
    }

    #[test]
    fn a_rule_whose_every_verb_was_used_is_not_reported() {
        let index = bound(json!([
            {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["c"]},
            {"verbs": ["get"], "nonResourceURLs": ["/metrics"]},
        ]));
        let (log, user) = (AuditLog::default(), robot());
        let get = Attributes::resource("get", "", "configmaps", "ns1").named("c");
        authorize(&log, &index, &user, &get);
        authorize(
            &log,
            &index,
            &user,
            &Attributes::non_resource("get", "/metrics"),
        );
        let audit = log.report(&user.name, &index);
        assert!(audit.is_least_privilege(), "{audit}");
        assert!(audit
            .to_string()
            .contains("verbs granted and never used: none"));
    }

    #[test]
    fn a_wildcard_rule_is_reported_with_what_it_allowed_not_verb_by_verb() {
        let index = bound(json!([
            {"verbs": ["*"], "apiGroups": ["apps"], "resources": ["deployments"]},
            {"verbs": ["get"], "apiGroups": ["*"], "resources": ["*/scale"]},
            {"verbs": ["get", "post"], "nonResourceURLs": ["/logs/*"]},
        ]));
        let (log, user) = (AuditLog::default(), robot());
        for verb in ["list", "watch"] {
            let attrs = Attributes::resource(verb, "apps", "deployments", "ns1");
            authorize(&log, &index, &user, &attrs);
        }
        let scale = Attributes::resource("get", "apps", "statefulsets", "ns1")
            .named("s")
            .sub("scale");
        authorize(&log, &index, &user, &scale);
        authorize(
            &log,
            &index,
            &user,
            &Attributes::non_resource("get", "/logs/a"),
        );
        let audit = log.report(&user.name, &index);
        assert!(audit.unused.is_empty(), "{audit}");
        assert_eq!(audit.unused_verbs.len(), 3, "{audit}");
        for idle in &audit.unused_verbs {
            assert!(idle.unused.is_empty(), "{audit}");
        }
        let allowed: Vec<Vec<PolicyRule>> = audit
            .unused_verbs
            .iter()
            .map(|u| u.wildcard_allowed.clone().expect("a wildcard rule"))
            .collect();
        assert_eq!(allowed[0][0].resources, ["deployments"]);
        assert_eq!(allowed[0][0].verbs, ["list", "watch"]);
        assert_eq!(allowed[1][0].api_groups, ["apps"]);
        assert_eq!(allowed[1][0].resources, ["statefulsets/scale"]);
        assert_eq!(allowed[2][0].non_resource_urls, ["/logs/a"]);
        let text = audit.to_string();
        assert!(
            text.contains("it grants a wildcard, so its unused verbs cannot be listed one by one; it allowed only:"),
            "{text}"
        );
        assert!(!audit.is_least_privilege());
    }

    #[test]
    fn an_identity_never_seen_has_all_its_grants_unused() {
        let audit = AuditLog::default().report("system:serviceaccount:ns1:robot", &index());
        assert!(audit.requests.is_empty() && audit.denied.is_empty());
        assert_eq!(audit.unused.len(), 2);
    }

    #[test]
    fn nothing_is_recorded_while_recording_is_off() {
        let (log, index, user) = (AuditLog::new(false), index(), robot());
        let list = Attributes::resource("list", "", "configmaps", "ns1");
        let secrets = Attributes::resource("get", "", "secrets", "ns1");
        authorize(&log, &index, &user, &list);
        authorize(&log, &index, &user, &secrets);
        assert!(log.identities().is_empty());
        let audit = log.report(&user.name, &index);
        assert!(audit.requests.is_empty() && audit.denied.is_empty());

        log.set_recording(true);
        authorize(&log, &index, &user, &list);
        let audit = log.report(&user.name, &index);
        let counts: Vec<(String, u64)> = audit
            .requests
            .iter()
            .map(|r| (r.resource.clone(), r.allowed))
            .collect();
        assert_eq!(counts, [("configmaps".to_owned(), 1)]);

        // Off again: what was recorded stays, nothing new is added.
        log.set_recording(false);
        authorize(&log, &index, &user, &list);
        authorize(&log, &index, &user, &secrets);
        let audit = log.report(&user.name, &index);
        assert_eq!((audit.requests.len(), audit.requests[0].allowed), (1, 1));
        assert!(audit.denied.is_empty());
    }

    #[test]
    fn the_audit_is_bounded() {
        let (log, index) = (AuditLog::default(), index());
        let user = robot();
        for i in 0..MAX_ENTRIES + 10 {
            let path = format!("/p/{i}");
            log.record(
                &user,
                &Attributes::non_resource("get", &path),
                Outcome::Denied,
            );
        }
        let audit = log.report(&user.name, &index);
        assert_eq!((audit.requests.len(), audit.dropped), (MAX_ENTRIES, 10));
        for i in 0..MAX_IDENTITIES + 5 {
            let other = UserInfo {
                name: format!("u{i}"),
                ..UserInfo::default()
            };
            log.record(
                &other,
                &Attributes::non_resource("get", "/"),
                Outcome::Denied,
            );
        }
        assert_eq!(log.identities().len(), MAX_IDENTITIES);
    }
}
