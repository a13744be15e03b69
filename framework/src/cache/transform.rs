//! [`Transform`]: a function applied to every object before it is cached,
//! so what nobody reads is never kept (client-go's `TransformFunc`). The
//! reflector calls it on each decoded object, before wrapping it in an `Arc`.
//!
//! `managedFields` are often a fifth of an object's bytes and controllers
//! rarely read them: [`strip_managed_fields`] drops them in one line.

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;

/// The `kubectl apply` annotation holding the last applied configuration.
pub const LAST_APPLIED_CONFIG_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A function run on every object before it is cached. Cheap to clone.
///
/// It must be idempotent and keep the object's name, namespace and
/// resourceVersion: the cache keys and versions objects by them.
pub struct Transform<K> {
    func: Arc<dyn Fn(K) -> K + Send + Sync>,
    /// It starts by dropping `metadata.managedFields`, so a list decoder
    /// may leave them out of the bytes it decodes.
    drops_managed_fields: bool,
}

impl<K> Clone for Transform<K> {
    fn clone(&self) -> Self {
        Self {
            func: Arc::clone(&self.func),
            drops_managed_fields: self.drops_managed_fields,
        }
    }
}

impl<K> fmt::Debug for Transform<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Transform")
    }
}

impl<K> Transform<K> {
    /// A transform from a function.
    pub fn new(f: impl Fn(K) -> K + Send + Sync + 'static) -> Self {
        Self {
            func: Arc::new(f),
            drops_managed_fields: false,
        }
    }

    /// Runs the transform.
    pub fn apply(&self, obj: K) -> K {
        (self.func)(obj)
    }

    /// This transform followed by `next`.
    pub fn then(self, next: Transform<K>) -> Self
    where
        K: 'static,
    {
        // `next` sees what `self` left: if `self` drops managedFields
        // first, so does the whole.
        let drops_managed_fields = self.drops_managed_fields;
        Self {
            drops_managed_fields,
            ..Self::new(move |obj| next.apply(self.apply(obj)))
        }
    }

    /// Whether the transform's result never has `metadata.managedFields`
    /// and nothing in it reads them: the reflector then cuts them out of
    /// list items before decoding, so they are never built.
    pub(crate) fn drops_managed_fields(&self) -> bool {
        self.drops_managed_fields
    }
}

/// Drops `metadata.managedFields` (server-side apply bookkeeping) from every
/// object: `Transform::new` of [`without_managed_fields`].
pub fn strip_managed_fields<K: Resource + 'static>() -> Transform<K> {
    Transform {
        drops_managed_fields: true,
        ..Transform::new(without_managed_fields)
    }
}

/// `obj` without `metadata.managedFields`.
pub fn without_managed_fields<K: Resource>(mut obj: K) -> K {
    obj.meta_mut().managed_fields = None;
    obj
}

/// Drops the `kubectl.kubernetes.io/last-applied-configuration` annotation,
/// a full copy of the object that client-side `kubectl apply` leaves behind.
pub fn strip_last_applied_configuration<K: Resource + 'static>() -> Transform<K> {
    Transform::new(|mut obj: K| {
        if let Some(annotations) = obj.meta_mut().annotations.as_mut() {
            annotations.remove(LAST_APPLIED_CONFIG_ANNOTATION);
        }
        obj
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use kube_core::{ObjectMeta, PartialObjectMeta};
    use std::collections::BTreeMap;

    fn with_bookkeeping() -> ObjectMeta {
        ObjectMeta {
            name: Some("a".into()),
            resource_version: Some("7".into()),
            managed_fields: Some(vec![ManagedFieldsEntry {
                manager: Some("kubectl".into()),
                ..Default::default()
            }]),
            annotations: Some(BTreeMap::from([
                (LAST_APPLIED_CONFIG_ANNOTATION.to_owned(), "{}".to_owned()),
                ("keep".to_owned(), "me".to_owned()),
            ])),
            ..Default::default()
        }
    }

    #[test]
    fn strips_managed_fields_and_last_applied_keeping_identity() {
        let t = strip_managed_fields::<ConfigMap>().then(strip_last_applied_configuration());
        let out = t.apply(ConfigMap {
            metadata: with_bookkeeping(),
            ..Default::default()
        });
        assert_eq!(out.metadata.managed_fields, None);
        assert_eq!(
            out.metadata.annotations,
            Some(BTreeMap::from([("keep".to_owned(), "me".to_owned())]))
        );
        assert_eq!(out.metadata.name.as_deref(), Some("a"));
        assert_eq!(out.metadata.resource_version.as_deref(), Some("7"));
    }

    #[test]
    fn only_a_transform_that_starts_by_stripping_lets_the_decoder_skip_managed_fields() {
        let strip = strip_managed_fields::<ConfigMap>;
        let other = || Transform::new(|cm: ConfigMap| cm);
        assert!(strip().drops_managed_fields());
        assert!(strip().then(other()).drops_managed_fields());
        assert!(!other().drops_managed_fields());
        // `other` runs first and may read them.
        assert!(!other().then(strip()).drops_managed_fields());
    }

    #[test]
    fn works_on_metadata_only_objects() {
        let partial: PartialObjectMeta<ConfigMap> = PartialObjectMeta {
            types: None,
            metadata: with_bookkeeping(),
            _phantom: Default::default(),
        };
        assert_eq!(
            strip_managed_fields()
                .apply(partial)
                .metadata
                .managed_fields,
            None
        );
    }
}
