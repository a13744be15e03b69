//! StatefulSets: `SetDefaults_StatefulSet` (pod management, update
//! strategy, PVC retention, each volumeClaimTemplate as a claim) and the
//! template's PodSpec, generation by `spec`, the scale subresource, and
//! the `READY` row.

use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::{json, Value};

use super::{validate_workload as validate, TEMPLATE};
use crate::registry::core::pod_spec::template;
use crate::registry::core::pod_spec::PVC_SPEC;
use crate::registry::fields::{fill, items_mut, obj_mut, object_in, spec_mut, Table, D};
use crate::registry::printers::{age, containers, int_at, name, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin, Defaults, ALL, SPEC};

const FIELDS: Table = &[
    ("podManagementPolicy", D::Str("OrderedReady")),
    ("replicas", D::PtrInt(1)),
    ("revisionHistoryLimit", D::PtrInt(10)),
];

const ROLLING: Table = &[
    ("partition", D::PtrInt(0)),
    ("maxUnavailable", D::PtrInt(1)),
];

const PVC_RETENTION: Table = &[
    ("whenDeleted", D::Str("Retain")),
    ("whenScaled", D::Str("Retain")),
];

pub(crate) static STATEFULSET: Builtin = Builtin {
    short_names: &["sts"],
    categories: ALL,
    status: true,
    scale: true,
    generation: Some(SPEC),
    printer: Printer {
        columns: &[
            Name,
            Str("Ready", 0),
            Age,
            Str("Containers", 1),
            Str("Images", 1),
        ],
        cells,
    },
    defaults: Defaults::fields(defaults),
    validate,
    ..builtin::<StatefulSet>("apps", "statefulsets", "StatefulSet")
};

/// `SetDefaults_StatefulSet`: unlike the others, an explicit
/// `RollingUpdate` type without `rollingUpdate` stays without it.
pub(super) fn defaults(obj: &mut Value) {
    if let Some(spec) = spec_mut(obj) {
        fill(spec, FIELDS);
        if let Some(strategy) = object_in(spec, "updateStrategy") {
            if strategy
                .get("type")
                .is_none_or(|t| t.as_str().is_none_or(str::is_empty))
            {
                strategy.insert("type".into(), "RollingUpdate".into());
                object_in(strategy, "rollingUpdate");
            }
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                if let Some(ru) = obj_mut(strategy, "rollingUpdate") {
                    fill(ru, ROLLING);
                }
            }
        }
        if let Some(policy) = object_in(spec, "persistentVolumeClaimRetentionPolicy") {
            fill(policy, PVC_RETENTION);
        }
        for claim in items_mut(spec, "volumeClaimTemplates") {
            if let Some(status) = object_in(claim, "status") {
                fill(status, &[("phase", D::Str("Pending"))]);
            }
            if let Some(claim_spec) = object_in(claim, "spec") {
                fill(claim_spec, PVC_SPEC);
            }
        }
    }
    template(obj, TEMPLATE);
}

/// The cells of a StatefulSet row.
fn cells(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(format!(
            "{}/{}",
            int_at(o, "/status/readyReplicas"),
            int_at(o, "/spec/replicas")
        )),
        age(o),
        json!(containers(o, "/spec/template/spec/containers", "name")),
        json!(containers(o, "/spec/template/spec/containers", "image")),
    ]
}
