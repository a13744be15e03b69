//! The built-in kinds that code outside the registry recognises by name:
//! those with REST storage of their own in kube-apiserver (a namespace's
//! finalization, a pod's graceful deletion, the access reviews), and the
//! GroupResources that kube's admission plugins and controllers check
//! for. The registry is the one place that maps a served resource's group
//! and plural to one of them; everything else asks
//! [`ResourceDef::is`](super::ResourceDef::is).

/// A built-in kind with behaviour of its own outside the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BuiltinKind {
    Namespace,
    Pod,
    ServiceAccount,
    CustomResourceDefinition,
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
    SelfSubjectReview,
    SelfSubjectRulesReview,
    SelfSubjectAccessReview,
    LocalSubjectAccessReview,
    SubjectAccessReview,
}

/// Which built-in resource is which kind: `(group, plural, kind)`.
const KINDS: &[(&str, &str, BuiltinKind)] = &[
    ("", "namespaces", BuiltinKind::Namespace),
    ("", "pods", BuiltinKind::Pod),
    ("", "serviceaccounts", BuiltinKind::ServiceAccount),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        BuiltinKind::CustomResourceDefinition,
    ),
    ("rbac.authorization.k8s.io", "roles", BuiltinKind::Role),
    (
        "rbac.authorization.k8s.io",
        "clusterroles",
        BuiltinKind::ClusterRole,
    ),
    (
        "rbac.authorization.k8s.io",
        "rolebindings",
        BuiltinKind::RoleBinding,
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        BuiltinKind::ClusterRoleBinding,
    ),
    (
        "authentication.k8s.io",
        "selfsubjectreviews",
        BuiltinKind::SelfSubjectReview,
    ),
    (
        "authorization.k8s.io",
        "selfsubjectrulesreviews",
        BuiltinKind::SelfSubjectRulesReview,
    ),
    (
        "authorization.k8s.io",
        "selfsubjectaccessreviews",
        BuiltinKind::SelfSubjectAccessReview,
    ),
    (
        "authorization.k8s.io",
        "localsubjectaccessreviews",
        BuiltinKind::LocalSubjectAccessReview,
    ),
    (
        "authorization.k8s.io",
        "subjectaccessreviews",
        BuiltinKind::SubjectAccessReview,
    ),
];

/// The admission configuration resources, never sent to webhooks so a
/// broken webhook cannot lock out its own repair
/// (`IsExemptAdmissionConfigurationResource`, by group and resource
/// whether served or not).
const ADMISSION_CONFIGURATION: (&str, &[&str]) = (
    "admissionregistration.k8s.io",
    &[
        "validatingwebhookconfigurations",
        "mutatingwebhookconfigurations",
        "validatingadmissionpolicies",
        "validatingadmissionpolicybindings",
        "mutatingadmissionpolicies",
        "mutatingadmissionpolicybindings",
    ],
);

/// Whether `group`/`plural` is an admission configuration resource.
pub(crate) fn is_admission_configuration(group: &str, plural: &str) -> bool {
    let (admission_group, plurals) = ADMISSION_CONFIGURATION;
    group == admission_group && plurals.contains(&plural)
}

impl BuiltinKind {
    /// The kind of the built-in resource `group`/`plural`, if it is one of
    /// these.
    pub(crate) fn of(group: &str, plural: &str) -> Option<Self> {
        KINDS
            .iter()
            .find(|(g, p, _)| *g == group && *p == plural)
            .map(|(_, _, k)| *k)
    }

    /// Whether this is one of the four RBAC kinds.
    pub(crate) fn is_rbac(self) -> bool {
        matches!(
            self,
            Self::Role | Self::ClusterRole | Self::RoleBinding | Self::ClusterRoleBinding
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_found_by_its_group_and_plural_and_no_other() {
        for (group, plural, kind) in KINDS {
            assert_eq!(BuiltinKind::of(group, plural), Some(*kind));
        }
        assert_eq!(BuiltinKind::of("apps", "pods"), None);
        assert_eq!(BuiltinKind::of("", "configmaps"), None);
        let distinct: std::collections::HashSet<_> =
            KINDS.iter().map(|(_, _, k)| format!("{k:?}")).collect();
        assert_eq!(distinct.len(), KINDS.len());
    }
}
