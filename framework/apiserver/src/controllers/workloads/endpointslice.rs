//! The EndpointSlice controller (`pkg/controller/endpointslice`): each
//! Service with a selector gets an EndpointSlice of the pods it selects
//! that have an IP, labelled `kubernetes.io/service-name` and owned by the
//! Service, with each endpoint's conditions (`ready` for a Ready pod not
//! being deleted, `serving` for a Ready one, `terminating` while it is
//! deleted), its node and its pod, and the Service's ports resolved to the
//! pods' target ports (a named `targetPort` through the container's
//! ports). One slice per Service (upstream splits at 100 endpoints).

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::api::{stored_key, Api, ENDPOINTSLICES, PODS, SERVICES};
use super::informer::{self, Change};
use super::pods;
use super::queue::Queue;
use crate::machinery::util::Pointer;
use crate::storage::ObjKey;

/// The field manager and `managed-by` label upstream uses.
const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
const SERVICE_NAME: &str = "kubernetes.io/service-name";

/// Starts the controller.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    let queue = Arc::new(Queue::default());
    let q = queue.clone();
    informer::watch(
        api.shared.clone(),
        SERVICES.res(),
        cancel.clone(),
        move |c: &Change| q.add(stored_key(&c.obj)),
    );
    // A pod's change (its IP, readiness, labels, deletion) touches the
    // Services of its namespace that select.
    let (q, a) = (queue.clone(), api.clone());
    informer::watch(
        api.shared.clone(),
        PODS.res(),
        cancel.clone(),
        move |c: &Change| {
            let ns = c.obj.namespace().to_owned();
            for svc in a.list(SERVICES, Some(&ns)) {
                if selector(&svc.value()).is_some() {
                    q.add((ns.clone(), svc.name().to_owned()));
                }
            }
        },
    );
    let q = queue.clone();
    tokio::spawn(async move {
        q.run(cancel, |key| sync(&api, key)).await;
    });
}

/// A Service's non-empty selector.
fn selector(svc: &Value) -> Option<&Map<String, Value>> {
    svc.at("/spec/selector")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
}

fn selects(selector: &Map<String, Value>, pod: &Value) -> bool {
    let labels = pod.at("/metadata/labels").and_then(Value::as_object);
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// The container port a named `targetPort` means in `pod`.
fn named_port(pod: &Value, name: &str) -> Option<i64> {
    pod.at("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|c| {
            c.get("ports")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|p| p.get("containerPort").and_then(Value::as_i64))
}

/// The slice's ports for `pod`: each Service port with its target
/// resolved, skipping a name the pod lacks.
fn ports(svc: &Value, pod: Option<&Value>) -> Vec<Value> {
    svc.at("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let port = match p.get("targetPort") {
                Some(Value::Number(n)) => n.as_i64(),
                Some(Value::String(name)) => name
                    .parse()
                    .ok()
                    .or_else(|| pod.and_then(|pod| named_port(pod, name))),
                _ => p.get("port").and_then(Value::as_i64),
            }?;
            Some(json!({
                "name": p.get("name").and_then(Value::as_str).unwrap_or(""),
                "port": port,
                "protocol": p.get("protocol").and_then(Value::as_str).unwrap_or("TCP"),
            }))
        })
        .collect()
}

fn endpoint(pod: &Value, deleting: bool) -> Option<Value> {
    let ip = pod.at("/status/podIP").and_then(Value::as_str)?;
    let ready = pods::ready(pod);
    let mut e = json!({
        "addresses": [ip],
        "conditions": {"ready": ready && !deleting, "serving": ready, "terminating": deleting},
        "targetRef": {
            "kind": "Pod",
            "namespace": pod.at("/metadata/namespace"),
            "name": pod.at("/metadata/name"),
            "uid": pod.at("/metadata/uid"),
        },
    });
    if let Some(node) = pod.at("/spec/nodeName") {
        e["nodeName"] = node.clone();
    }
    Some(e)
}

fn sync(api: &Api, key: &ObjKey) {
    let Some(svc) = api.get(SERVICES, key) else {
        return;
    };
    let service = svc.value();
    let Some(selector) = selector(&service) else {
        return;
    };
    let selected: Vec<_> = api
        .list(PODS, Some(&key.0))
        .into_iter()
        .filter(|p| selects(selector, &p.value()) && !pods::terminal(&p.value()))
        .collect();
    let endpoints: Vec<Value> = selected
        .iter()
        .filter_map(|p| endpoint(&p.value(), p.deleting()))
        .collect();
    let first = selected
        .iter()
        .find(|p| p.value().at("/status/podIP").is_some())
        .map(|p| p.value());
    let ports = ports(&service, first.as_deref());
    let owned: Vec<_> = api
        .owned(ENDPOINTSLICES, svc.uid())
        .into_iter()
        .filter(|s| {
            s.value()
                .at("/metadata/labels/endpointslice.kubernetes.io~1managed-by")
                .and_then(Value::as_str)
                == Some(MANAGED_BY)
        })
        .collect();
    let Some((slice, extra)) = owned.split_first() else {
        let slice = json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "generateName": format!("{}-", key.1),
                "namespace": key.0,
                "labels": {SERVICE_NAME: key.1, "endpointslice.kubernetes.io/managed-by": MANAGED_BY},
                "ownerReferences": [{
                    "apiVersion": "v1", "kind": "Service", "name": key.1, "uid": svc.uid(),
                    "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": ports,
        });
        if let Err(e) = api.create(ENDPOINTSLICES, MANAGED_BY, slice) {
            tracing::debug!(service = %key.1, error = %e.message, "EndpointSlice not created");
        }
        return;
    };
    let slice_key = (key.0.clone(), slice.name().to_owned());
    let written = api.update(ENDPOINTSLICES, &slice_key, MANAGED_BY, |s| {
        if s.get("endpoints") == Some(&json!(endpoints)) && s.get("ports") == Some(&json!(ports)) {
            return false;
        }
        s["endpoints"] = json!(endpoints);
        s["ports"] = json!(ports);
        true
    });
    if let Err(e) = written {
        tracing::debug!(service = %key.1, error = %e.message, "EndpointSlice not updated");
    }
    for s in extra {
        let _ = api.delete(
            ENDPOINTSLICES,
            &(key.0.clone(), s.name().to_owned()),
            Some(s.uid()),
            None,
            None,
        );
    }
}
