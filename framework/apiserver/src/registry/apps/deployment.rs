//! Deployments: `SetDefaults_Deployment` (replicas, rolling update,
//! history and progress deadline) and the template's PodSpec, generation
//! by `spec`, the scale subresource, and the `READY UP-TO-DATE AVAILABLE`
//! row.

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::{json, Value};

use super::rolling_strategy;
use super::{validate_workload as validate, TEMPLATE};
use crate::registry::core::pod_spec::template;
use crate::registry::fields::{fill, spec_mut, Table, D};
use crate::registry::printers::{age, containers, int_at, name, selector, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin, Defaults, ALL, SPEC};

/// `SetDefaults_Deployment`'s plain fields.
const FIELDS: Table = &[
    ("replicas", D::PtrInt(1)),
    ("revisionHistoryLimit", D::PtrInt(10)),
    ("progressDeadlineSeconds", D::PtrInt(600)),
];

const ROLLING: Table = &[
    ("maxUnavailable", D::PtrStr("25%")),
    ("maxSurge", D::PtrStr("25%")),
];

pub(crate) static DEPLOYMENT: Builtin = Builtin {
    short_names: &["deploy"],
    categories: ALL,
    status: true,
    scale: true,
    generation: Some(SPEC),
    printer: Printer {
        columns: &[
            Name,
            Str("Ready", 0),
            Int("Up-to-date", 0),
            Int("Available", 0),
            Age,
            Str("Containers", 1),
            Str("Images", 1),
            Str("Selector", 1),
        ],
        cells,
    },
    defaults: Defaults::fields(defaults),
    validate,
    ..builtin::<Deployment>("apps", "deployments", "Deployment")
};

/// `SetDefaults_Deployment`.
pub(super) fn defaults(obj: &mut Value) {
    if let Some(spec) = spec_mut(obj) {
        fill(spec, FIELDS);
        rolling_strategy(spec, "strategy", ROLLING);
    }
    template(obj, TEMPLATE);
}

/// The cells of a Deployment row.
fn cells(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(format!(
            "{}/{}",
            int_at(o, "/status/readyReplicas"),
            int_at(o, "/spec/replicas")
        )),
        json!(int_at(o, "/status/updatedReplicas")),
        json!(int_at(o, "/status/availableReplicas")),
        age(o),
        json!(containers(o, "/spec/template/spec/containers", "name")),
        json!(containers(o, "/spec/template/spec/containers", "image")),
        json!(selector(o, "/spec/selector")),
    ]
}
