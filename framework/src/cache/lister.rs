//! [`Lister`]: a typed, read-only view of a store, the way controllers
//! read the cache (client-go's generated listers): get by key, list with a
//! label selector, cluster-wide or in one namespace, and look up an index.

use std::fmt;
use std::sync::Arc;

use kube_core::{Resource, ResourceExt as _, Selector, SelectorExt as _};

use super::{Error, ObjectKey, Store};

/// A read-only view of a [`Store`]. Cheap to clone.
pub struct Lister<K> {
    store: Store<K>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
        }
    }
}

impl<K> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("store", &self.store)
            .finish()
    }
}

impl<K> Lister<K> {
    /// A lister over `store`.
    pub fn new(store: Store<K>) -> Self {
        Self { store }
    }

    /// The store behind the lister.
    pub fn store(&self) -> &Store<K> {
        &self.store
    }

    /// A view of one namespace.
    pub fn namespace(&self, namespace: impl Into<String>) -> NamespaceLister<K> {
        NamespaceLister {
            store: self.store.clone(),
            namespace: namespace.into(),
        }
    }
}

impl<K: Resource> Lister<K> {
    /// The object stored under `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.store.get(key)
    }

    /// The object named `name` in `namespace` (`None` for cluster-scoped).
    pub fn get_by(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        self.store.get_by(namespace, name)
    }

    /// Every object whose labels match `selector` (`Selector::default()`
    /// matches everything).
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        filter(self.store.list(), selector)
    }

    /// The objects in `namespace` whose labels match `selector`.
    pub fn list_namespace(&self, namespace: &str, selector: &Selector) -> Vec<Arc<K>> {
        filter(self.store.list_namespace(namespace), selector)
    }

    /// The objects the index `index` files under `value`.
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, Error> {
        self.store.by_index(index, value)
    }
}

/// A read-only view of one namespace of a store (client-go's
/// `XNamespaceLister`).
pub struct NamespaceLister<K> {
    store: Store<K>,
    namespace: String,
}

impl<K> fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl<K> Clone for NamespaceLister<K> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

impl<K: Resource> NamespaceLister<K> {
    /// The object named `name` in this namespace.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.store.get_by(Some(&self.namespace), name)
    }

    /// The objects in this namespace whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        filter(self.store.list_namespace(&self.namespace), selector)
    }
}

fn filter<K: Resource>(mut objects: Vec<Arc<K>>, selector: &Selector) -> Vec<Arc<K>> {
    if !selector.selects_all() {
        objects.retain(|o| selector.matches(o.labels()));
    }
    objects
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{Delta, StoreWriter};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_core::{Expression, ObjectMeta};
    use std::collections::BTreeMap;

    fn cm(ns: &str, name: &str, tier: Option<&str>) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ns.into()),
                resource_version: Some("1".into()),
                labels: tier.map(|t| BTreeMap::from([("tier".to_owned(), t.to_owned())])),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    fn names(objs: Vec<Arc<ConfigMap>>) -> Vec<String> {
        let mut v: Vec<_> = objs
            .iter()
            .map(|o| ObjectKey::of(o.as_ref()).to_string())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn lists_with_label_selectors_cluster_wide_and_per_namespace() {
        let mut w = StoreWriter::new();
        for (ns, name, tier) in [
            ("a", "x", Some("web")),
            ("a", "y", Some("db")),
            ("b", "z", Some("web")),
            ("b", "n", None),
        ] {
            w.apply(Delta::Added(cm(ns, name, tier)));
        }
        let lister = Lister::new(w.store());
        let web: Selector = Expression::Equal("tier".into(), "web".into()).into();
        let no_tier: Selector = Expression::DoesNotExist("tier".into()).into();

        assert_eq!(names(lister.list(&Selector::default())).len(), 4);
        assert_eq!(names(lister.list(&web)), ["a/x", "b/z"]);
        assert_eq!(names(lister.list_namespace("a", &web)), ["a/x"]);
        assert_eq!(names(lister.namespace("b").list(&no_tier)), ["b/n"]);
        assert!(lister.namespace("a").get("y").is_some());
        assert!(lister.namespace("b").get("y").is_none());
        assert_eq!(
            lister.by_index("nope", "x").unwrap_err(),
            Error::IndexNotFound("nope".into())
        );
    }
}
