//! Pods: the PodSpec defaults plus `SetDefaults_Pod`'s own (requests from
//! limits, `enableServiceLinks`, host ports under hostNetwork), the
//! create-time ServiceAccount and `Pending` status with its QoS class,
//! the `binding` and `eviction` subresources, field selectors, DELETE
//! answering with the object, and kubectl's `READY STATUS RESTARTS` row
//! computed from container states.

use std::sync::atomic::AtomicU32;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Map, Value};

use super::pod_spec;
use crate::machinery::status::Cause;
use crate::machinery::util::{human_duration, Pointer};
use crate::registry::fields::object_in;
use crate::registry::fields::{items_mut, obj_mut, set_if_absent, spec_mut};
use crate::registry::printers::{age, str_at, Col::*, Printer};
use crate::registry::printers::{condition_true, or_none, parse};
use crate::registry::strategy::{builtin, Builtin, Defaults, FieldLabelConversion};
use crate::registry::strategy::{ExtraSubresource, ALL};

const BINDING: ExtraSubresource = ExtraSubresource {
    name: "binding",
    verbs: &["create"],
    kind: Some(("", "v1", "Binding")),
};
/// `kubectl logs` (served by `http::handlers::logs`).
const LOG: ExtraSubresource = ExtraSubresource {
    name: "log",
    verbs: &["get"],
    kind: Some(("", "v1", "Pod")),
};
const EVICTION: ExtraSubresource = ExtraSubresource {
    name: "eviction",
    verbs: &["create"],
    kind: Some(("policy", "v1", "Eviction")),
};

pub(crate) static POD: Builtin = Builtin {
    short_names: &["po"],
    categories: ALL,
    status: true,
    extra_subresources: &[BINDING, EVICTION, LOG],
    field_label_conversion: FieldLabelConversion::Own,
    field_labels: &[
        ("spec.nodeName", "spec.nodeName"),
        ("spec.restartPolicy", "spec.restartPolicy"),
        ("spec.schedulerName", "spec.schedulerName"),
        ("spec.serviceAccountName", "spec.serviceAccountName"),
        ("spec.hostNetwork", "spec.hostNetwork"),
        ("status.phase", "status.phase"),
        ("status.podIP", "status.podIP"),
        ("status.nominatedNodeName", "status.nominatedNodeName"),
        // For old v1 clients (`pkg/apis/core/v1/conversion.go`).
        ("spec.host", "spec.nodeName"),
    ],
    printer: Printer {
        columns: &[
            Name,
            Str("Ready", 0),
            Str("Status", 0),
            Str("Restarts", 0),
            Age,
            Str("IP", 1),
            Str("Node", 1),
            Str("Nominated Node", 1),
            Str("Readiness Gates", 1),
        ],
        cells,
    },
    delete_returns_object: true,
    defaults: Defaults {
        create: Some(on_create),
        ..Defaults::fields(defaults)
    },
    validate,
    ..builtin::<Pod>("", "pods", "Pod")
};

/// Defaults a bare Pod: its spec as in a template, then `SetDefaults_Pod`.
pub(crate) fn defaults(obj: &mut Value) {
    let Some(spec) = crate::registry::fields::spec_mut(obj) else {
        return;
    };
    // SetDefaults_Pod runs before the PodSpec walk in SetObjectDefaults_Pod.
    for key in ["containers", "initContainers"] {
        for c in items_mut(spec, key) {
            requests_from_limits(c);
        }
    }
    crate::registry::fields::set_if_absent(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        for key in ["containers", "initContainers"] {
            for c in items_mut(spec, key) {
                for p in items_mut(c, "ports") {
                    if p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0 {
                        if let Some(port) = p.get("containerPort").cloned() {
                            p.insert("hostPort".into(), port);
                        }
                    }
                }
            }
        }
    }
    pod_spec::defaults(spec);
}

/// `SetDefaults_Pod`: a container with limits but no request for a
/// resource requests its limit.
fn requests_from_limits(c: &mut Map<String, Value>) {
    let Some(res) = obj_mut(c, "resources") else {
        return;
    };
    let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if let Some(requests) = object_in(res, "requests") {
        for (k, v) in limits {
            requests.entry(k).or_insert(v);
        }
    }
}

/// The ServiceAccount admission plugin (create only), and the status a new
/// Pod starts with.
pub(super) fn on_create(obj: &mut Value, _: &AtomicU32) {
    if let Some(spec) = spec_mut(obj) {
        set_if_absent(spec, "serviceAccountName", json!("default"));
    }
    let qos = qos_class(obj);
    if let Some(map) = obj.as_object_mut() {
        map.insert(
            "status".into(),
            json!({"phase": "Pending", "qosClass": qos}),
        );
    }
}

/// BestEffort / Burstable / Guaranteed, from container resources.
pub(super) fn qos_class(pod: &Value) -> &'static str {
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        let req = c.pointer("/resources/requests").and_then(Value::as_object);
        let lim = c.pointer("/resources/limits").and_then(Value::as_object);
        if req.is_some_and(|r| !r.is_empty()) || lim.is_some_and(|l| !l.is_empty()) {
            any = true;
        }
        let full = ["cpu", "memory"].iter().all(|k| {
            let l = lim.and_then(|l| l.get(*k));
            l.is_some() && req.and_then(|r| r.get(*k)).is_none_or(|r| Some(r) == l)
        });
        if !full {
            guaranteed = false;
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

fn validate(obj: &Value, _: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    pod_spec::check(obj.get("spec"), "spec", &mut causes);
    causes
}

/// `printPod`: NAME READY STATUS RESTARTS AGE, wide IP NODE NOMINATED NODE
/// READINESS GATES.
fn cells(o: &Value) -> Vec<Value> {
    let total = o
        .at("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let phase = str_at(o, "/status/phase");
    let mut reason = match str_at(o, "/status/reason") {
        "" => phase.to_owned(),
        r => r.to_owned(),
    };
    let mut restarts = 0i64;
    let mut ready = 0;
    let mut last_restart: Option<jiff::Timestamp> = None;
    let mut has_running = false;
    let statuses = o
        .at("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in statuses.iter().rev() {
        restarts += c.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
        if let Some(t) = parse(str_at(c, "/lastState/terminated/finishedAt")) {
            if last_restart.is_none_or(|l| l < t) {
                last_restart = Some(t);
            }
        }
        let waiting = str_at(c, "/state/waiting/reason");
        let terminated = c.at("/state/terminated");
        if !waiting.is_empty() {
            reason = waiting.to_owned();
        } else if let Some(t) = terminated {
            reason = match str_at(t, "/reason") {
                "" => match t.get("signal").and_then(Value::as_i64).filter(|s| *s != 0) {
                    Some(sig) => format!("Signal:{sig}"),
                    None => format!(
                        "ExitCode:{}",
                        t.get("exitCode").and_then(Value::as_i64).unwrap_or(0)
                    ),
                },
                r => r.to_owned(),
            };
        } else if c.get("ready").and_then(Value::as_bool) == Some(true)
            && c.at("/state/running").is_some()
        {
            has_running = true;
            ready += 1;
        }
    }
    if reason == "Completed" && has_running {
        reason = if condition_true(o, "Ready") {
            "Running".into()
        } else {
            "NotReady".into()
        };
    }
    let deleting = o.at("/metadata/deletionTimestamp").is_some();
    if deleting && str_at(o, "/status/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }
    let restarts = match last_restart {
        Some(t) if restarts != 0 => format!(
            "{restarts} ({} ago)",
            human_duration(jiff::Timestamp::now().as_second() - t.as_second())
        ),
        _ => restarts.to_string(),
    };
    let ip = o
        .at("/status/podIPs/0/ip")
        .and_then(Value::as_str)
        .unwrap_or_else(|| str_at(o, "/status/podIP"));
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts),
        age(o),
        or_none(ip),
        or_none(str_at(o, "/spec/nodeName")),
        or_none(str_at(o, "/status/nominatedNodeName")),
        json!("<none>"),
    ]
}
