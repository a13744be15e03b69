//! Admission, in one place: the attributes of a write under admission,
//! the mutating and validating webhooks and admission policies, and the
//! built-in admission plugins (RBAC escalation checks,
//! OwnerReferencesPermissionEnforcement, DefaultTolerationSeconds).

pub(crate) mod attributes;
pub(crate) mod escalation;
pub(crate) mod owner_refs;
pub(crate) mod tolerations;
pub(crate) mod webhooks;
