//! What the tutorial's test leaves out, driven by a fake clock: each test
//! moves the clock to a scheduled time and wakes the CronJob through the
//! controller's channel, never sleeping until a schedule fires. Expected
//! Job names are computed here from unix seconds, not by the controller's
//! schedule code. Where a test asserts that nothing happened, it first
//! waits for a reconcile that began after the clock moved
//! ([`Operator::settle`]).

mod common;

use common::*;
use cronjob_operator::api::batch::v1::{ConcurrencyPolicy, CronJob};
use cronjob_operator::controllers::batch::cron_job::next_schedule::TOO_MANY_MISSED;
use cronjob_operator::controllers::batch::cron_job::status::{AVAILABLE, DEGRADED};
use cronjob_operator::controllers::batch::cron_job::{
    SCHEDULED_AT, SUCCESSFUL_CREATE, SUCCESSFUL_DELETE,
};
use jiff::Timestamp;
use kubeforge::k8s_openapi::api::events::v1::Event;
use kubeforge::prelude::*;
use serde_json::json;

const FIVE_MINUTES: i64 = 300;

/// Starts the operator and creates `cj`; the clock reads its creation
/// time. Returns the operator and the creation time.
async fn start_with(cj: CronJob) -> (Operator, Timestamp) {
    let op = Operator::start(Timestamp::now()).await;
    let stored = op.create(&cj).await;
    let created = created(&stored);
    op.clock.set(created);
    (op, created)
}

fn with_policy(name: &str, schedule: &str, policy: ConcurrencyPolicy) -> CronJob {
    let mut cj = cron_job(name, schedule);
    cj.spec.concurrency_policy = Some(policy);
    cj
}

async fn events_with_reason(op: &Operator, reason: &str) -> Vec<Event> {
    let events: Api<Event> = Api::namespaced(op.client.clone(), NS);
    let list = events.list(&Default::default()).await.expect("list events");
    list.items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_runs_each_run_beside_the_active_ones() {
    let (op, created) = start_with(cron_job("allow", "*/5 * * * *")).await;
    let b1 = next_multiple(created, FIVE_MINUTES);
    let b2 = plus(b1, FIVE_MINUTES);

    op.at(b1, "allow").await;
    let job = op.job_appears(&job_name("allow", b1)).await;
    assert_eq!(
        job.annotations().get(SCHEDULED_AT).map(String::as_str),
        Some(b1.to_string().as_str())
    );
    assert!(b1.to_string().ends_with(":00Z"), "RFC 3339, whole seconds");
    let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("CronJob", Some(true))
    );
    let spec = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(spec.containers[0].image.as_deref(), Some("test-image"));

    op.at(b2, "allow").await;
    op.job_appears(&job_name("allow", b2)).await;
    let cj = cron_job_where(&op, "allow", "two active Jobs", |cj| {
        active_names(cj).len() == 2
    })
    .await;
    let last = cj.status.as_ref().unwrap().last_schedule_time.as_ref();
    assert_eq!(last.map(|t| t.0), Some(b2));
    assert_eq!(
        active_names(&cj),
        [job_name("allow", b1), job_name("allow", b2)]
    );

    eventually("two SuccessfulCreate events", || async {
        let created = events_with_reason(&op, SUCCESSFUL_CREATE).await;
        (created.len() == 2).then_some(())
    })
    .await;
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbid_waits_for_the_active_job_then_runs_only_the_latest_missed_run() {
    let cj = with_policy("forbid", "*/5 * * * *", ConcurrencyPolicy::Forbid);
    let (op, created) = start_with(cj).await;
    let b1 = next_multiple(created, FIVE_MINUTES);
    let b3 = plus(b1, 2 * FIVE_MINUTES);

    op.at(b1, "forbid").await;
    op.job_appears(&job_name("forbid", b1)).await;

    // Two runs missed while the first Job runs: nothing new.
    op.clock.set(b3);
    op.settle("forbid").await;
    assert_eq!(op.job_names().await, [job_name("forbid", b1)]);

    // Once it completes, the latest missed run (only) is run.
    op.finish_job(&job_name("forbid", b1), Outcome::Complete, b1)
        .await;
    op.job_appears(&job_name("forbid", b3)).await;
    op.settle("forbid").await;
    assert_eq!(
        op.job_names().await,
        [job_name("forbid", b1), job_name("forbid", b3)]
    );
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_deletes_the_active_job_for_the_new_run() {
    let cj = with_policy("replace", "*/5 * * * *", ConcurrencyPolicy::Replace);
    let (op, created) = start_with(cj).await;
    let b1 = next_multiple(created, FIVE_MINUTES);
    let b2 = plus(b1, FIVE_MINUTES);

    op.at(b1, "replace").await;
    op.job_appears(&job_name("replace", b1)).await;
    op.at(b2, "replace").await;
    op.job_appears(&job_name("replace", b2)).await;
    op.job_gone(&job_name("replace", b1)).await;
    cron_job_where(&op, "replace", "only the new Job active", |cj| {
        active_names(cj) == [job_name("replace", b2)]
    })
    .await;
    let deleted = events_with_reason(&op, SUCCESSFUL_DELETE).await;
    assert_eq!(deleted.len(), 1, "{deleted:?}");
    let note = deleted[0].note.as_deref().unwrap_or_default();
    assert!(note.contains(&job_name("replace", b1)), "{note}");
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspend_stops_new_runs_and_resuming_runs_the_latest_one() {
    let (op, created) = start_with(cron_job("pause", "*/5 * * * *")).await;
    let b1 = next_multiple(created, FIVE_MINUTES);
    let b4 = plus(b1, 3 * FIVE_MINUTES);
    op.at(b1, "pause").await;
    op.job_appears(&job_name("pause", b1)).await;

    let suspend = |on: bool| json!({"spec": {"suspend": on}});
    op.cronjobs()
        .patch(
            "pause",
            &PatchParams::default(),
            &Patch::Merge(suspend(true)),
        )
        .await
        .expect("suspend");
    // The status is still rebuilt while suspended. Waiting for it also
    // waits for the operator's cache to hold the suspension: a reconcile
    // that read the CronJob before it did would rightly start the b4 run.
    let cj = cron_job_where(&op, "pause", "Available=False/Suspended", |cj| {
        has_condition(cj, AVAILABLE, "False", "Suspended")
    })
    .await;
    assert_eq!(active_names(&cj), [job_name("pause", b1)]);
    op.clock.set(b4);
    op.settle("pause").await;
    assert_eq!(op.job_names().await, [job_name("pause", b1)]);

    op.cronjobs()
        .patch(
            "pause",
            &PatchParams::default(),
            &Patch::Merge(suspend(false)),
        )
        .await
        .expect("resume");
    op.job_appears(&job_name("pause", b4)).await;
    op.settle("pause").await;
    assert_eq!(
        op.job_names().await,
        [job_name("pause", b1), job_name("pause", b4)]
    );
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_missed_by_more_than_the_deadline_is_skipped() {
    let mut cj = cron_job("late", "*/5 * * * *");
    cj.spec.starting_deadline_seconds = Some(30);
    let (op, created) = start_with(cj).await;
    let b1 = next_multiple(created, FIVE_MINUTES);
    let b2 = plus(b1, FIVE_MINUTES);

    // Two minutes late for a 30 s deadline: the clamp hides the run.
    op.clock.set(plus(b1, 120));
    op.settle("late").await;
    assert!(op.job_names().await.is_empty());
    // Ten seconds late: in time.
    op.at(plus(b2, 10), "late").await;
    let job = op.job_appears(&job_name("late", b2)).await;
    assert_eq!(job.annotations()[SCHEDULED_AT], b2.to_string());
    op.settle("late").await;
    assert_eq!(op.job_names().await, [job_name("late", b2)]);
    let cj = op.get("late").await;
    assert!(condition(&cj, DEGRADED).is_none(), "{:?}", cj.status);
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_than_a_hundred_missed_runs_stop_the_cron_job_until_a_deadline_is_set() {
    let (op, created) = start_with(cron_job("wedged", "* * * * *")).await;
    let now = plus(created, 2 * 3600);
    op.at(now, "wedged").await;
    let cj = cron_job_where(&op, "wedged", "Degraded=True/InvalidSchedule", |cj| {
        has_condition(cj, DEGRADED, "True", "InvalidSchedule")
    })
    .await;
    assert_eq!(condition(&cj, DEGRADED).unwrap().message, TOO_MANY_MISSED);
    op.settle("wedged").await;
    assert!(op.job_names().await.is_empty());

    // A deadline bounds the walk: the latest minute runs.
    op.cronjobs()
        .patch(
            "wedged",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"startingDeadlineSeconds": 200}})),
        )
        .await
        .expect("set the deadline");
    let latest = Timestamp::from_second(now.as_second() - now.as_second().rem_euclid(60)).unwrap();
    op.job_appears(&job_name("wedged", latest)).await;
    op.settle("wedged").await;
    assert_eq!(op.job_names().await, [job_name("wedged", latest)]);
    // Degraded is never reset (the reference's behaviour).
    let cj = op.get("wedged").await;
    assert!(
        has_condition(&cj, DEGRADED, "True", "InvalidSchedule"),
        "{:?}",
        cj.status
    );

    // A schedule that never fires walks robfig's zero time into the same
    // error.
    let never = op.create(&cron_job("never", "0 0 30 2 *")).await;
    op.wake(&never.name_any()).await;
    let cj = cron_job_where(&op, "never", "Degraded=True/InvalidSchedule", |cj| {
        has_condition(cj, DEGRADED, "True", "InvalidSchedule")
    })
    .await;
    assert_eq!(condition(&cj, DEGRADED).unwrap().message, TOO_MANY_MISSED);
    op.stop().await;
}

/// With limits of 0 each finished Job is deleted. The status is rebuilt
/// from the Jobs alone, so once the Job of the latest run is gone the
/// reference counts from the creation time again and runs that run anew
/// (a fresh Job of the same name): pinned here as the reference's
/// behaviour.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_limits_of_zero_delete_every_finished_job() {
    let mut cj = cron_job("keep-none", "*/5 * * * *");
    cj.spec.successful_jobs_history_limit = Some(0);
    cj.spec.failed_jobs_history_limit = Some(0);
    let (op, created) = start_with(cj).await;
    op.create(&cron_job("keep-all", "*/5 * * * *")).await;
    let b1 = next_multiple(created, FIVE_MINUTES);
    let b2 = plus(b1, FIVE_MINUTES);

    for (at, outcome) in [(b1, Outcome::Complete), (b2, Outcome::Failed)] {
        op.clock.set(at);
        for name in ["keep-none", "keep-all"] {
            op.wake(name).await;
            op.job_appears(&job_name(name, at)).await;
        }
        let finished = op.finish_job(&job_name("keep-none", at), outcome, at).await;
        op.finish_job(&job_name("keep-all", at), outcome, at).await;
        let uid = finished.metadata.uid.clone();
        eventually(
            "the finished Job deleted and its run started again",
            || async {
                let job = op.jobs().get_opt(&job_name("keep-none", at)).await.unwrap();
                job.is_some_and(|job| job.metadata.uid != uid).then_some(())
            },
        )
        .await;
    }
    let deleted = events_with_reason(&op, SUCCESSFUL_DELETE).await;
    assert!(deleted.len() >= 2, "{deleted:?}");
    // Limits left unset keep them all; both runs of `keep-none` are
    // running again, unfinished.
    op.settle("keep-all").await;
    op.settle("keep-none").await;
    assert_eq!(
        op.job_names().await,
        [
            job_name("keep-all", b1),
            job_name("keep-all", b2),
            job_name("keep-none", b1),
            job_name("keep-none", b2)
        ]
    );
    for at in [b1, b2] {
        let rerun = op.jobs().get(&job_name("keep-none", at)).await.unwrap();
        assert!(rerun.status.is_none_or(|s| s.conditions.is_none()));
    }
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_schedule_stored_without_webhooks_is_reported() {
    let (op, created) = start_with(cron_job("bad", "bad")).await;
    let cj = cron_job_where(&op, "bad", "Degraded=True/InvalidSchedule", |cj| {
        has_condition(cj, DEGRADED, "True", "InvalidSchedule")
    })
    .await;
    assert_eq!(
        condition(&cj, DEGRADED).unwrap().message,
        r#"unparseable schedule "bad": Expected exactly 5 fields, found 1: bad"#
    );
    op.clock.set(plus(created, 3600));
    op.settle("bad").await;
    assert!(op.job_names().await.is_empty());
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ninety_seconds_runs_at_ninety_second_steps_from_creation() {
    let (op, created) = start_with(cron_job("every", "@every 90s")).await;
    let first = plus(created, 90);
    let second = plus(created, 180);
    op.at(first, "every").await;
    op.job_appears(&job_name("every", first)).await;
    op.at(second, "every").await;
    op.job_appears(&job_name("every", second)).await;
    op.settle("every").await;
    assert_eq!(
        op.job_names().await,
        [job_name("every", first), job_name("every", second)]
    );
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eleventh_active_job_cannot_be_recorded() {
    let (op, created) = start_with(cron_job("busy", "* * * * *")).await;
    let first = next_multiple(created, 60);
    let runs: Vec<Timestamp> = (0..11).map(|i| plus(first, 60 * i)).collect();
    for &run in &runs {
        op.at(run, "busy").await;
        op.job_appears(&job_name("busy", run)).await;
    }
    // `active` has maxItems 10: the status write with eleven is refused,
    // the stored status keeps ten, and the reconcile fails before it can
    // run the next minute.
    op.clock.set(plus(runs[10], 60));
    op.settle("busy").await;
    let cj = op.get("busy").await;
    assert_eq!(active_names(&cj).len(), 10, "{:?}", cj.status);
    assert_eq!(op.job_names().await.len(), 11);
    op.stop().await;
}
