//! The `batch/v1` group: Jobs and CronJobs, with defaults as
//! `pkg/apis/batch/v1/defaults.go` (Kubernetes 1.35,
//! `JobPodReplacementPolicy` GA) sets them, a CronJob's job template
//! defaulted as a Job's.

pub(crate) mod cronjob;
pub(crate) mod job;

#[cfg(test)]
mod tests {
    use super::cronjob::defaults as cronjob;
    use super::job::defaults as job;
    use serde_json::{json, Value};

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
