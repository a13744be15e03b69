//! `apps/v1` defaults: Deployment, ReplicaSet, StatefulSet and DaemonSet
//! (`pkg/apis/apps/v1/defaults.go`, Kubernetes 1.35 with
//! `MaxUnavailableStatefulSet` on), each with its pod template defaulted
//! as a PodSpec, and a StatefulSet's volumeClaimTemplates as claims
//! (`SetDefaults_PersistentVolumeClaim` and its spec), as
//! `pkg/apis/apps/v1/zz_generated.defaults.go` walks them.

use serde_json::{Map, Value};

use super::fields::{fill, items_mut, obj_mut, object_in, spec_mut, Table, D};
use super::pod::{template, PVC_SPEC};

const TEMPLATE: &[&str] = &["spec", "template"];

/// `SetDefaults_Deployment`'s plain fields.
const DEPLOYMENT: Table = &[
    ("replicas", D::PtrInt(1)),
    ("revisionHistoryLimit", D::PtrInt(10)),
    ("progressDeadlineSeconds", D::PtrInt(600)),
];
const DEPLOYMENT_ROLLING: Table = &[
    ("maxUnavailable", D::PtrStr("25%")),
    ("maxSurge", D::PtrStr("25%")),
];
const DAEMONSET_ROLLING: Table = &[("maxUnavailable", D::PtrInt(1)), ("maxSurge", D::PtrInt(0))];
const STATEFULSET: Table = &[
    ("podManagementPolicy", D::Str("OrderedReady")),
    ("replicas", D::PtrInt(1)),
    ("revisionHistoryLimit", D::PtrInt(10)),
];
const STATEFULSET_ROLLING: Table = &[
    ("partition", D::PtrInt(0)),
    ("maxUnavailable", D::PtrInt(1)),
];
const PVC_RETENTION: Table = &[
    ("whenDeleted", D::Str("Retain")),
    ("whenScaled", D::Str("Retain")),
];

/// A strategy object at `key`: type defaulted to `RollingUpdate`; when it
/// is RollingUpdate, `rollingUpdate` created and `rolling` filled in.
fn rolling_strategy(spec: &mut Map<String, Value>, key: &str, rolling: Table) {
    let Some(strategy) = object_in(spec, key) else {
        return;
    };
    fill(strategy, &[("type", D::Str("RollingUpdate"))]);
    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
        if let Some(ru) = object_in(strategy, "rollingUpdate") {
            fill(ru, rolling);
        }
    }
}

/// `SetDefaults_Deployment`.
pub(super) fn deployment(obj: &mut Value) {
    if let Some(spec) = spec_mut(obj) {
        fill(spec, DEPLOYMENT);
        rolling_strategy(spec, "strategy", DEPLOYMENT_ROLLING);
    }
    template(obj, TEMPLATE);
}

/// `SetDefaults_ReplicaSet`.
pub(super) fn replicaset(obj: &mut Value) {
    if let Some(spec) = spec_mut(obj) {
        fill(spec, &[("replicas", D::PtrInt(1))]);
    }
    template(obj, TEMPLATE);
}

/// `SetDefaults_DaemonSet`.
pub(super) fn daemonset(obj: &mut Value) {
    if let Some(spec) = spec_mut(obj) {
        rolling_strategy(spec, "updateStrategy", DAEMONSET_ROLLING);
        fill(spec, &[("revisionHistoryLimit", D::PtrInt(10))]);
    }
    template(obj, TEMPLATE);
}

/// `SetDefaults_StatefulSet`: unlike the others, an explicit
/// `RollingUpdate` type without `rollingUpdate` stays without it.
pub(super) fn statefulset(obj: &mut Value) {
    if let Some(spec) = spec_mut(obj) {
        fill(spec, STATEFULSET);
        if let Some(strategy) = object_in(spec, "updateStrategy") {
            if strategy
                .get("type")
                .is_none_or(|t| t.as_str().is_none_or(str::is_empty))
            {
                strategy.insert("type".into(), "RollingUpdate".into());
                object_in(strategy, "rollingUpdate");
            }
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                if let Some(ru) = obj_mut(strategy, "rollingUpdate") {
                    fill(ru, STATEFULSET_ROLLING);
                }
            }
        }
        if let Some(policy) = object_in(spec, "persistentVolumeClaimRetentionPolicy") {
            fill(policy, PVC_RETENTION);
        }
        for claim in items_mut(spec, "volumeClaimTemplates") {
            if let Some(status) = object_in(claim, "status") {
                fill(status, &[("phase", D::Str("Pending"))]);
            }
            if let Some(claim_spec) = object_in(claim, "spec") {
                fill(claim_spec, PVC_SPEC);
            }
        }
    }
    template(obj, TEMPLATE);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(f: fn(&mut Value), spec: Value) -> Value {
        let mut obj = json!({"spec": spec});
        f(&mut obj);
        obj["spec"].clone()
    }

    /// `pkg/apis/apps/v1/defaults_test.go` `TestSetDefaultDeployment`.
    #[test]
    fn deployments() {
        for (input, expected) in [
            (
                json!({}),
                json!({"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}}),
            ),
            (
                json!({"replicas": 5, "strategy": {"rollingUpdate": {"maxSurge": "30%"}}}),
                json!({"replicas": 5, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "30%"}}}),
            ),
            (
                json!({"replicas": 0, "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 0, "progressDeadlineSeconds": 30}),
                json!({"replicas": 0, "revisionHistoryLimit": 0, "progressDeadlineSeconds": 30,
                    "strategy": {"type": "Recreate"}}),
            ),
        ] {
            assert_eq!(run(deployment, input.clone()), expected, "{input}");
        }
    }

    /// `TestSetDefaultReplicaSetReplicas`.
    #[test]
    fn replicasets() {
        assert_eq!(run(replicaset, json!({})), json!({"replicas": 1}));
        assert_eq!(
            run(replicaset, json!({"replicas": 0})),
            json!({"replicas": 0})
        );
    }

    /// `TestSetDefaultDaemonSetSpec`.
    #[test]
    fn daemonsets() {
        for (input, expected) in [
            (
                json!({}),
                json!({"revisionHistoryLimit": 10,
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}}),
            ),
            (
                json!({"updateStrategy": {"type": "OnDelete"}, "revisionHistoryLimit": 1}),
                json!({"revisionHistoryLimit": 1, "updateStrategy": {"type": "OnDelete"}}),
            ),
            (
                json!({"updateStrategy": {"rollingUpdate": {"maxSurge": "10%"}}}),
                json!({"revisionHistoryLimit": 10,
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "10%"}}}),
            ),
        ] {
            assert_eq!(run(daemonset, input.clone()), expected, "{input}");
        }
    }

    /// `TestSetDefaultStatefulSet` (with `MaxUnavailableStatefulSet` and
    /// `StatefulSetAutoDeletePVC` on, as in 1.35).
    #[test]
    fn statefulsets() {
        let retain = json!({"whenDeleted": "Retain", "whenScaled": "Retain"});
        for (input, expected) in [
            (
                json!({}),
                json!({"podManagementPolicy": "OrderedReady", "replicas": 1, "revisionHistoryLimit": 10,
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}},
                    "persistentVolumeClaimRetentionPolicy": retain}),
            ),
            (
                json!({"updateStrategy": {"type": "RollingUpdate"}, "podManagementPolicy": "Parallel",
                    "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"}}),
                json!({"podManagementPolicy": "Parallel", "replicas": 1, "revisionHistoryLimit": 10,
                    "updateStrategy": {"type": "RollingUpdate"},
                    "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"}}),
            ),
            (
                json!({"updateStrategy": {"type": "OnDelete"}, "replicas": 3,
                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}),
                json!({"podManagementPolicy": "OrderedReady", "replicas": 3, "revisionHistoryLimit": 10,
                    "updateStrategy": {"type": "OnDelete"}, "persistentVolumeClaimRetentionPolicy": retain,
                    "volumeClaimTemplates": [{"metadata": {"name": "data"},
                        "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"},
                        "status": {"phase": "Pending"}}]}),
            ),
        ] {
            assert_eq!(run(statefulset, input.clone()), expected, "{input}");
        }
    }

    /// Every workload's template gets the PodSpec defaults
    /// (`SetObjectDefaults_Deployment` and siblings call
    /// `SetDefaults_PodSpec` on `Spec.Template.Spec`).
    #[test]
    fn every_workload_defaults_its_template() {
        for f in [deployment, replicaset, statefulset, daemonset] {
            let out = run(
                f,
                json!({"template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}),
            );
            let spec = &out["template"]["spec"];
            assert_eq!(spec["restartPolicy"], "Always");
            assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
        }
    }
}
