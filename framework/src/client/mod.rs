//! The client layer: configuration (kubeconfig and in-cluster), the HTTPS
//! transport with authentication, typed and dynamic APIs, discovery, and the
//! error type that carries the API server's `Status`.
//!
//! - [`config`]: [`Config`], kubeconfig loading and merging, in-cluster.
//! - [`Client`] (transport): hyper + rustls, credentials, timeouts.
//! - [`Api`]: typed and dynamic resource operations built with
//!   `kube_core::Request`.
//! - [`watch`]: incremental watch-event decoding.
//! - [`discovery`]: legacy and aggregated discovery, GVK -> resource.
//! - [`Error`]: API errors with the server's `Status`, and everything else.

pub mod api;
mod auth;
pub mod config;
pub mod discovery;
mod error;
mod tls;
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
