//! What kube-controller-manager would do for a lone API server, writing
//! through the same path as requests:
//!
//! - always: the ownerReference garbage collector ([`gc`]), namespace
//!   deletion ([`namespaces`]), CRD deletion ([`crds`]) and the `default`
//!   ServiceAccount of every namespace ([`serviceaccounts`]), run as one
//!   task woken after writes; work that cannot progress yet stays pending.
//! - unless turned off: Event expiry ([`event_ttl`]), its own task.
//! - when the server is built with workloads: the workload controllers
//!   and the simulated nodes ([`workloads`]), each its own task fed by
//!   watches on the store.

pub(crate) mod config;
mod crds;
pub(crate) mod event_ttl;
mod gc;
mod namespaces;
pub(crate) mod rbac_aggregation;
mod serviceaccounts;
pub(crate) mod workloads;
mod write;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::machinery::util;
use crate::registry::state::Shared;
use crate::registry::ResKey;
use crate::storage::ObjKey;
use config::{NodeControls, Workloads};

/// Runs the controllers until `cancel`.
pub(crate) async fn run(
    shared: Arc<Shared>,
    workloads: Option<Arc<Workloads>>,
    controls: Arc<NodeControls>,
    cancel: CancellationToken,
) {
    if let Some(cfg) = workloads {
        workloads::start(shared.clone(), cfg, controls, cancel.clone());
    }
    if let Some(ttl) = shared.options.event_ttl {
        tokio::spawn(event_ttl::run(shared.clone(), ttl, cancel.clone()));
    }
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = shared.controllers.woken() => {}
        }
        process(&shared);
    }
}

/// One pass over the queued work. Creating a ServiceAccount is itself a
/// write that wakes the loop again; nothing here waits.
pub(crate) fn process(shared: &Shared) {
    if shared.rbac.take_aggregation_due() {
        rbac_aggregation::aggregate(shared);
    }
    for ns in shared.controllers.take_new_namespaces() {
        serviceaccounts::ensure_default(shared, &ns);
    }
    // Reported before the dependents are collected, as kube reports them
    // when they enter the collector's graph.
    for (res, key, uid) in shared.controllers.take_misplaced_owners() {
        gc::report_misplaced(shared, &res, &key, &uid);
    }
    let gone = shared.controllers.take_owners_gone();
    for uid in gone {
        gc::owner_gone(shared, &uid);
    }
    let deleting = shared.controllers.deleting();
    for (res, key) in deleting {
        if finalize(shared, &res, &key) {
            shared.controllers.done_deleting(res, key);
        }
    }
}

/// Advances one object under deletion; `true` once nothing is left for
/// the controllers to do.
fn finalize(shared: &Shared, res: &ResKey, key: &ObjKey) -> bool {
    let Some(def) = shared.registry().by_key(res) else {
        return true;
    };
    let Some(obj) = shared.storage.lock().get(res, key) else {
        return true;
    };
    if !obj.deleting() {
        return true;
    }
    let fins = util::finalizers(&obj.value());
    let mut done = true;
    if def.is(crate::registry::BuiltinKind::Namespace) {
        done &= namespaces::finalize(shared, &def, key);
    }
    if fins
        .iter()
        .any(|f| f == crate::registry::apiextensions::customresourcedefinition::CRD_CLEANUP)
    {
        done &= crds::finalize(shared, &def, key, obj.name());
    }
    if fins.iter().any(|f| f == "orphan") {
        gc::orphan(shared, &def, key, obj.uid());
    }
    if fins.iter().any(|f| f == "foregroundDeletion") {
        done &= gc::foreground(shared, &def, key, obj.uid());
    }
    done
}
