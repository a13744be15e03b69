//! The node lifecycle controller and the taint manager
//! (`pkg/controller/nodelifecycle`, `tainteviction`): a node whose Lease
//! was not renewed within the grace period gets `Unknown` conditions
//! (`NodeStatusUnknown`, "Kubelet stopped posting node status.") and the
//! `node.kubernetes.io/unreachable` taints, a node reporting `Ready=False`
//! the `node.kubernetes.io/not-ready` taints, a cordoned node the
//! `node.kubernetes.io/unschedulable` taint; pods on a node that is not
//! ready are marked `Ready=False`, and pods not tolerating a `NoExecute`
//! taint (or past their `tolerationSeconds`) are deleted with a
//! `DisruptionTarget` condition (`DeletionByTaintManager`).

use std::sync::Arc;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::fit;
use crate::controllers::workloads::api::{key_of, Api, LEASES, NODES, PODS};
use crate::controllers::workloads::pods;
use crate::machinery::util;
use crate::machinery::util::Pointer;

const COMPONENT: &str = "node-controller";
const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// Runs the checks every heartbeat interval.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    tokio::spawn(async move {
        let every = api
            .cfg
            .timing
            .heartbeat
            .min(std::time::Duration::from_secs(5));
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
            for node in api.list(NODES, None) {
                check(&api, &node.value());
            }
        }
    });
}

fn ready_status(node: &Value) -> String {
    node.at("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        })
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        .unwrap_or("Unknown")
        .to_owned()
}

fn check(api: &Api, node: &Value) {
    let name = util::meta_str(node, "name").unwrap_or("").to_owned();
    let key = (String::new(), name.clone());
    // Heartbeats: the Lease's renewTime.
    let renewed = api
        .get(LEASES, &("kube-node-lease".into(), name.clone()))
        .and_then(|l| {
            l.value()
                .at("/spec/renewTime")
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        });
    let grace = api.cfg.timing.node_grace;
    let silent =
        renewed.is_none_or(|t| jiff::Timestamp::now().duration_since(t).unsigned_abs() > grace);
    let mut status = ready_status(node);
    if silent && status != "Unknown" {
        let now = util::now();
        let _ = api.update_status(NODES, &key, COMPONENT, |n| {
            let Some(list) = n
                .pointer_mut("/status/conditions")
                .and_then(Value::as_array_mut)
            else {
                return false;
            };
            for c in list.iter_mut() {
                c["status"] = json!("Unknown");
                c["reason"] = json!("NodeStatusUnknown");
                c["message"] = json!("Kubelet stopped posting node status.");
                c["lastTransitionTime"] = json!(now);
            }
            true
        });
        status = "Unknown".into();
    }
    let unschedulable = node.at("/spec/unschedulable").and_then(Value::as_bool) == Some(true);
    let want: Vec<(&str, &str)> = match status.as_str() {
        "True" => vec![],
        "False" => vec![(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")],
        _ => vec![(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")],
    }
    .into_iter()
    .chain(unschedulable.then_some((UNSCHEDULABLE, "NoSchedule")))
    .collect();
    let managed = [NOT_READY, UNREACHABLE, UNSCHEDULABLE];
    let current = fit::taints(node);
    let have: Vec<(String, String)> = current
        .iter()
        .filter(|t| managed.contains(&t.get("key").and_then(Value::as_str).unwrap_or("")))
        .map(|t| {
            (
                t.get("key")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                t.get("effect")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            )
        })
        .collect();
    let mut want_sorted: Vec<(String, String)> = want
        .iter()
        .map(|(k, e)| ((*k).to_owned(), (*e).to_owned()))
        .collect();
    want_sorted.sort();
    let mut have_sorted = have.clone();
    have_sorted.sort();
    if want_sorted != have_sorted {
        let now = util::now();
        let _ = api.update(NODES, &key, COMPONENT, |n| {
            let mut taints: Vec<Value> = fit::taints(n)
                .into_iter()
                .filter(|t| {
                    let k = t
                        .get("key")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let e = t
                        .get("effect")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    !managed.contains(&k.as_str()) || want_sorted.contains(&(k, e))
                })
                .collect();
            for (k, e) in &want_sorted {
                let present = taints.iter().any(|t| {
                    t.get("key").and_then(Value::as_str) == Some(k)
                        && t.get("effect").and_then(Value::as_str) == Some(e)
                });
                if !present {
                    let mut t = json!({"key": k, "effect": e});
                    if e == "NoExecute" {
                        t["timeAdded"] = json!(now);
                    }
                    taints.push(t);
                }
            }
            if taints.is_empty() {
                if let Some(spec) = n.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("taints");
                }
            } else {
                n["spec"]["taints"] = json!(taints);
            }
            true
        });
    }
    let Some(node) = api.get(NODES, &key) else {
        return;
    };
    let node = &node.value();
    // A ready node without NoExecute taints leaves its pods alone; only
    // then is every pod looked at (once per node per round, which is
    // nodes x pods).
    let no_execute = fit::taints(node)
        .iter()
        .any(|t| t.get("effect").and_then(Value::as_str) == Some("NoExecute"));
    if status == "True" && !no_execute {
        return;
    }
    for pod in api.list(PODS, None) {
        let p = &pod.value();
        if p.at("/spec/nodeName").and_then(Value::as_str) != Some(name.as_str()) || !pods::active(p)
        {
            continue;
        }
        if status != "True" && pods::ready(p) {
            mark_not_ready(api, p);
        }
        evict_if_intolerant(api, node, p);
    }
}

/// `MarkPodsNotReady`.
fn mark_not_ready(api: &Api, pod: &Value) {
    let now = util::now();
    let _ = api.update_status(PODS, &key_of(pod), COMPONENT, |p| {
        let Some(list) = p
            .pointer_mut("/status/conditions")
            .and_then(Value::as_array_mut)
        else {
            return false;
        };
        let mut changed = false;
        for c in list.iter_mut() {
            if c.get("type").and_then(Value::as_str) == Some("Ready")
                && c.get("status").and_then(Value::as_str) != Some("False")
            {
                c["status"] = json!("False");
                c["lastTransitionTime"] = json!(now);
                changed = true;
            }
        }
        changed
    });
}

/// The taint manager: deletes pods that do not (or no longer) tolerate a
/// NoExecute taint.
fn evict_if_intolerant(api: &Api, node: &Value, pod: &Value) {
    let tols = fit::tolerations(pod);
    let now = jiff::Timestamp::now();
    let mut evict = false;
    for taint in fit::taints(node) {
        if taint.get("effect").and_then(Value::as_str) != Some("NoExecute") {
            continue;
        }
        let matching: Vec<&Value> = tols.iter().filter(|t| fit::tolerates(t, &taint)).collect();
        if matching.is_empty() {
            evict = true;
            break;
        }
        // The shortest tolerationSeconds among the matching tolerations.
        let secs = matching
            .iter()
            .filter_map(|t| t.get("tolerationSeconds").and_then(Value::as_i64))
            .min();
        if let Some(secs) = secs {
            let added = taint
                .get("timeAdded")
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .unwrap_or(now);
            if now.as_second() - added.as_second() >= secs {
                evict = true;
                break;
            }
        }
    }
    if !evict {
        return;
    }
    let key = key_of(pod);
    let _ = api.update_status(PODS, &key, COMPONENT, |p| {
        let Some(status) = crate::registry::fields::ensure_object(p, &["status"]) else {
            return false;
        };
        let conds = status.entry("conditions").or_insert_with(|| json!([]));
        let Some(list) = conds.as_array_mut() else {
            return false;
        };
        if list
            .iter()
            .any(|c| c.get("type").and_then(Value::as_str) == Some("DisruptionTarget"))
        {
            return false;
        }
        list.push(
            json!({"type": "DisruptionTarget", "status": "True", "lastProbeTime": null,
            "lastTransitionTime": util::now(), "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint"}),
        );
        true
    });
    let uid = util::meta_str(pod, "uid").map(str::to_owned);
    if api.delete(PODS, &key, uid.as_deref(), None, None).is_ok() {
        api.event(
            pod,
            PODS,
            "Normal",
            "TaintManagerEviction",
            &format!("Marking for deletion Pod {}/{}", key.0, key.1),
            "taint-eviction-controller",
        );
    }
}
