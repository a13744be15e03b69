//! What a served resource is: [`ResourceDef`] with its discovery
//! attributes, and the behaviour that differs per kind, a [`Builtin`] for
//! the built-in kinds and [`CustomInfo`] for those a CRD defines. The
//! lists of them live in `builtins` and `crd`; the map of what is served
//! in [`Registry`](super::Registry).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use serde_json::Value;

use super::strategy::{Builtin, Conversion, ExtraSubresource, FieldLabelConversion};
use crate::apiextensions::StructuralSchema;
use crate::machinery::patch::OpenApiMergeSchema;
use crate::machinery::status::Cause;
use crate::machinery::util::{go_quote, NameRule};
use crate::storage::ResKey;

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
    /// Whether the kind serves the extra subresource `name` with `verb`
    /// (`pods/log` with `get`).
    pub fn serves_extra(&self, name: &str, verb: &str) -> bool {
        self.extra_subresources
            .iter()
            .any(|s| s.name == name && s.verbs.contains(&verb))
    }

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
        let prefix = match &self.behavior {
            Behavior::Builtin(b) => b.etcd_prefix.unwrap_or(b.plural).to_owned(),
            Behavior::Custom(_) => format!("{}/{}", self.group, self.plural),
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

    /// The JSON path a field-selector label reads on this resource, or the
    /// error kube-apiserver's `ConvertFieldLabel` answers: a kind with a
    /// field label conversion of its own (`pkg/apis/<group>/v1/conversion.go`;
    /// a CRD's selectable fields) says `field label not supported`, and
    /// knows `metadata.namespace` only when namespaced; the others get
    /// apimachinery's `DefaultMetaV1FieldSelectorConversion`, which knows
    /// the two metadata labels alone.
    pub fn field_label(&self, label: &str) -> Result<Vec<String>, String> {
        let split = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
        let conversion = match &self.behavior {
            Behavior::Builtin(b) => b.field_label_conversion,
            Behavior::Custom(_) => FieldLabelConversion::Own,
        };
        if conversion == FieldLabelConversion::Default {
            return match label {
                "metadata.name" | "metadata.namespace" => Ok(split(label)),
                _ => Err(format!(
                    "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                    go_quote(label)
                )),
            };
        }
        if label == "metadata.name" || (label == "metadata.namespace" && self.namespaced) {
            return Ok(split(label));
        }
        let own = match &self.behavior {
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
        };
        own.ok_or_else(|| match conversion {
            FieldLabelConversion::OwnFor(kind) => {
                format!("field label {} not supported for {kind}", go_quote(label))
            }
            _ => format!("field label not supported: {label}"),
        })
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

/// What the generic write paths ask of a kind's strategy.
impl ResourceDef {
    /// The scheme's field defaults, which kube-apiserver applies whenever it
    /// decodes a body (create, update, every patch's result) and again after
    /// each mutating webhook's patch (`webhook/mutating/dispatcher.go`): so
    /// mutating admission sees a defaulted object.
    pub fn default_fields(&self, obj: &mut Value) {
        if let Some(b) = self.builtin() {
            (b.defaults.fields)(obj);
        }
    }

    /// The registry's create-time work, after mutating admission: the
    /// strategy's `PrepareForCreate` and the allocations.
    pub fn prepare_for_create(&self, obj: &mut Value, next_ip: &AtomicU32) {
        if let Some(create) = self.builtin().and_then(|b| b.defaults.create) {
            create(obj, next_ip);
        }
    }

    /// What an update keeps or recomputes, after mutating admission (the
    /// strategy's `PrepareForUpdate`).
    pub fn prepare_for_update(&self, obj: &mut Value, old: &Value) {
        if let Some(update) = self.builtin().and_then(|b| b.defaults.update) {
            update(obj, old);
        }
    }

    /// The field errors kube-apiserver's strategy for this kind would report;
    /// `old` is the stored object on an update.
    pub fn validate_kind(&self, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        self.builtin()
            .map(|b| (b.validate)(obj, old))
            .unwrap_or_default()
    }

    /// How this kind's names are validated: its own rule for a built-in
    /// kind, DNS subdomains for custom resources
    /// (apiextensions-apiserver's `customResourceStrategy.Validate`).
    pub fn name_rule(&self) -> NameRule {
        self.builtin().map_or(NameRule::Subdomain, |b| b.name_rule)
    }
}

/// What bumps generation.
#[derive(Clone, Copy, Debug)]
pub(crate) enum GenerationPolicy {
    Fields(&'static [&'static str]),
    AllButMetadata,
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
