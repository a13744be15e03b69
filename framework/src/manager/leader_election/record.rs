//! [`LeaderElectionRecord`]: what a candidate reads from and writes to the
//! Lease's `spec`, and its conversion to and from `coordination.k8s.io/v1`
//! `LeaseSpec` (as client-go's `resourcelock/leaselock.go` maps them).
//!
//! Times are `MicroTime` on the wire (`2024-01-02T03:04:05.000000Z`); the
//! record keeps them as [`jiff::Timestamp`] truncated to microseconds, so a
//! record written and read back compares equal.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

/// The leader-election state held in a Lease.
///
/// Candidates never trust the times in it (they may come from another
/// clock); they only use a *change* of the record as proof that the holder
/// is alive.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// Who holds the lease; empty when nobody does (e.g. after a release).
    pub holder_identity: String,
    /// How long others must see the record unchanged before taking over.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the lease.
    pub acquire_time: Option<Timestamp>,
    /// When the current holder last renewed the lease.
    pub renew_time: Option<Timestamp>,
    /// How many times the lease changed holder.
    pub lease_transitions: i32,
    /// Coordinated leader election's strategy, if any (kept as found).
    pub strategy: Option<String>,
    /// Coordinated leader election's preferred holder, if any.
    pub preferred_holder: Option<String>,
}

impl LeaderElectionRecord {
    /// The lease duration as a [`Duration`]; a negative value from the
    /// server counts as zero (the lease is then always expired).
    pub fn lease_duration(&self) -> Duration {
        Duration::from_secs(u64::try_from(self.lease_duration_seconds).unwrap_or(0))
    }

    /// Whether someone holds the lease.
    pub fn is_held(&self) -> bool {
        !self.holder_identity.is_empty()
    }

    /// Reads a Lease's spec. Missing fields read as empty or zero, as in
    /// client-go's `LeaseSpecToLeaderElectionRecord`.
    pub fn from_spec(spec: &LeaseSpec) -> Self {
        Self {
            holder_identity: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
            acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
            renew_time: spec.renew_time.as_ref().map(|t| t.0),
            lease_transitions: spec.lease_transitions.unwrap_or(0),
            strategy: spec.strategy.clone().filter(|s| !s.is_empty()),
            preferred_holder: spec.preferred_holder.clone().filter(|s| !s.is_empty()),
        }
    }

    /// The Lease spec for this record. `holderIdentity`,
    /// `leaseDurationSeconds` and `leaseTransitions` are always written (an
    /// empty holder is how a release reads), as client-go's
    /// `LeaderElectionRecordToLeaseSpec` does.
    pub fn to_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder_identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.map(MicroTime),
            renew_time: self.renew_time.map(MicroTime),
            lease_transitions: Some(self.lease_transitions),
            strategy: self.strategy.clone(),
            preferred_holder: self.preferred_holder.clone(),
        }
    }
}

/// `t` truncated to whole microseconds: the precision of `MicroTime`.
pub(crate) fn to_micro(t: Timestamp) -> Timestamp {
    Timestamp::from_microsecond(t.as_microsecond()).unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn micro_time_is_written_with_six_fraction_digits() {
        // kube-api-wire.md §8: MicroTime is `…05.000000Z`, also for whole seconds.
        let record = LeaderElectionRecord {
            holder_identity: "a".into(),
            lease_duration_seconds: 15,
            acquire_time: Some(ts("2024-01-02T03:04:05Z")),
            renew_time: Some(to_micro(ts("2024-01-02T03:04:06.123456789Z"))),
            lease_transitions: 3,
            ..Default::default()
        };
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some("l".into()),
                ..Default::default()
            },
            spec: Some(record.to_spec()),
        };
        let json = serde_json::to_value(&lease).unwrap();
        let spec = &json["spec"];
        assert_eq!(spec["acquireTime"], "2024-01-02T03:04:05.000000Z");
        assert_eq!(spec["renewTime"], "2024-01-02T03:04:06.123456Z");
        assert_eq!(spec["holderIdentity"], "a");
        assert_eq!(spec["leaseDurationSeconds"], 15);
        assert_eq!(spec["leaseTransitions"], 3);
        assert!(spec.get("strategy").is_none());

        let back: Lease = serde_json::from_value(json).unwrap();
        assert_eq!(
            LeaderElectionRecord::from_spec(back.spec.as_ref().unwrap()),
            record
        );
    }

    #[test]
    fn a_released_record_keeps_the_empty_holder_on_the_wire() {
        let released = LeaderElectionRecord {
            lease_duration_seconds: 1,
            lease_transitions: 2,
            ..Default::default()
        };
        let json = serde_json::to_value(released.to_spec()).unwrap();
        assert_eq!(json["holderIdentity"], "");
        assert_eq!(json["leaseDurationSeconds"], 1);
    }

    #[test]
    fn missing_fields_read_as_empty_and_negative_durations_as_zero() {
        let r = LeaderElectionRecord::from_spec(&LeaseSpec::default());
        assert_eq!(r, LeaderElectionRecord::default());
        assert!(!r.is_held());
        let r = LeaderElectionRecord::from_spec(&LeaseSpec {
            lease_duration_seconds: Some(-5),
            strategy: Some(String::new()),
            ..Default::default()
        });
        assert_eq!(r.lease_duration(), Duration::ZERO);
        assert_eq!(r.strategy, None);
    }

    #[test]
    fn truncation_keeps_microseconds_only() {
        let t = ts("2024-01-02T03:04:05.999999999Z");
        assert_eq!(to_micro(t), ts("2024-01-02T03:04:05.999999Z"));
    }
}
