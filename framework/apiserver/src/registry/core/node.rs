//! Nodes (stored as `minions`): cluster-scoped, allocatable defaulted from
//! capacity, the `spec.unschedulable` field selector, and kubectl's
//! `STATUS ROLES AGE VERSION` row.

use k8s_openapi::api::core::v1::Node;
use serde_json::{json, Value};

use crate::machinery::util::Pointer;
use crate::registry::printers::or_none;
use crate::registry::printers::{age, str_at, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin, Defaults, FieldLabelConversion};

pub(crate) static NODE: Builtin = Builtin {
    namespaced: false,
    short_names: &["no"],
    status: true,
    etcd_prefix: Some("minions"),
    field_label_conversion: FieldLabelConversion::Own,
    field_labels: &[("spec.unschedulable", "spec.unschedulable")],
    printer: Printer {
        columns: &[
            Name,
            Str("Status", 0),
            Str("Roles", 0),
            Age,
            Str("Version", 0),
            Str("Internal-IP", 1),
            Str("External-IP", 1),
            Str("OS-Image", 1),
            Str("Kernel-Version", 1),
            Str("Container-Runtime", 1),
        ],
        cells,
    },
    defaults: Defaults::fields(defaults),
    ..builtin::<Node>("", "nodes", "Node")
};

/// `SetDefaults_NodeStatus`: allocatable is capacity unless given.
pub(super) fn defaults(obj: &mut Value) {
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    if status.get("allocatable").is_none_or(Value::is_null) {
        if let Some(capacity) = status.get("capacity").filter(|c| c.is_object()).cloned() {
            status.insert("allocatable".into(), capacity);
        }
    }
}

/// `printNode`: NAME STATUS ROLES AGE VERSION, wide INTERNAL-IP
/// EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME.
fn cells(o: &Value) -> Vec<Value> {
    let ready = o
        .at("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| str_at(c, "/type") == "Ready"));
    let mut status = vec![match ready {
        Some(c) if str_at(c, "/status") == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if o.at("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled");
    }
    let mut roles: Vec<String> = o
        .at("/metadata/labels")
        .and_then(Value::as_object)
        .map(|ls| {
            ls.iter()
                .filter_map(|(k, v)| {
                    if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                        (!role.is_empty()).then(|| role.to_owned())
                    } else if k == "kubernetes.io/role" {
                        v.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
                    } else {
                        None
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    roles.sort();
    roles.dedup();
    let address = |ty: &str| {
        o.at("/status/addresses")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|x| str_at(x, "/type") == ty))
            .map(|x| str_at(x, "/address").to_owned())
            .unwrap_or_default()
    };
    let unknown = |s: &str| json!(if s.is_empty() { "<unknown>" } else { s });
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(status.join(",")),
        or_none(&roles.join(",")),
        age(o),
        json!(str_at(o, "/status/nodeInfo/kubeletVersion")),
        or_none(&address("InternalIP")),
        or_none(&address("ExternalIP")),
        unknown(str_at(o, "/status/nodeInfo/osImage")),
        unknown(str_at(o, "/status/nodeInfo/kernelVersion")),
        unknown(str_at(o, "/status/nodeInfo/containerRuntimeVersion")),
    ]
}
