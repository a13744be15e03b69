//! What a verified service-account token names, and the clock leeway its
//! times are checked with: shared by the verifier and its cache.

use std::sync::{Arc, OnceLock};

use crate::auth::user::UserInfo;
use crate::storage::StoredObject;

/// go-jose's default leeway on `exp`, `nbf` and `iat`.
pub(crate) const LEEWAY_SECS: i64 = 60;

/// The service account a valid token names. Two subjects are equal when
/// they name the same account; the memo is not compared.
#[derive(Clone, Debug)]
pub(crate) struct TokenSubject {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// The account as the authenticator first found it live for this
    /// verification: set once, and trusted while its version is current.
    pub live: OnceLock<LiveAccount>,
}

/// A ServiceAccount version found live for a token, and the identity the
/// token authenticates as while that version stays current.
#[derive(Clone, Debug)]
pub(crate) struct LiveAccount {
    pub version: Arc<StoredObject>,
    pub user: Arc<UserInfo>,
}

impl TokenSubject {
    pub fn new(namespace: String, name: String, uid: String) -> Self {
        Self {
            namespace,
            name,
            uid,
            live: OnceLock::new(),
        }
    }
}

impl PartialEq for TokenSubject {
    fn eq(&self, other: &Self) -> bool {
        (&self.namespace, &self.name, &self.uid) == (&other.namespace, &other.name, &other.uid)
    }
}

impl Eq for TokenSubject {}
