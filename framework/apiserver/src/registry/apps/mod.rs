//! The `apps/v1` group: one module per kind, each with its pod template
//! defaulted as a PodSpec (`pkg/apis/apps/v1/defaults.go`, Kubernetes
//! 1.35 with `MaxUnavailableStatefulSet` on, as
//! `pkg/apis/apps/v1/zz_generated.defaults.go` walks them), and the
//! checks the four workloads share.

pub(crate) mod controllerrevision;
pub(crate) mod daemonset;
pub(crate) mod deployment;
pub(crate) mod replicaset;
pub(crate) mod statefulset;

use serde_json::{Map, Value};

use crate::machinery::status::Cause;
use crate::registry::core::pod_spec;
use crate::registry::fields::{fill, object_in, Table, D};

pub(super) const TEMPLATE: &[&str] = &["spec", "template"];

/// A strategy object at `key`: type defaulted to `RollingUpdate`; when it
/// is RollingUpdate, `rollingUpdate` created and `rolling` filled in.
pub(super) fn rolling_strategy(spec: &mut Map<String, Value>, key: &str, rolling: Table) {
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

/// What `ValidateDeployment`, `ValidateReplicaSet`, `ValidateStatefulSet`
/// and `ValidateDaemonSet` share: a selector matching the template's
/// labels, the template's PodSpec, and replicas not negative.
pub(super) fn validate_workload(obj: &Value, _: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    pod_spec::selector_matches_template(obj, &mut causes, true);
    pod_spec::check(
        obj.pointer("/spec/template/spec"),
        "spec.template.spec",
        &mut causes,
    );
    if obj
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .is_some_and(|r| r < 0)
    {
        causes.push(Cause::invalid(
            "spec.replicas",
            "Invalid value: -1: must be greater than or equal to 0",
        ));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::daemonset::defaults as daemonset;
    use super::deployment::defaults as deployment;
    use super::replicaset::defaults as replicaset;
    use super::statefulset::defaults as statefulset;
    use serde_json::{json, Value};

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

#[cfg(test)]
mod validation_tests {
    use crate::registry::Registry;
    use serde_json::json;

    #[test]
    fn deployment_rules() {
        let reg = Registry::with_builtins();
        let def = reg.get("apps", "v1", "deployments").unwrap();
        let ok = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        assert!(def.validate_kind(&ok, None).is_empty());
        let bad = json!({"spec": {"selector": {"matchLabels": {"a": "x"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}}});
        let fields: Vec<String> = def
            .validate_kind(&bad, None)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            [
                "spec.template.metadata.labels",
                "spec.template.spec.containers[0].image"
            ]
        );
    }
}
