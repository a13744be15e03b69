//! `deployment/util`: the numbers and annotations the Deployment controller
//! reasons with. ReplicaSets as it sees them ([`Rs`]), `maxSurge` and
//! `maxUnavailable` resolved against the replica count
//! (`ResolveFenceposts`), the revision, desired-replicas and max-replicas
//! annotations, and template equality ignoring `pod-template-hash`.

use std::sync::Arc;

use serde_json::Value;

use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::storage::StoredObject;

/// The label naming a ReplicaSet's template.
pub(crate) const HASH_LABEL: &str = "pod-template-hash";
pub(crate) const REVISION: &str = "deployment.kubernetes.io/revision";
pub(crate) const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub(crate) const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub(crate) const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// Annotations a ReplicaSet does not copy from its Deployment.
const SKIP_COPY: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];
/// `maxRevHistoryLengthInChars`.
const MAX_HISTORY_CHARS: usize = 2000;

fn int(v: &Value, ptr: &str) -> i64 {
    v.at(ptr).and_then(Value::as_i64).unwrap_or(0)
}

/// A ReplicaSet of a Deployment.
#[derive(Clone, Debug)]
pub(crate) struct Rs {
    pub obj: Arc<StoredObject>,
}

impl Rs {
    pub fn v(&self) -> Arc<Value> {
        self.obj.value()
    }
    pub fn name(&self) -> &str {
        self.obj.name()
    }
    pub fn uid(&self) -> &str {
        self.obj.uid()
    }
    /// `spec.replicas`.
    pub fn replicas(&self) -> i64 {
        int(&self.v(), "/spec/replicas")
    }
    pub fn status_replicas(&self) -> i64 {
        int(&self.v(), "/status/replicas")
    }
    pub fn ready(&self) -> i64 {
        int(&self.v(), "/status/readyReplicas")
    }
    pub fn available(&self) -> i64 {
        int(&self.v(), "/status/availableReplicas")
    }
    pub fn generation(&self) -> i64 {
        int(&self.v(), "/metadata/generation")
    }
    pub fn observed_generation(&self) -> i64 {
        int(&self.v(), "/status/observedGeneration")
    }
    pub fn deleting(&self) -> bool {
        self.v().at("/metadata/deletionTimestamp").is_some()
    }
    pub fn created(&self) -> String {
        util::meta_str(&self.v(), "creationTimestamp")
            .unwrap_or("")
            .to_owned()
    }
    pub fn annotation(&self, key: &str) -> Option<String> {
        self.v()
            .at("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
    /// The revision annotation (0 when absent).
    pub fn revision(&self) -> i64 {
        self.annotation(REVISION)
            .and_then(|r| r.parse().ok())
            .unwrap_or(0)
    }
}

/// Oldest first, then by name (`ReplicaSetsByCreationTimestamp`).
pub(crate) fn by_creation(a: &Rs, b: &Rs) -> std::cmp::Ordering {
    a.created()
        .cmp(&b.created())
        .then_with(|| a.name().cmp(b.name()))
}

/// Sum of `spec.replicas`.
pub(crate) fn replica_count(rss: &[&Rs]) -> i64 {
    rss.iter().map(|r| r.replicas()).sum()
}

/// Sum of `status.replicas`.
pub(crate) fn actual_count(rss: &[&Rs]) -> i64 {
    rss.iter().map(|r| r.status_replicas()).sum()
}

/// Sum of `status.availableReplicas`.
pub(crate) fn available_count(rss: &[&Rs]) -> i64 {
    rss.iter().map(|r| r.available()).sum()
}

/// Sum of `status.readyReplicas`.
pub(crate) fn ready_count(rss: &[&Rs]) -> i64 {
    rss.iter().map(|r| r.ready()).sum()
}

/// `intstr.GetScaledValueFromIntOrPercent`.
pub(crate) fn scaled(v: Option<&Value>, total: i64, round_up: bool) -> i64 {
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => {
            let pct: f64 = s.trim_end_matches('%').parse().unwrap_or(0.0);
            let x = pct * total as f64 / 100.0;
            if round_up {
                x.ceil() as i64
            } else {
                x.floor() as i64
            }
        }
        _ => 0,
    }
}

/// The Deployment's `spec.replicas`.
pub(crate) fn desired(d: &Value) -> i64 {
    d.at("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)
}

/// Whether the strategy is RollingUpdate.
pub(crate) fn rolling(d: &Value) -> bool {
    d.at("/spec/strategy/type").and_then(Value::as_str) != Some("Recreate")
}

/// `ResolveFenceposts`: (surge, unavailable), never both 0.
pub(crate) fn fenceposts(d: &Value) -> (i64, i64) {
    let want = desired(d);
    let surge = scaled(d.at("/spec/strategy/rollingUpdate/maxSurge"), want, true);
    let mut unavailable = scaled(
        d.at("/spec/strategy/rollingUpdate/maxUnavailable"),
        want,
        false,
    );
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (surge, unavailable)
}

/// `MaxSurge`.
pub(crate) fn max_surge(d: &Value) -> i64 {
    if !rolling(d) {
        return 0;
    }
    fenceposts(d).0
}

/// `MaxUnavailable`.
pub(crate) fn max_unavailable(d: &Value) -> i64 {
    if !rolling(d) || desired(d) == 0 {
        return 0;
    }
    fenceposts(d).1.min(desired(d))
}

/// A template without the `pod-template-hash` label.
fn without_hash(t: &Value) -> Value {
    let mut t = t.clone();
    if let Some(labels) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(HASH_LABEL);
        if labels.is_empty() {
            if let Some(meta) = t.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("labels");
            }
        }
    }
    t
}

/// `EqualIgnoreHash`.
pub(crate) fn equal_ignore_hash(a: &Value, b: &Value) -> bool {
    without_hash(a) == without_hash(b)
}

/// Copies the Deployment's annotations onto a ReplicaSet
/// (`copyDeploymentAnnotationsToReplicaSet`); whether anything changed.
pub(crate) fn copy_annotations(d: &Value, rs: &mut Value) -> bool {
    let Some(from) = d.at("/metadata/annotations").and_then(Value::as_object) else {
        return false;
    };
    let mut changed = false;
    for (k, v) in from {
        if SKIP_COPY.contains(&k.as_str()) {
            continue;
        }
        let slot = annotations_mut(rs);
        if slot.get(k) != Some(v) {
            slot.insert(k.clone(), v.clone());
            changed = true;
        }
    }
    changed
}

/// The annotations map, created when missing.
pub(crate) fn annotations_mut(obj: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !obj
        .at("/metadata/annotations")
        .is_some_and(Value::is_object)
    {
        if !obj.is_object() {
            *obj = Value::Object(serde_json::Map::new());
        }
        if !obj.get("metadata").is_some_and(Value::is_object) {
            obj["metadata"] = Value::Object(serde_json::Map::new());
        }
        obj["metadata"]["annotations"] = Value::Object(serde_json::Map::new());
    }
    match obj.pointer_mut("/metadata/annotations") {
        Some(Value::Object(m)) => m,
        _ => unreachable!("annotations were just made an object"),
    }
}

/// `SetNewReplicaSetAnnotations`: copies annotations, moves the revision up
/// to `new_revision` (keeping the old one in the revision history), and on
/// creation sets the replica annotations. Whether anything changed.
pub(crate) fn set_new_rs_annotations(
    d: &Value,
    rs: &mut Value,
    new_revision: i64,
    exists: bool,
) -> bool {
    let mut changed = copy_annotations(d, rs);
    let ann = annotations_mut(rs);
    let old = ann.get(REVISION).and_then(Value::as_str).map(str::to_owned);
    let old_int = old
        .as_deref()
        .and_then(|o| o.parse::<i64>().ok())
        .unwrap_or(0);
    if old
        .as_deref()
        .is_some_and(|o| !o.is_empty() && o.parse::<i64>().is_err())
    {
        return changed;
    }
    if old_int < new_revision {
        ann.insert(REVISION.into(), Value::String(new_revision.to_string()));
        changed = true;
        if let Some(old) = old {
            let history = ann
                .get(REVISION_HISTORY)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            if history.is_empty() {
                ann.insert(REVISION_HISTORY.into(), Value::String(old));
            } else {
                let mut parts: Vec<&str> = history.split(',').collect();
                let mut total = history.len() + old.len() + 1;
                let mut start = 0;
                while total > MAX_HISTORY_CHARS && start < parts.len() {
                    total -= parts[start].len() + 1;
                    start += 1;
                }
                if total <= MAX_HISTORY_CHARS {
                    parts = parts.split_off(start);
                    parts.push(&old);
                    ann.insert(REVISION_HISTORY.into(), Value::String(parts.join(",")));
                }
            }
        }
    }
    if !exists {
        changed |= set_replicas_annotations(rs, desired(d), desired(d) + max_surge(d));
    }
    changed
}

/// `SetReplicasAnnotations`: whether they changed.
pub(crate) fn set_replicas_annotations(rs: &mut Value, desired: i64, max: i64) -> bool {
    let ann = annotations_mut(rs);
    let mut changed = false;
    for (k, v) in [(DESIRED_REPLICAS, desired), (MAX_REPLICAS, max)] {
        let v = Value::String(v.to_string());
        if ann.get(k) != Some(&v) {
            ann.insert(k.into(), v);
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fenceposts_round_surge_up_and_unavailable_down() {
        let d = json!({"spec": {"replicas": 10, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}}});
        assert_eq!(fenceposts(&d), (3, 2));
        let d = json!({"spec": {"replicas": 1, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}});
        assert_eq!(fenceposts(&d), (0, 1));
        let d = json!({"spec": {"replicas": 3, "strategy": {"type": "Recreate"}}});
        assert_eq!((max_surge(&d), max_unavailable(&d)), (0, 0));
    }

    #[test]
    fn revision_history_keeps_the_old_revision() {
        let d = json!({"metadata": {"annotations": {"team": "a", REVISION: "9"}}, "spec": {"replicas": 2}});
        let mut rs = json!({"metadata": {"annotations": {REVISION: "1"}}});
        assert!(set_new_rs_annotations(&d, &mut rs, 3, true));
        assert_eq!(rs["metadata"]["annotations"][REVISION], "3");
        assert_eq!(rs["metadata"]["annotations"][REVISION_HISTORY], "1");
        assert_eq!(rs["metadata"]["annotations"]["team"], "a");
        assert!(set_new_rs_annotations(&d, &mut rs, 5, true));
        assert_eq!(rs["metadata"]["annotations"][REVISION_HISTORY], "1,3");
        assert!(!set_new_rs_annotations(&d, &mut rs, 5, true));
    }
}
