//! `events.k8s.io/v1` Events, served from the core events storage
//! (kube-apiserver keeps a single `events` registry), so `kubectl
//! describe` sees what the events API wrote and the other way round;
//! field selectors read the core paths. Field mapping as in kubernetes
//! `pkg/apis/events/v1/conversion.go`.

use k8s_openapi::api::events::v1::Event;
use serde_json::{Map, Value};

use crate::registry::strategy::{builtin, Builtin, Conversion, FieldLabelConversion};

pub(crate) static EVENTS_EVENT: Builtin = Builtin {
    short_names: &["ev"],
    field_label_conversion: FieldLabelConversion::Own,
    field_labels: &[
        ("regarding.kind", "involvedObject.kind"),
        ("regarding.namespace", "involvedObject.namespace"),
        ("regarding.name", "involvedObject.name"),
        ("regarding.uid", "involvedObject.uid"),
        ("regarding.apiVersion", "involvedObject.apiVersion"),
        ("reason", "reason"),
        ("reportingController", "reportingComponent"),
        ("type", "type"),
    ],
    conversion: Some(&EVENTS),
    etcd_prefix: Some("events"),
    create_on_update: true,
    ..builtin::<Event>("events.k8s.io", "events", "Event")
};

/// `(events.k8s.io field, core field)`.
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(obj: &Value, api_version: &str, forward: bool) -> Value {
    let mut out = Map::new();
    if let Some(map) = obj.as_object() {
        for (k, v) in map {
            let renamed = EVENT_FIELDS.iter().find_map(|(events, core)| {
                let (from, to) = if forward {
                    (events, core)
                } else {
                    (core, events)
                };
                (k == from).then_some(*to)
            });
            out.insert(renamed.unwrap_or(k).to_owned(), v.clone());
        }
    }
    out.insert("apiVersion".into(), Value::String(api_version.into()));
    out.insert("kind".into(), Value::String("Event".into()));
    Value::Object(out)
}

fn events_to_core(v: Value) -> Value {
    rename(&v, "v1", true)
}

fn core_to_events(v: &Value) -> Value {
    rename(v, "events.k8s.io/v1", false)
}

/// `events.k8s.io/v1` Events, stored as core Events.
pub(crate) static EVENTS: Conversion = Conversion {
    storage_group: "",
    storage_plural: "events",
    to_storage: events_to_core,
    from_storage: core_to_events,
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_round_trip_through_core() {
        let e = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Pod", "name": "p"}, "note": "hi", "reason": "Started",
            "reportingController": "ctl", "reportingInstance": "ctl-1", "action": "Start", "type": "Normal"});
        let core = (EVENTS.to_storage)(e.clone());
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["message"], "hi");
        assert_eq!(core["reportingComponent"], "ctl");
        assert_eq!((EVENTS.from_storage)(&core), e);
    }
}
