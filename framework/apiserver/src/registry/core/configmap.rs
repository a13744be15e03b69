//! ConfigMaps: no defaults (`data: {}` is dropped by omitempty), the
//! `DATA` column counting both maps.

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{json, Value};

use crate::registry::printers::{age, len_at, name, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin};

pub(crate) static CONFIGMAP: Builtin = Builtin {
    short_names: &["cm"],
    printer: Printer {
        columns: &[Name, Int("Data", 0), Age],
        cells,
    },
    ..builtin::<ConfigMap>("", "configmaps", "ConfigMap")
};

/// The cells of a ConfigMap row.
fn cells(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(len_at(o, "/data") + len_at(o, "/binaryData")),
        age(o),
    ]
}
