//! What the authenticators know, held in the server's state: the static
//! token users added at run time, the admin, the service-account signing
//! key and the client CA. A leaf below the state; the authentication chain
//! that reads it is [`super::authn`].

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use rcgen::{Issuer, KeyPair};

use super::jwt::Signer;
use super::user::{UserInfo, MASTERS};

/// The name of the admin the server's own token authenticates.
pub(crate) const ADMIN: &str = "admin";

/// What the authenticators know: the users added at run time, the
/// service-account signing key, the client CA.
pub(crate) struct AuthnState {
    tokens: RwLock<HashMap<String, Arc<UserInfo>>>,
    pub signer: Signer,
    /// The CA that signs serving and client certificates.
    pub ca: Issuer<'static, KeyPair>,
    pub anonymous: bool,
    pub(super) admin: Arc<UserInfo>,
}

impl AuthnState {
    pub fn new(
        ca: Issuer<'static, KeyPair>,
        signer: Signer,
        anonymous: bool,
    ) -> Result<Self, crate::machinery::error::Error> {
        let admin = UserInfo {
            name: ADMIN.to_owned(),
            groups: vec![MASTERS.to_owned()],
            ..UserInfo::default()
        };
        Ok(Self {
            tokens: RwLock::default(),
            signer,
            ca,
            anonymous,
            admin: Arc::new(admin.with_authenticated_group()),
        })
    }

    /// Adds (or replaces) a static token user.
    pub fn add_token(&self, token: String, user: UserInfo) {
        let user = Arc::new(user.with_authenticated_group());
        self.tokens
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token, user);
    }

    /// Every static token user, to keep in a data directory.
    pub fn token_users(&self) -> Vec<(String, UserInfo)> {
        self.tokens
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(t, u)| (t.clone(), (**u).clone()))
            .collect()
    }

    pub(super) fn static_user(&self, token: &str) -> Option<Arc<UserInfo>> {
        self.tokens
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(token)
            .cloned()
    }
}
