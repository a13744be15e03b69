//! Derive macros for kubeforge. Generated code names only `::kubeforge::...`
//! paths, so a user's crate depends on `kubeforge` and `serde` alone.
