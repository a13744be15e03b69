//! What a verified service-account token names, and the clock leeway its
//! times are checked with: shared by the verifier and its cache.

/// go-jose's default leeway on `exp`, `nbf` and `iat`.
pub(crate) const LEEWAY_SECS: i64 = 60;

/// The service account a valid token names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TokenSubject {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}
