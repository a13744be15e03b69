//! Who is asking, and may they: kube-apiserver's authentication chain
//! ([`authn`]: the admin token, static token users, client certificates,
//! service-account JWTs, anonymous), [`impersonation`], the identity types ([`UserInfo`],
//! [`User`], [`Credentials`]), the request attributes and RBAC
//! authorizer the request path consults before any handler runs, and the
//! permission [`audit`] of what each identity asked for.

pub(crate) mod attributes;
pub(crate) mod audit;
pub(crate) mod authn;
pub(crate) mod authz;
pub(crate) mod bootstrap;
pub(crate) mod certs;
mod der;
pub(crate) mod escalation;
pub(crate) mod identities;
pub(crate) mod impersonation;
pub(crate) mod jwt;
mod owner_refs;
pub(crate) mod rbac;
pub(crate) mod reviews;
pub(crate) mod tokens;
mod user;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use http::request::Parts;

pub(crate) use user::{service_account_user, UserInfo, AUTHENTICATED, MASTERS, UNAUTHENTICATED};

use crate::error::Error;
use crate::http::Query;
use crate::registry::ResourceDef;
use crate::state::Shared;
use crate::status::ApiError;

/// Authenticates and authorizes a request before any handler runs: the
/// 401 or 403 kube-apiserver would answer, or the identity, which is also
/// left in the request's extensions for the handlers that need it.
pub(crate) fn admit_request(
    shared: &Shared,
    parts: &mut Parts,
    query: &Query,
) -> Result<Arc<UserInfo>, ApiError> {
    let user = authn::authenticate(shared, parts)?;
    let user = impersonation::apply(shared, user, parts)?;
    let attrs = attributes::from_request(&parts.method, parts.uri.path(), query);
    if let rbac::Decision::Deny(reason) = authz::check(shared, &user, &attrs) {
        return Err(attributes::forbidden(&user, &attrs, &reason));
    }
    parts.extensions.insert(user.clone());
    Ok(user)
}

/// Called after every stored write or removal: a change to an RBAC object
/// invalidates the authorizer's index (and a ClusterRole's, aggregation).
pub(crate) fn written(shared: &Shared, def: &ResourceDef) {
    if def.group == rbac::GROUP && def.builtin().is_some() {
        shared.rbac.invalidate(def.plural == "clusterroles");
    }
}

/// A user to add to a running server: a name, its groups and an optional
/// uid, as kube-apiserver's static token file and envtest's `AddUser`
/// describe one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct User {
    name: String,
    uid: String,
    groups: Vec<String>,
}

impl User {
    /// A user called `name`, in no group (it still gets
    /// `system:authenticated` when it authenticates).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Adds a group.
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.groups.push(group.into());
        self
    }

    /// Sets the uid the user reports.
    pub fn uid(mut self, uid: impl Into<String>) -> Self {
        self.uid = uid.into();
        self
    }

    /// The user name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The groups given (the implicit ones are added at authentication).
    pub fn groups(&self) -> &[String] {
        &self.groups
    }

    pub(crate) fn info(&self) -> UserInfo {
        UserInfo {
            name: self.name.clone(),
            uid: self.uid.clone(),
            groups: self.groups.clone(),
            extra: BTreeMap::new(),
        }
    }
}

/// How a client proves who it is.
#[derive(Clone)]
enum Secret {
    Token(String),
    Certificate { cert_pem: String, key_pem: String },
}

/// What a client needs to reach the server as one identity: the server's
/// URL and CA and a bearer token or a client certificate. It renders a
/// kubeconfig for any client.
#[derive(Clone)]
pub struct Credentials {
    user: String,
    server: String,
    ca_pem: String,
    secret: Secret,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    pub(crate) fn token(user: &str, server: &str, ca_pem: &str, token: String) -> Self {
        Self {
            user: user.to_owned(),
            server: server.to_owned(),
            ca_pem: ca_pem.to_owned(),
            secret: Secret::Token(token),
        }
    }

    pub(crate) fn certificate(
        user: &str,
        server: &str,
        ca_pem: &str,
        cert_pem: String,
        key_pem: String,
    ) -> Self {
        Self {
            user: user.to_owned(),
            server: server.to_owned(),
            ca_pem: ca_pem.to_owned(),
            secret: Secret::Certificate { cert_pem, key_pem },
        }
    }

    /// The user name these credentials authenticate as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The bearer token, for token credentials. Keep it out of logs.
    pub fn bearer_token(&self) -> Option<&str> {
        match &self.secret {
            Secret::Token(t) => Some(t),
            Secret::Certificate { .. } => None,
        }
    }

    /// The client certificate and its private key (PEM), for certificate
    /// credentials.
    pub fn client_certificate(&self) -> Option<(&str, &str)> {
        match &self.secret {
            Secret::Token(_) => None,
            Secret::Certificate { cert_pem, key_pem } => Some((cert_pem, key_pem)),
        }
    }

    fn kubeconfig_user(&self) -> serde_json::Value {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        match &self.secret {
            Secret::Token(t) => serde_json::json!({ "token": t }),
            Secret::Certificate { cert_pem, key_pem } => serde_json::json!({
                "client-certificate-data": b64(cert_pem),
                "client-key-data": b64(key_pem),
            }),
        }
    }

    /// A kubeconfig (YAML) for this identity: the server's cluster, this
    /// user, context [`KUBECONFIG_CONTEXT`](crate::KUBECONFIG_CONTEXT).
    pub fn kubeconfig(&self) -> Result<String, Error> {
        crate::server::kubeconfig::render_user(&self.server, &self.ca_pem, self.kubeconfig_user())
    }

    /// Writes [`kubeconfig`](Self::kubeconfig) to `path`, readable by the
    /// owner only.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let text = self.kubeconfig()?;
        crate::server::kubeconfig::write_text(path.as_ref(), &text)
    }
}

#[cfg(test)]
mod tests {
    use super::user::SERVICE_ACCOUNTS;
    use super::*;

    #[test]
    fn implicit_groups_follow_the_authenticated_group_adder() {
        let u = User::new("alice")
            .group("dev")
            .info()
            .with_authenticated_group();
        assert_eq!(u.groups, ["dev", AUTHENTICATED]);
        let anon = UserInfo::anonymous().with_authenticated_group();
        assert_eq!(anon.groups, [UNAUTHENTICATED]);
        let sa = UserInfo::service_account("ns", "sa", "u1").with_authenticated_group();
        assert_eq!(sa.name, "system:serviceaccount:ns:sa");
        assert_eq!(
            sa.groups,
            [SERVICE_ACCOUNTS, "system:serviceaccounts:ns", AUTHENTICATED]
        );
    }
}
