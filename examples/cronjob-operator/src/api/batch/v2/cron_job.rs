//! The `CronJob` custom resource (`batch.tutorial.kubebuilder.io/v2`).
//!
//! Change the spec and status as the operator needs, then run
//! `kubeforge generate`: the CRD is derived from these types.

use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kubeforge::prelude::*;

/// What a CronJob asks for.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "batch.tutorial.kubebuilder.io",
    version = "v2",
    kind = "CronJob",
    plural = "cronjobs",
    status = "CronJobStatus",
    printcolumn(
        name = "Ready",
        type = string,
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(name = "Age", type = date, json_path = ".metadata.creationTimestamp"),
    derive(PartialEq)
)]
#[serde(rename_all = "camelCase")]
pub struct CronJobSpec {
    /// An example field: replace it with the operator's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foo: Option<String>,
}

/// What the controller observed of a CronJob.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronJobStatus {
    /// The latest observations, one per `type` (`Ready`, ...).
    #[crd(list_type = "map", list_map_keys = ["type"])]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,

    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
