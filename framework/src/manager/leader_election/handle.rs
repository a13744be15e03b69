//! [`LeadershipHandle`]: what a running elector tells the rest of the
//! process — whether it leads, who does, a future for "elected" and one for
//! "leadership ended" — through a `watch` channel of [`LeaderStatus`].

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Where an elector is in its life. `Lost` and `Stopped` are final.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Trying to acquire the lease.
    Candidate,
    /// Holding the lease and renewing it.
    Leading,
    /// Renewal failed for the renew deadline (or another holder was seen):
    /// everything the lease guards must stop now. controller-runtime exits
    /// the process.
    Lost,
    /// Stopped on request (after releasing the lease if so configured),
    /// whether or not it had led.
    Stopped,
}

impl Phase {
    /// Whether the elector has finished.
    pub fn is_final(self) -> bool {
        matches!(self, Phase::Lost | Phase::Stopped)
    }
}

/// A snapshot of an elector's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderStatus {
    /// Where the elector is.
    pub phase: Phase,
    /// The holder this candidate last observed (client-go's `GetLeader`),
    /// `None` while nobody holds the lease or nothing was read yet.
    pub leader: Option<String>,
    /// This candidate's identity.
    pub identity: String,
}

/// What the health check needs from the elector task.
#[derive(Debug)]
pub(crate) struct Health {
    /// When the record was last seen to change or last written by us.
    observed_at: Mutex<Option<Instant>>,
    lease_duration: Duration,
    name: String,
}

impl Health {
    fn observed_at(&self) -> Option<Instant> {
        *self
            .observed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The elector task's end of the status channel. Only the task holds it,
/// so if the task dies (a panicking lock) the channel closes and every
/// handle sees leadership as lost.
#[derive(Debug)]
pub(crate) struct Publisher {
    status: watch::Sender<LeaderStatus>,
    health: Arc<Health>,
}

impl Publisher {
    /// A publisher and the first handle on it.
    pub(crate) fn new(
        identity: String,
        lease_duration: Duration,
        name: String,
        stop: CancellationToken,
    ) -> (Self, LeadershipHandle) {
        let (status, receiver) = watch::channel(LeaderStatus {
            phase: Phase::Candidate,
            leader: None,
            identity,
        });
        let health = Arc::new(Health {
            observed_at: Mutex::new(None),
            lease_duration,
            name,
        });
        let handle = LeadershipHandle {
            health: health.clone(),
            status: receiver,
            stop,
        };
        (Self { status, health }, handle)
    }

    pub(crate) fn set_phase(&self, phase: Phase) {
        self.status.send_if_modified(|s| {
            let changed = s.phase != phase;
            s.phase = phase;
            changed
        });
    }

    /// Publishes a newly observed holder; true if it changed.
    pub(crate) fn set_leader(&self, leader: Option<&str>) -> bool {
        self.status.send_if_modified(|s| {
            if s.leader.as_deref() == leader {
                return false;
            }
            s.leader = leader.map(str::to_owned);
            true
        })
    }

    pub(crate) fn set_observed_at(&self, at: Option<Instant>) {
        *self
            .health
            .observed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = at;
    }
}

/// A running elector, as the rest of the process sees it. Cheap to clone.
///
/// Typical use by a manager: start leader-only work once
/// [`elected`](Self::elected) answers `true`; stop it (and exit) when
/// [`lost`](Self::lost) resolves; on shutdown stop that work first, then
/// [`stop`](Self::stop) the elector and await [`ended`](Self::ended) so a
/// release on cancel has completed.
#[derive(Clone, Debug)]
pub struct LeadershipHandle {
    health: Arc<Health>,
    status: watch::Receiver<LeaderStatus>,
    stop: CancellationToken,
}

impl LeadershipHandle {
    /// A handle for a process that runs without leader election: it leads
    /// at once and until `stop` is cancelled, and never loses.
    /// controller-runtime treats "no leader election" the same way, so a
    /// manager can use one code path. Must be called within a tokio
    /// runtime.
    pub fn always_leading(identity: impl Into<String>, stop: CancellationToken) -> Self {
        let identity = identity.into();
        let (publisher, handle) = Publisher::new(
            identity.clone(),
            Duration::ZERO,
            String::new(),
            stop.clone(),
        );
        publisher.set_leader(Some(&identity));
        publisher.set_phase(Phase::Leading);
        tokio::spawn(async move {
            stop.cancelled().await;
            publisher.set_phase(Phase::Stopped);
        });
        handle
    }

    /// Whether this candidate leads right now.
    pub fn is_leader(&self) -> bool {
        self.status.borrow().phase == Phase::Leading
    }

    /// The current state.
    pub fn status(&self) -> LeaderStatus {
        self.status.borrow().clone()
    }

    /// The holder this candidate last observed.
    pub fn leader(&self) -> Option<String> {
        self.status.borrow().leader.clone()
    }

    /// A receiver of every state change, for callers that want to follow
    /// them (e.g. to log leader changes).
    pub fn watch(&self) -> watch::Receiver<LeaderStatus> {
        self.status.clone()
    }

    /// Waits until this candidate leads (`true`) or the elector finished
    /// without leading (`false`, e.g. it was stopped while waiting).
    pub async fn elected(&self) -> bool {
        let mut rx = self.status.clone();
        let leading = rx
            .wait_for(|s| s.phase == Phase::Leading || s.phase.is_final())
            .await
            .map(|s| s.phase == Phase::Leading)
            .unwrap_or(false);
        leading
    }

    /// Waits until the elector has finished and answers how: [`Phase::Lost`]
    /// or [`Phase::Stopped`]. An elector task that vanished (panicked)
    /// counts as lost.
    pub async fn ended(&self) -> Phase {
        let mut rx = self.status.clone();
        let phase = rx
            .wait_for(|s| s.phase.is_final())
            .await
            .map(|s| s.phase)
            .unwrap_or(Phase::Lost);
        phase
    }

    /// Resolves when leadership is lost; never resolves if the elector is
    /// stopped on request instead. Meant for `select!` next to the
    /// shutdown signal.
    pub async fn lost(&self) {
        if self.ended().await != Phase::Lost {
            std::future::pending::<()>().await;
        }
    }

    /// Asks the elector to stop (releasing the lease if configured). The
    /// same as cancelling the token it was started with.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// A health check for `/healthz`, after client-go's `HealthzAdaptor`:
    /// fails while this candidate believes it leads but has not renewed for
    /// longer than the lease duration plus `tolerance` (a stuck renew
    /// loop). Always passes when not leading.
    pub fn healthz_check(
        &self,
        tolerance: Duration,
    ) -> impl Fn() -> Result<(), String> + Send + Sync + 'static {
        let health = self.health.clone();
        let status = self.status.clone();
        move || {
            if status.borrow().phase != Phase::Leading {
                return Ok(());
            }
            match health.observed_at() {
                Some(at) if at.elapsed() > health.lease_duration + tolerance => Err(format!(
                    "failed election to renew leadership on lease {}",
                    health.name
                )),
                _ => Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel() -> (Publisher, LeadershipHandle) {
        Publisher::new(
            "me".into(),
            Duration::from_secs(15),
            "ns/lease".into(),
            CancellationToken::new(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn healthz_fails_when_a_leader_stops_renewing() {
        // client-go's HealthzAdaptor: leading, but no renewal for longer
        // than lease duration + tolerance.
        let (publisher, h) = channel();
        let check = h.healthz_check(Duration::from_secs(20));
        publisher.set_phase(Phase::Leading);
        publisher.set_observed_at(Some(Instant::now()));
        tokio::time::advance(Duration::from_secs(35)).await;
        assert!(check().is_ok());
        tokio::time::advance(Duration::from_secs(1)).await;
        let err = check().unwrap_err();
        assert_eq!(err, "failed election to renew leadership on lease ns/lease");
        // Not leading: nothing to check.
        publisher.set_phase(Phase::Lost);
        assert!(check().is_ok());
    }

    #[tokio::test]
    async fn without_election_a_process_leads_until_stopped() {
        let h = LeadershipHandle::always_leading("solo", CancellationToken::new());
        assert!(h.is_leader());
        assert!(h.elected().await);
        assert_eq!(h.leader().as_deref(), Some("solo"));
        assert!(h.healthz_check(Duration::ZERO)().is_ok());
        h.stop();
        assert_eq!(h.ended().await, Phase::Stopped);
        assert!(!h.is_leader());
    }

    #[tokio::test]
    async fn waiters_see_final_phases() {
        let (publisher, h) = channel();
        assert!(!h.is_leader());
        publisher.set_phase(Phase::Leading);
        assert!(h.elected().await);
        assert!(publisher.set_leader(Some("me")));
        assert!(!publisher.set_leader(Some("me")));
        assert_eq!(h.leader().as_deref(), Some("me"));
        publisher.set_phase(Phase::Stopped);
        assert_eq!(h.ended().await, Phase::Stopped);
    }

    #[tokio::test]
    async fn a_vanished_elector_counts_as_lost() {
        let (publisher, h) = channel();
        publisher.set_phase(Phase::Leading);
        let clone = h.clone();
        drop(publisher); // as if the elector task panicked
        assert_eq!(h.ended().await, Phase::Lost);
        tokio::time::timeout(Duration::from_secs(5), clone.lost())
            .await
            .expect("lost() resolves when the elector vanished");
    }
}
