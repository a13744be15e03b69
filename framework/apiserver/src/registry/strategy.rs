//! What a built-in kind is: [`Builtin`], the one struct each
//! `registry/<group>/<kind>.rs` fills in with everything the server does
//! particular to that kind, as kube-apiserver's `pkg/registry/<group>/<kind>`
//! holds it (how it is served, its strategy's defaults, validation, name
//! rule, generation and create-on-update, field selectors, printer
//! columns). The generic write paths reach it through
//! [`ResourceDef`](super::ResourceDef)'s methods, which read the kind's
//! entry rather than match on its group or plural.

use std::sync::atomic::AtomicU32;

use k8s_openapi::schemars::generate::SchemaGenerator;
use k8s_openapi::schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::printers::Printer;
use crate::machinery::status::Cause;
use crate::machinery::util::NameRule;

/// Everything particular to one built-in kind.
#[derive(Debug)]
pub(crate) struct Builtin {
    pub group: &'static str,
    pub plural: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub verbs: &'static [&'static str],
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// Serves a `status` subresource.
    pub status: bool,
    /// Serves a `scale` subresource over `.spec.replicas`/`.status.replicas`.
    pub scale: bool,
    pub extra_subresources: &'static [ExtraSubresource],
    /// The etcd key prefix kube-apiserver stores it under when that is not
    /// its plural (`pkg/registry/<group>/<kind>/storage`).
    pub etcd_prefix: Option<&'static str>,
    /// Decodes a body into the k8s-openapi type and encodes it back (what
    /// the server would have understood): `Err((field path, message))`.
    pub decode: fn(&Value) -> Result<Value, (String, String)>,
    /// Registers the k8s-openapi type's schema (and the definitions it
    /// references) with an OpenAPI generator, returning its definition name.
    pub openapi_schema: fn(&mut SchemaGenerator) -> String,
    /// Top-level fields whose change bumps generation; `None`: no generation.
    pub generation: Option<&'static [&'static str]>,
    /// Field-selector labels beyond `metadata.name`/`metadata.namespace`,
    /// with the path each reads.
    pub field_labels: &'static [(&'static str, &'static str)],
    /// Whose field label conversion answers for the kind, and so how an
    /// unknown label is refused.
    pub field_label_conversion: FieldLabelConversion,
    /// The Table columns.
    pub printer: Printer,
    /// DELETE answers with the object rather than a `Status` (pods).
    pub delete_returns_object: bool,
    /// Stored as another resource (events.k8s.io Events).
    pub conversion: Option<&'static Conversion>,
    /// A PUT to a missing object creates it: the registry strategy's
    /// `AllowCreateOnUpdate()` in kube-apiserver's `pkg/registry`.
    pub create_on_update: bool,
    /// The name function the kind's validation hands `ValidateObjectMeta`.
    pub name_rule: NameRule,
    pub defaults: Defaults,
    /// The kind's own field errors (`old` is the stored object on update),
    /// beyond what decoding into its type reports.
    pub validate: fn(&Value, Option<&Value>) -> Vec<Cause>,
}

/// A kind's defaulting: the scheme's field defaults on every decoded body,
/// and the registry's own work on create and on update.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Defaults {
    /// The scheme defaulters (`SetDefaults_*` and the generated walk into
    /// nested structs), on every decoded body.
    pub fields: fn(&mut Value),
    /// Allocation and admission-plugin defaults on create, after `fields`.
    pub create: Option<fn(&mut Value, &AtomicU32)>,
    /// What an update keeps or recomputes, after `fields`.
    pub update: Option<fn(&mut Value, &Value)>,
}

impl Defaults {
    /// No defaulter: the kinds whose group's `defaults.go` has none for
    /// them.
    pub const NONE: Self = Self::fields(|_| {});

    /// Field defaults only.
    pub const fn fields(fields: fn(&mut Value)) -> Self {
        Self {
            fields,
            create: None,
            update: None,
        }
    }
}

/// Whose field label conversion a kind has (`scheme.ConvertFieldLabel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldLabelConversion {
    /// apimachinery's `DefaultMetaV1FieldSelectorConversion`: the two
    /// metadata labels, whatever the scope, and `"x" is not a known field
    /// selector: only "metadata.name", "metadata.namespace"`.
    Default,
    /// The kind's own (`pkg/apis/core/v1/conversion.go` and the like):
    /// `field label not supported: x`, `metadata.namespace` only when
    /// namespaced.
    Own,
    /// batch/v1 Job's own (`pkg/apis/batch/v1/conversion.go`): `field
    /// label "x" not supported for batchv1.Job`.
    OwnFor(&'static str),
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

/// How a kind maps onto another resource's storage.
#[derive(Debug)]
pub(crate) struct Conversion {
    /// The storage resource's group and plural.
    pub storage_group: &'static str,
    pub storage_plural: &'static str,
    /// Served shape to stored shape.
    pub to_storage: fn(Value) -> Value,
    /// Stored shape to served shape.
    pub from_storage: fn(&Value) -> Value,
}

pub(crate) const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// Every verb but `deletecollection` (namespaces).
pub(crate) const NS_VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];
/// The access reviews: create-only, answered and never stored.
pub(crate) const CREATE_ONLY: &[&str] = &["create"];
/// The `all` category (`kubectl get all`).
pub(crate) const ALL: &[&str] = &["all"];
/// The `api-extensions` category.
pub(crate) const EXT: &[&str] = &["api-extensions"];
/// Generation follows `spec`.
pub(crate) const SPEC: &[&str] = &["spec"];

/// Decodes into `T`, reporting the JSON path of the first failure.
fn decode<T: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, (String, String)> {
    serde_path_to_error::deserialize::<_, T>(v)
        .map(|t| serde_json::to_value(&t).unwrap_or(Value::Null))
        .map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            (path, e.into_inner().to_string())
        })
}

/// Registers `T`'s schema, returning its definition name
/// (`io.k8s.api.apps.v1.Deployment`).
fn openapi_schema<T: JsonSchema>(gen: &mut SchemaGenerator) -> String {
    gen.subschema_for::<T>();
    T::schema_name().into_owned()
}

fn no_causes(_: &Value, _: Option<&Value>) -> Vec<Cause> {
    Vec::new()
}

/// The kind `kind` of `group`, served as `plural` and decoded into `T`:
/// namespaced, every verb, no short names, categories or subresources, no
/// generation, field selectors or defaults, DNS-subdomain names, the
/// default printer. Each kind's entry starts from this and says where it
/// differs.
pub(crate) const fn builtin<T: DeserializeOwned + Serialize + JsonSchema>(
    group: &'static str,
    plural: &'static str,
    kind: &'static str,
) -> Builtin {
    Builtin {
        group,
        plural,
        kind,
        namespaced: true,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &[],
        status: false,
        scale: false,
        extra_subresources: &[],
        etcd_prefix: None,
        decode: decode::<T>,
        openapi_schema: openapi_schema::<T>,
        generation: None,
        field_labels: &[],
        field_label_conversion: FieldLabelConversion::Default,
        printer: Printer::DEFAULT,
        delete_returns_object: false,
        conversion: None,
        create_on_update: false,
        name_rule: NameRule::Subdomain,
        defaults: Defaults::NONE,
        validate: no_causes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    /// The name function each kind's validation hands `ValidateObjectMeta`
    /// (`pkg/apis/*/validation`, release-1.33): namespaces
    /// `ValidateNamespaceName` (a DNS label), services
    /// `ValidateServiceName` (DNS-1035), core Events none but the generic
    /// store's path segment (events.k8s.io Events get subdomains), PDBs
    /// the path segment, RBAC `ValidateRBACName`; every other kind a DNS
    /// subdomain.
    #[test]
    fn each_kind_has_kube_apiservers_name_rule() {
        let reg = Registry::with_builtins();
        for (group, version, plural, want) in [
            ("", "v1", "namespaces", NameRule::Label),
            ("", "v1", "services", NameRule::Dns1035),
            ("", "v1", "events", NameRule::PathSegment),
            ("events.k8s.io", "v1", "events", NameRule::Subdomain),
            (
                "policy",
                "v1",
                "poddisruptionbudgets",
                NameRule::PathSegment,
            ),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "clusterroles",
                NameRule::Rbac,
            ),
            ("rbac.authorization.k8s.io", "v1", "roles", NameRule::Rbac),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "rolebindings",
                NameRule::Rbac,
            ),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "clusterrolebindings",
                NameRule::Rbac,
            ),
            ("", "v1", "pods", NameRule::Subdomain),
            ("", "v1", "configmaps", NameRule::Subdomain),
            ("batch", "v1", "cronjobs", NameRule::Subdomain),
            ("apps", "v1", "deployments", NameRule::Subdomain),
            ("coordination.k8s.io", "v1", "leases", NameRule::Subdomain),
            (
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                NameRule::Subdomain,
            ),
        ] {
            let def = reg.get(group, version, plural).expect("served");
            assert_eq!(def.name_rule(), want, "{group}/{plural}");
        }
        let rules: Vec<_> = reg.all().iter().map(|d| d.name_rule()).collect();
        let others = rules.iter().filter(|r| **r != NameRule::Subdomain).count();
        assert_eq!(others, 8, "only the kinds above differ");
    }
}
