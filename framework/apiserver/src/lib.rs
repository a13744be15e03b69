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
//! - `controllers`: what kube-controller-manager would do (garbage
//!   collector, namespace and CRD finalization, default ServiceAccounts),
//!   writing through the same path as requests.
//! - `objects`: write semantics (create, update, delete, preconditions),
//!   calling `admission` (where `schema` validation, pruning, defaulting
//!   and CEL, and `patch` plug in), `defaults` and `validation` for
//!   built-in kinds, and `crds` (serving a CRD's resource once it is
//!   written).
//! - `state`: what every request and controller shares.
//! - The engine below: `storage` (objects, history, watchers),
//!   `registry` (built-ins, CRDs, storage conversions), `selectors`,
//!   `faults` (the rules), `http` (negotiation, bodies), `protobuf`
//!   (request bodies kubectl sends that way), `decode` (JSON and YAML
//!   bodies, with duplicate keys noted and alias expansion bounded),
//!   `status` (errors as `Status`), `util`, and `work` (the threads
//!   writes and CEL run on, off the runtime's).

mod admission;
mod apidocs;
mod auth;
mod cluster;
mod controllers;
mod conversion;
mod crds;
mod decode;
mod defaults;
mod discovery;
mod error;
mod faults;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
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
mod webhooks;
mod work;

pub use auth::audit::{AuditRule, AuditedRequest, PermissionAudit, PolicyRule, UnusedVerbs};
pub use auth::{Credentials, User};
pub use cluster::{
    PodBehavior, PodPolicy, Readiness, SimNode, SimulatedNodes, Workloads, ANNOTATION_EXIT_AFTER,
    ANNOTATION_EXIT_CODE, ANNOTATION_IMAGE_PULL, ANNOTATION_READY, ANNOTATION_START_LATENCY,
};
pub use error::Error;
pub use faults::{Failure, RequestMatch};
pub use server::kubeconfig::CONTEXT as KUBECONFIG_CONTEXT;
pub use server::{ApiServer, ApiServerBuilder, Faults};
pub use status::Cause;
