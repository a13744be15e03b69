//! `admissionregistration.k8s.io/v1` and `apiextensions.k8s.io/v1`
//! defaults: the webhook configurations and admission policies (their
//! defaulting lives beside their validation in `crate::registry::admissionregistration`),
//! and
//! the CRD's conversion strategy plus the cleanup finalizer the CRD
//! registry adds on create. Sources:
//! `pkg/apis/admissionregistration/v1/defaults.go`,
//! `apiextensions-apiserver/pkg/apis/apiextensions/v1/defaults.go`.

use std::sync::atomic::AtomicU32;

use serde_json::{json, Value};

use super::fields::{ensure_object, fill, spec_mut, CRD_CLEANUP, D};

/// `SetDefaults_MutatingWebhook` on every webhook.
pub(super) fn mutating_webhooks(obj: &mut Value) {
    crate::registry::admissionregistration::validate::default(obj, true);
}

/// `SetDefaults_ValidatingWebhook` on every webhook.
pub(super) fn validating_webhooks(obj: &mut Value) {
    crate::registry::admissionregistration::validate::default(obj, false);
}

/// `SetDefaults_ValidatingAdmissionPolicySpec` and its match resources.
pub(super) fn policy(obj: &mut Value) {
    crate::registry::admissionregistration::policy_checks::default(obj, false);
}

/// The binding's match resources.
pub(super) fn policy_binding(obj: &mut Value) {
    crate::registry::admissionregistration::policy_checks::default(obj, true);
}

/// `SetDefaults_CustomResourceDefinitionSpec`'s conversion strategy.
pub(super) fn crd(obj: &mut Value) {
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
pub(super) fn crd_create(obj: &mut Value, _: &AtomicU32) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `pkg/apis/admissionregistration/v1/defaults_test.go`
    /// `TestDefaultAdmissionWebhook`'s expectations for a bare webhook.
    #[test]
    fn webhooks_and_crds() {
        let mut m = json!({"webhooks": [{"name": "w", "clientConfig": {"service": {"name": "s", "namespace": "n"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]});
        mutating_webhooks(&mut m);
        let w = &m["webhooks"][0];
        assert_eq!(w["failurePolicy"], "Fail");
        assert_eq!(w["matchPolicy"], "Equivalent");
        assert_eq!(w["namespaceSelector"], json!({}));
        assert_eq!(w["objectSelector"], json!({}));
        assert_eq!(w["timeoutSeconds"], 10);
        assert_eq!(w["reinvocationPolicy"], "Never");
        assert_eq!(w["rules"][0]["scope"], "*");
        assert_eq!(w["clientConfig"]["service"]["port"], 443);

        let mut c = json!({"metadata": {"name": "x.example.com"}, "spec": {}});
        crd(&mut c);
        crd_create(&mut c, &AtomicU32::new(0));
        assert_eq!(c["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(c["metadata"]["finalizers"], json!([CRD_CLEANUP]));
        let mut c = json!({"spec": {"conversion": {"strategy": "Webhook"}}});
        crd(&mut c);
        assert_eq!(c["spec"]["conversion"]["strategy"], "Webhook");
    }
}
