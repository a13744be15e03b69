//! The `policy/v1` group.

pub(crate) mod poddisruptionbudget;
