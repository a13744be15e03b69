//! Filters that apply to every watch of a controller, whatever the watched
//! type (controller-runtime's `WithEventFilter`).
//!
//! A controller watches several types (its primary type, owned types,
//! mapped types), so a filter shared by all of them cannot be a
//! [`Predicate<K>`] for one `K`. It is a predicate over [`MetaView`]: a
//! borrowed view of any object's `metadata`, built per event without
//! cloning anything. Every built-in predicate
//! ([`GenerationChanged`](super::predicate::GenerationChanged),
//! [`LabelSelector`](super::predicate::LabelSelector), ... and their
//! combinations) is generic over the object type and so works here as is;
//! [`meta_fn`] turns a closure over `ObjectMeta` into one that works for
//! every type too.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::{DynamicResourceScope, Resource};

use super::predicate::{Event, Predicate};

/// A borrowed view of an object's metadata, as a [`Resource`] of unknown
/// kind: the type controller-wide filters are evaluated on.
///
/// Its `kind`, `group`, `version` and `plural` are empty. Mutation is not
/// part of a predicate's job: [`meta_mut`](Resource::meta_mut) hands out a
/// scratch `ObjectMeta` that is thrown away.
pub struct MetaView<'a> {
    meta: &'a ObjectMeta,
    scratch: ObjectMeta,
}

impl<'a> MetaView<'a> {
    /// A view of `meta`.
    pub fn new(meta: &'a ObjectMeta) -> Self {
        Self {
            meta,
            scratch: ObjectMeta::default(),
        }
    }

    /// The viewed metadata.
    pub fn metadata(&self) -> &'a ObjectMeta {
        self.meta
    }
}

impl fmt::Debug for MetaView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetaView")
            .field("namespace", &self.meta.namespace)
            .field("name", &self.meta.name)
            .finish_non_exhaustive()
    }
}

impl Resource for MetaView<'_> {
    type DynamicType = ();
    type Scope = DynamicResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn meta(&self) -> &ObjectMeta {
        self.meta
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.scratch
    }
}

/// A predicate usable on every watched type: one over [`MetaView`]s of any
/// lifetime. Implemented by every predicate generic over `K: Resource`.
pub trait MetaPredicate: for<'a> Predicate<MetaView<'a>> {}

impl<P: for<'a> Predicate<MetaView<'a>>> MetaPredicate for P {}

/// A type-erased [`MetaPredicate`].
pub(crate) type SharedMetaPredicate = Arc<dyn MetaPredicate>;

fn view<K: Resource>(obj: &K) -> MetaView<'_> {
    MetaView::new(obj.meta())
}

/// Evaluates controller-wide filters on the metadata of an event about any
/// object type.
pub(crate) fn passes_all<K: Resource>(
    filters: &[SharedMetaPredicate],
    event: Event<'_, K>,
) -> bool {
    if filters.is_empty() {
        return true;
    }
    filters.iter().all(|f| match event {
        Event::Create(o) => f.create(&view(o)),
        Event::Update { old, new } => f.update(&view(old), &view(new)),
        Event::Delete(o) => f.delete(&view(o)),
        Event::Generic(o) => f.generic(&view(o)),
    })
}

/// A predicate over `metadata` alone, for any object type: creates, deletes
/// and generic events pass when `f` accepts the object; updates when `f`
/// accepts the new state.
///
/// ```
/// use kubeforge::controller::filter::meta_fn;
///
/// // Ignore objects that carry `example.com/paused: "true"`.
/// let not_paused = meta_fn(|meta| {
///     meta.annotations.as_ref().and_then(|a| a.get("example.com/paused")).map(String::as_str)
///         != Some("true")
/// });
/// # let _ = not_paused;
/// ```
pub fn meta_fn<F>(f: F) -> MetaFn<F>
where
    F: Fn(&ObjectMeta) -> bool + Send + Sync,
{
    MetaFn(f)
}

/// See [`meta_fn`].
#[derive(Clone, Copy)]
pub struct MetaFn<F>(F);

impl<F> fmt::Debug for MetaFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MetaFn")
    }
}

impl<K: Resource, F: Fn(&ObjectMeta) -> bool + Send + Sync> Predicate<K> for MetaFn<F> {
    fn create(&self, obj: &K) -> bool {
        (self.0)(obj.meta())
    }
    fn update(&self, _old: &K, new: &K) -> bool {
        (self.0)(new.meta())
    }
    fn delete(&self, obj: &K) -> bool {
        (self.0)(obj.meta())
    }
    fn generic(&self, obj: &K) -> bool {
        (self.0)(obj.meta())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::predicate::{GenerationChanged, PredicateExt};
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(generation: i64, paused: bool) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.generation = Some(generation);
        if paused {
            cm.metadata.annotations = Some([("paused".to_owned(), "true".to_owned())].into());
        }
        cm
    }

    #[test]
    fn built_in_predicates_work_on_every_type_through_the_view() {
        let filters: Vec<SharedMetaPredicate> = vec![Arc::new(GenerationChanged)];
        let (a, b) = (cm(1, false), cm(2, false));
        assert!(passes_all(&filters, Event::Update { old: &a, new: &b }));
        assert!(!passes_all(&filters, Event::Update { old: &a, new: &a }));
        assert!(passes_all(&filters, Event::Create(&a)));
    }

    #[test]
    fn meta_fns_combine_with_other_predicates() {
        let not_paused = meta_fn(|m: &ObjectMeta| m.annotations.is_none());
        let filters: Vec<SharedMetaPredicate> = vec![Arc::new(GenerationChanged.and(not_paused))];
        let (a, b, paused) = (cm(1, false), cm(2, false), cm(3, true));
        assert!(passes_all(&filters, Event::Update { old: &a, new: &b }));
        assert!(!passes_all(
            &filters,
            Event::Update {
                old: &b,
                new: &paused
            }
        ));
        assert!(!passes_all(&filters, Event::Create(&paused)));
        assert!(passes_all(&[], Event::Delete(&paused)));
    }
}
