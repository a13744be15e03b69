//! The operator's own identity on kubeforge's API server: `--embedded` and
//! [`App::start_as_operator`] run the operator as its service account
//! (kubebuilder's `system/controller-manager`), bound to the RBAC that its
//! own `manifests` derive, not as the admin; samples and the kubeconfig
//! written for kubectl stay the admin's. A rule the operator lacks is a
//! named 403 during development, and the server's permission audit says
//! which rules it lacks and which it never used.

use std::time::Duration;

use super::embedded::Running;
use super::{App, Error, Flags, RunArgs};
use crate::rbac::RoleManifests;
use crate::testing::{self, ApiServer, ApiServerExt as _};
use crate::Config;

/// How long the `--embedded` operator's token lasts: the server lives as
/// long as the process, so as long as a development session might.
const EMBEDDED_TOKEN_LIFETIME: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// How long a test operator's token lasts (a TokenRequest's default).
const TEST_TOKEN_LIFETIME: Duration = Duration::from_secs(60 * 60);

impl<F: Flags> App<F> {
    /// The RBAC the operator's `manifests` derive for `flags` (the manager
    /// role restricted to `namespace` when given, as `manifests
    /// --namespace` renders it), for its service account.
    pub async fn operator_rbac(
        &self,
        flags: &F,
        namespace: Option<&str>,
    ) -> Result<RoleManifests, Error> {
        let mgr = self.offline_manager(flags).await?;
        Ok(testing::operator_rbac(mgr.permissions(), namespace))
    }

    /// Creates the operator's service account on `server`, binds `rbac`
    /// and returns the service account's client configuration.
    async fn operator_config_with(
        &self,
        server: &ApiServer,
        rbac: &RoleManifests,
        lifetime: Duration,
    ) -> Result<Config, Error> {
        let config = testing::operator_identity(server, lifetime)
            .await
            .map_err(Error::OperatorIdentity)?;
        testing::grant(server, rbac)
            .await
            .map_err(Error::OperatorIdentity)?;
        Ok(config)
    }

    /// `--embedded`'s operator identity: the service account bound to
    /// what `manifests` derive for `run`'s namespace.
    pub(crate) async fn embedded_operator_config(
        &self,
        server: &ApiServer,
        run: &RunArgs,
        flags: &F,
    ) -> Result<Config, Error> {
        let rbac = self.operator_rbac(flags, run.namespace.as_deref()).await?;
        self.operator_config_with(server, &rbac, EMBEDDED_TOKEN_LIFETIME)
            .await
    }

    /// [`start_on`](Self::start_on), but the operator runs as its service
    /// account (user [`operator_user`](testing::operator_user)) bound to
    /// the RBAC its `manifests` derive, with leader election on so every
    /// derived rule has its use; [`Running::client`] stays the admin's.
    /// The server's [`permission_audit`](ApiServer::permission_audit) of
    /// that user then shows the rules it lacked and the rules it never
    /// used.
    pub async fn start_as_operator(&self, server: &ApiServer, flags: F) -> Result<Running, Error> {
        self.start_as_operator_with(server, flags, |_| {}).await
    }

    /// [`start_as_operator`](Self::start_as_operator) with the derived
    /// RBAC edited by `edit` before it is bound: to show that a test fails,
    /// with the 403 named, when a rule is missing.
    pub async fn start_as_operator_with(
        &self,
        server: &ApiServer,
        flags: F,
        edit: impl FnOnce(&mut RoleManifests),
    ) -> Result<Running, Error> {
        super::embedded::install_crds(server, &self.crds()?)?;
        let mut rbac = self.operator_rbac(&flags, None).await?;
        edit(&mut rbac);
        let config = self
            .operator_config_with(server, &rbac, TEST_TOKEN_LIFETIME)
            .await?;
        let admin = server.client().map_err(|source| Error::Cluster {
            what: "a client for the API server".to_owned(),
            source,
        })?;
        self.start_in_background(config, admin, true, flags).await
    }
}

impl Running {
    /// Waits for the operator to end on its own (without stopping it):
    /// how its manager ended, e.g. the named 403 of a cache that could
    /// not sync under the RBAC it was given.
    pub async fn wait(mut self) -> Result<(), Error> {
        match self.task.take() {
            Some(task) => match task.await {
                Ok(result) => result.map_err(Error::Manager),
                Err(e) => Err(Error::Task(e)),
            },
            None => Ok(()),
        }
    }
}
