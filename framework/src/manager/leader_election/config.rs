//! [`LeaderElectionConfig`]: client-go's timings (15 s lease, 10 s renew
//! deadline, 2 s retry period) and their validation, the candidate's
//! identity (hostname + `_` + a random UUID, as controller-runtime makes
//! it), release on cancel, and the wall clock the record's times come from.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

use crate::ids::{hostname, random_uuid};
use crate::manager::Error;

/// client-go's `JitterFactor`: acquire retries wait between 1 and 2.2 retry
/// periods.
pub const JITTER_FACTOR: f64 = 1.2;

/// The lease duration core Kubernetes components and controller-runtime use.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// The renew deadline core Kubernetes components and controller-runtime use.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// The retry period core Kubernetes components and controller-runtime use.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// Where the times written into the record come from. They are only ever
/// compared for change, never for expiry, so any clock works; tests use one
/// that follows tokio's paused clock.
type WallClock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// How a [`LeaderElector`](super::LeaderElector) behaves.
///
/// ```
/// use std::time::Duration;
/// use kubeforge::manager::LeaderElectionConfig;
///
/// let config = LeaderElectionConfig::default()
///     .with_lease_duration(Duration::from_secs(30))
///     .with_renew_deadline(Duration::from_secs(20))
///     .with_release_on_cancel(true);
/// config.validate().unwrap();
/// assert!(config.identity().contains('_'));
/// ```
#[derive(Clone)]
pub struct LeaderElectionConfig {
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    release_on_cancel: bool,
    identity: String,
    name: Option<String>,
    wall_clock: WallClock,
}

impl fmt::Debug for LeaderElectionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElectionConfig")
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("release_on_cancel", &self.release_on_cancel)
            .field("identity", &self.identity)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Default for LeaderElectionConfig {
    /// 15 s / 10 s / 2 s, no release on cancel (controller-runtime's
    /// default), identity from [`default_identity`].
    fn default() -> Self {
        Self {
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: false,
            identity: default_identity(),
            name: None,
            wall_clock: Arc::new(Timestamp::now),
        }
    }
}

impl LeaderElectionConfig {
    /// How long candidates wait, from the last change of the record they
    /// observed, before taking the lease over. Written into the Lease in
    /// whole seconds.
    pub fn with_lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    /// How long the leader keeps retrying a failed renewal before it gives
    /// leadership up.
    pub fn with_renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    /// How long to wait between attempts.
    pub fn with_retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
        self
    }

    /// Whether to release the lease (empty holder, 1 s duration) when the
    /// elector is stopped while leading, so a successor need not wait for
    /// it to expire. Only safe if everything the lease guards has stopped
    /// before the elector is stopped.
    pub fn with_release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// This candidate's identity; must be unique among candidates.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Sets this candidate's identity.
    pub fn with_identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// The election's name in logs and metrics (defaults to the lock's
    /// description, e.g. `namespace/name`).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Replaces the clock the record's `acquireTime`/`renewTime` come from.
    /// Expiry never depends on it; tests use a clock that follows tokio's
    /// paused time so that every renewal changes the record.
    pub fn with_wall_clock(
        mut self,
        clock: impl Fn() -> Timestamp + Send + Sync + 'static,
    ) -> Self {
        self.wall_clock = Arc::new(clock);
        self
    }

    /// The configured lease duration.
    pub fn lease_duration(&self) -> Duration {
        self.lease_duration
    }

    /// The configured renew deadline.
    pub fn renew_deadline(&self) -> Duration {
        self.renew_deadline
    }

    /// The configured retry period.
    pub fn retry_period(&self) -> Duration {
        self.retry_period
    }

    /// Whether the lease is released when the elector is stopped.
    pub fn releases_on_cancel(&self) -> bool {
        self.release_on_cancel
    }

    pub(crate) fn election_name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    pub(crate) fn now_wall(&self) -> Timestamp {
        (self.wall_clock)()
    }

    /// The lease duration as written into the Lease: whole seconds, as
    /// client-go's `int(LeaseDuration / time.Second)`.
    pub(crate) fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }

    /// Checks client-go's rules (`NewLeaderElector`): lease duration >
    /// renew deadline > 1.2 × retry period, all positive, and a non-empty
    /// identity. Also requires a lease duration of at least one second,
    /// since the Lease stores whole seconds and a zero would read as
    /// "always expired" to every other candidate.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |msg: &str| Err(Error::InvalidLeaderElection(msg.to_owned()));
        if self.retry_period.is_zero() {
            return invalid("retry period must be greater than zero");
        }
        if self.renew_deadline.is_zero() {
            return invalid("renew deadline must be greater than zero");
        }
        if self.lease_duration < Duration::from_secs(1) {
            return invalid("lease duration must be at least one second");
        }
        if self.lease_duration <= self.renew_deadline {
            return invalid("lease duration must be greater than renew deadline");
        }
        if self.renew_deadline <= scale(self.retry_period, JITTER_FACTOR) {
            return invalid("renew deadline must be greater than retry period × 1.2");
        }
        if self.identity.is_empty() {
            return invalid("identity must not be empty");
        }
        Ok(())
    }
}

/// `hostname_<random UUID>`: controller-runtime's default identity. The
/// suffix keeps two processes on one host (or a restarted pod) distinct.
pub fn default_identity() -> String {
    format!("{}_{}", hostname(), random_uuid())
}

/// `d × factor` in whole nanoseconds, truncated as Go's
/// `time.Duration(factor * float64(d))` is.
fn scale(d: Duration, factor: f64) -> Duration {
    // Saturating float-to-int conversion; durations here are seconds long.
    Duration::from_nanos((d.as_nanos() as f64 * factor) as u64)
}

/// `d` plus up to `max_factor × d`, uniformly: client-go's `wait.Jitter`.
pub(crate) fn jittered(d: Duration, max_factor: f64) -> Duration {
    d + scale(d, fastrand::f64() * max_factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_client_go_core_component_timings() {
        let c = LeaderElectionConfig::default();
        assert_eq!(c.lease_duration(), Duration::from_secs(15));
        assert_eq!(c.renew_deadline(), Duration::from_secs(10));
        assert_eq!(c.retry_period(), Duration::from_secs(2));
        assert!(!c.releases_on_cancel());
        assert_eq!(c.lease_duration_seconds(), 15);
        c.validate().unwrap();
    }

    #[test]
    fn validation_follows_new_leader_elector() {
        let s = Duration::from_secs;
        let base = LeaderElectionConfig::default();
        let bad = [
            base.clone().with_lease_duration(s(10)), // == renew deadline
            base.clone()
                .with_renew_deadline(Duration::from_millis(2400)), // == 1.2 × retry
            base.clone().with_retry_period(Duration::ZERO),
            base.clone().with_renew_deadline(Duration::ZERO),
            base.clone()
                .with_lease_duration(Duration::from_millis(900))
                .with_renew_deadline(Duration::from_millis(800))
                .with_retry_period(Duration::from_millis(100)),
            base.clone().with_identity(""),
        ];
        for config in bad {
            let err = config.validate().unwrap_err();
            assert!(matches!(err, Error::InvalidLeaderElection(_)), "{err}");
        }
        base.clone()
            .with_renew_deadline(Duration::from_millis(2401))
            .validate()
            .unwrap();
        base.with_lease_duration(Duration::from_millis(1500))
            .with_renew_deadline(Duration::from_millis(1200))
            .with_retry_period(Duration::from_millis(500))
            .validate()
            .unwrap();
    }

    #[test]
    fn default_identity_is_hostname_underscore_uuid() {
        let a = default_identity();
        let b = default_identity();
        assert_ne!(a, b);
        let (host, uuid) = a.rsplit_once('_').unwrap();
        assert_eq!(host, hostname());
        assert_eq!(uuid.len(), 36);
        assert_eq!(uuid.matches('-').count(), 4);
    }

    #[test]
    fn jitter_stays_within_client_go_bounds() {
        let d = Duration::from_secs(2);
        for _ in 0..1000 {
            let j = jittered(d, JITTER_FACTOR);
            assert!(j >= d && j <= d.mul_f64(1.0 + JITTER_FACTOR), "{j:?}");
        }
    }
}
