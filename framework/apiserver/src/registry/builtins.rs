//! The server's one list of the built-in kinds it serves, in discovery
//! order (groups as kube-apiserver orders them), each a [`Builtin`] in its
//! `registry/<group>/<kind>.rs`; and the served definitions made from
//! them.

use super::def::{Behavior, ResourceDef, ScalePaths};
use super::strategy::Builtin;
use super::{
    admissionregistration as admission, apiextensions, apps, authentication, authorization, batch,
    coordination, core, discovery, events, policy, rbac,
};

/// Every built-in kind, in discovery order.
static KINDS: &[&Builtin] = &[
    &core::configmap::CONFIGMAP,
    &core::event::CORE_EVENT,
    &core::namespace::NAMESPACE,
    &core::node::NODE,
    &core::pod::POD,
    &core::secret::SECRET,
    &core::serviceaccount::SERVICEACCOUNT,
    &core::service::SERVICE,
    &apps::daemonset::DAEMONSET,
    &apps::controllerrevision::CONTROLLERREVISION,
    &apps::deployment::DEPLOYMENT,
    &apps::replicaset::REPLICASET,
    &apps::statefulset::STATEFULSET,
    &events::event::EVENTS_EVENT,
    &batch::cronjob::CRONJOB,
    &batch::job::JOB,
    &policy::poddisruptionbudget::PDB,
    &rbac::clusterrolebinding::CLUSTERROLEBINDING,
    &rbac::clusterrole::CLUSTERROLE,
    &rbac::rolebinding::ROLEBINDING,
    &rbac::role::ROLE,
    &admission::mutatingwebhookconfiguration::MWC,
    &admission::validatingwebhookconfiguration::VWC,
    &admission::validatingadmissionpolicy::VAP,
    &admission::validatingadmissionpolicybinding::VAP_BINDING,
    &apiextensions::customresourcedefinition::CRD,
    &authentication::SELF_SUBJECT_REVIEW,
    &authorization::LOCAL_SUBJECT_ACCESS_REVIEW,
    &authorization::SELF_SUBJECT_ACCESS_REVIEW,
    &authorization::SELF_SUBJECT_RULES_REVIEW,
    &authorization::SUBJECT_ACCESS_REVIEW,
    &coordination::lease::LEASE,
    &discovery::endpointslice::ENDPOINTSLICE,
];

/// The served definition of a built-in kind, at version `v1`.
fn def(b: &'static Builtin) -> ResourceDef {
    ResourceDef {
        group: b.group.into(),
        versions: vec!["v1".into()],
        storage_version: "v1".into(),
        plural: b.plural.into(),
        singular: b.kind.to_ascii_lowercase(),
        kind: b.kind.into(),
        list_kind: format!("{}List", b.kind),
        namespaced: b.namespaced,
        verbs: b.verbs.to_vec(),
        short_names: b.short_names.iter().map(|s| (*s).to_owned()).collect(),
        categories: b.categories.iter().map(|s| (*s).to_owned()).collect(),
        status: b.status,
        scale: b.scale.then(|| ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
        }),
        extra_subresources: b.extra_subresources.to_vec(),
        behavior: Behavior::Builtin(b),
    }
}

/// The behaviour of the built-in kind `group`/`version`/`kind`, if this
/// server serves it.
pub(crate) fn find(group: &str, version: &str, kind: &str) -> Option<&'static Builtin> {
    KINDS
        .iter()
        .copied()
        .find(|b| b.group == group && b.kind == kind && version == "v1")
}

/// Every built-in resource, in discovery order.
pub(crate) fn all() -> Vec<ResourceDef> {
    KINDS.iter().copied().map(def).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a kind with a field label conversion of its own selects on
    /// more than the two metadata labels.
    #[test]
    fn kinds_with_field_labels_convert_them_themselves() {
        use crate::registry::strategy::FieldLabelConversion;
        for b in KINDS {
            let own = b.field_label_conversion != FieldLabelConversion::Default;
            assert_eq!(own, !b.field_labels.is_empty(), "{}/{}", b.group, b.plural);
        }
    }

    #[test]
    fn each_kind_is_listed_once() {
        let mut seen = std::collections::BTreeSet::new();
        for b in KINDS {
            assert!(seen.insert((b.group, b.plural)), "{}/{}", b.group, b.plural);
            assert!(std::ptr::eq(find(b.group, "v1", b.kind).unwrap(), *b));
        }
        assert_eq!(find("apps", "v2", "Deployment").map(|b| b.plural), None);
    }

    #[test]
    fn exactly_the_kinds_whose_strategy_allows_it_create_on_update() {
        let creating: Vec<String> = all()
            .iter()
            .filter(|d| d.creates_on_update())
            .map(|d| format!("{}/{}", d.group, d.plural))
            .collect();
        assert_eq!(
            creating,
            [
                "/events",
                "/services",
                "events.k8s.io/events",
                "rbac.authorization.k8s.io/clusterrolebindings",
                "rbac.authorization.k8s.io/clusterroles",
                "rbac.authorization.k8s.io/rolebindings",
                "rbac.authorization.k8s.io/roles",
                "coordination.k8s.io/leases",
            ]
        );
    }

    #[test]
    fn etcd_keys_use_kube_apiservers_storage_prefixes() {
        let key = |group: &str, plural: &str, ns: &str, name: &str| {
            all()
                .into_iter()
                .find(|d| d.group == group && d.plural == plural)
                .map(|d| d.etcd_key(ns, name))
                .unwrap()
        };
        assert_eq!(
            key("", "services", "default", "web"),
            "/registry/services/specs/default/web"
        );
        assert_eq!(key("", "nodes", "", "n1"), "/registry/minions/n1");
        assert_eq!(
            key("events.k8s.io", "events", "default", "e"),
            "/registry/events/default/e"
        );
        assert_eq!(
            key("apps", "deployments", "default", "d"),
            "/registry/deployments/default/d"
        );
        assert_eq!(
            key(
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                "",
                "widgets.ex.com"
            ),
            "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.ex.com"
        );
        assert_eq!(
            key("rbac.authorization.k8s.io", "clusterroles", "", "admin"),
            "/registry/clusterroles/admin"
        );
    }

    /// `ConvertFieldLabel` per kind: apimachinery's default conversion
    /// (`runtime.DefaultMetaV1FieldSelectorConversion`), the core kinds'
    /// own (`pkg/apis/core/v1/conversion.go`, `AddFieldLabelConversionsForService`
    /// with `spec.clusterIP` and `spec.type`, Pods' `spec.host` alias),
    /// and batch/v1 Job's (`pkg/apis/batch/v1/conversion.go`).
    #[test]
    fn field_labels_convert_as_each_kinds_conversion_does() {
        let reg = crate::registry::Registry::with_builtins();
        let label = |group: &str, plural: &str, label: &str| {
            reg.get(group, "v1", plural).unwrap().field_label(label)
        };
        let path = |p: &str| Ok(p.split('.').map(str::to_owned).collect::<Vec<_>>());
        assert_eq!(
            label("", "configmaps", "data.x"),
            Err(r#""data.x" is not a known field selector: only "metadata.name", "metadata.namespace""#.into())
        );
        // The default conversion knows metadata.namespace whatever the scope.
        assert_eq!(
            label(
                "rbac.authorization.k8s.io",
                "clusterroles",
                "metadata.namespace"
            ),
            path("metadata.namespace")
        );
        assert_eq!(
            label("", "pods", "spec.foo"),
            Err("field label not supported: spec.foo".into())
        );
        assert_eq!(label("", "pods", "spec.host"), path("spec.nodeName"));
        assert_eq!(
            label("", "nodes", "metadata.namespace"),
            Err("field label not supported: metadata.namespace".into())
        );
        assert_eq!(label("", "services", "spec.type"), path("spec.type"));
        assert_eq!(
            label("", "services", "spec.clusterIP"),
            path("spec.clusterIP")
        );
        assert_eq!(
            label("batch", "jobs", "status.succeeded"),
            Err(r#"field label "status.succeeded" not supported for batchv1.Job"#.into())
        );
        assert_eq!(
            label("batch", "jobs", "status.successful"),
            path("status.succeeded")
        );
    }
}
