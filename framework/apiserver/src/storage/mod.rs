//! The object store: one global, monotonically increasing resourceVersion;
//! per resource a sorted map of [`StoredObject`]s, a bounded watch history
//! of [`Event`]s and the registered watchers. Writes fan events out to
//! watchers through bounded channels with `try_send`: a watcher whose buffer
//! is full is dropped (its stream ends, the client re-watches), so a slow
//! watcher never blocks a writer — what kube-apiserver's cacher does.
//!
//! Consistent reads at an older resourceVersion (`resourceVersionMatch=Exact`,
//! continue tokens) are served by undoing the history events newer than it.
//!
//! With a data directory ([`durable`]) every lock hold that wrote sends its
//! records to the database as one transaction when the lock is released
//! ([`StoreGuard`]); [`Storage::durable`] waits until what a request saw is
//! on disk.

pub(crate) mod durable;
pub(crate) mod object;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use durable::{Durable, Journal, Record, Snapshot};
use object::set_rv;
pub(crate) use object::{Event, EventType, ObjKey, StoredObject};

use crate::machinery::selectors::{FieldSelector, LabelSelector};
use crate::machinery::shards::ShardSelector;

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("already exists")]
    AlreadyExists,
    #[error("conflict")]
    Conflict,
    #[error("uid precondition failed: {expected} != {actual}")]
    UidMismatch { expected: String, actual: String },
    /// The requested resourceVersion has left the history; carries the
    /// oldest one still available.
    #[error("too old resource version: {requested} ({oldest})")]
    Expired { requested: u64, oldest: u64 },
    #[error("too large resource version: {requested}, current: {current}")]
    TooLarge { requested: u64, current: u64 },
}

/// What a list or watch selects.
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// A `shardSelector`, checked first (`SelectionPredicate.Matches`).
    pub shards: Option<ShardSelector>,
}

impl Filter {
    pub fn matches(&self, key: &ObjKey, obj: &StoredObject) -> bool {
        if let Some(ns) = &self.namespace {
            if key.0 != *ns {
                return false;
            }
        }
        if let Some(shards) = &self.shards {
            if !shards.matches(obj.uid(), &key.0) {
                return false;
            }
        }
        self.labels.matches_stored(obj) && self.fields.matches_stored(key, obj)
    }

    /// The type a watcher with this filter sees for `ev`, if any.
    fn event_type(&self, ev: &Event) -> Option<EventType> {
        if ev.deleted {
            return self
                .matches(&ev.key, &ev.object)
                .then_some(EventType::Deleted);
        }
        let now = self.matches(&ev.key, &ev.object);
        let before = ev.prev.as_ref().is_some_and(|p| self.matches(&ev.key, p));
        match (before, now) {
            (true, true) => Some(EventType::Modified),
            (false, true) => Some(EventType::Added),
            (true, false) => Some(EventType::Deleted),
            (false, false) => None,
        }
    }
}

/// A message to a watcher.
pub(crate) type WatchMsg = (Arc<Event>, EventType);

struct Watcher {
    filter: Arc<Filter>,
    tx: mpsc::Sender<WatchMsg>,
}

#[derive(Default)]
struct Collection {
    objects: BTreeMap<ObjKey, Arc<StoredObject>>,
    history: VecDeque<Arc<Event>>,
    /// Every event newer than `floor` is in `history`.
    floor: u64,
    watchers: Vec<Watcher>,
}

/// Where a watch starts.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WatchFrom {
    /// Now; with `initial`, first an ADDED for every current object.
    Now { initial: bool },
    /// Right after this resourceVersion.
    After(u64),
}

/// A registered watch: what to send first, then the live channel.
pub(crate) struct Subscription {
    /// Current objects to send as ADDED (initial events).
    pub initial: Vec<Arc<StoredObject>>,
    /// History events after the requested resourceVersion.
    pub replay: Vec<WatchMsg>,
    pub rx: mpsc::Receiver<WatchMsg>,
    /// The resourceVersion the subscription started at.
    pub start_rv: u64,
}

/// One page of a list.
pub(crate) struct ListPage {
    /// The resourceVersion the list is consistent at.
    pub rv: u64,
    pub items: Vec<Arc<StoredObject>>,
    /// The last key returned, when more items follow.
    pub next: Option<ObjKey>,
    /// How many items follow this page, when more do and the list has no
    /// label or field selector (kube-apiserver's `remainingItemCount`:
    /// with a selector the count is unknown without filtering them all).
    pub remaining: Option<u64>,
}

/// The state behind the lock.
pub(crate) struct Store {
    rv: u64,
    collections: HashMap<ResKey, Collection>,
    uids: HashMap<String, (ResKey, ObjKey)>,
    /// Owner uid to the objects that name it in `ownerReferences`.
    dependents: HashMap<String, BTreeSet<(ResKey, ObjKey)>>,
    history_limit: usize,
    /// The bound of all histories together, in bytes of the objects the
    /// events carry.
    history_bytes_limit: usize,
    history_bytes: usize,
    /// Every event in a history, oldest first, for evicting by bytes
    /// across resources (entries already evicted by count are skipped).
    history_order: VecDeque<(u64, ResKey)>,
    watch_buffer: usize,
    rv_tx: watch::Sender<u64>,
    /// Every resourceVersion below this was compacted away, for every
    /// resource (including ones not written yet).
    compacted: u64,
    /// The versions replaced most recently, oldest first: they keep their
    /// parsed trees for the readers still catching up on them (informers
    /// behind by a few events) until [`RETIRING_VERSIONS`] newer ones
    /// follow.
    retiring: VecDeque<Arc<StoredObject>>,
    /// Where writes go to be durable, with a data directory.
    journal: Option<Journal>,
    /// This lock hold's writes, sent to the journal when it ends.
    unsent: Vec<Record>,
}

/// How many replaced versions keep their parsed trees. Older ones drop
/// them ([`StoredObject::supersede`]), so the watch history holds bytes,
/// not trees about ten times their size.
const RETIRING_VERSIONS: usize = 1024;

/// Storage identity of a resource: `group/plural` (one store per resource,
/// whatever version it is served at).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ResKey(pub Arc<str>);

impl ResKey {
    pub fn new(group: &str, plural: &str) -> Self {
        Self(Arc::from(format!("{group}/{plural}")))
    }
}

/// The store plus a channel announcing the current resourceVersion.
pub(crate) struct Storage {
    inner: Mutex<Store>,
    rv_rx: watch::Receiver<u64>,
    /// How far the data directory has caught up, when there is one.
    durable: Option<Durable>,
}

/// The locked store. Dropping it sends the hold's writes to the journal
/// as one message, before the lock is released, so they reach the disk
/// together and in resourceVersion order.
pub(crate) struct StoreGuard<'a>(MutexGuard<'a, Store>);

impl Deref for StoreGuard<'_> {
    type Target = Store;
    fn deref(&self) -> &Store {
        &self.0
    }
}

impl DerefMut for StoreGuard<'_> {
    fn deref_mut(&mut self) -> &mut Store {
        &mut self.0
    }
}

impl Drop for StoreGuard<'_> {
    fn drop(&mut self) {
        let store = &mut *self.0;
        if store.unsent.is_empty() {
            return;
        }
        let records = std::mem::take(&mut store.unsent);
        if let Some(journal) = &store.journal {
            journal.send(records);
        }
    }
}

impl Storage {
    pub fn new(history_limit: usize, watch_buffer: usize) -> Self {
        let (rv_tx, rv_rx) = watch::channel(1);
        Self {
            inner: Mutex::new(Store {
                rv: 1,
                collections: HashMap::new(),
                uids: HashMap::new(),
                dependents: HashMap::new(),
                history_limit: history_limit.max(1),
                history_bytes_limit: usize::MAX,
                history_bytes: 0,
                history_order: VecDeque::new(),
                watch_buffer: watch_buffer.max(1),
                rv_tx,
                compacted: 0,
                retiring: VecDeque::new(),
                journal: None,
                unsent: Vec::new(),
            }),
            rv_rx,
            durable: None,
        }
    }

    /// Makes the store durable: starts from `snapshot` (what the data
    /// directory held) and sends every later write to `journal`. The
    /// history starts empty, so any older resourceVersion answers 410, as
    /// after a compaction.
    pub fn persisted(mut self, snapshot: Snapshot, journal: Journal, durable: Durable) -> Self {
        let store = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        for (res, key, rv, json) in snapshot.objects {
            let res = ResKey(res);
            let value = match serde_json::from_slice::<Value>(&json) {
                Ok(v) => v,
                Err(e) => {
                    // Written by this server, so never expected; keep going
                    // with the rest rather than refuse the whole directory.
                    tracing::error!(resource = %res.0, namespace = %key.0, name = %key.1, error = %e, "a stored object does not parse; skipped");
                    continue;
                }
            };
            let obj = Arc::new(StoredObject::encode(value, rv));
            store.index(&res, &key, None, Some(&obj));
            store
                .collections
                .entry(res)
                .or_default()
                .objects
                .insert(key, obj);
        }
        store.rv = snapshot.rv.max(store.rv);
        store.compacted = store.rv;
        store.journal = Some(journal);
        store.rv_tx.send_replace(store.rv);
        self.durable = Some(durable);
        self
    }

    /// Waits until everything written so far is durable (at once without
    /// a data directory). A request answers only after this, so nothing it
    /// saw or wrote can be lost by a crash.
    pub async fn durable(&self) -> Result<(), String> {
        let Some(durable) = &self.durable else {
            return Ok(());
        };
        let rv = *self.rv_rx.borrow();
        durable.reached(rv).await
    }

    /// [`durable`](Self::durable) for writes up to `rv`.
    pub async fn durable_at(&self, rv: u64) -> Result<(), String> {
        match &self.durable {
            Some(durable) => durable.reached(rv).await,
            None => Ok(()),
        }
    }

    /// Writes meta values (identities) durably; nothing without a data
    /// directory.
    pub fn put_meta(
        &self,
        entries: Vec<(String, Vec<u8>)>,
    ) -> Result<(), crate::machinery::error::Error> {
        // Queued under the lock, so after every write before it; waited
        // for without it, so writers go on meanwhile.
        let ack = self.lock().journal.as_ref().map(|j| j.put_meta(entries));
        ack.map_or(Ok(()), |ack| ack.wait())
    }

    /// Waits until every write so far is durable, from code that is not a
    /// request (the Rust API's writes, answered without the HTTP gate).
    /// The journal is one queue, so a commit of nothing after them is a
    /// commit after them all.
    pub fn sync(&self) -> Result<(), crate::machinery::error::Error> {
        self.put_meta(Vec::new())
    }

    /// Commits what is queued and closes the data directory; later writes
    /// stay in memory and are never acknowledged as durable.
    pub fn close(&self) {
        let journal = self.lock().journal.take();
        if let Some(journal) = journal {
            journal.close();
        }
    }

    /// Bounds the watch history of all resources together to `bytes` of
    /// events (counted as the JSON of the objects they carry); the oldest
    /// go first, and resourceVersions before them answer 410 as compacted
    /// ones do.
    pub fn with_history_bytes(self, bytes: usize) -> Self {
        self.lock().history_bytes_limit = bytes;
        self
    }

    /// Locks the store. A panic elsewhere while holding the lock leaves the
    /// maps consistent (every write is applied in one step), so poisoning
    /// is ignored.
    pub fn lock(&self) -> StoreGuard<'_> {
        StoreGuard(self.inner.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Waits up to `timeout` for the store to reach `rv`.
    pub async fn wait_for(&self, rv: u64, timeout: std::time::Duration) -> bool {
        let mut rx = self.rv_rx.clone();
        tokio::time::timeout(timeout, rx.wait_for(|cur| *cur >= rv))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

impl Store {
    /// The current resourceVersion.
    pub fn rv(&self) -> u64 {
        self.rv
    }

    pub fn get(&self, res: &ResKey, key: &ObjKey) -> Option<Arc<StoredObject>> {
        self.collections.get(res)?.objects.get(key).cloned()
    }

    /// Where the object with this uid lives.
    pub fn by_uid(&self, uid: &str) -> Option<(ResKey, ObjKey)> {
        self.uids.get(uid).cloned()
    }

    /// Objects whose ownerReferences name `owner_uid`.
    pub fn dependents(&self, owner_uid: &str) -> Vec<(ResKey, ObjKey)> {
        self.dependents
            .get(owner_uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Every object in namespace `ns`, across resources.
    pub fn in_namespace(&self, ns: &str) -> Vec<(ResKey, Arc<StoredObject>)> {
        let mut out = Vec::new();
        for (res, coll) in &self.collections {
            let start = (ns.to_owned(), String::new());
            for (key, obj) in coll.objects.range(start..) {
                if key.0 != ns {
                    break;
                }
                out.push((res.clone(), obj.clone()));
            }
        }
        out
    }

    /// Every object of every resource.
    pub fn all(&self) -> Vec<(ResKey, Arc<StoredObject>)> {
        self.collections
            .iter()
            .flat_map(|(res, c)| c.objects.values().map(move |o| (res.clone(), o.clone())))
            .collect()
    }

    /// Keys of every object of one resource.
    pub fn keys(&self, res: &ResKey) -> Vec<ObjKey> {
        self.collections
            .get(res)
            .map(|c| c.objects.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Number of objects of one resource.
    pub fn count(&self, res: &ResKey) -> usize {
        self.collections.get(res).map_or(0, |c| c.objects.len())
    }

    fn index(
        &mut self,
        res: &ResKey,
        key: &ObjKey,
        old: Option<&StoredObject>,
        new: Option<&StoredObject>,
    ) {
        if let Some(old) = old {
            for owner in old.owner_uids() {
                if let Some(set) = self.dependents.get_mut(&**owner) {
                    set.remove(&(res.clone(), key.clone()));
                    if set.is_empty() {
                        self.dependents.remove(&**owner);
                    }
                }
            }
            if new.is_none() {
                self.uids.remove(old.uid());
            }
        }
        if let Some(new) = new {
            for owner in new.owner_uids() {
                self.dependents
                    .entry(owner.to_string())
                    .or_default()
                    .insert((res.clone(), key.clone()));
            }
            if !new.uid().is_empty() {
                self.uids
                    .insert(new.uid().to_owned(), (res.clone(), key.clone()));
            }
        }
    }

    /// A version stopped being current: it says so at once, and keeps its
    /// parsed tree until [`RETIRING_VERSIONS`] more have.
    fn retire(&mut self, version: Arc<StoredObject>) {
        version.mark_replaced();
        self.retiring.push_back(version);
        while self.retiring.len() > RETIRING_VERSIONS {
            if let Some(oldest) = self.retiring.pop_front() {
                oldest.supersede();
            }
        }
    }

    /// Queues a write for the data directory (sent when the lock hold ends).
    fn persist(&mut self, res: &ResKey, key: &ObjKey, rv: u64, obj: Option<&StoredObject>) {
        if self.journal.is_some() {
            self.unsent.push(Record {
                res: res.0.clone(),
                key: key.clone(),
                rv,
                bytes: obj.map(|o| o.bytes().clone()),
            });
        }
    }

    fn record(&mut self, res: &ResKey, ev: Event) {
        let ev = Arc::new(ev);
        let limit = self.history_limit;
        let coll = self.collections.entry(res.clone()).or_default();
        coll.history.push_back(ev.clone());
        self.history_bytes = self.history_bytes.saturating_add(ev.size());
        self.history_order.push_back((ev.rv, res.clone()));
        while coll.history.len() > limit {
            if let Some(old) = coll.history.pop_front() {
                coll.floor = old.rv;
                self.history_bytes = self.history_bytes.saturating_sub(old.size());
            }
        }
        self.evict_history_bytes();
        let Some(coll) = self.collections.get_mut(res) else {
            return;
        };
        coll.watchers.retain(|w| {
            let Some(ty) = w.filter.event_type(&ev) else {
                return !w.tx.is_closed();
            };
            match w.tx.try_send((ev.clone(), ty)) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::debug!(resource = %res.0, "watcher too slow, closing its watch");
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
        self.rv_tx.send_replace(self.rv);
    }

    /// Drops the oldest events of any resource while the histories hold
    /// more than their byte bound.
    fn evict_history_bytes(&mut self) {
        while self.history_bytes > self.history_bytes_limit {
            let Some((rv, res)) = self.history_order.pop_front() else {
                self.history_bytes = 0;
                return;
            };
            let Some(coll) = self.collections.get_mut(&res) else {
                continue;
            };
            // Gone already when the count bound evicted it.
            if coll.history.front().is_some_and(|e| e.rv == rv) {
                if let Some(old) = coll.history.pop_front() {
                    coll.floor = old.rv;
                    self.history_bytes = self.history_bytes.saturating_sub(old.size());
                }
            }
        }
    }

    /// Stores a new object; fails if the key is taken.
    pub fn create(
        &mut self,
        res: &ResKey,
        key: ObjKey,
        mut value: Value,
    ) -> Result<Arc<StoredObject>, StoreError> {
        if self.get(res, &key).is_some() {
            return Err(StoreError::AlreadyExists);
        }
        self.rv += 1;
        set_rv(&mut value, self.rv);
        let obj = Arc::new(StoredObject::encode(value, self.rv));
        self.persist(res, &key, self.rv, Some(&obj));
        self.index(res, &key, None, Some(&obj));
        self.collections
            .entry(res.clone())
            .or_default()
            .objects
            .insert(key.clone(), obj.clone());
        self.record(res, Event::new(key, obj.clone(), None, false));
        Ok(obj)
    }

    /// Replaces an object; with `expect_rv`, only if it is still at that
    /// resourceVersion.
    pub fn update(
        &mut self,
        res: &ResKey,
        key: &ObjKey,
        mut value: Value,
        expect_rv: Option<u64>,
    ) -> Result<Arc<StoredObject>, StoreError> {
        let old = self.get(res, key).ok_or(StoreError::NotFound)?;
        if expect_rv.is_some_and(|rv| rv != old.rv) {
            return Err(StoreError::Conflict);
        }
        self.rv += 1;
        set_rv(&mut value, self.rv);
        let obj = Arc::new(StoredObject::encode(value, self.rv));
        self.persist(res, key, self.rv, Some(&obj));
        self.index(res, key, Some(&old), Some(&obj));
        self.collections
            .entry(res.clone())
            .or_default()
            .objects
            .insert(key.clone(), obj.clone());
        self.retire(old.clone());
        self.record(res, Event::new(key.clone(), obj.clone(), Some(old), false));
        Ok(obj)
    }

    /// Removes an object, returning its last state stamped with the
    /// deletion's resourceVersion.
    pub fn delete(
        &mut self,
        res: &ResKey,
        key: &ObjKey,
        expect_rv: Option<u64>,
        expect_uid: Option<&str>,
    ) -> Result<Arc<StoredObject>, StoreError> {
        let old = self.get(res, key).ok_or(StoreError::NotFound)?;
        if let Some(uid) = expect_uid {
            if uid != old.uid() {
                return Err(StoreError::UidMismatch {
                    expected: uid.to_owned(),
                    actual: old.uid().to_owned(),
                });
            }
        }
        if expect_rv.is_some_and(|rv| rv != old.rv) {
            return Err(StoreError::Conflict);
        }
        self.rv += 1;
        let obj = Arc::new(old.with_rv(self.rv));
        self.persist(res, key, self.rv, None);
        self.index(res, key, Some(&old), None);
        // The last state is never current: both retire.
        self.retire(old.clone());
        self.retire(obj.clone());
        if let Some(c) = self.collections.get_mut(res) {
            c.objects.remove(key);
        }
        self.record(res, Event::new(key.clone(), obj.clone(), Some(old), true));
        Ok(obj)
    }

    fn check_rv(&self, coll: Option<&Collection>, rv: u64) -> Result<(), StoreError> {
        if rv > self.rv {
            return Err(StoreError::TooLarge {
                requested: rv,
                current: self.rv,
            });
        }
        let floor = coll.map_or(0, |c| c.floor).max(self.compacted);
        if rv < floor {
            return Err(StoreError::Expired {
                requested: rv,
                oldest: floor + 1,
            });
        }
        Ok(())
    }

    /// One page of a list, at the latest state or exactly at `at`.
    pub fn list(
        &self,
        res: &ResKey,
        filter: &Filter,
        at: Option<u64>,
        start_after: Option<&ObjKey>,
        limit: Option<usize>,
    ) -> Result<ListPage, StoreError> {
        self.list_page(res, filter, at, start_after, limit, None)
    }

    /// [`list`](Self::list), continuing a paged list whose previous page
    /// said `known_remaining` items follow `start_after` (its
    /// `remainingItemCount`). Every page of a list is at one
    /// resourceVersion, so that count still holds: this page's is that
    /// less its items, and the page stops at its limit instead of
    /// counting the rest again. Without it the first page counts them
    /// once, so a paged list costs one pass over the collection rather
    /// than one per page.
    pub fn list_page(
        &self,
        res: &ResKey,
        filter: &Filter,
        at: Option<u64>,
        start_after: Option<&ObjKey>,
        limit: Option<usize>,
        known_remaining: Option<u64>,
    ) -> Result<ListPage, StoreError> {
        let empty = Collection::default();
        let coll = self.collections.get(res).unwrap_or(&empty);
        let list_rv = at.unwrap_or(self.rv);
        self.check_rv(Some(coll), list_rv)?;
        // State at `list_rv`: the earliest event after it holds the state
        // it replaced.
        let mut overlay: BTreeMap<&ObjKey, Option<&Arc<StoredObject>>> = BTreeMap::new();
        for ev in coll.history.iter().rev() {
            if ev.rv <= list_rv {
                break;
            }
            overlay.insert(&ev.key, ev.prev.as_ref());
        }
        let lower = match (start_after, &filter.namespace) {
            (Some(k), _) => Bound::Excluded(k.clone()),
            (None, Some(ns)) => Bound::Included((ns.clone(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let mut current = coll
            .objects
            .range((lower.clone(), Bound::Unbounded))
            .map(|(k, v)| (k, Some(v)))
            .peekable();
        let mut past = overlay
            .range::<ObjKey, _>((lower.as_ref(), Bound::Unbounded))
            .map(|(k, v)| (*k, *v))
            .peekable();
        let mut items = Vec::new();
        let mut last_key: Option<ObjKey> = None;
        let mut more = false;
        let unfiltered = filter.labels.is_empty() && filter.fields.is_empty();
        let count_remaining = unfiltered && known_remaining.is_none();
        let mut remaining = 0u64;
        loop {
            let next = match (current.peek(), past.peek()) {
                (None, None) => break,
                (Some(_), None) => current.next(),
                (None, Some(_)) => past.next(),
                (Some((ck, _)), Some((pk, _))) => match (*ck).cmp(*pk) {
                    std::cmp::Ordering::Less => current.next(),
                    std::cmp::Ordering::Greater => past.next(),
                    std::cmp::Ordering::Equal => {
                        current.next();
                        past.next()
                    }
                },
            };
            let Some((key, obj)) = next else { break };
            if let Some(ns) = &filter.namespace {
                if key.0 != *ns {
                    break;
                }
            }
            let Some(obj) = obj else { continue };
            if !filter.matches(key, obj) {
                continue;
            }
            if more {
                remaining += 1;
                continue;
            }
            if limit.is_some_and(|l| items.len() >= l) {
                more = true;
                if !count_remaining {
                    break;
                }
                remaining = 1;
                continue;
            }
            last_key = Some(key.clone());
            items.push(obj.clone());
        }
        let remaining = match known_remaining {
            // A count carried by a token the client may have altered: it
            // can only misstate its own list's count, never go negative.
            Some(known) if unfiltered => Some(known.saturating_sub(items.len() as u64).max(1)),
            _ => count_remaining.then_some(remaining),
        };
        Ok(ListPage {
            rv: list_rv,
            items,
            next: if more { last_key } else { None },
            remaining: remaining.filter(|_| more),
        })
    }

    /// Registers a watcher.
    pub fn watch(
        &mut self,
        res: &ResKey,
        filter: Filter,
        from: WatchFrom,
    ) -> Result<Subscription, StoreError> {
        let filter = Arc::new(filter);
        let (tx, rx) = mpsc::channel(self.watch_buffer);
        let current_rv = self.rv;
        if let WatchFrom::After(rv) = from {
            self.check_rv(self.collections.get(res), rv)?;
        }
        let coll = self.collections.entry(res.clone()).or_default();
        let mut initial = Vec::new();
        let mut replay = Vec::new();
        match from {
            WatchFrom::Now { initial: true } => {
                initial = coll
                    .objects
                    .iter()
                    .filter(|(k, o)| filter.matches(k, o))
                    .map(|(_, o)| o.clone())
                    .collect();
            }
            WatchFrom::Now { initial: false } => {}
            WatchFrom::After(rv) => {
                let start = coll.history.partition_point(|e| e.rv <= rv);
                replay = coll
                    .history
                    .range(start..)
                    .filter_map(|e| filter.event_type(e).map(|t| (e.clone(), t)))
                    .collect();
            }
        }
        coll.watchers.retain(|w| !w.tx.is_closed());
        coll.watchers.push(Watcher { filter, tx });
        Ok(Subscription {
            initial,
            replay,
            rx,
            start_rv: current_rv,
        })
    }

    /// Open watches per resource.
    pub fn open_watches(&mut self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for (res, coll) in &mut self.collections {
            coll.watchers.retain(|w| !w.tx.is_closed());
            if !coll.watchers.is_empty() {
                out.insert(res.0.to_string(), coll.watchers.len());
            }
        }
        out
    }

    /// Ends every open watch (their streams close after what is buffered).
    pub fn close_watches(&mut self) {
        for coll in self.collections.values_mut() {
            coll.watchers.clear();
        }
    }

    /// Forgets the whole watch history: any older resourceVersion is now
    /// expired.
    pub fn compact(&mut self) {
        let rv = self.rv;
        self.compacted = rv;
        for coll in self.collections.values_mut() {
            coll.history.clear();
            coll.floor = rv;
        }
        self.history_bytes = 0;
        self.history_order.clear();
    }

    /// Forgets the history up to `rv`, as an etcd compaction to that
    /// revision: watches and exact lists from before it answer 410, later
    /// ones are served as before.
    pub fn compact_to(&mut self, rv: u64) {
        let rv = rv.min(self.rv);
        if rv <= self.compacted {
            return;
        }
        self.compacted = rv;
        for coll in self.collections.values_mut() {
            while coll.history.front().is_some_and(|e| e.rv <= rv) {
                if let Some(old) = coll.history.pop_front() {
                    coll.floor = old.rv;
                    self.history_bytes = self.history_bytes.saturating_sub(old.size());
                }
            }
        }
        while self.history_order.front().is_some_and(|(at, _)| *at <= rv) {
            self.history_order.pop_front();
        }
    }

    /// Re-reads every object of one resource through `reread` (a changed
    /// CRD schema prunes and defaults what is stored, as kube-apiserver's
    /// decoder does on every read from etcd). Changed objects keep their
    /// resourceVersion and produce no event, as nothing was written; the
    /// resource's watches end so clients relist, as they do when
    /// kube-apiserver replaces a CRD's storage. Returns how many changed.
    pub fn reread(&mut self, res: &ResKey, mut reread: impl FnMut(&mut Value) -> bool) -> usize {
        let Some(coll) = self.collections.get_mut(res) else {
            return 0;
        };
        let mut replaced = Vec::new();
        let mut rewritten = Vec::new();
        for (key, obj) in coll.objects.iter_mut() {
            let mut value = obj.to_value();
            if reread(&mut value) {
                let new = Arc::new(StoredObject::encode(value, obj.rv));
                rewritten.push((key.clone(), new.clone()));
                replaced.push(std::mem::replace(obj, new));
            }
        }
        if !replaced.is_empty() {
            coll.watchers.clear();
        }
        let changed = replaced.len();
        for old in replaced {
            self.retire(old);
        }
        for (key, new) in rewritten {
            self.persist(res, &key, new.rv, Some(&new));
        }
        changed
    }

    /// Forgets history for one resource and closes its watches (a CRD was
    /// deleted and its objects with it).
    pub fn reset_resource(&mut self, res: &ResKey) {
        if let Some(coll) = self.collections.get_mut(res) {
            coll.watchers.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(name: &str, v: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns", "uid": name}, "data": {"v": v}})
    }

    fn key(name: &str) -> ObjKey {
        ("ns".into(), name.into())
    }

    #[test]
    fn exact_list_undoes_later_events() {
        let s = Storage::new(100, 10);
        let res = ResKey::new("", "configmaps");
        let mut st = s.lock();
        st.create(&res, key("a"), cm("a", "1")).unwrap();
        st.create(&res, key("b"), cm("b", "1")).unwrap();
        let at = st.rv();
        st.update(&res, &key("a"), cm("a", "2"), None).unwrap();
        st.delete(&res, &key("b"), None, None).unwrap();
        st.create(&res, key("c"), cm("c", "1")).unwrap();
        let f = Filter::default();
        let page = st.list(&res, &f, Some(at), None, None).unwrap();
        let names: Vec<_> = page.items.iter().map(|o| o.name().to_owned()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(page.items[0].value()["data"]["v"], "1");
        let latest = st.list(&res, &f, None, None, None).unwrap();
        let names: Vec<_> = latest.items.iter().map(|o| o.name().to_owned()).collect();
        assert_eq!(names, ["a", "c"]);
        // Paging at the old resourceVersion.
        let p1 = st.list(&res, &f, Some(at), None, Some(1)).unwrap();
        assert_eq!(p1.next, Some(key("a")));
        let p2 = st
            .list(&res, &f, Some(at), p1.next.as_ref(), Some(1))
            .unwrap();
        assert_eq!(p2.items[0].name(), "b");
        assert!(p2.next.is_none());
    }

    #[test]
    fn replaced_versions_drop_their_parsed_trees_once_retired() {
        let s = Storage::new(100, 10);
        let res = ResKey::new("", "configmaps");
        let mut st = s.lock();
        let first = st.create(&res, key("a"), cm("a", "1")).unwrap();
        assert!(Arc::ptr_eq(&first.value(), &first.value()), "kept");
        let second = st.update(&res, &key("a"), cm("a", "2"), None).unwrap();
        assert!(first.keeps_tree(), "kept while readers catch up");
        assert!(Arc::ptr_eq(&second.value(), &second.value()));
        let gone = st.delete(&res, &key("a"), None, None).unwrap();
        assert_eq!(gone.value()["data"]["v"], "2");
        // Enough later versions retire the first ones.
        st.create(&res, key("b"), cm("b", "0")).unwrap();
        for i in 0..RETIRING_VERSIONS {
            let _ = st
                .update(&res, &key("b"), cm("b", &i.to_string()), None)
                .unwrap()
                .value();
        }
        for retired in [&first, &second, &gone] {
            assert!(!retired.keeps_tree(), "the replaced version dropped it");
            assert_eq!(retired.value()["metadata"]["name"], "a", "and still parses");
            assert!(!retired.keeps_tree(), "without keeping it again");
        }
        let current = st.get(&res, &key("b")).unwrap();
        assert!(current.keeps_tree(), "the current version keeps its tree");
    }

    #[test]
    fn a_version_says_when_storage_stopped_holding_it() {
        let s = Storage::new(100, 10);
        let res = ResKey::new("", "configmaps");
        let mut st = s.lock();
        let first = st.create(&res, key("a"), cm("a", "1")).unwrap();
        let other = st.create(&res, key("b"), cm("b", "1")).unwrap();
        assert!(!first.is_replaced());
        let second = st.update(&res, &key("a"), cm("a", "2"), None).unwrap();
        assert!(first.is_replaced(), "updated");
        assert!(!second.is_replaced() && !other.is_replaced());
        let reread = |v: &mut Value| {
            v["data"]["v"] = json!("reread");
            true
        };
        assert_eq!(st.reread(&res, reread), 2);
        assert!(second.is_replaced() && other.is_replaced(), "reread");
        let third = st.get(&res, &key("a")).unwrap();
        assert!(!third.is_replaced());
        let gone = st.delete(&res, &key("a"), None, None).unwrap();
        assert!(third.is_replaced(), "deleted");
        assert!(
            gone.is_replaced(),
            "a deletion's last state is never current"
        );
        let again = st.create(&res, key("a"), cm("a", "3")).unwrap();
        assert!(!again.is_replaced(), "a new object under the same key");
    }

    #[test]
    fn history_bound_expires_old_versions() {
        let s = Storage::new(2, 10);
        let res = ResKey::new("", "configmaps");
        let mut st = s.lock();
        let first = st.create(&res, key("a"), cm("a", "1")).unwrap().rv;
        for i in 0..3 {
            st.update(&res, &key("a"), cm("a", &i.to_string()), None)
                .unwrap();
        }
        let err = st
            .watch(&res, Filter::default(), WatchFrom::After(first))
            .err();
        assert!(matches!(err, Some(StoreError::Expired { .. })));
        let rv = st.rv();
        let sub = st
            .watch(&res, Filter::default(), WatchFrom::After(rv - 1))
            .unwrap();
        assert_eq!(sub.replay.len(), 1);
    }

    #[test]
    fn history_bytes_bound_expires_the_oldest_events_of_any_resource() {
        let s = Storage::new(100, 10).with_history_bytes(2000);
        let cms = ResKey::new("", "configmaps");
        let secrets = ResKey::new("", "secrets");
        let mut st = s.lock();
        let first = st
            .create(&cms, key("a"), cm("a", &"x".repeat(600)))
            .unwrap()
            .rv;
        let other = st.create(&secrets, key("s"), cm("s", "1")).unwrap().rv;
        for i in 0..3 {
            st.update(
                &cms,
                &key("a"),
                cm("a", &format!("{i}{}", "x".repeat(600))),
                None,
            )
            .unwrap();
        }
        let err = st
            .watch(&cms, Filter::default(), WatchFrom::After(first))
            .err();
        assert!(matches!(err, Some(StoreError::Expired { .. })), "{err:?}");
        // The small secret event was older than the evicted updates.
        let err = st
            .watch(&secrets, Filter::default(), WatchFrom::After(other - 1))
            .err();
        assert!(matches!(err, Some(StoreError::Expired { .. })), "{err:?}");
        let rv = st.rv();
        let sub = st
            .watch(&cms, Filter::default(), WatchFrom::After(rv - 1))
            .unwrap();
        assert_eq!(sub.replay.len(), 1);
        assert!(st.history_bytes <= 2000);
    }

    #[test]
    fn compacting_to_a_version_expires_only_what_came_before() {
        let s = Storage::new(100, 10);
        let res = ResKey::new("", "configmaps");
        let mut st = s.lock();
        let a = st.create(&res, key("a"), cm("a", "1")).unwrap().rv;
        st.create(&res, key("b"), cm("b", "1")).unwrap();
        st.compact_to(a);
        let err = st
            .watch(&res, Filter::default(), WatchFrom::After(a - 1))
            .err();
        assert!(matches!(err, Some(StoreError::Expired { .. })), "{err:?}");
        let sub = st
            .watch(&res, Filter::default(), WatchFrom::After(a))
            .unwrap();
        assert_eq!(sub.replay.len(), 1, "b's creation is kept");
        assert_eq!(st.history_order.len(), 1, "and only its entry in the order");
        st.compact_to(a - 1);
        assert_eq!(st.compacted, a, "compaction never goes back");
    }

    #[test]
    fn full_watcher_is_dropped_not_waited_for() {
        let s = Storage::new(100, 1);
        let res = ResKey::new("", "configmaps");
        let mut st = s.lock();
        let sub = st
            .watch(&res, Filter::default(), WatchFrom::Now { initial: false })
            .unwrap();
        st.create(&res, key("a"), cm("a", "1")).unwrap();
        st.create(&res, key("b"), cm("b", "1")).unwrap();
        assert!(st.open_watches().is_empty());
        drop(sub);
    }

    #[test]
    fn selector_transitions_become_added_and_deleted() {
        let s = Storage::new(100, 10);
        let res = ResKey::new("", "configmaps");
        let mut st = s.lock();
        st.create(&res, key("a"), cm("a", "1")).unwrap();
        let f = Filter {
            labels: LabelSelector::parse("x=y").unwrap(),
            ..Filter::default()
        };
        let mut sub = st.watch(&res, f, WatchFrom::Now { initial: true }).unwrap();
        assert!(sub.initial.is_empty());
        let mut labelled = cm("a", "2");
        labelled["metadata"]["labels"] = json!({"x": "y"});
        st.update(&res, &key("a"), labelled, None).unwrap();
        st.update(&res, &key("a"), cm("a", "3"), None).unwrap();
        assert_eq!(sub.rx.try_recv().unwrap().1, EventType::Added);
        let (ev, ty) = sub.rx.try_recv().unwrap();
        assert_eq!(ty, EventType::Deleted);
        // The last state that matched, at the event's resourceVersion.
        let left = ev.object_for(ty);
        assert_eq!(left.value()["metadata"]["labels"]["x"], "y");
        assert_eq!(
            left.value()["metadata"]["resourceVersion"],
            ev.rv.to_string()
        );
        let mut frame = bytes::BytesMut::new();
        ev.write_frame(ty, &mut frame);
        let framed: Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(framed["object"]["data"]["v"], "2");
    }
}
