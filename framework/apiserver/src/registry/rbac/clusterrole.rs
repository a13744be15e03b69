//! ClusterRoles: cluster-scoped, rules only: no defaults, the default printer.

use k8s_openapi::api::rbac::v1::ClusterRole;

use crate::machinery::util::NameRule;
use crate::registry::strategy::{builtin, Builtin};

pub(crate) static CLUSTERROLE: Builtin = Builtin {
    namespaced: false,
    create_on_update: true,
    name_rule: NameRule::Rbac,
    ..builtin::<ClusterRole>(super::RBAC_GROUP, "clusterroles", "ClusterRole")
};
