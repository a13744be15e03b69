//! The admissionregistration.k8s.io kinds' own checks: what a webhook
//! configuration or an admission policy must satisfy to be stored.

pub(crate) mod match_conditions;
pub(crate) mod mutatingwebhookconfiguration;
pub(crate) mod policy_checks;
pub(crate) mod validate;
pub(crate) mod validatingadmissionpolicy;
pub(crate) mod validatingadmissionpolicybinding;
pub(crate) mod validatingwebhookconfiguration;

use serde_json::{json, Value};

use crate::registry::printers::{age, len_at, name, Col::*, Printer};

/// The group.
pub(super) const GROUP: &str = "admissionregistration.k8s.io";

/// The webhook configurations' printer: `WEBHOOKS AGE`.
pub(super) const WEBHOOK_PRINTER: Printer = Printer {
    columns: &[Name, Int("Webhooks", 0), Age],
    cells: webhook_cells,
};

fn webhook_cells(o: &Value) -> Vec<Value> {
    vec![name(o), json!(len_at(o, "/webhooks")), age(o)]
}

#[cfg(test)]
mod defaults_tests {
    use super::mutatingwebhookconfiguration::defaults as mutating_webhooks;

    use crate::registry::apiextensions::customresourcedefinition::{
        defaults as crd, on_create as crd_create, CRD_CLEANUP,
    };
    use serde_json::json;
    use std::sync::atomic::AtomicU32;

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
