//! Custom resource definitions: what `#[derive(CustomResource)]` describes and
//! how that description becomes an `apiextensions.k8s.io/v1`
//! `CustomResourceDefinition`.
//!
//! The derive emits a static [`CrdDescriptor`] (names, scope, printer columns,
//! subresources, ...) and a schema source; [`CustomResource::try_crd`] turns
//! them into a CRD whose schema has been made structural (see [`schema`]) and
//! checked against the apiserver's structural rules (see [`structural`]).
//! Several versions of one kind combine into one CRD with [`combine`];
//! [`yaml`] writes manifests and [`conversion`] holds the hub-and-spoke
//! conversion traits a conversion webhook uses.

mod build;
pub mod conversion;
pub mod markers;
mod merge;
pub mod schema;
pub mod structural;
pub mod yaml;

pub use build::build_crd;
pub use merge::combine;
pub use structural::{check_crd, check_schema, StructuralError};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};

/// Whether objects of a kind live in a namespace or at cluster level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Objects live in a namespace (the default, as in kubebuilder).
    Namespaced,
    /// Objects live at cluster level.
    Cluster,
}

impl Scope {
    /// The value of a CRD's `spec.scope`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Namespaced => "Namespaced",
            Scope::Cluster => "Cluster",
        }
    }
}

/// A column `kubectl get` shows (`additionalPrinterColumns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: &'static str,
    /// OpenAPI type: `integer`, `number`, `string`, `boolean` or `date`.
    pub type_: &'static str,
    /// JSON path into the object, e.g. `.spec.replicas`.
    pub json_path: &'static str,
    /// Human-readable description.
    pub description: Option<&'static str>,
    /// OpenAPI format, e.g. `int32` or `date-time`.
    pub format: Option<&'static str>,
    /// 0 shows the column in the standard view; higher only with `-o wide`.
    pub priority: Option<i32>,
}

/// The scale subresource's paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleSubresource {
    /// JSON path of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas_path: &'static str,
    /// JSON path of the observed replicas, e.g. `.status.replicas`.
    pub status_replicas_path: &'static str,
    /// JSON path of the label selector (a string) in the status.
    pub label_selector_path: Option<&'static str>,
}

/// A CEL validation rule (`x-kubernetes-validations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidationRule {
    /// The CEL expression; `self` is the value the rule sits on.
    pub rule: &'static str,
    /// Message returned when the rule fails.
    pub message: Option<&'static str>,
    /// CEL expression producing the message.
    pub message_expression: Option<&'static str>,
    /// Machine-readable reason: `FieldValueInvalid`, `FieldValueForbidden`,
    /// `FieldValueRequired` or `FieldValueDuplicate`.
    pub reason: Option<&'static str>,
    /// Path (relative to the rule's node) the apiserver reports.
    pub field_path: Option<&'static str>,
    /// Evaluate transition rules even when the old value is absent.
    pub optional_old_self: Option<bool>,
}

impl ValidationRule {
    /// A rule with no message or options.
    pub const fn new(rule: &'static str) -> Self {
        ValidationRule {
            rule,
            message: None,
            message_expression: None,
            reason: None,
            field_path: None,
            optional_old_self: None,
        }
    }

    /// This rule as JSON (the shape of `x-kubernetes-validations` items).
    pub fn to_json(&self) -> serde_json::Value {
        let mut obj = serde_json::Map::new();
        obj.insert("rule".into(), self.rule.into());
        let optional = [
            ("message", self.message),
            ("messageExpression", self.message_expression),
            ("reason", self.reason),
            ("fieldPath", self.field_path),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                obj.insert(key.into(), value.into());
            }
        }
        if let Some(old) = self.optional_old_self {
            obj.insert("optionalOldSelf".into(), old.into());
        }
        serde_json::Value::Object(obj)
    }
}

/// Where a version's schema comes from.
#[derive(Debug, Clone, Copy)]
pub enum SchemaSource {
    /// Generated from the spec and status types' `JsonSchema` impls.
    Derived(fn() -> schemars::Schema),
    /// Written by hand: a function returning the whole object's schema.
    Manual(fn() -> JSONSchemaProps),
    /// No validation: the object schema preserves unknown fields.
    Disabled,
}

/// Everything `#[derive(CustomResource)]` knows about one version of a kind.
#[derive(Debug, Clone, Copy)]
pub struct CrdDescriptor {
    /// API group, e.g. `cache.example.com`.
    pub group: &'static str,
    /// Version, e.g. `v1alpha1`.
    pub version: &'static str,
    /// Kind, e.g. `Memcached`.
    pub kind: &'static str,
    /// Plural resource name, e.g. `memcacheds`.
    pub plural: &'static str,
    /// Singular resource name, e.g. `memcached`.
    pub singular: &'static str,
    /// Short names for kubectl, e.g. `mc`.
    pub short_names: &'static [&'static str],
    /// Categories, e.g. `all`.
    pub categories: &'static [&'static str],
    /// Namespaced or cluster scoped.
    pub scope: Scope,
    /// The Rust path of the spec type (for error messages).
    pub spec_type: &'static str,
    /// Whether the kind has a status (and so the status subresource).
    pub has_status: bool,
    /// The scale subresource, if any.
    pub scale: Option<ScaleSubresource>,
    /// `kubectl get` columns.
    pub printer_columns: &'static [PrinterColumn],
    /// Field selectors the apiserver accepts for this kind.
    pub selectable_fields: &'static [&'static str],
    /// CEL rules on the object root (`self` is the whole object).
    pub root_validations: &'static [ValidationRule],
    /// Whether this version is served.
    pub served: bool,
    /// `Some(true)` when marked as the storage version, `Some(false)` when
    /// marked as not, `None` when unmarked (storage when alone).
    pub storage: Option<bool>,
    /// Whether this version is deprecated.
    pub deprecated: bool,
    /// The warning returned to clients using a deprecated version.
    pub deprecation_warning: Option<&'static str>,
    /// Labels on the CRD object.
    pub labels: &'static [(&'static str, &'static str)],
    /// Annotations on the CRD object.
    pub annotations: &'static [(&'static str, &'static str)],
    /// Where the schema comes from.
    pub schema: SchemaSource,
}

impl CrdDescriptor {
    /// The CRD's `metadata.name`: `<plural>.<group>`.
    pub fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }

    /// `group/version`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// A custom resource kind made by `#[derive(CustomResource)]`.
///
/// Extends kube-core's [`CustomResourceExt`](kube_core::CustomResourceExt)
/// (`crd()`, `crd_name()`, `api_resource()`, `shortnames()`) with a fallible
/// [`try_crd`](CustomResource::try_crd) and the static descriptor.
pub trait CustomResource:
    kube_core::Resource<DynamicType = ()>
    + kube_core::CustomResourceExt
    + kube_core::object::HasSpec
    + serde::Serialize
    + serde::de::DeserializeOwned
    + Clone
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// What the derive knows about this version of the kind.
    const DESCRIPTOR: CrdDescriptor;

    /// The CRD for this version alone, with a structural schema, or an error
    /// naming the type and the field that cannot be expressed.
    fn try_crd() -> Result<CustomResourceDefinition, CrdError> {
        build_crd(&Self::DESCRIPTOR)
    }
}

/// Why a CRD could not be built, combined or written.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// The schema breaks the apiserver's structural-schema rules.
    #[error("{kind} ({rust_type}) cannot become a structural schema: {}", join(.errors))]
    NotStructural {
        /// The kind.
        kind: String,
        /// The Rust spec type.
        rust_type: String,
        /// Every violation, each naming its field path.
        errors: Vec<StructuralError>,
    },
    /// The generated schema could not be read as `JSONSchemaProps`.
    #[error("{kind} ({rust_type}): the generated schema is not a valid JSONSchemaProps: {source}")]
    InvalidSchema {
        /// The kind.
        kind: String,
        /// The Rust spec type.
        rust_type: String,
        /// The decoding error.
        source: serde_json::Error,
    },
    /// Nothing to combine.
    #[error("no CRDs to combine")]
    Empty,
    /// Versions of one kind disagree on something that must be shared.
    #[error("CRD {name}: {detail}")]
    Mismatch {
        /// The CRD name.
        name: String,
        /// Which field differs, between which versions.
        detail: String,
    },
    /// The same version appears twice.
    #[error("CRD {name}: version {version} is declared more than once")]
    DuplicateVersion {
        /// The CRD name.
        name: String,
        /// The version.
        version: String,
    },
    /// A multi-version CRD needs exactly one storage version.
    #[error("CRD {name}: exactly one version must be the storage version (mark it with #[crd(storage)]), found {found:?}")]
    StorageVersion {
        /// The CRD name.
        name: String,
        /// The versions marked as storage.
        found: Vec<String>,
    },
    /// A CRD has no versions.
    #[error("CRD {name} has no versions")]
    NoVersions {
        /// The CRD name.
        name: String,
    },
    /// Writing YAML failed.
    #[error("cannot write CRD {name} as YAML: {message}")]
    Yaml {
        /// The CRD name.
        name: String,
        /// What went wrong.
        message: String,
    },
}

fn join(errors: &[StructuralError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Items generated code uses; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use super::build::{object_schema, root_schema_for};
    pub use super::markers::{
        apply_field_markers, apply_type_markers, assert_array, assert_numeric, assert_object,
        assert_string, finish_object, strip_option_null, ArrayMarker, KubeforgeSchema,
        NumericMarker, ObjectMarker, StringMarker,
    };
}
