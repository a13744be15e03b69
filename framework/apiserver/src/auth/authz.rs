//! The RBAC decision for a request against the server's current RBAC
//! objects: `system:masters` is allowed everything, as kube-apiserver's
//! privileged-group authorizer allows it; anyone else is decided by the
//! authorizer's index, rebuilt after RBAC writes. [`check`] also counts the
//! decision in the permission audit; [`authorize`] (access reviews, which
//! ask about someone without being their request) does not.
//! [`CreateAuthorized`] is the second authorization of an update or an
//! apply that creates its object.

use super::audit::Outcome;
use super::rbac::{self, Decision};
use super::user::UserInfo;
use crate::auth::attributes::Attributes;
use crate::auth::AuthState;
use crate::machinery::status::{qualified, ApiError, Details};

/// Decides a request against the server's RBAC objects.
pub(crate) fn authorize(shared: &dyn AuthState, user: &UserInfo, attrs: &Attributes) -> Decision {
    if user.is_master() {
        return Decision::Allow(String::new());
    }
    rbac::decide(&shared.rbac().index(shared.storage()), user, attrs)
}

/// [`authorize`] for a request `user` makes, recorded in the permission
/// audit with the rule that allowed it.
pub(crate) fn check(shared: &dyn AuthState, user: &UserInfo, attrs: &Attributes) -> Decision {
    if user.is_master() {
        shared.audit().record(user, attrs, Outcome::Allowed(None));
        return Decision::Allow(String::new());
    }
    let index = shared.rbac().index(shared.storage());
    match rbac::allowing(&index, user, attrs) {
        Some(by) => {
            shared
                .audit()
                .record(user, attrs, Outcome::Allowed(Some(by)));
            rbac::allowed_by(by.0, user)
        }
        None => {
            shared.audit().record(user, attrs, Outcome::Denied);
            rbac::denied(&index, user, attrs)
        }
    }
}

/// kube-apiserver's `withAuthorization` around the create validation of a
/// write that creates its object although it is not a create: a PUT of a
/// missing object of a kind that creates on update (`handlers/update.go`)
/// and a server-side apply of a missing object (`handlers/patch.go`). The
/// request was authorized for `update` or `patch`; the create is
/// authorized for `create` as well, as a request of the same user (so the
/// permission audit counts it). Denied, it is `NewForbidden` of the object
/// with the authorizer's reason.
pub(crate) fn check_create(
    shared: &dyn AuthState,
    user: &UserInfo,
    group: &str,
    resource: &str,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    let attrs = Attributes {
        verb: "create".to_owned(),
        resource_request: true,
        namespace: namespace.to_owned(),
        api_group: group.to_owned(),
        resource: resource.to_owned(),
        name: name.to_owned(),
        ..Attributes::default()
    };
    match check(shared, user, &attrs) {
        Decision::Allow(_) => Ok(()),
        Decision::Deny(reason) => {
            let what = qualified(resource, group);
            Err(
                ApiError::forbidden(format!("{what} \"{name}\" is forbidden: {reason}"))
                    .with_details(Details {
                        name: Some(name.to_owned()),
                        group: Some(group.to_owned()),
                        kind: Some(resource.to_owned()),
                        ..Details::default()
                    }),
            )
        }
    }
}
