//! `memcached-operator`: kubeforge's standard operator command line —
//! `run` (the default: against a cluster, or with `--embedded` on the
//! in-process API server with a sample Memcached) and `manifests` (the CRD
//! and RBAC its code defines) — plus its own `--resync-period` and
//! `--max-concurrent-reconciles`.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    memcached_operator::app().run().await
}
