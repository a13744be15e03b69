//! Leader election on a `coordination.k8s.io/v1` Lease with client-go's
//! algorithm (`tools/leaderelection`): candidates race to write
//! themselves into the Lease with optimistic concurrency; the holder renews
//! it every retry period; the others take over only after seeing the record
//! unchanged for a whole lease duration *on their own clock*; a leader that
//! cannot renew within the renew deadline stops leading.
//!
//! - [`LeaderElectionConfig`]: timings (15 s / 10 s / 2 s), identity,
//!   release on cancel.
//! - [`LeaderElector`]: runs the loops; [`LeaderElector::run`] returns a
//!   [`LeadershipHandle`] (is-leader, elected, lost, ended).
//! - [`LeaseLock`]: get / create / update of the record;
//!   [`ApiLeaseLock`] keeps it in a Lease through the API server,
//!   [`memory::MemoryLeaseStore`] in memory (tests, demos).
//! - [`LeaderElectionRecord`]: the record and its `LeaseSpec` mapping.
//!
//! Like client-go this does not fence: it assumes that requests finish well
//! within `lease duration − renew deadline − retry period` (3 s with the
//! defaults) and that clocks run at similar rates. Everything the lease
//! guards must stop when [`LeadershipHandle::lost`] resolves.

mod config;
mod elector;
mod handle;
mod lock;
pub mod memory;
mod metrics;
mod observer;
mod record;

pub use config::{
    default_identity, LeaderElectionConfig, DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD, JITTER_FACTOR,
};
pub use elector::LeaderElector;
pub use handle::{LeaderStatus, LeadershipHandle, Phase};
pub use lock::{ApiLeaseLock, LeaseLock, LockError};
pub use metrics::{ElectionLabels, LeaderElectionMetrics};
pub use record::LeaderElectionRecord;
