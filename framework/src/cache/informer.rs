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
use super::status::SeenVersion;
use super::{
    DeletedObject, Error, Event, EventHandler, InformerId, Lister, ReflectorStatus, Store,
    StoreWriter, SyncError,
};

/// The shortest resync period a handler can ask for (client-go's
/// `minimumResyncPeriod`); shorter ones are raised to it.
pub const MIN_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// The default live backlog at which a handler's growing buffer is reported.
pub const DEFAULT_BACKLOG_WARN_THRESHOLD: usize = 1000;

/// How a [`SharedInformer`] is set up.
#[derive(Clone, Debug)]
pub struct InformerConfig {
    id: InformerId,
    backlog_warn_threshold: usize,
    default_resync: Option<Duration>,
}

impl InformerConfig {
    /// Settings for an informer called `name` (used in logs, e.g. the
    /// resource's plural).
    pub fn new(name: impl Into<String>) -> Self {
        Self::for_id(InformerId::named(name))
    }

    /// Settings for the informer `id` (what a factory builds): the id names
    /// it in logs and in [`SyncError`]s.
    pub fn for_id(id: InformerId) -> Self {
        Self {
            id,
            backlog_warn_threshold: DEFAULT_BACKLOG_WARN_THRESHOLD,
            default_resync: None,
        }
    }

    /// Warn when a handler has more than `events` live events waiting (and
    /// again each time that doubles). Defaults to
    /// [`DEFAULT_BACKLOG_WARN_THRESHOLD`].
    pub fn backlog_warn_threshold(mut self, events: usize) -> Self {
        self.backlog_warn_threshold = events;
        self
    }

    /// The resync period of handlers added with
    /// [`SharedInformer::add_event_handler`] (none by default).
    pub fn default_resync(mut self, period: Option<Duration>) -> Self {
        self.default_resync = period;
        self
    }
}

struct Core<K> {
    writer: StoreWriter<K>,
    listeners: Vec<Arc<Listener<K>>>,
    stopped: bool,
}

struct Inner<K> {
    id: InformerId,
    name: Arc<str>,
    default_resync: Option<Duration>,
    /// The newest resourceVersion applied (list, event or bookmark).
    seen_version: watch::Sender<Option<SeenVersion>>,
    /// What the reflector last reported.
    source: watch::Sender<ReflectorStatus>,
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

    /// Records `rv` as seen, unless an older number than what was seen.
    fn note_version(&self, rv: Option<&str>) {
        let Some(rv) = rv.filter(|rv| !rv.is_empty()) else {
            return;
        };
        let next = SeenVersion::parse(rv);
        self.seen_version
            .send_if_modified(|seen| match (seen.as_ref(), &next) {
                (Some(SeenVersion::Numeric(a)), SeenVersion::Numeric(b)) if b <= a => false,
                (Some(current), _) if *current == next => false,
                _ => {
                    *seen = Some(next);
                    true
                }
            });
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
        Self::with_config(InformerConfig::new(name))
    }

    /// An informer set up by `config`, and its writer.
    pub fn with_config(config: InformerConfig) -> (Self, InformerWriter<K>) {
        let writer = StoreWriter::new();
        let name = if config.id.kind.is_empty() {
            config.id.plural.clone()
        } else {
            config.id.to_string()
        };
        let inner = Arc::new(Inner {
            name: name.into(),
            id: config.id,
            default_resync: config.default_resync,
            seen_version: watch::Sender::new(None),
            source: watch::Sender::new(ReflectorStatus::default()),
            store: writer.store(),
            core: Mutex::new(Core {
                writer,
                listeners: Vec::new(),
                stopped: false,
            }),
            synced: Arc::new(AtomicBool::new(false)),
            sync_state: watch::Sender::new(SyncState::Pending),
            next_id: AtomicU64::new(1),
            backlog_warn_threshold: config.backlog_warn_threshold,
        });
        (
            Self {
                inner: Arc::clone(&inner),
            },
            InformerWriter { inner },
        )
    }

    /// Adds a handler with the informer's default resync period (see
    /// [`InformerConfig::default_resync`]); otherwise as
    /// [`add_handler`](Self::add_handler).
    pub fn add_event_handler<H>(&self, handler: H) -> Result<HandlerRegistration<K>, Error>
    where
        H: EventHandler<K>,
    {
        self.add_handler(handler, self.inner.default_resync)
    }

    /// Adds a handler. It first receives an add (with `is_in_initial_list`)
    /// for every object already cached, newest resourceVersion first, then
    /// every later event, in order, on its own tokio task.
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
            // Newest first (client-go leaves the order open): a handler
            // added late, as by a controller that has just won its
            // election, reaches the latest changes, the likeliest not yet
            // reconciled, before the rest of a large cache.
            let mut cached = inner.store.list();
            cached
                .sort_by_cached_key(|object| std::cmp::Reverse(resource_version_number(&**object)));
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

/// An object's resourceVersion as the number etcd's revisions are (0 if it
/// is not one), for ordering a replay.
fn resource_version_number<K: Resource>(object: &K) -> u64 {
    object
        .meta()
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

impl<K> SharedInformer<K> {
    /// The informer's name, as in logs.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The informer's identity: resource, namespace, selectors.
    pub fn id(&self) -> &InformerId {
        &self.inner.id
    }

    /// The resync period of handlers added with
    /// [`add_event_handler`](Self::add_event_handler).
    pub fn default_resync(&self) -> Option<Duration> {
        self.inner.default_resync
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
    /// informer is shut down first (`false`). Unbounded: for a deadline and
    /// a named reason (403, last error), use
    /// [`wait_for_cache_sync`](Self::wait_for_cache_sync).
    pub async fn wait_for_sync(&self) -> bool {
        wait_for(self.inner.sync_state.subscribe()).await
    }

    /// Waits until the store has taken in the initial list, at most
    /// `timeout`. Fails at once, naming the informer, if the server refuses
    /// access (403 or 401) before that; on timeout the error carries the
    /// last list or watch failure seen.
    pub async fn wait_for_cache_sync(&self, timeout: Duration) -> Result<(), SyncError> {
        let deadline = deadline_after(timeout);
        let mut synced = self.inner.sync_state.subscribe();
        let mut source = self.inner.source.subscribe();
        loop {
            match *synced.borrow_and_update() {
                SyncState::Synced => return Ok(()),
                SyncState::Closed => {
                    return Err(SyncError::Stopped {
                        informer: self.inner.id.clone(),
                    })
                }
                SyncState::Pending => {}
            }
            let status = source.borrow_and_update().clone();
            if let Some(denied) = SyncError::denied(&self.inner.id, &status) {
                return Err(denied);
            }
            tokio::select! {
                changed = synced.changed() => if changed.is_err() { break },
                changed = source.changed() => if changed.is_err() { break },
                () = tokio::time::sleep_until(deadline) => {
                    if self.has_synced() {
                        return Ok(());
                    }
                    let status = self.reflector_status();
                    if !status.running && status.last_error.is_none() {
                        return Err(SyncError::NotStarted { informer: self.inner.id.clone() });
                    }
                    return Err(SyncError::Timeout {
                        informer: self.inner.id.clone(),
                        waited: timeout,
                        last_error: status.last_error.map(|e| e.to_string()),
                    });
                }
            }
        }
        Err(SyncError::Stopped {
            informer: self.inner.id.clone(),
        })
    }

    /// What the reflector feeding this informer last reported.
    pub fn reflector_status(&self) -> ReflectorStatus {
        self.inner.source.borrow().clone()
    }

    /// The last list or watch failure since the last success, if any.
    pub fn last_error(&self) -> Option<Arc<crate::client::Error>> {
        self.inner.source.borrow().last_error.clone()
    }

    /// The resourceVersion of the last list, event or bookmark applied.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.inner.store.last_sync_resource_version()
    }

    /// Waits until the informer has seen `resource_version` or a later one,
    /// at most `timeout`: after a write returns an object at
    /// `resource_version`, a cached read once this returns is at least that
    /// fresh (read-your-own-writes).
    ///
    /// resourceVersions are compared as `u64` when both parse, which
    /// kube-apiserver's satisfy: they are etcd revisions, growing with every
    /// write in the cluster. Otherwise only an exact match counts. An empty
    /// `resource_version` returns at once.
    ///
    /// The informer sees a resourceVersion through an event for an object it
    /// watches, or a bookmark. A write outside its namespace or selectors is
    /// seen only at the next bookmark (about once a minute on
    /// kube-apiserver).
    pub async fn wait_for_resource_version(
        &self,
        resource_version: &str,
        timeout: Duration,
    ) -> Result<(), Error> {
        if resource_version.is_empty() {
            return Ok(());
        }
        let wanted = SeenVersion::parse(resource_version);
        let mut rx = self.inner.seen_version.subscribe();
        let reached = tokio::time::timeout(
            timeout,
            rx.wait_for(|seen| seen.as_ref().is_some_and(|s| s.covers(&wanted))),
        )
        .await;
        match reached {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err(Error::InformerStopped(self.inner.name.to_string())),
            Err(_) => Err(Error::ResourceVersionTimeout {
                informer: self.inner.name.to_string(),
                wanted: resource_version.to_owned(),
                seen: self
                    .inner
                    .seen_version
                    .borrow()
                    .as_ref()
                    .map(SeenVersion::as_string),
                waited: timeout,
            }),
        }
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
        // Announced only once the store holds the object (below), so a
        // `wait_for_resource_version` that returns never sees an older copy.
        let version = delta.object().meta().resource_version.clone();
        let deleted = match &delta {
            Delta::Deleted(obj) => Some(Arc::clone(obj)),
            _ => None,
        };
        // As in client-go's RealFIFO, a change before any list also counts
        // as the initial population, so adds from watches are never
        // "in the initial list".
        let applied = core.writer.apply(delta);
        inner.note_version(version.as_deref());
        let event = match applied {
            Applied::Added(object) => Some(Event::Add {
                object,
                is_in_initial_list: false,
            }),
            Applied::Updated { old, new } => Some(Event::Update { old, new }),
            Applied::Recreated { old, new } => {
                // The delete of the old object was never seen: deliver it
                // before the new one, so every deletion reaches handlers.
                let gone = Event::Delete(DeletedObject {
                    object: old,
                    final_state_unknown: true,
                });
                inner.distribute(&core, std::slice::from_ref(&gone));
                Some(Event::Add {
                    object: new,
                    is_in_initial_list: false,
                })
            }
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
        let version = resource_version.clone();
        let Replaced { vanished, applied } = core.writer.replace(items, resource_version);
        inner.note_version(Some(&version));
        if core.listeners.is_empty() {
            inner.mark_synced(&core);
            return;
        }
        let mut events = Vec::with_capacity(vanished.len() + applied.len());
        events.extend(vanished.into_iter().map(|(_, object)| {
            Event::Delete(DeletedObject {
                object,
                final_state_unknown: true,
            })
        }));
        for a in applied {
            match a {
                Applied::Added(object) => events.push(Event::Add {
                    object,
                    is_in_initial_list,
                }),
                Applied::Updated { old, new } => events.push(Event::Update { old, new }),
                // Deleted and created again during the gap: the deletion
                // was never seen, so it is delivered here.
                Applied::Recreated { old, new } => {
                    events.push(Event::Delete(DeletedObject {
                        object: old,
                        final_state_unknown: true,
                    }));
                    events.push(Event::Add {
                        object: new,
                        is_in_initial_list,
                    });
                }
                Applied::Unchanged(_) | Applied::Deleted(_) | Applied::Absent => {}
            }
        }
        inner.distribute(&core, &events);
        inner.mark_synced(&core);
        drop(core);
    }

    fn bookmark(&mut self, resource_version: String) {
        let mut core = self.inner.core();
        self.inner.note_version(Some(&resource_version));
        core.writer.set_resource_version(resource_version);
    }

    fn report_status(&mut self, status: ReflectorStatus) {
        self.inner.source.send_replace(status);
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

/// `d` from now; a `d` past what an `Instant` can hold (`Duration::MAX` for
/// "wait forever") means 30 years, where `Instant + Duration` would panic.
fn deadline_after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}

/// A handler's task: hands it its events one at a time, and its resyncs when
/// due, until the handler is removed or the informer goes away.
async fn run_listener<K, H>(listener: Arc<Listener<K>>, mut handler: H, informer: Weak<Inner<K>>)
where
    K: Send + Sync + 'static,
    H: EventHandler<K>,
{
    let period = listener.resync_period;
    let mut next_resync = period.map(deadline_after);
    let resync_if_due = |next_resync: &mut Option<Instant>| {
        if let (Some(due), Some(p)) = (*next_resync, period) {
            if Instant::now() >= due {
                if let Some(inner) = informer.upgrade() {
                    inner.resync(&listener);
                }
                *next_resync = Some(deadline_after(p));
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
