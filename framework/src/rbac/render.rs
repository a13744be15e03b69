//! [`render`]: recorded [`Permissions`] as the objects of kubebuilder's
//! `config/rbac`: the manager role and its binding, the leader-election
//! Role and its binding. Names are kubebuilder's, before kustomize's
//! `namePrefix` and `namespace` (the service account `controller-manager`
//! in namespace `system`).

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{merge, Permissions, Rule, RuleScope, Verb};

/// Names and scope of the rendered roles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleOptions {
    /// The manager role's name (controller-gen's `roleName`).
    pub role_name: String,
    /// Render the manager's namespaced rules as a Role in this namespace,
    /// for an operator whose cache is restricted to it; rules only a
    /// ClusterRole can grant (cluster-scoped resources, URLs) stay in one.
    pub namespace: Option<String>,
    /// The leader-election Role's name.
    pub leader_election_role_name: String,
    /// The service account the bindings name.
    pub service_account: String,
    /// Its namespace.
    pub service_account_namespace: String,
}

impl Default for RoleOptions {
    /// kubebuilder's names: `manager-role`, `leader-election-role`, and the
    /// service account `controller-manager` in `system`.
    fn default() -> Self {
        Self {
            role_name: "manager-role".to_owned(),
            namespace: None,
            leader_election_role_name: "leader-election-role".to_owned(),
            service_account: "controller-manager".to_owned(),
            service_account_namespace: "system".to_owned(),
        }
    }
}

/// The rendered objects. An operator that is not restricted to a namespace
/// has a ClusterRole (even without rules) and no Role; a restricted one has
/// a Role, and a ClusterRole only for rules a Role cannot grant. The
/// leader-election objects exist when a Lease was recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoleManifests {
    /// The manager's cluster-wide rules.
    pub cluster_role: Option<ClusterRole>,
    /// Its binding to the service account.
    pub cluster_role_binding: Option<ClusterRoleBinding>,
    /// The manager's rules in its namespace ([`RoleOptions::namespace`]).
    pub role: Option<Role>,
    /// Its binding to the service account.
    pub role_binding: Option<RoleBinding>,
    /// The Lease rules of leader election, in the operator's namespace.
    pub leader_election_role: Option<Role>,
    /// Its binding to the service account.
    pub leader_election_role_binding: Option<RoleBinding>,
}

impl RoleManifests {
    /// Takes `verb` away from `resource` (`"jobs"`, `"memcacheds/status"`)
    /// in every role, leaving the rest of each rule granted: to show, in a
    /// test, that the operator fails with the 403 named without it.
    /// Whether any role granted it.
    pub fn remove_verb(&mut self, resource: &str, verb: &str) -> bool {
        let mut removed = false;
        let cluster = self.cluster_role.iter_mut().map(|r| &mut r.rules);
        let namespaced = [&mut self.role, &mut self.leader_election_role]
            .into_iter()
            .flatten()
            .map(|r| &mut r.rules);
        for rules in cluster.chain(namespaced).flatten() {
            removed |= remove_verb(rules, resource, verb);
        }
        removed
    }
}

/// [`RoleManifests::remove_verb`] on one list of rules: a rule naming
/// `resource` among others is split, so the others keep `verb`.
fn remove_verb(rules: &mut Vec<PolicyRule>, resource: &str, verb: &str) -> bool {
    let mut removed = false;
    let mut split = Vec::new();
    for rule in rules.iter_mut() {
        let names = rule.resources.as_deref().unwrap_or_default();
        if !names.iter().any(|r| r == resource) || !rule.verbs.iter().any(|v| v == verb) {
            continue;
        }
        removed = true;
        if names.len() > 1 {
            let mut others = rule.clone();
            if let Some(list) = others.resources.as_mut() {
                list.retain(|r| r != resource);
            }
            split.push(others);
            rule.resources = Some(vec![resource.to_owned()]);
        }
        rule.verbs.retain(|v| v != verb);
    }
    rules.retain(|r| !r.verbs.is_empty());
    rules.append(&mut split);
    removed
}

fn policy_rules(rules: Vec<Rule>) -> Vec<PolicyRule> {
    merge(rules).iter().map(Rule::to_policy_rule).collect()
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        ..ObjectMeta::default()
    }
}

fn binding_name(role: &str) -> String {
    // kubebuilder's names: manager-role -> manager-rolebinding.
    format!("{role}binding")
}

/// What a sharded controller's replicas do with the Leases of their ring:
/// read their own and the ring's, list the members, create, renew, and
/// delete their own on leaving (or a departed member's).
pub const SHARDING_LEASE_VERBS: [Verb; 5] = [
    Verb::Create,
    Verb::Delete,
    Verb::Get,
    Verb::List,
    Verb::Update,
];

/// Renders `permissions` as kubebuilder's RBAC objects (see the module
/// docs).
pub fn render(permissions: &Permissions, options: &RoleOptions) -> RoleManifests {
    let subject = Subject {
        kind: "ServiceAccount".to_owned(),
        name: options.service_account.clone(),
        namespace: Some(options.service_account_namespace.clone()),
        api_group: None,
    };
    // Through JSON: RoleRef's apiGroup is optional in some Kubernetes
    // versions' types and not in others; the JSON is the same.
    let role_ref = |kind: &str, name: &str| -> RoleRef {
        serde_json::from_value(serde_json::json!({
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": kind,
            "name": name,
        }))
        .unwrap_or_default()
    };
    let mut out = RoleManifests::default();

    let (namespaced, cluster): (Vec<Rule>, Vec<Rule>) = match &options.namespace {
        Some(_) => permissions
            .rules()
            .into_iter()
            .partition(|r| r.scope() == RuleScope::Namespaced),
        None => (Vec::new(), permissions.rules()),
    };
    // The manager role exists even with no rules (a project without
    // controllers yet), so the files that bind and list it stay valid.
    if !cluster.is_empty() || options.namespace.is_none() {
        out.cluster_role = Some(ClusterRole {
            metadata: meta(&options.role_name, None),
            rules: Some(policy_rules(cluster)),
            aggregation_rule: None,
        });
        out.cluster_role_binding = Some(ClusterRoleBinding {
            metadata: meta(&binding_name(&options.role_name), None),
            role_ref: role_ref("ClusterRole", &options.role_name),
            subjects: Some(vec![subject.clone()]),
        });
    }
    if let Some(ns) = &options.namespace {
        out.role = Some(Role {
            metadata: meta(&options.role_name, Some(ns)),
            rules: Some(policy_rules(namespaced)),
        });
        out.role_binding = Some(RoleBinding {
            metadata: meta(&binding_name(&options.role_name), Some(ns)),
            role_ref: role_ref("Role", &options.role_name),
            subjects: Some(vec![subject.clone()]),
        });
    }

    let lease = permissions.leader_election_lease();
    let sharded = permissions.sharded();
    if lease.is_some() || sharded {
        let leases = || Rule::resource("coordination.k8s.io", "leases");
        let rules = if sharded {
            // A sharding ring's member Leases are named after replicas
            // not known in advance: one rule for them all (what the
            // membership does: sharding::Sharding::rules), and the
            // leader's watch, if elected, pinned to its Lease.
            let mut rules = vec![leases().verbs(SHARDING_LEASE_VERBS)];
            rules.extend(lease.map(|lease| leases().names([lease]).verbs([Verb::Watch])));
            rules
        } else {
            // A create cannot be restricted by name; reading, renewing and
            // following it (a list or watch pinned by a `metadata.name`
            // field selector) can.
            let lease = lease.unwrap_or_default();
            vec![
                leases().verbs([Verb::Create]),
                leases()
                    .names([lease])
                    .verbs([Verb::Get, Verb::List, Verb::Watch, Verb::Update]),
            ]
        };
        let name = &options.leader_election_role_name;
        out.leader_election_role = Some(Role {
            metadata: meta(name, None),
            rules: Some(policy_rules(rules)),
        });
        out.leader_election_role_binding = Some(RoleBinding {
            metadata: meta(&binding_name(name), None),
            role_ref: role_ref("Role", name),
            subjects: Some(vec![subject]),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Namespace;

    use super::*;

    #[test]
    fn a_verb_removed_from_one_resource_stays_granted_on_the_others() {
        let rule = |resources: &[&str], verbs: &[&str]| PolicyRule {
            api_groups: Some(vec!["batch".to_owned()]),
            resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            ..PolicyRule::default()
        };
        let mut rbac = RoleManifests {
            cluster_role: Some(ClusterRole {
                rules: Some(vec![
                    rule(&["cronjobs", "jobs"], &["create", "list"]),
                    rule(&["jobs/status"], &["get"]),
                ]),
                ..ClusterRole::default()
            }),
            ..RoleManifests::default()
        };
        assert!(rbac.remove_verb("jobs", "create"));
        assert!(!rbac.remove_verb("jobs", "create"), "already gone");
        assert!(rbac.remove_verb("jobs/status", "get"));
        let rules = rbac.cluster_role.and_then(|r| r.rules).unwrap_or_default();
        assert_eq!(
            rules,
            [
                rule(&["jobs"], &["list"]),
                rule(&["cronjobs"], &["create", "list"])
            ]
        );
    }

    fn permissions() -> Permissions {
        let p = Permissions::new();
        p.add_controller(
            "deployment",
            vec![
                Rule::for_watched::<Deployment>(),
                Rule::for_watched::<Namespace>(),
            ],
        );
        p.add_rule(Rule::url("/metrics").verbs([Verb::Get]));
        p
    }

    #[test]
    fn a_cluster_wide_operator_gets_one_cluster_role() {
        let p = permissions();
        p.set_leader_election_lease("abc.example.com");
        let out = render(&p, &RoleOptions::default());
        let role = out.cluster_role.expect("cluster role");
        assert_eq!(role.metadata.name.as_deref(), Some("manager-role"));
        let rules = role.rules.unwrap();
        assert_eq!(rules.len(), 3, "{rules:?}");
        assert_eq!(
            rules[0].non_resource_urls.as_deref(),
            Some(&["/metrics".to_owned()][..])
        );
        assert!(out.role.is_none() && out.role_binding.is_none());
        let binding = out.cluster_role_binding.expect("binding");
        assert_eq!(
            binding.metadata.name.as_deref(),
            Some("manager-rolebinding")
        );
        assert_eq!(binding.role_ref.name, "manager-role");
        let subject = &binding.subjects.unwrap()[0];
        assert_eq!(
            (subject.name.as_str(), subject.namespace.as_deref()),
            ("controller-manager", Some("system"))
        );

        let election = out.leader_election_role.expect("leader election role");
        let rules = election.rules.unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].verbs, ["create"]);
        assert_eq!(rules[0].resource_names, None);
        assert_eq!(rules[1].verbs, ["get", "list", "update", "watch"]);
        assert_eq!(
            rules[1].resource_names.as_deref(),
            Some(&["abc.example.com".to_owned()][..])
        );
        assert_eq!(
            out.leader_election_role_binding.unwrap().role_ref.name,
            "leader-election-role"
        );
    }

    #[test]
    fn a_sharded_controllers_leases_are_granted_in_the_lease_role() {
        for elected in [false, true] {
            let p = Permissions::new();
            p.set_sharded();
            if elected {
                p.set_leader_election_lease("abc.example.com");
            }
            let out = render(&p, &RoleOptions::default());
            let rules = out.leader_election_role.expect("lease role").rules.unwrap();
            assert_eq!(
                rules[0].verbs,
                ["create", "delete", "get", "list", "update"]
            );
            assert_eq!(rules[0].resource_names, None);
            // Elected too: only the leader's watch is left to grant, by name.
            assert_eq!(rules.len(), 1 + usize::from(elected), "{rules:?}");
            if elected {
                assert_eq!(rules[1].verbs, ["watch"]);
            }
        }
    }

    #[test]
    fn a_namespaced_operator_gets_a_role_and_keeps_cluster_rules_apart() {
        let out = render(
            &permissions(),
            &RoleOptions {
                namespace: Some("shop".to_owned()),
                ..RoleOptions::default()
            },
        );
        let role = out.role.expect("role");
        assert_eq!(role.metadata.namespace.as_deref(), Some("shop"));
        let rules = role.rules.unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(
            rules[0].resources.as_deref(),
            Some(&["deployments".to_owned()][..])
        );
        assert_eq!(
            out.role_binding.unwrap().metadata.namespace.as_deref(),
            Some("shop")
        );
        // Namespaces and /metrics: only a ClusterRole can grant them.
        let cluster = out.cluster_role.expect("cluster role").rules.unwrap();
        assert_eq!(cluster.len(), 2, "{cluster:?}");
        assert!(out.leader_election_role.is_none(), "no lease recorded");
    }

    #[test]
    fn an_operator_without_controllers_still_has_its_role_and_binding() {
        let out = render(&Permissions::new(), &RoleOptions::default());
        assert_eq!(out.cluster_role.unwrap().rules, Some(vec![]));
        assert!(out.cluster_role_binding.is_some());
    }
}
