//! The client layer: configuration (kubeconfig and in-cluster), the HTTPS
//! transport with authentication, typed and dynamic APIs, discovery, and the
//! error type that carries the API server's `Status`.
//!
//! - [`config`]: [`Config`], kubeconfig loading and merging, in-cluster.
//! - [`Client`] (transport): hyper + rustls, credentials, timeouts.
//! - [`Api`]: typed and dynamic resource operations built with
//!   `kube_core::Request`.
//! - [`watch`]: incremental watch-event decoding.
//! - `exact`: decoding with every list allocated at its length, for what a
//!   cache keeps (list items and watch events).
//! - [`discovery`]: legacy and aggregated discovery, GVK -> resource.
//! - [`Error`]: API errors with the server's `Status`, and everything else.
//!
//! ```no_run
//! use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
//! use kubeforge::kube_core::params::{ListParams, Patch, PatchParams};
//! use kubeforge::{Api, Client};
//!
//! # async fn demo() -> Result<(), kubeforge::Error> {
//! let client = Client::try_default().await?; // KUBECONFIG, ~/.kube/config or in-cluster
//! let cms: Api<ConfigMap> = Api::default_namespaced(client);
//! for cm in cms.list(&ListParams::default().labels("app=web")).await?.items {
//!     println!("{:?}", cm.metadata.name);
//! }
//! let patch = kubeforge::serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}});
//! cms.patch("settings", &PatchParams::apply("my-operator"), &Patch::Apply(patch)).await?;
//! # Ok(())
//! # }
//! ```

pub mod api;
pub(crate) mod auth;
pub mod config;
pub mod discovery;
pub(crate) mod error;
pub(crate) mod exact;
pub(crate) mod tls;
mod transport;
pub mod watch;

pub use api::Api;
pub use config::{
    Auth, ClientIdentity, Config, ExecConfig, ExecInteractiveMode, KubeConfigOptions, Kubeconfig,
    SecretBytes, SecretString,
};
pub use discovery::Discovery;
pub use either::Either;
pub use error::{BoxError, ConfigError, Error, Result};
pub use transport::{ByteStream, Client, USER_AGENT_VALUE};
