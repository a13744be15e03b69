//! The `CronJob` webhooks (`batch.tutorial.kubebuilder.io/v1`): the
//! tutorial's defaulter (concurrency policy, suspend and history limits)
//! and validator (a name short enough for the Jobs named after it, and a
//! schedule robfig/cron parses). `kubeforge generate` writes their
//! configurations to `config/webhook/manifests.yaml`.

use kubeforge::prelude::ResourceExt as _;
use kubeforge::webhook::{
    AdmissionRequest, AdmissionResult, Defaulter, Denial, MatchPolicy, Validator, WebhookOptions,
};
use kubeforge::Manager;

use crate::api::batch::v1::{ConcurrencyPolicy, CronJob};
use crate::schedule;

/// The kind as the API server names it in a denial.
pub const QUALIFIED_KIND: &str = "CronJob.batch.tutorial.kubebuilder.io";

/// The longest CronJob name: a Job is named `<cronjob>-<unix time>` (11
/// more characters) and must stay a 63-character DNS label.
pub const MAX_NAME_LENGTH: usize = 63 - 11;

/// What the defaulter fills in when a CronJob leaves it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronJobDefaults {
    /// `spec.concurrencyPolicy`.
    pub concurrency_policy: ConcurrencyPolicy,
    /// `spec.suspend`.
    pub suspend: bool,
    /// `spec.successfulJobsHistoryLimit`.
    pub successful_jobs_history_limit: i32,
    /// `spec.failedJobsHistoryLimit`.
    pub failed_jobs_history_limit: i32,
}

impl Default for CronJobDefaults {
    fn default() -> Self {
        CronJobDefaults {
            concurrency_policy: ConcurrencyPolicy::Allow,
            suspend: false,
            successful_jobs_history_limit: 3,
            failed_jobs_history_limit: 1,
        }
    }
}

impl CronJobDefaults {
    /// Sets each of the spec's defaulted fields that is unset; set ones are
    /// kept. Both versions' specs have these four fields.
    pub fn fill(
        &self,
        concurrency_policy: &mut Option<ConcurrencyPolicy>,
        suspend: &mut Option<bool>,
        successful_jobs_history_limit: &mut Option<i32>,
        failed_jobs_history_limit: &mut Option<i32>,
    ) {
        concurrency_policy.get_or_insert(self.concurrency_policy);
        suspend.get_or_insert(self.suspend);
        successful_jobs_history_limit.get_or_insert(self.successful_jobs_history_limit);
        failed_jobs_history_limit.get_or_insert(self.failed_jobs_history_limit);
    }
}

/// The CronJob webhooks, with the defaults they apply.
#[derive(Clone, Debug, Default)]
pub struct CronJobWebhook {
    /// What unset fields become.
    pub defaults: CronJobDefaults,
}

/// Registers the webhooks with `mgr`, at kubebuilder's paths
/// (`/mutate-batch-tutorial-kubebuilder-io-v1-cronjob`, `/validate-...`).
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
        validate(&obj.name_any(), &obj.spec.schedule, "")
    }

    /// Checks a change to a CronJob.
    async fn validate_update(
        &self,
        _old: &CronJob,
        new: &CronJob,
        _request: &AdmissionRequest,
    ) -> AdmissionResult {
        validate(&new.name_any(), &new.spec.schedule, "")
    }

    // Deletions are allowed, as in the tutorial.
}

/// The tutorial's rules, shared by both versions: the name is at most
/// [`MAX_NAME_LENGTH`] characters and the schedule parses (its error
/// message after `schedule_prefix`). Every broken rule is listed in one
/// denial, as apimachinery's `NewInvalid` lists its field errors.
pub fn validate(name: &str, schedule: &str, schedule_prefix: &str) -> AdmissionResult {
    let mut denial = None;
    if name.len() > MAX_NAME_LENGTH {
        denial = Some(invalid(name).with_cause(
            "metadata.name",
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: must be no more than {MAX_NAME_LENGTH} characters",
                schedule::quote(name)
            ),
        ));
    }
    if let Err(err) = schedule::parse_standard(schedule) {
        denial = Some(denial.unwrap_or_else(|| invalid(name)).with_cause(
            "spec.schedule",
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: {schedule_prefix}{err}",
                schedule::quote(schedule)
            ),
        ));
    }
    match denial {
        Some(denial) => Err(denial),
        None => Ok(vec![]),
    }
}

fn invalid(name: &str) -> Denial {
    Denial::invalid(QUALIFIED_KIND, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_cronjob_passes() {
        assert_eq!(validate("hello", "*/5 * * * *", ""), Ok(vec![]));
    }

    #[test]
    fn a_52_character_name_passes_and_53_do_not() {
        assert!(validate(&"a".repeat(52), "* * * * *", "").is_ok());
        let denial = validate(&"a".repeat(53), "* * * * *", "").unwrap_err();
        assert_eq!(
            denial.status.message.as_deref(),
            Some(&*format!(
                "{QUALIFIED_KIND} \"{0}\" is invalid: metadata.name: Invalid value: \"{0}\": must be no more than 52 characters",
                "a".repeat(53)
            ))
        );
        assert_eq!(denial.status.code, Some(422));
    }

    #[test]
    fn a_bad_name_and_schedule_are_both_listed() {
        let name = "a".repeat(53);
        let denial = validate(&name, "x", "").unwrap_err();
        let causes = denial.status.details.unwrap().causes.unwrap();
        let fields: Vec<_> = causes.iter().filter_map(|c| c.field.as_deref()).collect();
        assert_eq!(fields, ["metadata.name", "spec.schedule"]);
        assert!(denial
            .status
            .message
            .unwrap()
            .contains(": [metadata.name: "));
    }
}
