//! The client layer: configuration (kubeconfig and in-cluster), the HTTPS
//! transport with authentication, typed and dynamic APIs, discovery, and the
//! error type that carries the API server's `Status`.

pub mod config;

pub use config::{Auth, Config, SecretString};
