//! Owner references: make an object a dependent of another, for garbage
//! collection and for `owns()` watches, with controller-runtime's rules
//! (`pkg/controller/controllerutil`).
//!
//! - Only one owner reference may be the controller: [`set_controller_reference`]
//!   fails with [`Error::AlreadyOwned`] when another object already controls
//!   the dependent, and updates the reference in place when the same owner
//!   does.
//! - References are matched by API group, kind and name (not version, not
//!   UID), so an owner seen through another version is the same owner.
//! - A namespaced owner may only own objects in its own namespace; a
//!   cluster-scoped object cannot have a namespaced owner. A cluster-scoped
//!   owner may own anything. The check reads `metadata.namespace`, so set the
//!   dependent's namespace before calling.
//!
//! The `_with` variants take the owner's `DynamicType`, for
//! `DynamicObject` owners.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_core::Resource;

use super::error::Error;
use crate::cache::ObjectKey;

/// Options for the reference being set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnerRefOptions {
    /// Sets `blockOwnerDeletion`: foreground deletion of the owner waits for
    /// this dependent. Controller references default to `true` (as
    /// controller-runtime), plain owner references to unset.
    pub block_owner_deletion: Option<bool>,
}

fn build_ref<O: Resource>(
    owner: &O,
    dt: &O::DynamicType,
    controller: bool,
) -> Result<OwnerReference, Error> {
    let meta = owner.meta();
    let kind = O::kind(dt).into_owned();
    let name =
        meta.name
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Error::MissingMetadata {
                object: format!("owner {kind}"),
                field: "metadata.name",
            })?;
    let uid = meta
        .uid
        .clone()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| Error::MissingMetadata {
            object: format!("owner {kind} {name:?}"),
            field: "metadata.uid",
        })?;
    Ok(OwnerReference {
        api_version: O::api_version(dt).into_owned(),
        kind,
        name,
        uid,
        controller: controller.then_some(true),
        block_owner_deletion: controller.then_some(true),
    })
}

/// A controller owner reference to `owner` (`controller: true`,
/// `blockOwnerDeletion: true`). The owner must have a name and a UID, i.e.
/// come from the API server.
pub fn controller_owner_ref<O: Resource<DynamicType = ()>>(
    owner: &O,
) -> Result<OwnerReference, Error> {
    build_ref(owner, &(), true)
}

/// [`controller_owner_ref`] for owners whose type is described at run time.
pub fn controller_owner_ref_with<O: Resource>(
    owner: &O,
    dt: &O::DynamicType,
) -> Result<OwnerReference, Error> {
    build_ref(owner, dt, true)
}

/// A plain (non-controller) owner reference to `owner`.
pub fn owner_ref<O: Resource<DynamicType = ()>>(owner: &O) -> Result<OwnerReference, Error> {
    build_ref(owner, &(), false)
}

/// [`owner_ref`] for owners whose type is described at run time.
pub fn owner_ref_with<O: Resource>(
    owner: &O,
    dt: &O::DynamicType,
) -> Result<OwnerReference, Error> {
    build_ref(owner, dt, false)
}

/// Makes `owner` the controller of `obj`. Fails if another object already
/// controls `obj` ([`Error::AlreadyOwned`]), or if the namespaces break the
/// ownership rules; a reference to the same owner is replaced in place.
pub fn set_controller_reference<O, K>(owner: &O, obj: &mut K) -> Result<(), Error>
where
    O: Resource<DynamicType = ()>,
    K: Resource,
{
    set_controller_reference_with(owner, &(), obj, OwnerRefOptions::controller())
}

/// [`set_controller_reference`] with the owner's `DynamicType` and options.
pub fn set_controller_reference_with<O, K>(
    owner: &O,
    dt: &O::DynamicType,
    obj: &mut K,
    options: OwnerRefOptions,
) -> Result<(), Error>
where
    O: Resource,
    K: Resource,
{
    validate_owner(owner.meta().namespace.as_deref(), obj)?;
    let mut reference = build_ref(owner, dt, true)?;
    reference.block_owner_deletion = options.block_owner_deletion;
    if let Some(existing) = get_controller_of(obj) {
        if !refer_same_object(existing, &reference) {
            return Err(Error::AlreadyOwned {
                object: ObjectKey::of(obj).to_string(),
                owner: Box::new(existing.clone()),
            });
        }
    }
    upsert(obj, reference);
    Ok(())
}

/// Adds (or replaces) a non-controller owner reference to `owner` on `obj`.
/// Replacing a controller reference to the same owner drops its controller
/// flag, as controller-runtime's `SetOwnerReference` does.
pub fn set_owner_reference<O, K>(owner: &O, obj: &mut K) -> Result<(), Error>
where
    O: Resource<DynamicType = ()>,
    K: Resource,
{
    set_owner_reference_with(owner, &(), obj, OwnerRefOptions::default())
}

/// [`set_owner_reference`] with the owner's `DynamicType` and options.
pub fn set_owner_reference_with<O, K>(
    owner: &O,
    dt: &O::DynamicType,
    obj: &mut K,
    options: OwnerRefOptions,
) -> Result<(), Error>
where
    O: Resource,
    K: Resource,
{
    validate_owner(owner.meta().namespace.as_deref(), obj)?;
    let mut reference = build_ref(owner, dt, false)?;
    reference.block_owner_deletion = options.block_owner_deletion;
    upsert(obj, reference);
    Ok(())
}

/// Whether `obj` has an owner reference (controller or not) to `owner`,
/// matched by group, kind and name.
pub fn has_owner_reference<O, K>(obj: &K, owner: &O) -> bool
where
    O: Resource<DynamicType = ()>,
    K: Resource,
{
    has_owner_reference_with(obj, owner, &())
}

/// [`has_owner_reference`] with the owner's `DynamicType`.
pub fn has_owner_reference_with<O, K>(obj: &K, owner: &O, dt: &O::DynamicType) -> bool
where
    O: Resource,
    K: Resource,
{
    let probe = probe_ref(owner, dt);
    owner_refs(obj).iter().any(|r| refer_same_object(r, &probe))
}

/// Whether `obj` has any controller owner reference.
pub fn has_controller_reference<K: Resource>(obj: &K) -> bool {
    get_controller_of(obj).is_some()
}

/// The controller owner reference of `obj`, if any (apimachinery's
/// `GetControllerOf`: the first reference with `controller: true`).
pub fn get_controller_of<K: Resource>(obj: &K) -> Option<&OwnerReference> {
    owner_refs(obj).iter().find(|r| r.controller == Some(true))
}

/// Whether `owner` is the controller of `obj`.
pub fn is_controlled_by<O, K>(obj: &K, owner: &O) -> bool
where
    O: Resource<DynamicType = ()>,
    K: Resource,
{
    let probe = probe_ref(owner, &());
    get_controller_of(obj).is_some_and(|r| refer_same_object(r, &probe))
}

/// Removes every owner reference to `owner` from `obj`; returns whether one
/// was there.
pub fn remove_owner_reference<O, K>(owner: &O, obj: &mut K) -> bool
where
    O: Resource<DynamicType = ()>,
    K: Resource,
{
    let probe = probe_ref(owner, &());
    let Some(refs) = obj.meta_mut().owner_references.as_mut() else {
        return false;
    };
    let before = refs.len();
    refs.retain(|r| !refer_same_object(r, &probe));
    let removed = refs.len() != before;
    if refs.is_empty() {
        obj.meta_mut().owner_references = None;
    }
    removed
}

impl OwnerRefOptions {
    /// The defaults of a controller reference: `blockOwnerDeletion: true`.
    pub fn controller() -> Self {
        Self {
            block_owner_deletion: Some(true),
        }
    }
}

impl Default for OwnerRefOptions {
    /// The defaults of a plain owner reference: `blockOwnerDeletion` unset.
    fn default() -> Self {
        Self {
            block_owner_deletion: None,
        }
    }
}

fn owner_refs<K: Resource>(obj: &K) -> &[OwnerReference] {
    obj.meta().owner_references.as_deref().unwrap_or(&[])
}

/// A reference carrying only what matching looks at (no UID needed).
fn probe_ref<O: Resource>(owner: &O, dt: &O::DynamicType) -> OwnerReference {
    OwnerReference {
        api_version: O::api_version(dt).into_owned(),
        kind: O::kind(dt).into_owned(),
        name: owner.meta().name.clone().unwrap_or_default(),
        ..Default::default()
    }
}

fn upsert<K: Resource>(obj: &mut K, reference: OwnerReference) {
    let refs = obj.meta_mut().owner_references.get_or_insert_with(Vec::new);
    match refs.iter_mut().find(|r| refer_same_object(r, &reference)) {
        Some(existing) => *existing = reference,
        None => refs.push(reference),
    }
}

/// controller-runtime's `validateOwner`.
fn validate_owner<K: Resource>(owner_namespace: Option<&str>, obj: &K) -> Result<(), Error> {
    let owner_ns = owner_namespace.unwrap_or("");
    if owner_ns.is_empty() {
        return Ok(());
    }
    let obj_ns = obj.meta().namespace.as_deref().unwrap_or("");
    if obj_ns.is_empty() {
        return Err(Error::ClusterScopedDependent {
            owner_namespace: owner_ns.to_owned(),
        });
    }
    if obj_ns != owner_ns {
        return Err(Error::CrossNamespaceOwner {
            owner_namespace: owner_ns.to_owned(),
            object_namespace: obj_ns.to_owned(),
        });
    }
    Ok(())
}

/// The group of an `apiVersion` (`apps/v1` -> `apps`, `v1` -> ``), `None`
/// when it is not a valid group/version (apimachinery's
/// `ParseGroupVersion`).
pub(crate) fn group_of(api_version: &str) -> Option<&str> {
    match api_version.split_once('/') {
        None => Some(""),
        Some((_, version)) if version.contains('/') => None,
        Some((group, _)) => Some(group),
    }
}

/// controller-runtime's `referSameObject`: same group, kind and name.
fn refer_same_object(a: &OwnerReference, b: &OwnerReference) -> bool {
    match (group_of(&a.api_version), group_of(&b.api_version)) {
        (Some(ga), Some(gb)) => ga == gb && a.kind == b.kind && a.name == b.name,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube_core::discovery::ApiResource;
    use kube_core::{DynamicObject, GroupVersionKind};

    fn meta(ns: Option<&str>, name: &str, uid: &str) -> ObjectMeta {
        ObjectMeta {
            namespace: ns.map(Into::into),
            name: Some(name.into()),
            uid: (!uid.is_empty()).then(|| uid.into()),
            ..Default::default()
        }
    }

    fn deploy(ns: &str, name: &str, uid: &str) -> Deployment {
        Deployment {
            metadata: meta(Some(ns), name, uid),
            ..Default::default()
        }
    }

    fn cm(ns: Option<&str>, name: &str) -> ConfigMap {
        ConfigMap {
            metadata: meta(ns, name, ""),
            ..Default::default()
        }
    }

    #[test]
    fn controller_reference_is_added_with_controller_and_block_owner_deletion() {
        let owner = deploy("ns", "web", "uid-1");
        let mut child = cm(Some("ns"), "child");
        set_controller_reference(&owner, &mut child).unwrap();
        let refs = child.metadata.owner_references.as_ref().unwrap();
        assert_eq!(
            refs,
            &[OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "web".into(),
                uid: "uid-1".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]
        );
        assert!(has_controller_reference(&child));
        assert!(is_controlled_by(&child, &owner));
        assert_eq!(get_controller_of(&child).unwrap().name, "web");
    }

    #[test]
    fn setting_the_same_controller_twice_updates_in_place() {
        let owner = deploy("ns", "web", "uid-1");
        let mut child = cm(Some("ns"), "child");
        set_controller_reference(&owner, &mut child).unwrap();
        // Recreated owner: same group/kind/name, new UID -> replaced.
        let recreated = deploy("ns", "web", "uid-2");
        set_controller_reference(&recreated, &mut child).unwrap();
        let refs = child.metadata.owner_references.as_ref().unwrap();
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].uid, "uid-2");
    }

    #[test]
    fn another_controller_is_an_already_owned_error() {
        // controllerutil_test.go: "should return an error if object is
        // already owned by another controller".
        let mut child = cm(Some("ns"), "child");
        set_controller_reference(&deploy("ns", "web", "u1"), &mut child).unwrap();
        let err = set_controller_reference(&deploy("ns", "other", "u2"), &mut child).unwrap_err();
        match &err {
            Error::AlreadyOwned { object, owner } => {
                assert_eq!(object, "ns/child");
                assert_eq!(owner.name, "web");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            err.to_string(),
            "object ns/child is already owned by another Deployment controller web"
        );
        // The failed call left the references alone.
        assert_eq!(child.metadata.owner_references.as_ref().unwrap().len(), 1);
    }

    #[test]
    fn a_controller_of_another_kind_with_the_same_name_is_another_owner() {
        let mut child = cm(Some("ns"), "child");
        set_controller_reference(&deploy("ns", "web", "u1"), &mut child).unwrap();
        let rs = ReplicaSet {
            metadata: meta(Some("ns"), "web", "u3"),
            ..Default::default()
        };
        assert!(matches!(
            set_controller_reference(&rs, &mut child),
            Err(Error::AlreadyOwned { .. })
        ));
        // But a plain owner reference is fine alongside it.
        set_owner_reference(&rs, &mut child).unwrap();
        assert_eq!(child.metadata.owner_references.as_ref().unwrap().len(), 2);
        assert!(has_owner_reference(&child, &rs));
    }

    #[test]
    fn matching_ignores_the_version_but_not_the_group() {
        let mut child = cm(Some("ns"), "child");
        child.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "apps/v1beta2".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            uid: "old".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        let owner = deploy("ns", "web", "new");
        assert!(has_owner_reference(&child, &owner));
        set_controller_reference(&owner, &mut child).unwrap();
        let refs = child.metadata.owner_references.as_ref().unwrap();
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].api_version, "apps/v1");

        // A Deployment from another group is a different owner.
        let mut other = cm(Some("ns"), "child");
        other.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "example.com/v1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            uid: "x".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        assert!(!has_owner_reference(&other, &owner));
        assert!(set_controller_reference(&owner, &mut other).is_err());
    }

    #[test]
    fn malformed_api_versions_never_match() {
        let a = OwnerReference {
            api_version: "a/b/c".into(),
            kind: "K".into(),
            name: "n".into(),
            ..Default::default()
        };
        assert!(!refer_same_object(&a, &a.clone()));
        assert_eq!(group_of("v1"), Some(""));
        assert_eq!(group_of("apps/v1"), Some("apps"));
        assert_eq!(group_of(""), Some(""));
    }

    #[test]
    fn cross_namespace_owner_is_refused() {
        let owner = deploy("a", "web", "u1");
        let mut child = cm(Some("b"), "child");
        let err = set_controller_reference(&owner, &mut child).unwrap_err();
        assert!(matches!(err, Error::CrossNamespaceOwner { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            "cross-namespace owner references are disallowed, owner's namespace a, obj's namespace b"
        );
        assert!(set_owner_reference(&owner, &mut child).is_err());
        assert!(child.metadata.owner_references.is_none());
    }

    #[test]
    fn namespaced_owner_of_a_cluster_scoped_object_is_refused() {
        let owner = deploy("a", "web", "u1");
        let mut role = ClusterRole {
            metadata: meta(None, "role", ""),
            ..Default::default()
        };
        let err = set_controller_reference(&owner, &mut role).unwrap_err();
        assert!(matches!(err, Error::ClusterScopedDependent { .. }), "{err}");
        // A namespaced dependent whose namespace is not set yet looks
        // cluster-scoped too, as in controller-runtime.
        let mut unset = cm(None, "child");
        assert!(set_controller_reference(&owner, &mut unset).is_err());
    }

    #[test]
    fn cluster_scoped_owner_may_own_namespaced_and_cluster_objects() {
        let ns = Namespace {
            metadata: meta(None, "team", "u-ns"),
            ..Default::default()
        };
        let mut child = cm(Some("team"), "child");
        set_controller_reference(&ns, &mut child).unwrap();
        let mut role = ClusterRole {
            metadata: meta(None, "role", ""),
            ..Default::default()
        };
        set_owner_reference(&ns, &mut role).unwrap();
        let r = &role.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (r.api_version.as_str(), r.kind.as_str()),
            ("v1", "Namespace")
        );
        assert_eq!(r.controller, None);
        assert_eq!(r.block_owner_deletion, None);
    }

    #[test]
    fn owner_without_uid_or_name_is_an_error() {
        let mut child = cm(Some("ns"), "child");
        let err = set_controller_reference(&deploy("ns", "web", ""), &mut child).unwrap_err();
        assert!(err.to_string().contains("metadata.uid"), "{err}");
        let nameless = Deployment {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                uid: Some("u".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(controller_owner_ref(&nameless).is_err());
        assert!(owner_ref(&nameless).is_err());
    }

    #[test]
    fn plain_owner_reference_over_a_controller_reference_drops_the_flag() {
        let owner = deploy("ns", "web", "u1");
        let mut child = cm(Some("ns"), "child");
        set_controller_reference(&owner, &mut child).unwrap();
        set_owner_reference(&owner, &mut child).unwrap();
        assert!(!has_controller_reference(&child));
        assert!(has_owner_reference(&child, &owner));
    }

    #[test]
    fn options_override_block_owner_deletion() {
        let owner = deploy("ns", "web", "u1");
        let mut child = cm(Some("ns"), "child");
        set_controller_reference_with(
            &owner,
            &(),
            &mut child,
            OwnerRefOptions {
                block_owner_deletion: Some(false),
            },
        )
        .unwrap();
        let r = &child.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(r.block_owner_deletion, Some(false));
        assert_eq!(r.controller, Some(true));
    }

    #[test]
    fn remove_owner_reference_removes_only_that_owner() {
        let (a, b) = (deploy("ns", "a", "u1"), deploy("ns", "b", "u2"));
        let mut child = cm(Some("ns"), "child");
        set_owner_reference(&a, &mut child).unwrap();
        set_owner_reference(&b, &mut child).unwrap();
        assert!(remove_owner_reference(&a, &mut child));
        assert!(!remove_owner_reference(&a, &mut child));
        assert!(!has_owner_reference(&child, &a));
        assert!(has_owner_reference(&child, &b));
        assert!(remove_owner_reference(&b, &mut child));
        assert!(child.metadata.owner_references.is_none());
    }

    #[test]
    fn dynamic_owners_use_their_api_resource() {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("cache.example.com", "v1alpha1", "Memcached"),
            "memcacheds",
        );
        let mut owner = DynamicObject::new("mc", &ar).within("ns");
        owner.metadata.uid = Some("u-mc".into());
        let mut child = deploy("ns", "mc", "");
        set_controller_reference_with(&owner, &ar, &mut child, OwnerRefOptions::controller())
            .unwrap();
        let r = controller_owner_ref_with(&owner, &ar).unwrap();
        assert_eq!(r.api_version, "cache.example.com/v1alpha1");
        assert_eq!(r.kind, "Memcached");
        assert_eq!(get_controller_of(&child), Some(&r));
        assert!(has_owner_reference_with(&child, &owner, &ar));
        assert!(owner_ref_with(&owner, &ar).unwrap().controller.is_none());
    }
}
