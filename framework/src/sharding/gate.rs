//! [`ShardGate`]: the slots this replica may reconcile right now, and the
//! reconciles running in each, so a slot is given up only once nothing of
//! it runs any more.
//!
//! The controller asks the gate before each reconcile ([`ShardGate::admit`])
//! and holds the [`Permit`] while it runs. A slot being given up admits
//! nothing new, and counts as drained when its last permit drops. The gate
//! admits only while the replica's Lease is fresh (renewed within the
//! renew deadline); when it lapses, every permit's
//! [`revoked`](Permit::revoked) resolves, and the controller abandons
//! those reconciles before anyone else may take the slots.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use kube_core::Resource;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::cache::{Holdings, Slots, SLOTS};

/// The admission state of one replica's slots.
#[derive(Clone)]
pub struct ShardGate {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    /// The slots the cache should hold: active and draining.
    cached: watch::Sender<Slots>,
    /// Until when the Lease is fresh; `None`: lapsed (or never renewed).
    valid_until: watch::Sender<Option<Instant>>,
    /// Rung when a permit drops, so drains are noticed.
    dropped: tokio::sync::Notify,
    /// The slot label the primary kind is selected by, once the ring
    /// shards by label (see [`crate::sharding::Mechanism`]).
    labelled: Arc<OnceLock<Arc<str>>>,
}

struct State {
    active: Slots,
    draining: Slots,
    in_flight: [u32; SLOTS as usize],
}

impl Default for ShardGate {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ShardGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("ShardGate")
            .field("active", &state.active)
            .field("draining", &state.draining)
            .finish_non_exhaustive()
    }
}

impl ShardGate {
    /// A gate holding nothing.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    active: Slots::NONE,
                    draining: Slots::NONE,
                    in_flight: [0; SLOTS as usize],
                }),
                cached: watch::Sender::new(Slots::NONE),
                valid_until: watch::Sender::new(None),
                dropped: tokio::sync::Notify::new(),
                labelled: Arc::default(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// What the replica's informer of the primary kind follows for the
    /// ring named `ring`: its slots by uid, or by label once
    /// [`select_by_label`](Self::select_by_label) was called.
    pub fn holdings(&self, ring: &str) -> Holdings {
        Holdings::by_uid_until_labelled(
            ring,
            self.inner.cached.subscribe(),
            Arc::clone(&self.inner.labelled),
        )
    }

    /// What the replica's informers of owned kinds follow: their slots by
    /// the label `key` (an owned object's slot is its owner's).
    pub fn holdings_by_label(&self, ring: &str, key: &str) -> Holdings {
        Holdings::by_label(ring, key, self.inner.cached.subscribe())
    }

    /// From now on the primary kind's informer selects the slots by the
    /// label `key` (it lists again); the first key given stays.
    pub fn select_by_label(&self, key: &str) {
        if self.inner.labelled.set(key.into()).is_ok() {
            // Wakes the informers to list again with the label.
            self.inner.cached.send_modify(|_| {});
        }
    }

    /// Wakes when the slots the cache should hold change (or the
    /// selection turns to labels).
    pub(crate) fn slot_changes(&self) -> watch::Receiver<Slots> {
        self.inner.cached.subscribe()
    }

    /// The slots admitting reconciles now.
    pub fn active(&self) -> Slots {
        self.state().active
    }

    /// The slots held: active, and being given up.
    pub fn held(&self) -> Slots {
        let state = self.state();
        state.active.union(state.draining)
    }

    /// A permit to reconcile `obj`, if its slot is active and the Lease is
    /// fresh.
    pub fn admit<K: Resource>(&self, obj: &K) -> Option<Permit> {
        let fresh = self
            .inner
            .valid_until
            .borrow()
            .is_some_and(|until| Instant::now() < until);
        if !fresh {
            return None;
        }
        let slot = Slots::slot_of(obj);
        let mut state = self.state();
        if !state.active.has(slot) {
            return None;
        }
        state.in_flight[slot as usize] += 1;
        Some(Permit {
            gate: self.clone(),
            slot,
            valid_until: self.inner.valid_until.subscribe(),
        })
    }

    /// The Lease was renewed by a request sent at a time that makes it
    /// fresh until `until`.
    pub(crate) fn renewed(&self, until: Instant) {
        self.inner.valid_until.send_replace(Some(until));
    }

    /// The Lease lapsed: nothing is admitted, every permit is revoked, and
    /// every slot is dropped from the cache.
    pub(crate) fn lapse(&self) {
        self.inner.valid_until.send_replace(None);
        let mut state = self.state();
        state.active = Slots::NONE;
        state.draining = Slots::NONE;
        drop(state);
        self.publish();
    }

    /// Stops admitting `slots`; they count as drained once their
    /// reconciles finish.
    pub(crate) fn drain(&self, slots: Slots) {
        let mut state = self.state();
        let moving = state.active.intersect(slots);
        state.active = state.active.minus(moving);
        state.draining = state.draining.union(moving);
    }

    /// Admits `slots` again if they were being given up: the ring means
    /// them for this replica after all (it never wrote them free).
    pub(crate) fn resume(&self, slots: Slots) {
        let mut state = self.state();
        let back = state.draining.intersect(slots);
        state.draining = state.draining.minus(back);
        state.active = state.active.union(back);
    }

    /// The slots being given up that nothing runs in any more.
    pub(crate) fn drained(&self) -> Slots {
        let state = self.state();
        state
            .draining
            .iter()
            .filter(|&s| state.in_flight[s as usize] == 0)
            .fold(Slots::NONE, Slots::with)
    }

    /// Waits until every slot being given up has drained.
    pub(crate) async fn all_drained(&self) {
        loop {
            let notified = self.inner.dropped.notified();
            {
                let state = self.state();
                if state
                    .draining
                    .iter()
                    .all(|s| state.in_flight[s as usize] == 0)
                {
                    return;
                }
            }
            notified.await;
        }
    }

    /// The ring was written: `released` are gone, `acquired` admit.
    pub(crate) fn settle(&self, released: Slots, acquired: Slots) {
        let mut state = self.state();
        state.draining = state.draining.minus(released);
        state.active = state.active.minus(released).union(acquired);
        drop(state);
        self.publish();
    }

    fn publish(&self) {
        let held = self.held();
        self.inner.cached.send_if_modified(|cached| {
            let changed = *cached != held;
            *cached = held;
            changed
        });
    }
}

/// Leave to reconcile an object of one slot; dropping it ends the
/// reconcile's claim on the slot.
pub struct Permit {
    gate: ShardGate,
    slot: u32,
    valid_until: watch::Receiver<Option<Instant>>,
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit").field("slot", &self.slot).finish()
    }
}

impl Permit {
    /// The slot the permit is for.
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// Resolves when the replica's Lease lapses (not renewed within the
    /// renew deadline): the reconcile must stop, as another replica may
    /// take the slot once the Lease expires.
    pub async fn revoked(&mut self) {
        loop {
            let until = *self.valid_until.borrow_and_update();
            let Some(until) = until else { return };
            if Instant::now() >= until {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep_until(until) => {}
                changed = self.valid_until.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
            }
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut state = self.gate.state();
        let count = &mut state.in_flight[self.slot as usize];
        *count = count.saturating_sub(1);
        drop(state);
        self.gate.inner.dropped.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use std::time::Duration;

    fn object(uid: &str) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.uid = Some(uid.to_owned());
        cm
    }

    #[tokio::test]
    async fn a_slot_admits_while_active_and_fresh_and_drains_when_its_permits_drop() {
        let gate = ShardGate::new();
        let obj = object("0a4c3a5e-6c7b-4b53-9d1e-3f1a2b3c4d5e");
        let slot = Slots::slot_of(&obj);
        let holdings = gate.holdings("ring");
        gate.settle(Slots::NONE, Slots::NONE.with(slot));
        assert!(gate.admit(&obj).is_none(), "no renewal yet");
        gate.renewed(Instant::now() + Duration::from_secs(10));
        let permit = gate.admit(&obj).expect("active and fresh");
        assert_eq!(holdings.current(), Slots::NONE.with(slot));

        gate.drain(Slots::NONE.with(slot));
        assert!(gate.admit(&obj).is_none(), "draining admits nothing new");
        // Meant for this replica after all: it admits again.
        gate.resume(Slots::NONE.with(slot));
        assert!(gate.admit(&obj).is_some());
        gate.drain(Slots::NONE.with(slot));
        assert!(gate.drained().is_empty(), "a permit is out");
        let waiting = tokio::spawn({
            let gate = gate.clone();
            async move { gate.all_drained().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(permit);
        waiting.await.unwrap();
        assert_eq!(gate.drained(), Slots::NONE.with(slot));
        gate.settle(Slots::NONE.with(slot), Slots::NONE);
        assert!(gate.held().is_empty());
        assert_eq!(holdings.current(), Slots::NONE);
    }

    #[tokio::test(start_paused = true)]
    async fn permits_are_revoked_when_the_lease_lapses_or_goes_unrenewed() {
        let gate = ShardGate::new();
        let obj = object("5f0e9b1c-2d3a-4e5f-8a6b-7c8d9e0f1a2b");
        gate.settle(Slots::NONE, Slots::ALL);
        gate.renewed(Instant::now() + Duration::from_secs(10));
        let mut permit = gate.admit(&obj).unwrap();
        // A renewal moves the deadline on; without one it passes.
        tokio::time::sleep(Duration::from_secs(5)).await;
        gate.renewed(Instant::now() + Duration::from_secs(10));
        let started = Instant::now();
        permit.revoked().await;
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        assert!(gate.admit(&obj).is_none());

        gate.renewed(Instant::now() + Duration::from_secs(10));
        let mut permit = gate.admit(&obj).unwrap();
        gate.lapse();
        permit.revoked().await;
        assert!(gate.held().is_empty());
    }
}
