//! The RBAC authorizer: Roles, ClusterRoles and their bindings read from
//! storage into an index by subject (user name, group), rebuilt only after
//! a write to an RBAC object, and kube-apiserver's rule matching (verbs,
//! API groups, resources with subresources and `*/sub`, resourceNames,
//! nonResourceURLs with a trailing `*`). `system:masters` is allowed
//! everything before RBAC is consulted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::user::UserInfo;
use crate::auth::attributes::Attributes;
use crate::machinery::util::strings_at;
use crate::storage::ResKey;
use crate::storage::StoredObject;

/// The RBAC API group.
pub(crate) const GROUP: &str = "rbac.authorization.k8s.io";

/// One `PolicyRule`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

impl Rule {
    /// A rule from its JSON (missing fields are empty).
    pub fn from_json(v: &Value) -> Self {
        Self {
            verbs: strings_at(v, "/verbs"),
            api_groups: strings_at(v, "/apiGroups"),
            resources: strings_at(v, "/resources"),
            resource_names: strings_at(v, "/resourceNames"),
            non_resource_urls: strings_at(v, "/nonResourceURLs"),
        }
    }

    /// The rules of a Role or ClusterRole object.
    pub fn all_of(role: &Value) -> Vec<Rule> {
        role.get("rules")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(Rule::from_json).collect())
            .unwrap_or_default()
    }

    /// Whether the rule allows `attrs` (`RuleAllows`).
    pub fn allows(&self, attrs: &Attributes) -> bool {
        if !self.verbs.iter().any(|v| v == "*" || *v == attrs.verb) {
            return false;
        }
        if !attrs.resource_request {
            return self.non_resource_urls.iter().any(|u| {
                u == "*"
                    || *u == attrs.path
                    || u.strip_suffix('*')
                        .is_some_and(|prefix| attrs.path.starts_with(prefix))
            });
        }
        let group_ok = self
            .api_groups
            .iter()
            .any(|g| g == "*" || *g == attrs.api_group);
        let combined;
        let resource: &str = if attrs.subresource.is_empty() {
            &attrs.resource
        } else {
            combined = format!("{}/{}", attrs.resource, attrs.subresource);
            &combined
        };
        let resource_ok = self.resources.iter().any(|r| {
            r == "*"
                || r == resource
                || (!attrs.subresource.is_empty()
                    && r.strip_prefix("*/") == Some(attrs.subresource.as_str()))
        });
        // Names narrow a rule; a request without a name never matches a
        // rule that lists names (create, list and deletecollection name no
        // object).
        let name_ok = self.resource_names.is_empty()
            || (!attrs.name.is_empty() && self.resource_names.contains(&attrs.name));
        group_ok && resource_ok && name_ok
    }

    /// The rule as JSON (`PolicyRule`, empty lists omitted).
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("verbs".into(), Value::from(self.verbs.clone()));
        for (k, v) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !v.is_empty() {
                m.insert(k.into(), Value::from(v.clone()));
            }
        }
        Value::Object(m)
    }
}

/// The rules one binding grants, where.
#[derive(Clone, Debug)]
pub(crate) struct Grant {
    /// The RoleBinding's namespace; `None` for a ClusterRoleBinding.
    pub namespace: Option<String>,
    pub rules: Arc<[Rule]>,
    /// `RoleBinding "ns/b" of Role "r"`, for allow reasons.
    pub source: Arc<str>,
    /// Why the binding's role could not be resolved (it then grants
    /// nothing): kube-apiserver's lister error, reported as the deny reason.
    pub unresolved: Option<Arc<str>>,
}

impl Grant {
    /// Whether the grant applies to a request in `namespace` (a
    /// RoleBinding only inside its own namespace).
    pub fn applies_in(&self, namespace: &str) -> bool {
        match &self.namespace {
            None => true,
            Some(ns) => !namespace.is_empty() && ns == namespace,
        }
    }
}

/// Every binding, indexed by the user names and groups it names.
#[derive(Debug, Default)]
pub(crate) struct Index {
    users: HashMap<String, Vec<Grant>>,
    groups: HashMap<String, Vec<Grant>>,
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    crate::machinery::util::meta_str(obj, field).unwrap_or("")
}

impl Index {
    /// Builds the index from the four RBAC collections.
    pub fn build(
        roles: &[Arc<StoredObject>],
        cluster_roles: &[Arc<StoredObject>],
        bindings: &[Arc<StoredObject>],
        cluster_bindings: &[Arc<StoredObject>],
    ) -> Self {
        let mut role_rules: HashMap<(&str, &str), Arc<[Rule]>> = HashMap::new();
        for r in roles {
            let rules: Arc<[Rule]> = Rule::all_of(&r.value()).into();
            role_rules.insert((r.namespace(), r.name()), rules);
        }
        let mut cluster_rules: HashMap<&str, Arc<[Rule]>> = HashMap::new();
        for r in cluster_roles {
            cluster_rules.insert(r.name(), Rule::all_of(&r.value()).into());
        }
        let mut index = Index::default();
        let all = bindings
            .iter()
            .map(|b| (b, true))
            .chain(cluster_bindings.iter().map(|b| (b, false)));
        for (b, namespaced) in all {
            let v = &b.value();
            let ns = meta(v, "namespace");
            let name = meta(v, "name");
            let role_kind = v
                .pointer("/roleRef/kind")
                .and_then(Value::as_str)
                .unwrap_or("");
            let role_name = v
                .pointer("/roleRef/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let rules = match (role_kind, namespaced) {
                ("Role", true) => role_rules.get(&(ns, role_name)).cloned(),
                ("ClusterRole", _) => cluster_rules.get(role_name).cloned(),
                _ => None,
            };
            let binding_kind = if namespaced {
                "RoleBinding"
            } else {
                "ClusterRoleBinding"
            };
            let binding_name = if namespaced {
                format!("{ns}/{name}")
            } else {
                name.to_owned()
            };
            // A binding to a missing role grants nothing; the authorizer's
            // lister says why (`role.rbac.authorization.k8s.io "r" not
            // found`), and that becomes the deny reason.
            let unresolved: Option<Arc<str>> = match (&rules, role_kind) {
                (Some(_), _) => None,
                (None, "Role" | "ClusterRole") => Some(
                    format!(
                        "{}.{GROUP} \"{role_name}\" not found",
                        role_kind.to_ascii_lowercase()
                    )
                    .into(),
                ),
                (None, other) => {
                    Some(format!("unsupported role reference kind: \"{other}\"").into())
                }
            };
            let source: Arc<str> =
                format!("{binding_kind} \"{binding_name}\" of {role_kind} \"{role_name}\"").into();
            let grant = Grant {
                namespace: namespaced.then(|| ns.to_owned()),
                rules: rules.unwrap_or_else(|| Arc::from(Vec::new())),
                source,
                unresolved,
            };
            for s in v
                .get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
                let subject = s.get("name").and_then(Value::as_str).unwrap_or("");
                match kind {
                    "User" => index
                        .users
                        .entry(subject.to_owned())
                        .or_default()
                        .push(grant.clone()),
                    "Group" => index
                        .groups
                        .entry(subject.to_owned())
                        .or_default()
                        .push(grant.clone()),
                    "ServiceAccount" => {
                        let sa_ns = s
                            .get("namespace")
                            .and_then(Value::as_str)
                            .filter(|n| !n.is_empty())
                            .unwrap_or(if namespaced { ns } else { "" });
                        // Without a namespace (in a ClusterRoleBinding) it
                        // names no account.
                        if !sa_ns.is_empty() {
                            let user = super::user::service_account_user(sa_ns, subject);
                            index.users.entry(user).or_default().push(grant.clone());
                        }
                    }
                    _ => {}
                }
            }
        }
        index
    }

    /// The grants that apply to `user` (by name and by each group).
    pub fn grants<'a>(&'a self, user: &'a UserInfo) -> impl Iterator<Item = &'a Grant> + 'a {
        let by_group = user.groups.iter().flat_map(|g| self.grants_to_group(g));
        self.grants_to_user(&user.name).chain(by_group)
    }

    /// The grants of bindings that name the user `name` (a User subject,
    /// or a ServiceAccount subject for `system:serviceaccount:NS:NAME`).
    pub fn grants_to_user<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Grant> + 'a {
        self.users.get(name).into_iter().flatten()
    }

    /// The grants of bindings that name the group `group`.
    pub fn grants_to_group<'a>(&'a self, group: &str) -> impl Iterator<Item = &'a Grant> + 'a {
        self.groups.get(group).into_iter().flatten()
    }
}

/// The decision on one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Allowed, with the reason (`RBAC: allowed by ...`).
    Allow(String),
    /// No rule allows it; the reason (resolution errors) may be empty.
    Deny(String),
}

impl Decision {
    #[cfg(test)]
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }
}

/// Decides `attrs` for `user` from `index`.
pub(crate) fn decide(index: &Index, user: &UserInfo, attrs: &Attributes) -> Decision {
    if user.is_master() {
        return Decision::Allow(String::new());
    }
    match allowing(index, user, attrs) {
        Some((grant, _)) => allowed_by(grant, user),
        None => denied(index, user, attrs),
    }
}

/// The first grant, and the index of its first rule, that allows `attrs`
/// for `user`, in kube-apiserver's order (the rule the permission audit
/// credits with the request).
pub(crate) fn allowing<'a>(
    index: &'a Index,
    user: &'a UserInfo,
    attrs: &Attributes,
) -> Option<(&'a Grant, usize)> {
    index
        .grants(user)
        .filter(|grant| grant.applies_in(&attrs.namespace))
        .find_map(|grant| {
            let rule = grant.rules.iter().position(|r| r.allows(attrs))?;
            Some((grant, rule))
        })
}

/// The allow decision `grant` gives `user`, with kube-apiserver's reason.
pub(crate) fn allowed_by(grant: &Grant, user: &UserInfo) -> Decision {
    Decision::Allow(format!(
        "RBAC: allowed by {} to User \"{}\"",
        grant.source, user.name
    ))
}

/// The deny decision for `attrs`, with the resolution errors of the
/// bindings that apply as its reason.
pub(crate) fn denied(index: &Index, user: &UserInfo, attrs: &Attributes) -> Decision {
    let errors = resolution_errors(index, user, &attrs.namespace);
    if errors.is_empty() {
        Decision::Deny(String::new())
    } else {
        Decision::Deny(format!("RBAC: {}", aggregate(&errors)))
    }
}

/// The role-resolution errors of the bindings that apply to `user` in
/// `namespace`, ClusterRoleBindings first as kube-apiserver visits them.
pub(crate) fn resolution_errors(index: &Index, user: &UserInfo, namespace: &str) -> Vec<Arc<str>> {
    let mut cluster = Vec::new();
    let mut local = Vec::new();
    for grant in index.grants(user) {
        if let Some(e) = grant
            .unresolved
            .as_ref()
            .filter(|_| grant.applies_in(namespace))
        {
            let list = if grant.namespace.is_none() {
                &mut cluster
            } else {
                &mut local
            };
            list.push(e.clone());
        }
    }
    cluster.extend(local);
    cluster
}

/// apimachinery's aggregate error text: one error as itself, several
/// de-duplicated in `[a, b]`.
pub(crate) fn aggregate(errors: &[Arc<str>]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&&**e) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [] => String::new(),
        [one] => (*one).to_owned(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The rules `user` holds in `namespace` ("" for cluster-wide only).
pub(crate) fn rules_for(index: &Index, user: &UserInfo, namespace: &str) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    for grant in index.grants(user) {
        if grant.applies_in(namespace) {
            for r in grant.rules.iter() {
                if !out.contains(r) {
                    out.push(r.clone());
                }
            }
        }
    }
    out
}

/// The index, cached until the next write to an RBAC object.
#[derive(Default)]
pub(crate) struct RbacCache {
    epoch: AtomicU64,
    /// A ClusterRole changed since the last aggregation.
    aggregation_due: AtomicBool,
    cached: RwLock<Option<(u64, Arc<Index>)>>,
}

impl RbacCache {
    /// An RBAC object changed: the next decision rebuilds the index.
    pub fn invalidate(&self, cluster_role: bool) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        if cluster_role {
            self.aggregation_due.store(true, Ordering::Release);
        }
    }

    /// Whether aggregation is due (and clears it).
    pub fn take_aggregation_due(&self) -> bool {
        self.aggregation_due.swap(false, Ordering::AcqRel)
    }

    /// The current index.
    pub fn index(&self, storage: &crate::storage::Storage) -> Arc<Index> {
        let epoch = self.epoch.load(Ordering::Acquire);
        if let Some((at, index)) = &*self.cached.read().unwrap_or_else(|e| e.into_inner()) {
            if *at == epoch {
                return index.clone();
            }
        }
        let collect = |store: &crate::storage::Store, plural: &str| -> Vec<Arc<StoredObject>> {
            let res = ResKey::new(GROUP, plural);
            store
                .keys(&res)
                .iter()
                .filter_map(|k| store.get(&res, k))
                .collect()
        };
        let index = {
            let store = storage.lock();
            Index::build(
                &collect(&store, "roles"),
                &collect(&store, "clusterroles"),
                &collect(&store, "rolebindings"),
                &collect(&store, "clusterrolebindings"),
            )
        };
        let index = Arc::new(index);
        *self.cached.write().unwrap_or_else(|e| e.into_inner()) = Some((epoch, index.clone()));
        index
    }
}

#[cfg(test)]
mod tests {
    //! The authorizer against a straightforward model of the rules: every
    //! binding scanned, every rule matched by the reference's wording, no
    //! index.
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const VERBS: &[&str] = &["get", "list", "create", "delete", "*"];
    const GROUPS: &[&str] = &["", "apps", "*"];
    const RESOURCES: &[&str] = &[
        "pods",
        "pods/status",
        "deployments",
        "deployments/scale",
        "*/scale",
        "*",
    ];
    const NAMES: &[&str] = &["a", "b"];
    const URLS: &[&str] = &["/healthz", "/apis/*", "*", "/metrics"];
    const NAMESPACES: &[&str] = &["", "ns1", "ns2"];
    const SUBJECTS: &[(&str, &str)] = &[
        ("User", "alice"),
        ("Group", "dev"),
        ("ServiceAccount", "robot"),
        ("Kind", "alice"),
    ];

    fn pick(from: &'static [&'static str]) -> impl Strategy<Value = Vec<&'static str>> {
        proptest::sample::subsequence(from.to_vec(), 0..=from.len())
    }

    fn rule() -> impl Strategy<Value = Value> {
        prop_oneof![
            (pick(VERBS), pick(GROUPS), pick(RESOURCES), pick(NAMES)).prop_map(|(v, g, r, n)| {
                json!({"verbs": v, "apiGroups": g, "resources": r, "resourceNames": n})
            }),
            (pick(VERBS), pick(URLS)).prop_map(|(v, u)| json!({"verbs": v, "nonResourceURLs": u})),
        ]
    }

    fn stored(value: Value) -> Arc<StoredObject> {
        Arc::new(StoredObject::encode(value, 1))
    }

    /// The reference's matching, written out plainly.
    fn model_rule(rule: &Value, a: &Attributes) -> bool {
        let list = |k: &str| -> Vec<String> { strings_at(rule, &format!("/{k}")) };
        let has = |k: &str, want: &str| list(k).iter().any(|x| x == "*" || x == want);
        if !has("verbs", &a.verb) {
            return false;
        }
        if !a.resource_request {
            return list("nonResourceURLs").iter().any(|u| {
                u == "*"
                    || *u == a.path
                    || (u.ends_with('*') && a.path.starts_with(&u[..u.len() - 1]))
            });
        }
        let full = if a.subresource.is_empty() {
            a.resource.clone()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        let res_ok = list("resources").iter().any(|r| {
            r == "*"
                || *r == full
                || (!a.subresource.is_empty() && *r == format!("*/{}", a.subresource))
        });
        let names = list("resourceNames");
        has("apiGroups", &a.api_group) && res_ok && (names.is_empty() || names.contains(&a.name))
    }

    /// A binding in the model: namespace ("" for cluster), whether it
    /// refers to a ClusterRole, the role, its (kind, name) subjects.
    type ModelBinding = (String, bool, String, Vec<(String, String)>);

    fn model(
        roles: &[(String, Vec<Value>)],
        bindings: &[ModelBinding],
        user: &UserInfo,
        a: &Attributes,
    ) -> bool {
        bindings.iter().any(|(ns, cluster_role, role, subjects)| {
            // A RoleBinding applies in its namespace; a ClusterRoleBinding
            // (namespace "") everywhere.
            if !ns.is_empty() && *ns != a.namespace {
                return false;
            }
            let applies = subjects.iter().any(|(kind, name)| match kind.as_str() {
                "User" => *name == user.name,
                "Group" => user.groups.contains(name),
                "ServiceAccount" => {
                    !ns.is_empty() && user.name == format!("system:serviceaccount:{ns}:{name}")
                }
                _ => false,
            });
            let rules = roles
                .iter()
                .find(|(n, _)| *n == format!("{}{role}", if *cluster_role { "" } else { ns }))
                .map(|(_, r)| r.clone())
                .unwrap_or_default();
            applies && rules.iter().any(|r| model_rule(r, a))
        })
    }

    fn attributes() -> impl Strategy<Value = Attributes> {
        let resource = (
            proptest::sample::select(&VERBS[..4]),
            proptest::sample::select(&GROUPS[..2]),
            proptest::sample::select(&["pods", "deployments"][..]),
            proptest::sample::select(&["", "status", "scale"][..]),
            proptest::sample::select(&["", "a", "c"][..]),
            proptest::sample::select(NAMESPACES),
        )
            .prop_map(|(v, g, r, s, n, ns)| Attributes::resource(v, g, r, ns).named(n).sub(s));
        let path = (
            proptest::sample::select(&VERBS[..4]),
            proptest::sample::select(&["/healthz", "/apis/apps", "/metrics", "/api"][..]),
        )
            .prop_map(|(v, p)| Attributes::non_resource(v, p));
        prop_oneof![resource, path]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn the_indexed_authorizer_agrees_with_the_model(
            role_rules in proptest::collection::vec(proptest::collection::vec(rule(), 0..3), 3),
            binding_specs in proptest::collection::vec(
                (proptest::sample::select(NAMESPACES), any::<bool>(), 0usize..4,
                 proptest::sample::subsequence(SUBJECTS.to_vec(), 0..=SUBJECTS.len())),
                0..5,
            ),
            user_kind in 0usize..3,
            attrs in attributes(),
        ) {
            // Three roles: `r0` to `r2`, each a ClusterRole and a Role in
            // every namespace with the same rules (index 3 is missing).
            let mut model_roles = Vec::new();
            let mut roles = Vec::new();
            let mut cluster_roles = Vec::new();
            for (i, rules) in role_rules.iter().enumerate() {
                let name = format!("r{i}");
                cluster_roles.push(stored(json!({"metadata": {"name": name}, "rules": rules})));
                model_roles.push((name.clone(), rules.clone()));
                for ns in &NAMESPACES[1..] {
                    roles.push(stored(json!({"metadata": {"name": name, "namespace": ns}, "rules": rules})));
                    model_roles.push((format!("{ns}{name}"), rules.clone()));
                }
            }
            let mut bindings = Vec::new();
            let mut cluster_bindings = Vec::new();
            let mut model_bindings = Vec::new();
            for (i, (ns, to_cluster_role, role, subjects)) in binding_specs.iter().enumerate() {
                let role_name = format!("r{role}");
                let kind = if *to_cluster_role || ns.is_empty() { "ClusterRole" } else { "Role" };
                let subjects_json: Vec<Value> = subjects
                    .iter()
                    .map(|(k, n)| json!({"kind": k, "name": n}))
                    .collect();
                let b = json!({
                    "metadata": {"name": format!("b{i}"), "namespace": ns},
                    "roleRef": {"kind": kind, "name": role_name},
                    "subjects": subjects_json,
                });
                if ns.is_empty() {
                    cluster_bindings.push(stored(b));
                } else {
                    bindings.push(stored(b));
                }
                model_bindings.push((
                    (*ns).to_owned(),
                    kind == "ClusterRole",
                    role_name,
                    subjects.iter().map(|(k, n)| ((*k).to_owned(), (*n).to_owned())).collect(),
                ));
            }
            let user = match user_kind {
                0 => UserInfo { name: "alice".into(), ..UserInfo::default() },
                1 => UserInfo { name: "bob".into(), groups: vec!["dev".into()], ..UserInfo::default() },
                _ => UserInfo::service_account("ns1", "robot", "u"),
            };
            let index = Index::build(&roles, &cluster_roles, &bindings, &cluster_bindings);
            let got = decide(&index, &user, &attrs).allowed();
            let want = model(&model_roles, &model_bindings, &user, &attrs);
            prop_assert_eq!(got, want, "attrs {:?}", attrs);
        }
    }

    #[test]
    fn masters_are_allowed_without_rules() {
        let user = UserInfo {
            name: "admin".into(),
            groups: vec![crate::auth::MASTERS.into()],
            ..UserInfo::default()
        };
        let a = Attributes::non_resource("delete", "/anything");
        assert!(decide(&Index::default(), &user, &a).allowed());
    }
}
