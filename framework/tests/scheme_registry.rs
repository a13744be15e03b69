//! `Scheme`: built-in kinds, registration of derived kinds, look-ups by
//! GVK, kind, plural, short name and Rust type, and CRD collection with the
//! versions of a kind combined.

use kubeforge::crd::{CrdError, Scope};
use kubeforge::k8s_openapi::api::apps::v1::Deployment;
use kubeforge::k8s_openapi::api::core::v1::{Namespace, Pod};
use kubeforge::kube_core::GroupVersionKind;
use kubeforge::prelude::*;
use kubeforge::scheme::SchemeError;

mod v1 {
    use kubeforge::prelude::*;

    /// Version 1 (storage).
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(
        group = "zoo.example.com",
        version = "v1",
        kind = "Animal",
        storage,
        shortname = "an"
    )]
    pub struct AnimalSpec {
        pub name: String,
    }
}

mod v2 {
    use kubeforge::prelude::*;

    /// Version 2.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(
        group = "zoo.example.com",
        version = "v2",
        kind = "Animal",
        shortname = "an"
    )]
    pub struct AnimalSpec {
        pub name: String,
        pub legs: u8,
    }
}

mod impostor {
    use kubeforge::prelude::*;

    /// Claims the same GVK as `v1::Animal`.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "zoo.example.com", version = "v1", kind = "Animal")]
    pub struct AnimalSpec {
        pub other: i32,
    }
}

mod unmarked {
    use kubeforge::prelude::*;

    /// A second version with no storage marker on either.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "zoo.example.com", version = "v3", kind = "Keeper")]
    pub struct KeeperSpec {
        pub name: String,
    }

    /// Another version of Keeper, also unmarked.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(
        group = "zoo.example.com",
        version = "v4",
        kind = "Keeper",
        root = "KeeperV4"
    )]
    pub struct KeeperV4Spec {
        pub name: String,
    }
}

/// A cluster-scoped kind.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(group = "zoo.example.com", version = "v1", kind = "Park", cluster)]
pub struct ParkSpec {
    /// Square metres.
    pub area: u32,
}

#[test]
fn builtins_are_known_by_gvk_type_and_plural() {
    let scheme = Scheme::with_builtins();
    let pod = scheme
        .by_gvk(&GroupVersionKind::gvk("", "v1", "Pod"))
        .expect("Pod");
    assert_eq!(pod.api_resource.plural, "pods");
    assert_eq!(pod.api_resource.api_version, "v1");
    assert_eq!(pod.scope, Scope::Namespaced);
    assert!(pod.crd.is_none());
    assert_eq!(scheme.by_type::<Pod>().map(|r| &r.gvk), Some(&pod.gvk));
    assert_eq!(
        scheme.by_type::<Namespace>().map(|r| r.scope),
        Some(Scope::Cluster)
    );
    let deploy = scheme
        .by_plural("apps", "deployments")
        .next()
        .expect("deployments");
    assert_eq!(deploy.type_id, std::any::TypeId::of::<Deployment>());
    assert_eq!(
        scheme.resolve("Deployment").map(|r| r.gvk.group.as_str()),
        Some("apps")
    );
    assert_eq!(
        scheme.resolve("deploy").map(|r| r.gvk.kind.as_str()),
        Some("Deployment")
    );
    assert_eq!(
        scheme.resolve("crd").map(|r| r.gvk.group.as_str()),
        Some("apiextensions.k8s.io")
    );
    // Event lives in core and in events.k8s.io.
    assert_eq!(scheme.by_kind("Event").count(), 2);
    assert!(scheme.crds().expect("no custom kinds").is_empty());
}

#[test]
fn derived_kinds_register_and_resolve() {
    let mut scheme = Scheme::new();
    scheme
        .register::<v1::Animal>()
        .unwrap()
        .register::<Park>()
        .unwrap();
    let gvk = GroupVersionKind::gvk("zoo.example.com", "v1", "Animal");
    let animal = scheme.by_gvk(&gvk).expect("registered");
    assert_eq!(animal.api_resource.plural, "animals");
    assert_eq!(animal.api_resource.api_version, "zoo.example.com/v1");
    assert_eq!(animal.short_names, &["an"]);
    assert!(
        animal.type_name.ends_with("v1::Animal"),
        "{}",
        animal.type_name
    );
    assert_eq!(scheme.gvk_of::<v1::Animal>(), Some(&gvk));
    assert_eq!(scheme.resolve("an").map(|r| &r.gvk), Some(&gvk));
    assert_eq!(scheme.resolve("animals").map(|r| &r.gvk), Some(&gvk));
    assert_eq!(
        scheme.by_type::<Park>().map(|r| r.scope),
        Some(Scope::Cluster)
    );
    assert_eq!(scheme.iter().count(), 2);
    // Registering the same type again changes nothing.
    scheme.register::<v1::Animal>().unwrap();
    assert_eq!(scheme.iter().count(), 2);
}

#[test]
fn a_second_type_for_a_taken_gvk_is_refused() {
    let mut scheme = Scheme::new();
    scheme.register::<v1::Animal>().unwrap();
    match scheme.register::<impostor::Animal>() {
        Err(SchemeError::Conflict {
            kind,
            existing,
            new,
            ..
        }) => {
            assert_eq!(kind, "Animal");
            assert!(existing.contains("v1::Animal") && new.contains("impostor::Animal"));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[test]
fn crds_combine_the_versions_of_a_kind() {
    let scheme = Scheme::with_builtins()
        .with::<v2::Animal>()
        .and_then(|s| s.with::<v1::Animal>())
        .and_then(|s| s.with::<Park>())
        .unwrap();
    let crds = scheme.crds().unwrap();
    let names: Vec<_> = crds
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["animals.zoo.example.com", "parks.zoo.example.com"]);
    let versions: Vec<(String, bool)> = crds[0]
        .spec
        .versions
        .iter()
        .map(|v| (v.name.clone(), v.storage))
        .collect();
    assert_eq!(
        versions,
        [("v2".to_string(), false), ("v1".to_string(), true)]
    );
    assert!(kubeforge::crd::check_crd(&crds[0]).is_empty());
}

#[test]
fn several_versions_without_a_storage_version_are_an_error() {
    let scheme = Scheme::new()
        .with::<unmarked::Keeper>()
        .and_then(|s| s.with::<unmarked::KeeperV4>())
        .unwrap();
    match scheme.crds() {
        Err(SchemeError::Crd(CrdError::StorageVersion { name, found })) => {
            assert_eq!(name, "keepers.zoo.example.com");
            assert!(found.is_empty());
        }
        other => panic!("expected a storage-version error, got {other:?}"),
    }
    // Alone, a version is the storage version.
    let alone = Scheme::new()
        .with::<unmarked::Keeper>()
        .unwrap()
        .crds()
        .unwrap();
    assert!(alone[0].spec.versions[0].storage);
}
