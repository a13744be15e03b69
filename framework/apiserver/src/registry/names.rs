//! Which rule each served kind's `metadata.name` follows: the name function
//! kube-apiserver's validation for the kind hands `ValidateObjectMeta`
//! (`pkg/apis/*/validation`, release-1.33), kept as a table.

use super::def::ResourceDef;
use crate::machinery::util::NameRule;

/// The built-in kinds whose names are not DNS subdomains, with the
/// upstream function that says how they are checked. Every other built-in
/// kind served here is validated with `NameIsDNSSubdomain` (pods,
/// configmaps, secrets, serviceaccounts, nodes, the apps and batch
/// workloads, controllerrevisions, leases, events.k8s.io Events, the
/// admissionregistration kinds, CRDs, whose `<plural>.<group>` rule
/// `schema/crd.rs` adds), and so is every custom resource
/// (apiextensions-apiserver's `customResourceStrategy.Validate`).
const NAME_RULES: &[(&str, &str, NameRule)] = &[
    // core `ValidateNamespaceName` = `NameIsDNSLabel`.
    ("", "namespaces", NameRule::Label),
    // core `ValidateServiceName` = `NameIsDNS1035Label`.
    ("", "services", NameRule::Dns1035),
    // core/v1 Events: `legacyValidateEvent` checks no name (only
    // events.k8s.io/v1 requests get `NameIsDNSSubdomain`), which leaves
    // the generic store's path-segment check.
    ("", "events", NameRule::PathSegment),
    // policy `ValidatePodDisruptionBudget` checks the spec alone.
    ("policy", "poddisruptionbudgets", NameRule::PathSegment),
    // rbac `ValidateRBACName` = `path.IsValidPathSegmentName`.
    ("rbac.authorization.k8s.io", "roles", NameRule::Rbac),
    ("rbac.authorization.k8s.io", "rolebindings", NameRule::Rbac),
    ("rbac.authorization.k8s.io", "clusterroles", NameRule::Rbac),
    (
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        NameRule::Rbac,
    ),
];

impl ResourceDef {
    /// How this kind's names are validated.
    pub fn name_rule(&self) -> NameRule {
        if self.is_custom() {
            return NameRule::Subdomain;
        }
        NAME_RULES
            .iter()
            .find(|(group, plural, _)| *group == self.group && *plural == self.plural)
            .map_or(NameRule::Subdomain, |(_, _, rule)| *rule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn each_kind_has_kube_apiservers_name_rule() {
        let reg = Registry::with_builtins();
        for (group, version, plural, want) in [
            ("", "v1", "namespaces", NameRule::Label),
            ("", "v1", "services", NameRule::Dns1035),
            ("", "v1", "events", NameRule::PathSegment),
            ("events.k8s.io", "v1", "events", NameRule::Subdomain),
            (
                "policy",
                "v1",
                "poddisruptionbudgets",
                NameRule::PathSegment,
            ),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "clusterroles",
                NameRule::Rbac,
            ),
            ("", "v1", "pods", NameRule::Subdomain),
            ("", "v1", "configmaps", NameRule::Subdomain),
            ("batch", "v1", "cronjobs", NameRule::Subdomain),
            ("apps", "v1", "deployments", NameRule::Subdomain),
            ("coordination.k8s.io", "v1", "leases", NameRule::Subdomain),
            (
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                NameRule::Subdomain,
            ),
        ] {
            let def = reg.get(group, version, plural).expect("served");
            assert_eq!(def.name_rule(), want, "{group}/{plural}");
        }
        // Every entry of the table names a served kind.
        for (group, plural, _) in NAME_RULES {
            assert!(
                reg.all()
                    .iter()
                    .any(|d| d.group == *group && d.plural == *plural),
                "{group}/{plural}"
            );
        }
    }
}
