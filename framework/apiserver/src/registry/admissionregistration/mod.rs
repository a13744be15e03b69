//! The admissionregistration.k8s.io kinds' own checks: what a webhook
//! configuration or an admission policy must satisfy to be stored.

pub(crate) mod match_conditions;
pub(crate) mod policy_checks;
pub(crate) mod validate;
