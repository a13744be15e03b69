//! `--embedded`: kubeforge's in-process API server, started inside the
//! operator with the Memcached CRD installed, so the operator (and
//! `kubectl`, through a written kubeconfig) runs without a cluster.
//!
//! The server is real HTTPS on the address asked for, with a fresh CA and
//! bearer token each start; it keeps objects in memory, so each start is an
//! empty cluster. It runs the workload controllers and three simulated
//! nodes, so the Deployment the operator creates gets pods that start and
//! become ready, and the Memcached becomes Available.

use std::net::SocketAddr;

use kubeforge::testing::{ApiServer, ApiServerExt, Workloads};

use crate::{Error, Memcached};

/// Starts the API server on `listen` and installs the Memcached CRD (its
/// resource is served when this returns).
pub async fn start(listen: SocketAddr) -> Result<ApiServer, Error> {
    let server = ApiServer::builder()
        .bind(listen)
        .workloads(Workloads::new())
        .start()
        .await?;
    install_crd(&server)?;
    Ok(server)
}

/// Installs (or updates) the Memcached CRD on `server`.
pub fn install_crd(server: &ApiServer) -> Result<(), Error> {
    server.install_crd_for::<Memcached>()?;
    Ok(())
}
