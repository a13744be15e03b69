//! The kubebuilder tutorial's controller test (`cronjob_controller_test.go`),
//! assertion for assertion, and the multiversion project's separate
//! condition cases, against kubeforge's in-process API server. The server
//! runs no Job controller or nodes, as envtest does not: the tests write
//! Job status themselves.
//!
//! The clock is a fake one pinned at the real time of setup: the reference
//! runs on the real clock, where `1 * * * *` could fire inside its 10 s
//! "no active Jobs" window.

mod common;

use std::time::Instant;

use common::*;
use cronjob_operator::api::batch::v1::CronJob;
use cronjob_operator::controllers::batch::cron_job::status::{AVAILABLE, DEGRADED, PROGRESSING};
use jiff::{SignedDuration, Timestamp};
use kubeforge::k8s_openapi::api::batch::v1::JobStatus;
use kubeforge::prelude::*;
use serde_json::json;

const NAME: &str = "test-cronjob";

/// The reference's setup: CronJob `test-cronjob` on `1 * * * *`.
async fn setup() -> (Operator, CronJob) {
    let op = Operator::start(Timestamp::now()).await;
    let cj = op.create(&cron_job(NAME, "1 * * * *")).await;
    (op, cj)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_controller_test() {
    let (op, cj) = setup().await;

    // 1. The CronJob can be read back.
    let got = op.get(NAME).await;
    assert_eq!(got.spec.schedule, "1 * * * *");

    // 2. The controller gives it conditions.
    cron_job_where(&op, NAME, "conditions", |cj| {
        cj.status.as_ref().is_some_and(|s| !s.conditions.is_empty())
    })
    .await;

    // 3. No active Jobs, consistently for 10 s (250 ms polling).
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        let got = op.get(NAME).await;
        assert!(active_names(&got).is_empty(), "{:?}", got.status);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // 4. A Job it controls, with two active pods, is its one active Job.
    op.create_owned_job(&cj, "test-job").await;
    op.write_job_status(
        "test-job",
        JobStatus {
            active: Some(2),
            ..Default::default()
        },
    )
    .await;
    let got = cron_job_where(&op, NAME, "one active Job", |cj| {
        active_names(cj) == ["test-job"]
    })
    .await;
    let active = &got.status.as_ref().unwrap().active[0];
    assert_eq!(active.kind.as_deref(), Some("Job"));
    assert_eq!(active.namespace.as_deref(), Some(NS));

    // 5. Exactly one Available condition: True, JobsActive.
    let got = cron_job_where(&op, NAME, "Available=True/JobsActive", |cj| {
        has_condition(cj, AVAILABLE, "True", "JobsActive")
    })
    .await;
    let available: Vec<_> = got
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .filter(|c| c.type_ == AVAILABLE)
        .collect();
    assert_eq!(available.len(), 1, "{available:?}");

    // 6. History limits of 1 keep the newest finished Job of each kind.
    op.cronjobs()
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {
                "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1}})),
        )
        .await
        .expect("set the history limits");
    let now = Timestamp::now();
    let old = now - SignedDuration::from_mins(1);
    let new = now + SignedDuration::from_secs(1);
    for (name, outcome, started) in [
        ("failed-job-old", Outcome::Failed, old),
        ("failed-job-new", Outcome::Failed, new),
        ("complete-job-old", Outcome::Complete, old),
        ("complete-job-new", Outcome::Complete, new),
    ] {
        op.create_owned_job(&cj, name).await;
        op.finish_job(name, outcome, started).await;
    }
    op.job_gone("failed-job-old").await;
    op.job_gone("complete-job-old").await;
    for name in ["failed-job-new", "complete-job-new", "test-job"] {
        assert!(
            op.jobs().get_opt(name).await.unwrap().is_some(),
            "{name} is kept"
        );
    }
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_every_job_complete_it_is_available_and_not_progressing() {
    let (op, cj) = setup().await;
    op.create_owned_job(&cj, "done").await;
    op.finish_job("done", Outcome::Complete, Timestamp::now())
        .await;
    let got = cron_job_where(&op, NAME, "AllJobsCompleted", |cj| {
        has_condition(cj, AVAILABLE, "True", "AllJobsCompleted")
            && has_condition(cj, PROGRESSING, "False", "NoJobsActive")
    })
    .await;
    assert!(active_names(&got).is_empty());
    assert!(condition(&got, DEGRADED).is_none());
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_an_active_job_it_is_available_and_progressing() {
    let (op, cj) = setup().await;
    op.create_owned_job(&cj, "running").await;
    let got = cron_job_where(&op, NAME, "JobsActive", |cj| {
        has_condition(cj, AVAILABLE, "True", "JobsActive")
            && has_condition(cj, PROGRESSING, "True", "JobsActive")
    })
    .await;
    assert_eq!(active_names(&got), ["running"]);
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_job_makes_it_degraded_and_unavailable() {
    let (op, cj) = setup().await;
    op.create_owned_job(&cj, "broken").await;
    op.finish_job("broken", Outcome::Failed, Timestamp::now())
        .await;
    let got = cron_job_where(&op, NAME, "JobsFailed", |cj| {
        has_condition(cj, DEGRADED, "True", "JobsFailed")
            && has_condition(cj, AVAILABLE, "False", "JobsFailed")
    })
    .await;
    assert!(active_names(&got).is_empty());
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_jobs_past_the_limits_are_pruned_oldest_first() {
    let op = Operator::start(Timestamp::now()).await;
    let mut spec = cron_job(NAME, "1 * * * *");
    spec.spec.successful_jobs_history_limit = Some(2);
    spec.spec.failed_jobs_history_limit = Some(1);
    let cj = op.create(&spec).await;
    let t0 = Timestamp::now();
    for (i, name) in ["ok-1", "ok-2", "ok-3"].into_iter().enumerate() {
        op.create_owned_job(&cj, name).await;
        let started = t0 + SignedDuration::from_mins(i64::try_from(i).unwrap());
        op.finish_job(name, Outcome::Complete, started).await;
    }
    for (i, name) in ["bad-1", "bad-2"].into_iter().enumerate() {
        op.create_owned_job(&cj, name).await;
        let started = t0 + SignedDuration::from_mins(i64::try_from(i).unwrap());
        op.finish_job(name, Outcome::Failed, started).await;
    }
    op.job_gone("ok-1").await;
    op.job_gone("bad-1").await;
    op.settle(NAME).await;
    assert_eq!(op.job_names().await, ["bad-2", "ok-2", "ok-3"]);
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_cron_job_is_unavailable() {
    let op = Operator::start(Timestamp::now()).await;
    let mut spec = cron_job(NAME, "1 * * * *");
    spec.spec.suspend = Some(true);
    let cj = op.create(&spec).await;
    // Even with an active Job, suspension decides.
    op.create_owned_job(&cj, "running").await;
    let got = cron_job_where(&op, NAME, "Suspended", |cj| {
        has_condition(cj, AVAILABLE, "False", "Suspended") && active_names(cj) == ["running"]
    })
    .await;
    assert!(condition(&got, DEGRADED).is_none());
    op.stop().await;
}
