//! An in-process Kubernetes API server for tests and demos (feature
//! `testing`).
//!
//! [`ApiServer::start`] serves HTTPS on `127.0.0.1` with a freshly generated
//! CA and a random bearer token, speaking kube-apiserver's wire protocol:
//! discovery (legacy and aggregated), CRUD with resourceVersion semantics,
//! list/watch with selectors, pagination and bookmarks, status and scale
//! subresources, finalizers, merge, JSON and strategic merge patches,
//! server-side apply with managed fields, CRD registration and validation,
//! custom resources pruned, defaulted and validated (CEL included) against
//! their schemas, `/openapi/v3` documents, Table output, an ownerReference
//! garbage collector and namespace deletion. [`Faults`] injects failures so a runtime's recovery is tested,
//! not assumed. It shares no code with the client it tests.
//!
//! Layout: [`server`](ApiServer) (listener, TLS, lifecycle), `routing`,
//! `http` (negotiation, bodies), `handlers` (one module per verb group),
//! `objects` (write semantics), `storage` (objects, history, watchers),
//! `watch` (streams), `selectors`, `registry` (built-ins, CRDs, shared
//! storage conversions), `defaults` and `validation` (built-in kinds),
//! `protobuf` (request bodies kubectl sends that way), `discovery`, `table`,
//! `gc` and `crds` (the controllers), `admission` (where `schema` and
//! `patch` plug into writes), `openapi` and `apidocs` (the OpenAPI v3
//! documents and their cache), `faults`, `kubeconfig`, `tls`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kubeforge::testing::Error> {
//! use kubeforge::testing::{ApiServer, Failure, RequestMatch};
//!
//! let server = ApiServer::builder().watch_history(1_000).start().await?;
//! let config = server.config(); // URL, CA and token for a client
//! // Make the next list of configmaps fail with 429 and Retry-After: 1.
//! server.faults().fail_next(
//!     1,
//!     RequestMatch::verb("list").resource("configmaps"),
//!     Failure::TooManyRequests { retry_after_seconds: 1 },
//! );
//! # let _ = config;
//! # Ok(())
//! # }
//! ```

mod admission;
mod apidocs;
mod client;
mod crds;
mod defaults;
mod discovery;
mod faults;
mod gc;
mod handlers;
mod http;
mod kubeconfig;
mod objects;
pub mod openapi;
pub mod patch;
pub mod protobuf;
mod registry;
mod routing;
pub mod schema;
mod selectors;
mod server;
mod status;
mod storage;
mod table;
mod tls;
mod util;
mod validation;
mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use faults::{Failure, Faults, RequestMatch};
pub use kubeconfig::CONTEXT as KUBECONFIG_CONTEXT;
pub use server::{ApiServer, ApiServerBuilder};
pub use status::Cause;

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
    /// The server rejected an object (the `Status` message).
    #[error("rejected: {0}")]
    Rejected(String),
    /// `#[derive(CustomResource)]` could not build the CRD to install.
    #[error("cannot build the CRD: {0}")]
    Crd(#[from] crate::crd::CrdError),
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
