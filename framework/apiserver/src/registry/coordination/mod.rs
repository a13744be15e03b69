//! The `coordination.k8s.io/v1` group.

pub(crate) mod lease;
