//! The CronJob's status rebuilt from its Jobs (the reference's steps 3 and
//! 4): which Jobs are active, succeeded or failed, the latest scheduled
//! time among them, and the conditions that summarise it.

use kubeforge::events::object_reference;
use kubeforge::k8s_openapi::api::batch::v1::Job;
use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kubeforge::prelude::*;
use kubeforge::reconcile::conditions::{new_condition, set_condition_at, ConditionStatus};

use jiff::Timestamp;

use super::SCHEDULED_AT;
use crate::api::batch::v1::CronJobStatus;

/// The condition that says whether the CronJob is usable.
pub const AVAILABLE: &str = "Available";
/// The condition that says whether Jobs are being run.
pub const PROGRESSING: &str = "Progressing";
/// The condition that says something went wrong; never reset.
pub const DEGRADED: &str = "Degraded";

/// A CronJob's Jobs, by outcome (the reference's `isJobFinished`).
#[derive(Debug, Default)]
pub struct Children {
    /// Jobs without a `Complete` or `Failed` condition that is `True`.
    pub active: Vec<Arc<Job>>,
    /// Jobs `Complete`.
    pub successful: Vec<Arc<Job>>,
    /// Jobs `Failed`.
    pub failed: Vec<Arc<Job>>,
    /// The latest `scheduled-at` among all of them.
    pub most_recent: Option<Timestamp>,
}

/// Sorts `jobs` into [`Children`]. A missing `scheduled-at` is skipped; an
/// unparseable one is logged and skipped, after the Job is classified.
pub fn classify(jobs: Vec<Arc<Job>>) -> Children {
    let mut children = Children::default();
    for job in jobs {
        let finished = job
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|conditions| {
                conditions
                    .iter()
                    .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
                    .map(|c| c.type_.clone())
            });
        let scheduled = job
            .annotations()
            .get(SCHEDULED_AT)
            .filter(|s| !s.is_empty());
        let scheduled = match scheduled.map(|s| s.parse::<Timestamp>()) {
            None => None,
            Some(Ok(at)) => Some(at),
            Some(Err(e)) => {
                tracing::error!(job = %job.name_any(), error = %e, "unable to parse schedule time for child job");
                None
            }
        };
        if let Some(at) = scheduled {
            if children.most_recent.is_none_or(|recent| recent < at) {
                children.most_recent = Some(at);
            }
        }
        match finished.as_deref() {
            Some("Complete") => children.successful.push(job),
            Some(_) => children.failed.push(job),
            None => children.active.push(job),
        }
    }
    children
}

/// Rebuilds `status` from `children` at `now`: `lastScheduleTime`,
/// `active`, and the conditions in the reference's order of precedence.
pub fn rebuild(status: &mut CronJobStatus, children: &Children, suspended: bool, now: Timestamp) {
    status.last_schedule_time = children.most_recent.map(Time);
    status.active = children
        .active
        .iter()
        .map(|job| object_reference(&**job, &()))
        .collect();
    let conditions = &mut status.conditions;
    let mut mark = |type_: &str, state: ConditionStatus, reason: &str, message: String| {
        set(conditions, type_, state, reason, message, now);
    };
    if suspended {
        mark(
            AVAILABLE,
            ConditionStatus::False,
            "Suspended",
            "CronJob is suspended".into(),
        );
    } else if !children.failed.is_empty() {
        let message = format!("{} job(s) have failed", children.failed.len());
        mark(
            DEGRADED,
            ConditionStatus::True,
            "JobsFailed",
            message.clone(),
        );
        mark(AVAILABLE, ConditionStatus::False, "JobsFailed", message);
    } else if !children.active.is_empty() {
        let message = format!("{} job(s) are currently active", children.active.len());
        mark(
            PROGRESSING,
            ConditionStatus::True,
            "JobsActive",
            message.clone(),
        );
        mark(AVAILABLE, ConditionStatus::True, "JobsActive", message);
    } else {
        mark(
            AVAILABLE,
            ConditionStatus::True,
            "AllJobsCompleted",
            "All jobs have completed successfully".into(),
        );
        mark(
            PROGRESSING,
            ConditionStatus::False,
            "NoJobsActive",
            "No jobs are currently active".into(),
        );
    }
}

/// Sets condition `type_` in `conditions` at `now`.
pub fn set(
    conditions: &mut Vec<Condition>,
    type_: &str,
    state: ConditionStatus,
    reason: &str,
    message: impl Into<String>,
    now: Timestamp,
) {
    set_condition_at(
        conditions,
        new_condition(type_, state, reason, message),
        now,
    );
}

#[cfg(test)]
mod tests {
    use kubeforge::k8s_openapi::api::batch::v1::{JobCondition, JobStatus};
    use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kubeforge::reconcile::conditions::find_condition;

    use super::*;

    fn job(name: &str, scheduled: Option<&str>, finished: Option<&str>) -> Arc<Job> {
        Arc::new(Job {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                annotations: scheduled.map(|s| {
                    [(SCHEDULED_AT.to_owned(), s.to_owned())]
                        .into_iter()
                        .collect()
                }),
                ..Default::default()
            },
            spec: None,
            status: Some(JobStatus {
                conditions: finished.map(|type_| {
                    vec![JobCondition {
                        type_: type_.into(),
                        status: "True".into(),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
        })
    }

    fn reason(status: &CronJobStatus, type_: &str) -> Option<(String, String)> {
        find_condition(&status.conditions, type_).map(|c| (c.status.clone(), c.reason.clone()))
    }

    fn pair(status: &str, reason: &str) -> Option<(String, String)> {
        Some((status.into(), reason.into()))
    }

    #[test]
    fn jobs_are_sorted_by_outcome_and_bad_times_skipped() {
        let children = classify(vec![
            job("a", Some("2026-01-01T00:05:00Z"), None),
            job("b", Some("not a time"), Some("Complete")),
            job("c", Some("2026-01-01T00:10:00Z"), Some("Failed")),
            job("d", None, None),
        ]);
        assert_eq!(children.active.len(), 2);
        assert_eq!(children.successful.len(), 1);
        assert_eq!(children.failed.len(), 1);
        assert_eq!(
            children.most_recent,
            Some("2026-01-01T00:10:00Z".parse().unwrap())
        );
    }

    #[test]
    fn conditions_follow_the_references_precedence() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let failed = classify(vec![job("f", None, Some("Failed")), job("a", None, None)]);
        let mut status = CronJobStatus::default();
        rebuild(&mut status, &failed, false, now);
        assert_eq!(reason(&status, DEGRADED), pair("True", "JobsFailed"));
        assert_eq!(reason(&status, AVAILABLE), pair("False", "JobsFailed"));
        assert_eq!(status.active.len(), 1);

        // Suspension wins, and Degraded is never reset.
        rebuild(&mut status, &failed, true, now);
        assert_eq!(reason(&status, AVAILABLE), pair("False", "Suspended"));
        assert_eq!(reason(&status, DEGRADED), pair("True", "JobsFailed"));

        let active = classify(vec![job("a", None, None)]);
        rebuild(&mut status, &active, false, now);
        assert_eq!(reason(&status, AVAILABLE), pair("True", "JobsActive"));
        assert_eq!(reason(&status, PROGRESSING), pair("True", "JobsActive"));

        rebuild(&mut status, &classify(vec![]), false, now);
        assert_eq!(reason(&status, AVAILABLE), pair("True", "AllJobsCompleted"));
        assert_eq!(reason(&status, PROGRESSING), pair("False", "NoJobsActive"));
        assert_eq!(reason(&status, DEGRADED), pair("True", "JobsFailed"));
        assert!(status.active.is_empty());
        assert_eq!(status.last_schedule_time, None);
    }
}
