//! The `CronJob` webhooks (`batch.tutorial.kubebuilder.io/v1`): a defaulter
//! and a validator. The API server calls them on every create and
//! update of a CronJob at `v1`; `kubeforge generate` writes their
//! configurations to `config/webhook/manifests.yaml`.
//!
//! The rules here are examples that the generated test checks: replace them
//! with the operator's own.

use kubeforge::prelude::ResourceExt as _;
use kubeforge::webhook::{AdmissionRequest, AdmissionResult, Defaulter, Denial, Validator};
use kubeforge::Manager;

use crate::api::batch::v1::CronJob;

/// What `spec.foo` is set to when a CronJob is written without it.
pub const DEFAULT_FOO: &str = "default";

/// The CronJob webhooks. Give it what they need (a client, settings) as
/// fields.
#[derive(Clone, Debug, Default)]
pub struct CronJobWebhook;

/// Registers the webhooks with `mgr`, at kubebuilder's paths
/// (`/mutate-batch-tutorial-kubebuilder-io-v1-cronjob`, `/validate-...`); the
/// `*_with` forms take `WebhookOptions` (paths, operations, failure policy).
pub fn register(mgr: &Manager) {
    mgr.webhooks()
        .defaulter::<CronJob, _>(CronJobWebhook)
        .validator::<CronJob, _>(CronJobWebhook);
}

impl Defaulter<CronJob> for CronJobWebhook {
    /// Fills in what a CronJob leaves out; the framework sends the
    /// change to the API server as a JSON patch. The warning is shown by
    /// kubectl.
    async fn default(&self, obj: &mut CronJob, _request: &AdmissionRequest) -> AdmissionResult {
        // TODO(user): set the defaults a schema cannot express.
        if obj.spec.foo.is_some() {
            return Ok(vec![]);
        }
        obj.spec.foo = Some(DEFAULT_FOO.to_owned());
        Ok(vec![format!(
            "spec.foo was not set: defaulted to {DEFAULT_FOO:?}"
        )])
    }
}

impl Validator<CronJob> for CronJobWebhook {
    /// Checks a new CronJob.
    async fn validate_create(&self, obj: &CronJob, _request: &AdmissionRequest) -> AdmissionResult {
        validate(obj)
    }

    /// Checks a change to a CronJob.
    async fn validate_update(
        &self,
        _old: &CronJob,
        new: &CronJob,
        _request: &AdmissionRequest,
    ) -> AdmissionResult {
        validate(new)
    }

    // Deletions are allowed: implement `validate_delete` and register the
    // validator with `Operation::Delete` to check them.
}

/// The rules a schema cannot express. TODO(user): replace the example:
/// `spec.foo`, when set, is lowercase letters, digits and '-'.
fn validate(obj: &CronJob) -> AdmissionResult {
    let Some(foo) = obj.spec.foo.as_deref() else {
        return Ok(vec![]);
    };
    let valid = !foo.is_empty()
        && foo
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(Denial::invalid("CronJob", obj.name_any()).with_cause(
            "spec.foo",
            "FieldValueInvalid",
            format!("Invalid value: {foo:?}: must be lowercase letters, digits and '-'"),
        ));
    }
    Ok(vec![])
}
