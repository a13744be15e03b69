//! The delaying queue's waiting room: items and the time each becomes ready.
//!
//! A min-heap on ready time with one live entry per item, like client-go's
//! `waitForPriorityQueue` plus `waitingEntryByData` in `delaying_queue.go`:
//! adding an item that is already waiting keeps the earlier of the two
//! times, and the higher of the two priorities (as controller-runtime's
//! priority queue keeps the minimum ready time and the maximum priority of
//! an item added twice with `After`). Moving an entry earlier pushes a fresh heap entry and leaves the
//! old one to be skipped when it surfaces (lazy deletion); the heap is
//! rebuilt when such stale entries outnumber live ones, so memory stays
//! proportional to the items waiting.

use std::cmp::Ordering;
use std::collections::hash_map::Entry as MapEntry;
use std::collections::{BinaryHeap, HashMap};
use std::hash::Hash;

use tokio::time::Instant;

use super::ready::Priority;

/// A heap entry; ordered so that `BinaryHeap` (a max-heap) pops the earliest
/// ready time first, ties broken by insertion order.
struct HeapEntry<T> {
    ready_at: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for HeapEntry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ready_at == other.ready_at && self.seq == other.seq
    }
}

impl<T> Eq for HeapEntry<T> {}

impl<T> PartialOrd for HeapEntry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for HeapEntry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.ready_at, other.seq).cmp(&(self.ready_at, self.seq))
    }
}

/// A waiting item's ready time, the sequence of its live heap entry, and
/// the priority it is added with when due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Live {
    ready_at: Instant,
    seq: u64,
    priority: Priority,
}

/// Items waiting for their ready time.
pub(crate) struct Waiting<T> {
    heap: BinaryHeap<HeapEntry<T>>,
    /// The live entry of each waiting item: its ready time, heap sequence
    /// and priority.
    live: HashMap<T, Live>,
    next_seq: u64,
}

impl<T: Eq + Hash + Clone> Waiting<T> {
    pub(crate) fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            live: HashMap::new(),
            next_seq: 0,
        }
    }

    /// Number of items waiting.
    pub(crate) fn len(&self) -> usize {
        self.live.len()
    }

    /// The earliest ready time, if anything waits.
    pub(crate) fn next_ready(&mut self) -> Option<Instant> {
        self.drop_stale_top();
        self.heap.peek().map(|e| e.ready_at)
    }

    /// Schedules `item` at `ready_at` with `priority`, or, if it already
    /// waits, moves it earlier if `ready_at` is earlier and raises its
    /// priority if `priority` is higher. Returns whether the earliest ready
    /// time of the whole room moved earlier (so a timer must be re-armed).
    pub(crate) fn insert(&mut self, item: T, ready_at: Instant, priority: Priority) -> bool {
        let before = self.next_ready();
        let seq = self.next_seq;
        match self.live.entry(item) {
            MapEntry::Occupied(mut o) => {
                let live = o.get_mut();
                live.priority = live.priority.max(priority);
                if live.ready_at <= ready_at {
                    return false;
                }
                live.ready_at = ready_at;
                live.seq = seq;
                self.heap.push(HeapEntry {
                    ready_at,
                    seq,
                    item: o.key().clone(),
                });
            }
            MapEntry::Vacant(v) => {
                self.heap.push(HeapEntry {
                    ready_at,
                    seq,
                    item: v.key().clone(),
                });
                v.insert(Live {
                    ready_at,
                    seq,
                    priority,
                });
            }
        }
        self.next_seq += 1;
        if self.heap.len() > 2 * self.live.len() + 64 {
            self.rebuild();
        }
        before.is_none_or(|b| ready_at < b)
    }

    /// Removes and returns the earliest item if it is ready at `now`, with
    /// the time it became ready and its priority.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(T, Instant, Priority)> {
        self.drop_stale_top();
        if self.heap.peek()?.ready_at > now {
            return None;
        }
        let entry = self.heap.pop()?;
        let priority = self.live.remove(&entry.item).map_or(0, |l| l.priority);
        Some((entry.item, entry.ready_at, priority))
    }

    /// Forgets everything waiting.
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
        self.live.clear();
    }

    fn is_live(&self, entry: &HeapEntry<T>) -> bool {
        self.live
            .get(&entry.item)
            .is_some_and(|l| (l.ready_at, l.seq) == (entry.ready_at, entry.seq))
    }

    fn drop_stale_top(&mut self) {
        while let Some(top) = self.heap.peek() {
            if self.is_live(top) {
                return;
            }
            self.heap.pop();
        }
    }

    fn rebuild(&mut self) {
        let heap = std::mem::take(&mut self.heap);
        self.heap = heap.into_iter().filter(|e| self.is_live(e)).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn pops_in_ready_order_and_keeps_the_earlier_time() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut w = Waiting::new();
        assert!(w.insert("a", t0 + ms(30), 0));
        assert!(w.insert("b", t0 + ms(20), 0));
        assert!(!w.insert("c", t0 + ms(25), 0));
        // Later time for a waiting item: ignored.
        assert!(!w.insert("b", t0 + ms(50), 0));
        // Earlier time: moves it, and becomes the new head.
        assert!(w.insert("a", t0 + ms(10), 0));
        assert_eq!(w.len(), 3);
        assert_eq!(w.next_ready(), Some(t0 + ms(10)));
        assert_eq!(w.pop_due(t0 + ms(5)), None);
        assert_eq!(w.pop_due(t0 + ms(100)), Some(("a", t0 + ms(10), 0)));
        assert_eq!(w.pop_due(t0 + ms(100)), Some(("b", t0 + ms(20), 0)));
        assert_eq!(w.pop_due(t0 + ms(100)), Some(("c", t0 + ms(25), 0)));
        // The stale entry for "a" at 30 ms is skipped, not handed out.
        assert_eq!(w.pop_due(t0 + ms(100)), None);
        assert_eq!(w.len(), 0);
    }

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let t = Instant::now();
        let mut w = Waiting::new();
        for i in 0..10 {
            w.insert(i, t, 0);
        }
        let order: Vec<_> = std::iter::from_fn(|| w.pop_due(t).map(|(i, _, _)| i)).collect();
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn stale_entries_are_bounded() {
        let t0 = Instant::now();
        let mut w = Waiting::new();
        // Move one item earlier many times: the heap must not grow without bound.
        for i in (0..10_000u64).rev() {
            w.insert("x", t0 + Duration::from_nanos(i), 0);
        }
        assert!(w.heap.len() <= 2 * w.live.len() + 65, "{}", w.heap.len());
        assert_eq!(w.pop_due(t0), Some(("x", t0, 0)));
        assert_eq!(w.pop_due(t0 + Duration::from_secs(1)), None);
    }

    #[test]
    fn a_second_add_keeps_the_higher_priority_whatever_its_time() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut w = Waiting::new();
        w.insert("a", t0 + ms(10), -100);
        // Later time, higher priority: the time stays, the priority rises.
        assert!(!w.insert("a", t0 + ms(50), 5));
        // Earlier time, lower priority: the time moves, the priority stays.
        assert!(w.insert("a", t0 + ms(5), 0));
        assert_eq!(w.pop_due(t0 + ms(5)), Some(("a", t0 + ms(5), 5)));
        assert_eq!(w.pop_due(t0 + ms(100)), None);
    }
}
