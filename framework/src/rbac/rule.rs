//! [`Rule`] and [`Verb`]: one typed RBAC grant, the Rust form of a
//! `+kubebuilder:rbac` marker.

use std::any::TypeId;
use std::fmt;

use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::ClusterResourceScope;
use kube_core::Resource;

/// An RBAC verb.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    /// `get`: read one object (or a non-resource URL).
    Get,
    /// `list`.
    List,
    /// `watch`.
    Watch,
    /// `create` (a server-side apply of a new object is a create too).
    Create,
    /// `update`: a PUT.
    Update,
    /// `patch`, including server-side apply.
    Patch,
    /// `delete`.
    Delete,
    /// `deletecollection`.
    DeleteCollection,
    /// `use` (e.g. PodSecurityPolicies).
    Use,
    /// `bind` roles one does not hold.
    Bind,
    /// `escalate` a role beyond one's own permissions.
    Escalate,
    /// `impersonate` users, groups or service accounts.
    Impersonate,
    /// `approve` certificate signing requests.
    Approve,
    /// `sign` certificate signing requests.
    Sign,
    /// `post` to a non-resource URL.
    Post,
    /// `put` to a non-resource URL.
    Put,
    /// `*`: every verb.
    All,
}

impl Verb {
    /// The verb as RBAC writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Use => "use",
            Verb::Bind => "bind",
            Verb::Escalate => "escalate",
            Verb::Impersonate => "impersonate",
            Verb::Approve => "approve",
            Verb::Sign => "sign",
            Verb::Post => "post",
            Verb::Put => "put",
            Verb::All => "*",
        }
    }

    /// `get`, `list` and `watch`: every read.
    pub const READ: [Verb; 3] = [Verb::Get, Verb::List, Verb::Watch];

    /// `list` and `watch`: what a cache (an informer) needs.
    pub const CACHE: [Verb; 2] = [Verb::List, Verb::Watch];

    /// `create`, `update`, `patch` and `delete`: every write of an object.
    pub const WRITE: [Verb; 4] = [Verb::Create, Verb::Update, Verb::Patch, Verb::Delete];
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a rule can be granted: objects of a cluster-scoped resource and
/// non-resource URLs only by a ClusterRole; namespaced ones by a Role too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleScope {
    /// A namespaced resource: a Role in the namespace grants it.
    Namespaced,
    /// A cluster-scoped resource or a non-resource URL: only a ClusterRole
    /// grants it.
    Cluster,
}

/// One RBAC grant, typed: the Rust form of controller-gen's
/// `+kubebuilder:rbac:groups=...,resources=...,verbs=...` marker.
///
/// ```
/// use kubeforge::k8s_openapi::api::core::v1::{ConfigMap, Secret};
/// use kubeforge::rbac::{Rule, Verb};
///
/// // What a reconcile reads beyond its watches:
/// let secrets = Rule::on::<Secret>().verbs([Verb::Get]).names(["tls"]);
/// let config = Rule::on::<ConfigMap>().reads();
/// // A subresource, and a non-resource URL:
/// let scale = Rule::resource("apps", "deployments").subresource("scale").verbs([Verb::Get, Verb::Update]);
/// let metrics = Rule::url("/metrics").verbs([Verb::Get]);
/// assert_eq!(secrets.to_policy_rule().resource_names, Some(vec!["tls".to_owned()]));
/// # let _ = (config, scale, metrics);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    pub(crate) groups: Vec<String>,
    pub(crate) resources: Vec<String>,
    pub(crate) resource_names: Vec<String>,
    pub(crate) urls: Vec<String>,
    pub(crate) verbs: Vec<String>,
    pub(crate) scope: RuleScope,
}

impl Rule {
    /// A rule on `K`'s resource (its group and plural), scoped as `K` is.
    /// No verbs yet.
    pub fn on<K>() -> Self
    where
        K: Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        let scope = if TypeId::of::<K::Scope>() == TypeId::of::<ClusterResourceScope>() {
            RuleScope::Cluster
        } else {
            RuleScope::Namespaced
        };
        Rule {
            groups: vec![K::group(&()).into_owned()],
            resources: vec![K::plural(&()).into_owned()],
            resource_names: Vec::new(),
            urls: Vec::new(),
            verbs: Vec::new(),
            scope,
        }
    }

    /// A rule on a namespaced resource named by its API group (`""` or
    /// `"core"` for the core group) and plural, e.g. `("apps",
    /// "deployments")`. No verbs yet.
    pub fn resource(group: impl Into<String>, plural: impl Into<String>) -> Self {
        Rule {
            groups: vec![group.into()],
            resources: vec![plural.into()],
            resource_names: Vec::new(),
            urls: Vec::new(),
            verbs: Vec::new(),
            scope: RuleScope::Namespaced,
        }
    }

    /// [`resource`](Self::resource) for a cluster-scoped resource, which
    /// only a ClusterRole can grant.
    pub fn cluster_resource(group: impl Into<String>, plural: impl Into<String>) -> Self {
        Rule {
            scope: RuleScope::Cluster,
            ..Self::resource(group, plural)
        }
    }

    /// A rule on a non-resource URL such as `/metrics` (a ClusterRole
    /// only). No verbs yet.
    pub fn url(path: impl Into<String>) -> Self {
        Rule {
            groups: Vec::new(),
            resources: Vec::new(),
            resource_names: Vec::new(),
            urls: vec![path.into()],
            verbs: Vec::new(),
            scope: RuleScope::Cluster,
        }
    }

    /// The same resources' `sub` subresource instead (`status`, `scale`,
    /// `finalizers`, ...).
    pub fn subresource(mut self, sub: &str) -> Self {
        for resource in &mut self.resources {
            let base = resource.split('/').next().unwrap_or_default().to_owned();
            *resource = format!("{base}/{sub}");
        }
        self
    }

    /// Only the objects with these names (RBAC cannot restrict `create`,
    /// `list`, `watch` or `deletecollection` by name).
    pub fn names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.resource_names
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Adds verbs.
    pub fn verbs(mut self, verbs: impl IntoIterator<Item = Verb>) -> Self {
        self.verbs
            .extend(verbs.into_iter().map(|v| v.as_str().to_owned()));
        self
    }

    /// Adds `get`, `list` and `watch`.
    pub fn reads(self) -> Self {
        self.verbs(Verb::READ)
    }

    /// Adds `list` and `watch`: what reading `K` through a cache needs.
    pub fn caches(self) -> Self {
        self.verbs(Verb::CACHE)
    }

    /// Adds `create`, `update`, `patch` and `delete`.
    pub fn writes(self) -> Self {
        self.verbs(Verb::WRITE)
    }

    /// Where the rule can be granted.
    pub fn scope(&self) -> RuleScope {
        self.scope
    }

    /// The rule as the RBAC API writes it, lists sorted and de-duplicated,
    /// `core` written as `""`, and `*` alone when it is among the verbs.
    pub fn to_policy_rule(&self) -> PolicyRule {
        let mut rule = self.clone();
        rule.normalize();
        rule.collapse_all_verbs();
        let some = |v: Vec<String>| (!v.is_empty()).then_some(v);
        PolicyRule {
            api_groups: some(rule.groups),
            resources: some(rule.resources),
            resource_names: some(rule.resource_names),
            non_resource_urls: some(rule.urls),
            verbs: rule.verbs,
        }
    }

    /// Sorted, de-duplicated lists and `core` as `""` (controller-gen's
    /// `normalize`, plus its rewriting of `core`).
    pub(crate) fn normalize(&mut self) {
        for group in &mut self.groups {
            if group == "core" {
                group.clear();
            }
        }
        for list in [
            &mut self.groups,
            &mut self.resources,
            &mut self.resource_names,
            &mut self.urls,
            &mut self.verbs,
        ] {
            list.sort();
            list.dedup();
        }
    }

    /// `*` alone when it is among the verbs (done last, as controller-gen
    /// does, so merging sees the verbs as written).
    pub(crate) fn collapse_all_verbs(&mut self) {
        if self.verbs.iter().any(|v| v == "*") {
            self.verbs = vec!["*".to_owned()];
        }
    }
}
