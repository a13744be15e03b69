//! ReplicaSets: one replica by default and the template's PodSpec,
//! generation by `spec`, the scale subresource, the `status.replicas`
//! field selector, and the `DESIRED CURRENT READY` row.

use k8s_openapi::api::apps::v1::ReplicaSet;
use serde_json::{json, Value};

use super::{validate_workload as validate, TEMPLATE};
use crate::registry::core::pod_spec::template;
use crate::registry::fields::{fill, spec_mut, D};
use crate::registry::printers::{age, containers, int_at, name, selector, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin, Defaults, FieldLabelConversion, ALL, SPEC};

pub(crate) static REPLICASET: Builtin = Builtin {
    short_names: &["rs"],
    categories: ALL,
    status: true,
    scale: true,
    generation: Some(SPEC),
    field_label_conversion: FieldLabelConversion::Own,
    field_labels: &[("status.replicas", "status.replicas")],
    printer: Printer {
        columns: &[
            Name,
            Int("Desired", 0),
            Int("Current", 0),
            Int("Ready", 0),
            Age,
            Str("Containers", 1),
            Str("Images", 1),
            Str("Selector", 1),
        ],
        cells,
    },
    defaults: Defaults::fields(defaults),
    validate,
    ..builtin::<ReplicaSet>("apps", "replicasets", "ReplicaSet")
};

/// `SetDefaults_ReplicaSet`.
pub(super) fn defaults(obj: &mut Value) {
    if let Some(spec) = spec_mut(obj) {
        fill(spec, &[("replicas", D::PtrInt(1))]);
    }
    template(obj, TEMPLATE);
}

/// The cells of a ReplicaSet row.
fn cells(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(int_at(o, "/spec/replicas")),
        json!(int_at(o, "/status/replicas")),
        json!(int_at(o, "/status/readyReplicas")),
        age(o),
        json!(containers(o, "/spec/template/spec/containers", "name")),
        json!(containers(o, "/spec/template/spec/containers", "image")),
        json!(selector(o, "/spec/selector")),
    ]
}
