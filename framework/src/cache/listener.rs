//! One handler's side of an informer: its own event buffer, its sync
//! tracking and its backlog accounting (client-go's `processorListener` and
//! `synctrack.SingleFileTracker`).
//!
//! The buffer is unbounded, because dropping or merging events would break
//! the in-order, old-and-new contract handlers rely on, but it is reported:
//! [`backlog`](Listener::backlog) and [`max_backlog`](Listener::max_backlog)
//! are gauges, and a `warn!` fires when the live backlog crosses the
//! configured threshold, then again each time it doubles, re-arming once the
//! handler has caught up. "Live" leaves out bulk replays (initial-list adds
//! and resyncs), which are large by design and say nothing about whether
//! the handler keeps up with the cluster.

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
    /// How many queued events are bulk replays (initial adds, resyncs).
    bulk: usize,
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
                bulk: 0,
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
            q.bulk += usize::from(is_bulk(&event));
            q.events.push_back(event);
        }
        let len = q.events.len();
        if len == before {
            return;
        }
        self.backlog.store(len, Ordering::Relaxed);
        self.max_backlog.fetch_max(len, Ordering::Relaxed);
        let live = len - q.bulk;
        if live >= q.warn_at {
            tracing::warn!(
                informer = %self.informer,
                handler = self.id,
                backlog = len,
                live,
                "event handler is falling behind: its backlog keeps growing"
            );
            q.warn_at = live.saturating_mul(2);
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
        q.bulk -= usize::from(is_bulk(&event));
        let len = q.events.len();
        self.backlog.store(len, Ordering::Relaxed);
        if q.warn_at > self.warn_threshold && len - q.bulk < self.warn_threshold / 2 {
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
            q.bulk = 0;
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

/// Initial-list adds and resyncs: replays of the cache, not news.
fn is_bulk<K>(event: &Event<K>) -> bool {
    matches!(
        event,
        Event::Add {
            is_in_initial_list: true,
            ..
        }
    ) || event.is_resync()
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Capture {
        fn warnings(&self) -> usize {
            let text = String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned();
            text.matches("falling behind").count()
        }
    }

    fn add(initial: bool) -> Event<u32> {
        Event::Add {
            object: Arc::new(0),
            is_in_initial_list: initial,
        }
    }

    fn resync() -> Event<u32> {
        let o = Arc::new(0);
        Event::Update {
            old: Arc::clone(&o),
            new: o,
        }
    }

    #[test]
    fn backlog_is_reported_when_live_events_pile_up_not_for_bulk_replays() {
        let capture = Capture::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer({
                let c = capture.clone();
                move || c.clone()
            })
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let l = Listener::new(1, "test".into(), None, Arc::new(AtomicBool::new(true)), 10);
            l.push((0..100).map(|_| add(true)));
            l.push((0..50).map(|_| resync()));
            assert_eq!(capture.warnings(), 0, "bulk replays are not a backlog");

            l.push((0..10).map(|_| add(false)));
            assert_eq!(capture.warnings(), 1, "live backlog reached the threshold");
            l.push((0..9).map(|_| add(false)));
            assert_eq!(capture.warnings(), 1, "warned again only when it doubles");
            l.push([add(false)]);
            assert_eq!(capture.warnings(), 2);
            assert_eq!(l.backlog(), 170);
            assert_eq!(l.max_backlog(), 170);

            while l.pop().is_some() {}
            assert_eq!(l.backlog(), 0);
            l.push((0..10).map(|_| add(false)));
            assert_eq!(capture.warnings(), 3, "re-armed after catching up");
        });
    }

    #[test]
    fn sync_tracks_initial_adds_and_upstream() {
        let upstream = Arc::new(AtomicBool::new(false));
        let l = Listener::new(1, "test".into(), None, Arc::clone(&upstream), 10);
        l.push([add(true), add(true), add(false)]);
        upstream.store(true, Ordering::SeqCst);
        l.upstream_synced();
        assert!(!l.has_synced());
        l.pop();
        l.finished_initial();
        assert!(!l.has_synced());
        l.pop();
        l.finished_initial();
        assert!(l.has_synced(), "the live add does not hold sync back");
        assert_eq!(*l.synced.borrow(), SyncState::Synced);
        l.close();
        assert_eq!(
            *l.synced.borrow(),
            SyncState::Synced,
            "closing after sync keeps it"
        );
        assert!(l.pop().is_none());
    }
}
