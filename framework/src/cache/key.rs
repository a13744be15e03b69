//! [`ObjectKey`]: how the cache names an object, `namespace/name` or `name`
//! for cluster-scoped objects, as client-go's `MetaNamespaceKeyFunc` does.

use std::fmt;
use std::str::FromStr;

use kube_core::{Resource, ResourceExt as _};

use super::Error;

/// The identity of a cached object: its namespace (none for cluster-scoped
/// objects) and name. Displays as client-go's keys do: `namespace/name`, or
/// `name` alone.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// The namespace, `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

impl ObjectKey {
    /// The key of a namespaced object.
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self::new(Some(namespace.into()), name)
    }

    /// The key of a cluster-scoped object.
    pub fn cluster_scoped(name: impl Into<String>) -> Self {
        Self {
            namespace: None,
            name: name.into(),
        }
    }

    /// A key from an optional namespace; an empty namespace means
    /// cluster-scoped, as it does on the wire.
    pub fn new(namespace: Option<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.filter(|ns| !ns.is_empty()),
            name: name.into(),
        }
    }

    /// The key of any object: typed, [`DynamicObject`](kube_core::DynamicObject)
    /// or [`PartialObjectMeta`](kube_core::PartialObjectMeta). An object
    /// without a name (only possible before creation) keys by its
    /// `generateName`, as `ResourceExt::name_any` does.
    pub fn of<K: Resource>(obj: &K) -> Self {
        Self::new(obj.namespace(), obj.name_any())
    }

    /// The namespace, or `""` for cluster-scoped objects (the value the
    /// namespace index files them under).
    pub fn namespace_or_empty(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// Parses client-go's key format (`SplitMetaNamespaceKey`): `name` or
/// `namespace/name`; anything with more slashes or an empty name is refused.
impl FromStr for ObjectKey {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let mut parts = s.split('/');
        let (ns, name) = match (parts.next(), parts.next(), parts.next()) {
            (Some(name), None, None) => (None, name),
            (Some(ns), Some(name), None) => (Some(ns.to_owned()), name),
            _ => return Err(Error::InvalidKey(s.to_owned())),
        };
        if name.is_empty() {
            return Err(Error::InvalidKey(s.to_owned()));
        }
        Ok(Self::new(ns, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube_core::{ApiResource, DynamicObject, ObjectMeta, PartialObjectMeta};

    #[test]
    fn displays_like_client_go_meta_namespace_key() {
        assert_eq!(ObjectKey::namespaced("ns", "a").to_string(), "ns/a");
        assert_eq!(ObjectKey::cluster_scoped("node-1").to_string(), "node-1");
        assert_eq!(ObjectKey::new(Some(String::new()), "x").to_string(), "x");
    }

    #[test]
    fn parses_like_client_go_split_meta_namespace_key() {
        assert_eq!(
            "ns/a".parse::<ObjectKey>().unwrap(),
            ObjectKey::namespaced("ns", "a")
        );
        assert_eq!(
            "a".parse::<ObjectKey>().unwrap(),
            ObjectKey::cluster_scoped("a")
        );
        assert_eq!(
            "/a".parse::<ObjectKey>().unwrap(),
            ObjectKey::cluster_scoped("a")
        );
        for bad in ["a/b/c", "", "ns/"] {
            assert_eq!(
                bad.parse::<ObjectKey>(),
                Err(Error::InvalidKey(bad.to_owned()))
            );
        }
    }

    #[test]
    fn derives_from_typed_dynamic_and_metadata_only_objects() {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(ObjectKey::of(&cm), ObjectKey::namespaced("ns", "a"));

        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(ObjectKey::of(&ns), ObjectKey::cluster_scoped("ns"));

        let ar = ApiResource::erase::<ConfigMap>(&());
        let dynamic = DynamicObject::new("d", &ar).within("ns");
        assert_eq!(ObjectKey::of(&dynamic), ObjectKey::namespaced("ns", "d"));

        let partial: PartialObjectMeta<ConfigMap> = PartialObjectMeta {
            types: None,
            metadata: cm.metadata.clone(),
            _phantom: Default::default(),
        };
        assert_eq!(ObjectKey::of(&partial), ObjectKey::namespaced("ns", "a"));
    }
}
