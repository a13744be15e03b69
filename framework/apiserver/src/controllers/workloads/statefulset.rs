//! The StatefulSet controller (`pkg/controller/statefulset`): pods with
//! stable names `<set>-<ordinal>` (labels `controller-revision-hash`,
//! `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index`;
//! hostname and subdomain set). With `OrderedReady` they are created one
//! at a time in ordinal order, each waiting for the previous to be running
//! and ready, and removed one at a time from the highest ordinal; with
//! `Parallel`, all at once. A RollingUpdate replaces pods from the highest
//! ordinal down to the `partition`, one at a time. The template history is
//! kept in ControllerRevisions; the status reports `replicas`,
//! `readyReplicas`, `availableReplicas`, `currentReplicas`,
//! `updatedReplicas`, `currentRevision`, `updateRevision`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::api::{controller_ref, key_of, Api, PODS, REVISIONS, STATEFULSETS};
use super::history;
use super::owners::claim;
use super::pods;
use super::queue::Queue;
use super::replicaset::{watch_owners_and_pods, Orphans};
use crate::controllers::write::MANAGER;
use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::objects::Propagation;
use crate::storage::{ObjKey, StoredObject};

const COMPONENT: &str = "statefulset-controller";
const REVISION_LABEL: &str = "controller-revision-hash";

/// Starts the controller.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    let queue = Arc::new(Queue::default());
    let orphans = Arc::new(Orphans::default());
    watch_owners_and_pods(&api, STATEFULSETS, &queue, &orphans, &cancel);
    let q = queue.clone();
    tokio::spawn(async move {
        q.clone()
            .run(cancel, |key| sync(&api, &q, &orphans, key))
            .await;
    });
}

fn ordinal(set: &str, pod: &str) -> Option<i64> {
    pod.strip_prefix(set)?.strip_prefix('-')?.parse().ok()
}

fn revision_of(pod: &Value) -> &str {
    pod.at("/metadata/labels")
        .and_then(|l| l.get(REVISION_LABEL))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn running_and_ready(pod: &Value) -> bool {
    pods::phase(pod) == "Running" && pods::ready(pod)
}

fn new_pod(set: &Value, ordinal: i64, revision: &Value) -> Value {
    let (ns, name) = key_of(set);
    let pod_name = format!("{name}-{ordinal}");
    let template = history::template_of(revision);
    let mut pod = pods::from_template(&template, &ns, &name, controller_ref(set, STATEFULSETS));
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("generateName");
        meta.insert("name".into(), json!(pod_name));
    }
    if let Some(labels) = crate::registry::fields::ensure_object(&mut pod, &["metadata", "labels"])
    {
        labels.insert(
            REVISION_LABEL.into(),
            json!(util::meta_str(revision, "name").unwrap_or("")),
        );
        labels.insert("statefulset.kubernetes.io/pod-name".into(), json!(pod_name));
        labels.insert(
            "apps.kubernetes.io/pod-index".into(),
            json!(ordinal.to_string()),
        );
    }
    pod["spec"]["hostname"] = json!(pod_name);
    if let Some(svc) = set
        .at("/spec/serviceName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        pod["spec"]["subdomain"] = json!(svc);
    }
    pod
}

fn sync(api: &Api, queue: &Arc<Queue>, orphans: &Orphans, key: &ObjKey) {
    let Some(obj) = api.get(STATEFULSETS, key) else {
        return;
    };
    let set = obj.to_value();
    let uid = obj.uid().to_owned();
    let selector = set.at("/spec/selector").cloned().unwrap_or_default();
    if pods::selector_is_empty(&selector) {
        return;
    }
    let mut candidates = api.owned(PODS, &uid);
    candidates.extend(orphans.of(api, &key.0));
    let claimed = claim(api, &set, STATEFULSETS, &selector, PODS, candidates, None);
    let template = set.at("/spec/template").cloned().unwrap_or_default();
    let collision = set.at("/status/collisionCount").and_then(Value::as_i64);
    let Some(update_rev) = history::ensure(api, &set, STATEFULSETS, &template, collision) else {
        queue.add_after(key.clone(), std::time::Duration::from_millis(200));
        return;
    };
    let update_name = update_rev.name().to_owned();
    let current_name = set
        .at("/status/currentRevision")
        .and_then(Value::as_str)
        .filter(|n| {
            api.get(REVISIONS, &(key.0.clone(), (*n).to_owned()))
                .is_some()
        })
        .unwrap_or(&update_name)
        .to_owned();
    let current_rev = api
        .get(REVISIONS, &(key.0.clone(), current_name.clone()))
        .unwrap_or_else(|| update_rev.clone());
    let replicas = set
        .at("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let ordered = set.at("/spec/podManagementPolicy").and_then(Value::as_str) != Some("Parallel");
    let rolling = set.at("/spec/updateStrategy/type").and_then(Value::as_str) != Some("OnDelete");
    let partition = set
        .at("/spec/updateStrategy/rollingUpdate/partition")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let min_ready = set
        .at("/spec/minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut by_ordinal: BTreeMap<i64, Arc<StoredObject>> = BTreeMap::new();
    for p in &claimed {
        if let Some(i) = ordinal(&key.1, p.name()) {
            by_ordinal.insert(i, p.clone());
        }
    }
    let deleting_set = set.at("/metadata/deletionTimestamp").is_some();
    if !deleting_set {
        manage(
            api,
            &set,
            key,
            &by_ordinal,
            replicas,
            ordered,
            rolling,
            partition,
            &current_rev,
            &update_rev,
            &update_name,
        );
    }
    // Status over the pods as they are now.
    let mut status = set.get("status").cloned().unwrap_or_else(|| json!({}));
    if !status.is_object() {
        status = json!({});
    }
    let now_pods: Vec<Arc<StoredObject>> = claimed
        .iter()
        .filter_map(|p| api.get(PODS, &key_of(&p.value())))
        .collect();
    let (mut count, mut ready, mut available, mut current, mut updated) = (0, 0, 0, 0, 0);
    for p in &now_pods {
        let v = &p.value();
        count += 1;
        if running_and_ready(v) {
            ready += 1;
            if pods::available(v, min_ready) {
                available += 1;
            }
        }
        if !pods::deleting(v) {
            if revision_of(v) == current_name {
                current += 1;
            }
            if revision_of(v) == update_name {
                updated += 1;
            }
        }
    }
    let mut current_name = current_name;
    if rolling && updated == count && ready == count && count == replicas {
        current = updated;
        current_name = update_name.clone();
    }
    status["observedGeneration"] = set["metadata"]["generation"].clone();
    status["replicas"] = json!(count);
    status["readyReplicas"] = json!(ready);
    status["availableReplicas"] = json!(available);
    status["currentReplicas"] = json!(current);
    status["updatedReplicas"] = json!(updated);
    status["currentRevision"] = json!(current_name);
    status["updateRevision"] = json!(update_name);
    status["collisionCount"] = json!(collision.unwrap_or(0));
    if let Err(e) = api.set_status(STATEFULSETS, key, MANAGER, &status) {
        tracing::debug!(sts = %key.1, error = %e.message, "statefulset status not written");
        queue.add_after(key.clone(), std::time::Duration::from_millis(200));
    }
    truncate_history(api, &set, &uid, &now_pods, &current_name, &update_name);
}

#[allow(clippy::too_many_arguments)]
fn manage(
    api: &Api,
    set: &Value,
    key: &ObjKey,
    by_ordinal: &BTreeMap<i64, Arc<StoredObject>>,
    replicas: i64,
    ordered: bool,
    rolling: bool,
    partition: i64,
    current_rev: &Arc<StoredObject>,
    update_rev: &Arc<StoredObject>,
    update_name: &str,
) {
    let event = |reason: &str, verb: &str, pod: &str| {
        api.event(
            set,
            STATEFULSETS,
            "Normal",
            reason,
            &format!("{verb} Pod {pod} in StatefulSet {} successful", key.1),
            COMPONENT,
        );
    };
    for i in 0..replicas {
        match by_ordinal.get(&i) {
            None => {
                let rev = if rolling && i < partition {
                    current_rev
                } else {
                    update_rev
                };
                let pod = new_pod(set, i, &rev.value());
                let name = format!("{}-{i}", key.1);
                if api.create(PODS, MANAGER, pod).is_ok() {
                    event("SuccessfulCreate", "create", &name);
                }
                if ordered {
                    return;
                }
            }
            Some(p) => {
                let v = &p.value();
                if pods::terminal(v) && !pods::deleting(v) {
                    // A failed pod is recreated.
                    if api
                        .delete(PODS, &key_of(v), Some(p.uid()), None, None)
                        .is_ok()
                    {
                        event("SuccessfulDelete", "delete", p.name());
                    }
                    if ordered {
                        return;
                    }
                } else if ordered && (pods::deleting(v) || !running_and_ready(v)) {
                    return;
                }
            }
        }
    }
    // Condemned pods, highest ordinal first.
    let condemned: Vec<&Arc<StoredObject>> =
        by_ordinal.range(replicas..).rev().map(|(_, p)| p).collect();
    for p in condemned {
        if p.deleting() {
            if ordered {
                return;
            }
            continue;
        }
        if api
            .delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None)
            .is_ok()
        {
            event("SuccessfulDelete", "delete", p.name());
        }
        if ordered {
            return;
        }
    }
    if !rolling {
        return;
    }
    // Rolling update from the highest ordinal down to the partition.
    for i in (partition.max(0)..replicas).rev() {
        let Some(p) = by_ordinal.get(&i) else {
            return;
        };
        if revision_of(&p.value()) != update_name && !p.deleting() {
            if api
                .delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None)
                .is_ok()
            {
                event("SuccessfulDelete", "delete", p.name());
            }
            return;
        }
        if !running_and_ready(&p.value()) {
            return;
        }
    }
}

/// Keeps `revisionHistoryLimit` revisions besides the live ones.
fn truncate_history(
    api: &Api,
    set: &Value,
    uid: &str,
    pods: &[Arc<StoredObject>],
    current: &str,
    update: &str,
) {
    let limit = set
        .at("/spec/revisionHistoryLimit")
        .and_then(Value::as_i64)
        .unwrap_or(10);
    let trees: Vec<Arc<Value>> = pods.iter().map(|p| p.value()).collect();
    let live: Vec<&str> = trees.iter().map(|tree| revision_of(tree)).collect();
    let old: Vec<Arc<StoredObject>> = history::list(api, uid)
        .into_iter()
        .filter(|r| r.name() != current && r.name() != update && !live.contains(&r.name()))
        .collect();
    let surplus = old.len() as i64 - limit;
    for r in old.iter().take(surplus.max(0) as usize) {
        let _ = api.delete(
            REVISIONS,
            &key_of(&r.value()),
            Some(r.uid()),
            None,
            Some(Propagation::Background),
        );
    }
}
