//! RoleBindings: namespaced, a binding: the roleRef and subjects' API groups defaulted, a required roleRef, the `ROLE` row.

use k8s_openapi::api::rbac::v1::RoleBinding;

use crate::machinery::util::NameRule;
use crate::registry::strategy::{builtin, Builtin, Defaults};

pub(crate) static ROLEBINDING: Builtin = Builtin {
    printer: super::BINDING_PRINTER,
    defaults: Defaults::fields(super::binding_defaults),
    validate: super::validate_binding,
    create_on_update: true,
    name_rule: NameRule::Rbac,
    ..builtin::<RoleBinding>(super::RBAC_GROUP, "rolebindings", "RoleBinding")
};
