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
pub(crate) mod certs;
mod der;
pub(crate) mod identities;
pub(crate) mod impersonation;
pub(crate) mod jwt;
pub(crate) mod rbac;
pub(crate) mod tokens;
pub(crate) mod user;

use std::collections::BTreeMap;

use audit::AuditLog;
use identities::AuthnState;
use rbac::RbacCache;

use crate::storage::Storage;
pub(crate) use user::{service_account_user, UserInfo, AUTHENTICATED, MASTERS, UNAUTHENTICATED};

/// What authentication and authorization read of the server's state:
/// the stored objects they look up (service accounts, secrets, RBAC
/// objects) and their own caches. The registry's `Shared` holds them.
pub(crate) trait AuthState {
    /// The stored objects.
    fn storage(&self) -> &Storage;
    /// The authenticator's tables (static users, certificates, keys).
    fn authn(&self) -> &AuthnState;
    /// The RBAC authorizer's index.
    fn rbac(&self) -> &RbacCache;
    /// The permission audit.
    fn audit(&self) -> &AuditLog;
    /// Whether `presented` is the admin token (compared in constant time).
    fn token_matches(&self, presented: &str) -> bool;
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
