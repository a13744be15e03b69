//! The RBAC decision for a request against the server's current RBAC
//! objects: `system:masters` is allowed everything, as kube-apiserver's
//! privileged-group authorizer allows it; anyone else is decided by the
//! authorizer's index, rebuilt after RBAC writes.

use super::attributes::Attributes;
use super::rbac::{self, Decision};
use super::user::UserInfo;
use crate::state::Shared;

/// Decides a request against the server's RBAC objects.
pub(crate) fn authorize(shared: &Shared, user: &UserInfo, attrs: &Attributes) -> Decision {
    if user.is_master() {
        return Decision::Allow(String::new());
    }
    rbac::decide(&shared.rbac.index(&shared.storage), user, attrs)
}
