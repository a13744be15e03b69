//! Core (`v1`) Events: field selectors on the involved object and the
//! reporter, no name rule but the generic store's path segment
//! (`legacyValidateEvent`), created by a PUT (`pkg/registry/core/event`),
//! and kubectl's `LAST SEEN TYPE REASON OBJECT MESSAGE` row.

use k8s_openapi::api::core::v1::Event;
use serde_json::{json, Value};

use crate::machinery::util::{age_secs, human_duration, NameRule, Pointer};
use crate::registry::printers::{name, str_at, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin, FieldLabelConversion};

pub(crate) static CORE_EVENT: Builtin = Builtin {
    short_names: &["ev"],
    field_label_conversion: FieldLabelConversion::Own,
    field_labels: &[
        ("involvedObject.kind", "involvedObject.kind"),
        ("involvedObject.namespace", "involvedObject.namespace"),
        ("involvedObject.name", "involvedObject.name"),
        ("involvedObject.uid", "involvedObject.uid"),
        ("involvedObject.apiVersion", "involvedObject.apiVersion"),
        (
            "involvedObject.resourceVersion",
            "involvedObject.resourceVersion",
        ),
        ("involvedObject.fieldPath", "involvedObject.fieldPath"),
        ("reason", "reason"),
        ("reportingComponent", "reportingComponent"),
        ("source", "source.component"),
        ("type", "type"),
    ],
    printer: Printer {
        columns: &[
            Str("Last Seen", 0),
            Str("Type", 0),
            Str("Reason", 0),
            Str("Object", 0),
            Str("Message", 0),
            Name,
        ],
        cells,
    },
    create_on_update: true,
    name_rule: NameRule::PathSegment,
    ..builtin::<Event>("", "events", "Event")
};

/// The cells of an Event row.
fn cells(o: &Value) -> Vec<Value> {
    let last = o
        .at("/lastTimestamp")
        .filter(|v| !v.is_null())
        .or_else(|| o.at("/eventTime"))
        .or_else(|| o.at("/metadata/creationTimestamp"));
    vec![
        json!(human_duration(age_secs(last))),
        json!(str_at(o, "/type")),
        json!(str_at(o, "/reason")),
        json!(format!(
            "{}/{}",
            str_at(o, "/involvedObject/kind").to_ascii_lowercase(),
            str_at(o, "/involvedObject/name")
        )),
        json!(str_at(o, "/message")),
        name(o),
    ]
}
