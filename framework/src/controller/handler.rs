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

use std::collections::HashSet;
use std::future::{ready, Future};
use std::sync::Arc;

use kube_core::Resource;

use super::filter::{passes_all, SharedMetaPredicate};
use super::predicate::{BoxPredicate, Event, Predicate};
use crate::cache::{DeletedObject, EventHandler, ObjectKey};
use crate::reconcile::owner::group_of;
use crate::workqueue::WorkQueue;

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
}

/// Enqueues the keys of the objects its informer reports, filtered.
pub(crate) struct EnqueueHandler<O> {
    pub(crate) queue: WorkQueue<ObjectKey>,
    pub(crate) predicates: Vec<BoxPredicate<O>>,
    pub(crate) filters: Vec<SharedMetaPredicate>,
    pub(crate) keys: KeysFn<O>,
    /// Also enqueue the keys of an update's old state.
    pub(crate) keys_of_old_too: bool,
}

impl<O: Resource> EnqueueHandler<O> {
    fn passes(&self, event: Event<'_, O>) -> bool {
        self.predicates.iter().all(|p| p.matches(event)) && passes_all(&self.filters, event)
    }

    /// An event from outside the cluster (a [`Channel`](super::source::Channel)).
    pub(crate) fn on_generic(&self, obj: &O) {
        if self.passes(Event::Generic(obj)) {
            self.enqueue(obj);
        }
    }

    fn enqueue(&self, obj: &O) {
        for key in (self.keys)(obj) {
            self.queue.add(key);
        }
    }
}

impl<O: Resource + Send + Sync + 'static> EventHandler<O> for EnqueueHandler<O> {
    fn on_add(&mut self, object: Arc<O>, _initial: bool) -> impl Future<Output = ()> + Send {
        if self.passes(Event::Create(&object)) {
            self.enqueue(&object);
        }
        ready(())
    }

    fn on_update(&mut self, old: Arc<O>, new: Arc<O>) -> impl Future<Output = ()> + Send {
        if self.passes(Event::Update {
            old: &old,
            new: &new,
        }) {
            if self.keys_of_old_too && !Arc::ptr_eq(&old, &new) {
                let mut keys: HashSet<ObjectKey> = (self.keys)(&new).into_iter().collect();
                keys.extend((self.keys)(&old));
                for key in keys {
                    self.queue.add(key);
                }
            } else {
                self.enqueue(&new);
            }
        }
        ready(())
    }

    fn on_delete(&mut self, deleted: DeletedObject<O>) -> impl Future<Output = ()> + Send {
        if self.passes(Event::Delete(&deleted.object)) {
            self.enqueue(&deleted.object);
        }
        ready(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
