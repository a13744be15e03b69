//! The RBAC decision for a request against the server's current RBAC
//! objects: `system:masters` is allowed everything, as kube-apiserver's
//! privileged-group authorizer allows it; anyone else is decided by the
//! authorizer's index, rebuilt after RBAC writes. [`check`] also counts the
//! decision in the permission audit; [`authorize`] (access reviews, which
//! ask about someone without being their request) does not.

use super::attributes::Attributes;
use super::audit::Outcome;
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

/// [`authorize`] for a request `user` makes, recorded in the permission
/// audit with the rule that allowed it.
pub(crate) fn check(shared: &Shared, user: &UserInfo, attrs: &Attributes) -> Decision {
    if user.is_master() {
        shared.audit.record(user, attrs, Outcome::Allowed(None));
        return Decision::Allow(String::new());
    }
    let index = shared.rbac.index(&shared.storage);
    match rbac::allowing(&index, user, attrs) {
        Some(by) => {
            shared.audit.record(user, attrs, Outcome::Allowed(Some(by)));
            rbac::allowed_by(by.0, user)
        }
        None => {
            shared.audit.record(user, attrs, Outcome::Denied);
            rbac::denied(&index, user, attrs)
        }
    }
}
