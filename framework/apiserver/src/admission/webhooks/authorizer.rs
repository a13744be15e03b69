//! The server's authorizer as admission CEL's `authorizer` asks it: RBAC
//! (with `system:masters` allowed everything) for the requesting user, or
//! for a service account the expression names. The checks are questions,
//! like access reviews, so they are not counted in the permission audit.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::admission::attributes::Attributes;
use crate::apiextensions::authz::{Check, Principal, Session, Verdict};
use crate::auth::attributes::Attributes as AuthzAttributes;
use crate::auth::rbac::Decision;
use crate::auth::{authz, UserInfo, AUTHENTICATED, MASTERS};
use crate::registry::state::Shared;

/// A user the server's authorizer is asked about.
struct ServerPrincipal {
    shared: Arc<Shared>,
    user: UserInfo,
}

impl Principal for ServerPrincipal {
    fn authorize(&self, check: &Check) -> Verdict {
        let attrs = AuthzAttributes {
            verb: check.verb.clone(),
            resource_request: check.resource_request,
            namespace: check.namespace.clone(),
            api_group: check.group.clone(),
            api_version: "*".to_owned(),
            resource: check.resource.clone(),
            subresource: check.subresource.clone(),
            name: check.name.clone(),
            path: check.path.clone(),
        };
        match authz::authorize(&*self.shared, &self.user, &attrs) {
            Decision::Allow(reason) => Verdict {
                allowed: true,
                reason,
                error: None,
            },
            Decision::Deny(reason) => Verdict {
                allowed: false,
                reason,
                error: None,
            },
        }
    }

    fn service_account(&self, namespace: &str, name: &str) -> Arc<dyn Principal> {
        Arc::new(ServerPrincipal {
            shared: self.shared.clone(),
            user: UserInfo::service_account(namespace, name, ""),
        })
    }
}

/// The identity of a request that carries none (a server without
/// authentication): the server's admin, as admission reviews name it.
fn admin() -> UserInfo {
    UserInfo {
        name: "kubernetes-admin".to_owned(),
        groups: vec![MASTERS.to_owned(), AUTHENTICATED.to_owned()],
        uid: String::new(),
        extra: BTreeMap::new(),
    }
}

/// The `authorizer` of a request by `user` with `attrs`:
/// `authorizer.requestResource` is the request's group, resource,
/// subresource, namespace and name.
pub(crate) fn session(
    shared: &Arc<Shared>,
    user: Option<&UserInfo>,
    attrs: &Attributes<'_>,
) -> Arc<Session> {
    let principal = ServerPrincipal {
        shared: shared.clone(),
        user: user.cloned().unwrap_or_else(admin),
    };
    let request = Check {
        resource_request: true,
        group: attrs.def.group.clone(),
        resource: attrs.def.plural.clone(),
        subresource: attrs.subresource.unwrap_or("").to_owned(),
        namespace: attrs.namespace.to_owned(),
        name: attrs.name.to_owned(),
        ..Check::default()
    };
    Session::new(Arc::new(principal), request)
}
