//! The work queue itself: dedup, processing, priorities and fairness,
//! delays, rate-limited retries and shutdown.
//!
//! One mutex guards the whole state (the ready items by priority and
//! fairness group, one map entry per item with its dirty and processing
//! marks, priority and metric timestamps, and the waiting room); it is held for a few map operations and never across an
//! `.await`. Waiters park on
//! [`tokio::sync::Notify`]s. One small background task per queue sleeps
//! until the earliest delayed item is due (and, when metrics are on,
//! re-measures unfinished work every 500 ms, as client-go does); `add`,
//! `add_after`, `get`, `done`, `len` and `shutdown` also move due items in
//! themselves, so what they observe never depends on whether that task has
//! run yet.

use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use hashbrown::hash_map::EntryRef;
use hashbrown::HashMap;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::metrics::{CounterMetric, MetricsProvider, QueueMetrics, UNFINISHED_WORK_UPDATE_PERIOD};
use super::rate_limiter::{default_controller_rate_limiter, RateLimiter};
use super::ready::{Priority, Ready, DEFAULT_PRIORITY};
use super::waiting::Waiting;

/// Maps an item to its fairness group; see [`WorkQueueBuilder::fairness`].
type FairnessFn<T> = Arc<dyn Fn(&T) -> u64 + Send + Sync>;

/// How far away "never" is when a delay overflows the clock: tokio's own
/// far-future horizon (30 years).
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// A deduplicating, delaying, rate-limited work queue with client-go's
/// `util/workqueue` semantics.
///
/// - [`add`](Self::add) of an item that is already queued is a no-op; of an
///   item being processed marks it dirty, and [`done`](Self::done) queues it
///   again once. So no two workers ever hold the same item, at most one copy
///   is queued, and any number of adds during processing collapse into one
///   re-run.
/// - [`get`](Self::get) hands out the next queued item and marks it as
///   processing; the worker must call [`done`](Self::done) with it. The
///   next item is the oldest of the highest priority (see
///   [`add_with_priority`](Self::add_with_priority)), taken in turns across
///   fairness groups if the queue has a
///   [`fairness`](WorkQueueBuilder::fairness) function; with neither, the
///   queue is client-go's FIFO.
/// - [`add_after`](Self::add_after) adds an item once a delay has passed; a
///   second delayed add of a waiting item keeps the earlier time.
/// - [`add_rate_limited`](Self::add_rate_limited) delays by what the
///   [`RateLimiter`] says; [`forget`](Self::forget) resets the item's
///   history; [`num_requeues`](Self::num_requeues) reports it.
/// - [`shutdown`](Self::shutdown) stops accepting items; `get` keeps handing
///   out what is still queued and then returns `None`.
///   [`shutdown_with_drain`](Self::shutdown_with_drain) also waits for the
///   items in flight to be done.
///
/// The handle is cheap to clone; clones share one queue. Delays run on
/// tokio's clock, so tests can use `tokio::time::pause()`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use kubeforge::workqueue::WorkQueue;
///
/// let queue = WorkQueue::new();
/// queue.add("default/web");
/// queue.add("default/web"); // already queued: dropped
/// assert_eq!(queue.len(), 1);
///
/// let key = queue.get().await.expect("queue is running");
/// queue.add(key); // added while processing: re-queued on done
/// queue.done(&key);
/// assert_eq!(queue.len(), 1);
///
/// queue.shutdown();
/// assert_eq!(queue.get().await, Some("default/web")); // still drains
/// queue.done(&"default/web");
/// assert_eq!(queue.get().await, None);
/// # }
/// ```
pub struct WorkQueue<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T: Eq + Hash + Clone> std::fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("WorkQueue")
            .field("name", &self.shared.name)
            .field("queued", &state.ready.len())
            .field("processing", &state.processing)
            .field("waiting", &state.waiting.len())
            .field("shutting_down", &state.shutting_down)
            .finish()
    }
}

struct Shared<T> {
    name: String,
    state: Mutex<State<T>>,
    /// Wakes `get` callers: one per queued item, all on shutdown.
    items: Notify,
    /// Wakes `shutdown_with_drain` callers when processing empties.
    drained: Notify,
    /// Wakes the timer task when the earliest ready time moved or the queue
    /// shut down. Shared with the task, which holds no strong reference to
    /// the queue while it sleeps.
    timer: Arc<Notify>,
    timer_started: AtomicBool,
    rate_limiter: Box<dyn RateLimiter<T>>,
    retries: Option<Arc<dyn CounterMetric>>,
    /// The state's fairness function, for `add` to find an item's group
    /// before it takes the lock.
    fairness: Option<FairnessFn<T>>,
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        // The last handle is gone: let the timer task notice and exit.
        self.timer.notify_one();
    }
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // The state's invariants are restored before any call that could
        // panic (a user's Hash/Eq), so a poisoned lock is still consistent
        // enough to keep serving rather than panic every caller.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct State<T> {
    /// Items to hand out, by priority and fairness group. Each live entry is
    /// marked dirty and not processing in `items`, at the entry's priority
    /// and generation.
    ready: Ready<T>,
    /// The fairness group of an item; none: one group.
    fairness: Option<FairnessFn<T>>,
    /// Whether priorities count; if not, every add is at the default
    /// priority and the queue is FIFO.
    prioritized: bool,
    /// Every item that is dirty (queued, or re-added while processing) or
    /// processing (handed out and not yet done), with its marks: one entry
    /// per item, so each operation hashes the item once.
    items: HashMap<T, Marks>,
    /// How many items are processing.
    processing: usize,
    /// Delayed items and their ready times.
    waiting: Waiting<T>,
    shutting_down: bool,
    drain: bool,
    metrics: Option<QueueMetrics>,
    /// Where the stamps' clock starts.
    epoch: Instant,
    /// Items pushed into `ready` so far: the generation of the last push.
    pushes: u32,
}

/// Where an item stands (client-go keeps these as the `dirty` and
/// `processing` sets and the metrics' two time maps).
#[derive(Clone, Copy, Debug, Default)]
struct Marks {
    /// The dirty and processing flags and the generation, in one word.
    state: u32,
    /// While dirty: the priority it is (or will be, after `done`) queued at.
    priority: Priority,
    /// When it was first added since it was last handed out (metrics only).
    added_at: Stamp,
    /// When it was handed out (metrics only).
    started_at: Stamp,
}

/// Needs processing: queued, or added again while processing.
const DIRTY: u32 = 1 << 31;
/// Handed out and not yet done.
const PROCESSING: u32 = 1 << 30;
/// The rest of the word: which of the queue's pushes queued the item last,
/// so an entry a priority raise left behind is told from the live one
/// (the count wraps after 2^30 pushes; a stale entry mistaken for live
/// would only be handed out at its older place).
const GENERATION: u32 = PROCESSING - 1;

impl Marks {
    fn dirty(&self) -> bool {
        self.state & DIRTY != 0
    }

    fn processing(&self) -> bool {
        self.state & PROCESSING != 0
    }

    fn generation(&self) -> u32 {
        self.state & GENERATION
    }

    fn set(&mut self, flag: u32, on: bool) {
        if on {
            self.state |= flag;
        } else {
            self.state &= !flag;
        }
    }

    fn set_generation(&mut self, generation: u32) {
        self.state = (self.state & !GENERATION) | (generation & GENERATION);
    }

    /// Queued and waiting for a worker at `priority`, by the push of
    /// `generation`.
    fn queued_by(&self, priority: Priority, generation: u32) -> bool {
        self.state & (DIRTY | PROCESSING) == DIRTY
            && self.priority == priority
            && self.generation() == generation & GENERATION
    }
}

/// A time on the queue's clock, or none: nanoseconds since the queue was
/// built, plus one. Half the size of an `Option<Instant>`, which keeps an
/// item's marks at 24 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Stamp(u64);

impl Stamp {
    fn new(epoch: Instant, at: Instant) -> Self {
        let since = at.saturating_duration_since(epoch).as_nanos();
        Self(
            u64::try_from(since)
                .unwrap_or(u64::MAX - 1)
                .saturating_add(1),
        )
    }

    fn time(self, epoch: Instant) -> Option<Instant> {
        let since = self.0.checked_sub(1)?;
        epoch.checked_add(Duration::from_nanos(since))
    }

    fn take(&mut self) -> Self {
        std::mem::take(self)
    }

    fn is_set(self) -> bool {
        self.0 != 0
    }
}

/// What a locked `get` attempt found.
enum Take<T> {
    Item(T, Priority),
    Shutdown,
    Empty,
}

/// What a locked `done` found.
enum Done {
    /// The item was not being processed.
    NotProcessing,
    /// Done; it was added again meanwhile and is queued once more.
    Requeued,
    Finished,
}

impl<T: Eq + Hash + Clone> State<T> {
    /// The fairness group of `item`: `known` if the caller found it
    /// already, else what the fairness function says.
    fn group(fairness: Option<&FairnessFn<T>>, item: &T, known: Option<u64>) -> u64 {
        known.unwrap_or_else(|| fairness.map_or(0, |f| f(item)))
    }

    /// Marks `item` dirty (as of `at`) at `priority` and queues it unless
    /// it is being processed. An item already dirty keeps the higher of the
    /// two priorities; a queued one raised moves to the back of its new
    /// priority (controller-runtime's `priorityqueue.go`). `group` is the
    /// item's fairness group if the caller knows it, and `copy` a clone of
    /// it made beforehand, taken for the map if the item is new (left to
    /// the caller to drop, outside the lock, if not). Returns whether it was
    /// queued.
    fn add(
        &mut self,
        item: T,
        priority: Priority,
        at: Instant,
        group: Option<u64>,
        copy: &mut Option<T>,
    ) -> bool {
        if self.shutting_down {
            return false;
        }
        let priority = if self.prioritized {
            priority
        } else {
            DEFAULT_PRIORITY
        };
        let stamp = match self.metrics {
            Some(_) => Stamp::new(self.epoch, at),
            None => Stamp::default(),
        };
        let queued = match self.items.entry_ref(&item) {
            EntryRef::Occupied(mut entry) => {
                let marks = entry.get_mut();
                if marks.dirty() {
                    if priority > marks.priority {
                        let from = std::mem::replace(&mut marks.priority, priority);
                        if !marks.processing() {
                            self.pushes = self.pushes.wrapping_add(1);
                            let generation = self.pushes;
                            marks.set_generation(generation);
                            let group = Self::group(self.fairness.as_ref(), &item, group);
                            self.ready.mark_stale(from, group);
                            self.ready.push(item, priority, group, generation);
                        }
                        if let Some(m) = &self.metrics {
                            m.raised(from, priority);
                        }
                    }
                    return false;
                }
                // Processing: queued again when done.
                marks.set(DIRTY, true);
                marks.priority = priority;
                if !marks.added_at.is_set() {
                    marks.added_at = stamp;
                }
                false
            }
            EntryRef::Vacant(entry) => {
                self.pushes = self.pushes.wrapping_add(1);
                let mut marks = Marks {
                    state: DIRTY,
                    priority,
                    added_at: stamp,
                    ..Marks::default()
                };
                marks.set_generation(self.pushes);
                entry.insert_with_key(copy.take().unwrap_or_else(|| item.clone()), marks);
                true
            }
        };
        if let Some(m) = &self.metrics {
            m.added(priority);
        }
        if queued {
            let group = Self::group(self.fairness.as_ref(), &item, group);
            self.ready.push(item, priority, group, self.pushes);
        }
        queued
    }

    /// Adds every delayed item that is due at `now`, earliest first, each
    /// at the priority it waited with. Returns how many were queued.
    fn promote_due(&mut self, now: Instant) -> usize {
        let mut queued = 0;
        while let Some((item, ready_at, priority)) = self.waiting.pop_due(now) {
            // Latency counts from the moment the item became ready.
            if self.add(item, priority, ready_at, None, &mut None) {
                queued += 1;
            }
        }
        queued
    }

    fn take(&mut self, now: Instant) -> Take<T> {
        let items = &self.items;
        let popped = self.ready.pop(|item, priority, generation| {
            items
                .get(item)
                .is_some_and(|m| m.queued_by(priority, generation))
        });
        let Some((item, priority)) = popped else {
            return if self.shutting_down {
                Take::Shutdown
            } else {
                Take::Empty
            };
        };
        let marks = match self.items.entry_ref(&item) {
            EntryRef::Occupied(entry) => entry.into_mut(),
            // Every queued item has marks; kept total rather than trusted.
            EntryRef::Vacant(entry) => entry.insert_with_key(item.clone(), Marks::default()),
        };
        marks.set(DIRTY, false);
        marks.set(PROCESSING, true);
        self.processing += 1;
        if let Some(m) = &self.metrics {
            m.taken(priority, marks.added_at.take().time(self.epoch), now);
            marks.started_at = Stamp::new(self.epoch, now);
        }
        Take::Item(item, priority)
    }

    fn done(&mut self, item: &T, now: Instant) -> Done {
        let EntryRef::Occupied(mut entry) = self.items.entry_ref(item) else {
            return Done::NotProcessing;
        };
        let marks = entry.get_mut();
        if !marks.processing() {
            return Done::NotProcessing;
        }
        marks.set(PROCESSING, false);
        self.processing -= 1;
        if let Some(m) = &self.metrics {
            m.done(marks.started_at.take().time(self.epoch), now);
        }
        if marks.dirty() {
            self.pushes = self.pushes.wrapping_add(1);
            let generation = self.pushes;
            marks.set_generation(generation);
            let priority = marks.priority;
            let group = Self::group(self.fairness.as_ref(), item, None);
            self.ready.push(item.clone(), priority, group, generation);
            Done::Requeued
        } else {
            entry.remove();
            Done::Finished
        }
    }

    /// When each item in flight started (metrics only).
    fn processing_started(&self) -> impl Iterator<Item = Instant> + '_ {
        let epoch = self.epoch;
        self.items
            .values()
            .filter_map(move |marks| marks.started_at.time(epoch))
    }
}

/// Configures a [`WorkQueue`]: name, rate limiter, metrics, priorities and
/// fairness.
pub struct WorkQueueBuilder<T> {
    name: String,
    rate_limiter: Option<Box<dyn RateLimiter<T>>>,
    metrics: Option<Arc<dyn MetricsProvider>>,
    prioritized: bool,
    fairness: Option<FairnessFn<T>>,
}

impl<T> std::fmt::Debug for WorkQueueBuilder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueueBuilder")
            .field("name", &self.name)
            .field("rate_limiter", &self.rate_limiter.is_some())
            .field("metrics", &self.metrics.is_some())
            .field("prioritized", &self.prioritized)
            .field("fairness", &self.fairness.is_some())
            .finish()
    }
}

impl<T> WorkQueueBuilder<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// Names the queue; the name labels its metrics. An unnamed queue
    /// reports no metrics, as in client-go.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The limiter behind [`WorkQueue::add_rate_limited`]; defaults to
    /// [`default_controller_rate_limiter`].
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.rate_limiter = Some(Box::new(limiter));
        self
    }

    /// Reports metrics through `provider` (only if the queue is named).
    pub fn metrics(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics = Some(provider);
        self
    }

    /// Whether priorities count (default: yes). Off, every add is at
    /// [`DEFAULT_PRIORITY`](super::DEFAULT_PRIORITY) whatever it asks for,
    /// and (without [`fairness`](Self::fairness)) the queue is client-go's
    /// FIFO.
    pub fn priorities(mut self, on: bool) -> Self {
        self.prioritized = on;
        self
    }

    /// Takes items in turns across the groups `group` puts them in, within
    /// each priority (controller-runtime PR #3261's fairness): the next item
    /// is the oldest of the group whose turn it is, and a group then waits
    /// for every other group with items queued at that priority to have had
    /// a turn. So a group that floods the queue with `n` items delays an
    /// item of another group by at most one item per group, not by `n`.
    ///
    /// `group` returns any stable id of the item's group (a hash of its
    /// namespace, say); two groups with one id share their turns. Without
    /// it (the default) all items are one group: first in, first out within
    /// a priority.
    pub fn fairness(mut self, group: impl Fn(&T) -> u64 + Send + Sync + 'static) -> Self {
        self.fairness = Some(Arc::new(group));
        self
    }

    /// Builds the queue. Its timer task starts now if a tokio runtime is
    /// current, otherwise on the first `get` or delayed add made inside one.
    pub fn build(self) -> WorkQueue<T> {
        let provider = self.metrics.filter(|_| !self.name.is_empty());
        let metrics = provider
            .as_deref()
            .map(|p| QueueMetrics::new(p, &self.name, self.prioritized));
        let retries = provider
            .as_deref()
            .map(|p| p.new_retries_metric(&self.name));
        let queue = WorkQueue {
            shared: Arc::new(Shared {
                name: self.name,
                state: Mutex::new(State {
                    ready: Ready::new(),
                    fairness: self.fairness.clone(),
                    prioritized: self.prioritized,
                    items: HashMap::new(),
                    processing: 0,
                    waiting: Waiting::new(),
                    shutting_down: false,
                    drain: false,
                    metrics,
                    epoch: Instant::now(),
                    pushes: 0,
                }),
                items: Notify::new(),
                drained: Notify::new(),
                timer: Arc::new(Notify::new()),
                timer_started: AtomicBool::new(false),
                rate_limiter: self
                    .rate_limiter
                    .unwrap_or_else(|| Box::new(default_controller_rate_limiter())),
                retries,
                fairness: self.fairness,
            }),
        };
        queue.ensure_timer();
        queue
    }
}

impl<T> Default for WorkQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> WorkQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// An unnamed queue with the default controller rate limiter and no
    /// metrics.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Starts configuring a queue.
    pub fn builder() -> WorkQueueBuilder<T> {
        WorkQueueBuilder {
            name: String::new(),
            rate_limiter: None,
            metrics: None,
            prioritized: true,
            fairness: None,
        }
    }

    /// The queue's name ("" if unnamed).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Marks `item` as needing processing (client-go `Add`), at
    /// [`DEFAULT_PRIORITY`](super::DEFAULT_PRIORITY).
    ///
    /// Ignored after shutdown and while the item is already queued; while
    /// it is being processed, it is queued again when the worker calls
    /// [`done`](Self::done).
    pub fn add(&self, item: T) {
        self.add_with_priority(item, DEFAULT_PRIORITY);
    }

    /// [`add`](Self::add) at `priority` (controller-runtime's
    /// `AddWithOpts{Priority}`): higher priorities are handed out first.
    ///
    /// An item already queued keeps the higher of its priority and
    /// `priority`; raised, it goes to the back of its new priority. An item
    /// being processed is queued again on [`done`](Self::done) at the
    /// highest priority it was added with meanwhile.
    pub fn add_with_priority(&self, item: T, priority: Priority) {
        let now = Instant::now();
        // The group is the caller's function of the item alone: found
        // outside the lock, so the lock is held no longer than a FIFO's.
        let group = self.shared.fairness.as_ref().map(|f| f(&item));
        // A new item needs a second copy, for the map: made (and, for an
        // item already queued, dropped) outside the lock too.
        let mut copy = Some(item.clone());
        let queued = {
            let mut state = self.shared.lock();
            let promoted = state.promote_due(now);
            promoted + usize::from(state.add(item, priority, now, group, &mut copy))
        };
        drop(copy);
        self.wake_getters(queued);
    }

    /// Adds `item` once `delay` has passed (client-go `AddAfter`); a zero
    /// delay adds at once.
    ///
    /// If the item already waits, the earlier of the two ready times wins.
    /// Each call counts as a retry in the metrics. Ignored after shutdown.
    pub fn add_after(&self, item: T, delay: Duration) {
        self.add_after_with_priority(item, delay, DEFAULT_PRIORITY);
    }

    /// [`add_after`](Self::add_after) at `priority`: once due, the item is
    /// added at the highest priority any of its delayed adds asked for.
    pub fn add_after_with_priority(&self, item: T, delay: Duration, priority: Priority) {
        if self.is_shutting_down() {
            return;
        }
        if let Some(retries) = &self.shared.retries {
            retries.inc();
        }
        if delay.is_zero() {
            self.add_with_priority(item, priority);
            return;
        }
        let now = Instant::now();
        let ready_at = now
            .checked_add(delay)
            .or_else(|| now.checked_add(FAR_FUTURE))
            .unwrap_or(now);
        let (queued, rearm) = {
            let mut state = self.shared.lock();
            if state.shutting_down {
                return;
            }
            let promoted = state.promote_due(now);
            (promoted, state.waiting.insert(item, ready_at, priority))
        };
        self.wake_getters(queued);
        if rearm {
            self.shared.timer.notify_one();
        }
        self.ensure_timer();
    }

    /// Adds `item` after the delay the rate limiter assigns it (client-go
    /// `AddRateLimited`): one more recorded failure.
    pub fn add_rate_limited(&self, item: T) {
        self.add_rate_limited_with_priority(item, DEFAULT_PRIORITY);
    }

    /// [`add_rate_limited`](Self::add_rate_limited) at `priority`
    /// (controller-runtime's `AddWithOpts{RateLimited, Priority}`).
    pub fn add_rate_limited_with_priority(&self, item: T, priority: Priority) {
        let delay = self.shared.rate_limiter.when(&item);
        self.add_after_with_priority(item, delay, priority);
    }

    /// Clears `item`'s failure history in the rate limiter (client-go
    /// `Forget`). It does not remove the item from the queue; the worker
    /// still calls [`done`](Self::done).
    pub fn forget(&self, item: &T) {
        self.shared.rate_limiter.forget(item);
    }

    /// How many failures the rate limiter has recorded for `item`.
    pub fn num_requeues(&self, item: &T) -> usize {
        self.shared.rate_limiter.num_requeues(item)
    }

    /// Waits for the next item to process and marks it as processing.
    ///
    /// Returns `None` once the queue is shutting down and nothing is left
    /// queued (items queued before the shutdown are still handed out, as in
    /// client-go). Call [`done`](Self::done) with every item returned.
    /// Cancel-safe: a `get` dropped before completing takes nothing.
    pub async fn get(&self) -> Option<T> {
        self.get_with_priority().await.map(|(item, _)| item)
    }

    /// [`get`](Self::get), also returning the priority the item was queued
    /// at (controller-runtime's `GetWithPriority`), so a worker can re-add
    /// it at the same priority.
    pub async fn get_with_priority(&self) -> Option<(T, Priority)> {
        match self.try_take() {
            Take::Item(item, priority) => return Some((item, priority)),
            Take::Shutdown => return None,
            Take::Empty => {}
        }
        self.ensure_timer();
        loop {
            let notified = self.shared.items.notified();
            tokio::pin!(notified);
            // Register before looking, so an add between the look and the
            // await still wakes us.
            notified.as_mut().enable();
            match self.try_take() {
                Take::Item(item, priority) => return Some((item, priority)),
                Take::Shutdown => return None,
                Take::Empty => notified.await,
            }
        }
    }

    fn try_take(&self) -> Take<T> {
        let now = Instant::now();
        let (taken, promoted) = {
            let mut state = self.shared.lock();
            let promoted = state.promote_due(now);
            (state.take(now), promoted)
        };
        // Items promoted beyond the one taken here need their own getters.
        let extra = match taken {
            Take::Item(..) => promoted.saturating_sub(1),
            _ => promoted,
        };
        self.wake_getters(extra);
        taken
    }

    /// Marks `item` as done processing (client-go `Done`); if it was added
    /// again meanwhile, it is queued once more.
    ///
    /// An item that is not being processed is ignored (client-go would
    /// queue a second copy of a dirty item; that breaks the one-copy rule).
    pub fn done(&self, item: &T) {
        let now = Instant::now();
        let (queued, drained) = {
            let mut state = self.shared.lock();
            let mut queued = state.promote_due(now);
            match state.done(item, now) {
                Done::NotProcessing => {
                    drop(state);
                    self.wake_getters(queued);
                    tracing::debug!(queue = %self.shared.name, "done called for an item that is not being processed");
                    return;
                }
                Done::Requeued => queued += 1,
                Done::Finished => {}
            }
            (queued, state.shutting_down && state.processing == 0)
        };
        self.wake_getters(queued);
        if drained {
            self.shared.drained.notify_waiters();
        }
    }

    /// Number of items queued and ready to be handed out (not counting
    /// items in flight or still delayed). For information only: another
    /// task may change it at once.
    pub fn len(&self) -> usize {
        let now = Instant::now();
        let (len, promoted) = {
            let mut state = self.shared.lock();
            let promoted = state.promote_due(now);
            (state.ready.len(), promoted)
        };
        self.wake_getters(promoted);
        len
    }

    /// The items handed out and not yet done, in no particular order.
    pub(crate) fn processing_items(&self) -> Vec<T> {
        let state = self.shared.lock();
        state
            .items
            .iter()
            .filter(|(_, marks)| marks.processing())
            .map(|(item, _)| item.clone())
            .collect()
    }

    /// Whether no item is queued and ready (see [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops the queue (client-go `ShutDown`): later adds are ignored,
    /// delayed items are dropped, and `get` returns `None` once the items
    /// already queued are handed out. Ends a pending
    /// [`shutdown_with_drain`](Self::shutdown_with_drain) wait at once.
    pub fn shutdown(&self) {
        self.begin_shutdown(false);
    }

    /// Stops the queue like [`shutdown`](Self::shutdown), then waits until
    /// every item handed out has been marked [`done`](Self::done)
    /// (client-go `ShutDownWithDrain`).
    ///
    /// Workers must keep calling `done`, or this waits forever; calling
    /// [`shutdown`](Self::shutdown) meanwhile ends the wait.
    pub async fn shutdown_with_drain(&self) {
        self.begin_shutdown(true);
        loop {
            let notified = self.shared.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.shared.lock();
                if state.processing == 0 || !state.drain {
                    return;
                }
            }
            notified.await;
        }
    }

    fn begin_shutdown(&self, drain: bool) {
        let now = Instant::now();
        {
            let mut state = self.shared.lock();
            // What was due before the shutdown is in; what is still delayed
            // never fires, as client-go's waiting loop stops on shutdown.
            state.promote_due(now);
            state.drain = drain;
            state.shutting_down = true;
            state.waiting.clear();
        }
        self.shared.items.notify_waiters();
        self.shared.drained.notify_waiters();
        self.shared.timer.notify_one();
    }

    /// Whether [`shutdown`](Self::shutdown) or
    /// [`shutdown_with_drain`](Self::shutdown_with_drain) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.shared.lock().shutting_down
    }

    fn wake_getters(&self, n: usize) {
        for _ in 0..n {
            self.shared.items.notify_one();
        }
    }

    /// Starts the timer task once, on the current tokio runtime if there is
    /// one (otherwise a later call from inside one starts it).
    fn ensure_timer(&self) {
        if self.shared.timer_started.load(Ordering::Acquire) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self
            .shared
            .timer_started
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let weak = Arc::downgrade(&self.shared);
        let wake = Arc::clone(&self.shared.timer);
        handle.spawn(run_timer(weak, wake));
    }
}

/// The timer task: moves delayed items in when they are due and refreshes
/// the unfinished-work metrics. Exits when the queue shuts down or its last
/// handle is dropped.
async fn run_timer<T>(weak: Weak<Shared<T>>, wake: Arc<Notify>)
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    let mut next_metrics_update: Option<Instant> = None;
    loop {
        let (next_ready, metrics_on) = {
            let Some(shared) = weak.upgrade() else {
                return;
            };
            let now = Instant::now();
            let (next_ready, metrics_on, promoted) = {
                let mut state = shared.lock();
                if state.shutting_down {
                    return;
                }
                let promoted = state.promote_due(now);
                let metrics_on = match &state.metrics {
                    Some(m) if next_metrics_update.is_none_or(|t| t <= now) => {
                        m.update_unfinished_work(state.processing_started(), now);
                        next_metrics_update = Some(now + UNFINISHED_WORK_UPDATE_PERIOD);
                        true
                    }
                    Some(_) => true,
                    None => false,
                };
                (state.waiting.next_ready(), metrics_on, promoted)
            };
            for _ in 0..promoted {
                shared.items.notify_one();
            }
            (next_ready, metrics_on)
            // `shared` drops here: a sleeping timer keeps no queue alive.
        };
        let metrics_at = next_metrics_update.filter(|_| metrics_on);
        tokio::select! {
            _ = wake.notified() => {}
            _ = sleep_until_some(next_ready) => {}
            _ = sleep_until_some(metrics_at) => {}
        }
    }
}

async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_items_in_flight_are_those_handed_out_and_not_done() {
        let queue: WorkQueue<&str> = WorkQueue::new();
        for item in ["a", "b", "c"] {
            queue.add(item);
        }
        let first = queue.get().await;
        let second = queue.get().await;
        assert_eq!((first, second), (Some("a"), Some("b")));
        let mut in_flight = queue.processing_items();
        in_flight.sort_unstable();
        assert_eq!(in_flight, ["a", "b"]);

        // Added again while processing: still in flight, queued on done.
        queue.add("a");
        queue.done(&"a");
        assert_eq!(queue.processing_items(), ["b"]);
        assert_eq!(queue.len(), 2, "c, and a again");
        queue.done(&"b");
        assert!(queue.processing_items().is_empty());
    }

    #[test]
    fn stamps_keep_the_time_and_the_marks_small() {
        let epoch = Instant::now();
        let later = epoch + Duration::from_millis(1500);
        assert_eq!(Stamp::new(epoch, later).time(epoch), Some(later));
        assert_eq!(Stamp::new(epoch, epoch).time(epoch), Some(epoch));
        assert_eq!(Stamp::default().time(epoch), None);
        let mut stamp = Stamp::new(epoch, later);
        assert!(stamp.take().is_set());
        assert!(!stamp.is_set());
        assert_eq!(std::mem::size_of::<Marks>(), 24);
    }
}
