//! The Deployment controller (`pkg/controller/deployment`): ReplicaSets
//! per pod template, rolling updates and Recreate, revisions for
//! `kubectl rollout undo`, and the status `kubectl rollout status` reads.
//! `util` holds the arithmetic and annotations, `status` the conditions,
//! `sync` one reconcile.

mod status;
mod sync;
mod util;

pub(crate) use util::scaled;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::api::{controller_key, key_of, Api, DEPLOYMENTS, PODS, REPLICASETS};
use super::informer::{self, Change};
use super::queue::Queue;
use crate::selectors::selector_matches;
use crate::storage::EventType;
use crate::util as meta;
use crate::util::Pointer;

/// Starts the controller.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    let queue = Arc::new(Queue::default());
    let q = queue.clone();
    informer::watch(
        api.shared.clone(),
        DEPLOYMENTS.res(),
        cancel.clone(),
        move |c: &Change| q.add(key_of(c.obj.value())),
    );
    let q = queue.clone();
    let a = api.clone();
    informer::watch(
        api.shared.clone(),
        REPLICASETS.res(),
        cancel.clone(),
        move |c: &Change| {
            if let Some(k) = controller_key(c.obj.value(), DEPLOYMENTS) {
                q.add(k);
            } else if c.ty != EventType::Deleted {
                let ns = meta::meta_str(c.obj.value(), "namespace").unwrap_or("");
                for d in a.list(DEPLOYMENTS, Some(ns)) {
                    let sel = d.value().at("/spec/selector").cloned().unwrap_or_default();
                    if selector_matches(&sel, c.obj.value().at("/metadata/labels")) {
                        q.add(key_of(d.value()));
                    }
                }
            }
            if let Some(k) = c
                .old
                .as_ref()
                .and_then(|o| controller_key(o.value(), DEPLOYMENTS))
            {
                q.add(k);
            }
        },
    );
    // A Recreate rollout waits for the old pods to be gone.
    let q = queue.clone();
    let a = api.clone();
    informer::watch(
        api.shared.clone(),
        PODS.res(),
        cancel.clone(),
        move |c: &Change| {
            if c.ty != EventType::Deleted {
                return;
            }
            let Some(rs_key) = controller_key(c.obj.value(), REPLICASETS) else {
                return;
            };
            if let Some(rs) = a.get(REPLICASETS, &rs_key) {
                if let Some(k) = controller_key(rs.value(), DEPLOYMENTS) {
                    q.add(k);
                }
            }
        },
    );
    let q = queue.clone();
    tokio::spawn(async move {
        q.clone().run(cancel, |key| sync::sync(&api, &q, key)).await;
    });
}
