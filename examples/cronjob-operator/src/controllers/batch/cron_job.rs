//! The `CronJob` controller: reconciles every CronJob
//! (`batch.tutorial.kubebuilder.io/v1`).

use std::sync::Arc;
use std::time::Duration;

use kubeforge::controller::{Action, Context};
use kubeforge::reconcile::conditions::{new_condition, set_condition_for, ConditionStatus};
use kubeforge::reconcile::Error;
use kubeforge::Manager;

use crate::api::batch::v1::CronJob;

/// The condition the controller sets once it has reconciled a CronJob.
pub const READY: &str = "Ready";

/// Registers the controller with `mgr`. Declare here what it owns
/// (`.owns::<Deployment>()`), watches (`.watches(...)`) and otherwise
/// reads or writes (`.rule(Rule::on::<Secret>().reads())`):
/// `kubeforge generate` derives the operator's RBAC from it.
pub fn register(mgr: &Manager) -> Result<(), Error> {
    mgr.controller::<CronJob>().reconcile(reconcile, ());
    Ok(())
}

/// Brings the cluster in line with one CronJob, then records in its
/// status that it did: a `Ready` condition and the generation it saw.
pub async fn reconcile(obj: Arc<CronJob>, ctx: Arc<Context<()>>) -> Result<Action, Error> {
    // TODO(user): make the cluster match `obj.spec` here.

    let mut status = obj.status.clone().unwrap_or_default();
    let ready = new_condition(
        READY,
        ConditionStatus::True,
        "Reconciled",
        "The spec is applied.",
    );
    let changed = set_condition_for(&mut status.conditions, &*obj, ready);
    if changed {
        ctx.client().patch_status(&*obj, &status).await?;
    }
    Ok(Action::requeue_after(Duration::from_secs(300)))
}
