//! [`Sharding`] (what a sharded controller is configured with) and the
//! membership loop that keeps one replica in its ring: every retry period
//! it renews the replica's Lease, reads the ring, lists the ring's member
//! Leases, and writes back the ring [`RingState::plan`] gives, handing the
//! slots it took and gave up to the [`ShardGate`].
//!
//! Liveness is judged as client-go's leader election judges a leader: a
//! member Lease is live until it has gone unchanged, as this replica saw
//! it, for its `leaseDurationSeconds`; the holder's own clock is never
//! compared with ours. A replica stops admitting reconciles when it has
//! not renewed for the renew deadline, which is shorter, so a replica
//! written out as dead has already stopped.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube_core::params::{DeleteParams, ListParams, PostParams, Preconditions};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::gate::ShardGate;
use super::mechanism::Mechanism;
use super::metrics::ShardMetrics;
use super::ring::{RingState, RING_ANNOTATION};
use crate::cache::Slots;
use crate::client::{Api, Client};
use crate::rbac::{Rule, SHARDING_LEASE_VERBS};

/// The label every member Lease of a ring carries, valued with the ring's
/// name.
pub const RING_LABEL: &str = "sharding.kubeforge.dev/ring";

/// The annotation on a member Lease that shows the slots it holds.
pub const SLOTS_ANNOTATION: &str = "sharding.kubeforge.dev/slots";

/// The annotation on the ring's Lease that shows each member's share.
pub const SUMMARY_ANNOTATION: &str = "sharding.kubeforge.dev/summary";

/// How a controller is sharded: the ring its replicas join, where its
/// Leases live, and their timings (client-go's leader-election defaults).
#[derive(Clone, Debug)]
pub struct Sharding {
    /// The ring's name: the ring's Lease, and the prefix of every member
    /// Lease. A DNS label of at most 40 characters.
    pub ring: String,
    /// The namespace of the Leases; `None`: the client's default namespace.
    pub namespace: Option<String>,
    /// This replica's name in the ring; `None`: `$POD_NAME` when set (the
    /// Downward API's usual variable), else the host name with a random
    /// suffix.
    pub identity: Option<String>,
    /// How long a member Lease stays live without a renewal.
    pub lease_duration: Duration,
    /// How long a replica keeps working without renewing its Lease.
    pub renew_deadline: Duration,
    /// How often a replica renews, and reads and writes the ring.
    pub retry_period: Duration,
    /// How the replicas select their objects of the primary kind:
    /// `shardSelector` where the server serves it, else labels (the
    /// default, [`Mechanism::Auto`]).
    pub mechanism: Mechanism,
}

impl Sharding {
    /// The ring named `ring`, with the defaults: 15 s / 10 s / 2 s.
    pub fn ring(ring: impl Into<String>) -> Self {
        Self {
            ring: ring.into(),
            namespace: None,
            identity: None,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            mechanism: Mechanism::Auto,
        }
    }

    /// The label the ring's objects carry when sharded by label.
    pub fn slot_label(&self) -> String {
        crate::cache::slot_label_key(&self.ring)
    }

    /// The settings broken, if any: the ring is a DNS label of at most 40
    /// characters (member Lease names add the identity), and
    /// `lease_duration > renew_deadline > 1.2 × retry_period`, as client-go
    /// requires of leader election.
    pub fn validate(&self) -> Result<(), String> {
        let label = |s: &str| {
            !s.is_empty()
                && s.len() <= 40
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !s.starts_with('-')
                && !s.ends_with('-')
        };
        if !label(&self.ring) {
            return Err(format!(
                "sharding ring {:?} is not a DNS label of at most 40 characters \
                 (lowercase letters, digits and '-'), e.g. \"memcached-shards\"",
                self.ring
            ));
        }
        if self.lease_duration <= self.renew_deadline {
            return Err("sharding lease_duration must be longer than renew_deadline".into());
        }
        if self.renew_deadline.as_secs_f64() <= 1.2 * self.retry_period.as_secs_f64() {
            return Err("sharding renew_deadline must be longer than 1.2 × retry_period".into());
        }
        Ok(())
    }

    /// What the membership loop needs: its Leases, read, listed, created,
    /// renewed and deleted when leaving.
    pub fn rules() -> Vec<Rule> {
        vec![Rule::resource("coordination.k8s.io", "leases").verbs(SHARDING_LEASE_VERBS)]
    }

    fn identity_or_default(&self) -> String {
        let from_env = std::env::var("POD_NAME").ok().filter(|n| !n.is_empty());
        let identity = self.identity.clone().or(from_env).unwrap_or_else(|| {
            let suffix: String = crate::ids::random_uuid().chars().take(8).collect();
            format!("{}-{suffix}", crate::ids::hostname())
        });
        dns_safe(&identity)
    }
}

/// `name` as a DNS subdomain's characters: lowercase, anything else `-`.
fn dns_safe(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '-' | '.') => c,
            _ => '-',
        })
        .collect();
    let trimmed = safe.trim_matches(|c| c == '-' || c == '.');
    if trimmed.is_empty() {
        "replica".to_owned()
    } else {
        trimmed.chars().take(200).collect()
    }
}

/// One replica's membership of its ring.
pub(crate) struct Membership {
    api: Api<Lease>,
    sharding: Sharding,
    me: String,
    lease_name: String,
    gate: ShardGate,
    /// The member Lease as last written (its resourceVersion conditions
    /// the next renewal).
    own: Option<Lease>,
    last_renewal: Option<Instant>,
    /// Each member Lease's resourceVersion and when it was first seen at it.
    seen: HashMap<String, (String, Instant)>,
    metrics: ShardMetrics,
    /// How many objects the replica's primary cache holds.
    cached_objects: Box<dyn Fn() -> usize + Send + Sync>,
}

impl Membership {
    pub(crate) fn new(
        client: Client,
        sharding: Sharding,
        gate: ShardGate,
        metrics: ShardMetrics,
        cached_objects: Box<dyn Fn() -> usize + Send + Sync>,
    ) -> Self {
        let namespace = sharding
            .namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_owned());
        let me = sharding.identity_or_default();
        Self {
            api: Api::namespaced(client, &namespace),
            lease_name: format!("{}-{me}", sharding.ring),
            me,
            sharding,
            gate,
            own: None,
            last_renewal: None,
            seen: HashMap::new(),
            metrics,
            cached_objects,
        }
    }

    /// Takes part in the ring until `stop`, then gives up every slot
    /// (after the caller drained them) and deletes the member Lease.
    pub(crate) async fn run(mut self, stop: CancellationToken) {
        tracing::info!(ring = %self.sharding.ring, identity = %self.me, "joining the sharding ring");
        while !stop.is_cancelled() {
            self.tick().await;
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(self.sharding.retry_period) => {}
            }
        }
        self.leave().await;
    }

    async fn tick(&mut self) {
        let started = Instant::now();
        match self.renew().await {
            Ok(()) => {
                self.last_renewal = Some(started);
                self.gate.renewed(started + self.sharding.renew_deadline);
            }
            Err(e) => {
                let overdue = self
                    .last_renewal
                    .is_some_and(|t| started.duration_since(t) >= self.sharding.renew_deadline);
                if overdue && !self.gate.held().is_empty() {
                    tracing::warn!(error = %e, ring = %self.sharding.ring, "cannot renew the shard Lease within the renew deadline: stopping every slot");
                    self.gate.lapse();
                } else {
                    tracing::debug!(error = %e, "shard Lease renewal failed");
                }
                return;
            }
        }
        if let Err(e) = self.step().await {
            tracing::debug!(error = %e, "sharding ring not updated this round");
        }
        self.metrics.slots.set(i64::from(self.gate.active().len()));
        self.metrics
            .objects
            .set(i64::try_from((self.cached_objects)()).unwrap_or(i64::MAX));
    }

    /// Renews (or creates) the member Lease.
    async fn renew(&mut self) -> Result<(), crate::client::Error> {
        if self.own.is_none() {
            self.own = self.api.get_opt(&self.lease_name).await?;
        }
        let now = MicroTime(jiff::Timestamp::now());
        let spec = LeaseSpec {
            holder_identity: Some(self.me.clone()),
            lease_duration_seconds: Some(self.sharding.lease_duration.as_secs().max(1) as i32),
            renew_time: Some(now.clone()),
            ..LeaseSpec::default()
        };
        let held = self.gate.held().to_string();
        let written = match self.own.take() {
            Some(mut lease) => {
                let acquired = lease.spec.as_ref().and_then(|s| s.acquire_time.clone());
                lease.spec = Some(LeaseSpec {
                    acquire_time: acquired.or(Some(now)),
                    ..spec
                });
                lease
                    .metadata
                    .annotations
                    .get_or_insert_with(BTreeMap::new)
                    .insert(SLOTS_ANNOTATION.into(), held);
                self.api
                    .replace(&self.lease_name, &PostParams::default(), &lease)
                    .await
            }
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.lease_name.clone()),
                        labels: Some(BTreeMap::from([(
                            RING_LABEL.to_owned(),
                            self.sharding.ring.clone(),
                        )])),
                        annotations: Some(BTreeMap::from([(SLOTS_ANNOTATION.to_owned(), held)])),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec {
                        acquire_time: Some(now),
                        ..spec
                    }),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
        }?;
        self.own = Some(written);
        Ok(())
    }

    /// Reads the ring, then the members, and writes the plan.
    async fn step(&mut self) -> Result<(), crate::client::Error> {
        let ring_lease = match self.api.get_opt(&self.sharding.ring).await? {
            Some(lease) => lease,
            None => self.create_ring().await?,
        };
        let ring = match ring_of(&ring_lease) {
            Ok(ring) => ring,
            Err(e) => {
                tracing::error!(ring = %self.sharding.ring, error = %e, "the sharding ring's annotation is unreadable: taking no slots until it is fixed or deleted");
                return Ok(());
            }
        };
        // Slots the gate holds that the ring does not name it for (the
        // ring's Lease was replaced by hand): not ours, stop at once.
        let foreign = self.gate.held().minus(ring.held_by(&self.me));
        if !foreign.is_empty() {
            tracing::warn!(slots = %foreign, ring = %self.sharding.ring, "the sharding ring does not name this replica for slots it was reconciling: stopping them");
            self.gate.settle(foreign, Slots::NONE);
        }
        let live = self.live_members(&ring).await?;
        self.metrics
            .members
            .set(i64::try_from(live.len()).unwrap_or(i64::MAX));
        let plan = ring.plan(&live, &self.me, self.gate.held(), self.gate.drained());
        self.gate.drain(plan.drain);
        self.gate.resume(plan.keep);
        if plan.ring == ring {
            return Ok(());
        }
        match self.write_ring(ring_lease, &plan.ring).await {
            Ok(_) => {
                self.gate.settle(plan.released, plan.acquired);
                self.metrics.taken.inc_by(u64::from(plan.acquired.len()));
                self.metrics.given_up.inc_by(u64::from(plan.released.len()));
                if !(plan.acquired.is_empty() && plan.released.is_empty()) {
                    tracing::info!(
                        took = %plan.acquired,
                        gave_up = %plan.released,
                        holds = %self.gate.active(),
                        ring = %plan.ring.summary(),
                        "sharding ring updated"
                    );
                }
                Ok(())
            }
            Err(e) if e.is_conflict() => {
                tracing::debug!("the sharding ring changed under us; trying again next round");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Replaces the ring's Lease (as last read: the update is conditional
    /// on its resourceVersion) with `ring` in its annotations.
    async fn write_ring(
        &self,
        lease: Lease,
        ring: &RingState,
    ) -> Result<Lease, crate::client::Error> {
        let lease = with_ring(lease, ring);
        self.api
            .replace(&self.sharding.ring, &PostParams::default(), &lease)
            .await
    }

    async fn create_ring(&self) -> Result<Lease, crate::client::Error> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.sharding.ring.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec::default()),
        };
        let lease = with_ring(lease, &RingState::default());
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(created) => Ok(created),
            Err(e) if e.is_already_exists() => self.api.get(&self.sharding.ring).await,
            Err(e) => Err(e),
        }
    }

    /// The members whose Leases changed within their duration, as this
    /// replica saw them, and this replica. Leases dead for two durations
    /// that hold nothing are deleted (a replica restarted under a new name
    /// leaves its old one behind).
    async fn live_members(
        &mut self,
        ring: &RingState,
    ) -> Result<BTreeSet<String>, crate::client::Error> {
        let selector = format!("{RING_LABEL}={}", self.sharding.ring);
        let leases = self
            .api
            .list(&ListParams::default().labels(&selector))
            .await?;
        let now = Instant::now();
        let mut live = BTreeSet::from([self.me.clone()]);
        let mut present = Vec::new();
        for lease in leases.items {
            let (Some(name), Some(rv)) = (
                lease.metadata.name.clone(),
                lease.metadata.resource_version.clone(),
            ) else {
                continue;
            };
            let spec = lease.spec.unwrap_or_default();
            let Some(holder) = spec.holder_identity.filter(|h| !h.is_empty()) else {
                continue;
            };
            present.push(name.clone());
            if holder == self.me {
                continue;
            }
            let duration = Duration::from_secs(
                u64::try_from(spec.lease_duration_seconds.unwrap_or(15)).unwrap_or(15),
            );
            let since = match self.seen.get(&name) {
                Some((seen_rv, at)) if *seen_rv == rv => *at,
                _ => {
                    self.seen.insert(name.clone(), (rv.clone(), now));
                    now
                }
            };
            let quiet = now.duration_since(since);
            if quiet < duration {
                live.insert(holder);
            } else if quiet >= 2 * duration && ring.held_by(&holder).is_empty() {
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        resource_version: Some(rv),
                        uid: None,
                    }),
                    ..DeleteParams::default()
                };
                if self.api.delete(&name, &dp).await.is_ok() {
                    tracing::info!(lease = %name, "deleted the Lease of a shard that left the ring");
                }
            }
        }
        self.seen.retain(|name, _| present.contains(name));
        Ok(live)
    }

    /// Gives up every slot (drained by the caller) and deletes the Lease,
    /// so the others take the slots at once instead of after expiry.
    async fn leave(&mut self) {
        self.gate.drain(Slots::ALL);
        let _ = tokio::time::timeout(self.sharding.renew_deadline, self.gate.all_drained()).await;
        let deadline = Instant::now() + self.sharding.renew_deadline;
        while Instant::now() < deadline && !self.gate.held().is_empty() {
            let Ok(Some(lease)) = self.api.get_opt(&self.sharding.ring).await else {
                break;
            };
            let Ok(ring) = ring_of(&lease) else { break };
            let plan = ring.leave(&self.me);
            match self.write_ring(lease, &plan.ring).await {
                Ok(_) => {
                    // The ring names this replica for nothing any more.
                    self.gate.settle(Slots::ALL, Slots::NONE);
                    self.metrics.given_up.inc_by(u64::from(plan.released.len()));
                    self.metrics.slots.set(0);
                    tracing::info!(gave_up = %plan.released, "left the sharding ring");
                    break;
                }
                Err(e) if e.is_conflict() => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "could not give up the shard's slots; they move when its Lease expires");
                    break;
                }
            }
        }
        let _ = self
            .api
            .delete(&self.lease_name, &DeleteParams::default())
            .await;
    }
}

/// `lease` with `ring` (and its summary) in its annotations.
fn with_ring(mut lease: Lease, ring: &RingState) -> Lease {
    let annotations = lease.metadata.annotations.get_or_insert_with(BTreeMap::new);
    annotations.insert(RING_ANNOTATION.into(), ring.encode());
    annotations.insert(SUMMARY_ANNOTATION.into(), ring.summary());
    lease
}

fn ring_of(lease: &Lease) -> Result<RingState, String> {
    match lease
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(RING_ANNOTATION))
    {
        Some(text) => RingState::decode(text),
        None => Ok(RingState::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_with_the_rule_broken_and_an_example() {
        assert!(Sharding::ring("memcached").validate().is_ok());
        let bad = Sharding::ring("Memcached_Shards").validate().unwrap_err();
        assert!(
            bad.contains("not a DNS label") && bad.contains("e.g."),
            "{bad}"
        );
        let mut timing = Sharding::ring("ok");
        timing.renew_deadline = timing.lease_duration;
        assert!(timing.validate().unwrap_err().contains("lease_duration"));
        assert_eq!(dns_safe("Host_Name.local"), "host-name.local");
        assert_eq!(dns_safe("__"), "replica");
    }
}
