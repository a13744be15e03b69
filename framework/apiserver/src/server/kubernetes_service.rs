//! The `kubernetes` Service in `default` and its EndpointSlice, as
//! kube-apiserver's control-plane reconciler keeps them
//! (pkg/controlplane/reconcilers): cluster IP 10.96.0.1 (the first of the
//! range), port 443 `https` targeting the server's own port, and one
//! endpoint, the server's address. Written at every start, so a data
//! directory restarted on another port points at the new one. Pods the
//! kubelet runs as processes reach the server at that IP.

use std::net::SocketAddr;

use serde_json::{json, Value};

use crate::machinery::error::Error;
use crate::objects::{self, Precondition, WriteOpts};
use crate::registry::core::service::KUBERNETES_SERVICE_IP;
use crate::registry::state::Shared;

const MANAGER: &str = "kube-apiserver";

/// Creates or refreshes the Service and its EndpointSlice for `host`.
pub(crate) fn ensure(shared: &Shared, host: SocketAddr) -> Result<(), Error> {
    let port = host.port();
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": "ClusterIP", "clusterIP": KUBERNETES_SERVICE_IP.to_string(),
            "sessionAffinity": "None",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
    });
    let family = if host.is_ipv6() { "IPv6" } else { "IPv4" };
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {"kubernetes.io/service-name": "kubernetes",
                "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io"}},
        "addressType": family,
        "endpoints": [{"addresses": [host.ip().to_string()], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    });
    for (group, plural, obj) in [
        ("", "services", service),
        ("discovery.k8s.io", "endpointslices", slice),
    ] {
        write(shared, group, plural, obj)
            .map_err(|e| Error::Rejected(format!("seeding the kubernetes Service: {e}")))?;
    }
    Ok(())
}

/// Creates `obj`, or brings an existing one's spec to it.
fn write(shared: &Shared, group: &str, plural: &str, obj: Value) -> Result<(), String> {
    let def = shared
        .registry()
        .get(group, "v1", plural)
        .ok_or_else(|| format!("{plural} are not registered"))?;
    let opts = WriteOpts::internal(&def, MANAGER);
    match objects::create(shared, &def, Some("default"), obj.clone(), &opts) {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => {
            let key = ("default".to_owned(), "kubernetes".to_owned());
            objects::update(shared, &def, &key, &opts, |current| {
                let mut next = current.clone();
                for field in ["spec", "endpoints", "ports"] {
                    if let Some(v) = obj.get(field) {
                        next[field] = v.clone();
                    }
                }
                Ok((next, Precondition::None))
            })
            .map(drop)
            .map_err(|e| e.message)
        }
        Err(e) => Err(e.message),
    }
}
