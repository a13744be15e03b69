//! The DaemonSet controller (`pkg/controller/daemon`): one pod per node the
//! template may run on (node selector, affinity, taints against the
//! template's tolerations plus the ones every daemon pod gets), pinned by
//! required node affinity on `metadata.name` and bound by the scheduler;
//! pods on nodes that no longer qualify are deleted, failed ones
//! replaced. A RollingUpdate replaces out-of-date pods at most
//! `maxUnavailable` at a time. Template history is kept in
//! ControllerRevisions; pods carry `controller-revision-hash` and
//! `pod-template-generation`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::api::{controller_ref, key_of, Api, DAEMONSETS, NODES, PODS};
use super::deployment::scaled;
use super::history;
use super::informer::{self, Change};
use super::nodes::fit;
use super::owners::claim;
use super::pods;
use super::queue::Queue;
use super::replicaset::{watch_owners_and_pods, Orphans};
use crate::controllers::write::MANAGER;
use crate::machinery::util::Pointer;
use crate::storage::{ObjKey, StoredObject};

const COMPONENT: &str = "daemonset-controller";
const REVISION_LABEL: &str = "controller-revision-hash";

/// Starts the controller.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    let queue = Arc::new(Queue::default());
    let orphans = Arc::new(Orphans::default());
    watch_owners_and_pods(&api, DAEMONSETS, &queue, &orphans, &cancel);
    let (q, a) = (queue.clone(), api.clone());
    informer::watch(
        api.shared.clone(),
        NODES.res(),
        cancel.clone(),
        move |_c: &Change| {
            for ds in a.list(DAEMONSETS, None) {
                q.add(key_of(&ds.value()));
            }
        },
    );
    let q = queue.clone();
    tokio::spawn(async move {
        q.run(cancel, |key| sync(&api, &orphans, key)).await;
    });
}

/// The tolerations every daemon pod gets (`AddOrUpdateDaemonPodTolerations`).
fn daemon_tolerations(pod: &mut Value) {
    let extra = [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let list = spec.entry("tolerations").or_insert_with(|| json!([]));
    if let Some(list) = list.as_array_mut() {
        for (key, effect) in extra {
            if !list
                .iter()
                .any(|t| t.get("key").and_then(Value::as_str) == Some(key))
            {
                list.push(json!({"key": key, "operator": "Exists", "effect": effect}));
            }
        }
    }
}

/// The node a daemon pod is for: bound, or pinned by affinity.
fn target_node(pod: &Value) -> Option<String> {
    if let Some(n) = pod
        .at("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        return Some(n.to_owned());
    }
    pod.at("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn sync(api: &Api, orphans: &Orphans, key: &ObjKey) {
    let Some(obj) = api.get(DAEMONSETS, key) else {
        return;
    };
    let ds = obj.to_value();
    let selector = ds.at("/spec/selector").cloned().unwrap_or_default();
    if pods::selector_is_empty(&selector) {
        return;
    }
    let mut candidates = api.owned(PODS, obj.uid());
    candidates.extend(orphans.of(api, &key.0));
    let claimed = claim(api, &ds, DAEMONSETS, &selector, PODS, candidates, None);
    let template = ds.at("/spec/template").cloned().unwrap_or_default();
    let collision = ds.at("/status/collisionCount").and_then(Value::as_i64);
    let Some(rev) = history::ensure(api, &ds, DAEMONSETS, &template, collision) else {
        return;
    };
    let hash = rev
        .name()
        .strip_prefix(&format!("{}-", key.1))
        .unwrap_or(rev.name())
        .to_owned();
    let generation = ds
        .at("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let mut probe = template.clone();
    daemon_tolerations(&mut probe);
    let mut by_node: BTreeMap<String, Vec<Arc<StoredObject>>> = BTreeMap::new();
    for p in &claimed {
        if let Some(n) = target_node(&p.value()) {
            by_node.entry(n).or_default().push(p.clone());
        }
    }
    let deleting = ds.at("/metadata/deletionTimestamp").is_some();
    let nodes = api.list(NODES, None);
    let (mut desired, mut current, mut misscheduled) = (0, 0, 0);
    let (mut ready, mut available, mut updated) = (0, 0, 0);
    let min_ready = ds
        .at("/spec/minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut outdated: Vec<Arc<StoredObject>> = Vec::new();
    let mut unavailable_now = 0;
    for node in &nodes {
        let should_run = fit::selects(&probe, &node.value())
            && fit::untolerated(&probe, &node.value()).is_none();
        let on_node: Vec<Arc<StoredObject>> = by_node.remove(node.name()).unwrap_or_default();
        let active: Vec<&Arc<StoredObject>> = on_node
            .iter()
            .filter(|p| pods::active(&p.value()))
            .collect();
        if should_run {
            desired += 1;
            if !active.is_empty() {
                current += 1;
            }
        } else if !active.is_empty() {
            misscheduled += 1;
        }
        for p in &active {
            if pods::ready(&p.value()) {
                ready += 1;
                if pods::available(&p.value(), min_ready) {
                    available += 1;
                }
            } else {
                unavailable_now += 1;
            }
            let tree = p.value();
            let label = tree
                .at("/metadata/labels")
                .and_then(|l| l.get(REVISION_LABEL))
                .and_then(Value::as_str);
            if label == Some(hash.as_str()) {
                updated += 1;
            } else {
                outdated.push((*p).clone());
            }
        }
        if deleting {
            continue;
        }
        for p in on_node
            .iter()
            .filter(|p| pods::phase(&p.value()) == "Failed" && !p.deleting())
        {
            let _ = api.delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None);
        }
        if should_run && active.is_empty() {
            let mut pod =
                pods::from_template(&template, &key.0, &key.1, controller_ref(&ds, DAEMONSETS));
            if let Some(labels) =
                crate::registry::defaults::ensure_object(&mut pod, &["metadata", "labels"])
            {
                labels.insert(REVISION_LABEL.into(), json!(hash));
                labels.insert(
                    "pod-template-generation".into(),
                    json!(generation.to_string()),
                );
            }
            pod["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"] = json!({
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node.name()]}]}]
            });
            daemon_tolerations(&mut pod);
            match api.create(PODS, MANAGER, pod) {
                Ok(p) => api.event(
                    &ds,
                    DAEMONSETS,
                    "Normal",
                    "SuccessfulCreate",
                    &format!("Created pod: {}", p.name()),
                    COMPONENT,
                ),
                Err(e) => api.event(
                    &ds,
                    DAEMONSETS,
                    "Warning",
                    "FailedCreate",
                    &format!("Error creating: {}", e.message),
                    COMPONENT,
                ),
            }
        } else if !should_run {
            for p in active {
                if api
                    .delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None)
                    .is_ok()
                {
                    api.event(
                        &ds,
                        DAEMONSETS,
                        "Normal",
                        "SuccessfulDelete",
                        &format!("Deleted pod: {}", p.name()),
                        COMPONENT,
                    );
                }
            }
        } else if active.len() > 1 {
            for p in active.iter().skip(1) {
                let _ = api.delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None);
            }
        }
    }
    // Pods for nodes that no longer exist.
    for p in by_node
        .values()
        .flatten()
        .filter(|p| pods::active(&p.value()))
    {
        misscheduled += 1;
        if !deleting {
            let _ = api.delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None);
        }
    }
    let rolling = ds.at("/spec/updateStrategy/type").and_then(Value::as_str) != Some("OnDelete");
    if rolling && !deleting {
        let max = scaled(
            ds.at("/spec/updateStrategy/rollingUpdate/maxUnavailable"),
            desired,
            true,
        )
        .max(1);
        let mut budget = max - unavailable_now;
        // Not-ready outdated pods go first; they cost no availability.
        outdated.sort_by_key(|p| pods::ready(&p.value()));
        for p in outdated {
            let costs = pods::ready(&p.value());
            if costs && budget <= 0 {
                break;
            }
            if api
                .delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None)
                .is_ok()
                && costs
            {
                budget -= 1;
            }
        }
    }
    let status = json!({
        "currentNumberScheduled": current,
        "numberMisscheduled": misscheduled,
        "desiredNumberScheduled": desired,
        "numberReady": ready,
        "observedGeneration": generation,
        "updatedNumberScheduled": updated,
        "numberAvailable": available,
        "numberUnavailable": (desired - available).max(0),
    });
    let _ = api.set_status(DAEMONSETS, key, MANAGER, &status);
}
