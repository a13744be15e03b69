//! The `apiextensions.k8s.io/v1` group's one built-in kind; what a CRD
//! makes served lives in [`super::crd`] and the crate's `apiextensions`
//! wing.

pub(crate) mod customresourcedefinition;
