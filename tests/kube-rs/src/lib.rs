//! This crate's tests (`tests/`) are a kube-rs project's tests, run
//! against `kubeforge-apiserver` with kube-rs as the only client; its
//! binary (`src/bin/greeter.rs`) is a kube-rs operator that the in-cluster
//! end-to-end test deploys on the dev server's kubelet.
