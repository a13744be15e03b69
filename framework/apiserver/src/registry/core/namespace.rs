//! Namespaces: cluster-scoped, no `deletecollection`, a DNS-label name
//! (`ValidateNamespaceName`), the `kubernetes.io/metadata.name` label,
//! the `kubernetes` finalizer and `Active` phase on create, and the
//! `finalize` subresource.

use std::sync::atomic::AtomicU32;

use k8s_openapi::api::core::v1::Namespace;
use serde_json::{json, Value};

use crate::machinery::util::NameRule;
use crate::registry::fields::{ensure_object, obj_name};
use crate::registry::printers::{age, name, str_at, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin, Defaults, FieldLabelConversion};
use crate::registry::strategy::{ExtraSubresource, NS_VERBS};

const FINALIZE: ExtraSubresource = ExtraSubresource {
    name: "finalize",
    verbs: &["update"],
    kind: None,
};

pub(crate) static NAMESPACE: Builtin = Builtin {
    namespaced: false,
    verbs: NS_VERBS,
    short_names: &["ns"],
    status: true,
    extra_subresources: &[FINALIZE],
    field_label_conversion: FieldLabelConversion::Own,
    field_labels: &[("status.phase", "status.phase")],
    printer: Printer {
        columns: &[Name, Str("Status", 0), Age],
        cells,
    },
    name_rule: NameRule::Label,
    defaults: Defaults {
        fields: defaults,
        create: Some(on_create),
        update: Some(on_update),
    },
    ..builtin::<Namespace>("", "namespaces", "Namespace")
};

/// `SetDefaults_Namespace`: the `kubernetes.io/metadata.name` label
/// (when the namespace has a name); `SetDefaults_NamespaceStatus`'s phase
/// is the create-time status below.
pub(super) fn defaults(obj: &mut Value) {
    let name = obj_name(obj);
    if name.is_empty() {
        return;
    }
    if let Some(labels) = ensure_object(obj, &["metadata", "labels"]) {
        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
}

/// The namespace strategy's `PrepareForCreate`: the `kubernetes`
/// finalizer and phase Active.
pub(super) fn on_create(obj: &mut Value, _: &AtomicU32) {
    if let Some(map) = obj.as_object_mut() {
        map.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
        map.insert("status".into(), json!({"phase": "Active"}));
    }
}

/// An update keeps the label (the strategy canonicalizes it again).
pub(super) fn on_update(obj: &mut Value, _: &Value) {
    defaults(obj);
}

fn cells(o: &Value) -> Vec<Value> {
    vec![name(o), json!(str_at(o, "/status/phase")), age(o)]
}
