//! Property tests: the workqueue against a simple sequential model of
//! client-go's semantics with controller-runtime's priorities
//! (`pkg/controller/priorityqueue`) and the fairness of its PR #3261, under
//! random add / add_after (each at a priority) / get / done / advance-time /
//! shutdown sequences on a paused tokio clock, with and without a fairness
//! function.
//!
//! Besides agreeing with the model step by step (which item, at which
//! priority), every run checks the invariants the controller relies on:
//! never two holders of one item, at most one queued copy, and nothing
//! lost (every item is handed out after its last add, unless the queue was
//! shut down).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use futures::FutureExt as _;
use kubeforge::workqueue::{Priority, WorkQueue, LOW_PRIORITY};
use proptest::prelude::*;

type Key = u8;

#[derive(Debug, Clone)]
enum Op {
    Add(Key, Priority),
    AddAfter(Key, u64, Priority),
    Get,
    /// Done with the n-th held item (mod the number held), or with a key
    /// nobody holds when nothing is held.
    Done(usize),
    Advance(u64),
    Shutdown,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..6u8;
    let priority = prop_oneof![Just(LOW_PRIORITY), Just(0), Just(5)];
    prop_oneof![
        6 => (key.clone(), priority.clone()).prop_map(|(k, p)| Op::Add(k, p)),
        4 => (key, 0..40u64, priority).prop_map(|(k, d, p)| Op::AddAfter(k, d, p)),
        6 => Just(Op::Get),
        5 => any::<usize>().prop_map(Op::Done),
        3 => (1..30u64).prop_map(Op::Advance),
        1 => Just(Op::Shutdown),
    ]
}

/// The fairness group of a key when the queue has a fairness function.
fn group_of(k: Key) -> u64 {
    u64::from(k % 3)
}

/// A queued copy: key, priority, and when it was queued.
#[derive(Clone, Copy, Debug)]
struct Queued {
    key: Key,
    priority: Priority,
    seq: u64,
}

/// client-go's queue with controller-runtime's priorities and PR #3261's
/// turns, written as plainly as possible. Time is in ms.
#[derive(Default)]
struct Model {
    queue: Vec<Queued>,
    /// Dirty items and the priority they are (to be) queued at.
    dirty: BTreeMap<Key, Priority>,
    processing: BTreeSet<Key>,
    /// Delayed items: ready time, the sequence number of that time, and
    /// the highest priority asked for.
    waiting: HashMap<Key, (u64, u64, Priority)>,
    /// When each (priority, group) holding queued items got its turn:
    /// the group with the oldest turn at the highest priority goes next.
    turns: HashMap<(Priority, u64), u64>,
    seq: u64,
    now: u64,
    shut: bool,
    fair: bool,
}

impl Model {
    fn fresh(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn group(&self, k: Key) -> u64 {
        if self.fair {
            group_of(k)
        } else {
            0
        }
    }

    fn holds(&self, priority: Priority, group: u64) -> bool {
        self.queue
            .iter()
            .any(|q| q.priority == priority && self.group(q.key) == group)
    }

    /// Queues `k` at the back of its group; a group that held nothing at
    /// this priority gets the last turn.
    fn push(&mut self, k: Key, priority: Priority) {
        assert!(
            !self.queue.iter().any(|q| q.key == k),
            "model: two queued copies"
        );
        let group = self.group(k);
        if !self.holds(priority, group) {
            let turn = self.fresh();
            self.turns.insert((priority, group), turn);
        }
        let seq = self.fresh();
        self.queue.push(Queued {
            key: k,
            priority,
            seq,
        });
    }

    fn unqueue(&mut self, at: usize) -> Queued {
        let q = self.queue.remove(at);
        let group = self.group(q.key);
        if !self.holds(q.priority, group) {
            self.turns.remove(&(q.priority, group));
        }
        q
    }

    fn add(&mut self, k: Key, priority: Priority) {
        if self.shut {
            return;
        }
        match self.dirty.get(&k).copied() {
            Some(old) => {
                if priority > old {
                    self.dirty.insert(k, priority);
                    if let Some(at) = self.queue.iter().position(|q| q.key == k) {
                        // Raised: to the back of the new priority.
                        self.unqueue(at);
                        self.push(k, priority);
                    }
                }
            }
            None => {
                self.dirty.insert(k, priority);
                if !self.processing.contains(&k) {
                    self.push(k, priority);
                }
            }
        }
    }

    /// Due delayed items are added in ready-time order (ties: oldest first).
    fn promote(&mut self) {
        let mut due: Vec<(u64, u64, Key, Priority)> = self
            .waiting
            .iter()
            .filter(|(_, (ready, _, _))| *ready <= self.now)
            .map(|(k, (ready, seq, p))| (*ready, *seq, *k, *p))
            .collect();
        due.sort();
        for (_, _, k, p) in due {
            self.waiting.remove(&k);
            self.add(k, p);
        }
    }

    fn add_after(&mut self, k: Key, delay: u64, priority: Priority) {
        if self.shut {
            return;
        }
        if delay == 0 {
            self.add(k, priority);
            return;
        }
        let ready = self.now + delay;
        match self.waiting.get_mut(&k) {
            Some((existing, _, p)) if *existing <= ready => *p = (*p).max(priority),
            Some((existing, seq, p)) => {
                *existing = ready;
                *seq = self.seq + 1;
                *p = (*p).max(priority);
                self.seq += 1;
            }
            None => {
                let seq = self.fresh();
                self.waiting.insert(k, (ready, seq, priority));
            }
        }
    }

    /// `None`: would block; `Some(None)`: shut down and empty.
    fn get(&mut self) -> Option<Option<(Key, Priority)>> {
        let Some(top) = self.queue.iter().map(|q| q.priority).max() else {
            return if self.shut { Some(None) } else { None };
        };
        let (&(_, group), _) = self
            .turns
            .iter()
            .filter(|((p, _), _)| *p == top)
            .min_by_key(|(_, turn)| **turn)
            .expect("model: a queued priority has turns");
        let (at, _) = self
            .queue
            .iter()
            .enumerate()
            .filter(|(_, q)| q.priority == top && self.group(q.key) == group)
            .min_by_key(|(_, q)| q.seq)
            .expect("model: a group with a turn holds items");
        let q = self.unqueue(at);
        if self.holds(top, group) {
            let turn = self.fresh();
            self.turns.insert((top, group), turn);
        }
        assert!(
            self.processing.insert(q.key),
            "model: two holders of {}",
            q.key
        );
        self.dirty.remove(&q.key);
        Some(Some((q.key, q.priority)))
    }

    fn done(&mut self, k: Key) {
        if !self.processing.remove(&k) {
            return;
        }
        if let Some(p) = self.dirty.get(&k).copied() {
            self.push(k, p);
        }
    }

    fn shutdown(&mut self) {
        self.shut = true;
        self.waiting.clear();
    }
}

/// Runs `ops` against a fresh queue and the model, with keys in three
/// fairness groups if `fair`; panics on divergence.
fn check(ops: Vec<Op>, fair: bool) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let q: WorkQueue<Key> = if fair {
            WorkQueue::builder().fairness(|&k| group_of(k)).build()
        } else {
            WorkQueue::new()
        };
        let mut m = Model {
            fair,
            ..Model::default()
        };
        let mut held: Vec<Key> = Vec::new();
        // Step of each key's last add and last hand-out.
        let mut last_add: HashMap<Key, usize> = HashMap::new();
        let mut last_out: HashMap<Key, usize> = HashMap::new();

        for (step, op) in ops.iter().enumerate() {
            // Every queue operation first moves in what is due.
            m.promote();
            match *op {
                Op::Add(k, p) => {
                    q.add_with_priority(k, p);
                    m.add(k, p);
                    if !m.shut {
                        last_add.insert(k, step);
                    }
                }
                Op::AddAfter(k, d, p) => {
                    q.add_after_with_priority(k, Duration::from_millis(d), p);
                    m.add_after(k, d, p);
                    if !m.shut {
                        last_add.insert(k, step);
                    }
                }
                Op::Get => {
                    let got = q.get_with_priority().now_or_never();
                    let want = m.get();
                    assert_eq!(got, want, "get at step {step}: {op:?}");
                    if let Some(Some((k, _))) = got {
                        assert!(!held.contains(&k), "{k} handed out twice at once");
                        held.push(k);
                        last_out.insert(k, step);
                    }
                }
                Op::Done(n) => {
                    let k = if held.is_empty() {
                        (n % 6) as Key
                    } else {
                        held.remove(n % held.len())
                    };
                    q.done(&k);
                    m.done(k);
                }
                Op::Advance(ms) => {
                    tokio::time::advance(Duration::from_millis(ms)).await;
                    m.now += ms;
                    m.promote();
                }
                Op::Shutdown => {
                    q.shutdown();
                    m.shutdown();
                }
            }
            assert_eq!(q.len(), m.queue.len(), "len after step {step}: {op:?}");
            assert_eq!(q.is_shutting_down(), m.shut);
        }

        // Finish: everything delayed becomes due, every holder finishes, and
        // workers drain the queue.
        tokio::time::advance(Duration::from_millis(1_000)).await;
        m.now += 1_000;
        m.promote();
        let end = ops.len();
        for k in held.drain(..) {
            q.done(&k);
            m.done(k);
        }
        loop {
            let got = q.get_with_priority().now_or_never();
            assert_eq!(got, m.get(), "draining");
            match got {
                Some(Some((k, _))) => {
                    last_out.insert(k, end);
                    q.done(&k);
                    m.done(k);
                }
                Some(None) | None => break,
            }
        }
        assert_eq!(q.len(), 0);
        assert!(m.processing.is_empty() && m.dirty.is_empty() || m.shut);

        if !m.shut {
            for (k, added) in &last_add {
                let out = last_out.get(k).copied();
                assert!(
                    out.is_some_and(|o| o > *added),
                    "{k} added at step {added} but last handed out at {out:?}"
                );
            }
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn queue_matches_the_sequential_model(
        ops in proptest::collection::vec(op(), 1..80),
        fair in any::<bool>(),
    ) {
        check(ops, fair);
    }
}

/// A hand-written sequence touching every rule at once, so a regression
/// shows up even with few proptest cases.
#[test]
fn model_walkthrough() {
    use Op::*;
    for fair in [false, true] {
        check(
            vec![
                Add(1, 0),
                Add(1, 0),
                AddAfter(2, 10, 0),
                AddAfter(2, 5, 0),
                Get,
                Add(1, 0),
                AddAfter(1, 3, 0),
                Get,
                Advance(5),
                Get,
                Done(0),
                Get,
                Done(0),
                Done(0),
                Get,
                Advance(20),
                Get,
                Shutdown,
                Add(3, 0),
                Get,
                Done(0),
                Get,
            ],
            fair,
        );
    }
}

/// The priority rules in one sequence: low adds wait behind a later
/// default one, a raise moves a key to the back of its new priority, a
/// re-add while processing keeps the highest priority asked, and groups
/// take turns.
#[test]
fn priority_walkthrough() {
    use Op::*;
    let low = LOW_PRIORITY;
    for fair in [false, true] {
        check(
            vec![
                Add(0, low),
                Add(3, low),
                Add(1, low),
                Add(4, 0),
                Add(3, 5),
                Add(1, 0),
                Get,
                Add(3, low),
                Add(3, 0),
                Get,
                Get,
                Done(0),
                Get,
                AddAfter(2, 5, 5),
                AddAfter(2, 1, low),
                Advance(2),
                Get,
                Done(0),
                Done(0),
                Get,
                Get,
            ],
            fair,
        );
    }
}
