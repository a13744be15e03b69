//! The Job a CronJob runs at one scheduled time (the reference's
//! `constructJobForCronJob`): named after the CronJob and the time, so that
//! a second creation for the same run fails with AlreadyExists.

use kubeforge::k8s_openapi::api::batch::v1::Job;
use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeforge::prelude::*;
use kubeforge::reconcile::Error;

use jiff::Timestamp;

use super::SCHEDULED_AT;
use crate::api::batch::v1::CronJob;

/// The Job name for the run at `scheduled`: `<cronjob>-<unix seconds>`.
pub fn job_name(cron_job: &str, scheduled: Timestamp) -> String {
    format!("{cron_job}-{}", scheduled.as_second())
}

/// The Job `cj` runs at `scheduled`: its template's labels, annotations
/// and spec, the `scheduled-at` annotation (RFC 3339), and a controller
/// reference to `cj`.
pub fn job_for(cj: &CronJob, scheduled: Timestamp) -> Result<Job, Error> {
    let template = &cj.spec.job_template;
    let template_meta = template.metadata.as_ref();
    let mut annotations = template_meta
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    annotations.insert(SCHEDULED_AT.to_owned(), scheduled.to_string());
    let labels = template_meta
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let mut job = Job {
        metadata: ObjectMeta {
            name: Some(job_name(&cj.name_any(), scheduled)),
            namespace: cj.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: template.spec.clone(),
        status: None,
    };
    set_controller_reference(cj, &mut job)?;
    Ok(job)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kubeforge::k8s_openapi::api::batch::v1::{JobSpec, JobTemplateSpec};

    use super::*;
    use crate::api::batch::v1::CronJobSpec;

    #[test]
    fn the_job_is_named_after_the_run_and_owned_by_the_cron_job() {
        let labels = BTreeMap::from([("team".to_owned(), "a".to_owned())]);
        let annotations = BTreeMap::from([("note".to_owned(), "x".to_owned())]);
        let mut cj = CronJob::new(
            "nightly",
            CronJobSpec {
                schedule: "0 0 * * *".into(),
                starting_deadline_seconds: None,
                concurrency_policy: None,
                suspend: None,
                job_template: JobTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(labels.clone()),
                        annotations: Some(annotations),
                        ..Default::default()
                    }),
                    spec: Some(JobSpec {
                        parallelism: Some(2),
                        ..Default::default()
                    }),
                },
                successful_jobs_history_limit: None,
                failed_jobs_history_limit: None,
            },
        );
        cj.metadata.namespace = Some("ops".into());
        cj.metadata.uid = Some("6f1c0d6e-0000-4000-8000-000000000001".into());
        let at: Timestamp = "2026-01-02T00:00:00Z".parse().unwrap();
        let job = job_for(&cj, at).unwrap();
        assert_eq!(job.metadata.name.as_deref(), Some("nightly-1767312000"));
        assert_eq!(job.metadata.namespace.as_deref(), Some("ops"));
        assert_eq!(job.metadata.labels, Some(labels));
        let annotations = job.metadata.annotations.unwrap();
        assert_eq!(annotations["note"], "x");
        assert_eq!(annotations[SCHEDULED_AT], "2026-01-02T00:00:00Z");
        assert_eq!(job.spec.unwrap().parallelism, Some(2));
        let owner = &job.metadata.owner_references.unwrap()[0];
        assert_eq!(owner.kind, "CronJob");
        assert_eq!(owner.api_version, "batch.tutorial.kubebuilder.io/v1");
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
    }
}
