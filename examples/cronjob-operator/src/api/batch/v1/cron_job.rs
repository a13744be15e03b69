//! The `CronJob` custom resource (`batch.tutorial.kubebuilder.io/v1`): a
//! schedule and a Job template; the controller runs the template as a Job at
//! each scheduled time. v1 is the version the API server stores, and the hub
//! v2 converts through.

use kubeforge::k8s_openapi::api::batch::v1::JobTemplateSpec;
use kubeforge::k8s_openapi::api::core::v1::ObjectReference;
use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kubeforge::prelude::*;

/// What a CronJob asks for: when to run, how, and how much history to keep.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "batch.tutorial.kubebuilder.io",
    version = "v1",
    kind = "CronJob",
    plural = "cronjobs",
    status = "CronJobStatus",
    // The version the API server stores; v2 is converted to it.
    storage,
    derive(PartialEq)
)]
#[serde(rename_all = "camelCase")]
pub struct CronJobSpec {
    /// The schedule in Cron format, see <https://en.wikipedia.org/wiki/Cron>.
    #[crd(min_length = 0)]
    pub schedule: String,

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

/// How to treat concurrent executions of a Job. Only one may be given.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ConcurrencyPolicy {
    /// CronJobs may run concurrently.
    Allow,
    /// Concurrent runs are forbidden: the next run is skipped while the
    /// previous one has not finished.
    Forbid,
    /// The currently running job is replaced by a new one.
    Replace,
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

    /// The latest observations of the CronJob's state, one per `type`
    /// (`Available`, `Progressing`, `Degraded`).
    #[crd(list_type = "map", list_map_keys = ["type"])]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
