//! ValidatingWebhookConfigurations: cluster-scoped, each webhook defaulted
//! (`SetDefaults_ValidatingWebhook`) and validated as
//! `pkg/apis/admissionregistration/validation` does ([`super::validate`]),
//! generation by `webhooks`, and the `WEBHOOKS` row.

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use serde_json::Value;

use crate::machinery::status::Cause;
use crate::registry::strategy::{builtin, Builtin, Defaults, EXT};

pub(crate) static VWC: Builtin = Builtin {
    namespaced: false,
    categories: EXT,
    generation: Some(&["webhooks"]),
    printer: super::WEBHOOK_PRINTER,
    defaults: Defaults::fields(defaults),
    validate,
    ..builtin::<ValidatingWebhookConfiguration>(
        super::GROUP,
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
    )
};

/// `SetDefaults_ValidatingWebhook` on every webhook.
pub(super) fn defaults(obj: &mut Value) {
    crate::registry::admissionregistration::validate::default(obj, false);
}

fn validate(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    super::validate::validate(false, obj, old)
}
