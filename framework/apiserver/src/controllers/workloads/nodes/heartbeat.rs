//! The simulated kubelets' node side: each node registers itself (labels,
//! capacity, addresses, node info, conditions), renews its Lease in
//! `kube-node-lease` every heartbeat, and posts its `Ready` condition when
//! it changes — `KubeletReady` or, when a test says so, `KubeletNotReady`.
//! A stopped kubelet posts nothing.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::controllers::config::SimNode;
use crate::controllers::workloads::api::{Api, LEASES, NODES};
use crate::controllers::write::MANAGER;
use crate::machinery::util;
use crate::machinery::util::Pointer;

/// The kubelet version nodes report.
pub(crate) const KUBELET_VERSION: &str = "v1.33.0-kubeforge";

/// A node's InternalIP: `172.18.<i/250>.<i%250+2>`.
pub(crate) fn node_ip(index: usize) -> String {
    format!("172.18.{}.{}", index / 250, index % 250 + 2)
}

fn node_object(node: &SimNode, index: usize) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert("kubernetes.io/hostname".into(), json!(node.name));
    labels.insert("kubernetes.io/os".into(), json!("linux"));
    labels.insert("kubernetes.io/arch".into(), json!("amd64"));
    labels.insert("beta.kubernetes.io/os".into(), json!("linux"));
    labels.insert("beta.kubernetes.io/arch".into(), json!("amd64"));
    labels.insert("type".into(), json!("kubeforge"));
    for (k, v) in &node.labels {
        labels.insert(k.clone(), json!(v));
    }
    let taints: Vec<Value> = node
        .taints
        .iter()
        .map(|(k, v, e)| {
            let mut t = json!({"key": k, "effect": e});
            if !v.is_empty() {
                t["value"] = json!(v);
            }
            t
        })
        .collect();
    let resources = json!({"cpu": node.cpu, "memory": node.memory, "pods": node.pods.to_string(), "ephemeral-storage": "100Gi"});
    let mut spec = json!({"podCIDR": format!("10.244.{index}.0/24"), "podCIDRs": [format!("10.244.{index}.0/24")]});
    if !taints.is_empty() {
        spec["taints"] = json!(taints);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
        },
        "spec": spec,
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "addresses": [
                {"type": "InternalIP", "address": node_ip(index)},
                {"type": "Hostname", "address": node.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "containerd://1.7.0-kubeforge",
                "kernelVersion": "6.1.0-kubeforge",
                "kubeProxyVersion": "",
                "kubeletVersion": KUBELET_VERSION,
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "kubeforge simulated node",
                "systemUUID": "",
            },
            "phase": "Running",
        },
    })
}

/// The conditions a kubelet posts.
fn conditions(ready: bool, prev: Option<&Value>) -> Value {
    let now = util::now();
    let keep = |ty: &str, status: &str| -> String {
        prev.and_then(|p| p.as_array())
            .and_then(|cs| {
                cs.iter().find(|c| {
                    c.get("type").and_then(Value::as_str) == Some(ty)
                        && c.get("status").and_then(Value::as_str) == Some(status)
                })
            })
            .and_then(|c| c.get("lastTransitionTime"))
            .and_then(Value::as_str)
            .map_or_else(|| now.clone(), str::to_owned)
    };
    let pressure = |ty: &str, reason: &str, msg: &str| json!({"type": ty, "status": "False", "lastHeartbeatTime": now, "lastTransitionTime": keep(ty, "False"), "reason": reason, "message": msg});
    let ready_cond = if ready {
        json!({"type": "Ready", "status": "True", "lastHeartbeatTime": now, "lastTransitionTime": keep("Ready", "True"),
               "reason": "KubeletReady", "message": "kubelet is posting ready status"})
    } else {
        json!({"type": "Ready", "status": "False", "lastHeartbeatTime": now, "lastTransitionTime": keep("Ready", "False"),
               "reason": "KubeletNotReady", "message": "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:simulated failure"})
    };
    json!([
        pressure(
            "MemoryPressure",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available"
        ),
        pressure(
            "DiskPressure",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure"
        ),
        pressure(
            "PIDPressure",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available"
        ),
        ready_cond,
    ])
}

fn ready_status(node: &Value) -> Option<&str> {
    node.at("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))?
        .get("status")?
        .as_str()
}

/// Registers the nodes and their Leases.
pub(crate) fn register(api: &Api) {
    for (i, node) in api.cfg.nodes.iter().enumerate() {
        let mut obj = node_object(node, i);
        obj["status"]["conditions"] = conditions(true, None);
        let created = api.create(NODES, "kubelet", obj.clone());
        if created.is_ok() {
            // The status subresource: a create drops it.
            let status = obj["status"].clone();
            let _ = api.set_status(
                NODES,
                &(String::new(), node.name.clone()),
                "kubelet",
                &status,
            );
        }
        renew_lease(api, &node.name);
    }
}

fn renew_lease(api: &Api, node: &str) {
    let key = ("kube-node-lease".to_owned(), node.to_owned());
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    let renewed = api.update(LEASES, &key, "kubelet", |l| {
        l["spec"]["renewTime"] = json!(now);
        true
    });
    if renewed.is_err() {
        let node_uid = api
            .get(NODES, &(String::new(), node.to_owned()))
            .map(|n| n.uid().to_owned())
            .unwrap_or_default();
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": node, "namespace": "kube-node-lease",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}]},
            "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": now},
        });
        let _ = api.create(LEASES, "kubelet", lease);
    }
}

/// Heartbeats until `cancel`.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    tokio::spawn(async move {
        let controls = api.controls.clone();
        loop {
            for node in &api.cfg.nodes {
                let fault = controls.fault(&node.name);
                if fault.stopped {
                    continue;
                }
                renew_lease(&api, &node.name);
                let key = (String::new(), node.name.clone());
                let Some(cur) = api.get(NODES, &key) else {
                    continue;
                };
                let want = if fault.not_ready { "False" } else { "True" };
                if ready_status(&cur.value()) != Some(want) {
                    let _ = api.update_status(NODES, &key, MANAGER, |n| {
                        let prev = n.at("/status/conditions").cloned();
                        n["status"]["conditions"] = conditions(!fault.not_ready, prev.as_ref());
                        true
                    });
                }
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(api.cfg.timing.heartbeat) => {}
                _ = controls.changed.notified() => {}
            }
        }
    });
}
