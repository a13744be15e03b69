//! The filters every request passes before its handler, in
//! kube-apiserver's order (`DefaultBuildHandlerChain`): authentication,
//! impersonation, authorization.

use std::sync::Arc;

use http::request::Parts;

use crate::auth::{authn, authz, impersonation, rbac, UserInfo};
use crate::http::wire::Query;
use crate::machinery::status::ApiError;
use crate::registry::state::Shared;

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
    let attrs = crate::http::attributes::from_request(&parts.method, parts.uri.path(), query);
    if let rbac::Decision::Deny(reason) = authz::check(shared, &user, &attrs) {
        return Err(crate::auth::attributes::forbidden(&user, &attrs, &reason));
    }
    parts.extensions.insert(user.clone());
    Ok(user)
}
