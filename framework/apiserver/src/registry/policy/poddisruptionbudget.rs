//! PodDisruptionBudgets: no defaults, names checked only as path segments
//! (`ValidatePodDisruptionBudget` checks the spec alone), generation by
//! `spec`, and the `MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS`
//! row.

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{json, Value};

use crate::machinery::util::{NameRule, Pointer};
use crate::registry::printers::{age, str_at, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin, SPEC};

pub(crate) static PDB: Builtin = Builtin {
    short_names: &["pdb"],
    status: true,
    generation: Some(SPEC),
    printer: Printer {
        columns: &[
            Name,
            Str("Min Available", 0),
            Str("Max Unavailable", 0),
            Int("Allowed Disruptions", 0),
            Age,
        ],
        cells,
    },
    name_rule: NameRule::PathSegment,
    ..builtin::<PodDisruptionBudget>("policy", "poddisruptionbudgets", "PodDisruptionBudget")
};

fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".into(),
    }
}

/// `printPodDisruptionBudget`: NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED
/// DISRUPTIONS AGE.
fn cells(o: &Value) -> Vec<Value> {
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(int_or_string(o.at("/spec/minAvailable"))),
        json!(int_or_string(o.at("/spec/maxUnavailable"))),
        json!(o
            .at("/status/disruptionsAllowed")
            .and_then(Value::as_i64)
            .unwrap_or(0)),
        age(o),
    ]
}
