//! Running an operator as its own service account: kubebuilder's
//! `system/controller-manager`, created on the server with a token, bound
//! to the RBAC its recorded [`Permissions`] render (what `manifests`
//! writes), so a rule the operator lacks is a named 403 in a test, not in
//! production. [`start_operator`] does it in one call for a manager; the
//! server's permission audit then says what the operator was denied and
//! which of its rules it never used.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube_core::params::{Patch, PatchParams, PostParams};
use kube_core::{ObjectMeta, Resource};
use serde::Serialize;

use super::{ApiServer, ApiServerExt, Credentials};
use crate::client::{Auth, ClientIdentity, Config, SecretBytes, SecretString};
use crate::manager::{CancellationToken, Manager, ManagerBuilder};
use crate::rbac::{render, Permissions, RoleManifests, RoleOptions};
use crate::Api;

/// The namespace of the operator's service account (kubebuilder's, before
/// kustomize's `namespace`).
pub const OPERATOR_NAMESPACE: &str = "system";
/// The operator's service account (kubebuilder's `controller-manager`).
pub const OPERATOR_SERVICE_ACCOUNT: &str = "controller-manager";

/// The user name the operator's requests carry:
/// `system:serviceaccount:system:controller-manager`, the identity to ask
/// [`ApiServer::permission_audit`] about.
pub fn operator_user() -> String {
    format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_SERVICE_ACCOUNT}")
}

/// Why the operator could not be set up as its service account.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The server refused the service account or its token.
    #[error("cannot create the operator's service account: {0}")]
    ServiceAccount(#[source] super::Error),
    /// A request as the admin (the namespace, the roles and bindings)
    /// failed.
    #[error("{what}: {source}")]
    Api {
        /// What was being done.
        what: String,
        /// The client error.
        #[source]
        source: crate::Error,
    },
    /// An RBAC object could not be encoded.
    #[error("cannot encode an RBAC object: {0}")]
    Encode(#[source] serde_json::Error),
    /// The manager could not be built, or ended with an error.
    #[error(transparent)]
    Manager(#[from] crate::manager::Error),
    /// The manager's task panicked or was cancelled.
    #[error("the manager's task failed: {0}")]
    Task(#[source] tokio::task::JoinError),
}

/// The client configuration of `credentials` on `server` (a token or a
/// client certificate, the server's CA), with `namespace` as the default
/// namespace, as an in-cluster configuration has its service account's.
pub fn config_for(server: &ApiServer, credentials: &Credentials, namespace: &str) -> Config {
    let mut config = server.config();
    config.default_namespace = namespace.to_owned();
    config.auth = match credentials.bearer_token() {
        Some(token) => Auth::Bearer(SecretString::new(token)),
        None => Auth::None,
    };
    if let Some((cert, key)) = credentials.client_certificate() {
        config.client_identity = Some(ClientIdentity {
            cert_pem: cert.as_bytes().to_vec(),
            key_pem: SecretBytes::new(key.as_bytes()),
        });
    }
    config
}

fn api_error(what: impl Into<String>) -> impl FnOnce(crate::Error) -> OperatorError {
    let what = what.into();
    move |source| OperatorError::Api { what, source }
}

/// Creates the operator's namespace and service account (if missing) and
/// returns a client configuration holding a token for it, valid for
/// `lifetime`. Its permissions are what [`grant`] binds.
pub async fn operator_identity(
    server: &ApiServer,
    lifetime: std::time::Duration,
) -> Result<Config, OperatorError> {
    let admin = server
        .client()
        .map_err(api_error("a client for the server's admin"))?;
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(OPERATOR_NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match Api::<Namespace>::all(admin)
        .create(&PostParams::default(), &ns)
        .await
    {
        Ok(_) => {}
        Err(e) if e.is_already_exists() => {}
        Err(e) => {
            return Err(api_error(format!("create namespace {OPERATOR_NAMESPACE}"))(
                e,
            ))
        }
    }
    let credentials = server
        .add_service_account_for(OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, lifetime)
        .map_err(OperatorError::ServiceAccount)?;
    Ok(config_for(server, &credentials, OPERATOR_NAMESPACE))
}

/// The RBAC `permissions` render for the operator's service account
/// (kubebuilder's names; `namespace` restricts the manager role to a Role
/// there, as `manifests --namespace` does).
pub fn operator_rbac(permissions: &Permissions, namespace: Option<&str>) -> RoleManifests {
    render(
        permissions,
        &RoleOptions {
            namespace: namespace.map(str::to_owned),
            service_account: OPERATOR_SERVICE_ACCOUNT.to_owned(),
            service_account_namespace: OPERATOR_NAMESPACE.to_owned(),
            ..RoleOptions::default()
        },
    )
}

/// Server-side applies `object` through `api` (the admin's).
async fn apply<K>(api: Api<K>, object: &K) -> Result<(), OperatorError>
where
    K: Resource<DynamicType = ()>
        + Serialize
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned,
{
    let name = object.meta().name.clone().unwrap_or_default();
    let kind = K::kind(&()).into_owned();
    let mut value = serde_json::to_value(object).map_err(OperatorError::Encode)?;
    value["apiVersion"] = K::api_version(&()).into();
    value["kind"] = kind.clone().into();
    if let Some(meta) = value
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
    {
        meta.remove("namespace");
    }
    api.patch(
        &name,
        &PatchParams::apply("kubeforge-testing").force(),
        &Patch::Apply(value),
    )
    .await
    .map(|_| ())
    .map_err(api_error(format!("apply {kind} {name}")))
}

/// Stores `rbac`'s roles and bindings on `server` as its admin: the
/// cluster-wide ones, the manager Role in its namespace, and the
/// leader-election Role in the operator's namespace (where the manager's
/// Lease is, its client's default namespace).
pub async fn grant(server: &ApiServer, rbac: &RoleManifests) -> Result<(), OperatorError> {
    let admin = server
        .client()
        .map_err(api_error("a client for the server's admin"))?;
    let here = |ns: Option<&String>| ns.map_or(OPERATOR_NAMESPACE, String::as_str).to_owned();
    if let Some(role) = &rbac.cluster_role {
        apply(Api::<ClusterRole>::all(admin.clone()), role).await?;
    }
    if let Some(binding) = &rbac.cluster_role_binding {
        apply(Api::<ClusterRoleBinding>::all(admin.clone()), binding).await?;
    }
    if let Some(role) = &rbac.role {
        let ns = here(role.metadata.namespace.as_ref());
        apply(Api::<Role>::namespaced(admin.clone(), &ns), role).await?;
    }
    if let Some(binding) = &rbac.role_binding {
        let ns = here(binding.metadata.namespace.as_ref());
        apply(Api::<RoleBinding>::namespaced(admin.clone(), &ns), binding).await?;
    }
    // The leader-election objects carry no namespace: kustomize gives
    // them the operator's.
    if let Some(role) = &rbac.leader_election_role {
        apply(
            Api::<Role>::namespaced(admin.clone(), OPERATOR_NAMESPACE),
            role,
        )
        .await?;
    }
    if let Some(binding) = &rbac.leader_election_role_binding {
        apply(
            Api::<RoleBinding>::namespaced(admin.clone(), OPERATOR_NAMESPACE),
            binding,
        )
        .await?;
    }
    Ok(())
}

/// A manager running as the operator's service account; see
/// [`start_operator`]. Dropping it stops the manager without waiting.
#[derive(Debug)]
pub struct RunningOperator {
    rbac: RoleManifests,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<Result<(), crate::manager::Error>>>,
}

impl RunningOperator {
    /// The user name its requests carry ([`operator_user`]).
    pub fn user(&self) -> String {
        operator_user()
    }

    /// The RBAC it was bound to.
    pub fn rbac(&self) -> &RoleManifests {
        &self.rbac
    }

    /// Stops the manager gracefully and returns how it ended.
    pub async fn stop(mut self) -> Result<(), OperatorError> {
        self.stop.cancel();
        match self.task.take() {
            Some(task) => Ok(task.await.map_err(OperatorError::Task)??),
            None => Ok(()),
        }
    }
}

impl Drop for RunningOperator {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Runs a manager as the operator's service account with the RBAC its
/// controllers derive, in one call: `builder` (its client is replaced by
/// the service account's) is built, `setup` registers the controllers
/// (which records what they need), the rendered RBAC is bound, and the
/// manager runs in the background.
///
/// ```no_run
/// # use kubeforge::prelude::*;
/// # #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
/// # #[crd(group = "cache.example.com", version = "v1alpha1", kind = "Memcached")]
/// # pub struct MemcachedSpec { pub size: i32 }
/// # async fn reconcile(_: Arc<Memcached>, _: Arc<Context<()>>) -> Result<Action, kubeforge::controller::Error> { Ok(Action::done()) }
/// # async fn demo() -> anyhow::Result<()> {
/// use kubeforge::testing::{start_operator, ApiServer, ApiServerExt};
///
/// let server = ApiServer::start().await?;
/// server.install_crd_for::<Memcached>()?;
/// let operator = start_operator(&server, Manager::builder(), |mgr| {
///     mgr.controller::<Memcached>().reconcile(reconcile, ());
/// })
/// .await?;
/// // ... drive it ...
/// let audit = server.permission_audit(&operator.user());
/// assert!(audit.is_least_privilege(), "{audit}");
/// # Ok(())
/// # }
/// ```
pub async fn start_operator(
    server: &ApiServer,
    builder: ManagerBuilder,
    setup: impl FnOnce(&Manager),
) -> Result<RunningOperator, OperatorError> {
    start_operator_with(server, builder, setup, |_| {}).await
}

/// [`start_operator`] with the rendered RBAC edited by `edit` before it is
/// bound: to prove a test fails, with the 403 named, when a rule is
/// missing.
pub async fn start_operator_with(
    server: &ApiServer,
    builder: ManagerBuilder,
    setup: impl FnOnce(&Manager),
    edit: impl FnOnce(&mut RoleManifests),
) -> Result<RunningOperator, OperatorError> {
    // An hour, as a TokenRequest's default: a test is over by then.
    let config = operator_identity(server, std::time::Duration::from_secs(3600)).await?;
    let mgr = builder.config(config).build().await?;
    setup(&mgr);
    let mut rbac = operator_rbac(mgr.permissions(), None);
    edit(&mut rbac);
    grant(server, &rbac).await?;
    let stop = CancellationToken::new();
    let task = tokio::spawn(mgr.run_until(stop.clone()));
    Ok(RunningOperator {
        rbac,
        stop,
        task: Some(task),
    })
}
