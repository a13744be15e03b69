//! The Rust API for identities other than the admin: static token users,
//! client-certificate users signed by the server's CA (envtest's
//! `AddUser`), and service accounts with TokenRequest tokens, each handed
//! out as [`Credentials`] that render a kubeconfig.

use std::time::Duration;

use serde_json::json;

use super::{random_token, ApiServer};
use crate::auth::{certs, tokens, User};
use crate::machinery::error::Error;
use crate::objects::{self, WriteOpts};
use crate::server::credentials::Credentials;

impl ApiServer {
    fn server_url(&self) -> String {
        self.url.to_string().trim_end_matches('/').to_owned()
    }

    /// Adds a user that authenticates with a new random bearer token (a
    /// line of kube-apiserver's `--token-auth-file`), and returns its
    /// credentials. What it may do is up to RBAC.
    pub fn add_user(&self, user: &User) -> Result<Credentials, Error> {
        let token = random_token()?;
        self.shared.authn.add_token(token.clone(), user.info());
        super::identity::save_token_users(&self.shared.storage, &self.shared.authn)?;
        Ok(Credentials::token(
            user.name(),
            &self.server_url(),
            &self.ca_pem,
            token,
        ))
    }

    /// Issues a client certificate for `user` signed by the server's CA:
    /// CN the user name, one O per group, as envtest's `AddUser` does.
    pub fn add_certificate_user(&self, user: &User) -> Result<Credentials, Error> {
        let (cert_pem, key_pem) = certs::issue(&self.shared.authn.ca, user.name(), user.groups())?;
        Ok(Credentials::certificate(
            user.name(),
            &self.server_url(),
            &self.ca_pem,
            cert_pem,
            key_pem,
        ))
    }

    /// Creates the ServiceAccount `namespace/name` if it does not exist
    /// (the namespace must) and returns credentials holding a one-hour
    /// token for it, as `kubectl create token` would get.
    pub fn add_service_account(&self, namespace: &str, name: &str) -> Result<Credentials, Error> {
        let lifetime = Duration::from_secs(tokens::DEFAULT_EXPIRATION_SECS.unsigned_abs());
        self.add_service_account_for(namespace, name, lifetime)
    }

    /// [`add_service_account`](Self::add_service_account) with a token
    /// valid for `lifetime` (a long-running dev server wants more than the
    /// TokenRequest default of an hour).
    pub fn add_service_account_for(
        &self,
        namespace: &str,
        name: &str,
        lifetime: Duration,
    ) -> Result<Credentials, Error> {
        let def = self
            .shared
            .registry()
            .get("", "v1", "serviceaccounts")
            .ok_or_else(|| Error::Rejected("serviceaccounts are not served".into()))?;
        let sa = json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace},
        });
        let opts = WriteOpts::internal(&def, "kubeforge");
        match objects::create(&self.shared, &def, Some(namespace), sa, &opts) {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(Error::Rejected(e.message)),
        }
        // The token names the account, which a crash must not lose.
        self.shared.storage.sync()?;
        let token = self.service_account_token(namespace, name, lifetime)?;
        Ok(Credentials::token(
            &crate::auth::service_account_user(namespace, name),
            &self.server_url(),
            &self.ca_pem,
            token,
        ))
    }

    /// A token for the existing ServiceAccount `namespace/name`, valid for
    /// `lifetime` (unlike the TokenRequest API, shorter than ten minutes is
    /// allowed, for tests of expiry).
    pub fn service_account_token(
        &self,
        namespace: &str,
        name: &str,
        lifetime: Duration,
    ) -> Result<String, Error> {
        let secs = i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX);
        tokens::issue(&*self.shared, namespace, name, Vec::new(), secs)
            .map(|(token, _)| token)
            .map_err(|e| Error::Rejected(e.message))
    }
}
