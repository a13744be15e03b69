//! The ready side of the queue: the items waiting for a worker, ordered by
//! priority and, within one priority, taken in turns across fairness
//! groups.
//!
//! The order is controller-runtime's priority queue
//! (`pkg/controller/priorityqueue/priorityqueue.go`: higher priority first,
//! first in first out within a priority, an item raised to a higher
//! priority goes to the back of that priority) plus the fairness of its
//! open PR #3261 ("Priorityqueue: Optionally return items fairly"): within
//! a priority, the groups that hold items (namespaces, by default, in a
//! controller) take turns, one item each, so a group that floods the queue
//! delays another group by at most one item per turn.
//!
//! The structure, per priority level: a slab of groups, each a FIFO of
//! entries and a count of its live ones, and the turn order of the groups
//! that hold live entries. The entries of all a level's groups live in one
//! arena, each group's FIFO a list threaded through it: entries pushed in
//! turn to many groups sit side by side, so taking them in turns reads
//! memory in the order it was written, as a plain FIFO does, rather than
//! from one buffer per group. Raising an item's priority leaves its old entry
//! behind (removing it from the middle of a FIFO would cost the length of
//! the FIFO) and counts it as stale; an entry is handed out only if the
//! caller confirms it is live (the item's marks still say queued, at this
//! priority, with this entry's generation), and stale entries are purged
//! when they outnumber live ones. A group whose live count drops to zero
//! leaves the turn order at once, so stale entries never hold a turn.

use std::collections::VecDeque;
use std::hash::{BuildHasherDefault, Hasher};

use hashbrown::HashMap;

/// An item's priority: higher is handed out first (controller-runtime's
/// `AddOpts.Priority`, an `int`). Adds without one are at
/// [`DEFAULT_PRIORITY`].
pub type Priority = i32;

/// The priority of an add that names none (controller-runtime's default,
/// zero).
pub const DEFAULT_PRIORITY: Priority = 0;

/// The priority of events that carry no news: adds from an informer's
/// initial list and resyncs (controller-runtime's `handler.LowPriority`).
pub const LOW_PRIORITY: Priority = -100;

/// Levels kept around while empty, so the common priorities do not
/// reallocate their buffers each time they drain.
const KEPT_EMPTY_LEVELS: usize = 8;

/// Empty groups kept per level before they are purged.
const KEPT_EMPTY_GROUPS: usize = 256;

/// No entry: the end of a list.
const NIL: usize = usize::MAX;

/// Hashes a group key, which is already a hash (the fairness function's
/// output), with one multiply: enough to spread small keys (a user's
/// `fairness_by` may return 0, 1, 2) over the table's top bits, and no
/// second pass of a general hasher under the queue's lock.
#[derive(Default)]
struct GroupKeyHasher(u64);

impl Hasher for GroupKeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is reached (the keys are `u64`); kept total.
        let folded = bytes
            .iter()
            .fold(self.0, |h, &b| h.rotate_left(8) ^ u64::from(b));
        self.write_u64(folded);
    }

    fn write_u64(&mut self, key: u64) {
        // Fibonacci hashing: the golden ratio's 64-bit fraction.
        self.0 = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The group slots' map, keyed by group key.
type GroupSlots = HashMap<u64, usize, BuildHasherDefault<GroupKeyHasher>>;

/// One queued entry: the item and the generation its marks had when it was
/// pushed, and the next entry of its group (or of the free list).
struct Node<T> {
    /// `None` while the node is free.
    item: Option<T>,
    generation: u32,
    next: usize,
}

/// A group's FIFO: the ends of its list in the level's [`Arena`].
#[derive(Clone, Copy)]
struct List {
    head: usize,
    tail: usize,
    len: usize,
}

impl List {
    const EMPTY: Self = Self {
        head: NIL,
        tail: NIL,
        len: 0,
    };
}

/// The nodes of one level's lists, and the free ones, reused first.
struct Arena<T> {
    nodes: Vec<Node<T>>,
    free: usize,
    used: usize,
}

impl<T> Arena<T> {
    fn new() -> Self {
        Self {
            nodes: Vec::new(),
            free: NIL,
            used: 0,
        }
    }

    fn push_back(&mut self, list: &mut List, item: T, generation: u32) {
        let node = Node {
            item: Some(item),
            generation,
            next: NIL,
        };
        let at = if self.free == NIL {
            self.nodes.push(node);
            self.nodes.len() - 1
        } else {
            let at = self.free;
            self.free = self.nodes[at].next;
            self.nodes[at] = node;
            at
        };
        match self.nodes.get_mut(list.tail) {
            Some(tail) => tail.next = at,
            None => list.head = at,
        }
        list.tail = at;
        list.len += 1;
        self.used += 1;
    }

    /// Unlinks the front of `list`: its item and generation.
    fn pop_front(&mut self, list: &mut List) -> Option<(T, u32)> {
        let node = self.nodes.get_mut(list.head)?;
        let at = std::mem::replace(&mut list.head, node.next);
        if list.head == NIL {
            list.tail = NIL;
        }
        list.len -= 1;
        let item = node.item.take();
        let generation = node.generation;
        node.next = self.free;
        self.free = at;
        self.used -= 1;
        item.map(|item| (item, generation))
    }

    /// Frees every node of `list`.
    fn clear(&mut self, list: &mut List) {
        while self.pop_front(list).is_some() {}
        *list = List::EMPTY;
        if self.used == 0 {
            // All free: start over, so the next pushes are laid out in order.
            self.nodes.clear();
            self.free = NIL;
        }
    }

    /// Keeps the entries of `list` for which `keep(item, generation)`, in
    /// order.
    fn retain(&mut self, list: &mut List, mut keep: impl FnMut(&T, u32) -> bool) {
        let mut kept = List::EMPTY;
        while let Some((item, generation)) = self.pop_front(list) {
            if keep(&item, generation) {
                self.push_back(&mut kept, item, generation);
            }
        }
        *list = kept;
    }
}

struct Group {
    key: u64,
    entries: List,
    /// Entries that are live (the rest are stale).
    live: usize,
    /// Whether the group is in its level's turn order (exactly when `live`
    /// is non-zero).
    in_turns: bool,
}

struct Level<T> {
    priority: Priority,
    groups: Vec<Group>,
    /// The entries of every group.
    arena: Arena<T>,
    /// Slot of each group key in `groups` (groups with no live entries
    /// included, until purged).
    slots: GroupSlots,
    /// Slots of the groups with live entries, the next to serve first.
    turns: VecDeque<usize>,
    live: usize,
    /// The slot pushed to last: a flood of one group, or a queue without
    /// fairness, finds its group without hashing.
    last: usize,
}

impl<T> Level<T> {
    fn new(priority: Priority) -> Self {
        Self {
            priority,
            groups: Vec::new(),
            arena: Arena::new(),
            slots: GroupSlots::default(),
            turns: VecDeque::new(),
            live: 0,
            last: 0,
        }
    }

    /// The slot of group `key`, created if new; also returns how many
    /// stale entries went with empty groups purged to make room.
    fn slot(&mut self, key: u64) -> (usize, usize) {
        if self.groups.get(self.last).is_some_and(|g| g.key == key) {
            return (self.last, 0);
        }
        let mut dropped = 0;
        let slot = match self.slots.get(&key) {
            Some(&slot) => slot,
            None => {
                if self.groups.len() >= KEPT_EMPTY_GROUPS
                    && self.turns.len() < self.groups.len() / 2
                {
                    dropped = self.purge_empty_groups();
                }
                let slot = self.groups.len();
                self.groups.push(Group {
                    key,
                    entries: List::EMPTY,
                    live: 0,
                    in_turns: false,
                });
                self.slots.insert(key, slot);
                slot
            }
        };
        self.last = slot;
        (slot, dropped)
    }

    /// Drops the groups with no live entries (and their stale entries).
    /// Returns how many stale entries went with them.
    fn purge_empty_groups(&mut self) -> usize {
        let mut dropped = 0;
        let mut remap = vec![usize::MAX; self.groups.len()];
        let mut kept = Vec::with_capacity(self.turns.len());
        for (old, mut group) in std::mem::take(&mut self.groups).into_iter().enumerate() {
            if group.live == 0 {
                dropped += group.entries.len;
                self.arena.clear(&mut group.entries);
            } else {
                remap[old] = kept.len();
                kept.push(group);
            }
        }
        self.groups = kept;
        self.slots = self
            .groups
            .iter()
            .enumerate()
            .map(|(slot, g)| (g.key, slot))
            .collect();
        for slot in &mut self.turns {
            *slot = remap[*slot];
        }
        self.last = 0;
        dropped
    }
}

/// The queued items, by priority level and fairness group.
pub(crate) struct Ready<T> {
    /// Highest priority first.
    levels: Vec<Level<T>>,
    live: usize,
    stale: usize,
}

impl<T> Ready<T> {
    pub(crate) fn new() -> Self {
        Self {
            levels: Vec::new(),
            live: 0,
            stale: 0,
        }
    }

    /// Number of items queued (live entries).
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Entries left behind by priority raises and not yet purged.
    #[cfg(test)]
    fn stale(&self) -> usize {
        self.stale
    }

    fn level(&mut self, priority: Priority) -> usize {
        // Few levels (0 and -100 in a controller): a scan beats a tree.
        let at = match self.levels.iter().position(|l| l.priority <= priority) {
            Some(at) if self.levels[at].priority == priority => at,
            Some(at) => {
                self.levels.insert(at, Level::new(priority));
                at
            }
            None => {
                self.levels.push(Level::new(priority));
                self.levels.len() - 1
            }
        };
        at
    }

    /// Queues `item` at the back of `group` in `priority`; the group joins
    /// the back of the turn order if it held nothing live.
    pub(crate) fn push(&mut self, item: T, priority: Priority, group: u64, generation: u32) {
        let at = self.level(priority);
        let level = &mut self.levels[at];
        let (slot, dropped) = level.slot(group);
        self.stale -= dropped.min(self.stale);
        let g = &mut level.groups[slot];
        level.arena.push_back(&mut g.entries, item, generation);
        g.live += 1;
        if !g.in_turns {
            g.in_turns = true;
            level.turns.push_back(slot);
        }
        level.live += 1;
        self.live += 1;
    }

    /// Counts one live entry of `group` in `priority` as stale: its item
    /// moved to another priority. The group leaves the turn order if that
    /// was its last live entry.
    pub(crate) fn mark_stale(&mut self, priority: Priority, group: u64) {
        let Some(level) = self.levels.iter_mut().find(|l| l.priority == priority) else {
            return;
        };
        let Some(&slot) = level.slots.get(&group) else {
            return;
        };
        let g = &mut level.groups[slot];
        if g.live == 0 {
            return;
        }
        g.live -= 1;
        level.live -= 1;
        self.live -= 1;
        self.stale += 1;
        if g.live == 0 {
            // Everything left in the group is stale.
            self.stale -= g.entries.len.min(self.stale);
            level.arena.clear(&mut g.entries);
            if g.in_turns {
                g.in_turns = false;
                if let Some(at) = level.turns.iter().position(|&s| s == slot) {
                    level.turns.remove(at);
                }
            }
        }
    }

    /// Takes the next item: from the highest priority level with live
    /// entries, the front live entry of the group whose turn it is; that
    /// group then goes to the back of the turn order if it still holds live
    /// entries. `is_live(item, priority, generation)` tells live entries
    /// from stale ones.
    pub(crate) fn pop(
        &mut self,
        mut is_live: impl FnMut(&T, Priority, u32) -> bool,
    ) -> Option<(T, Priority)> {
        let at = self.levels.iter().position(|l| l.live > 0)?;
        let level = &mut self.levels[at];
        let priority = level.priority;
        let slot = *level.turns.front()?;
        let g = &mut level.groups[slot];
        let mut skipped = 0;
        // With nothing stale, every entry is live: no need to ask.
        let all_live = self.stale == 0;
        let item = loop {
            let (item, generation) = level.arena.pop_front(&mut g.entries)?;
            if all_live || is_live(&item, priority, generation) {
                break item;
            }
            skipped += 1;
        };
        self.stale -= skipped.min(self.stale);
        g.live -= 1;
        level.live -= 1;
        self.live -= 1;
        if level.turns.len() > 1 || g.live == 0 {
            level.turns.pop_front();
            if g.live > 0 {
                level.turns.push_back(slot);
            } else {
                g.in_turns = false;
                // What is left is stale.
                self.stale -= g.entries.len.min(self.stale);
                level.arena.clear(&mut g.entries);
            }
        }
        if level.live == 0 && self.levels.len() > KEPT_EMPTY_LEVELS {
            self.levels.remove(at);
        }
        if self.stale > self.live + 1024 {
            self.purge(&mut is_live);
        }
        Some((item, priority))
    }

    /// Drops every stale entry.
    fn purge(&mut self, is_live: &mut impl FnMut(&T, Priority, u32) -> bool) {
        for level in &mut self.levels {
            let priority = level.priority;
            for g in &mut level.groups {
                level.arena.retain(&mut g.entries, |item, generation| {
                    is_live(item, priority, generation)
                });
            }
            level.purge_empty_groups();
        }
        self.levels
            .retain(|l| l.live > 0 || l.priority == DEFAULT_PRIORITY);
        self.stale = 0;
    }

    /// Every live item with its priority, in no particular order (for the
    /// unfinished-work walk and debugging).
    #[cfg(test)]
    fn priorities(&self) -> Vec<Priority> {
        self.levels
            .iter()
            .filter(|l| l.live > 0)
            .map(|l| l.priority)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(ready: &mut Ready<&'static str>) -> Vec<(&'static str, Priority)> {
        std::iter::from_fn(|| ready.pop(|_, _, _| true)).collect()
    }

    #[test]
    fn higher_priorities_first_fifo_within_one() {
        let mut r = Ready::new();
        r.push("low-1", LOW_PRIORITY, 0, 0);
        r.push("mid-1", 0, 0, 0);
        r.push("high", 10, 0, 0);
        r.push("low-2", LOW_PRIORITY, 0, 0);
        r.push("mid-2", 0, 0, 0);
        assert_eq!(r.len(), 5);
        assert_eq!(r.priorities(), [10, 0, LOW_PRIORITY]);
        assert_eq!(
            drain(&mut r),
            [
                ("high", 10),
                ("mid-1", 0),
                ("mid-2", 0),
                ("low-1", LOW_PRIORITY),
                ("low-2", LOW_PRIORITY)
            ]
        );
        assert_eq!(r.len(), 0);
    }

    /// controller-runtime PR #3261: a flooding group gets one turn in each
    /// round, not the whole queue.
    #[test]
    fn groups_take_turns_within_a_priority() {
        let mut r = Ready::new();
        for item in ["a1", "a2", "a3", "a4"] {
            r.push(item, 0, 1, 0);
        }
        r.push("b1", 0, 2, 0);
        r.push("b2", 0, 2, 0);
        r.push("c1", 0, 3, 0);
        let order: Vec<_> = drain(&mut r).into_iter().map(|(i, _)| i).collect();
        assert_eq!(order, ["a1", "b1", "c1", "a2", "b2", "a3", "a4"]);
    }

    #[test]
    fn a_group_that_empties_rejoins_at_the_back() {
        let mut r = Ready::new();
        r.push("a1", 0, 1, 0);
        r.push("b1", 0, 2, 0);
        r.push("b2", 0, 2, 0);
        assert_eq!(r.pop(|_, _, _| true), Some(("a1", 0)));
        r.push("a2", 0, 1, 0);
        // b's turn came before a rejoined.
        let order: Vec<_> = drain(&mut r).into_iter().map(|(i, _)| i).collect();
        assert_eq!(order, ["b1", "a2", "b2"]);
    }

    #[test]
    fn stale_entries_are_skipped_and_give_up_their_turn() {
        let mut r = Ready::new();
        r.push("a0", 0, 1, 0);
        r.push("a1", 0, 1, 0);
        r.push("b1", 0, 2, 0);
        // a0 raised to 5: its old entry is stale, skipped when group 1's
        // turn comes.
        r.mark_stale(0, 1);
        r.push("a0", 5, 1, 1);
        assert_eq!((r.len(), r.stale()), (3, 1));
        let live = |item: &&str, priority: Priority, generation: u32| {
            !(*item == "a0" && priority == 0 && generation == 0)
        };
        assert_eq!(r.pop(live), Some(("a0", 5)));
        assert_eq!(r.pop(live), Some(("a1", 0)));
        assert_eq!(r.stale(), 0);
        assert_eq!(r.pop(live), Some(("b1", 0)));

        // A group whose last live entry is raised leaves the turn order, and
        // rejoins at the back.
        r.push("a2", 0, 1, 0);
        r.push("b2", 0, 2, 0);
        r.mark_stale(0, 1);
        r.push("a2", 5, 1, 1);
        r.push("a3", 0, 1, 0);
        let live = |item: &&str, priority: Priority, _: u32| !(*item == "a2" && priority == 0);
        assert_eq!(r.pop(live), Some(("a2", 5)));
        assert_eq!(r.pop(live), Some(("b2", 0)));
        assert_eq!(r.pop(live), Some(("a3", 0)));
        assert_eq!(r.pop(live), None);
    }

    #[test]
    fn stale_entries_are_purged_when_they_pile_up() {
        let mut r: Ready<u32> = Ready::new();
        for i in 0..3000 {
            r.push(i, LOW_PRIORITY, 0, 0);
        }
        r.push(9999, LOW_PRIORITY, 0, 0);
        for i in 0..3000 {
            r.mark_stale(LOW_PRIORITY, 0);
            r.push(i, 0, 0, 1);
        }
        assert_eq!((r.len(), r.stale()), (3001, 3000));
        let live = |&i: &u32, priority: Priority, _: u32| priority == 0 || i == 9999;
        for i in 0..2000 {
            assert_eq!(r.pop(live), Some((i, 0)));
        }
        assert_eq!(r.stale(), 0, "purged once stale outnumbered live");
        let rest: Vec<_> = std::iter::from_fn(|| r.pop(live)).collect();
        assert_eq!(rest.len(), 1001);
        assert_eq!(rest.last(), Some(&(9999, LOW_PRIORITY)));
    }

    #[test]
    fn a_group_left_with_only_stale_entries_drops_them() {
        let mut r: Ready<u32> = Ready::new();
        for i in 0..10 {
            r.push(i, LOW_PRIORITY, 0, 0);
        }
        for i in 0..10 {
            r.mark_stale(LOW_PRIORITY, 0);
            r.push(i, 0, 0, 1);
        }
        assert_eq!((r.len(), r.stale()), (10, 0));
    }

    #[test]
    fn empty_groups_are_purged() {
        let mut r: Ready<u64> = Ready::new();
        for i in 0..1000 {
            r.push(i, 0, i, 0);
            assert_eq!(r.pop(|_, _, _| true), Some((i, 0)));
        }
        assert!(r.levels[0].groups.len() <= KEPT_EMPTY_GROUPS + 1);
        r.push(7, 0, 3, 0);
        r.push(8, 0, 4, 0);
        assert_eq!(drain_u64(&mut r), [7, 8]);
    }

    /// The groups' FIFOs share one arena per level: interleaved pushes sit
    /// in push order, freed nodes are reused, and a drained level starts
    /// its arena over.
    #[test]
    fn a_level_keeps_its_groups_in_one_arena_reused_as_it_drains() {
        let mut r: Ready<u64> = Ready::new();
        for i in 0..6 {
            r.push(i, 0, i % 3, 0);
        }
        let nodes: Vec<_> = r.levels[0].arena.nodes.iter().map(|n| n.item).collect();
        assert_eq!(nodes, [0, 1, 2, 3, 4, 5].map(Some));
        assert_eq!(r.pop(|_, _, _| true), Some((0, 0)));
        r.push(6, 0, 0, 0);
        assert_eq!(r.levels[0].arena.nodes.len(), 6, "the freed node is reused");
        assert_eq!(drain_u64(&mut r), [1, 2, 3, 4, 5, 6]);
        assert!(r.levels[0].arena.nodes.is_empty());
    }

    /// hashbrown reads a hash's top 7 bits as the tag it compares first: a
    /// `fairness_by` returning 0, 1, 2 must not give every group one tag.
    #[test]
    fn small_group_keys_hash_to_distinct_tags() {
        use std::hash::BuildHasher as _;
        let hasher = BuildHasherDefault::<GroupKeyHasher>::default();
        let tags: std::collections::HashSet<u64> =
            (1..=64u64).map(|k| hasher.hash_one(k) >> 57).collect();
        assert!(tags.len() > 32, "only {} tags for 64 keys", tags.len());
        assert_ne!(hasher.hash_one(1u64), hasher.hash_one(2u64));
    }

    fn drain_u64(r: &mut Ready<u64>) -> Vec<u64> {
        std::iter::from_fn(|| r.pop(|_, _, _| true).map(|(i, _)| i)).collect()
    }
}
