//! [`Error`]: why the server could not start, write its kubeconfig or
//! install an object it was handed.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the server could not start or write its kubeconfig.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listen address could not be bound.
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, #[source] std::io::Error),
    /// The server's URL could not be formed from the bound address.
    #[error("invalid server address: {0}")]
    Address(String),
    /// Certificate generation or TLS setup failed.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// The kubeconfig could not be rendered.
    #[error("cannot render kubeconfig: {0}")]
    Kubeconfig(String),
    /// A file could not be written.
    #[error("cannot write {0}: {1}")]
    Io(PathBuf, #[source] std::io::Error),
    /// An image mapped to an executable cannot run: the message says the
    /// rule broken and gives a valid mapping.
    #[error("{0}")]
    Image(String),
    /// The server rejected an object (the `Status` message).
    #[error("rejected: {0}")]
    Rejected(String),
    /// The data directory cannot be used: locked by another server,
    /// written by another format, corrupt or unreadable. The message names
    /// the directory and what to do.
    #[error("{0}")]
    DataDir(String),
    /// An object to install did not serialize to JSON.
    #[error("cannot encode {what} as JSON: {source}")]
    Json {
        /// What was being encoded.
        what: &'static str,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
}
