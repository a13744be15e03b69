//! The identity a request is made as (`user.Info`) and the groups
//! kube-apiserver gives identities implicitly. A leaf: the server's state
//! holds identities, and everything that authenticates or authorizes
//! reads them.

use std::collections::BTreeMap;

/// `system:masters`: kube-apiserver allows its members everything.
pub(crate) const MASTERS: &str = "system:masters";
/// Added to every authenticated identity.
pub(crate) const AUTHENTICATED: &str = "system:authenticated";
/// The group of anonymous requests.
pub(crate) const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user name of anonymous requests.
pub(crate) const ANONYMOUS: &str = "system:anonymous";
/// The group of every service account.
pub(crate) const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";

/// An authenticated identity (`user.Info`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// `authentication.k8s.io/v1` `UserInfo`, as reviews carry it: `uid`
    /// and `extra` only when set.
    pub fn to_json(&self) -> serde_json::Value {
        let mut u = serde_json::json!({"username": self.name, "groups": self.groups});
        if !self.uid.is_empty() {
            u["uid"] = serde_json::json!(self.uid);
        }
        if !self.extra.is_empty() {
            u["extra"] = serde_json::json!(self.extra);
        }
        u
    }

    /// The anonymous identity.
    pub fn anonymous() -> Self {
        Self {
            name: ANONYMOUS.to_owned(),
            groups: vec![UNAUTHENTICATED.to_owned()],
            ..Self::default()
        }
    }

    /// A service account's identity: user
    /// `system:serviceaccount:NS:NAME` in `system:serviceaccounts` and
    /// `system:serviceaccounts:NS`.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        Self {
            name: service_account_user(namespace, name),
            uid: uid.to_owned(),
            groups: vec![
                SERVICE_ACCOUNTS.to_owned(),
                format!("{SERVICE_ACCOUNTS}:{namespace}"),
            ],
            extra: BTreeMap::new(),
        }
    }

    /// Appends `system:authenticated` as kube-apiserver's
    /// `AuthenticatedGroupAdder` does: not for the anonymous user, nor for
    /// an identity that already claims either implicit group.
    pub fn with_authenticated_group(mut self) -> Self {
        let has_implicit = self
            .groups
            .iter()
            .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED);
        if self.name != ANONYMOUS && !has_implicit {
            self.groups.push(AUTHENTICATED.to_owned());
        }
        self
    }

    /// Whether the identity is in `system:masters`.
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }
}

/// `system:serviceaccount:NS:NAME`.
pub(crate) fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}
