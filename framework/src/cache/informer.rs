//! [`SharedInformer`]: one [`Store`] shared by many handlers, fed by one
//! reflector through its [`InformerWriter`] (client-go's
//! `sharedIndexInformer` with a `RealFIFO`).
//!
//! Each change is applied to the store and the resulting [`Event`] handed to
//! every handler's buffer under one short lock, the informer's "block
//! deltas" lock. Adding a handler takes the same lock to snapshot the store
//! and queue a synthetic add per object, so a handler added late sees the
//! cache and then every later change, with no gap and no duplicate. Each
//! handler drains its buffer on its own tokio task: a slow handler grows
//! only its own backlog (see [`HandlerRegistration::backlog`]); the writer,
//! the store and the other handlers never wait for it.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use futures::FutureExt as _;
use kube_core::Resource;
use tokio::sync::watch;
use tokio::time::Instant;

use super::event::dispatch;
use super::listener::{close_pending, wait_for, Listener, SyncState};
use super::sink::{Applied, Delta, DeltaSink, Replaced};
use super::{DeletedObject, Error, Event, EventHandler, Lister, Store, StoreWriter};

/// The shortest resync period a handler can ask for (client-go's
/// `minimumResyncPeriod`); shorter ones are raised to it.
pub const MIN_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// The default live backlog at which a handler's growing buffer is reported.
pub const DEFAULT_BACKLOG_WARN_THRESHOLD: usize = 1000;

/// How a [`SharedInformer`] is set up.
#[derive(Clone, Debug)]
pub struct InformerOptions {
    name: String,
    backlog_warn_threshold: usize,
}

impl InformerOptions {
    /// Options for an informer called `name` (used in logs, e.g. the
    /// resource's plural).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            backlog_warn_threshold: DEFAULT_BACKLOG_WARN_THRESHOLD,
        }
    }

    /// Warn when a handler has more than `events` live events waiting (and
    /// again each time that doubles). Defaults to
    /// [`DEFAULT_BACKLOG_WARN_THRESHOLD`].
    pub fn backlog_warn_threshold(mut self, events: usize) -> Self {
        self.backlog_warn_threshold = events;
        self
    }
}

struct Core<K> {
    writer: StoreWriter<K>,
    listeners: Vec<Arc<Listener<K>>>,
    stopped: bool,
}

struct Inner<K> {
    name: Arc<str>,
    store: Store<K>,
    /// Serializes store changes with their distribution, handler joins and
    /// resync snapshots. Never held across an await.
    core: Mutex<Core<K>>,
    synced: Arc<AtomicBool>,
    sync_state: watch::Sender<SyncState>,
    next_id: AtomicU64,
    backlog_warn_threshold: usize,
}

impl<K> Inner<K> {
    fn core(&self) -> MutexGuard<'_, Core<K>> {
        self.core.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The first list (or, as in client-go's RealFIFO, any first change)
    /// makes the informer synced.
    fn mark_synced(&self, core: &Core<K>) {
        if !self.synced.swap(true, Ordering::SeqCst) {
            self.sync_state.send_replace(SyncState::Synced);
            for listener in &core.listeners {
                listener.upstream_synced();
            }
        }
    }

    fn distribute(&self, core: &Core<K>, events: &[Event<K>]) {
        if events.is_empty() {
            return;
        }
        for listener in &core.listeners {
            listener.push(events.iter().cloned());
        }
    }

    /// Queues a resync of the whole cache for one handler: an update with
    /// old and new the same `Arc` per object, taken at this point of the
    /// event stream.
    fn resync(&self, listener: &Listener<K>) {
        let core = self.core();
        if !self.synced.load(Ordering::SeqCst) || core.stopped {
            return;
        }
        let objects = self.store.list();
        tracing::debug!(informer = %self.name, handler = listener.id, objects = objects.len(), "resync");
        listener.push(objects.into_iter().map(|o| Event::Update {
            old: Arc::clone(&o),
            new: o,
        }));
    }
}

impl<K> Drop for Inner<K> {
    fn drop(&mut self) {
        let core = self.core.get_mut().unwrap_or_else(PoisonError::into_inner);
        for listener in core.listeners.drain(..) {
            listener.close();
        }
    }
}

/// A shared informer: a [`Store`] kept in step with the API server by one
/// reflector, and any number of event handlers. Cheap to clone.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), kubeforge::cache::Error> {
/// use std::sync::Arc;
/// use kubeforge::cache::{Delta, DeltaSink, HandlerFns, SharedInformer};
/// use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
/// use kubeforge::kube_core::ObjectMeta;
///
/// let (informer, mut writer) = SharedInformer::<ConfigMap>::new("configmaps");
/// let handler = HandlerFns::new().on_add(|cm: Arc<ConfigMap>, _| {
///     tracing::info!(name = ?cm.metadata.name, "added");
/// });
/// let registration = informer.add_handler(handler, None)?;
///
/// // What the reflector does with a list response:
/// let cm = ConfigMap {
///     metadata: ObjectMeta { name: Some("a".into()), namespace: Some("default".into()),
///                            resource_version: Some("1".into()), ..Default::default() },
///     ..Default::default()
/// };
/// writer.replace(vec![Arc::new(cm)], "1".into());
///
/// assert!(informer.has_synced());
/// assert!(registration.wait_for_sync().await);
/// assert_eq!(informer.store().len(), 1);
/// # Ok(())
/// # }
/// ```
pub struct SharedInformer<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for SharedInformer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for SharedInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformer")
            .field("name", &self.inner.name)
            .field("synced", &self.has_synced())
            .field("store", &self.inner.store)
            .finish()
    }
}

impl<K> SharedInformer<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// An informer named `name` with an empty store, and the writer its
    /// reflector feeds it through.
    pub fn new(name: impl Into<String>) -> (Self, InformerWriter<K>) {
        Self::with_options(InformerOptions::new(name))
    }

    /// An informer set up by `options`, and its writer.
    pub fn with_options(options: InformerOptions) -> (Self, InformerWriter<K>) {
        let writer = StoreWriter::new();
        let inner = Arc::new(Inner {
            name: options.name.into(),
            store: writer.store(),
            core: Mutex::new(Core {
                writer,
                listeners: Vec::new(),
                stopped: false,
            }),
            synced: Arc::new(AtomicBool::new(false)),
            sync_state: watch::Sender::new(SyncState::Pending),
            next_id: AtomicU64::new(1),
            backlog_warn_threshold: options.backlog_warn_threshold,
        });
        (
            Self {
                inner: Arc::clone(&inner),
            },
            InformerWriter { inner },
        )
    }

    /// Adds a handler. It first receives an add (with `is_in_initial_list`)
    /// for every object already cached, then every later event, in order,
    /// on its own tokio task.
    ///
    /// With `resync`, it also receives, every `resync` (at least
    /// [`MIN_RESYNC_PERIOD`]), an update with old and new the same `Arc` for
    /// every cached object. Resyncs start once the informer has synced.
    ///
    /// Errors if the informer was shut down or if called outside a tokio
    /// runtime.
    pub fn add_handler<H>(
        &self,
        handler: H,
        resync: Option<Duration>,
    ) -> Result<HandlerRegistration<K>, Error>
    where
        H: EventHandler<K>,
    {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let resync = resync.filter(|p| !p.is_zero()).map(|p| {
            if p < MIN_RESYNC_PERIOD {
                tracing::warn!(informer = %self.inner.name, requested = ?p, "resync period raised to the minimum of 1s");
            }
            p.max(MIN_RESYNC_PERIOD)
        });
        let inner = &self.inner;
        let listener = Arc::new(Listener::new(
            inner.next_id.fetch_add(1, Ordering::Relaxed),
            Arc::clone(&inner.name),
            resync,
            Arc::clone(&inner.synced),
            inner.backlog_warn_threshold,
        ));
        {
            let mut core = inner.core();
            if core.stopped {
                return Err(Error::InformerStopped(inner.name.to_string()));
            }
            // Under the core lock no change can slip between the snapshot
            // and the registration: no gap, no duplicate.
            let cached = inner.store.list();
            listener.push(cached.into_iter().map(|object| Event::Add {
                object,
                is_in_initial_list: true,
            }));
            if inner.synced.load(Ordering::SeqCst) {
                listener.upstream_synced();
            }
            core.listeners.push(Arc::clone(&listener));
        }
        tracing::debug!(informer = %inner.name, handler = listener.id, ?resync, "event handler added");
        runtime.spawn(run_listener(
            Arc::clone(&listener),
            handler,
            Arc::downgrade(inner),
        ));
        Ok(HandlerRegistration {
            listener,
            informer: Arc::downgrade(inner),
        })
    }

    /// Adds an index to the store (see [`Store::add_index`]).
    pub fn add_index<F>(&self, name: impl Into<String>, func: F) -> Result<(), Error>
    where
        F: Fn(&K) -> Vec<String> + Send + Sync + 'static,
    {
        self.inner.store.add_index(name, func)
    }
}

impl<K> SharedInformer<K> {
    /// The informer's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// A read handle on the informer's store.
    pub fn store(&self) -> Store<K> {
        self.inner.store.clone()
    }

    /// A typed read-only view of the store.
    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.inner.store.clone())
    }

    /// Whether the store has taken in the initial list.
    pub fn has_synced(&self) -> bool {
        self.inner.synced.load(Ordering::SeqCst)
    }

    /// Waits until the store has taken in the initial list (`true`), or the
    /// informer is shut down first (`false`).
    pub async fn wait_for_sync(&self) -> bool {
        wait_for(self.inner.sync_state.subscribe()).await
    }

    /// The resourceVersion of the last list, event or bookmark applied.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.inner.store.last_sync_resource_version()
    }

    /// How many handlers are registered.
    pub fn handler_count(&self) -> usize {
        self.inner.core().listeners.len()
    }

    /// Stops every handler (queued events are dropped) and refuses new ones.
    /// The store stays readable and the writer keeps updating it.
    pub fn shutdown(&self) {
        let listeners = {
            let mut core = self.inner.core();
            core.stopped = true;
            std::mem::take(&mut core.listeners)
        };
        for listener in listeners {
            listener.close();
        }
        self.inner.sync_state.send_if_modified(close_pending);
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    pub fn is_stopped(&self) -> bool {
        self.inner.core().stopped
    }
}

/// The write side of a [`SharedInformer`], owned by the reflector that feeds
/// it. Every call applies the change to the store, then hands the resulting
/// event to every handler, before returning; none waits for a handler.
pub struct InformerWriter<K> {
    inner: Arc<Inner<K>>,
}

impl<K> fmt::Debug for InformerWriter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerWriter")
            .field("informer", &self.inner.name)
            .finish()
    }
}

impl<K> InformerWriter<K> {
    /// The informer this writer feeds.
    pub fn informer(&self) -> SharedInformer<K> {
        SharedInformer {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> DeltaSink<K> for InformerWriter<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// Applies one watch event. Handlers get an add, an update (old, new) or
    /// a delete carrying the event's final state; an update with an
    /// unchanged resourceVersion and a delete of an unknown key are not
    /// delivered.
    fn apply(&mut self, delta: Delta<K>) {
        let inner = &*self.inner;
        let mut core = inner.core();
        let deleted = match &delta {
            Delta::Deleted(obj) => Some(Arc::clone(obj)),
            _ => None,
        };
        // As in client-go's RealFIFO, a change before any list also counts
        // as the initial population, so adds from watches are never
        // "in the initial list".
        let event = match core.writer.apply(delta) {
            Applied::Added(object) => Some(Event::Add {
                object,
                is_in_initial_list: false,
            }),
            Applied::Updated { old, new } => Some(Event::Update { old, new }),
            Applied::Deleted(_) => deleted.map(|object| {
                Event::Delete(DeletedObject {
                    object,
                    final_state_unknown: false,
                })
            }),
            Applied::Unchanged(_) | Applied::Absent => None,
        };
        if let Some(event) = event {
            inner.distribute(&core, std::slice::from_ref(&event));
        }
        inner.mark_synced(&core);
        drop(core);
    }

    /// Replaces the store's contents with a complete list. Handlers get, in
    /// this order (client-go's RealFIFO `Replace`): a delete with
    /// `final_state_unknown` for every key that vanished, then an add or
    /// update for every listed object whose resourceVersion changed. The
    /// first call makes the informer synced; its adds are
    /// `is_in_initial_list`.
    fn replace(&mut self, items: Vec<Arc<K>>, resource_version: String) {
        let inner = &*self.inner;
        let mut core = inner.core();
        let is_in_initial_list = !inner.synced.load(Ordering::SeqCst);
        let Replaced { vanished, applied } = core.writer.replace(items, resource_version);
        let mut events = Vec::with_capacity(vanished.len() + applied.len());
        events.extend(vanished.into_iter().map(|(_, object)| {
            Event::Delete(DeletedObject {
                object,
                final_state_unknown: true,
            })
        }));
        events.extend(applied.into_iter().filter_map(|a| match a {
            Applied::Added(object) => Some(Event::Add {
                object,
                is_in_initial_list,
            }),
            Applied::Updated { old, new } => Some(Event::Update { old, new }),
            Applied::Unchanged(_) | Applied::Deleted(_) | Applied::Absent => None,
        }));
        inner.distribute(&core, &events);
        inner.mark_synced(&core);
        drop(core);
    }

    fn bookmark(&mut self, resource_version: String) {
        self.inner
            .core()
            .writer
            .set_resource_version(resource_version);
    }

    fn last_sync_resource_version(&self) -> Option<String> {
        self.inner.store.last_sync_resource_version()
    }
}

/// A handler's registration: its sync state, its backlog, and removal.
/// Dropping it leaves the handler registered.
pub struct HandlerRegistration<K> {
    listener: Arc<Listener<K>>,
    informer: Weak<Inner<K>>,
}

impl<K> Clone for HandlerRegistration<K> {
    fn clone(&self) -> Self {
        Self {
            listener: Arc::clone(&self.listener),
            informer: Weak::clone(&self.informer),
        }
    }
}

impl<K> fmt::Debug for HandlerRegistration<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerRegistration")
            .field("informer", &self.listener.informer)
            .field("id", &self.listener.id)
            .field("synced", &self.has_synced())
            .field("backlog", &self.backlog())
            .finish()
    }
}

impl<K> HandlerRegistration<K> {
    /// The handler's id within its informer (as in logs).
    pub fn id(&self) -> u64 {
        self.listener.id
    }

    /// The informer has synced and this handler has handled every event up
    /// to its initial sync (for a late handler: the replay of the cache).
    pub fn has_synced(&self) -> bool {
        self.listener.has_synced()
    }

    /// Waits until [`has_synced`](Self::has_synced) (`true`), or until the
    /// handler is removed or the informer shut down first (`false`).
    pub async fn wait_for_sync(&self) -> bool {
        self.listener.wait_for_sync().await
    }

    /// Events queued for the handler and not yet handed to it.
    pub fn backlog(&self) -> usize {
        self.listener.backlog()
    }

    /// The largest backlog the handler has had.
    pub fn max_backlog(&self) -> usize {
        self.listener.max_backlog()
    }

    /// Whether the handler has been removed (or its informer shut down).
    pub fn is_removed(&self) -> bool {
        self.listener.is_closed()
    }

    /// Removes the handler: once this returns it is handed no further event
    /// (one already in hand finishes). Queued events are dropped. Returns
    /// whether it was still registered; calling it again is harmless.
    pub fn remove(&self) -> bool {
        let registered = match self.informer.upgrade() {
            Some(inner) => {
                let mut core = inner.core();
                let before = core.listeners.len();
                core.listeners.retain(|l| !Arc::ptr_eq(l, &self.listener));
                core.listeners.len() != before
            }
            None => false,
        };
        self.listener.close();
        if registered {
            tracing::debug!(informer = %self.listener.informer, handler = self.listener.id, "event handler removed");
        }
        registered
    }
}

/// A handler's task: hands it its events one at a time, and its resyncs when
/// due, until the handler is removed or the informer goes away.
async fn run_listener<K, H>(listener: Arc<Listener<K>>, mut handler: H, informer: Weak<Inner<K>>)
where
    K: Send + Sync + 'static,
    H: EventHandler<K>,
{
    let period = listener.resync_period;
    let mut next_resync = period.map(|p| Instant::now() + p);
    let resync_if_due = |next_resync: &mut Option<Instant>| {
        if let (Some(due), Some(p)) = (*next_resync, period) {
            if Instant::now() >= due {
                if let Some(inner) = informer.upgrade() {
                    inner.resync(&listener);
                }
                *next_resync = Some(Instant::now() + p);
            }
        }
    };
    loop {
        while let Some(event) = listener.pop() {
            let initial = matches!(
                event,
                Event::Add {
                    is_in_initial_list: true,
                    ..
                }
            );
            // A panicking handler loses that one event, not its task: the
            // backlog would otherwise grow forever behind it.
            if AssertUnwindSafe(dispatch(&mut handler, event))
                .catch_unwind()
                .await
                .is_err()
            {
                tracing::error!(informer = %listener.informer, handler = listener.id, "event handler panicked; event skipped");
            }
            if initial {
                listener.finished_initial();
            }
            // A handler that never catches up still gets its resyncs.
            resync_if_due(&mut next_resync);
        }
        if listener.is_closed() {
            break;
        }
        match next_resync {
            Some(due) => {
                tokio::select! {
                    () = listener.wake.notified() => {}
                    () = tokio::time::sleep_until(due) => resync_if_due(&mut next_resync),
                }
            }
            None => listener.wake.notified().await,
        }
    }
    tracing::trace!(informer = %listener.informer, handler = listener.id, "event handler stopped");
}
