//! The identities a data directory keeps, so kubeconfigs written before a
//! restart keep working: the CA (its certificate and key; the serving
//! certificate is signed anew by it at each start), the admin token, the
//! static token users (`--user`), and the service-account signing key (so
//! issued tokens verify until they expire). Client-certificate users need
//! nothing more: the kept CA still vouches for them.

use serde_json::{json, Value};

use super::tls::KeptCa;
use crate::auth::identities::AuthnState;
use crate::auth::user::UserInfo;
use crate::machinery::error::Error;
use crate::storage::durable::DataDir;
use crate::storage::Storage;

const CA_DER: &str = "identity/ca.der";
const CA_PEM: &str = "identity/ca.pem";
const CA_KEY: &str = "identity/ca-key.pem";
const ADMIN_TOKEN: &str = "identity/admin-token";
const SERVICE_ACCOUNT_KEY: &str = "identity/service-account-key.pkcs8";
const TOKEN_USERS: &str = "identity/token-users";

/// What a data directory held of the identities; all `None` (and no
/// users) when it is new.
#[derive(Default)]
pub(crate) struct Kept {
    pub ca: Option<KeptCa>,
    pub admin_token: Option<String>,
    pub service_account_key: Option<Vec<u8>>,
    pub token_users: Vec<(String, UserInfo)>,
}

impl Kept {
    /// Reads what `dir` holds.
    pub fn read(dir: &DataDir) -> Result<Self, Error> {
        let ca = match (
            dir.meta(CA_DER)?,
            dir.meta_text(CA_PEM)?,
            dir.meta_text(CA_KEY)?,
        ) {
            (Some(der), Some(pem), Some(key_pem)) => Some(KeptCa { der, pem, key_pem }),
            _ => None,
        };
        let token_users = match dir.meta(TOKEN_USERS)? {
            None => Vec::new(),
            Some(b) => decode_users(&b)
                .ok_or_else(|| dir.corrupt(format!("{TOKEN_USERS} does not parse")))?,
        };
        Ok(Self {
            ca,
            admin_token: dir.meta_text(ADMIN_TOKEN)?,
            service_account_key: dir.meta(SERVICE_ACCOUNT_KEY)?,
            token_users,
        })
    }

    /// Writes the identities of a new directory (a no-op for ones it
    /// already held).
    pub fn write_new(
        &self,
        dir: &DataDir,
        ca: &KeptCa,
        admin_token: &str,
        service_account_key: &[u8],
    ) -> Result<(), Error> {
        let mut entries: Vec<(&str, &[u8])> = Vec::new();
        if self.ca.is_none() {
            entries.push((CA_DER, &ca.der));
            entries.push((CA_PEM, ca.pem.as_bytes()));
            entries.push((CA_KEY, ca.key_pem.as_bytes()));
        }
        if self.admin_token.is_none() {
            entries.push((ADMIN_TOKEN, admin_token.as_bytes()));
        }
        if self.service_account_key.is_none() {
            entries.push((SERVICE_ACCOUNT_KEY, service_account_key));
        }
        if entries.is_empty() {
            return Ok(());
        }
        dir.put_meta(&entries)
    }
}

/// Keeps the static token users after one was added.
pub(crate) fn save_token_users(storage: &Storage, authn: &AuthnState) -> Result<(), Error> {
    let users: Vec<Value> = authn
        .token_users()
        .into_iter()
        .map(|(token, u)| {
            json!({"token": token, "name": u.name, "uid": u.uid, "groups": u.groups, "extra": u.extra})
        })
        .collect();
    let bytes = serde_json::to_vec(&users).map_err(|source| Error::Json {
        what: "token users",
        source,
    })?;
    storage.put_meta(vec![(TOKEN_USERS.to_owned(), bytes)])
}

fn decode_users(bytes: &[u8]) -> Option<Vec<(String, UserInfo)>> {
    let users: Vec<Value> = serde_json::from_slice(bytes).ok()?;
    users
        .into_iter()
        .map(|u| {
            let token = u.get("token")?.as_str()?.to_owned();
            let user = UserInfo {
                name: u.get("name")?.as_str()?.to_owned(),
                uid: u.get("uid")?.as_str()?.to_owned(),
                groups: serde_json::from_value(u.get("groups")?.clone()).ok()?,
                extra: serde_json::from_value(u.get("extra")?.clone()).ok()?,
            };
            Some((token, user))
        })
        .collect()
}
