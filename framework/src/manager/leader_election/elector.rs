//! [`LeaderElector`]: client-go's acquire / renew / release loops over a
//! [`LeaseLock`], on tokio's clock (so tests can pause time).
//!
//! - **Acquire**: `try_acquire_or_renew` at once, then every retry period
//!   with jitter 1.2 (client-go's `wait.JitterUntil`), until it succeeds;
//!   each attempt is bounded by the renew deadline. Two departures, both
//!   about *when* to try, never about whether the lease may be taken: a
//!   candidate also tries the moment the lease it observed expires (not up
//!   to 2.2 retry periods later), and, with a lock that follows the record
//!   ([`LeaseLock::watch`]), notes each renewal when it happens and tries
//!   at once when the lease is released or deleted. With the defaults a
//!   killed leader is then replaced about 15 s after its last renewal
//!   instead of 15 to 23.8 s after a poll that saw it.
//! - **Renew**: every retry period (after the previous renewal), try again
//!   every retry period (non-sliding) until one succeeds or the renew
//!   deadline passes; the deadline cancels the attempt in flight and ends
//!   leadership ([`Phase::Lost`]).
//! - **Release** (only if configured, only when stopped on request): PUT an
//!   empty holder with a one-second duration, retrying on conflict, within
//!   the renew deadline. client-go also tries this after a lost renewal;
//!   here a lost lease is left to expire, because the work it guarded may
//!   still be winding down and a release would let a successor start at
//!   once.
//!
//! One deliberate strengthening: a leader that reads the lease and finds
//! another holder gives up at once instead of retrying until the deadline
//! (in client-go that retry can only fail; ending early is strictly safer).

use futures::StreamExt as _;
use tokio::time::{sleep, sleep_until, timeout_at, Instant};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::config::{jittered, LeaderElectionConfig, JITTER_FACTOR};
use super::handle::{LeadershipHandle, Phase, Publisher};
use super::lock::{LeaseLock, LockError, RecordChanges};
use super::metrics::LeaderElectionMetrics;
use super::observer::{Decision, Observer};
use crate::manager::Error;

/// How one `try_acquire_or_renew` round ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// The lease is ours (created, taken over or renewed).
    Held,
    /// Another candidate holds an unexpired lease.
    HeldByOther(String),
    /// The lock failed (conflict, unreachable server, ...).
    Failed,
}

/// Runs client-go's leader election for one candidate on one lock.
///
/// ```no_run
/// # async fn demo(client: kubeforge::Client) -> Result<(), kubeforge::manager::Error> {
/// use kubeforge::manager::{ApiLeaseLock, CancellationToken, LeaderElectionConfig, LeaderElector};
///
/// let lock = ApiLeaseLock::new(client, "operators", "memcached-operator");
/// let elector = LeaderElector::new(LeaderElectionConfig::default(), lock)?;
/// let stop = CancellationToken::new();
/// let leadership = elector.run(stop.clone());
/// if leadership.elected().await {
///     tokio::select! {
///         _ = leadership.lost() => { /* stop leader-only work and exit */ }
///         _ = tokio::signal::ctrl_c() => { /* stop work, then: */ stop.cancel(); }
///     }
/// }
/// leadership.ended().await;
/// # Ok(())
/// # }
/// ```
pub struct LeaderElector<L = Box<dyn LeaseLock>> {
    config: LeaderElectionConfig,
    lock: L,
    metrics: Option<LeaderElectionMetrics>,
}

impl<L> std::fmt::Debug for LeaderElector<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<L: LeaseLock> LeaderElector<L> {
    /// An elector for `lock`; fails if `config` breaks client-go's rules
    /// (see [`LeaderElectionConfig::validate`]).
    pub fn new(config: LeaderElectionConfig, lock: L) -> Result<Self, Error> {
        config.validate()?;
        Ok(Self {
            config,
            lock,
            metrics: None,
        })
    }

    /// Reports `leader_election_master_status` and
    /// `leader_election_slowpath_total` into `metrics`.
    pub fn with_metrics(mut self, metrics: LeaderElectionMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        self.config.identity()
    }

    /// The configuration.
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    /// Starts the election on a tokio task and returns its handle. The
    /// election runs until leadership is lost or `stop` is cancelled.
    ///
    /// `stop` should be the elector's own token, cancelled only after the
    /// work the lease guards has stopped (controller-runtime cancels leader
    /// election last for the same reason), especially with release on
    /// cancel.
    pub fn run(self, stop: CancellationToken) -> LeadershipHandle {
        let name = self
            .config
            .election_name()
            .map(str::to_owned)
            .unwrap_or_else(|| self.lock.describe());
        let (publisher, handle) = Publisher::new(
            self.config.identity().to_owned(),
            self.config.lease_duration(),
            name.clone(),
            stop.clone(),
        );
        let run = Run {
            observer: Observer::new(
                self.config.identity().to_owned(),
                self.config.lease_duration_seconds(),
            ),
            config: self.config,
            lock: self.lock,
            metrics: self.metrics,
            publisher,
            name,
        };
        let span = tracing::info_span!(
            "leader_election",
            lease = %run.name,
            identity = %run.observer.identity()
        );
        tokio::spawn(run.run(stop).instrument(span));
        handle
    }
}

/// The state of one running election.
struct Run<L> {
    config: LeaderElectionConfig,
    lock: L,
    metrics: Option<LeaderElectionMetrics>,
    publisher: Publisher,
    observer: Observer,
    name: String,
}

impl<L: LeaseLock> Run<L> {
    async fn run(mut self, stop: CancellationToken) {
        self.set_leading_metric(false);
        tracing::info!("attempting to acquire leader lease");
        if !self.acquire(&stop).await {
            tracing::info!("stopped before acquiring the lease");
            self.publisher.set_phase(Phase::Stopped);
            return;
        }
        tracing::info!("successfully acquired lease");
        self.set_leading_metric(true);
        self.publisher.set_phase(Phase::Leading);

        let end = self.renew(&stop).await;
        self.set_leading_metric(false);
        match end {
            Phase::Lost => {
                tracing::error!("leader election lost");
                self.publisher.set_phase(Phase::Lost);
            }
            _ => {
                if self.config.releases_on_cancel() {
                    if self.release().await {
                        tracing::info!("released the lease");
                    } else {
                        tracing::warn!("failed to release the lease; it will expire");
                    }
                }
                self.publisher.set_phase(Phase::Stopped);
            }
        }
    }

    fn set_leading_metric(&self, leading: bool) {
        if let Some(m) = &self.metrics {
            m.set_leading(&self.name, leading);
        }
    }

    /// Publishes the observed holder and observation time (client-go's
    /// `maybeReportTransition`).
    fn report(&self) {
        self.publisher.set_observed_at(self.observer.observed_at());
        let leader = self.observer.leader();
        if self.publisher.set_leader(leader) {
            if let Some(leader) = leader {
                tracing::info!(leader, "new leader observed");
            }
        }
    }

    /// Tries until the lease is ours (true) or `stop` is cancelled (false).
    async fn acquire(&mut self, stop: &CancellationToken) -> bool {
        let mut changes = self.lock.watch();
        loop {
            // Bounded like every lock request in client-go, whose
            // `NewFromKubeconfig` sets the client timeout to the renew
            // deadline: a hung request must not stall the election.
            let bounded =
                tokio::time::timeout(self.config.renew_deadline(), self.try_acquire_or_renew());
            let attempt = tokio::select! {
                biased;
                () = stop.cancelled() => return false,
                a = bounded => a.unwrap_or(Attempt::Failed),
            };
            self.report();
            match attempt {
                Attempt::Held => return true,
                Attempt::HeldByOther(holder) => {
                    tracing::debug!(%holder, "lease is held by another candidate and has not yet expired");
                }
                Attempt::Failed => {
                    tracing::debug!("failed to acquire lease");
                }
            }
            let retry_at = Instant::now() + jittered(self.config.retry_period(), JITTER_FACTOR);
            if !self.wait_for_turn(retry_at, &mut changes, stop).await {
                return false;
            }
        }
    }

    /// Waits until the next attempt is due: the jittered retry, or earlier
    /// the moment the observed lease expires, or a followed change that
    /// leaves the lease free (released or deleted). A change that is a
    /// renewal is observed now, which moves the expiry. False when `stop`
    /// is cancelled.
    async fn wait_for_turn(
        &mut self,
        retry_at: Instant,
        changes: &mut Option<RecordChanges>,
        stop: &CancellationToken,
    ) -> bool {
        loop {
            // Only an expiry still ahead: once past it, an attempt has
            // failed (a conflict, an outage) and retries keep their pace.
            let wake = match self.observer.expires_at() {
                Some(expiry) if expiry > Instant::now() => expiry.min(retry_at),
                _ => retry_at,
            };
            let change = async {
                match changes.as_mut() {
                    Some(stream) => stream.next().await,
                    None => std::future::pending().await,
                }
            };
            let change = tokio::select! {
                biased;
                () = stop.cancelled() => return false,
                () = sleep_until(wake) => return true,
                change = change => change,
            };
            match change {
                Some(Some(record)) => {
                    let free = !record.is_held();
                    self.observer.observe(record, Instant::now());
                    self.report();
                    if free {
                        return true;
                    }
                }
                // Deleted: create it.
                Some(None) => return true,
                // The lock stopped following: poll only.
                None => *changes = None,
            }
        }
    }

    /// Renews until a renewal misses the deadline ([`Phase::Lost`]) or
    /// `stop` is cancelled ([`Phase::Stopped`]).
    async fn renew(&mut self, stop: &CancellationToken) -> Phase {
        let retry = self.config.retry_period();
        loop {
            let deadline = Instant::now() + self.config.renew_deadline();
            let poll = async {
                loop {
                    let started = Instant::now();
                    match self.try_acquire_or_renew().await {
                        Attempt::Held => return true,
                        // Another holder: this renewal can only fail.
                        Attempt::HeldByOther(holder) => {
                            tracing::warn!(%holder, "the lease has another holder");
                            return false;
                        }
                        Attempt::Failed => {}
                    }
                    sleep_until(started + retry).await;
                }
            };
            let renewed = tokio::select! {
                biased;
                () = stop.cancelled() => return Phase::Stopped,
                r = timeout_at(deadline, poll) => r.unwrap_or(false),
            };
            self.report();
            if !renewed {
                tracing::warn!("failed to renew lease within the renew deadline");
                return Phase::Lost;
            }
            tracing::trace!("renewed lease");
            tokio::select! {
                biased;
                () = stop.cancelled() => return Phase::Stopped,
                () = sleep(retry) => {}
            }
        }
    }

    /// One round of client-go's `tryAcquireOrRenew`.
    pub(crate) async fn try_acquire_or_renew(&mut self) -> Attempt {
        let now = Instant::now();
        let wall = self.config.now_wall();

        // 1. Fast path: the leader writes its renewal without reading,
        // trusting that the record it last wrote is still current.
        if let Some(record) = self.observer.optimistic_renewal(now, wall) {
            match self.lock.update(&record).await {
                Ok(()) => {
                    self.observer.set_observed(record, Instant::now());
                    return Attempt::Held;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "optimistic renewal failed, reading the lease");
                }
            }
        }

        // 2. Read the record, creating the lease if it does not exist.
        let current = match self.lock.get().await {
            Ok(Some(current)) => current,
            Ok(None) => {
                let record = self.observer.fresh_record(wall);
                return match self.lock.create(&record).await {
                    Ok(()) => {
                        self.observer.set_observed(record, Instant::now());
                        Attempt::Held
                    }
                    Err(e) => {
                        log_write_error("create", &e);
                        Attempt::Failed
                    }
                };
            }
            Err(e) => {
                tracing::warn!(error = %e, "error retrieving the lease");
                return Attempt::Failed;
            }
        };

        // 3. Note any change, then wait for the holder or write.
        self.observer.observe(current.clone(), Instant::now());
        let record = match self.observer.decide(&current, now, wall) {
            Decision::Wait { holder } => return Attempt::HeldByOther(holder),
            Decision::Write(record) => record,
        };
        if self.observer.is_leader() {
            if let Some(m) = &self.metrics {
                m.slowpath_exercised(&self.name);
            }
        }

        // 4. Conditional on the resourceVersion just read: a 409 means
        // someone else wrote first and this round is lost.
        match self.lock.update(&record).await {
            Ok(()) => {
                self.observer.set_observed(record, Instant::now());
                Attempt::Held
            }
            Err(e) => {
                log_write_error("update", &e);
                Attempt::Failed
            }
        }
    }

    /// Gives the lease up if we still hold it; true when nothing is left
    /// to release. Bounded by the renew deadline.
    async fn release(&mut self) -> bool {
        if !self.observer.is_leader() {
            return true;
        }
        let deadline = Instant::now() + self.config.renew_deadline();
        let released = timeout_at(deadline, async {
            loop {
                let current = match self.lock.get().await {
                    Ok(Some(current)) => current,
                    Ok(None) => return false,
                    Err(e) => {
                        tracing::warn!(error = %e, "error retrieving the lease to release it");
                        return false;
                    }
                };
                if current.holder_identity != self.observer.identity() {
                    return true;
                }
                let record = self
                    .observer
                    .release_record(&current, self.config.now_wall());
                match self.lock.update(&record).await {
                    Ok(()) => {
                        self.observer.set_observed(record, Instant::now());
                        return true;
                    }
                    // A renewal cancelled in flight may have landed after
                    // our read: read again and retry (client-go's tryRelease).
                    Err(LockError::Conflict) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "failed to release the lease");
                        return false;
                    }
                }
            }
        })
        .await
        .unwrap_or(false);
        self.report();
        released
    }
}

fn log_write_error(what: &str, e: &LockError) {
    match e {
        LockError::Conflict | LockError::AlreadyExists => {
            tracing::debug!(error = %e, "lost the race to {what} the lease");
        }
        _ => tracing::warn!(error = %e, "failed to {what} the lease"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manager::leader_election::memory::MemoryLeaseStore;
    use crate::manager::leader_election::record::LeaderElectionRecord;
    use std::time::Duration;

    fn run_for(store: &MemoryLeaseStore, id: &str) -> Run<super::super::memory::MemoryLeaseLock> {
        let config = LeaderElectionConfig::default().with_identity(id);
        Run {
            observer: Observer::new(id.into(), 15),
            lock: store.lock(id),
            metrics: Some(LeaderElectionMetrics::new()),
            publisher: Publisher::new(
                id.into(),
                config.lease_duration(),
                "test".into(),
                CancellationToken::new(),
            )
            .0,
            config,
            name: "test".into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn renewal_takes_the_fast_path_without_reading() {
        let store = MemoryLeaseStore::new();
        let mut a = run_for(&store, "a");
        assert_eq!(a.try_acquire_or_renew().await, Attempt::Held);
        assert_eq!(store.stats().creates, 1);
        let gets = store.stats().gets;
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(a.try_acquire_or_renew().await, Attempt::Held);
        assert_eq!(store.stats().gets, gets, "the fast path must not read");
        assert_eq!(store.stats().updates, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_fast_path_falls_back_to_reading() {
        let store = MemoryLeaseStore::new();
        let mut a = run_for(&store, "a");
        assert_eq!(a.try_acquire_or_renew().await, Attempt::Held);
        // Someone edits the lease but leaves us as holder: our cached
        // resourceVersion is stale, the optimistic PUT conflicts, and the
        // slow path reads and renews.
        let mut edited = store.record().unwrap();
        edited.renew_time = None;
        store.set_record(edited);
        assert_eq!(a.try_acquire_or_renew().await, Attempt::Held);
        let stats = store.stats();
        assert_eq!((stats.conflicts, stats.updates), (1, 1));
        assert_eq!(store.record().unwrap().holder_identity, "a");
    }

    #[tokio::test(start_paused = true)]
    async fn losing_the_create_race_fails_the_round() {
        // Each operation takes 2 s (applied after 1 s). a reads "no lease"
        // at t=1, b's create lands at t=1.5, a's create at t=3 finds it.
        let store = MemoryLeaseStore::new();
        store.set_latency(Duration::from_secs(2));
        let mut a = run_for(&store, "a");
        let mut lock_b = store.lock("b");
        let b_record = LeaderElectionRecord {
            holder_identity: "b".into(),
            lease_duration_seconds: 15,
            ..Default::default()
        };
        let b = async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            lock_b.create(&b_record).await
        };
        let (a_attempt, b_created) = tokio::join!(a.try_acquire_or_renew(), b);
        b_created.unwrap();
        assert_eq!(a_attempt, Attempt::Failed);
        assert!(!a.observer.is_leader());
        // The next round reads b's fresh lease and waits for it.
        assert_eq!(
            a.try_acquire_or_renew().await,
            Attempt::HeldByOther("b".into())
        );
    }
}
