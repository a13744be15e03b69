//! RBAC escalation prevention, as kube-apiserver's RBAC storage does it
//! (`pkg/registry/rbac/*/policybased`, `escalation_check.go`,
//! `policy_comparator.go`): a Role or ClusterRole write needs the verb
//! `escalate` or every permission it grants; a RoleBinding or
//! ClusterRoleBinding write needs the verb `bind` on the role or every
//! permission of the role. `system:masters` is exempt; a write that only
//! changes garbage-collection fields is not checked.
//!
//! The check wraps the request's admission chain ([`Guarded`]) and runs
//! on the object about to be stored, before validating admission, beside
//! the ownerReferences permission check ([`crate::admission::owner_refs`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use crate::admission::attributes::{Admission, Attributes, Operation};
use crate::auth::attributes::Attributes as AuthzAttributes;
use crate::auth::rbac::{self, Decision, Rule, GROUP};
use crate::auth::UserInfo;
use crate::machinery::status::{ApiError, Details};
use crate::registry::state::Shared;
use crate::registry::{BuiltinKind, ResourceDef};

/// The request's admission chain with the escalation check in front of
/// validating admission, and for a write that creates although it is not
/// a create, the `create` authorization after it (kube's RBAC storage
/// checks escalation on the object being built; `withAuthorization` wraps
/// the create validation that follows).
#[derive(Clone)]
pub(crate) struct Guarded<'a> {
    pub inner: &'a dyn Admission,
    pub shared: &'a Shared,
    /// The identity making the request (after impersonation).
    pub user: Option<Arc<UserInfo>>,
    /// A PUT or apply that creates: authorize `create` too.
    pub authorize_create: bool,
}

impl Guarded<'_> {
    /// This chain for a PUT or apply that creates its object.
    pub fn creating(&self) -> Self {
        Self {
            authorize_create: true,
            ..self.clone()
        }
    }
}

impl Admission for Guarded<'_> {
    fn mutate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        self.inner.mutate(attrs, object, old)
    }

    fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        if let (Some(user), Some(object)) = (&self.user, object) {
            check(self.shared, user, attrs, object, old)?;
            crate::admission::owner_refs::check(self.shared, user, attrs, object, old)?;
        }
        if let (Some(user), true, Operation::Create) =
            (&self.user, self.authorize_create, attrs.operation)
        {
            crate::auth::authz::check_create(
                self.shared,
                user,
                &attrs.def.group,
                &attrs.def.plural,
                attrs.namespace,
                attrs.name,
            )?;
        }
        self.inner.validate(attrs, object, old)
    }

    fn convert(
        &self,
        def: &ResourceDef,
        object: Value,
        api_version: &str,
    ) -> Result<Value, ApiError> {
        self.inner.convert(def, object, api_version)
    }
}

/// Which RBAC kind a write is to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

fn kind_of(def: &ResourceDef) -> Option<Kind> {
    match def.builtin_kind()? {
        BuiltinKind::Role => Some(Kind::Role),
        BuiltinKind::ClusterRole => Some(Kind::ClusterRole),
        BuiltinKind::RoleBinding => Some(Kind::RoleBinding),
        BuiltinKind::ClusterRoleBinding => Some(Kind::ClusterRoleBinding),
        _ => None,
    }
}

/// Whether `new` differs from `old` only in the fields the garbage
/// collector writes (`IsOnlyMutatingGCFields`), bookkeeping aside.
fn only_gc_fields(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "ownerReferences",
                "finalizers",
                "resourceVersion",
                "managedFields",
                "generation",
            ] {
                meta.remove(k);
            }
        }
        v
    };
    strip(new) == strip(old)
}

/// Runs the escalation check on a write of `object`.
fn check(
    shared: &Shared,
    user: &UserInfo,
    attrs: &Attributes<'_>,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let Some(kind) = kind_of(attrs.def) else {
        return Ok(());
    };
    if attrs.operation == Operation::Delete || attrs.subresource.is_some() || user.is_master() {
        return Ok(());
    }
    if let (Operation::Update, Some(old)) = (attrs.operation, old) {
        if only_gc_fields(object, old) {
            return Ok(());
        }
    }
    let namespace = match kind {
        Kind::Role | Kind::RoleBinding => attrs.namespace,
        Kind::ClusterRole | Kind::ClusterRoleBinding => "",
    };
    let name = crate::machinery::util::meta_str(object, "name").unwrap_or(attrs.name);
    let index = shared.rbac.index(&shared.storage);
    let allowed = |authz: AuthzAttributes| {
        matches!(
            crate::auth::authz::authorize(shared, user, &authz),
            Decision::Allow(_)
        )
    };
    let grants = match kind {
        Kind::Role | Kind::ClusterRole => {
            // `RoleEscalationAuthorized`: the request's own resource and
            // name (none on a create).
            let escalate = AuthzAttributes {
                verb: "escalate".to_owned(),
                resource_request: true,
                namespace: namespace.to_owned(),
                api_group: GROUP.to_owned(),
                api_version: "*".to_owned(),
                resource: attrs.def.plural.clone(),
                name: if attrs.operation == Operation::Update {
                    attrs.name.to_owned()
                } else {
                    String::new()
                },
                ..AuthzAttributes::default()
            };
            if allowed(escalate) {
                return Ok(());
            }
            let rules = Rule::all_of(object);
            let aggregation_changed = kind == Kind::ClusterRole
                && object.get("aggregationRule") != old.and_then(|o| o.get("aggregationRule"))
                && object.get("aggregationRule").is_some_and(|a| !a.is_null());
            if aggregation_changed {
                let owner = rbac::rules_for(&index, user, namespace);
                if !covers(&owner, &full_authority()).is_empty() {
                    return Err(forbidden(
                        attrs.def,
                        name,
                        "must have cluster-admin privileges to use the aggregationRule".to_owned(),
                    ));
                }
            }
            rules
        }
        Kind::RoleBinding | Kind::ClusterRoleBinding => {
            let role_kind = object
                .pointer("/roleRef/kind")
                .and_then(Value::as_str)
                .unwrap_or("");
            let role_name = object
                .pointer("/roleRef/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let role_group = object
                .pointer("/roleRef/apiGroup")
                .and_then(Value::as_str)
                .unwrap_or("");
            let resource = match role_kind {
                "Role" => Some("roles"),
                "ClusterRole" => Some("clusterroles"),
                _ => None,
            };
            // `BindingAuthorized`: `bind` on the role, in the binding's
            // namespace ("" for a ClusterRoleBinding).
            if let Some(resource) = resource {
                let bind = AuthzAttributes {
                    verb: "bind".to_owned(),
                    resource_request: true,
                    namespace: namespace.to_owned(),
                    api_group: role_group.to_owned(),
                    resource: resource.to_owned(),
                    name: role_name.to_owned(),
                    ..AuthzAttributes::default()
                };
                if allowed(bind) {
                    return Ok(());
                }
            }
            role_rules(shared, role_kind, role_name, namespace)?
        }
    };
    let owner = rbac::rules_for(&index, user, namespace);
    let missing = covers(&owner, &grants);
    if missing.is_empty() {
        return Ok(());
    }
    let described: BTreeSet<String> = compact(missing).iter().map(compact_string).collect();
    let mut message = format!(
        "user \"{}\" (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        go_quoted(&user.groups),
        described.into_iter().collect::<Vec<_>>().join("\n")
    );
    let errors = rbac::resolution_errors(&index, user, namespace);
    if !errors.is_empty() {
        message.push_str(&format!(
            "; resolution errors: [{}]",
            rbac::aggregate(&errors)
        ));
    }
    Err(forbidden(attrs.def, name, message))
}

/// The rules of the role a binding refers to, or the registry's 404
/// (`GetRoleReferenceRules`).
fn role_rules(
    shared: &Shared,
    kind: &str,
    name: &str,
    namespace: &str,
) -> Result<Vec<Rule>, ApiError> {
    let (plural, key) = match kind {
        "Role" => ("roles", (namespace.to_owned(), name.to_owned())),
        "ClusterRole" => ("clusterroles", (String::new(), name.to_owned())),
        other => {
            return Err(ApiError::internal(format!(
                "unsupported role reference kind: \"{other}\""
            )))
        }
    };
    let res = crate::registry::ResKey::new(GROUP, plural);
    let found = shared.storage.lock().get(&res, &key);
    match found {
        Some(role) => Ok(Rule::all_of(&role.value())),
        None => Err(ApiError::new(
            404,
            "NotFound",
            format!("{plural}.{GROUP} \"{name}\" not found"),
        )
        .with_details(Details {
            name: Some(name.to_owned()),
            group: Some(GROUP.to_owned()),
            kind: Some(plural.to_owned()),
            ..Details::default()
        })),
    }
}

/// `NewForbidden` for the RBAC object being written.
fn forbidden(def: &ResourceDef, name: &str, reason: String) -> ApiError {
    ApiError::forbidden(format!(
        "{}.{GROUP} \"{name}\" is forbidden: {reason}",
        def.plural
    ))
    .with_details(Details {
        name: Some(name.to_owned()),
        group: Some(GROUP.to_owned()),
        kind: Some(def.plural.clone()),
        ..Details::default()
    })
}

/// `*` on `*.*` and the URL `*`: what setting an aggregationRule needs.
fn full_authority() -> Vec<Rule> {
    let all = vec!["*".to_owned()];
    vec![
        Rule {
            verbs: all.clone(),
            api_groups: all.clone(),
            resources: all.clone(),
            ..Rule::default()
        },
        Rule {
            verbs: all.clone(),
            non_resource_urls: all,
            ..Rule::default()
        },
    ]
}

/// One rule per (group, resource, verb[, name]) and per (URL, verb)
/// (`BreakdownRule`).
fn breakdown(rule: &Rule) -> Vec<Rule> {
    let one = |s: &String| vec![s.clone()];
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = Rule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..Rule::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &rule.resource_names {
                        out.push(Rule {
                            resource_names: one(name),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(Rule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..Rule::default()
            });
        }
    }
    out
}

fn has(list: &[String], item: &str) -> bool {
    list.iter().any(|x| x == item)
}

fn has_all(list: &[String], items: &[String]) -> bool {
    items.iter().all(|i| has(list, i))
}

fn resources_cover(owner: &[String], servant: &[String]) -> bool {
    if has(owner, "*") || has_all(owner, servant) {
        return true;
    }
    servant.iter().all(|r| {
        has(owner, r)
            || r.split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

fn urls_cover(owner: &[String], servant: &[String]) -> bool {
    servant.iter().all(|url| {
        owner.iter().any(|o| {
            o == url
                || o.strip_suffix('*')
                    .is_some_and(|prefix| url.starts_with(prefix))
        })
    })
}

/// `ruleCovers`: whether one held rule covers a broken-down rule.
fn rule_covers(owner: &Rule, sub: &Rule) -> bool {
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, "*") || has_all(&owner.api_groups, &sub.api_groups);
    let names = owner.resource_names.is_empty()
        || (!sub.resource_names.is_empty() && has_all(&owner.resource_names, &sub.resource_names));
    verbs
        && groups
        && resources_cover(&owner.resources, &sub.resources)
        && names
        && urls_cover(&owner.non_resource_urls, &sub.non_resource_urls)
}

/// The broken-down parts of `rules` no rule of `owner` covers (`Covers`).
fn covers(owner: &[Rule], rules: &[Rule]) -> Vec<Rule> {
    rules
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect()
}

/// `CompactRules`: rules on one group and resource (and at most one
/// name), differing only in verbs, merged into one.
fn compact(rules: Vec<Rule>) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    let mut simple: Vec<Rule> = Vec::new();
    for rule in rules {
        let is_simple = rule.api_groups.len() == 1
            && rule.resources.len() == 1
            && rule.non_resource_urls.is_empty()
            && rule.resource_names.len() <= 1;
        if !is_simple {
            out.push(rule);
            continue;
        }
        let same = simple.iter_mut().find(|s| {
            s.api_groups == rule.api_groups
                && s.resources == rule.resources
                && s.resource_names == rule.resource_names
        });
        match same {
            Some(existing) => {
                for verb in rule.verbs {
                    if !existing.verbs.contains(&verb) {
                        existing.verbs.push(verb);
                    }
                }
            }
            None => simple.push(rule),
        }
    }
    out.extend(simple);
    out
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn go_quoted(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| {
            let escaped = s.replace('\\', "\\\\").replace('"', "\\\"");
            format!("\"{escaped}\"")
        })
        .collect();
    format!("[{}]", quoted.join(" "))
}

/// `CompactString`: `{APIGroups:["apps"], Resources:["deployments"],
/// Verbs:["get"]}` with only the non-empty lists.
fn compact_string(rule: &Rule) -> String {
    let parts: Vec<String> = [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ]
    .into_iter()
    .filter(|(_, list)| !list.is_empty())
    .map(|(label, list)| format!("{label}:{}", go_quoted(list)))
    .collect();
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Rule {
        let v = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect();
        Rule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            ..Rule::default()
        }
    }

    #[test]
    fn covering_follows_the_policy_comparator() {
        let owner = [
            rule(&["get", "list"], &[""], &["configmaps"]),
            rule(&["*"], &["apps"], &["*/scale"]),
        ];
        assert!(covers(&owner, &[rule(&["get"], &[""], &["configmaps"])]).is_empty());
        assert!(covers(
            &owner,
            &[rule(&["patch"], &["apps"], &["deployments/scale"])]
        )
        .is_empty());
        // `pods` is not `pods/status`, and a named grant does not cover
        // an unnamed one.
        let missing = covers(
            &owner,
            &[rule(&["get", "delete"], &["", "apps"], &["configmaps"])],
        );
        let described: Vec<String> = compact(missing).iter().map(compact_string).collect();
        assert_eq!(
            described,
            [
                r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}"#,
                r#"{APIGroups:["apps"], Resources:["configmaps"], Verbs:["get" "delete"]}"#,
            ]
        );
        let named = Rule {
            resource_names: vec!["a".into()],
            ..rule(&["get"], &[""], &["secrets"])
        };
        assert!(!covers(
            std::slice::from_ref(&named),
            &[rule(&["get"], &[""], &["secrets"])]
        )
        .is_empty());
        assert!(covers(&[rule(&["get"], &[""], &["secrets"])], &[named]).is_empty());
        let urls = Rule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/apis/*".into()],
            ..Rule::default()
        };
        let want = Rule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/apis/apps".into()],
            ..Rule::default()
        };
        assert!(covers(&[urls], std::slice::from_ref(&want)).is_empty());
        assert_eq!(
            compact_string(&covers(&owner, &[want])[0]),
            r#"{NonResourceURLs:["/apis/apps"], Verbs:["get"]}"#
        );
    }
}
