//! The `CronJob` controller (`batch.tutorial.kubebuilder.io/v1`): runs each
//! CronJob's Job template as a Job at every scheduled time, as the
//! kubebuilder tutorial's reconciler does, step for step. Submodules hold
//! the pure parts: the status rebuilt from the Jobs ([`status`]), the
//! missed and next runs ([`next_schedule`]) and the Job built for a run
//! ([`job`]).
//!
//! Time comes from a [`Clock`], so tests move a fake clock (and wake the
//! CronJob through a channel) instead of waiting for a schedule to fire.

pub mod job;
pub mod next_schedule;
pub mod status;

use std::cmp::Ordering;

use jiff::{SignedDuration, Timestamp};
use kubeforge::controller::Channel;
use kubeforge::k8s_openapi::api::batch::v1::Job;
use kubeforge::prelude::*;
use kubeforge::rbac::Write;
use kubeforge::reconcile::conditions::ConditionStatus;
use kubeforge::reconcile::owner::get_controller_of;
use kubeforge::reconcile::Error;
use tokio::sync::mpsc;

use crate::api::batch::v1::{ConcurrencyPolicy, CronJob};
use crate::clock::{Clock, SystemClock};
use status::{DEGRADED, PROGRESSING};

/// The field index the Jobs are listed by: the name of their controlling
/// CronJob.
pub const JOB_OWNER_KEY: &str = ".metadata.controller";

/// The annotation holding the time a Job was scheduled for (RFC 3339).
pub const SCHEDULED_AT: &str = "batch.tutorial.kubebuilder.io/scheduled-at";

/// The controller's name: its metrics label and its events' reporter.
pub const CONTROLLER_NAME: &str = "cronjob";

/// The reason of the event recorded when a Job is created.
pub const SUCCESSFUL_CREATE: &str = "SuccessfulCreate";

/// The reason of the event recorded when a Job is deleted.
pub const SUCCESSFUL_DELETE: &str = "SuccessfulDelete";

/// The reconciler's state: the clock it reads.
#[derive(Debug)]
pub struct CronJobReconciler {
    /// What time it is (the reference's `Clock`).
    pub clock: Arc<dyn Clock>,
}

/// Registers the controller with `mgr` on the system clock.
pub fn register(mgr: &Manager) -> Result<(), Error> {
    register_with(mgr, Arc::new(SystemClock), None)
}

/// Registers the controller with `mgr` on `clock`. Each CronJob `wake`
/// delivers (its name and namespace are enough) is reconciled at once: how
/// tests make a moved fake clock take effect.
pub fn register_with(
    mgr: &Manager,
    clock: Arc<dyn Clock>,
    wake: Option<mpsc::Receiver<CronJob>>,
) -> Result<(), Error> {
    let owner_api_version = CronJob::api_version(&()).into_owned();
    mgr.client()
        .index_field::<Job, _>(JOB_OWNER_KEY, move |job| {
            get_controller_of(job)
                .filter(|owner| owner.api_version == owner_api_version && owner.kind == "CronJob")
                .map(|owner| vec![owner.name.clone()])
                .unwrap_or_default()
        })?;
    // Whole Jobs, not metadata: the index lives on the full informer.
    // Declared writes, so the derived RBAC is what the reconcile uses: its
    // status replaced, Jobs created and pruned.
    let mut builder = mgr
        .controller::<CronJob>()
        .named(CONTROLLER_NAME)
        .writes_status([Write::Update])
        .owns_objects::<Job>(Owns::new().writes([Write::Create, Write::Delete]));
    if let Some(wake) = wake {
        builder = builder.watches_channel(Channel::new(wake));
    }
    builder.reconcile(reconcile, CronJobReconciler { clock });
    Ok(())
}

/// Reconciles one CronJob: rebuilds its status from its Jobs, prunes their
/// history, and creates the Job of the latest missed run, if any and if
/// the concurrency policy allows; then waits for the next run.
pub async fn reconcile(
    cj: Arc<CronJob>,
    ctx: Arc<Context<CronJobReconciler>>,
) -> Result<Action, Error> {
    let clock = &ctx.clock;
    let ns = cj.namespace().unwrap_or_default();
    let name = cj.name_any();
    // The last status write's answer, so successive writes chain
    // resourceVersions as Go's in-place `Status().Update` does.
    let mut cur = CronJob::clone(&cj);

    // 1: a CronJob seen for the first time is being reconciled.
    if cur.status.as_ref().is_none_or(|s| s.conditions.is_empty()) {
        let status = cur.status.get_or_insert_default();
        status::set(
            &mut status.conditions,
            PROGRESSING,
            ConditionStatus::Unknown,
            "Reconciling",
            "Starting reconciliation",
            clock.now(),
        );
        cur = ctx.client().replace_status(&cur).await?;
    }

    // 2: its Jobs, through the controller-owner index.
    let listed = ctx
        .client()
        .list::<Job>(
            &ns,
            &ListOptions::default().matching_field(JOB_OWNER_KEY, &name),
        )
        .await;
    let jobs = match listed {
        Ok(jobs) => jobs,
        Err(e) => {
            let message = format!("Failed to list child jobs: {e}");
            degrade(&ctx, &mut cur, "ReconciliationError", message).await;
            return Err(e);
        }
    };

    // 3 and 4: the status rebuilt from them.
    let children = status::classify(jobs);
    let suspended = cur.spec.suspend == Some(true);
    status::rebuild(
        cur.status.get_or_insert_default(),
        &children,
        suspended,
        clock.now(),
    );
    tracing::debug!(
        active = children.active.len(),
        successful = children.successful.len(),
        failed = children.failed.len(),
        "job count"
    );
    cur = ctx.client().replace_status(&cur).await?;

    // 5: history cleanup, best effort.
    if let Some(limit) = cur.spec.failed_jobs_history_limit {
        prune(&ctx, &cur, children.failed, limit).await;
    }
    if let Some(limit) = cur.spec.successful_jobs_history_limit {
        prune(&ctx, &cur, children.successful, limit).await;
    }

    // 6: a suspended CronJob runs nothing.
    if suspended {
        tracing::debug!("cronjob suspended, skipping");
        return Ok(Action::done());
    }

    // 7: the latest missed run and the next one.
    let earliest = cur
        .status
        .as_ref()
        .and_then(|s| s.last_schedule_time.as_ref())
        .or(cur.metadata.creation_timestamp.as_ref())
        .map_or(Timestamp::MIN, |t| t.0);
    let runs = match next_schedule::next_schedule(
        &cur.spec.schedule,
        earliest,
        cur.spec.starting_deadline_seconds,
        clock.now(),
    ) {
        Ok(runs) => runs,
        Err(message) => {
            tracing::error!(error = %message, "unable to figure out CronJob schedule");
            // Only a new spec can fix it: no requeue.
            degrade(&ctx, &mut cur, "InvalidSchedule", message).await;
            return Ok(Action::done());
        }
    };

    // 8: wait for the next run; nothing more if none was missed.
    let requeue = runs.next.map_or(Action::done(), |next| {
        Action::requeue_after(clock.until(next))
    });
    let Some(missed) = runs.missed else {
        tracing::debug!("no upcoming scheduled times, sleeping until next");
        return Ok(requeue);
    };

    // 9: too late for the missed run.
    if let Some(deadline) = cur.spec.starting_deadline_seconds {
        let latest_start = missed.saturating_add(SignedDuration::from_secs(deadline));
        if latest_start.is_ok_and(|latest| latest < clock.now()) {
            tracing::debug!("missed starting deadline for last run, sleeping till next");
            let message = format!("Missed starting deadline for run at {missed}");
            degrade(&ctx, &mut cur, "MissedSchedule", message).await;
            return Ok(requeue);
        }
    }

    // 10: the concurrency policy.
    match cur.spec.concurrency_policy {
        Some(ConcurrencyPolicy::Forbid) if !children.active.is_empty() => {
            tracing::debug!(
                active = children.active.len(),
                "concurrency policy blocks concurrent runs, skipping"
            );
            return Ok(requeue);
        }
        Some(ConcurrencyPolicy::Replace) => {
            for job in &children.active {
                match delete_job(&ctx, &cur, job).await {
                    Err(e) if !e.is_not_found() => return Err(e),
                    _ => {}
                }
            }
        }
        _ => {}
    }

    // 11: the Job for the missed run.
    let job = match job::job_for(&cur, missed) {
        Ok(job) => job,
        Err(e) => {
            tracing::error!(error = %e, "unable to construct job from template");
            return Ok(requeue);
        }
    };

    // 12: created, under a name unique to the run.
    let job_name = job.name_any();
    if let Err(e) = ctx.client().create(&job).await {
        tracing::error!(error = %e, job = %job_name, "unable to create Job for CronJob");
        let message = format!("Failed to create job: {e}");
        degrade(&ctx, &mut cur, "JobCreationFailed", message).await;
        return Err(e);
    }
    tracing::debug!(job = %job_name, "created Job for CronJob run");
    ctx.recorder()
        .event(&cur)
        .normal(SUCCESSFUL_CREATE, "Create")
        .note(format!("Created job {job_name}"))
        .publish()
        .await;
    let status = cur.status.get_or_insert_default();
    status::set(
        &mut status.conditions,
        PROGRESSING,
        ConditionStatus::True,
        "JobCreated",
        format!("Created job {job_name}"),
        clock.now(),
    );
    ctx.client().replace_status(&cur).await?;
    Ok(requeue)
}

/// Sets `Degraded=True` with `reason` and writes the status, best effort:
/// the error that led here is what the reconcile reports.
async fn degrade(
    ctx: &Context<CronJobReconciler>,
    cur: &mut CronJob,
    reason: &str,
    message: String,
) {
    let now = ctx.clock.now();
    let status = cur.status.get_or_insert_default();
    status::set(
        &mut status.conditions,
        DEGRADED,
        ConditionStatus::True,
        reason,
        message,
        now,
    );
    match ctx.client().replace_status(cur).await {
        Ok(written) => *cur = written,
        Err(e) => tracing::error!(error = %e, "unable to update CronJob status"),
    }
}

/// Deletes the oldest of `finished` (by start time, unstarted first) until
/// `limit` are left. Failures are logged, not retried.
async fn prune(
    ctx: &Context<CronJobReconciler>,
    cj: &CronJob,
    mut finished: Vec<Arc<Job>>,
    limit: i32,
) {
    let keep = usize::try_from(limit).unwrap_or(0);
    if finished.len() <= keep {
        return;
    }
    // Stable, as Go's `sort.Slice` is not, but with the same order.
    finished.sort_by(|a, b| match (start_time(a), start_time(b)) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => a.cmp(&b),
    });
    let excess = finished.len() - keep;
    for job in &finished[..excess] {
        match delete_job(ctx, cj, job).await {
            Ok(()) => tracing::info!(job = %job.name_any(), "deleted old job"),
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                tracing::error!(job = %job.name_any(), error = %e, "unable to delete old job")
            }
        }
    }
}

fn start_time(job: &Job) -> Option<Timestamp> {
    job.status.as_ref()?.start_time.as_ref().map(|t| t.0)
}

/// Deletes `job` with background propagation (its pods go after it) and
/// records it on `cj`.
async fn delete_job(
    ctx: &Context<CronJobReconciler>,
    cj: &CronJob,
    job: &Job,
) -> Result<(), Error> {
    let name = job.name_any();
    ctx.client()
        .delete::<Job>(
            &job.namespace().unwrap_or_default(),
            &name,
            &DeleteParams::background(),
        )
        .await?;
    ctx.recorder()
        .event(cj)
        .normal(SUCCESSFUL_DELETE, "Delete")
        .note(format!("Deleted job {name}"))
        .publish()
        .await;
    Ok(())
}
