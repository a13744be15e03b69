//! The manager: one shared cache for every controller, leader election,
//! health, readiness and metrics endpoints, and graceful shutdown.
//!
//! The parts that do not need the cache live in their own modules and can be
//! used on their own:
//!
//! - [`leader_election`]: client-go's Lease-based leader election
//!   ([`LeaderElector`], [`LeadershipHandle`]).
//! - [`probes`]: a small HTTP server for `/healthz`, `/readyz` (named
//!   checks) and `/metrics` (Prometheus/OpenMetrics text).
//! - [`signals`]: a [`CancellationToken`] cancelled on SIGTERM/SIGINT; a
//!   second signal exits at once.

pub mod leader_election;
pub mod probes;
pub mod signals;

use std::net::SocketAddr;

pub use leader_election::{
    ApiLeaseLock, LeaderElectionConfig, LeaderElector, LeaderStatus, LeadershipHandle, LeaseLock,
    Phase,
};
pub use probes::{Endpoints, HttpServer, Probes, SharedRegistry};
pub use signals::shutdown_on_signals;
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
}
