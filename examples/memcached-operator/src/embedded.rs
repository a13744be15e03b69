//! `--embedded`: kubeforge's in-process API server, started inside the
//! operator with the Memcached CRD installed, so the operator (and
//! `kubectl`, through a written kubeconfig) runs without a cluster.
//!
//! The server is real HTTPS on the address asked for, with a fresh CA and
//! bearer token each start; it keeps objects in memory, so each start is an
//! empty cluster. It has no Deployment controller: Deployments the
//! operator creates never get pods or a status unless someone writes one.

use std::net::SocketAddr;

use kubeforge::testing::{ApiServer, ApiServerExt};

use crate::{Error, Memcached};

/// Starts the API server on `listen` and installs the Memcached CRD (its
/// resource is served when this returns).
pub async fn start(listen: SocketAddr) -> Result<ApiServer, Error> {
    let server = ApiServer::builder().bind(listen).start().await?;
    install_crd(&server)?;
    Ok(server)
}

/// Installs (or updates) the Memcached CRD on `server`.
pub fn install_crd(server: &ApiServer) -> Result<(), Error> {
    server.install_crd_for::<Memcached>()?;
    Ok(())
}
