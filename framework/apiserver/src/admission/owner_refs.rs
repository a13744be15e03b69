//! kube-apiserver's `OwnerReferencesPermissionEnforcement` admission
//! (`plugin/pkg/admission/gc/gc_admission.go`), when the server is built
//! with it (OpenShift enables it; upstream leaves it off): changing an
//! object's `ownerReferences` needs `delete` on the object (except on
//! create), and a new reference with `blockOwnerDeletion: true` needs
//! `update` on the owner's `finalizers` subresource, the reason operators
//! are granted `<kind>/finalizers`. Both checks are authorizations of the
//! requester, so the permission audit counts them.

use serde_json::Value;

use crate::admission::attributes::{Attributes, Operation};
use crate::auth::attributes::Attributes as AuthzAttributes;
use crate::auth::rbac::Decision;
use crate::auth::UserInfo;
use crate::machinery::status::{qualified, ApiError};
use crate::registry::state::Shared;

fn owner_refs(object: Option<&Value>) -> &[Value] {
    object
        .and_then(|o| o.pointer("/metadata/ownerReferences"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn blocking(r: &Value) -> bool {
    r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
}

/// The references in `new` that block their owner's deletion and did not
/// in `old` (same uid), as `newBlockingOwnerDeletionRefs` finds them.
fn new_blocking_refs<'a>(new: &'a [Value], old: &[Value]) -> Vec<&'a Value> {
    new.iter()
        .filter(|r| blocking(r))
        .filter(|r| {
            let uid = r.get("uid");
            !old.iter().any(|o| o.get("uid") == uid && blocking(o))
        })
        .collect()
}

fn forbidden(attrs: &Attributes<'_>, why: &str, reason: &str) -> ApiError {
    // `admission.NewForbidden`: the object's resource and name, then the
    // plugin's error, whose authorizer error is always nil here.
    ApiError::forbidden(format!(
        "{} \"{}\" is forbidden: {why}: {reason}, <nil>",
        qualified(&attrs.def.plural, &attrs.def.group),
        attrs.name
    ))
}

/// Runs the plugin's checks on a create or update of `object`.
pub(crate) fn check(
    shared: &Shared,
    user: &UserInfo,
    attrs: &Attributes<'_>,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if !shared.options.owner_references_permission_enforcement
        || !matches!(attrs.operation, Operation::Create | Operation::Update)
    {
        return Ok(());
    }
    let new = owner_refs(Some(object));
    let old = owner_refs(old);
    if new == old {
        return Ok(());
    }
    let resource = |verb: &str, group: &str, plural: &str, sub: &str, name: &str| AuthzAttributes {
        verb: verb.to_owned(),
        resource_request: true,
        namespace: attrs.namespace.to_owned(),
        api_group: group.to_owned(),
        resource: plural.to_owned(),
        subresource: sub.to_owned(),
        name: name.to_owned(),
        ..AuthzAttributes::default()
    };
    if attrs.operation != Operation::Create {
        let delete = resource(
            "delete",
            &attrs.def.group,
            &attrs.def.plural,
            "",
            attrs.name,
        );
        if let Decision::Deny(reason) = crate::auth::authz::check(shared, user, &delete) {
            let why = "cannot set an ownerRef on a resource you can't delete";
            return Err(forbidden(attrs, why, &reason));
        }
    }
    for r in new_blocking_refs(new, old) {
        let api_version = r.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = r.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let Some(owner) = shared.registry().by_kind(group, version, kind) else {
            return Err(ApiError::forbidden(format!(
                "{} \"{}\" is forbidden: cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion {api_version} Kind {kind}",
                qualified(&attrs.def.plural, &attrs.def.group),
                attrs.name
            )));
        };
        let mut finalizers = resource("update", &owner.group, &owner.plural, "finalizers", name);
        if !owner.namespaced {
            finalizers.namespace.clear();
        }
        if let Decision::Deny(reason) = crate::auth::authz::check(shared, user, &finalizers) {
            let why = "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on";
            return Err(forbidden(attrs, why, &reason));
        }
    }
    Ok(())
}
