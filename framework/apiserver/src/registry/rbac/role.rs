//! Roles: namespaced, rules only: no defaults, the default printer.

use k8s_openapi::api::rbac::v1::Role;

use crate::machinery::util::NameRule;
use crate::registry::strategy::{builtin, Builtin};

pub(crate) static ROLE: Builtin = Builtin {
    create_on_update: true,
    name_rule: NameRule::Rbac,
    ..builtin::<Role>(super::RBAC_GROUP, "roles", "Role")
};
