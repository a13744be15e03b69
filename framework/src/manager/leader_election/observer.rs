//! The pure part of client-go's `tryAcquireOrRenew`: what this candidate
//! has observed of the record and when (on its own monotonic clock), and
//! what it should write next. No I/O and no clock reads: callers pass
//! `now`, so every rule is testable on its own.
//!
//! The rules (client-go `tools/leaderelection/leaderelection.go`):
//! - Expiry is `observed_at + leaseDurationSeconds` where `observed_at` is
//!   when *this* candidate last saw the record change — never the record's
//!   `renewTime`, which comes from another clock.
//! - A held, unexpired lease belongs to its holder; anyone else waits.
//! - The leader keeps `acquireTime` and `leaseTransitions`; a takeover
//!   writes a new `acquireTime` and `leaseTransitions + 1`.
//!
//! client-go compares the record serialized with second-precision times;
//! this compares it exactly (microseconds), so a change is never missed —
//! candidates can only wait longer, never shorter.

use jiff::Timestamp;
use tokio::time::Instant;

use super::record::{to_micro, LeaderElectionRecord};

/// What a candidate should do after reading the current record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Someone else holds an unexpired lease: wait.
    Wait {
        /// The holder.
        holder: String,
    },
    /// Write this record (renewal or takeover).
    Write(LeaderElectionRecord),
}

/// What one candidate knows of the lease.
#[derive(Debug)]
pub(crate) struct Observer {
    identity: String,
    lease_duration_seconds: i32,
    observed: Option<LeaderElectionRecord>,
    observed_at: Option<Instant>,
}

impl Observer {
    pub(crate) fn new(identity: String, lease_duration_seconds: i32) -> Self {
        Self {
            identity,
            lease_duration_seconds,
            observed: None,
            observed_at: None,
        }
    }

    pub(crate) fn identity(&self) -> &str {
        &self.identity
    }

    /// Whether the last observed record names this candidate.
    pub(crate) fn is_leader(&self) -> bool {
        self.observed
            .as_ref()
            .is_some_and(|r| r.holder_identity == self.identity)
    }

    /// The last observed holder, if any.
    pub(crate) fn leader(&self) -> Option<&str> {
        self.observed
            .as_ref()
            .map(|r| r.holder_identity.as_str())
            .filter(|h| !h.is_empty())
    }

    /// When the record was last seen to change (or last written by us).
    pub(crate) fn observed_at(&self) -> Option<Instant> {
        self.observed_at
    }

    /// Whether the observed lease is still valid at `now`:
    /// `observed_at + leaseDurationSeconds > now` (client-go's
    /// `isLeaseValid`).
    pub(crate) fn lease_valid(&self, now: Instant) -> bool {
        match (&self.observed, self.observed_at) {
            (Some(record), Some(at)) => at + record.lease_duration() > now,
            _ => false,
        }
    }

    /// When the observed lease expires for this candidate, if someone
    /// holds it: `observed_at + leaseDurationSeconds`.
    pub(crate) fn expires_at(&self) -> Option<Instant> {
        match (&self.observed, self.observed_at) {
            (Some(record), Some(at)) if record.is_held() => Some(at + record.lease_duration()),
            _ => None,
        }
    }

    /// Records what a read returned; the observation time moves only if
    /// the record changed.
    pub(crate) fn observe(&mut self, record: LeaderElectionRecord, now: Instant) {
        if self.observed.as_ref() != Some(&record) {
            self.set_observed(record, now);
        }
    }

    /// Records a record this candidate wrote successfully.
    pub(crate) fn set_observed(&mut self, record: LeaderElectionRecord, now: Instant) {
        self.observed = Some(record);
        self.observed_at = Some(now);
    }

    /// The record this candidate writes when it holds the lease anew:
    /// itself as holder, `acquireTime = renewTime = wall`.
    pub(crate) fn fresh_record(&self, wall: Timestamp) -> LeaderElectionRecord {
        let wall = to_micro(wall);
        LeaderElectionRecord {
            holder_identity: self.identity.clone(),
            lease_duration_seconds: self.lease_duration_seconds,
            acquire_time: Some(wall),
            renew_time: Some(wall),
            lease_transitions: 0,
            strategy: None,
            preferred_holder: None,
        }
    }

    /// The fast path: when this candidate leads and its lease is still
    /// valid, the renewal it can write without reading first (keeping the
    /// observed `acquireTime` and `leaseTransitions`).
    pub(crate) fn optimistic_renewal(
        &self,
        now: Instant,
        wall: Timestamp,
    ) -> Option<LeaderElectionRecord> {
        if !(self.is_leader() && self.lease_valid(now)) {
            return None;
        }
        let observed = self.observed.as_ref()?;
        let mut record = self.fresh_record(wall);
        record.acquire_time = observed.acquire_time;
        record.lease_transitions = observed.lease_transitions;
        Some(record)
    }

    /// After [`observe`](Self::observe)-ing `current` (read at `now`): wait
    /// for its holder, renew it, or take it over.
    pub(crate) fn decide(
        &self,
        current: &LeaderElectionRecord,
        now: Instant,
        wall: Timestamp,
    ) -> Decision {
        if current.is_held() && self.lease_valid(now) && !self.is_leader() {
            return Decision::Wait {
                holder: current.holder_identity.clone(),
            };
        }
        let mut record = self.fresh_record(wall);
        if self.is_leader() {
            record.acquire_time = current.acquire_time;
            record.lease_transitions = current.lease_transitions;
        } else {
            record.lease_transitions = current.lease_transitions.saturating_add(1);
        }
        Decision::Write(record)
    }

    /// The record that releases the lease: no holder, a one-second
    /// duration, the transitions count kept (client-go's `release`).
    pub(crate) fn release_record(
        &self,
        current: &LeaderElectionRecord,
        wall: Timestamp,
    ) -> LeaderElectionRecord {
        let wall = to_micro(wall);
        LeaderElectionRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(wall),
            renew_time: Some(wall),
            lease_transitions: current.lease_transitions,
            strategy: None,
            preferred_holder: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn wall() -> Timestamp {
        "2024-05-06T07:08:09.123456Z".parse().unwrap()
    }

    fn held_by(holder: &str, transitions: i32) -> LeaderElectionRecord {
        LeaderElectionRecord {
            holder_identity: holder.into(),
            lease_duration_seconds: 15,
            acquire_time: Some("2024-01-01T00:00:00Z".parse().unwrap()),
            renew_time: Some("2024-01-01T00:00:10Z".parse().unwrap()),
            lease_transitions: transitions,
            ..Default::default()
        }
    }

    #[test]
    fn a_foreign_lease_is_respected_until_unchanged_for_its_duration() {
        let t0 = Instant::now();
        let mut me = Observer::new("me".into(), 15);
        let theirs = held_by("other", 4);
        me.observe(theirs.clone(), t0);
        assert_eq!(
            me.decide(&theirs, t0 + Duration::from_secs(14), wall()),
            Decision::Wait {
                holder: "other".into()
            }
        );
        // Reading the same record again does not move the observation time.
        me.observe(theirs.clone(), t0 + Duration::from_secs(10));
        assert_eq!(me.observed_at(), Some(t0));
        let Decision::Write(takeover) = me.decide(&theirs, t0 + Duration::from_secs(15), wall())
        else {
            panic!("expired lease must be taken over");
        };
        assert_eq!(takeover.holder_identity, "me");
        assert_eq!(takeover.lease_transitions, 5);
        assert_eq!(takeover.acquire_time, Some(wall()));
        assert_eq!(takeover.renew_time, Some(wall()));
        assert_eq!(takeover.lease_duration_seconds, 15);
    }

    #[test]
    fn expiry_uses_the_observation_time_not_the_records_renew_time() {
        // The record says it was renewed long ago (a skewed clock): it is
        // still valid for a full duration from when we first saw it.
        let t0 = Instant::now();
        let mut me = Observer::new("me".into(), 15);
        let mut stale = held_by("other", 0);
        stale.renew_time = Some("2000-01-01T00:00:00Z".parse().unwrap());
        me.observe(stale.clone(), t0);
        assert!(matches!(
            me.decide(&stale, t0 + Duration::from_secs(1), wall()),
            Decision::Wait { .. }
        ));
        // A change restarts the wait.
        let mut renewed = stale.clone();
        renewed.renew_time = Some("2000-01-01T00:00:02Z".parse().unwrap());
        me.observe(renewed.clone(), t0 + Duration::from_secs(14));
        assert!(matches!(
            me.decide(&renewed, t0 + Duration::from_secs(20), wall()),
            Decision::Wait { .. }
        ));
        assert!(matches!(
            me.decide(&renewed, t0 + Duration::from_secs(29), wall()),
            Decision::Write(_)
        ));
    }

    #[test]
    fn the_records_own_duration_decides_expiry() {
        let t0 = Instant::now();
        let mut me = Observer::new("me".into(), 15);
        let mut short = held_by("other", 0);
        short.lease_duration_seconds = 1;
        me.observe(short.clone(), t0);
        assert!(matches!(
            me.decide(&short, t0 + Duration::from_secs(1), wall()),
            Decision::Write(_)
        ));
    }

    #[test]
    fn an_empty_holder_is_free_to_take() {
        let t0 = Instant::now();
        let mut me = Observer::new("me".into(), 15);
        let released = me.release_record(&held_by("other", 7), wall());
        assert_eq!(released.holder_identity, "");
        assert_eq!(released.lease_duration_seconds, 1);
        assert_eq!(released.lease_transitions, 7);
        me.observe(released.clone(), t0);
        let Decision::Write(r) = me.decide(&released, t0, wall()) else {
            panic!("a released lease is free");
        };
        assert_eq!(r.lease_transitions, 8);
    }

    #[test]
    fn the_leader_keeps_acquire_time_and_transitions() {
        let t0 = Instant::now();
        let mut me = Observer::new("me".into(), 15);
        let mine = held_by("me", 3);
        me.set_observed(mine.clone(), t0);
        assert!(me.is_leader());
        assert_eq!(me.leader(), Some("me"));
        let fast = me
            .optimistic_renewal(t0 + Duration::from_secs(2), wall())
            .unwrap();
        assert_eq!(fast.acquire_time, mine.acquire_time);
        assert_eq!(fast.lease_transitions, 3);
        assert_eq!(fast.renew_time, Some(wall()));
        let Decision::Write(slow) = me.decide(&mine, t0 + Duration::from_secs(2), wall()) else {
            panic!("the leader renews");
        };
        assert_eq!(slow, fast);
        // Past the lease duration the fast path is off: read first.
        assert!(me
            .optimistic_renewal(t0 + Duration::from_secs(15), wall())
            .is_none());
    }

    #[test]
    fn nothing_observed_means_no_leader_and_no_valid_lease() {
        let me = Observer::new("me".into(), 15);
        assert!(!me.is_leader());
        assert_eq!(me.leader(), None);
        assert!(!me.lease_valid(Instant::now()));
        assert!(me.optimistic_renewal(Instant::now(), wall()).is_none());
        let fresh = me.fresh_record("2024-05-06T07:08:09.123456789Z".parse().unwrap());
        assert_eq!(fresh.acquire_time, Some(wall()));
        assert_eq!(fresh.lease_transitions, 0);
    }
}
