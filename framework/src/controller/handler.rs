//! The handlers that turn watch events into queued keys
//! (controller-runtime's `handler` package): the primary object's own key
//! (`EnqueueRequestForObject`), the key of the owner an object names in its
//! owner references (`EnqueueRequestForOwner`), or the keys a mapper
//! returns (`EnqueueRequestsFromMapFunc`).
//!
//! An event is enqueued only if every predicate of its watch and every
//! controller-wide filter passes it. For owners and mappers an update
//! enqueues the keys of both the old and the new state (a dependent that
//! moved to another owner must wake the old one too); the queue collapses
//! duplicates.
//!
//! Priorities as controller-runtime's `handler.WithLowPriorityWhenUnchanged`
//! (`pkg/handler/eventhandler.go`) sets them: an add from the informer's
//! initial list, and an update whose resource version did not change (a
//! resync), enqueue at [`LOW_PRIORITY`]; every other event at the watch's
//! priority ([`DEFAULT_PRIORITY`](crate::workqueue::DEFAULT_PRIORITY)
//! unless the watch names one).

use std::collections::HashSet;
use std::future::{ready, Future};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::Resource;

use super::filter::{passes_all, SharedMetaPredicate};
use super::predicate::{BoxPredicate, Event, Predicate};
use crate::cache::{DeletedObject, EventHandler, ObjectKey};
use crate::reconcile::owner::group_of;
use crate::workqueue::{Priority, WorkQueue, LOW_PRIORITY};

/// Maps an object to the keys to reconcile.
pub(crate) type KeysFn<O> = Arc<dyn Fn(&O) -> Vec<ObjectKey> + Send + Sync>;

/// Which owner references enqueue their owner.
#[derive(Clone, Debug)]
pub(crate) struct OwnerMatch {
    /// The owner type's API group (`""` for the core group).
    pub(crate) group: String,
    /// The owner type's kind.
    pub(crate) kind: String,
    /// The owner type is cluster-scoped, so its key has no namespace.
    pub(crate) cluster_scoped: bool,
    /// Enqueue every matching owner, not only the controller.
    pub(crate) every_owner: bool,
}

impl OwnerMatch {
    /// The keys of the owners of `obj` this match selects: group and kind
    /// compared as controller-runtime does (the version is ignored).
    pub(crate) fn owners<O: Resource>(&self, obj: &O) -> Vec<ObjectKey> {
        let meta = obj.meta();
        let refs = meta.owner_references.as_deref().unwrap_or(&[]);
        refs.iter()
            .filter(|r| self.every_owner || r.controller == Some(true))
            .filter(|r| r.kind == self.kind && group_of(&r.api_version) == Some(&*self.group))
            .filter(|r| !r.name.is_empty())
            .map(|r| {
                let namespace = if self.cluster_scoped {
                    None
                } else {
                    meta.namespace.clone()
                };
                ObjectKey::new(namespace, r.name.clone())
            })
            .collect()
    }

    /// The sharding slot of `meta`'s object as an owned object: its
    /// owner's (the controller reference of the owner type, else the first
    /// reference of that type), from the uid the reference carries.
    pub(crate) fn owner_slot(&self, meta: &ObjectMeta) -> Option<u32> {
        let refs = meta.owner_references.as_deref().unwrap_or(&[]);
        let mut owners = refs
            .iter()
            .filter(|r| r.kind == self.kind && group_of(&r.api_version) == Some(&*self.group))
            .filter(|r| !r.uid.is_empty());
        let controller = owners.clone().find(|r| r.controller == Some(true));
        controller
            .or_else(|| owners.next())
            .map(|r| crate::cache::Slots::slot_of_uid(&r.uid))
    }
}

/// Enqueues the keys of the objects its informer reports, filtered.
pub(crate) struct EnqueueHandler<O> {
    pub(crate) queue: WorkQueue<ObjectKey>,
    pub(crate) predicates: Vec<BoxPredicate<O>>,
    pub(crate) filters: Vec<SharedMetaPredicate>,
    pub(crate) keys: KeysFn<O>,
    /// Also enqueue the keys of an update's old state.
    pub(crate) keys_of_old_too: bool,
    /// The priority of events that carry news.
    pub(crate) priority: Priority,
}

/// Whether an update carries no news: a resync (one `Arc`), or the same
/// resource version (controller-runtime compares `GetResourceVersion()`).
fn unchanged<O: Resource>(old: &Arc<O>, new: &Arc<O>) -> bool {
    Arc::ptr_eq(old, new) || old.meta().resource_version == new.meta().resource_version
}

impl<O: Resource> EnqueueHandler<O> {
    fn passes(&self, event: Event<'_, O>) -> bool {
        self.predicates.iter().all(|p| p.matches(event)) && passes_all(&self.filters, event)
    }

    /// An event from outside the cluster (a [`Channel`](super::source::Channel)).
    pub(crate) fn on_generic(&self, obj: &O) {
        if self.passes(Event::Generic(obj)) {
            self.enqueue(obj, self.priority);
        }
    }

    fn enqueue(&self, obj: &O, priority: Priority) {
        for key in (self.keys)(obj) {
            self.queue.add_with_priority(key, priority);
        }
    }
}

impl<O: Resource + Send + Sync + 'static> EventHandler<O> for EnqueueHandler<O> {
    fn on_add(&mut self, object: Arc<O>, initial: bool) -> impl Future<Output = ()> + Send {
        if self.passes(Event::Create(&object)) {
            let priority = if initial { LOW_PRIORITY } else { self.priority };
            self.enqueue(&object, priority);
        }
        ready(())
    }

    fn on_update(&mut self, old: Arc<O>, new: Arc<O>) -> impl Future<Output = ()> + Send {
        if self.passes(Event::Update {
            old: &old,
            new: &new,
        }) {
            let priority = if unchanged(&old, &new) {
                LOW_PRIORITY
            } else {
                self.priority
            };
            if self.keys_of_old_too && !Arc::ptr_eq(&old, &new) {
                let mut keys: HashSet<ObjectKey> = (self.keys)(&new).into_iter().collect();
                keys.extend((self.keys)(&old));
                for key in keys {
                    self.queue.add_with_priority(key, priority);
                }
            } else {
                self.enqueue(&new, priority);
            }
        }
        ready(())
    }

    fn on_delete(&mut self, deleted: DeletedObject<O>) -> impl Future<Output = ()> + Send {
        if self.passes(Event::Delete(&deleted.object)) {
            self.enqueue(&deleted.object, self.priority);
        }
        ready(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt as _;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn owned_by(refs: &[(&str, &str, &str, bool)]) -> Deployment {
        let mut d = Deployment::default();
        d.metadata.namespace = Some("ns".into());
        d.metadata.name = Some("child".into());
        d.metadata.owner_references = Some(
            refs.iter()
                .map(|(api_version, kind, name, controller)| OwnerReference {
                    api_version: (*api_version).into(),
                    kind: (*kind).into(),
                    name: (*name).into(),
                    uid: "u".into(),
                    controller: Some(*controller),
                    ..Default::default()
                })
                .collect(),
        );
        d
    }

    fn matcher(every_owner: bool) -> OwnerMatch {
        OwnerMatch {
            group: "cache.example.com".into(),
            kind: "Memcached".into(),
            cluster_scoped: false,
            every_owner,
        }
    }

    #[test]
    fn the_controller_owner_of_the_right_group_and_kind_is_enqueued() {
        let d = owned_by(&[
            ("cache.example.com/v1alpha1", "Memcached", "a", true),
            ("cache.example.com/v1beta1", "Memcached", "b", false),
            ("other.example.com/v1", "Memcached", "c", true),
            ("v1", "ConfigMap", "d", true),
        ]);
        assert_eq!(
            matcher(false).owners(&d),
            [ObjectKey::namespaced("ns", "a")]
        );
        assert_eq!(
            matcher(true).owners(&d),
            [
                ObjectKey::namespaced("ns", "a"),
                ObjectKey::namespaced("ns", "b")
            ]
        );
    }

    fn handler(queue: &WorkQueue<ObjectKey>, priority: Priority) -> EnqueueHandler<Deployment> {
        EnqueueHandler {
            queue: queue.clone(),
            predicates: Vec::new(),
            filters: Vec::new(),
            keys: Arc::new(|o: &Deployment| vec![ObjectKey::of(o)]),
            keys_of_old_too: false,
            priority,
        }
    }

    fn named(name: &str, resource_version: &str) -> Arc<Deployment> {
        let mut d = Deployment::default();
        d.metadata.namespace = Some("ns".into());
        d.metadata.name = Some(name.into());
        d.metadata.resource_version = Some(resource_version.into());
        Arc::new(d)
    }

    /// controller-runtime's `WithLowPriorityWhenUnchanged`: the initial
    /// list and unchanged updates (resyncs) are low priority, the rest at
    /// the watch's priority.
    #[tokio::test]
    async fn initial_list_and_unchanged_updates_enqueue_at_low_priority() {
        let queue = WorkQueue::new();
        let mut h = handler(&queue, crate::workqueue::DEFAULT_PRIORITY);
        h.on_add(named("listed", "1"), true).await;
        h.on_add(named("created", "2"), false).await;
        let resynced = named("resynced", "3");
        h.on_update(resynced.clone(), resynced).await;
        h.on_update(named("same-rv", "4"), named("same-rv", "4"))
            .await;
        h.on_update(named("changed", "5"), named("changed", "6"))
            .await;
        let mut got = Vec::new();
        while let Some(Some((key, priority))) = queue.get_with_priority().now_or_never() {
            got.push((key.name.clone(), priority));
            queue.done(&key);
        }
        let got: Vec<(&str, Priority)> = got.iter().map(|(n, p)| (n.as_str(), *p)).collect();
        assert_eq!(
            got,
            [
                ("created", 0),
                ("changed", 0),
                ("listed", LOW_PRIORITY),
                ("resynced", LOW_PRIORITY),
                ("same-rv", LOW_PRIORITY)
            ]
        );
    }

    #[tokio::test]
    async fn a_watch_priority_applies_to_live_events_only() {
        let queue = WorkQueue::new();
        let mut h = handler(&queue, 7);
        h.on_add(named("listed", "1"), true).await;
        h.on_delete(DeletedObject {
            object: named("gone", "2"),
            final_state_unknown: false,
        })
        .await;
        assert_eq!(
            queue
                .get_with_priority()
                .now_or_never()
                .flatten()
                .map(|(k, p)| (k.name, p)),
            Some(("gone".to_owned(), 7))
        );
        assert_eq!(
            queue
                .get_with_priority()
                .now_or_never()
                .flatten()
                .map(|(k, p)| (k.name, p)),
            Some(("listed".to_owned(), LOW_PRIORITY))
        );
    }

    #[test]
    fn core_group_and_cluster_scoped_owners() {
        let d = owned_by(&[("v1", "Namespace", "team", true)]);
        let m = OwnerMatch {
            group: String::new(),
            kind: "Namespace".into(),
            cluster_scoped: true,
            every_owner: false,
        };
        assert_eq!(m.owners(&d), [ObjectKey::cluster_scoped("team")]);
    }
}
