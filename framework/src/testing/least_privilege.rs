//! Least privilege, checked: what a [`PermissionAudit`] of an operator's
//! run says its RBAC lacks or grants in excess, as one list, and
//! [`assert_least_privilege`] for tests.

use kubeforge_apiserver::PermissionAudit;

/// Verbs every kubeforge operator is granted that one replica's short run
/// may not use, as `(resource, verb)`: the event recorder's `patch` of a
/// repeated event's series, and the `watch` of the leader-election Lease
/// that follows it while another replica leads. [`least_privilege_findings`]
/// tolerates them unused, in a used rule or as a whole rule granting
/// nothing else (with a sharded controller, the leader-election Lease's
/// named rule is left with only its `watch`: the ring's rule grants the
/// rest).
pub const NOT_EXERCISED_BY_ONE_REPLICA: [(&str, &str); 2] =
    [("events", "patch"), ("leases", "watch")];

/// What keeps `audit` from proving least privilege, one finding per line
/// of the audit's own rule syntax: requests denied (rules missing), rules
/// granted and never used, and verbs of used rules never used (but
/// [`NOT_EXERCISED_BY_ONE_REPLICA`], in either). Empty when the identity used
/// exactly what it was granted.
pub fn least_privilege_findings(audit: &PermissionAudit) -> Vec<String> {
    let mut findings = Vec::new();
    for rule in &audit.denied {
        findings.push(format!("missing: {}", one_line(&rule.to_string())));
    }
    for rule in &audit.unused {
        let granted = &rule.rule;
        if !granted.verbs.is_empty()
            && granted
                .verbs
                .iter()
                .all(|v| tolerated(&granted.resources, v))
        {
            continue;
        }
        findings.push(format!("never used: {}", one_line(&rule.to_string())));
    }
    for verbs in &audit.unused_verbs {
        if verbs.wildcard_allowed.is_some() {
            findings.push(format!("a wildcard: {}", one_line(&verbs.to_string())));
            continue;
        }
        for rule in &verbs.unused {
            let idle: Vec<&str> = rule
                .verbs
                .iter()
                .map(String::as_str)
                .filter(|verb| !tolerated(&rule.resources, verb))
                .collect();
            if !idle.is_empty() {
                findings.push(format!(
                    "verbs never used: {} {idle:?} (granted by {})",
                    rule.resources.join(","),
                    verbs.granted_by
                ));
            }
        }
    }
    findings
}

/// Asserts that the audited identity made requests and that
/// [`least_privilege_findings`] has none; the panic message lists the
/// findings and prints the whole audit.
///
/// ```no_run
/// # async fn demo(server: kubeforge::testing::ApiServer) {
/// use kubeforge::testing::{assert_least_privilege, operator_user};
///
/// // ... after the operator ran a full cycle as its service account:
/// assert_least_privilege(&server.permission_audit(&operator_user()));
/// # }
/// ```
#[track_caller]
pub fn assert_least_privilege(audit: &PermissionAudit) {
    assert!(
        !audit.requests.is_empty(),
        "{} made no request: nothing proves its RBAC",
        audit.user
    );
    let findings = least_privilege_findings(audit);
    assert!(
        findings.is_empty(),
        "the RBAC of {} is not least privilege:\n  {}\n{audit}",
        audit.user,
        findings.join("\n  ")
    );
}

/// Whether every resource of a rule is one whose unused `verb` is
/// tolerated.
fn tolerated(resources: &[String], verb: &str) -> bool {
    !resources.is_empty()
        && resources
            .iter()
            .all(|resource| NOT_EXERCISED_BY_ONE_REPLICA.contains(&(resource.as_str(), verb)))
}

/// A rule as the audit prints it (a YAML list item after `#` comments),
/// on one line.
fn one_line(text: &str) -> String {
    text.lines()
        .map(|l| l.trim_start_matches("- ").trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use kubeforge_apiserver::{AuditRule, AuditedRequest, PolicyRule, UnusedVerbs};

    use super::*;

    fn rule(group: &str, resource: &str, verbs: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            api_groups: vec![group.to_owned()],
            resources: vec![resource.to_owned()],
            ..PolicyRule::default()
        }
    }

    fn idle(resource: &str, verbs: &[&str]) -> UnusedVerbs {
        UnusedVerbs {
            namespace: None,
            granted_by: "ClusterRoleBinding \"b\" of ClusterRole \"r\"".to_owned(),
            granted: rule("", resource, &["create", "get", "patch", "watch"]),
            unused: vec![rule("", resource, verbs)],
            wildcard_allowed: None,
        }
    }

    fn audit() -> PermissionAudit {
        PermissionAudit {
            user: "system:serviceaccount:system:controller-manager".to_owned(),
            requests: vec![AuditedRequest {
                verb: "list".to_owned(),
                group: String::new(),
                resource: "configmaps".to_owned(),
                subresource: String::new(),
                namespace: String::new(),
                named: false,
                path: None,
                allowed: 1,
                denied: 0,
            }],
            denied: Vec::new(),
            unused: Vec::new(),
            unused_verbs: Vec::new(),
            dropped: 0,
        }
    }

    #[test]
    fn the_verbs_one_replica_cannot_exercise_are_tolerated_and_no_others() {
        let mut audit = audit();
        audit.unused_verbs = vec![idle("events", &["patch"]), idle("leases", &["watch"])];
        assert!(least_privilege_findings(&audit).is_empty());
        assert_least_privilege(&audit);

        audit.unused_verbs.push(idle("leases", &["patch", "watch"]));
        audit.unused_verbs.push(idle("events", &["get"]));
        assert_eq!(
            least_privilege_findings(&audit),
            [
                r#"verbs never used: leases ["patch"] (granted by ClusterRoleBinding "b" of ClusterRole "r")"#,
                r#"verbs never used: events ["get"] (granted by ClusterRoleBinding "b" of ClusterRole "r")"#,
            ]
        );
    }

    #[test]
    fn a_whole_rule_of_verbs_one_replica_cannot_exercise_is_tolerated() {
        let unused = |verbs: &[&str]| AuditRule {
            namespace: Some("system".to_owned()),
            granted_by: Some("RoleBinding \"l\" of Role \"l\"".to_owned()),
            rule: rule("coordination.k8s.io", "leases", verbs),
        };
        let mut audit = audit();
        audit.unused = vec![unused(&["watch"])];
        assert!(least_privilege_findings(&audit).is_empty());
        audit.unused = vec![unused(&["get", "watch"])];
        assert_eq!(least_privilege_findings(&audit).len(), 1);
    }

    #[test]
    fn missing_and_unused_rules_and_wildcards_are_findings() {
        let mut audit = audit();
        audit.denied = vec![AuditRule {
            namespace: Some("default".to_owned()),
            granted_by: None,
            rule: rule("apps", "deployments", &["create"]),
        }];
        audit.unused = vec![AuditRule {
            namespace: None,
            granted_by: Some("ClusterRoleBinding \"b\" of ClusterRole \"r\"".to_owned()),
            rule: rule("", "secrets", &["get"]),
        }];
        let mut wildcard = idle("pods", &[]);
        wildcard.granted = rule("", "pods", &["*"]);
        wildcard.wildcard_allowed = Some(vec![rule("", "pods", &["list"])]);
        audit.unused_verbs = vec![wildcard];
        let findings = least_privilege_findings(&audit);
        assert_eq!(findings.len(), 3, "{findings:#?}");
        assert_eq!(
            findings[0],
            r#"missing: # in namespace default; apiGroups: ["apps"]; resources: ["deployments"]; verbs: ["create"]"#
        );
        assert!(findings[1].starts_with("never used: # cluster-wide, granted by"));
        assert!(findings[1].ends_with(r#"resources: ["secrets"]; verbs: ["get"]"#));
        assert!(findings[2].starts_with("a wildcard: "), "{}", findings[2]);
        assert!(
            findings[2].contains(r#"verbs: ["list"]"#),
            "{}",
            findings[2]
        );
    }

    #[test]
    #[should_panic(expected = "made no request")]
    fn an_audit_of_nothing_proves_nothing() {
        let mut audit = audit();
        audit.requests.clear();
        assert_least_privilege(&audit);
    }
}
