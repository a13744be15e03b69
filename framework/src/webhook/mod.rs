//! Webhooks served by the manager (controller-runtime's `pkg/webhook`):
//!
//! - [`WebhookServer`]: HTTPS on port 9443 by default, the certificate and
//!   key read from `<tmp>/k8s-webhook-server/serving-certs/tls.{crt,key}`
//!   and reloaded when they change ([`CertWatcher`]);
//! - admission: typed [`Defaulter`]s (the framework computes the JSON
//!   patch) and [`Validator`]s for a kind at kubebuilder's default paths,
//!   raw [`AdmissionHandler`]s for kinds the operator does not own; both
//!   may warn and deny with a `Status` ([`Denial`]);
//! - conversion: `/convert` for every kind registered with a hub-and-spoke
//!   [`Converter`](crate::crd::conversion::Converter);
//! - [`configurations`]: the Mutating/ValidatingWebhookConfigurations and
//!   CRD conversion stanzas generated from what is registered, for
//!   manifests and tests.
//!
//! A manager serves [`Manager::webhooks`](crate::Manager::webhooks) when
//! anything is registered:
//!
//! ```no_run
//! use kubeforge::prelude::*;
//! use kubeforge::webhook::{AdmissionRequest, AdmissionResult, Defaulter, Denial, Validator};
//! # #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
//! # #[crd(group = "cache.example.com", version = "v1alpha1", kind = "Memcached")]
//! # pub struct MemcachedSpec { pub size: Option<i32> }
//!
//! struct Sizes;
//!
//! impl Defaulter<Memcached> for Sizes {
//!     async fn default(&self, mc: &mut Memcached, _: &AdmissionRequest) -> AdmissionResult {
//!         mc.spec.size.get_or_insert(3);
//!         Ok(vec![])
//!     }
//! }
//!
//! impl Validator<Memcached> for Sizes {
//!     async fn validate_create(&self, mc: &Memcached, _: &AdmissionRequest) -> AdmissionResult {
//!         match mc.spec.size {
//!             Some(size) if size > 10 => Err(Denial::invalid("Memcached", mc.name_any())
//!                 .with_cause("spec.size", "FieldValueInvalid", "at most 10")),
//!             _ => Ok(vec![]),
//!         }
//!     }
//! }
//!
//! # async fn demo() -> Result<(), kubeforge::manager::Error> {
//! let mgr = Manager::builder().build().await?;
//! mgr.webhooks().defaulter::<Memcached, _>(Sizes).validator::<Memcached, _>(Sizes);
//! mgr.run().await // serves https://:9443/mutate-cache-example-com-v1alpha1-memcached
//! # }
//! ```

pub mod admission;
mod certs;
pub mod configurations;
mod conversion;
mod paths;
mod registry;
mod server;

use std::path::PathBuf;

pub use admission::{
    Admission, AdmissionHandler, AdmissionRequest, AdmissionResult, Defaulter, Denial, Operation,
    Validator, Verdict,
};
pub use certs::CertWatcher;
pub use conversion::CONVERT_PATH;
pub use paths::{default_name, default_path};
pub use registry::{MatchPolicy, WebhookEntry, WebhookOptions, WebhookType, Webhooks};
pub use server::{
    default_cert_dir, WebhookServer, WebhookServerOptions, DEFAULT_CERT_NAME,
    DEFAULT_CERT_POLL_INTERVAL, DEFAULT_KEY_NAME, DEFAULT_WEBHOOK_PORT, MAX_BODY_BYTES,
};

/// Why the webhook server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The serving certificate or key could not be loaded.
    #[error("webhook serving certificate {}: {problem}", .path.display())]
    Certificate {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The TLS configuration could not be made.
    #[error("webhook server TLS: {0}")]
    Tls(String),
    /// Listening or serving failed.
    #[error(transparent)]
    Serve(#[from] crate::serve::Error),
}
