//! Informers over the store: a watch on one resource, from its current
//! objects on, whose events go to a handler (which maps them to queue
//! keys). A watch the store drops (a full buffer, a fault closing every
//! watch) is opened again and every object replayed, as a relisting
//! reflector does; handlers are level-triggered, so replays are harmless.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::registry::state::Shared;
use crate::registry::ResKey;
use crate::storage::{EventType, Filter, StoredObject, WatchFrom};

/// One change seen by an informer.
pub(crate) struct Change {
    /// `Added`, `Modified` or `Deleted`.
    pub ty: EventType,
    /// The object (for `Deleted`, its last state).
    pub obj: Arc<StoredObject>,
    /// The previous state, for updates.
    pub old: Option<Arc<StoredObject>>,
}

/// Watches `res` until `cancel`, calling `handler` for each change.
pub(crate) fn watch(
    shared: Arc<Shared>,
    res: ResKey,
    cancel: CancellationToken,
    handler: impl Fn(&Change) + Send + 'static,
) {
    tokio::spawn(async move {
        loop {
            let sub = shared.storage.lock().watch(
                &res,
                Filter::default(),
                WatchFrom::Now { initial: true },
            );
            let Ok(mut sub) = sub else {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            };
            for obj in std::mem::take(&mut sub.initial) {
                handler(&Change {
                    ty: EventType::Added,
                    obj,
                    old: None,
                });
            }
            loop {
                let msg = tokio::select! {
                    _ = cancel.cancelled() => return,
                    msg = sub.rx.recv() => msg,
                };
                let Some((ev, ty)) = msg else { break };
                handler(&Change {
                    ty,
                    obj: ev.object_for(ty),
                    old: ev.prev.clone(),
                });
            }
        }
    });
}
