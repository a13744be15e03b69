//! The runtime's entry to the in-process API server (feature `testing`).
//!
//! The server is its own crate, [`kubeforge_apiserver`], which depends on
//! no part of kubeforge: it shares no code, and so no bugs, with the
//! runtime it tests. This module re-exports it and adds what needs the
//! runtime, through [`ApiServerExt`]: a [`Config`] and a [`Client`] for
//! the server, and [`install_crd_for`](ApiServerExt::install_crd_for) for a
//! `#[derive(CustomResource)]` type. The prelude brings the trait into
//! scope. [`LocalWebhooks`] points the server at a manager's webhook
//! server, as envtest's webhook install options do. [`start_operator`]
//! runs a manager as the operator's service account, bound to the RBAC its
//! controllers derive, so the server's
//! [`permission_audit`](ApiServer::permission_audit) can prove that RBAC
//! is what it needs, and [`assert_least_privilege`] says so in a test;
//! [`eventually`] waits for what the operator does.
//!
//! ```no_run
//! # use kubeforge::prelude::*;
//! # #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
//! # #[crd(group = "cache.example.com", version = "v1alpha1", kind = "Memcached")]
//! # pub struct MemcachedSpec { pub size: i32 }
//! # async fn demo() -> anyhow::Result<()> {
//! use kubeforge::testing::{ApiServer, ApiServerExt};
//!
//! let server = ApiServer::start().await?; // HTTPS on 127.0.0.1, fresh CA and token
//! server.install_crd_for::<Memcached>()?; // the derive's CRD, validated and served
//! let mcs: Api<Memcached> = Api::namespaced(server.client()?, "default");
//! # let _ = mcs;
//! # Ok(())
//! # }
//! ```

mod least_privilege;
mod operator;
mod wait;
mod webhooks;

pub use kubeforge_apiserver::*;
pub use least_privilege::{
    assert_least_privilege, least_privilege_findings, NOT_EXERCISED_BY_ONE_REPLICA,
};
pub use operator::{
    config_for, grant, operator_identity, operator_rbac, operator_user, start_operator,
    start_operator_with, OperatorError, RunningOperator, OPERATOR_NAMESPACE,
    OPERATOR_SERVICE_ACCOUNT,
};
pub use wait::eventually;
pub use webhooks::{LocalWebhooks, LocalWebhooksError};

use crate::client::{Auth, Client, Config, SecretString};
use crate::crd::{CrdError, CustomResource};

/// Why a CRD could not be installed with
/// [`install_crd_for`](ApiServerExt::install_crd_for).
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// `#[derive(CustomResource)]` could not build the CRD.
    #[error("cannot build the CRD: {0}")]
    Crd(#[from] CrdError),
    /// The server refused the CRD.
    #[error(transparent)]
    Server(#[from] Error),
}

/// What the runtime adds to [`ApiServer`].
pub trait ApiServerExt {
    /// A client configuration for the server: its URL, CA and admin token.
    fn config(&self) -> Config;

    /// A [`Client`] that trusts the server's CA and sends its admin token.
    fn client(&self) -> Result<Client, crate::Error>;

    /// Installs the CRD `#[derive(CustomResource)]` made for `K` (its
    /// [`try_crd`](CustomResource::try_crd)): a CRD the derive cannot build
    /// is [`InstallError::Crd`], one the server refuses is
    /// [`InstallError::Server`]. The CRD enters as JSON, through the same
    /// validation as any other, so the server still checks the derive.
    fn install_crd_for<K: CustomResource>(&self) -> Result<(), InstallError>;
}

impl ApiServerExt for ApiServer {
    fn config(&self) -> Config {
        let mut config = Config::new(self.url().clone());
        config.root_certs = Some(vec![self.ca_der().to_vec()]);
        config.auth = Auth::Bearer(SecretString::new(self.token()));
        config
    }

    fn client(&self) -> Result<Client, crate::Error> {
        Client::try_from(self.config())
    }

    fn install_crd_for<K: CustomResource>(&self) -> Result<(), InstallError> {
        Ok(self.install_crd(&K::try_crd()?)?)
    }
}
