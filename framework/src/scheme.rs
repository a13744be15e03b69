//! The scheme: which Rust type stands for which group/version/kind.
//!
//! A [`Scheme`] maps GVKs to [`ApiResource`]s (plural, apiVersion), scope and
//! the Rust type that models them, both ways, and collects the CRDs of the
//! custom kinds registered in it, combining the versions of one kind into one
//! CRD. [`Scheme::with_builtins`] knows the common k8s-openapi types;
//! `#[derive(CustomResource)]` makes a type registrable with
//! [`Scheme::register`].

use std::any::TypeId;
use std::collections::HashMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::{ApiResource, GroupVersionKind};

use crate::crd::{self, CrdDescriptor, CrdError, CustomResource, Scope};

/// A type the scheme can register: every k8s-openapi resource, and every
/// type made by `#[derive(CustomResource)]`.
pub trait Registrable: 'static {
    /// What the scheme records about the type.
    fn registration() -> Registration;
}

/// Maps a resource's compile-time scope type to [`Scope`].
pub trait ScopeOf {
    /// The scope, or `None` for subresource types.
    const SCOPE: Option<Scope>;
}

impl ScopeOf for k8s_openapi::NamespaceResourceScope {
    const SCOPE: Option<Scope> = Some(Scope::Namespaced);
}
impl ScopeOf for k8s_openapi::ClusterResourceScope {
    const SCOPE: Option<Scope> = Some(Scope::Cluster);
}
impl ScopeOf for k8s_openapi::SubResourceScope {
    const SCOPE: Option<Scope> = None;
}

impl<K> Registrable for K
where
    K: k8s_openapi::Resource + 'static,
    K::Scope: ScopeOf,
{
    fn registration() -> Registration {
        let gvk = GroupVersionKind::gvk(K::GROUP, K::VERSION, K::KIND);
        Registration {
            api_resource: ApiResource::from_gvk_with_plural(&gvk, K::URL_PATH_SEGMENT),
            gvk,
            scope: <K::Scope as ScopeOf>::SCOPE.unwrap_or(Scope::Namespaced),
            type_id: TypeId::of::<K>(),
            type_name: std::any::type_name::<K>(),
            short_names: &[],
            crd: None,
        }
    }
}

/// What the scheme knows about one GVK.
#[derive(Debug, Clone)]
pub struct Registration {
    /// Group, version and kind.
    pub gvk: GroupVersionKind,
    /// Plural and apiVersion, for URLs and the dynamic API.
    pub api_resource: ApiResource,
    /// Namespaced or cluster scoped.
    pub scope: Scope,
    /// The Rust type.
    pub type_id: TypeId,
    /// The Rust type's name.
    pub type_name: &'static str,
    /// Declared short names.
    pub short_names: &'static [&'static str],
    /// For custom kinds, the descriptor the CRD is built from.
    pub crd: Option<CrdDescriptor>,
}

impl Registration {
    /// The registration of a derived custom resource type.
    pub fn for_custom_resource<K: CustomResource>() -> Self {
        let desc = K::DESCRIPTOR;
        let gvk = GroupVersionKind::gvk(desc.group, desc.version, desc.kind);
        Registration {
            api_resource: ApiResource::from_gvk_with_plural(&gvk, desc.plural),
            gvk,
            scope: desc.scope,
            type_id: TypeId::of::<K>(),
            type_name: std::any::type_name::<K>(),
            short_names: desc.short_names,
            crd: Some(desc),
        }
    }
}

/// Why a registration was refused.
#[derive(Debug, thiserror::Error)]
pub enum SchemeError {
    /// A different Rust type is already registered for the GVK.
    #[error("{group}/{version} {kind} is already registered as {existing}, cannot register {new}")]
    Conflict {
        /// Group.
        group: String,
        /// Version.
        version: String,
        /// Kind.
        kind: String,
        /// The type already registered.
        existing: &'static str,
        /// The type being registered.
        new: &'static str,
    },
    /// Building a CRD failed.
    #[error(transparent)]
    Crd(#[from] CrdError),
}

/// GVK <-> Rust type registry and CRD collection.
#[derive(Debug, Clone, Default)]
pub struct Scheme {
    entries: Vec<Registration>,
    by_gvk: HashMap<GroupVersionKind, usize>,
    by_type: HashMap<TypeId, usize>,
}

impl Scheme {
    /// An empty scheme.
    pub fn new() -> Self {
        Self::default()
    }

    /// A scheme that knows the common built-in kinds (core, apps, batch,
    /// networking, RBAC, coordination, policy, autoscaling, storage,
    /// admission registration, apiextensions, events).
    pub fn with_builtins() -> Self {
        use k8s_openapi::api::{
            admissionregistration::v1 as admission, apps::v1 as apps,
            autoscaling::v2 as autoscaling, batch::v1 as batch, coordination::v1 as coordination,
            core::v1 as core, discovery::v1 as discovery, events::v1 as events,
            networking::v1 as networking, policy::v1 as policy, rbac::v1 as rbac,
            scheduling::v1 as scheduling, storage::v1 as storage,
        };
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
        let mut scheme = Self::new();
        macro_rules! builtins {
            ($($ty:ty $(: $($short:literal),+)?;)*) => {$(
                let mut registration = <$ty as Registrable>::registration();
                registration.short_names = &[$($($short),+)?];
                scheme.insert(registration);
            )*};
        }
        // Short names as `kubectl api-resources` lists them.
        builtins! {
            core::Pod: "po"; core::Service: "svc"; core::ConfigMap: "cm"; core::Secret;
            core::Namespace: "ns"; core::Node: "no"; core::ServiceAccount: "sa";
            core::Endpoints: "ep"; core::Event: "ev"; core::PersistentVolume: "pv";
            core::PersistentVolumeClaim: "pvc"; core::ResourceQuota: "quota";
            core::LimitRange: "limits"; core::ReplicationController: "rc";
            apps::Deployment: "deploy"; apps::StatefulSet: "sts"; apps::DaemonSet: "ds";
            apps::ReplicaSet: "rs"; apps::ControllerRevision;
            batch::Job; batch::CronJob: "cj";
            networking::Ingress: "ing"; networking::IngressClass; networking::NetworkPolicy: "netpol";
            rbac::Role; rbac::RoleBinding; rbac::ClusterRole; rbac::ClusterRoleBinding;
            coordination::Lease;
            policy::PodDisruptionBudget: "pdb";
            autoscaling::HorizontalPodAutoscaler: "hpa";
            storage::StorageClass: "sc"; storage::CSIDriver; storage::VolumeAttachment;
            discovery::EndpointSlice;
            events::Event: "ev";
            scheduling::PriorityClass: "pc";
            admission::ValidatingWebhookConfiguration; admission::MutatingWebhookConfiguration;
            apiext::CustomResourceDefinition: "crd", "crds";
        }
        scheme
    }

    fn insert(&mut self, registration: Registration) {
        if self.by_gvk.contains_key(&registration.gvk) {
            return;
        }
        let index = self.entries.len();
        self.by_gvk.insert(registration.gvk.clone(), index);
        self.by_type.entry(registration.type_id).or_insert(index);
        self.entries.push(registration);
    }

    /// Register `K`. Registering the same type twice is a no-op; registering
    /// a different type for a GVK already taken is an error.
    pub fn register<K: Registrable>(&mut self) -> Result<&mut Self, SchemeError> {
        let registration = K::registration();
        if let Some(&index) = self.by_gvk.get(&registration.gvk) {
            let existing = &self.entries[index];
            if existing.type_id != registration.type_id {
                return Err(SchemeError::Conflict {
                    group: registration.gvk.group,
                    version: registration.gvk.version,
                    kind: registration.gvk.kind,
                    existing: existing.type_name,
                    new: registration.type_name,
                });
            }
            return Ok(self);
        }
        self.insert(registration);
        Ok(self)
    }

    /// Builder form of [`register`](Self::register).
    pub fn with<K: Registrable>(mut self) -> Result<Self, SchemeError> {
        self.register::<K>()?;
        Ok(self)
    }

    /// Every registration, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Registration> {
        self.entries.iter()
    }

    /// Look up by group/version/kind.
    pub fn by_gvk(&self, gvk: &GroupVersionKind) -> Option<&Registration> {
        self.by_gvk.get(gvk).map(|&i| &self.entries[i])
    }

    /// Every registration of a kind, across groups and versions.
    pub fn by_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Registration> + 'a {
        self.entries.iter().filter(move |r| r.gvk.kind == kind)
    }

    /// Every registration with this plural in this group (all versions).
    pub fn by_plural<'a>(
        &'a self,
        group: &'a str,
        plural: &'a str,
    ) -> impl Iterator<Item = &'a Registration> + 'a {
        self.entries
            .iter()
            .filter(move |r| r.gvk.group == group && r.api_resource.plural == plural)
    }

    /// The registration of a resource by plural, short name or kind
    /// (case-insensitive), as kubectl resolves a resource argument.
    pub fn resolve(&self, name: &str) -> Option<&Registration> {
        let name = name.to_ascii_lowercase();
        self.entries.iter().find(|r| {
            r.api_resource.plural == name
                || r.gvk.kind.to_ascii_lowercase() == name
                || r.short_names.iter().any(|s| *s == name)
        })
    }

    /// The registration of a Rust type.
    pub fn by_type<K: 'static>(&self) -> Option<&Registration> {
        self.by_type_id(TypeId::of::<K>())
    }

    /// The registration of a Rust type by its `TypeId`.
    pub fn by_type_id(&self, id: TypeId) -> Option<&Registration> {
        self.by_type.get(&id).map(|&i| &self.entries[i])
    }

    /// The GVK a Rust type is registered under.
    pub fn gvk_of<K: 'static>(&self) -> Option<&GroupVersionKind> {
        self.by_type::<K>().map(|r| &r.gvk)
    }

    /// The CRDs of every registered custom kind, one per group and kind,
    /// the versions of a kind combined (see [`crd::combine`]), ordered by
    /// CRD name.
    pub fn crds(&self) -> Result<Vec<CustomResourceDefinition>, SchemeError> {
        let mut groups: Vec<(String, Vec<CrdDescriptor>)> = Vec::new();
        for desc in self.entries.iter().filter_map(|r| r.crd) {
            let name = desc.crd_name();
            match groups.iter_mut().find(|(n, _)| *n == name) {
                Some((_, versions)) => versions.push(desc),
                None => groups.push((name, vec![desc])),
            }
        }
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        groups
            .iter()
            .map(|(_, versions)| crd::combine(versions).map_err(SchemeError::from))
            .collect()
    }
}
