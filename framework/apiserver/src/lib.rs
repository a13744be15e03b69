//! An in-process Kubernetes API server for tests and development.
//!
//! [`ApiServer::start`] serves HTTPS on `127.0.0.1` with a freshly generated
//! CA and a random bearer token, speaking kube-apiserver's wire protocol:
//! discovery (legacy and aggregated), CRUD with resourceVersion semantics,
//! list/watch with selectors, pagination and bookmarks, status and scale
//! subresources, finalizers, merge, JSON and strategic merge patches,
//! server-side apply with managed fields, CRD registration and validation,
//! custom resources pruned, defaulted and validated (CEL included) against
//! their schemas, `/openapi/v3` documents, Table output, an ownerReference
//! garbage collector and namespace deletion. [`Faults`] injects failures so
//! a client's recovery is tested, not assumed.
//!
//! It depends on no client library: any client that reads a kubeconfig
//! (kube-rs, client-go, kubectl, the Python client) talks to it as to a
//! cluster, and it shares no code, and so no bugs, with the clients it
//! tests.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kubeforge_apiserver::Error> {
//! use kubeforge_apiserver::{ApiServer, Failure, RequestMatch};
//!
//! let server = ApiServer::builder().watch_history(1_000).start().await?;
//! let kubeconfig = server.kubeconfig()?; // URL, CA and token, as YAML
//! // Make the next list of configmaps fail with 429 and Retry-After: 1.
//! server.faults().fail_next(
//!     1,
//!     RequestMatch::verb("list").resource("configmaps"),
//!     Failure::TooManyRequests { retry_after_seconds: 1 },
//! );
//! # let _ = kubeconfig;
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! The modules follow a request down, and each reaches only below itself:
//!
//! - [`server`](ApiServer): the listener, TLS and lifecycle; the
//!   [`Faults`] handle; kubeconfig writing.
//! - `handlers`: routing and one module per verb group; `watch` streams;
//!   `discovery`, `table` (kubectl's Table output) and `apidocs` (the
//!   `/openapi/v3` documents, built by `openapi`) answer reads.
//! - `gc`: the in-server controllers (garbage collector, namespace and CRD
//!   finalization), which write through the same path as requests.
//! - `objects`: write semantics (create, update, delete, preconditions),
//!   calling `admission` (where `schema` validation, pruning, defaulting
//!   and CEL, and `patch` plug in), `defaults` and `validation` for
//!   built-in kinds, and `crds` (serving a CRD's resource once it is
//!   written).
//! - `state`: what every request and controller shares.
//! - The engine below: `storage` (objects, history, watchers),
//!   `registry` (built-ins, CRDs, storage conversions), `selectors`,
//!   `faults` (the rules), `http` (negotiation, bodies), `protobuf`
//!   (request bodies kubectl sends that way), `status` (errors as
//!   `Status`), `util`.

mod admission;
mod apidocs;
mod crds;
mod defaults;
mod discovery;
mod faults;
mod gc;
mod handlers;
mod http;
mod objects;
mod openapi;
mod patch;
mod protobuf;
mod registry;
mod routing;
mod schema;
mod selectors;
mod server;
mod state;
mod status;
mod storage;
mod table;
mod util;
mod validation;
mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use faults::{Failure, RequestMatch};
pub use server::kubeconfig::CONTEXT as KUBECONFIG_CONTEXT;
pub use server::{ApiServer, ApiServerBuilder, Faults};
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
