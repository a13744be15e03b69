//! The ring: which replica each slot is meant for (`desired`) and which
//! replica holds it now (`held`), kept as one annotation on the ring's
//! Lease and only ever changed by an update conditional on its
//! resourceVersion, so two replicas can never both write themselves in as
//! a slot's holder.
//!
//! [`RingState::plan`] is the whole protocol as a pure function: a replica
//! reads the ring, says which members are live and which of its own slots
//! have drained, and gets the ring to write back with what it gives up and
//! takes. A slot moves in two writes: its old holder writes it free once
//! it has stopped reconciling it, then its new holder writes itself in.
//! A holder whose Lease expired is written out by anyone (fencing by
//! expiry: it stopped working when it could not renew).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::cache::{Slots, SLOTS};

/// The annotation on the ring's Lease that holds its [`RingState`].
pub const RING_ANNOTATION: &str = "sharding.kubeforge.dev/ring";

const SLOT_COUNT: usize = SLOTS as usize;

/// Who each slot is meant for and who holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingState {
    /// Counts the writes, so that every write changes the Lease (a no-op
    /// update keeps its resourceVersion, and would prove nothing).
    epoch: u64,
    desired: Vec<Option<String>>,
    held: Vec<Option<String>>,
}

impl Default for RingState {
    fn default() -> Self {
        Self {
            epoch: 0,
            desired: vec![None; SLOT_COUNT],
            held: vec![None; SLOT_COUNT],
        }
    }
}

/// The annotation's JSON: member names once, slots as indexes (-1: none).
#[derive(Serialize, Deserialize)]
struct Encoded {
    epoch: u64,
    members: Vec<String>,
    desired: Vec<i32>,
    held: Vec<i32>,
}

/// What a replica does after reading the ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The ring to write back (unchanged: nothing to write).
    pub ring: RingState,
    /// Slots this replica holds but is no longer meant to: stop admitting
    /// reconciles of them, and give them up once drained.
    pub drain: Slots,
    /// Slots this replica gives up in this write (they had drained).
    pub released: Slots,
    /// Slots this replica takes in this write.
    pub acquired: Slots,
    /// Slots this replica holds and is still meant to: admit them (again,
    /// if an earlier plan had it start giving them up).
    pub keep: Slots,
}

impl RingState {
    /// Reads the annotation's value.
    pub fn decode(text: &str) -> Result<Self, String> {
        let encoded: Encoded =
            serde_json::from_str(text).map_err(|e| format!("not the ring's JSON: {e}"))?;
        let names = |indexes: &[i32], what: &str| -> Result<Vec<Option<String>>, String> {
            if indexes.len() != SLOT_COUNT {
                return Err(format!(
                    "{what} has {} slots, not {SLOT_COUNT}",
                    indexes.len()
                ));
            }
            indexes
                .iter()
                .map(|&i| match i {
                    -1 => Ok(None),
                    i => usize::try_from(i)
                        .ok()
                        .and_then(|i| encoded.members.get(i))
                        .cloned()
                        .map(Some)
                        .ok_or_else(|| format!("{what} names member {i}, which is not listed")),
                })
                .collect()
        };
        Ok(Self {
            epoch: encoded.epoch,
            desired: names(&encoded.desired, "desired")?,
            held: names(&encoded.held, "held")?,
        })
    }

    /// The annotation's value.
    pub fn encode(&self) -> String {
        let members: BTreeSet<&String> = self.desired.iter().chain(&self.held).flatten().collect();
        let members: Vec<String> = members.into_iter().cloned().collect();
        let index = |slot: &Option<String>| {
            slot.as_ref()
                .and_then(|m| members.iter().position(|n| n == m))
                .map_or(-1, |i| i as i32)
        };
        let encoded = Encoded {
            epoch: self.epoch,
            desired: self.desired.iter().map(index).collect(),
            held: self.held.iter().map(index).collect(),
            members,
        };
        serde_json::to_string(&encoded).expect("strings and integers serialize")
    }

    /// The member holding `slot`, if any.
    pub fn holder(&self, slot: u32) -> Option<&str> {
        self.held.get(slot as usize)?.as_deref()
    }

    /// The slots `member` holds.
    pub fn held_by(&self, member: &str) -> Slots {
        slots_of(&self.held, member)
    }

    /// The slots meant for `member`.
    pub fn desired_for(&self, member: &str) -> Slots {
        slots_of(&self.desired, member)
    }

    /// How many slots each member holds, for `kubectl` and logs.
    pub fn summary(&self) -> String {
        let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
        for member in self.held.iter().flatten() {
            *counts.entry(member).or_default() += 1;
        }
        let free = self.held.iter().filter(|h| h.is_none()).count();
        let mut parts: Vec<String> = counts.iter().map(|(m, n)| format!("{m}={n}")).collect();
        if free > 0 {
            parts.push(format!("free={free}"));
        }
        parts.join(" ")
    }

    /// What `me` does, given the members seen live (`me` among them
    /// unless it is leaving), the slots it holds itself (`mine`: a ring
    /// naming it for other slots is from before a restart or a lapse, and
    /// those are written free, or taken anew in the same write) and those
    /// of them that have drained.
    ///
    /// The ring must be read after `me` last renewed its Lease, and the
    /// Leases listed after the ring was read: then a replica that writes
    /// out a holder it thinks dead either saw that holder's renewal or
    /// writes over a ring the holder has not written since.
    pub fn plan(&self, live: &BTreeSet<String>, me: &str, mine: Slots, drained: Slots) -> Plan {
        let mut ring = self.clone();
        // A holder that is not live stopped when it could not renew.
        for holder in &mut ring.held {
            if holder.as_ref().is_some_and(|h| !live.contains(h)) {
                *holder = None;
            }
        }
        ring.rebalance(live);
        let mut plan = Plan {
            ring: RingState::default(),
            drain: Slots::NONE,
            released: Slots::NONE,
            acquired: Slots::NONE,
            keep: Slots::NONE,
        };
        for slot in 0..SLOT_COUNT {
            let s = slot as u32;
            let meant_for_me = ring.desired[slot].as_deref() == Some(me);
            if ring.held[slot].as_deref() == Some(me) {
                if !mine.has(s) {
                    ring.held[slot] = None;
                    plan.released = plan.released.with(s);
                } else if !meant_for_me {
                    if drained.has(s) {
                        ring.held[slot] = None;
                        plan.released = plan.released.with(s);
                    } else {
                        plan.drain = plan.drain.with(s);
                    }
                } else {
                    plan.keep = plan.keep.with(s);
                }
            }
            if meant_for_me && ring.held[slot].is_none() {
                ring.held[slot] = Some(me.to_owned());
                plan.acquired = plan.acquired.with(s);
            }
        }
        if !(plan.released.is_empty() && plan.acquired.is_empty()) {
            ring.epoch += 1;
        }
        plan.ring = ring;
        plan
    }

    /// `me` leaving: every slot it holds or is meant for written free, for
    /// the others to take at once.
    pub fn leave(&self, me: &str) -> Plan {
        let mut ring = self.clone();
        let released = ring.held_by(me);
        for slot in ring.held.iter_mut().chain(ring.desired.iter_mut()) {
            if slot.as_deref() == Some(me) {
                *slot = None;
            }
        }
        ring.epoch += 1;
        Plan {
            ring,
            drain: Slots::NONE,
            released,
            acquired: Slots::NONE,
            keep: Slots::NONE,
        }
    }

    /// Points every slot at a live member, moving as few as it can: slots
    /// of members gone are freed, members above their share give up their
    /// highest slots, and members below it take free slots, lowest first.
    /// With `n` members each is meant for `SLOTS / n` slots, and the
    /// `SLOTS % n` members holding most get one more, so a join moves
    /// `1/(n+1)` of the slots and a leave only the leaver's.
    fn rebalance(&mut self, live: &BTreeSet<String>) {
        for slot in &mut self.desired {
            if slot.as_ref().is_some_and(|m| !live.contains(m)) {
                *slot = None;
            }
        }
        let n = live.len();
        if n == 0 {
            return;
        }
        let mut load: BTreeMap<String, usize> = live.iter().map(|m| (m.clone(), 0)).collect();
        for member in self.desired.iter().flatten() {
            *load.get_mut(member).expect("only live members remain") += 1;
        }
        let mut by_load: Vec<(&String, usize)> = load.iter().map(|(m, c)| (m, *c)).collect();
        by_load.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let (base, extra) = (SLOT_COUNT / n, SLOT_COUNT % n);
        let quota: BTreeMap<String, usize> = by_load
            .iter()
            .enumerate()
            .map(|(i, (m, _))| ((*m).clone(), base + usize::from(i < extra)))
            .collect();
        for slot in (0..SLOT_COUNT).rev() {
            if let Some(member) = self.desired[slot].clone() {
                let l = load.get_mut(&member).expect("live members are counted");
                if *l > quota[&member] {
                    *l -= 1;
                    self.desired[slot] = None;
                }
            }
        }
        let free: Vec<usize> = (0..SLOT_COUNT)
            .filter(|&s| self.desired[s].is_none())
            .collect();
        let mut free = free.into_iter();
        for (member, want) in &quota {
            while load[member] < *want {
                let Some(slot) = free.next() else { return };
                self.desired[slot] = Some(member.clone());
                *load.get_mut(member).expect("counted") += 1;
            }
        }
    }
}

fn slots_of(slots: &[Option<String>], member: &str) -> Slots {
    slots
        .iter()
        .enumerate()
        .filter(|(_, m)| m.as_deref() == Some(member))
        .fold(Slots::NONE, |set, (s, _)| set.with(s as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    /// Runs every member's plan until nothing changes, with everything
    /// drained at once: the ring a quiet cluster settles to.
    fn settle(mut ring: RingState, live: &BTreeSet<String>) -> RingState {
        for _ in 0..10 {
            let before = ring.clone();
            for me in live {
                let mine = ring.held_by(me);
                ring = ring.plan(live, me, mine, Slots::ALL).ring;
            }
            if ring.held == before.held && ring.desired == before.desired {
                return ring;
            }
        }
        panic!("the ring did not settle: {}", ring.summary());
    }

    #[test]
    fn every_slot_gets_one_holder_in_equal_shares() {
        let live = members(&["a", "b", "c"]);
        let ring = settle(RingState::default(), &live);
        let shares: Vec<u32> = live.iter().map(|m| ring.held_by(m).len()).collect();
        assert_eq!(shares.iter().sum::<u32>(), SLOTS);
        assert!(shares.iter().all(|&n| n == 42 || n == 43), "{shares:?}");
        let all = live
            .iter()
            .fold(Slots::NONE, |s, m| s.union(ring.held_by(m)));
        assert_eq!(all, Slots::ALL);
        // The first split is contiguous: one range per member.
        assert!(live.iter().all(|m| ring.held_by(m).runs().len() == 1));
    }

    #[test]
    fn a_join_moves_one_share_and_a_leave_only_the_leavers_slots() {
        let names = ["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"];
        let mut ring = settle(RingState::default(), &members(&names[..1]));
        for n in 2..=names.len() {
            let live = members(&names[..n]);
            let next = settle(ring.clone(), &live);
            let moved = (0..SLOT_COUNT)
                .filter(|&s| next.held[s] != ring.held[s])
                .count();
            assert_eq!(moved, SLOT_COUNT / n, "join to {n} members");
            ring = next;
        }
        let live = members(&names[..7]);
        let next = settle(ring.clone(), &live);
        let moved = (0..SLOT_COUNT)
            .filter(|&s| next.held[s] != ring.held[s])
            .count();
        assert_eq!(
            moved as u32,
            ring.held_by("r7").len(),
            "only r7's slots move"
        );
    }

    #[test]
    fn a_slot_moves_only_after_its_holder_drained_it() {
        let one = members(&["a"]);
        let ring = settle(RingState::default(), &one);
        let two = members(&["a", "b"]);
        // b joins: nothing is free yet, so b takes nothing.
        let plan_b = ring.plan(&two, "b", Slots::NONE, Slots::NONE);
        assert!(plan_b.acquired.is_empty());
        // a starts draining half; until drained it gives nothing up.
        let plan_a = plan_b.ring.plan(&two, "a", Slots::ALL, Slots::NONE);
        assert_eq!(plan_a.drain.len(), 64);
        assert!(plan_a.released.is_empty());
        assert_eq!(plan_a.ring.held_by("a"), Slots::ALL);
        assert_eq!(plan_a.keep.union(plan_a.drain), Slots::ALL);
        assert!(plan_a.keep.intersect(plan_a.drain).is_empty());
        // Drained: a writes them free, then b takes them.
        let plan_a = plan_a.ring.plan(&two, "a", Slots::ALL, plan_a.drain);
        assert_eq!(plan_a.released.len(), 64);
        let plan_b = plan_a.ring.plan(&two, "b", Slots::NONE, Slots::NONE);
        assert_eq!(plan_b.acquired, plan_a.released);
        let (a, b) = (plan_b.ring.held_by("a"), plan_b.ring.held_by("b"));
        assert_eq!(a.union(b), Slots::ALL);
        assert!(a.intersect(b).is_empty());
    }

    #[test]
    fn a_dead_holder_is_written_out_and_a_rejoiner_takes_its_slots_anew_in_a_write() {
        let two = members(&["a", "b"]);
        let ring = settle(RingState::default(), &two);
        let (held_by_a, held_by_b) = (ring.held_by("a"), ring.held_by("b"));
        let plan = ring.plan(&members(&["a"]), "a", held_by_a, Slots::NONE);
        assert_eq!(plan.acquired, held_by_b, "a takes the dead b's slots");
        // b comes back after a lapse (holding nothing) while the ring
        // still names it: it takes them anew, in a write that changes the
        // ring so that it is conditional on nobody having written since.
        let plan = ring.plan(&two, "b", Slots::NONE, Slots::NONE);
        assert_eq!(plan.released, held_by_b);
        assert_eq!(plan.acquired, held_by_b);
        assert_ne!(plan.ring, ring);
        // A quiet ring is not written.
        let plan = ring.plan(&two, "b", held_by_b, Slots::NONE);
        assert_eq!(plan.ring, ring);
    }

    #[test]
    fn the_ring_round_trips_and_bad_annotations_are_named() {
        let ring = settle(RingState::default(), &members(&["a", "b"]));
        assert_eq!(RingState::decode(&ring.encode()).unwrap(), ring);
        assert_eq!(ring.summary(), "a=64 b=64");
        assert!(RingState::decode("{")
            .unwrap_err()
            .contains("not the ring's JSON"));
        let short = r#"{"epoch":1,"members":[],"desired":[],"held":[]}"#;
        assert!(RingState::decode(short).unwrap_err().contains("0 slots"));
        let bad = format!(
            r#"{{"epoch":1,"members":[],"desired":[{}],"held":[{}]}}"#,
            vec!["3"; SLOT_COUNT].join(","),
            vec!["-1"; SLOT_COUNT].join(",")
        );
        assert!(RingState::decode(&bad).unwrap_err().contains("member 3"));
    }
}
