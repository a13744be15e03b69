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
//! Ten wings along kube-apiserver's seams, so a behaviour is found by the
//! folder's name. Each reaches only the wings listed after it (the
//! workspace's layering test holds this order):
//!
//! - [`server`](ApiServer): the listener, TLS and lifecycle, the
//!   kubeconfig, the [`Faults`] handle, the bootstrap objects (system
//!   namespaces, default RBAC) written at start.
//! - `http`: routing, authorization attributes, the handlers of each verb,
//!   negotiation and bodies, the JSON, YAML, protobuf and Table encodings,
//!   watch streaming, discovery (kube-apiserver's `endpoints`).
//! - `controllers`: what kube-controller-manager runs (garbage collector,
//!   namespace and CRD finalization, default ServiceAccounts, the workload
//!   controllers) and the simulated nodes and their kubelets, writing
//!   through the same path as requests.
//! - `objects`: the generic write path (create, update, delete, graceful
//!   deletion, finalizers, preconditions) and the hooks that keep the
//!   served resources in step with what is written (CRDs, RBAC).
//! - `admission`: mutating and validating webhooks, admission policies and
//!   the built-in admission plugins.
//! - `registry`: what is served, kind by kind: one module per group and
//!   one file per built-in kind (`registry/apps/deployment.rs`) holding
//!   everything particular to it (discovery, defaults, validation, name
//!   rule, field selectors, printer columns), the list of them, custom
//!   resources, conversion between versions, the OpenAPI documents, and
//!   `Shared`, the state every request and controller sees.
//! - `auth`: authentication (tokens, certificates, service-account JWTs),
//!   authorization (RBAC), impersonation, audit.
//! - `apiextensions`: CRD schemas: structural checks, pruning, defaulting,
//!   validation and CEL.
//! - `storage`: objects, resourceVersions, watch history, watchers.
//! - `machinery`: errors as `Status`, selectors, patches, fault rules, the
//!   webhook client, the write threads, small helpers.

// No function over 150 lines (clippy.toml sets the limit): data is tables, logic is named steps.
#![deny(clippy::too_many_lines)]

mod admission;
mod apiextensions;
mod auth;
mod controllers;
mod http;
mod machinery;
mod objects;
mod registry;
mod server;
mod storage;

pub use auth::audit::{AuditRule, AuditedRequest, PermissionAudit, PolicyRule, UnusedVerbs};
pub use auth::User;
pub use controllers::config::{
    PodBehavior, PodPolicy, Readiness, SimNode, SimulatedNodes, Workloads, ANNOTATION_EXIT_AFTER,
    ANNOTATION_EXIT_CODE, ANNOTATION_IMAGE_PULL, ANNOTATION_READY, ANNOTATION_START_LATENCY,
};
pub use machinery::error::Error;
pub use machinery::faults::{Failure, RequestMatch};
pub use machinery::status::Cause;
pub use server::credentials::Credentials;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use server::fuzzing;
pub use server::kubeconfig::CONTEXT as KUBECONFIG_CONTEXT;
pub use server::{ApiServer, ApiServerBuilder, Faults};
