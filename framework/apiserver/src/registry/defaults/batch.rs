//! `batch/v1` defaults: Job (`SetDefaults_Job`, with
//! `JobPodReplacementPolicy` GA since 1.34) and CronJob
//! (`SetDefaults_CronJob`), each pod template defaulted as a PodSpec and
//! every `onPodConditions` pattern's status defaulted
//! (`SetDefaults_PodFailurePolicyOnPodConditionsPattern`), as
//! `pkg/apis/batch/v1/zz_generated.defaults.go` walks them; a CronJob's
//! `jobTemplate.spec` gets no Job defaults (`SetDefaults_Job` is on the
//! Job type). And the Job strategy's generated selector on create.
//! Source: `pkg/apis/batch/v1/defaults.go` (Kubernetes 1.35).

use std::sync::atomic::AtomicU32;

use serde_json::{json, Map, Value};

use super::fields::{ensure_object, fill, items_mut, obj_mut, obj_name, spec_mut, Table, D};
use super::pod::template;

const JOB: Table = &[
    ("parallelism", D::PtrInt(1)),
    ("completionMode", D::PtrStr("NonIndexed")),
    ("suspend", D::Bool(false)),
    ("manualSelector", D::Bool(false)),
];

const CRONJOB: Table = &[
    ("concurrencyPolicy", D::Str("Allow")),
    ("suspend", D::Bool(false)),
    ("successfulJobsHistoryLimit", D::PtrInt(3)),
    ("failedJobsHistoryLimit", D::PtrInt(1)),
];

fn unset(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key).is_none_or(Value::is_null)
}

/// `SetDefaults_Job`.
pub(super) fn job(obj: &mut Value) {
    template_labels(obj);
    if let Some(spec) = spec_mut(obj) {
        if unset(spec, "completions") && unset(spec, "parallelism") {
            spec.insert("completions".into(), json!(1));
        }
        // With a per-index limit the global one is effectively unlimited.
        let backoff = if unset(spec, "backoffLimitPerIndex") {
            6
        } else {
            i64::from(i32::MAX)
        };
        fill(spec, &[("backoffLimit", D::PtrInt(backoff))]);
        fill(spec, JOB);
        let replacement = if unset(spec, "podFailurePolicy") {
            "TerminatingOrFailed"
        } else {
            "Failed"
        };
        fill(spec, &[("podReplacementPolicy", D::PtrStr(replacement))]);
        failure_policy(spec);
    }
    template(obj, &["spec", "template"]);
}

/// A Job without labels takes its template's.
fn template_labels(obj: &mut Value) {
    let Some(labels) = obj
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.is_object())
        .cloned()
    else {
        return;
    };
    let empty = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if empty {
        if let Some(meta) = ensure_object(obj, &["metadata"]) {
            meta.insert("labels".into(), labels);
        }
    }
}

/// Every `onPodConditions` pattern's status defaults to `True`.
fn failure_policy(job_spec: &mut Map<String, Value>) {
    let Some(policy) = obj_mut(job_spec, "podFailurePolicy") else {
        return;
    };
    for rule in items_mut(policy, "rules") {
        for pattern in items_mut(rule, "onPodConditions") {
            fill(pattern, &[("status", D::Str("True"))]);
        }
    }
}

/// `SetDefaults_CronJob`, and the job template's pod template and failure
/// policy.
pub(super) fn cronjob(obj: &mut Value) {
    if let Some(spec) = spec_mut(obj) {
        fill(spec, CRONJOB);
        if let Some(job_spec) = obj_mut(spec, "jobTemplate").and_then(|t| obj_mut(t, "spec")) {
            failure_policy(job_spec);
        }
    }
    template(obj, &["spec", "jobTemplate", "spec", "template"]);
}

/// The Job strategy's `generateSelector` on create: unless
/// `manualSelector`, the selector is the Job's uid and the template gets
/// the job labels.
pub(super) fn job_create(obj: &mut Value, _: &AtomicU32) {
    if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let name = obj_name(obj);
    if let Some(labels) = ensure_object(obj, &["spec", "template", "metadata", "labels"]) {
        for (k, v) in [
            ("batch.kubernetes.io/controller-uid", &uid),
            ("batch.kubernetes.io/job-name", &name),
            ("controller-uid", &uid),
            ("job-name", &name),
        ] {
            labels.insert(k.into(), json!(v));
        }
    }
    if obj.pointer("/spec/selector").is_none_or(Value::is_null) {
        if let Some(spec) = ensure_object(obj, &["spec"]) {
            spec.insert(
                "selector".into(),
                json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pkg/apis/batch/v1/defaults_test.go` `TestSetDefaultJob`.
    #[test]
    fn jobs() {
        let base = |extra: Value| {
            let mut m = json!({"backoffLimit": 6, "completionMode": "NonIndexed", "suspend": false,
                "manualSelector": false, "podReplacementPolicy": "TerminatingOrFailed"});
            for (k, v) in extra.as_object().unwrap() {
                m[k] = v.clone();
            }
            m
        };
        for (input, expected) in [
            (json!({}), base(json!({"completions": 1, "parallelism": 1}))),
            (json!({"parallelism": 3}), base(json!({"parallelism": 3}))),
            (
                json!({"completions": 4}),
                base(json!({"completions": 4, "parallelism": 1})),
            ),
            (
                json!({"completions": 5, "completionMode": "Indexed", "backoffLimitPerIndex": 1}),
                base(
                    json!({"completions": 5, "parallelism": 1, "completionMode": "Indexed",
                    "backoffLimitPerIndex": 1, "backoffLimit": 2147483647}),
                ),
            ),
            (
                json!({"podFailurePolicy": {"rules": [{"action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget"}, {"type": "X", "status": "False"}]}]}}),
                base(
                    json!({"completions": 1, "parallelism": 1, "podReplacementPolicy": "Failed",
                    "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [
                        {"type": "DisruptionTarget", "status": "True"}, {"type": "X", "status": "False"}]}]}}),
                ),
            ),
            (
                json!({"suspend": true, "manualSelector": true, "backoffLimit": 0, "podReplacementPolicy": "Failed"}),
                base(
                    json!({"completions": 1, "parallelism": 1, "suspend": true, "manualSelector": true,
                    "backoffLimit": 0, "podReplacementPolicy": "Failed"}),
                ),
            ),
        ] {
            let mut j = json!({"spec": input.clone()});
            job(&mut j);
            assert_eq!(j["spec"], expected, "{input}");
        }
    }

    /// `TestSetDefaultJob`'s label cases: a Job without labels takes its
    /// template's; one with labels keeps them.
    #[test]
    fn job_labels_come_from_the_template() {
        let t = json!({"metadata": {"labels": {"app": "a"}}, "spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox:1"}]}});
        let mut j = json!({"metadata": {"name": "j"}, "spec": {"template": t}});
        job(&mut j);
        assert_eq!(j["metadata"]["labels"], json!({"app": "a"}));
        assert_eq!(
            j["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        let mut j = json!({"metadata": {"labels": {"own": "x"}}, "spec": {"template": t}});
        job(&mut j);
        assert_eq!(j["metadata"]["labels"], json!({"own": "x"}));
    }

    /// `TestSetDefaultCronJob`; the job template's spec is not a Job.
    #[test]
    fn cronjobs() {
        let mut c = json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
        cronjob(&mut c);
        let spec = &c["spec"];
        assert_eq!(spec["concurrencyPolicy"], "Allow");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["successfulJobsHistoryLimit"], 3);
        assert_eq!(spec["failedJobsHistoryLimit"], 1);
        let job_spec = &spec["jobTemplate"]["spec"];
        assert!(job_spec.get("backoffLimit").is_none());
        assert!(job_spec.get("completions").is_none());
        let pod = &job_spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "OnFailure");
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "Always");

        let mut c = json!({"spec": {"concurrencyPolicy": "Forbid", "suspend": true,
            "successfulJobsHistoryLimit": 0, "failedJobsHistoryLimit": 0}});
        cronjob(&mut c);
        assert_eq!(
            c["spec"],
            json!({"concurrencyPolicy": "Forbid", "suspend": true,
                "successfulJobsHistoryLimit": 0, "failedJobsHistoryLimit": 0})
        );
    }
}
