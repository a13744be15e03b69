//! The objects that point kube-apiserver at the webhook server, generated
//! from what is registered: one MutatingWebhookConfiguration and one
//! ValidatingWebhookConfiguration (controller-gen's names
//! `mutating-webhook-configuration` and `validating-webhook-configuration`)
//! and the `spec.conversion` stanza of each converted CRD. Where they point
//! is a [`Target`]: a Service in the cluster (manifests) or a URL with the
//! CA that signed the server's certificate (tests and embedded runs).

use k8s_openapi::api::admissionregistration::v1 as admission;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;

use super::{WebhookEntry, WebhookType, Webhooks, CONVERT_PATH};

/// controller-gen's name of the MutatingWebhookConfiguration.
pub const MUTATING_CONFIGURATION_NAME: &str = "mutating-webhook-configuration";
/// controller-gen's name of the ValidatingWebhookConfiguration.
pub const VALIDATING_CONFIGURATION_NAME: &str = "validating-webhook-configuration";

/// Where kube-apiserver reaches the webhook server.
#[derive(Clone, Debug)]
pub enum Target {
    /// A Service (kubebuilder's `webhook-service` in the `system`
    /// namespace, before kustomize renames them); no CA bundle: cert-manager
    /// injects it.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
    },
    /// `https://host:port` and the PEM CA that signed the server's
    /// certificate.
    Url {
        /// The base URL, without a path, e.g. `https://127.0.0.1:9443`.
        base: String,
        /// The CA bundle, PEM.
        ca_pem: Vec<u8>,
    },
}

impl Target {
    /// kubebuilder's Service: `webhook-service` in `system`.
    pub fn kubebuilder_service() -> Self {
        Target::Service {
            namespace: "system".into(),
            name: "webhook-service".into(),
        }
    }

    fn admission_client_config(&self, path: &str) -> admission::WebhookClientConfig {
        match self {
            Target::Service { namespace, name } => admission::WebhookClientConfig {
                service: Some(admission::ServiceReference {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    path: Some(path.to_owned()),
                    port: None,
                }),
                ..Default::default()
            },
            Target::Url { base, ca_pem } => admission::WebhookClientConfig {
                url: Some(format!("{}{path}", base.trim_end_matches('/'))),
                ca_bundle: Some(ByteString(ca_pem.clone())),
                ..Default::default()
            },
        }
    }

    fn conversion_client_config(&self) -> apiext::WebhookClientConfig {
        match self {
            Target::Service { namespace, name } => apiext::WebhookClientConfig {
                service: Some(apiext::ServiceReference {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    path: Some(CONVERT_PATH.to_owned()),
                    port: None,
                }),
                ..Default::default()
            },
            Target::Url { base, ca_pem } => apiext::WebhookClientConfig {
                url: Some(format!("{}{CONVERT_PATH}", base.trim_end_matches('/'))),
                ca_bundle: Some(ByteString(ca_pem.clone())),
                ..Default::default()
            },
        }
    }
}

/// The MutatingWebhookConfiguration of the registered defaulters and
/// mutating handlers; `None` when there are none.
pub fn mutating(
    webhooks: &Webhooks,
    target: &Target,
) -> Option<admission::MutatingWebhookConfiguration> {
    let hooks: Vec<_> = entries(webhooks, WebhookType::Mutating)
        .map(|entry| admission::MutatingWebhook {
            name: entry.name,
            admission_review_versions: vec!["v1".into()],
            client_config: target.admission_client_config(&entry.path),
            failure_policy: Some(entry.failure_policy),
            match_policy: entry.match_policy.map(|p| p.as_str().to_owned()),
            rules: Some(entry.rules),
            side_effects: "None".into(),
            ..Default::default()
        })
        .collect();
    (!hooks.is_empty()).then(|| admission::MutatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(MUTATING_CONFIGURATION_NAME.into()),
            ..Default::default()
        },
        webhooks: Some(hooks),
    })
}

/// The ValidatingWebhookConfiguration of the registered validators and
/// validating handlers; `None` when there are none.
pub fn validating(
    webhooks: &Webhooks,
    target: &Target,
) -> Option<admission::ValidatingWebhookConfiguration> {
    let hooks: Vec<_> = entries(webhooks, WebhookType::Validating)
        .map(|entry| admission::ValidatingWebhook {
            name: entry.name,
            admission_review_versions: vec!["v1".into()],
            client_config: target.admission_client_config(&entry.path),
            failure_policy: Some(entry.failure_policy),
            match_policy: entry.match_policy.map(|p| p.as_str().to_owned()),
            rules: Some(entry.rules),
            side_effects: "None".into(),
            ..Default::default()
        })
        .collect();
    (!hooks.is_empty()).then(|| admission::ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(VALIDATING_CONFIGURATION_NAME.into()),
            ..Default::default()
        },
        webhooks: Some(hooks),
    })
}

/// The `spec.conversion` of a CRD converted at `/convert`.
pub fn conversion(target: &Target) -> apiext::CustomResourceConversion {
    apiext::CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(apiext::WebhookConversion {
            client_config: Some(target.conversion_client_config()),
            conversion_review_versions: vec!["v1".into()],
        }),
    }
}

fn entries(webhooks: &Webhooks, webhook_type: WebhookType) -> impl Iterator<Item = WebhookEntry> {
    webhooks
        .entries()
        .into_iter()
        .filter(move |entry| entry.webhook_type == webhook_type)
}
