//! What a served resource is: [`ResourceDef`] with its discovery
//! attributes, and the behaviour that differs per kind, [`Builtin`] for the
//! built-in kinds and [`CustomInfo`] for those a CRD defines. The lists of
//! them live in `builtins` and `crd`; the map of what is served in
//! [`Registry`](super::Registry).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::schemars::generate::SchemaGenerator;
use serde_json::Value;

use super::convert::Conversion;
use crate::apiextensions::StructuralSchema;
use crate::machinery::patch::OpenApiMergeSchema;
use crate::storage::ResKey;

/// Which of the Table printers (in `table`) a built-in kind uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Printer {
    Default,
    Namespace,
    ConfigMap,
    Secret,
    Service,
    ServiceAccount,
    Pod,
    Node,
    PodDisruptionBudget,
    ControllerRevision,
    Event,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    Job,
    CronJob,
    Lease,
    RoleBinding,
    Webhook,
    AdmissionPolicy,
    AdmissionPolicyBinding,
}

/// A subresource beyond status and scale, as discovery lists it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ExtraSubresource {
    pub name: &'static str,
    pub verbs: &'static [&'static str],
    /// `(group, version, kind)` when it takes another kind than its
    /// resource's (`pods/eviction`: `policy/v1` `Eviction`).
    pub kind: Option<(&'static str, &'static str, &'static str)>,
}

/// JSON paths of a scale subresource (CRD `subresources.scale`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// Everything the server knows about one resource.
#[derive(Debug)]
pub(crate) struct ResourceDef {
    pub group: String,
    /// Served versions, preferred first.
    pub versions: Vec<String>,
    /// The version objects are stored at.
    pub storage_version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub namespaced: bool,
    pub verbs: Vec<&'static str>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub status: bool,
    pub scale: Option<ScalePaths>,
    /// Extra subresources listed in discovery (e.g. `namespaces/finalize`,
    /// `pods/eviction`).
    pub extra_subresources: Vec<ExtraSubresource>,
    pub behavior: Behavior,
}

/// Per-kind behaviour.
#[derive(Debug)]
pub(crate) enum Behavior {
    Builtin(&'static Builtin),
    Custom(Arc<CustomInfo>),
}

impl ResourceDef {
    pub fn key(&self) -> ResKey {
        match self.conversion() {
            Some(c) => ResKey::new(c.storage_group, c.storage_plural),
            None => ResKey::new(&self.group, &self.plural),
        }
    }

    /// The etcd key kube-apiserver stores an object of this kind under,
    /// which some of its errors quote (a failed update precondition's
    /// `StorageError`): `/registry/` and the resource's storage prefix, the
    /// plural for built-ins but `services/specs` and `minions` for Services
    /// and Nodes (`pkg/registry/core/{service,node}/storage`), the group
    /// too for CRDs and custom resources (apiextensions-apiserver's
    /// registries), then the namespace and name. events.k8s.io Events are
    /// core Events in storage.
    pub fn etcd_key(&self, namespace: &str, name: &str) -> String {
        let prefix = match (self.group.as_str(), self.plural.as_str()) {
            ("", "services") => "services/specs".to_owned(),
            ("", "nodes") => "minions".to_owned(),
            ("events.k8s.io", "events") => "events".to_owned(),
            ("apiextensions.k8s.io", plural) => format!("apiextensions.k8s.io/{plural}"),
            (group, plural) if self.is_custom() => format!("{group}/{plural}"),
            (_, plural) => plural.to_owned(),
        };
        if self.namespaced {
            format!("/registry/{prefix}/{namespace}/{name}")
        } else {
            format!("/registry/{prefix}/{name}")
        }
    }

    /// Set when this kind is stored as another resource.
    pub fn conversion(&self) -> Option<&'static Conversion> {
        self.builtin().and_then(|b| b.conversion)
    }

    /// A stored object as this resource serves it.
    pub fn view(&self, stored: &Value) -> Option<Value> {
        self.conversion().map(|c| (c.from_storage)(stored))
    }

    /// A served object as it is stored.
    pub fn to_storage(&self, obj: Value) -> Value {
        match self.conversion() {
            Some(c) => (c.to_storage)(obj),
            None => obj,
        }
    }

    /// `apps/v1`, or `v1` for the core group.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_owned()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    /// Which built-in kind with behaviour of its own this is, if any.
    pub fn builtin_kind(&self) -> Option<super::kind::BuiltinKind> {
        self.builtin()?;
        super::kind::BuiltinKind::of(&self.group, &self.plural)
    }

    /// Whether webhooks never see requests on this resource (the
    /// admission configuration kinds).
    pub fn is_admission_configuration(&self) -> bool {
        super::kind::is_admission_configuration(&self.group, &self.plural)
    }

    /// Whether this is the built-in `kind`.
    pub fn is(&self, kind: super::kind::BuiltinKind) -> bool {
        self.builtin_kind() == Some(kind)
    }

    pub fn builtin(&self) -> Option<&'static Builtin> {
        match &self.behavior {
            Behavior::Builtin(b) => Some(b),
            Behavior::Custom(_) => None,
        }
    }

    pub fn custom(&self) -> Option<&Arc<CustomInfo>> {
        match &self.behavior {
            Behavior::Custom(c) => Some(c),
            Behavior::Builtin(_) => None,
        }
    }

    pub fn is_custom(&self) -> bool {
        matches!(self.behavior, Behavior::Custom(_))
    }

    /// Whether a PUT to a missing object of this kind creates it (only a
    /// built-in kind's strategy allows it; custom resources' strategy,
    /// apiextensions-apiserver's `customResourceStrategy`, does not).
    pub fn creates_on_update(&self) -> bool {
        self.builtin().is_some_and(|b| b.create_on_update)
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    /// The JSON path a field-selector label reads on this resource, or
    /// `None` when kube-apiserver would answer `field label not supported`.
    pub fn field_label(&self, label: &str) -> Option<Vec<String>> {
        let split = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
        if label == "metadata.name" || (label == "metadata.namespace" && self.namespaced) {
            return Some(split(label));
        }
        match &self.behavior {
            Behavior::Builtin(b) => b
                .field_labels
                .iter()
                .find(|(l, _)| *l == label)
                .map(|(_, path)| split(path)),
            Behavior::Custom(c) => c
                .selectable_fields
                .iter()
                .find(|f| f.as_str() == label)
                .map(|f| split(f)),
        }
    }

    /// Top-level fields whose change bumps `metadata.generation`; `None`
    /// when this kind has no generation. Custom resources: everything but
    /// `metadata` (and `status` when it is a subresource).
    pub fn generation_fields(&self) -> Option<GenerationPolicy> {
        match &self.behavior {
            Behavior::Builtin(b) => b.generation.map(GenerationPolicy::Fields),
            Behavior::Custom(_) => Some(GenerationPolicy::AllButMetadata),
        }
    }
}

/// What bumps generation.
#[derive(Clone, Copy, Debug)]
pub(crate) enum GenerationPolicy {
    Fields(&'static [&'static str]),
    AllButMetadata,
}

/// Behaviour of one built-in kind.
#[derive(Debug)]
pub(crate) struct Builtin {
    /// Decodes a body into the k8s-openapi type and encodes it back (what
    /// the server would have understood): `Err((field path, message))`.
    pub validate: fn(&Value) -> Result<Value, (String, String)>,
    /// Registers the k8s-openapi type's schema (and the definitions it
    /// references) with an OpenAPI generator, returning its definition name.
    pub openapi_schema: fn(&mut SchemaGenerator) -> String,
    /// Top-level fields whose change bumps generation; `None`: no generation.
    pub generation: Option<&'static [&'static str]>,
    /// Field-selector labels beyond `metadata.name`/`metadata.namespace`,
    /// with the path each reads.
    pub field_labels: &'static [(&'static str, &'static str)],
    /// The Table columns.
    pub printer: Printer,
    /// DELETE answers with the object rather than a `Status` (pods).
    pub delete_returns_object: bool,
    /// Stored as another resource (events.k8s.io Events).
    pub conversion: Option<&'static Conversion>,
    /// A PUT to a missing object creates it: the registry strategy's
    /// `AllowCreateOnUpdate()` in kube-apiserver's `pkg/registry`.
    pub create_on_update: bool,
}

/// One additional printer column.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

/// What a custom resource needs beyond discovery attributes.
#[derive(Debug)]
pub(crate) struct CustomInfo {
    pub crd_name: String,
    /// Field-selector labels (`spec.color`, from `.spec.color`).
    pub selectable_fields: Vec<String>,
    /// Printer columns per version.
    pub columns: BTreeMap<String, Vec<PrinterColumn>>,
    /// `openAPIV3Schema` per version, as written (OpenAPI documents).
    pub schemas: BTreeMap<String, Value>,
    /// The structural schema per version, parsed once when the CRD is
    /// written (pruning, defaulting, validation).
    pub structural: BTreeMap<String, StructuralSchema>,
    /// How lists and maps merge per version (server-side apply, managed
    /// fields).
    pub merge: BTreeMap<String, Arc<OpenApiMergeSchema>>,
    /// The CRD `spec` this was built from: a CRD write that leaves it
    /// unchanged keeps serving the same definition.
    pub spec: Value,
    /// Unique per built definition (OpenAPI document cache keys).
    pub serial: u64,
}
