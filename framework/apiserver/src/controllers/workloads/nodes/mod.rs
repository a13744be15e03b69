//! The simulated nodes (kwok-like): each registers a Node and heartbeats
//! through its Lease ([`heartbeat`]); a scheduler binds pending pods
//! ([`scheduler`], with [`fit`] deciding what may run where); a kubelet
//! runs bound pods through their lifecycle ([`kubelet`], by the pod's
//! [`behavior`]), or, for pods of images mapped to local executables, as
//! real processes in Linux namespaces ([`processes`]); the node lifecycle
//! controller and taint manager react to failed nodes ([`lifecycle`]).

mod behavior;
pub(crate) mod fit;
mod heartbeat;
mod kubelet;
mod lifecycle;
mod pod_status;
// Pods of `--image` images run as real processes in Linux namespaces: the
// syscalls that build those sandboxes (unshare, setns, mount, netlink, kill,
// pre_exec) have no safe std equivalent, so this one module may use `unsafe`.
#[allow(unsafe_code)]
mod processes;
mod scheduler;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::api::Api;

/// Registers the nodes and starts their kubelets, the scheduler and the
/// node lifecycle controller.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    heartbeat::register(&api);
    heartbeat::start(api.clone(), cancel.clone());
    scheduler::start(api.clone(), cancel.clone());
    kubelet::start(api.clone(), cancel.clone());
    lifecycle::start(api, cancel);
}
