//! Kind-specific defaulting and the fields the API server sets itself.
//!
//! Field defaults are kube's scheme defaulters (`SetDefaults_*` plus the
//! generated `zz_generated.defaults.go` walk into nested structs: every
//! PodTemplateSpec, container, probe and volume), which kube-apiserver runs
//! whenever it decodes a request body — create, update, and the result of
//! every patch — so they run on every write here and never overwrite a
//! value the client set. Registry and admission-plugin work (namespace
//! finalizer, cluster IP and IP families, the ServiceAccount plugin, Pod
//! status, the Job selector, the CRD cleanup finalizer) runs on create, or
//! on update where kube's strategy does it too.
//!
//! Defaults follow Kubernetes 1.35 with its default feature gates
//! (`pkg/features/kube_features.go`): `JobPodReplacementPolicy` (GA 1.34),
//! `StatefulSetAutoDeletePVC` (GA), `MaxUnavailableStatefulSet` and
//! `ImageVolume` (beta, on from 1.35).
//!
//! One table, [`KINDS`], maps a built-in (group, resource) to its kind's
//! defaulting; the per-group files hold the defaults as data tables
//! applied by [`fields::fill`], and the logic (pull policy by tag, target port,
//! IP families) as short functions.

mod admission;
mod apps;
mod batch;
mod core;
mod fields;
mod pod;
mod rbac;

use std::sync::atomic::AtomicU32;

use serde_json::Value;

use crate::registry::ResourceDef;
pub(crate) use fields::{ensure_object, CRD_CLEANUP};

/// A built-in kind's defaulting: field defaults on every write, and the
/// registry's own work on create and on update.
struct Kind {
    group: &'static str,
    plural: &'static str,
    /// The scheme defaulters, on every decoded body.
    fields: fn(&mut Value),
    /// Allocation and admission-plugin defaults on create, after `fields`.
    create: Option<fn(&mut Value, &AtomicU32)>,
    /// What an update keeps or recomputes, after `fields`.
    update: Option<fn(&mut Value, &Value)>,
}

const fn kind(group: &'static str, plural: &'static str, fields: fn(&mut Value)) -> Kind {
    Kind {
        group,
        plural,
        fields,
        create: None,
        update: None,
    }
}

fn nothing(_: &mut Value) {}

/// Every built-in kind the server serves (`registry::builtins::all`), and
/// its defaulting. Kinds whose group has no defaulter for them
/// (ConfigMap's `data: {}` is dropped by omitempty; Events, ServiceAccounts,
/// ControllerRevisions, Roles, ClusterRoles, Leases and PDBs have none in
/// `pkg/apis/*/v1/defaults.go`) map to `nothing`, so the table is the
/// whole list.
static KINDS: &[Kind] = &[
    kind("", "configmaps", nothing),
    kind("", "events", nothing),
    Kind {
        create: Some(core::namespace_create),
        update: Some(core::namespace_update),
        ..kind("", "namespaces", core::namespace)
    },
    kind("", "nodes", core::node),
    Kind {
        create: Some(core::pod_create),
        ..kind("", "pods", pod::pod)
    },
    kind("", "secrets", core::secret),
    kind("", "serviceaccounts", nothing),
    Kind {
        create: Some(core::service_create),
        update: Some(core::service_update),
        ..kind("", "services", core::service)
    },
    kind("apps", "daemonsets", apps::daemonset),
    kind("apps", "controllerrevisions", nothing),
    kind("apps", "deployments", apps::deployment),
    kind("apps", "replicasets", apps::replicaset),
    kind("apps", "statefulsets", apps::statefulset),
    kind("events.k8s.io", "events", nothing),
    kind("batch", "cronjobs", batch::cronjob),
    Kind {
        create: Some(batch::job_create),
        ..kind("batch", "jobs", batch::job)
    },
    kind("policy", "poddisruptionbudgets", nothing),
    kind(
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        rbac::binding,
    ),
    kind("rbac.authorization.k8s.io", "clusterroles", nothing),
    kind("rbac.authorization.k8s.io", "rolebindings", rbac::binding),
    kind("rbac.authorization.k8s.io", "roles", nothing),
    kind(
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        admission::mutating_webhooks,
    ),
    kind(
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        admission::validating_webhooks,
    ),
    kind(
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        admission::policy,
    ),
    kind(
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        admission::policy_binding,
    ),
    Kind {
        create: Some(admission::crd_create),
        ..kind(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            admission::crd,
        )
    },
    kind("coordination.k8s.io", "leases", nothing),
];

fn lookup(def: &ResourceDef) -> Option<&'static Kind> {
    def.builtin()?;
    KINDS
        .iter()
        .find(|k| k.group == def.group && k.plural == def.plural)
}

/// Defaults applied on create: the field defaults first (kube decodes,
/// then the strategy's `PrepareForCreate` and the registry allocate).
pub(crate) fn on_create(def: &ResourceDef, obj: &mut Value, next_ip: &AtomicU32) {
    if let Some(k) = lookup(def) {
        (k.fields)(obj);
        if let Some(create) = k.create {
            create(obj, next_ip);
        }
    }
}

/// Defaults applied on update (PUT, and every patch's result).
pub(crate) fn on_update(def: &ResourceDef, obj: &mut Value, old: &Value) {
    if let Some(k) = lookup(def) {
        (k.fields)(obj);
        if let Some(update) = k.update {
            update(obj, old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fields::{fill, Table, D};
    use super::*;
    use crate::registry::builtins;
    use serde_json::json;

    #[test]
    fn every_served_builtin_kind_has_one_entry() {
        let served: Vec<(String, String)> = builtins::all()
            .into_iter()
            .filter(|d| d.verbs.contains(&"get"))
            .map(|d| (d.group, d.plural))
            .collect();
        for (g, p) in &served {
            let n = KINDS
                .iter()
                .filter(|k| k.group == g && k.plural == p)
                .count();
            assert_eq!(n, 1, "{g}/{p}");
        }
        assert_eq!(KINDS.len(), served.len());
    }

    #[test]
    fn fill_sets_unset_fields_and_keeps_set_ones() {
        const T: Table = &[
            ("a", D::Str("x")),
            ("b", D::PtrStr("y")),
            ("c", D::Int(3)),
            ("d", D::PtrInt(4)),
            ("e", D::Bool(true)),
            ("f", D::Obj),
        ];
        let mut m = json!({"a": "", "b": "", "c": 0, "d": 0, "e": false, "f": null});
        fill(m.as_object_mut().unwrap(), T);
        assert_eq!(
            m,
            json!({"a": "x", "b": "", "c": 3, "d": 0, "e": false, "f": {}})
        );
        let mut m = json!({});
        fill(m.as_object_mut().unwrap(), T);
        assert_eq!(
            m,
            json!({"a": "x", "b": "y", "c": 3, "d": 4, "e": true, "f": {}})
        );
    }
}
