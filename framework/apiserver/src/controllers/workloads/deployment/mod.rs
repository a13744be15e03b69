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

use super::api::{
    controller_key, key_of, stored_controller_key, stored_key, Api, DEPLOYMENTS, PODS, REPLICASETS,
};
use super::informer::{self, Change};
use super::queue::Queue;
use crate::machinery::selectors::selector_matches;
use crate::machinery::util::Pointer;
use crate::storage::EventType;

/// Starts the controller.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    let queue = Arc::new(Queue::default());
    let q = queue.clone();
    informer::watch(
        api.shared.clone(),
        DEPLOYMENTS.res(),
        cancel.clone(),
        move |c: &Change| q.add(stored_key(&c.obj)),
    );
    let q = queue.clone();
    let a = api.clone();
    informer::watch(
        api.shared.clone(),
        REPLICASETS.res(),
        cancel.clone(),
        move |c: &Change| {
            let rs = c.obj.value();
            if let Some(k) = controller_key(&rs, DEPLOYMENTS) {
                q.add(k);
            } else if c.ty != EventType::Deleted {
                let ns = c.obj.namespace();
                for d in a.list(DEPLOYMENTS, Some(ns)) {
                    let sel = d.value().at("/spec/selector").cloned().unwrap_or_default();
                    if selector_matches(&sel, rs.at("/metadata/labels")) {
                        q.add(key_of(&d.value()));
                    }
                }
            }
            if let Some(k) = c
                .old
                .as_ref()
                .and_then(|o| stored_controller_key(o, DEPLOYMENTS))
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
            let Some(rs_key) = stored_controller_key(&c.obj, REPLICASETS) else {
                return;
            };
            if let Some(rs) = a.get(REPLICASETS, &rs_key) {
                if let Some(k) = controller_key(&rs.value(), DEPLOYMENTS) {
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
