//! Authentication, in kube-apiserver's order: a verified client
//! certificate, then a bearer token (the admin token, a static token user,
//! a service-account JWT re-checked against its ServiceAccount), and, when
//! the server allows it, anonymous. A credential that is present but not
//! valid is a 401, never anonymous (`union.NewFailOnError`).

use std::sync::Arc;

use http::header;
use http::request::Parts;

use super::certs::PeerIdentity;
use super::jwt::{LiveAccount, Signer, TokenSubject};
use super::user::UserInfo;
use crate::auth::AuthState;
use crate::machinery::status::ApiError;
use crate::storage::ResKey;

/// The presented bearer token: `None` without an `Authorization` header
/// or with another scheme (kube-apiserver ignores those, so they fall to
/// anonymous), `Some("")` for an empty bearer token.
fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn now_secs() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// The service account `subject` if it still exists with the token's uid
/// and is not being deleted. The first request that finds it live
/// remembers the account's version and identity with the subject, and
/// later requests bearing the token reuse them without the storage lock
/// for as long as that version is current (a write to the account, or its
/// deletion, sends them back to the store).
fn live_service_account(shared: &dyn AuthState, subject: &TokenSubject) -> Option<Arc<UserInfo>> {
    if let Some(live) = subject.live.get() {
        if !live.version.is_replaced() {
            return Some(live.user.clone());
        }
    }
    let res = ResKey::new("", "serviceaccounts");
    let key = (subject.namespace.clone(), subject.name.clone());
    let sa = shared.storage().lock().get(&res, &key)?;
    if sa.uid() != subject.uid || sa.deleting() {
        return None;
    }
    let user = UserInfo::service_account(&subject.namespace, &subject.name, &subject.uid);
    let user = Arc::new(user.with_authenticated_group());
    // Only the first version found is remembered: after a write to the
    // account, requests go to the store until the token is verified again.
    let _ = subject.live.set(LiveAccount {
        version: sa,
        user: user.clone(),
    });
    Some(user)
}

/// Who sent the request, or the 401 kube-apiserver answers.
pub(crate) fn authenticate(
    shared: &dyn AuthState,
    parts: &Parts,
) -> Result<Arc<UserInfo>, ApiError> {
    let authn = &shared.authn();
    if let Some(peer) = parts.extensions.get::<PeerIdentity>() {
        match peer {
            PeerIdentity::Verified(user) => return Ok(user.clone()),
            PeerIdentity::Invalid => return Err(ApiError::unauthorized()),
        }
    }
    match bearer(parts) {
        Some(token) if shared.token_matches(token) => Ok(authn.admin.clone()),
        Some(token) => {
            if let Some(user) = authn.static_user(token) {
                return Ok(user);
            }
            if Signer::looks_like_jwt(token) {
                // Verified from the cache when recently seen; the account
                // is checked on every request, so deleting it is a 401 at
                // once.
                let subject = authn.signer.authenticate(token, now_secs());
                if let Some(user) = subject.and_then(|s| live_service_account(shared, &s)) {
                    return Ok(user);
                }
            }
            Err(ApiError::unauthorized())
        }
        None if authn.anonymous => Ok(Arc::new(UserInfo::anonymous())),
        None => Err(ApiError::unauthorized()),
    }
}
