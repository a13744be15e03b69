//! DaemonSets: `SetDefaults_DaemonSet` (rolling update, history limit)
//! and the template's PodSpec, generation by `spec`, and the `DESIRED
//! CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR` row.

use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::{json, Value};

use super::rolling_strategy;
use super::{validate_workload as validate, TEMPLATE};
use crate::registry::core::pod_spec::template;
use crate::registry::fields::{fill, spec_mut, Table, D};
use crate::registry::printers::{age, containers, int_at, name, selector, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin, Defaults, ALL, SPEC};

const ROLLING: Table = &[("maxUnavailable", D::PtrInt(1)), ("maxSurge", D::PtrInt(0))];

pub(crate) static DAEMONSET: Builtin = Builtin {
    short_names: &["ds"],
    categories: ALL,
    status: true,
    generation: Some(SPEC),
    printer: Printer {
        columns: &[
            Name,
            Int("Desired", 0),
            Int("Current", 0),
            Int("Ready", 0),
            Int("Up-to-date", 0),
            Int("Available", 0),
            Str("Node Selector", 0),
            Age,
            Str("Containers", 1),
            Str("Images", 1),
            Str("Selector", 1),
        ],
        cells,
    },
    defaults: Defaults::fields(defaults),
    validate,
    ..builtin::<DaemonSet>("apps", "daemonsets", "DaemonSet")
};

/// `SetDefaults_DaemonSet`.
pub(super) fn defaults(obj: &mut Value) {
    if let Some(spec) = spec_mut(obj) {
        rolling_strategy(spec, "updateStrategy", ROLLING);
        fill(spec, &[("revisionHistoryLimit", D::PtrInt(10))]);
    }
    template(obj, TEMPLATE);
}

/// The cells of a DaemonSet row.
fn cells(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(int_at(o, "/status/desiredNumberScheduled")),
        json!(int_at(o, "/status/currentNumberScheduled")),
        json!(int_at(o, "/status/numberReady")),
        json!(int_at(o, "/status/updatedNumberScheduled")),
        json!(int_at(o, "/status/numberAvailable")),
        json!(selector(o, "/spec/template/spec/nodeSelector")),
        age(o),
        json!(containers(o, "/spec/template/spec/containers", "name")),
        json!(containers(o, "/spec/template/spec/containers", "image")),
        json!(selector(o, "/spec/selector")),
    ]
}
