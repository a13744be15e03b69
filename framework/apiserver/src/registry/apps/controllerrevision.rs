//! ControllerRevisions: no defaults, and the `CONTROLLER REVISION` row.

use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::{json, Value};

use crate::machinery::util::Pointer;
use crate::registry::printers::{age, str_at, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin};

pub(crate) static CONTROLLERREVISION: Builtin = Builtin {
    printer: Printer {
        columns: &[Name, Str("Controller", 0), Int("Revision", 0), Age],
        cells,
    },
    ..builtin::<ControllerRevision>("apps", "controllerrevisions", "ControllerRevision")
};

/// `printControllerRevision`: NAME CONTROLLER REVISION AGE.
fn cells(o: &Value) -> Vec<Value> {
    let controller = o
        .at("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .and_then(|rs| {
            rs.iter()
                .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        })
        .map(|r| {
            let api_version = str_at(r, "/apiVersion");
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let kind = str_at(r, "/kind").to_ascii_lowercase();
            let kind = if group.is_empty() {
                kind
            } else {
                format!("{kind}.{group}")
            };
            format!("{kind}/{}", str_at(r, "/name"))
        })
        .unwrap_or_else(|| "<none>".into());
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(controller),
        json!(o.get("revision").and_then(Value::as_i64).unwrap_or(0)),
        age(o),
    ]
}
