//! CustomResourceDefinitions: cluster-scoped, the conversion strategy
//! defaulted (`SetDefaults_CustomResourceDefinitionSpec`), the cleanup
//! finalizer on create (the CRD strategy's `PrepareForCreate`), generation
//! by `spec`, a status subresource; the `<plural>.<group>` name rule is
//! checked with the schema (`apiextensions::crd`).

use std::sync::atomic::AtomicU32;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{json, Value};

use crate::registry::fields::{ensure_object, fill, spec_mut, D};
use crate::registry::strategy::{builtin, Builtin, Defaults, EXT, SPEC};

/// The finalizer kube-apiserver adds to every CRD.
pub(crate) const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

pub(crate) static CRD: Builtin = Builtin {
    namespaced: false,
    short_names: &["crd", "crds"],
    categories: EXT,
    status: true,
    generation: Some(SPEC),
    etcd_prefix: Some("apiextensions.k8s.io/customresourcedefinitions"),
    defaults: Defaults {
        create: Some(on_create),
        ..Defaults::fields(defaults)
    },
    ..builtin::<CustomResourceDefinition>(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "CustomResourceDefinition",
    )
};

/// `SetDefaults_CustomResourceDefinitionSpec`'s conversion strategy.
pub(crate) fn defaults(obj: &mut Value) {
    if let Some(spec) = spec_mut(obj) {
        if spec.get("conversion").is_none_or(Value::is_null) {
            spec.insert("conversion".into(), json!({}));
        }
        if let Some(conversion) = spec.get_mut("conversion").and_then(Value::as_object_mut) {
            fill(conversion, &[("strategy", D::Str("None"))]);
        }
    }
}

/// The CRD strategy's `PrepareForCreate`: the cleanup finalizer.
pub(crate) fn on_create(obj: &mut Value, _: &AtomicU32) {
    if let Some(meta) = ensure_object(obj, &["metadata"]) {
        let fins = meta
            .entry("finalizers")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(fins) = fins.as_array_mut() {
            if !fins.iter().any(|f| f.as_str() == Some(CRD_CLEANUP)) {
                fins.push(json!(CRD_CLEANUP));
            }
        }
    }
}
