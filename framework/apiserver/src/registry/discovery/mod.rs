//! The `discovery.k8s.io/v1` group.

pub(crate) mod endpointslice;
