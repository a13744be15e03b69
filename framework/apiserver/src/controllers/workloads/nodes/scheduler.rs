//! A simple `default-scheduler`: pending pods are bound (through the
//! binding subresource's logic) to the feasible node with the fewest pods.
//! Feasible: taints tolerated (the node lifecycle controller taints
//! not-ready, unreachable and cordoned nodes), `nodeSelector` and required
//! node affinity satisfied, requests within allocatable CPU, memory and pod
//! slots. A pod that fits nowhere gets `PodScheduled=False`
//! (`Unschedulable`, "0/3 nodes are available: …") and is retried when
//! nodes or pods change.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::fit;
use crate::controllers::workloads::api::{key_of, Api, NODES, PODS};
use crate::controllers::workloads::informer::{self, Change};
use crate::controllers::workloads::pods;
use crate::controllers::workloads::queue::Queue;
use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::objects;
use crate::storage::{EventType, ObjKey};

const COMPONENT: &str = "default-scheduler";

/// What runs where: per pod uid, its node and requests.
#[derive(Default)]
struct Usage {
    pods: HashMap<String, (String, f64, f64)>,
    /// Per node: requested cpu, memory, and pods.
    nodes: HashMap<String, (f64, f64, f64)>,
    /// Pods that fit nowhere, retried on cluster changes.
    waiting: BTreeSet<ObjKey>,
}

impl Usage {
    fn insert(&mut self, uid: &str, node: &str, cpu: f64, mem: f64) {
        if self.pods.contains_key(uid) {
            return;
        }
        self.pods
            .insert(uid.to_owned(), (node.to_owned(), cpu, mem));
        let e = self.nodes.entry(node.to_owned()).or_default();
        e.0 += cpu;
        e.1 += mem;
        e.2 += 1.0;
    }

    fn remove(&mut self, uid: &str) -> bool {
        let Some((node, cpu, mem)) = self.pods.remove(uid) else {
            return false;
        };
        if let Some(e) = self.nodes.get_mut(&node) {
            e.0 -= cpu;
            e.1 -= mem;
            e.2 -= 1.0;
        }
        true
    }
}

fn wants_scheduling(pod: &Value) -> bool {
    let node = pod
        .at("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let scheduler = pod
        .at("/spec/schedulerName")
        .and_then(Value::as_str)
        .unwrap_or("default-scheduler");
    node.is_empty() && scheduler == COMPONENT && pods::active(pod)
}

/// Starts the scheduler.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    let queue = Arc::new(Queue::default());
    let usage = Arc::new(Mutex::new(Usage::default()));
    let (q, u) = (queue.clone(), usage.clone());
    informer::watch(
        api.shared.clone(),
        PODS.res(),
        cancel.clone(),
        move |c: &Change| {
            let pod = &c.obj.value();
            let mut u = u.lock().unwrap_or_else(|e| e.into_inner());
            let node = pod
                .at("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if c.ty == EventType::Deleted || pods::terminal(pod) {
                if u.remove(c.obj.uid()) {
                    // Room was freed: retry the pods that did not fit.
                    for k in std::mem::take(&mut u.waiting) {
                        q.add(k);
                    }
                }
                u.waiting.remove(&key_of(pod));
            } else if !node.is_empty() {
                let (cpu, mem) = fit::requests(pod);
                u.insert(c.obj.uid(), node, cpu, mem);
            } else if wants_scheduling(pod) {
                q.add(key_of(pod));
            }
        },
    );
    let (q, u) = (queue.clone(), usage.clone());
    informer::watch(
        api.shared.clone(),
        NODES.res(),
        cancel.clone(),
        move |_c: &Change| {
            let mut u = u.lock().unwrap_or_else(|e| e.into_inner());
            for k in std::mem::take(&mut u.waiting) {
                q.add(k);
            }
        },
    );
    let q = queue.clone();
    tokio::spawn(async move {
        q.run(cancel, |key| schedule(&api, &usage, key)).await;
    });
}

fn schedule(api: &Api, usage: &Mutex<Usage>, key: &ObjKey) {
    let Some(pod) = api.get(PODS, key) else {
        return;
    };
    let pod = &pod.value();
    if !wants_scheduling(pod) {
        return;
    }
    let nodes = api.list(NODES, None);
    let (cpu, mem) = fit::requests(pod);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut best: Option<(f64, String)> = None;
    {
        let u = usage.lock().unwrap_or_else(|e| e.into_inner());
        let used = &u.nodes;
        for node in &nodes {
            let n = &node.value();
            let name = node.name();
            let reason = if n.at("/spec/unschedulable").and_then(Value::as_bool) == Some(true)
                && !fit::tolerations(pod).iter().any(|t| {
                    fit::tolerates(
                        t,
                        &json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}),
                    )
                }) {
                Some("node(s) were unschedulable".to_owned())
            } else if let Some(t) = fit::untolerated(pod, n) {
                Some(format!(
                    "node(s) had untolerated taint {{{}: {}}}",
                    t.get("key").and_then(Value::as_str).unwrap_or(""),
                    t.get("value").and_then(Value::as_str).unwrap_or("")
                ))
            } else if !fit::selects(pod, n) {
                Some("node(s) didn't match Pod's node affinity/selector".to_owned())
            } else {
                let (acpu, amem, apods) = fit::allocatable(n);
                let (ucpu, umem, upods) = used.get(name).copied().unwrap_or_default();
                if upods + 1.0 > apods {
                    Some("Too many pods".to_owned())
                } else if ucpu + cpu > acpu + 1e-9 {
                    Some("Insufficient cpu".to_owned())
                } else if umem + mem > amem + 0.5 {
                    Some("Insufficient memory".to_owned())
                } else {
                    if best.as_ref().is_none_or(|(b, _)| upods < *b) {
                        best = Some((upods, name.to_owned()));
                    }
                    None
                }
            };
            if let Some(r) = reason {
                *reasons.entry(r).or_default() += 1;
            }
        }
    }
    let Some((_, node)) = best else {
        let total = nodes.len();
        let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
        parts.sort();
        let msg = if total == 0 {
            "no nodes available to schedule pods".to_owned()
        } else {
            format!(
                "0/{total} nodes are available: {}. preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling.",
                parts.join(", ")
            )
        };
        unschedulable(api, key, pod, &msg);
        usage
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .waiting
            .insert(key.clone());
        return;
    };
    let Ok(def) = api.def(PODS) else {
        return;
    };
    match objects::bind(&api.shared, &def, key, &node, None, COMPONENT) {
        Ok(()) => {
            let uid = util::meta_str(pod, "uid").unwrap_or("").to_owned();
            usage
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(&uid, &node, cpu, mem);
            api.event(
                pod,
                PODS,
                "Normal",
                "Scheduled",
                &format!("Successfully assigned {}/{} to {node}", key.0, key.1),
                COMPONENT,
            );
        }
        Err(e) => tracing::debug!(pod = %key.1, error = %e.message, "binding failed"),
    }
}

fn unschedulable(api: &Api, key: &ObjKey, pod: &Value, msg: &str) {
    let current = pods::condition(pod, "PodScheduled");
    if current
        .and_then(|c| c.get("message"))
        .and_then(Value::as_str)
        == Some(msg)
    {
        return;
    }
    let msg = msg.to_owned();
    let _ = api.update_status(PODS, key, COMPONENT, |p| {
        let Some(status) = crate::registry::fields::ensure_object(p, &["status"]) else {
            return false;
        };
        let conds = status.entry("conditions").or_insert_with(|| json!([]));
        if let Some(list) = conds.as_array_mut() {
            list.retain(|c| c.get("type").and_then(Value::as_str) != Some("PodScheduled"));
            list.push(
                json!({"type": "PodScheduled", "status": "False", "lastProbeTime": null,
                "lastTransitionTime": util::now(), "reason": "Unschedulable", "message": msg}),
            );
        }
        true
    });
    api.event(pod, PODS, "Warning", "FailedScheduling", &msg, COMPONENT);
}
