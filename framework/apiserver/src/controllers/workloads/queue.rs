//! A work queue of object keys, as client-go's: a key added while queued
//! is dropped, one added while being processed comes back once after, and
//! `add_after` delays. One worker drains it, so a key is never reconciled
//! twice at once.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::storage::ObjKey;

#[derive(Default)]
struct State {
    order: VecDeque<ObjKey>,
    queued: HashSet<ObjKey>,
}

/// The queue; cheap to share.
#[derive(Default)]
pub(crate) struct Queue {
    state: Mutex<State>,
    ready: Notify,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `key` unless it is already waiting.
    pub fn add(&self, key: ObjKey) {
        let mut st = self.lock();
        if st.queued.insert(key.clone()) {
            st.order.push_back(key);
            drop(st);
            self.ready.notify_one();
        }
    }

    /// Queues `key` after `delay`.
    pub fn add_after(self: &Arc<Self>, key: ObjKey, delay: Duration) {
        if delay.is_zero() {
            self.add(key);
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            me.add(key);
        });
    }

    /// The next key, waiting for one.
    pub async fn next(&self) -> ObjKey {
        loop {
            let notified = self.ready.notified();
            {
                let mut st = self.lock();
                if let Some(key) = st.order.pop_front() {
                    st.queued.remove(&key);
                    return key;
                }
            }
            notified.await;
        }
    }

    /// Reconciles keys with `f` until `cancel`, yielding between keys so
    /// requests and other controllers get their turn.
    pub async fn run(&self, cancel: CancellationToken, mut f: impl FnMut(&ObjKey)) {
        loop {
            let key = tokio::select! {
                _ = cancel.cancelled() => return,
                key = self.next() => key,
            };
            f(&key);
            tokio::task::yield_now().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: &str) -> ObjKey {
        ("ns".into(), n.into())
    }

    #[tokio::test]
    async fn duplicates_collapse_and_order_holds() {
        let q = Queue::default();
        q.add(k("a"));
        q.add(k("b"));
        q.add(k("a"));
        assert_eq!(q.next().await, k("a"));
        q.add(k("a"));
        assert_eq!(q.next().await, k("b"));
        assert_eq!(q.next().await, k("a"));
    }
}
