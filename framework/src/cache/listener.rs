//! One handler's side of an informer: its own event buffer, its sync
//! tracking and its backlog accounting (client-go's `processorListener` and
//! `synctrack.SingleFileTracker`).
//!
//! The buffer is unbounded, because dropping or merging events would break
//! the in-order, old-and-new contract handlers rely on, but it is reported:
//! [`backlog`](Listener::backlog) and [`max_backlog`](Listener::max_backlog)
//! are gauges, and a `warn!` fires when the live backlog (events beyond the
//! replay of the initial list, which is expected to be large) crosses the
//! configured threshold, then again each time it doubles, re-arming once the
//! handler has caught up.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{watch, Notify};

use super::Event;

/// Where a handler (or an informer) stands on its initial sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SyncState {
    Pending,
    Synced,
    /// Removed or shut down before it synced.
    Closed,
}

struct Queue<K> {
    events: VecDeque<Event<K>>,
    closed: bool,
    /// The live backlog at which to warn next.
    warn_at: usize,
}

pub(crate) struct Listener<K> {
    pub(crate) id: u64,
    pub(crate) informer: Arc<str>,
    pub(crate) resync_period: Option<Duration>,
    queue: Mutex<Queue<K>>,
    pub(crate) wake: Notify,
    /// Initial-list adds pushed but not yet handled.
    pending_initial: AtomicUsize,
    /// The informer's own "has synced" flag.
    upstream_synced: Arc<AtomicBool>,
    synced: watch::Sender<SyncState>,
    backlog: AtomicUsize,
    max_backlog: AtomicUsize,
    warn_threshold: usize,
}

impl<K> Listener<K> {
    pub(crate) fn new(
        id: u64,
        informer: Arc<str>,
        resync_period: Option<Duration>,
        upstream_synced: Arc<AtomicBool>,
        warn_threshold: usize,
    ) -> Self {
        let warn_threshold = warn_threshold.max(1);
        Self {
            id,
            informer,
            resync_period,
            queue: Mutex::new(Queue {
                events: VecDeque::new(),
                closed: false,
                warn_at: warn_threshold,
            }),
            wake: Notify::new(),
            pending_initial: AtomicUsize::new(0),
            upstream_synced,
            synced: watch::Sender::new(SyncState::Pending),
            backlog: AtomicUsize::new(0),
            max_backlog: AtomicUsize::new(0),
            warn_threshold,
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue<K>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends events and wakes the handler's task. A closed listener drops
    /// them.
    pub(crate) fn push(&self, events: impl IntoIterator<Item = Event<K>>) {
        let mut q = self.queue();
        if q.closed {
            return;
        }
        let before = q.events.len();
        for event in events {
            if matches!(
                event,
                Event::Add {
                    is_in_initial_list: true,
                    ..
                }
            ) {
                self.pending_initial.fetch_add(1, Ordering::SeqCst);
            }
            q.events.push_back(event);
        }
        let len = q.events.len();
        if len == before {
            return;
        }
        self.backlog.store(len, Ordering::Relaxed);
        self.max_backlog.fetch_max(len, Ordering::Relaxed);
        let live = len.saturating_sub(self.pending_initial.load(Ordering::SeqCst));
        if live >= q.warn_at {
            tracing::warn!(
                informer = %self.informer,
                handler = self.id,
                backlog = len,
                "event handler is falling behind: its backlog keeps growing"
            );
            q.warn_at = q.warn_at.saturating_mul(2);
        }
        drop(q);
        self.wake.notify_one();
    }

    /// The next event, unless the queue is empty or closed.
    pub(crate) fn pop(&self) -> Option<Event<K>> {
        let mut q = self.queue();
        if q.closed {
            return None;
        }
        let event = q.events.pop_front()?;
        let len = q.events.len();
        self.backlog.store(len, Ordering::Relaxed);
        if q.warn_at > self.warn_threshold && len < self.warn_threshold / 2 {
            tracing::info!(informer = %self.informer, handler = self.id, "event handler caught up");
            q.warn_at = self.warn_threshold;
        }
        Some(event)
    }

    /// Stops delivery: queued events are dropped, nothing new is accepted,
    /// and the task ends after the event in hand (if any).
    pub(crate) fn close(&self) {
        let dropped = {
            let mut q = self.queue();
            q.closed = true;
            std::mem::take(&mut q.events)
        };
        drop(dropped);
        self.backlog.store(0, Ordering::Relaxed);
        self.synced.send_if_modified(close_pending);
        self.wake.notify_one();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.queue().closed
    }

    /// The handler finished one initial-list add.
    pub(crate) fn finished_initial(&self) {
        if self.pending_initial.fetch_sub(1, Ordering::SeqCst) == 1
            && self.upstream_synced.load(Ordering::SeqCst)
        {
            self.mark_synced();
        }
    }

    /// The informer just synced (or was already when this listener joined).
    pub(crate) fn upstream_synced(&self) {
        if self.pending_initial.load(Ordering::SeqCst) == 0 {
            self.mark_synced();
        }
    }

    fn mark_synced(&self) {
        self.synced.send_if_modified(|s| {
            let pending = *s == SyncState::Pending;
            if pending {
                *s = SyncState::Synced;
            }
            pending
        });
    }

    /// The informer has synced and this handler has handled every event up
    /// to that point (client-go's `SingleFileTracker.HasSynced`).
    pub(crate) fn has_synced(&self) -> bool {
        self.upstream_synced.load(Ordering::SeqCst)
            && self.pending_initial.load(Ordering::SeqCst) == 0
    }

    /// Waits until synced (`true`) or closed first (`false`).
    pub(crate) async fn wait_for_sync(&self) -> bool {
        wait_for(self.synced.subscribe()).await
    }

    pub(crate) fn backlog(&self) -> usize {
        self.backlog.load(Ordering::Relaxed)
    }

    pub(crate) fn max_backlog(&self) -> usize {
        self.max_backlog.load(Ordering::Relaxed)
    }
}

/// Turns `Pending` into `Closed`; reports whether it changed anything.
pub(crate) fn close_pending(state: &mut SyncState) -> bool {
    let pending = *state == SyncState::Pending;
    if pending {
        *state = SyncState::Closed;
    }
    pending
}

/// Waits for a sync state to leave `Pending`; `true` if it became `Synced`.
pub(crate) async fn wait_for(mut rx: watch::Receiver<SyncState>) -> bool {
    match rx.wait_for(|s| *s != SyncState::Pending).await {
        Ok(state) => *state == SyncState::Synced,
        Err(_) => false,
    }
}
