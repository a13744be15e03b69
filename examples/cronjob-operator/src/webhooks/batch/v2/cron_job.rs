//! The `CronJob` webhooks (`batch.tutorial.kubebuilder.io/v2`): the same
//! defaults and rules as v1's, the schedule checked once its fields are
//! joined into a Cron string, its error prefixed as the tutorial's v2 does.

use kubeforge::prelude::ResourceExt as _;
use kubeforge::webhook::{
    AdmissionRequest, AdmissionResult, Defaulter, MatchPolicy, Validator, WebhookOptions,
};
use kubeforge::Manager;

use crate::api::batch::v2::CronJob;
use crate::webhooks::batch::v1::cron_job::{validate, CronJobDefaults};

/// What v2 puts before the parser's message.
pub const SCHEDULE_ERROR_PREFIX: &str = "invalid cron schedule format: ";

/// The CronJob webhooks, with the defaults they apply.
#[derive(Clone, Debug, Default)]
pub struct CronJobWebhook {
    /// What unset fields become.
    pub defaults: CronJobDefaults,
}

/// Registers the webhooks with `mgr`, at kubebuilder's paths
/// (`/mutate-batch-tutorial-kubebuilder-io-v2-cronjob`, `/validate-...`).
pub fn register(mgr: &Manager) {
    // `Defaulter::default` shadows `Default::default` on the webhook type.
    let webhook = CronJobWebhook {
        defaults: CronJobDefaults::default(),
    };
    // Each version's webhooks see requests at that version only: with the
    // API server's default (Equivalent), a request at the other version
    // would be converted first, and a schedule that version cannot express
    // would fail the conversion before the validator could answer.
    let exact = WebhookOptions::default().match_policy(MatchPolicy::Exact);
    mgr.webhooks()
        .defaulter_with::<CronJob, _>(webhook.clone(), exact.clone())
        .validator_with::<CronJob, _>(webhook, exact);
}

impl Defaulter<CronJob> for CronJobWebhook {
    /// Fills in the fields a CronJob leaves unset; set ones are kept.
    async fn default(&self, obj: &mut CronJob, _request: &AdmissionRequest) -> AdmissionResult {
        let spec = &mut obj.spec;
        self.defaults.fill(
            &mut spec.concurrency_policy,
            &mut spec.suspend,
            &mut spec.successful_jobs_history_limit,
            &mut spec.failed_jobs_history_limit,
        );
        Ok(vec![])
    }
}

impl Validator<CronJob> for CronJobWebhook {
    /// Checks a new CronJob.
    async fn validate_create(&self, obj: &CronJob, _request: &AdmissionRequest) -> AdmissionResult {
        validate(
            &obj.name_any(),
            &obj.spec.schedule.to_cron(),
            SCHEDULE_ERROR_PREFIX,
        )
    }

    /// Checks a change to a CronJob.
    async fn validate_update(
        &self,
        _old: &CronJob,
        new: &CronJob,
        _request: &AdmissionRequest,
    ) -> AdmissionResult {
        validate(
            &new.name_any(),
            &new.spec.schedule.to_cron(),
            SCHEDULE_ERROR_PREFIX,
        )
    }
}
