//! Property tests: the workqueue against a simple sequential model of
//! client-go's semantics, under random add / add_after / get / done /
//! advance-time / shutdown sequences on a paused tokio clock.
//!
//! Besides agreeing with the model step by step, every run checks the
//! invariants the controller relies on: never two holders of one item, at
//! most one queued copy, and nothing lost (every item is handed out after
//! its last add, unless the queue was shut down).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::Duration;

use futures::FutureExt as _;
use kubeforge::workqueue::WorkQueue;
use proptest::prelude::*;

type Key = u8;

#[derive(Debug, Clone)]
enum Op {
    Add(Key),
    AddAfter(Key, u64),
    Get,
    /// Done with the n-th held item (mod the number held), or with a key
    /// nobody holds when nothing is held.
    Done(usize),
    Advance(u64),
    Shutdown,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..6u8;
    prop_oneof![
        6 => key.clone().prop_map(Op::Add),
        4 => (key, 0..40u64).prop_map(|(k, d)| Op::AddAfter(k, d)),
        6 => Just(Op::Get),
        5 => any::<usize>().prop_map(Op::Done),
        3 => (1..30u64).prop_map(Op::Advance),
        1 => Just(Op::Shutdown),
    ]
}

/// client-go's queue, written as plainly as possible. Time is in ms.
#[derive(Default)]
struct Model {
    queue: VecDeque<Key>,
    dirty: BTreeSet<Key>,
    processing: BTreeSet<Key>,
    /// Delayed items: ready time and the sequence number of that time.
    waiting: HashMap<Key, (u64, u64)>,
    seq: u64,
    now: u64,
    shut: bool,
}

impl Model {
    fn add(&mut self, k: Key) {
        if self.shut || self.dirty.contains(&k) {
            return;
        }
        self.dirty.insert(k);
        if !self.processing.contains(&k) {
            assert!(!self.queue.contains(&k), "model: two queued copies");
            self.queue.push_back(k);
        }
    }

    /// Due delayed items are added in ready-time order (ties: oldest first).
    fn promote(&mut self) {
        let mut due: Vec<(u64, u64, Key)> = self
            .waiting
            .iter()
            .filter(|(_, (ready, _))| *ready <= self.now)
            .map(|(k, (ready, seq))| (*ready, *seq, *k))
            .collect();
        due.sort();
        for (_, _, k) in due {
            self.waiting.remove(&k);
            self.add(k);
        }
    }

    fn add_after(&mut self, k: Key, delay: u64) {
        if self.shut {
            return;
        }
        if delay == 0 {
            self.add(k);
            return;
        }
        let ready = self.now + delay;
        match self.waiting.get(&k) {
            Some((existing, _)) if *existing <= ready => {}
            _ => {
                self.waiting.insert(k, (ready, self.seq));
                self.seq += 1;
            }
        }
    }

    /// `None`: would block; `Some(None)`: shut down and empty.
    fn get(&mut self) -> Option<Option<Key>> {
        match self.queue.pop_front() {
            Some(k) => {
                assert!(self.processing.insert(k), "model: two holders of {k}");
                self.dirty.remove(&k);
                Some(Some(k))
            }
            None if self.shut => Some(None),
            None => None,
        }
    }

    fn done(&mut self, k: Key) {
        if !self.processing.remove(&k) {
            return;
        }
        if self.dirty.contains(&k) {
            self.queue.push_back(k);
        }
    }

    fn shutdown(&mut self) {
        self.shut = true;
        self.waiting.clear();
    }
}

/// Runs `ops` against a fresh queue and the model; panics on divergence.
fn check(ops: Vec<Op>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let q: WorkQueue<Key> = WorkQueue::new();
        let mut m = Model::default();
        let mut held: Vec<Key> = Vec::new();
        // Step of each key's last add and last hand-out.
        let mut last_add: HashMap<Key, usize> = HashMap::new();
        let mut last_out: HashMap<Key, usize> = HashMap::new();

        for (step, op) in ops.iter().enumerate() {
            // Every queue operation first moves in what is due.
            m.promote();
            match *op {
                Op::Add(k) => {
                    q.add(k);
                    m.add(k);
                    if !m.shut {
                        last_add.insert(k, step);
                    }
                }
                Op::AddAfter(k, d) => {
                    q.add_after(k, Duration::from_millis(d));
                    m.add_after(k, d);
                    if !m.shut {
                        last_add.insert(k, step);
                    }
                }
                Op::Get => {
                    let got = q.get().now_or_never();
                    let want = m.get();
                    assert_eq!(got, want, "get at step {step}: {op:?}");
                    if let Some(Some(k)) = got {
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
            let got = q.get().now_or_never();
            assert_eq!(got, m.get(), "draining");
            match got {
                Some(Some(k)) => {
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
    fn queue_matches_the_sequential_model(ops in proptest::collection::vec(op(), 1..80)) {
        check(ops);
    }
}

/// A hand-written sequence touching every rule at once, so a regression
/// shows up even with few proptest cases.
#[test]
fn model_walkthrough() {
    use Op::*;
    check(vec![
        Add(1),
        Add(1),
        AddAfter(2, 10),
        AddAfter(2, 5),
        Get,
        Add(1),
        AddAfter(1, 3),
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
        Add(3),
        Get,
        Done(0),
        Get,
    ]);
}
