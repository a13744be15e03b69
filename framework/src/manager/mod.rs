//! The manager: one shared cache for every controller, leader election,
//! health, readiness and metrics endpoints, and graceful shutdown
//! (controller-runtime's `Manager`).
//!
//! ```no_run
//! use std::sync::Arc;
//! use kubeforge::prelude::*;
//! use kubeforge::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//!
//! async fn reconcile(d: Arc<Deployment>, ctx: Arc<Context<()>>) -> Result<Action, kubeforge::controller::Error> {
//!     Ok(Action::requeue_after(Duration::from_secs(300)))
//! }
//!
//! # async fn demo() -> Result<(), kubeforge::manager::Error> {
//! let mgr = Manager::builder().leader_election("deployment-watcher").build().await?;
//! mgr.controller::<Deployment>()
//!     .owns::<ReplicaSet>()
//!     .concurrency(4)
//!     .reconcile(reconcile, ());
//! mgr.run().await // until SIGTERM or SIGINT
//! # }
//! ```
//!
//! [`Manager::run`] follows controller-runtime's start order, with the
//! manager's work in named groups of runnables, each started as one and
//! stopped as one (controller-runtime's runnable groups):
//!
//! 1. the *servers* group: the probe and metrics servers, and the webhook
//!    server when webhooks are registered;
//! 2. the caches, blocking until every informer has synced (a failure
//!    names the informer and why; `/readyz` passes only from here on);
//! 3. the *runnables* group: the runnables that need no leadership;
//! 4. leader election;
//! 5. once elected, the *controllers and leader runnables* group.
//!
//! It returns an error when leadership is lost (after stopping the
//! controllers at once), when a cache does not sync, or when a controller,
//! runnable or server fails. On SIGTERM/SIGINT (or the token of
//! [`Manager::run_until`]) it stops in reverse: it stops taking work and
//! lets in-flight reconciles finish within the graceful shutdown timeout (a
//! controller's own, when it set a longer one), then abandons them with a
//! log; stops the caches; releases the lease if configured; writes the
//! recorders' open event series; and stops the servers.
//!
//! The parts that do not need the cache live in their own modules and can be
//! used on their own:
//!
//! - [`leader_election`]: client-go's Lease-based leader election
//!   ([`LeaderElector`], [`LeadershipHandle`]).
//! - [`probes`]: `/healthz`, `/readyz` (named checks) and `/metrics`
//!   (Prometheus/OpenMetrics text), served by a [`crate::serve`] server.
//! - [`signals`]: a [`CancellationToken`] cancelled on SIGTERM/SIGINT; a
//!   second signal exits at once.

mod builder;
pub mod leader_election;
pub mod probes;
pub mod signals;

mod run;
mod runnables;
mod runtime;

use std::net::SocketAddr;

pub use leader_election::{
    ApiLeaseLock, LeaderElectionConfig, LeaderElector, LeaderStatus, LeadershipHandle, LeaseLock,
    Phase,
};
pub use probes::{Endpoints, HttpServer, Probes, SharedRegistry};
pub use signals::shutdown_on_signals;

/// The default of [`ManagerBuilder::graceful_shutdown_timeout`], the same
/// as a controller's.
pub use crate::controller::DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT;
pub use builder::{ManagerBuilder, READYZ_INFORMER_SYNC, READYZ_WEBHOOK};
pub use runtime::{Leadership, Manager};

use crate::cache::SyncError;
use crate::client::BoxError;
/// The token the manager's parts use to be told to stop.
pub use tokio_util::sync::CancellationToken;

/// What can go wrong while setting up or running the manager's parts.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A leader-election setting breaks client-go's rules.
    #[error("invalid leader election configuration: {0}")]
    InvalidLeaderElection(String),

    /// A health or readiness check cannot be added.
    #[error("cannot add check {name:?}: {problem}")]
    InvalidCheck {
        /// The check's name.
        name: String,
        /// What is wrong with it.
        problem: String,
    },

    /// A bind address could not be parsed.
    #[error("invalid bind address {address:?}: {problem}")]
    InvalidBindAddress {
        /// The text given.
        address: String,
        /// What is wrong with it.
        problem: String,
    },

    /// The HTTP server could not listen on its address.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },

    /// The HTTP server's listener failed while accepting connections.
    #[error("the HTTP server on {address} failed: {source}")]
    Serve {
        /// The address it listened on.
        address: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },

    /// Signal handlers could not be installed.
    #[error("cannot install the shutdown signal handler: {0}")]
    Signal(#[source] std::io::Error),

    /// No client was given and none could be configured (kubeconfig,
    /// in-cluster).
    #[error("cannot configure a client: {0}")]
    Client(#[source] crate::Error),

    /// Informers did not sync; each error names its informer and why.
    #[error("caches did not sync: {}", join(.0))]
    CacheSync(Vec<SyncError>),

    /// This process lost the leader lease: its controllers were stopped.
    #[error("leader election lost: lease {lease}")]
    LeadershipLost {
        /// `namespace/name` of the lease.
        lease: String,
    },

    /// A controller stopped with an error.
    #[error("controller {name}: {source}")]
    Controller {
        /// The controller's name.
        name: String,
        /// What went wrong.
        #[source]
        source: Box<crate::controller::Error>,
    },

    /// Two controllers were registered under one name.
    #[error("a controller named {0:?} is already registered; name one with .named(...)")]
    DuplicateController(String),

    /// The webhook server could not start or failed.
    #[error(transparent)]
    Webhook(#[from] crate::webhook::Error),

    /// A runnable added with `add_runnable` failed.
    #[error("runnable {name}: {source}")]
    Runnable {
        /// The runnable's name.
        name: String,
        /// What it returned.
        #[source]
        source: BoxError,
    },
}

fn join(errors: &[SyncError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// A server's errors, as the manager reports them.
impl From<crate::serve::Error> for Error {
    fn from(e: crate::serve::Error) -> Self {
        match e {
            crate::serve::Error::Bind { address, source } => Error::Bind { address, source },
            crate::serve::Error::Serve { address, source } => Error::Serve { address, source },
        }
    }
}
