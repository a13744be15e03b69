//! ClusterRoleBindings: cluster-scoped, a binding: the roleRef and subjects' API groups defaulted, a required roleRef, the `ROLE` row.

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;

use crate::machinery::util::NameRule;
use crate::registry::strategy::{builtin, Builtin, Defaults};

pub(crate) static CLUSTERROLEBINDING: Builtin = Builtin {
    namespaced: false,
    printer: super::BINDING_PRINTER,
    defaults: Defaults::fields(super::binding_defaults),
    validate: super::validate_binding,
    create_on_update: true,
    name_rule: NameRule::Rbac,
    ..builtin::<ClusterRoleBinding>(
        super::RBAC_GROUP,
        "clusterrolebindings",
        "ClusterRoleBinding",
    )
};
