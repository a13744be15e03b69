//! Nothing to build: this crate's tests (`tests/`) are a kube-rs project's
//! tests, run against `kubeforge-apiserver` with kube-rs as the only client.
