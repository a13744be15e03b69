//! The `CronJob` custom resource (`batch.tutorial.kubebuilder.io/v2`): v1
//! with the schedule given field by field instead of as one Cron string.
//! The API server stores v1; v2 is converted to and from it
//! (`cron_job_conversion.rs`).

use kubeforge::k8s_openapi::api::batch::v1::JobTemplateSpec;
use kubeforge::k8s_openapi::api::core::v1::ObjectReference;
use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kubeforge::prelude::*;

pub use crate::api::batch::v1::ConcurrencyPolicy;

/// What a CronJob asks for: when to run, how, and how much history to keep.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "batch.tutorial.kubebuilder.io",
    version = "v2",
    kind = "CronJob",
    plural = "cronjobs",
    status = "CronJobStatus",
    derive(PartialEq)
)]
#[serde(rename_all = "camelCase")]
pub struct CronJobSpec {
    /// The schedule, field by field; a field left out is `*`.
    pub schedule: CronSchedule,

    /// Optional deadline in seconds for starting the job if it misses its
    /// scheduled time for any reason. Missed job executions are counted as
    /// failed ones.
    #[crd(minimum = 0)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starting_deadline_seconds: Option<i64>,

    /// How to treat concurrent executions of a Job: `Allow` (the default)
    /// runs them side by side, `Forbid` skips a run while the previous one
    /// is still going, `Replace` cancels the running one for the new one.
    #[crd(default = "Allow")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<ConcurrencyPolicy>,

    /// Tells the controller to suspend subsequent executions; it does not
    /// apply to executions already started. Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,

    /// The Job to create at each scheduled time.
    pub job_template: JobTemplateSpec,

    /// The number of successful finished jobs to retain. A pointer, so that
    /// an explicit zero differs from unset.
    #[crd(minimum = 0)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successful_jobs_history_limit: Option<i32>,

    /// The number of failed finished jobs to retain. A pointer, so that an
    /// explicit zero differs from unset.
    #[crd(minimum = 0)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_jobs_history_limit: Option<i32>,
}

/// A Cron schedule, one field at a time.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronSchedule {
    /// The minute field (`*` when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minute: Option<CronField>,
    /// The hour field (`*` when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hour: Option<CronField>,
    /// The day-of-month field (`*` when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day_of_month: Option<CronField>,
    /// The month field (`*` when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub month: Option<CronField>,
    /// The day-of-week field (`*` when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day_of_week: Option<CronField>,
}

/// One field of a Cron schedule, such as `*/5` or `1-5`.
pub type CronField = String;

impl CronSchedule {
    /// The schedule as one Cron string: the five fields in order, `*` for
    /// each one left out, joined by single spaces.
    pub fn to_cron(&self) -> String {
        [
            &self.minute,
            &self.hour,
            &self.day_of_month,
            &self.month,
            &self.day_of_week,
        ]
        .iter()
        .map(|field| field.as_deref().unwrap_or("*"))
        .collect::<Vec<_>>()
        .join(" ")
    }
}

/// What the controller observed of a CronJob.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronJobStatus {
    /// Pointers to the currently running jobs. Left out when there are none:
    /// the schema asks for at least one item.
    #[crd(list_type = "atomic", min_items = 1, max_items = 10)]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active: Vec<ObjectReference>,

    /// The last time the job was successfully scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,

    /// The latest observations of the CronJob's state, one per `type`.
    #[crd(list_type = "map", list_map_keys = ["type"])]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
