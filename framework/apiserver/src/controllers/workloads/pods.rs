//! Pods as the controllers see them (`pkg/api/v1/pod`, `pkg/controller`):
//! ready, available after `minReadySeconds`, active, terminating; a new
//! pod from a template (`GetPodFromTemplate`); and the order in which
//! controllers give up surplus pods (`ActivePods`: unscheduled, pending,
//! not ready, recently ready, restarted more and newer pods first).

use std::cmp::Ordering;

use serde_json::{json, Value};

use crate::machinery::util;
use crate::machinery::util::Pointer;

fn str_at<'a>(o: &'a Value, ptr: &str) -> &'a str {
    o.at(ptr).and_then(Value::as_str).unwrap_or("")
}

/// `status.phase`.
pub(crate) fn phase(pod: &Value) -> &str {
    str_at(pod, "/status/phase")
}

/// Marked for deletion.
pub(crate) fn deleting(pod: &Value) -> bool {
    pod.at("/metadata/deletionTimestamp").is_some()
}

/// Succeeded or Failed.
pub(crate) fn terminal(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Not terminal and not being deleted (`controller.IsPodActive`).
pub(crate) fn active(pod: &Value) -> bool {
    !terminal(pod) && !deleting(pod)
}

/// Being deleted but not yet terminal (`controller.IsPodTerminating`).
pub(crate) fn terminating(pod: &Value) -> bool {
    !terminal(pod) && deleting(pod)
}

/// The pod condition of type `ty`.
pub(crate) fn condition<'a>(pod: &'a Value, ty: &str) -> Option<&'a Value> {
    pod.at("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| str_at(c, "/type") == ty)
}

/// `Ready=True`.
pub(crate) fn ready(pod: &Value) -> bool {
    condition(pod, "Ready").is_some_and(|c| str_at(c, "/status") == "True")
}

/// Ready for at least `min_ready_seconds` (`IsPodAvailable`).
pub(crate) fn available(pod: &Value, min_ready_seconds: i64) -> bool {
    if !ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    condition(pod, "Ready")
        .and_then(|c| c.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .is_some_and(|t| jiff::Timestamp::now().as_second() - t.as_second() >= min_ready_seconds)
}

/// Seconds until a ready pod becomes available, if it is not yet.
pub(crate) fn until_available(pod: &Value, min_ready_seconds: i64) -> Option<i64> {
    if !ready(pod) || min_ready_seconds <= 0 {
        return None;
    }
    let since = condition(pod, "Ready")
        .and_then(|c| c.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())?;
    let left = min_ready_seconds - (jiff::Timestamp::now().as_second() - since.as_second());
    (left > 0).then_some(left)
}

/// The sum of the containers' restart counts.
pub(crate) fn restarts(pod: &Value) -> i64 {
    pod.at("/status/containerStatuses")
        .and_then(Value::as_array)
        .map_or(0, |cs| {
            cs.iter()
                .map(|c| c.get("restartCount").and_then(Value::as_i64).unwrap_or(0))
                .sum()
        })
}

/// Whether a selector selects nothing in particular (`{}`), which
/// controllers refuse.
pub(crate) fn selector_is_empty(selector: &Value) -> bool {
    selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(|m| m.is_empty())
        && selector
            .get("matchExpressions")
            .and_then(Value::as_array)
            .is_none_or(|m| m.is_empty())
}

/// `GetPodFromTemplate`: a pod for `template`, named after `prefix`
/// (`generateName`), owned by `controller_ref`.
pub(crate) fn from_template(
    template: &Value,
    ns: &str,
    prefix: &str,
    controller_ref: Value,
) -> Value {
    let meta = template
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut pod_meta = serde_json::Map::new();
    for field in ["labels", "annotations", "finalizers"] {
        if let Some(v) = meta.get(field).filter(|v| !v.is_null()) {
            pod_meta.insert(field.into(), v.clone());
        }
    }
    pod_meta.insert("generateName".into(), json!(generate_prefix(prefix)));
    pod_meta.insert("namespace".into(), json!(ns));
    pod_meta.insert("ownerReferences".into(), json!([controller_ref]));
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_meta,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// `getPodsPrefix`: `name-`, cut so the generated name stays valid.
fn generate_prefix(name: &str) -> String {
    let prefix = format!("{name}-");
    if prefix.len() > 58 {
        prefix.chars().take(58).collect()
    } else {
        prefix
    }
}

fn rank_phase(pod: &Value) -> u8 {
    match phase(pod) {
        "Pending" => 0,
        "Unknown" => 1,
        "Running" => 2,
        _ => 3,
    }
}

fn ready_since(pod: &Value) -> Option<i64> {
    condition(pod, "Ready")
        .filter(|c| str_at(c, "/status") == "True")
        .and_then(|c| c.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| t.as_second())
}

/// `controller.ActivePods` order: the pod to remove first sorts first.
pub(crate) fn removal_order(a: &Value, b: &Value) -> Ordering {
    let assigned = |p: &Value| !str_at(p, "/spec/nodeName").is_empty();
    assigned(a)
        .cmp(&assigned(b))
        .then_with(|| rank_phase(a).cmp(&rank_phase(b)))
        .then_with(|| ready(a).cmp(&ready(b)))
        // Ready for less time first.
        .then_with(|| ready_since(b).cmp(&ready_since(a)))
        .then_with(|| restarts(b).cmp(&restarts(a)))
        // Newer first.
        .then_with(|| {
            let c = |p: &Value| {
                util::meta_str(p, "creationTimestamp")
                    .unwrap_or("")
                    .to_owned()
            };
            c(b).cmp(&c(a))
        })
}
