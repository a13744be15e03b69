//! The informer's event model and its handlers: [`Event`] (add, update with
//! old and new, delete with the last known state), [`DeletedObject`]
//! (client-go's `DeletedFinalStateUnknown` folded in as a flag), the
//! [`EventHandler`] trait and [`HandlerFns`] for closures.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use kube_core::Resource;

use super::ObjectKey;

/// A deleted object: the last state known, and whether that state is final.
#[derive(Debug)]
pub struct DeletedObject<K> {
    /// The object's final state from the watch's `DELETED` event, or, when
    /// `final_state_unknown`, the last state the cache held.
    pub object: Arc<K>,
    /// The object vanished while the watch was down (it was missing from a
    /// relist), so `object` may be older than its real final state
    /// (client-go's `DeletedFinalStateUnknown` tombstone).
    pub final_state_unknown: bool,
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        Self {
            object: Arc::clone(&self.object),
            final_state_unknown: self.final_state_unknown,
        }
    }
}

impl<K: Resource> DeletedObject<K> {
    /// The deleted object's key.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::of(self.object.as_ref())
    }
}

/// One change delivered to a handler, in the order the informer saw it.
#[derive(Debug)]
pub enum Event<K> {
    /// An object appeared (or is replayed to a handler added late).
    Add {
        /// The object.
        object: Arc<K>,
        /// The add belongs to the informer's initial list (or to the replay
        /// of the cache a late handler gets), as client-go's
        /// `OnAdd(obj, isInInitialList)` reports.
        is_in_initial_list: bool,
    },
    /// An object changed; on a resync `old` and `new` are the same `Arc`.
    Update {
        /// The state before.
        old: Arc<K>,
        /// The state now.
        new: Arc<K>,
    },
    /// An object was deleted.
    Delete(DeletedObject<K>),
}

impl<K> Clone for Event<K> {
    fn clone(&self) -> Self {
        match self {
            Event::Add {
                object,
                is_in_initial_list,
            } => Event::Add {
                object: Arc::clone(object),
                is_in_initial_list: *is_in_initial_list,
            },
            Event::Update { old, new } => Event::Update {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            Event::Delete(d) => Event::Delete(d.clone()),
        }
    }
}

impl<K> Event<K> {
    /// The object the event is about: the new state for adds and updates,
    /// the last known state for deletes.
    pub fn object(&self) -> &Arc<K> {
        match self {
            Event::Add { object, .. } => object,
            Event::Update { new, .. } => new,
            Event::Delete(d) => &d.object,
        }
    }

    /// Whether this is a resync: an update whose old and new are one `Arc`.
    pub fn is_resync(&self) -> bool {
        matches!(self, Event::Update { old, new } if Arc::ptr_eq(old, new))
    }
}

/// Receives an informer's events, one at a time and in order, on its own
/// task. Every method defaults to doing nothing.
///
/// A handler may await (a slow handler only grows its own backlog; the
/// store and other handlers go on), but should stay quick: the usual handler
/// maps the object to a key and adds it to a workqueue.
pub trait EventHandler<K>: Send + 'static {
    /// An object was added.
    fn on_add(
        &mut self,
        object: Arc<K>,
        is_in_initial_list: bool,
    ) -> impl Future<Output = ()> + Send {
        let _ = (object, is_in_initial_list);
        async {}
    }

    /// An object changed (or is resynced: `Arc::ptr_eq(&old, &new)`).
    fn on_update(&mut self, old: Arc<K>, new: Arc<K>) -> impl Future<Output = ()> + Send {
        let _ = (old, new);
        async {}
    }

    /// An object was deleted.
    fn on_delete(&mut self, deleted: DeletedObject<K>) -> impl Future<Output = ()> + Send {
        let _ = deleted;
        async {}
    }
}

type AddFn<K> = Box<dyn FnMut(Arc<K>, bool) + Send>;
type UpdateFn<K> = Box<dyn FnMut(Arc<K>, Arc<K>) + Send>;
type DeleteFn<K> = Box<dyn FnMut(DeletedObject<K>) + Send>;
type EventFn<K> = Box<dyn FnMut(Event<K>) + Send>;

/// A handler made of closures (client-go's `ResourceEventHandlerFuncs`):
/// set the ones you need, the others ignore their events.
///
/// ```
/// use kubeforge::cache::HandlerFns;
/// use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
///
/// let handler = HandlerFns::<ConfigMap>::new()
///     .on_add(|cm, _initial| tracing::info!(name = ?cm.metadata.name, "added"))
///     .on_delete(|deleted| tracing::info!(key = %deleted.key(), "deleted"));
/// ```
pub struct HandlerFns<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
    any: Option<EventFn<K>>,
}

impl<K> fmt::Debug for HandlerFns<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerFns")
            .field("add", &self.add.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .field("any", &self.any.is_some())
            .finish()
    }
}

impl<K> Default for HandlerFns<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> HandlerFns<K> {
    /// A handler that ignores everything until closures are set.
    pub fn new() -> Self {
        Self {
            add: None,
            update: None,
            delete: None,
            any: None,
        }
    }

    /// A handler that passes every [`Event`] to one closure.
    pub fn from_fn(f: impl FnMut(Event<K>) + Send + 'static) -> Self {
        Self {
            any: Some(Box::new(f)),
            ..Self::new()
        }
    }

    /// Runs `f` on adds.
    pub fn on_add(mut self, f: impl FnMut(Arc<K>, bool) + Send + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Runs `f` on updates (and resyncs).
    pub fn on_update(mut self, f: impl FnMut(Arc<K>, Arc<K>) + Send + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Runs `f` on deletes.
    pub fn on_delete(mut self, f: impl FnMut(DeletedObject<K>) + Send + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> EventHandler<K> for HandlerFns<K> {
    fn on_add(
        &mut self,
        object: Arc<K>,
        is_in_initial_list: bool,
    ) -> impl Future<Output = ()> + Send {
        if let Some(any) = &mut self.any {
            any(Event::Add {
                object: Arc::clone(&object),
                is_in_initial_list,
            });
        }
        if let Some(add) = &mut self.add {
            add(object, is_in_initial_list);
        }
        std::future::ready(())
    }

    fn on_update(&mut self, old: Arc<K>, new: Arc<K>) -> impl Future<Output = ()> + Send {
        if let Some(any) = &mut self.any {
            any(Event::Update {
                old: Arc::clone(&old),
                new: Arc::clone(&new),
            });
        }
        if let Some(update) = &mut self.update {
            update(old, new);
        }
        std::future::ready(())
    }

    fn on_delete(&mut self, deleted: DeletedObject<K>) -> impl Future<Output = ()> + Send {
        if let Some(any) = &mut self.any {
            any(Event::Delete(deleted.clone()));
        }
        if let Some(delete) = &mut self.delete {
            delete(deleted);
        }
        std::future::ready(())
    }
}

/// Passes `event` to the matching method of `handler`.
pub(crate) async fn dispatch<K, H: EventHandler<K>>(handler: &mut H, event: Event<K>) {
    match event {
        Event::Add {
            object,
            is_in_initial_list,
        } => handler.on_add(object, is_in_initial_list).await,
        Event::Update { old, new } => handler.on_update(old, new).await,
        Event::Delete(deleted) => handler.on_delete(deleted).await,
    }
}
