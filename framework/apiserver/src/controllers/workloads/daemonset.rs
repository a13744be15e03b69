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

/// One pass over a DaemonSet: claim its pods, group them by node, count
/// and fix each node (create the missing pod, delete failed, extra and
/// misscheduled ones), roll out-of-date pods, write the status.
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
    let min_ready = ds
        .at("/spec/minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let daemon = Daemon {
        api,
        ds: &ds,
        key,
        template: &template,
        hash: &hash,
        generation,
    };
    let mut tally = Tally::default();
    for node in &api.list(NODES, None) {
        let should_run = fit::selects(&probe, &node.value())
            && fit::untolerated(&probe, &node.value()).is_none();
        let on_node: Vec<Arc<StoredObject>> = by_node.remove(node.name()).unwrap_or_default();
        let active: Vec<&Arc<StoredObject>> = on_node
            .iter()
            .filter(|p| pods::active(&p.value()))
            .collect();
        tally.node(should_run, &active, &hash, min_ready);
        if !deleting {
            daemon.fix_node(node.name(), should_run, &on_node, &active);
        }
    }
    // Pods for nodes that no longer exist.
    for p in by_node
        .values()
        .flatten()
        .filter(|p| pods::active(&p.value()))
    {
        tally.misscheduled += 1;
        if !deleting {
            let _ = api.delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None);
        }
    }
    let rolling = ds.at("/spec/updateStrategy/type").and_then(Value::as_str) != Some("OnDelete");
    if rolling && !deleting {
        let outdated = std::mem::take(&mut tally.outdated);
        roll(api, &ds, tally.desired, tally.unavailable_now, outdated);
    }
    let status = json!({
        "currentNumberScheduled": tally.current,
        "numberMisscheduled": tally.misscheduled,
        "desiredNumberScheduled": tally.desired,
        "numberReady": tally.ready,
        "observedGeneration": generation,
        "updatedNumberScheduled": tally.updated,
        "numberAvailable": tally.available,
        "numberUnavailable": (tally.desired - tally.available).max(0),
    });
    let _ = api.set_status(DAEMONSETS, key, MANAGER, &status);
}

/// The DaemonSet's pod counts over the nodes, and its out-of-date pods.
#[derive(Default)]
struct Tally {
    desired: i64,
    current: i64,
    misscheduled: i64,
    ready: i64,
    available: i64,
    updated: i64,
    /// Active pods not ready now.
    unavailable_now: i64,
    outdated: Vec<Arc<StoredObject>>,
}

impl Tally {
    /// Counts one node: whether it should run a pod, and its `active` pods
    /// against the current revision `hash`.
    fn node(
        &mut self,
        should_run: bool,
        active: &[&Arc<StoredObject>],
        hash: &str,
        min_ready: i64,
    ) {
        if should_run {
            self.desired += 1;
            if !active.is_empty() {
                self.current += 1;
            }
        } else if !active.is_empty() {
            self.misscheduled += 1;
        }
        for p in active {
            if pods::ready(&p.value()) {
                self.ready += 1;
                if pods::available(&p.value(), min_ready) {
                    self.available += 1;
                }
            } else {
                self.unavailable_now += 1;
            }
            let tree = p.value();
            let label = tree
                .at("/metadata/labels")
                .and_then(|l| l.get(REVISION_LABEL))
                .and_then(Value::as_str);
            if label == Some(hash) {
                self.updated += 1;
            } else {
                self.outdated.push((*p).clone());
            }
        }
    }
}

/// A DaemonSet being reconciled, at its current revision.
struct Daemon<'a> {
    api: &'a Api,
    ds: &'a Value,
    key: &'a ObjKey,
    template: &'a Value,
    hash: &'a str,
    generation: i64,
}

impl Daemon<'_> {
    /// Replaces failed pods on `node`, then creates its pod if it should
    /// run one and has none, deletes its pods if it should not, or deletes
    /// all but one.
    fn fix_node(
        &self,
        node: &str,
        should_run: bool,
        on_node: &[Arc<StoredObject>],
        active: &[&Arc<StoredObject>],
    ) {
        let api = self.api;
        for p in on_node
            .iter()
            .filter(|p| pods::phase(&p.value()) == "Failed" && !p.deleting())
        {
            let _ = api.delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None);
        }
        if should_run && active.is_empty() {
            self.create_pod(node);
        } else if !should_run {
            for p in active {
                if api
                    .delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None)
                    .is_ok()
                {
                    api.event(
                        self.ds,
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

    /// Creates the daemon pod for `node`: the template with the revision
    /// labels, pinned to the node by required affinity, with the daemon
    /// tolerations.
    fn create_pod(&self, node: &str) {
        let (api, ds, key) = (self.api, self.ds, self.key);
        let mut pod = pods::from_template(
            self.template,
            &key.0,
            &key.1,
            controller_ref(ds, DAEMONSETS),
        );
        if let Some(labels) =
            crate::registry::fields::ensure_object(&mut pod, &["metadata", "labels"])
        {
            labels.insert(REVISION_LABEL.into(), json!(self.hash));
            labels.insert(
                "pod-template-generation".into(),
                json!(self.generation.to_string()),
            );
        }
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!({
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
        });
        daemon_tolerations(&mut pod);
        match api.create(PODS, MANAGER, pod) {
            Ok(p) => api.event(
                ds,
                DAEMONSETS,
                "Normal",
                "SuccessfulCreate",
                &format!("Created pod: {}", p.name()),
                COMPONENT,
            ),
            Err(e) => api.event(
                ds,
                DAEMONSETS,
                "Warning",
                "FailedCreate",
                &format!("Error creating: {}", e.message),
                COMPONENT,
            ),
        }
    }
}

/// A rolling update: deletes `outdated` pods while at most
/// `maxUnavailable` of the `desired` pods are unavailable.
fn roll(
    api: &Api,
    ds: &Value,
    desired: i64,
    unavailable_now: i64,
    mut outdated: Vec<Arc<StoredObject>>,
) {
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
