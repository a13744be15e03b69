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

/// State shared between the elector task and its handles.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) status: watch::Sender<LeaderStatus>,
    /// When the record was last seen to change or last written by us; for
    /// [`LeadershipHandle::healthz_check`].
    pub(crate) observed_at: Mutex<Option<Instant>>,
    pub(crate) lease_duration: Duration,
    pub(crate) name: String,
}

impl Shared {
    pub(crate) fn new(identity: String, lease_duration: Duration, name: String) -> Arc<Self> {
        let (status, _) = watch::channel(LeaderStatus {
            phase: Phase::Candidate,
            leader: None,
            identity,
        });
        Arc::new(Self {
            status,
            observed_at: Mutex::new(None),
            lease_duration,
            name,
        })
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
            .observed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = at;
    }

    fn observed_at(&self) -> Option<Instant> {
        *self
            .observed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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
    pub(crate) shared: Arc<Shared>,
    pub(crate) status: watch::Receiver<LeaderStatus>,
    pub(crate) stop: CancellationToken,
}

impl LeadershipHandle {
    /// A handle for a process that runs without leader election: it leads
    /// at once and until `stop` is cancelled, and never loses.
    /// controller-runtime treats "no leader election" the same way, so a
    /// manager can use one code path. Must be called within a tokio
    /// runtime.
    pub fn always_leading(identity: impl Into<String>, stop: CancellationToken) -> Self {
        let shared = Shared::new(identity.into(), Duration::ZERO, String::new());
        shared.set_phase(Phase::Leading);
        let leader = shared.status.borrow().identity.clone();
        shared.set_leader(Some(&leader));
        let handle = Self {
            status: shared.status.subscribe(),
            shared: shared.clone(),
            stop: stop.clone(),
        };
        tokio::spawn(async move {
            stop.cancelled().await;
            shared.set_phase(Phase::Stopped);
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
        let shared = self.shared.clone();
        let status = self.status.clone();
        move || {
            if status.borrow().phase != Phase::Leading {
                return Ok(());
            }
            match shared.observed_at() {
                Some(at) if at.elapsed() > shared.lease_duration + tolerance => Err(format!(
                    "failed election to renew leadership on lease {}",
                    shared.name
                )),
                _ => Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle() -> LeadershipHandle {
        let shared = Shared::new("me".into(), Duration::from_secs(15), "ns/lease".into());
        LeadershipHandle {
            status: shared.status.subscribe(),
            shared,
            stop: CancellationToken::new(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn healthz_fails_when_a_leader_stops_renewing() {
        // client-go's HealthzAdaptor: leading, but no renewal for longer
        // than lease duration + tolerance.
        let h = handle();
        let check = h.healthz_check(Duration::from_secs(20));
        h.shared.set_phase(Phase::Leading);
        h.shared.set_observed_at(Some(Instant::now()));
        tokio::time::advance(Duration::from_secs(35)).await;
        assert!(check().is_ok());
        tokio::time::advance(Duration::from_secs(1)).await;
        let err = check().unwrap_err();
        assert_eq!(err, "failed election to renew leadership on lease ns/lease");
        // Not leading: nothing to check.
        h.shared.set_phase(Phase::Lost);
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
    async fn waiters_see_final_phases_and_a_vanished_elector_counts_as_lost() {
        let h = handle();
        assert!(!h.is_leader());
        h.shared.set_phase(Phase::Leading);
        assert!(h.elected().await);
        assert!(h.shared.set_leader(Some("me")));
        assert!(!h.shared.set_leader(Some("me")));
        assert_eq!(h.leader().as_deref(), Some("me"));
        h.shared.set_phase(Phase::Stopped);
        assert_eq!(h.ended().await, Phase::Stopped);

        let orphan = handle();
        let LeadershipHandle {
            shared,
            status,
            stop,
        } = orphan;
        let rx_only = LeadershipHandle {
            shared: Shared::new("x".into(), Duration::from_secs(15), "n".into()),
            status,
            stop,
        };
        drop(shared); // the sender goes away, as if the task panicked
        assert_eq!(rx_only.ended().await, Phase::Lost);
        assert!(!rx_only.elected().await);
    }
}
