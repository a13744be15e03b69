//! Long runs against kubeforge's in-process API server.
//!
//! - [`soak`]: the memcached operator under steady writes and injected
//!   faults for a set time, sampling memory and the controller's metrics,
//!   then checking convergence (the `soak` binary; a short run is the
//!   `soak_short` test).
//! - [`sampling`]: the resident set, the metrics, the slope of a series.
//! - [`server`]: the API server in the soak's process or in a child
//!   process, so the operator's heap and the server's can be told apart.
//! - [`linearizability`]: concurrent clients' histories against the API
//!   server, checked against a sequential model of the store (the
//!   `linearizability` test).

pub mod linearizability;
pub mod sampling;
pub mod server;
pub mod soak;
