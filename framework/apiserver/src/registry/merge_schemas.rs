//! Which strategic-merge and apply schema each built-in kind has: the
//! patch engine knows the schemas (`machinery::patch`), the registry which
//! kind uses which.

use crate::machinery::patch::{merge_schema_of, Kind as MergeKind, MergeSchema};

/// `(group, kinds, schema)`, the core group as `""`.
const SCHEMAS: &[(&str, &[&str], MergeKind)] = &[
    ("", &["Pod"], MergeKind::Pod),
    (
        "apps",
        &["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"],
        MergeKind::Workload,
    ),
    ("batch", &["Job"], MergeKind::Job),
    ("batch", &["CronJob"], MergeKind::CronJob),
    ("", &["Service"], MergeKind::Service),
    ("", &["ServiceAccount"], MergeKind::ServiceAccount),
    ("", &["Namespace"], MergeKind::Namespace),
    ("", &["ConfigMap"], MergeKind::ConfigMap),
    ("", &["Secret"], MergeKind::Secret),
    ("", &["Event"], MergeKind::CoreEvent),
    ("events.k8s.io", &["Event"], MergeKind::Event),
    (
        "apiextensions.k8s.io",
        &["CustomResourceDefinition"],
        MergeKind::CustomResourceDefinition,
    ),
    (
        "admissionregistration.k8s.io",
        &[
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
        ],
        MergeKind::WebhookConfiguration,
    ),
    (
        "admissionregistration.k8s.io",
        &["ValidatingAdmissionPolicy"],
        MergeKind::AdmissionPolicy,
    ),
    (
        "admissionregistration.k8s.io",
        &["ValidatingAdmissionPolicyBinding"],
        MergeKind::AdmissionPolicyBinding,
    ),
    (
        "rbac.authorization.k8s.io",
        &["Role", "ClusterRole"],
        MergeKind::Role,
    ),
    (
        "rbac.authorization.k8s.io",
        &["RoleBinding", "ClusterRoleBinding"],
        MergeKind::RoleBinding,
    ),
];

/// The merge schema of the built-in kind `group`/`kind`. Unknown kinds get
/// a schema that knows only `metadata`, which is also the right base for
/// custom resources.
pub(crate) fn builtin_merge_schema(group: &str, kind: &str) -> &'static dyn MergeSchema {
    let found = SCHEMAS
        .iter()
        .find(|(g, kinds, _)| *g == group && kinds.contains(&kind));
    merge_schema_of(found.map_or(MergeKind::Generic, |(_, _, k)| *k))
}
