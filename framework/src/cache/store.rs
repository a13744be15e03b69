//! [`Store`]: the thread-safe, indexed map of `Arc<K>` an informer keeps
//! (client-go's `threadSafeMap` + `storeIndex`), with its single writer
//! [`StoreWriter`].
//!
//! One `RwLock` guards the items, the indexes and the last-synced
//! resourceVersion together, so a reader never sees an item its indexes do
//! not reflect. It is a std lock, held only for map operations and never
//! across an `await`. Objects are stored as `Arc<K>` and handed out as
//! clones of the `Arc`: the store never clones a `K`.
//!
//! Memory per object beyond the object itself is a few bytes: the objects
//! sit in a slab, and the key map holds only slot numbers, hashed and
//! compared by the namespace and name read from the stored object, so no
//! key is kept a second time.

use std::fmt;
use std::hash::BuildHasher as _;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use kube_core::Resource;

use super::index::{Index, IndexFn, SlotId, NAMESPACE_INDEX};
use super::sink::{Applied, Delta, Replaced};
use super::{Error, ObjectKey};

/// The namespace (`""` for cluster-scoped objects) and name an object is
/// keyed by: what [`ObjectKey::of`] gives, borrowed from the object.
fn key_parts<K: Resource>(obj: &K) -> (&str, &str) {
    let meta = obj.meta();
    let namespace = meta.namespace.as_deref().unwrap_or("");
    let name = meta
        .name
        .as_deref()
        .or(meta.generate_name.as_deref())
        .unwrap_or("");
    (namespace, name)
}

/// The parts of `key` as [`key_parts`] gives them.
fn parts_of(key: &ObjectKey) -> (&str, &str) {
    (key.namespace_or_empty(), &key.name)
}

/// Objects live in a slab; the key map and the indexes name them by slot, so
/// an index look-up reads slots directly (no second hash per hit) and an
/// update that keeps its index values touches no index at all.
struct State<K> {
    slots: Vec<Option<Arc<K>>>,
    free: Vec<SlotId>,
    /// The slot of every object, hashed by [`key_parts`].
    by_key: HashTable<SlotId>,
    hasher: DefaultHashBuilder,
    indexes: HashMap<String, Index<K>>,
    last_sync_resource_version: Option<String>,
}

impl<K> State<K> {
    fn slot(&self, id: SlotId) -> Option<&Arc<K>> {
        self.slots.get(id as usize).and_then(Option::as_ref)
    }

    fn len(&self) -> usize {
        self.by_key.len()
    }

    fn occupied(&self) -> impl Iterator<Item = (SlotId, &Arc<K>)> {
        // Slot ids fit a `SlotId`: `allocate` never hands out more.
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(id, s)| s.as_ref().map(|s| (id as SlotId, s)))
    }

    fn index(&self, name: &str) -> Result<&Index<K>, Error> {
        self.indexes
            .get(name)
            .ok_or_else(|| Error::IndexNotFound(name.to_owned()))
    }

    fn objects_in(&self, index: &Index<K>, value: &str) -> Vec<Arc<K>> {
        let mut out = Vec::with_capacity(index.count(value));
        out.extend(index.slots(value).filter_map(|id| self.slot(id)).cloned());
        out
    }
}

impl<K: Resource> State<K> {
    fn hash(&self, parts: (&str, &str)) -> u64 {
        self.hasher.hash_one(parts)
    }

    /// The slot holding the object keyed by `parts`.
    fn find(&self, parts: (&str, &str)) -> Option<SlotId> {
        let slots = &self.slots;
        self.by_key
            .find(self.hash(parts), |&id| slot_has_key(slots, id, parts))
            .copied()
    }

    fn get(&self, key: &ObjectKey) -> Option<&Arc<K>> {
        self.find(parts_of(key)).and_then(|id| self.slot(id))
    }
}

fn slot_has_key<K: Resource>(slots: &[Option<Arc<K>>], id: SlotId, parts: (&str, &str)) -> bool {
    slots
        .get(id as usize)
        .and_then(Option::as_ref)
        .is_some_and(|obj| key_parts(obj.as_ref()) == parts)
}

/// A cheap-to-clone, read-side handle on an indexed cache of `Arc<K>`.
///
/// Every store has the [`NAMESPACE_INDEX`]; more indexes can be added at any
/// time with [`Store::add_index`] and existing items are indexed at once.
/// Writes go through the [`StoreWriter`] that created the store (owned by a
/// reflector or an informer).
pub struct Store<K> {
    state: Arc<RwLock<State<K>>>,
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Self {
            state: Arc::clone(&self.state),
        }
    }
}

impl<K> fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.read();
        f.debug_struct("Store")
            .field("len", &state.len())
            .field("indexes", &state.indexes.keys().collect::<Vec<_>>())
            .field(
                "last_sync_resource_version",
                &state.last_sync_resource_version,
            )
            .finish()
    }
}

impl<K> Store<K> {
    // Nothing under the lock is expected to panic (user index functions run
    // behind catch_unwind); should the lock be poisoned anyway, keep serving
    // rather than panic in every reader.
    fn read(&self) -> RwLockReadGuard<'_, State<K>> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, State<K>> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every stored object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        let state = self.read();
        let mut out = Vec::with_capacity(state.len());
        out.extend(state.occupied().map(|(_, obj)| Arc::clone(obj)));
        out
    }

    /// The objects in `namespace` (`""` lists cluster-scoped objects), through
    /// the namespace index.
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        let state = self.read();
        match state.indexes.get(NAMESPACE_INDEX) {
            Some(index) => state.objects_in(index, namespace),
            None => Vec::new(),
        }
    }

    /// How many objects are stored.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.read().len() == 0
    }

    /// The objects the index `index` files under `value`.
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, Error> {
        let state = self.read();
        Ok(state.objects_in(state.index(index)?, value))
    }

    /// Every value the index `index` has at least one object filed under.
    pub fn list_index_func_values(&self, index: &str) -> Result<Vec<String>, Error> {
        Ok(self.read().index(index)?.values().cloned().collect())
    }

    /// The names of the store's indexes.
    pub fn index_names(&self) -> Vec<String> {
        self.read().indexes.keys().cloned().collect()
    }

    /// The resourceVersion of the last list, event or bookmark the writer
    /// applied; `None` before the first.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.read().last_sync_resource_version.clone()
    }
}

impl<K: Resource> Store<K> {
    /// The object stored under `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.read().get(key).cloned()
    }

    /// The object named `name` in `namespace` (`None` for cluster-scoped).
    pub fn get_by(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        let state = self.read();
        let id = state.find((namespace.unwrap_or(""), name))?;
        state.slot(id).cloned()
    }

    /// Whether an object is stored under `key`.
    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.read().find(parts_of(key)).is_some()
    }

    /// Every stored key, in no particular order.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        let state = self.read();
        let mut out = Vec::with_capacity(state.len());
        out.extend(state.occupied().map(|(_, obj)| ObjectKey::of(obj.as_ref())));
        out
    }

    /// The keys the index `index` files under `value`.
    pub fn index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectKey>, Error> {
        let state = self.read();
        Ok(state
            .index(index)?
            .slots(value)
            .filter_map(|id| state.slot(id))
            .map(|obj| ObjectKey::of(obj.as_ref()))
            .collect())
    }

    /// Adds the index `name`: `func` gives the values an object is filed
    /// under. Items already stored are indexed before this returns. A name
    /// already in use is [`Error::IndexExists`].
    ///
    /// `func` must be a pure function of the object and should be quick: it
    /// runs under the store's write lock. A panic in it files the object
    /// under no value (and is logged) rather than break the store.
    pub fn add_index<F>(&self, name: impl Into<String>, func: F) -> Result<(), Error>
    where
        F: Fn(&K) -> Vec<String> + Send + Sync + 'static,
    {
        let name = name.into();
        let mut state = self.write();
        if state.indexes.contains_key(&name) {
            return Err(Error::IndexExists(name));
        }
        let mut index = Index::custom(name.clone(), Arc::new(func) as IndexFn<K>);
        for (id, obj) in state.occupied() {
            index.insert(id, obj);
        }
        state.indexes.insert(name, index);
        Ok(())
    }
}

/// Whether `new` is the same version of the object as `old`: the same `Arc`,
/// or the same non-empty resourceVersion (client-go treats an unchanged
/// resourceVersion as a resync, not a change).
fn same_version<K: Resource>(old: &Arc<K>, new: &Arc<K>) -> bool {
    if Arc::ptr_eq(old, new) {
        return true;
    }
    match (
        old.meta().resource_version.as_deref(),
        new.meta().resource_version.as_deref(),
    ) {
        (Some(a), Some(b)) => !a.is_empty() && a == b,
        _ => false,
    }
}

/// Whether `new` is another object than `old` under the same key: both
/// carry a uid and they differ (it was deleted and created again while the
/// reflector was not watching).
fn different_uid<K: Resource>(old: &K, new: &K) -> bool {
    match (old.meta().uid.as_deref(), new.meta().uid.as_deref()) {
        (Some(a), Some(b)) => !a.is_empty() && !b.is_empty() && a != b,
        _ => false,
    }
}

impl<K: Resource> State<K> {
    /// Stores `obj`, replacing what its key held. Returns what happened and
    /// the slot it is in (`None` only if the slab is full: 2^32 objects).
    fn upsert(&mut self, obj: Arc<K>) -> (Applied<K>, Option<SlotId>) {
        if let Some(id) = self.find(key_parts(obj.as_ref())) {
            let Self { slots, indexes, .. } = self;
            if let Some(held) = slots.get_mut(id as usize).and_then(Option::as_mut) {
                if same_version(held, &obj) {
                    return (Applied::Unchanged(Arc::clone(held)), Some(id));
                }
                for index in indexes.values_mut() {
                    index.update(id, held, &obj);
                }
                let recreated = different_uid(held.as_ref(), obj.as_ref());
                let old = std::mem::replace(held, Arc::clone(&obj));
                let applied = if recreated {
                    Applied::Recreated { old, new: obj }
                } else {
                    Applied::Updated { old, new: obj }
                };
                return (applied, Some(id));
            }
        }
        let Some(id) = self.allocate() else {
            tracing::error!(
                object = %ObjectKey::of(obj.as_ref()),
                "the store holds 2^32 objects; not storing another"
            );
            return (Applied::Absent, None);
        };
        for index in self.indexes.values_mut() {
            index.insert(id, &obj);
        }
        let hash = self.hash(key_parts(obj.as_ref()));
        if let Some(slot) = self.slots.get_mut(id as usize) {
            *slot = Some(Arc::clone(&obj));
        }
        let Self {
            slots,
            by_key,
            hasher,
            ..
        } = self;
        by_key.insert_unique(hash, id, |&id| rehash(slots, hasher, id));
        (Applied::Added(obj), Some(id))
    }

    /// A free slot: a vacated one, or a new one at the end.
    fn allocate(&mut self) -> Option<SlotId> {
        if let Some(id) = self.free.pop() {
            return Some(id);
        }
        let id = SlotId::try_from(self.slots.len()).ok()?;
        self.slots.push(None);
        Some(id)
    }

    fn remove_slot(&mut self, id: SlotId) -> Option<Arc<K>> {
        let obj = self.slots.get_mut(id as usize).and_then(Option::take)?;
        let hash = self.hash(key_parts(obj.as_ref()));
        if let Ok(entry) = self.by_key.find_entry(hash, |&held| held == id) {
            entry.remove();
        }
        for index in self.indexes.values_mut() {
            index.remove(id, &obj);
        }
        self.free.push(id);
        Some(obj)
    }

    fn remove(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        let id = self.find(parts_of(key))?;
        self.remove_slot(id)
    }

    fn note_resource_version(&mut self, obj: &K) {
        if let Some(rv) = obj
            .meta()
            .resource_version
            .as_deref()
            .filter(|rv| !rv.is_empty())
        {
            if self.last_sync_resource_version.as_deref() != Some(rv) {
                self.last_sync_resource_version = Some(rv.to_owned());
            }
        }
    }
}

/// The hash of the object in slot `id`, for the key map to grow by.
fn rehash<K: Resource>(slots: &[Option<Arc<K>>], hasher: &DefaultHashBuilder, id: SlotId) -> u64 {
    let parts = slots
        .get(id as usize)
        .and_then(Option::as_ref)
        .map_or(("", ""), |obj| key_parts(obj.as_ref()));
    hasher.hash_one(parts)
}

/// The single writer of a [`Store`]: applies watch events and whole lists.
/// Not `Clone`: one reflector (or informer) owns it, so changes arrive in
/// one order.
pub struct StoreWriter<K> {
    store: Store<K>,
}

impl<K> fmt::Debug for StoreWriter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreWriter")
            .field("store", &self.store)
            .finish()
    }
}

impl<K> Default for StoreWriter<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> StoreWriter<K> {
    /// An empty store with only the namespace index, and its writer.
    pub fn new() -> Self {
        let mut indexes = HashMap::new();
        indexes.insert(NAMESPACE_INDEX.to_owned(), Index::namespace());
        let state = State {
            slots: Vec::new(),
            free: Vec::new(),
            by_key: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            indexes,
            last_sync_resource_version: None,
        };
        Self {
            store: Store {
                state: Arc::new(RwLock::new(state)),
            },
        }
    }

    /// A read handle on the store this writer writes.
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// Records `resource_version` as the last synced one (a bookmark).
    pub fn set_resource_version(&mut self, resource_version: String) {
        self.store.write().last_sync_resource_version = Some(resource_version);
    }
}

impl<K: Resource> StoreWriter<K> {
    /// Applies one watch event and reports what it changed. The object's
    /// resourceVersion, when it has one, becomes the last synced one.
    pub fn apply(&mut self, delta: Delta<K>) -> Applied<K> {
        let mut state = self.store.write();
        state.note_resource_version(delta.object());
        match delta {
            Delta::Added(obj) | Delta::Updated(obj) => state.upsert(obj).0,
            Delta::Deleted(obj) => match state.remove(&ObjectKey::of(obj.as_ref())) {
                Some(old) => Applied::Deleted(old),
                None => Applied::Absent,
            },
        }
    }

    /// Makes the contents exactly `items`, a complete list at
    /// `resource_version`, in one step under the write lock: readers see the
    /// old contents or the new, never a mix. Reports the keys that vanished
    /// (with the last state held) and what happened to each listed item.
    pub fn replace(&mut self, items: Vec<Arc<K>>, resource_version: String) -> Replaced<K> {
        let mut state = self.store.write();
        let held = state.len();
        let adding = items.len().saturating_sub(held);
        if adding > state.free.len() {
            // One exact growth for a first list instead of doublings.
            let more = adding - state.free.len();
            state.slots.reserve(more);
        }
        {
            let State {
                slots,
                by_key,
                hasher,
                ..
            } = &mut *state;
            by_key.reserve(adding, |&id| rehash(slots, hasher, id));
        }
        // Which slots the list names; the others vanished.
        let mut listed = vec![false; state.slots.len() + adding];
        let mut applied = Vec::with_capacity(items.len());
        for obj in items {
            let (outcome, id) = state.upsert(obj);
            if let Some(id) = id {
                if let Some(mark) = listed.get_mut(id as usize) {
                    *mark = true;
                } else {
                    listed.resize(id as usize + 1, false);
                    listed[id as usize] = true;
                }
            }
            applied.push(outcome);
        }
        let mut gone: Vec<(ObjectKey, SlotId)> = state
            .occupied()
            .filter(|(id, _)| !listed.get(*id as usize).copied().unwrap_or(false))
            .map(|(id, obj)| (ObjectKey::of(obj.as_ref()), id))
            .collect();
        drop(listed);
        gone.sort_unstable();
        let vanished = gone
            .into_iter()
            .filter_map(|(key, id)| state.remove_slot(id).map(|old| (key, old)))
            .collect();
        state.last_sync_resource_version = Some(resource_version);
        Replaced { vanished, applied }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_core::ObjectMeta;
    use std::collections::BTreeMap;

    fn cm(ns: &str, name: &str, rv: &str, app: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ns.into()),
                resource_version: Some(rv.into()),
                labels: Some(BTreeMap::from([("app".to_owned(), app.to_owned())])),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    fn app_index(cm: &ConfigMap) -> Vec<String> {
        cm.metadata
            .labels
            .iter()
            .flatten()
            .filter(|(k, _)| *k == "app")
            .map(|(_, v)| v.clone())
            .collect()
    }

    fn sorted_names(objs: Vec<Arc<ConfigMap>>) -> Vec<String> {
        let mut names: Vec<String> = objs
            .iter()
            .map(|o| ObjectKey::of(o.as_ref()).to_string())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn index_follows_adds_updates_and_deletes() {
        let mut w = StoreWriter::new();
        let s = w.store();
        s.add_index("app", app_index).unwrap();

        w.apply(Delta::Added(cm("a", "x", "1", "web")));
        w.apply(Delta::Added(cm("b", "y", "2", "web")));
        assert_eq!(
            sorted_names(s.by_index("app", "web").unwrap()),
            ["a/x", "b/y"]
        );
        assert_eq!(sorted_names(s.list_namespace("a")), ["a/x"]);

        w.apply(Delta::Updated(cm("a", "x", "3", "db")));
        assert_eq!(sorted_names(s.by_index("app", "web").unwrap()), ["b/y"]);
        assert_eq!(sorted_names(s.by_index("app", "db").unwrap()), ["a/x"]);

        w.apply(Delta::Deleted(cm("b", "y", "4", "web")));
        assert!(s.by_index("app", "web").unwrap().is_empty());
        assert_eq!(s.list_index_func_values("app").unwrap(), ["db"]);
        assert_eq!(
            s.index_keys("app", "db").unwrap(),
            [ObjectKey::namespaced("a", "x")]
        );
        assert_eq!(s.last_sync_resource_version().as_deref(), Some("4"));
    }

    #[test]
    fn unknown_index_is_a_typed_error_and_names_are_unique() {
        let w: StoreWriter<ConfigMap> = StoreWriter::new();
        let s = w.store();
        assert_eq!(
            s.by_index("nope", "x").unwrap_err(),
            Error::IndexNotFound("nope".into())
        );
        assert_eq!(
            s.index_keys("nope", "x").unwrap_err(),
            Error::IndexNotFound("nope".into())
        );
        assert_eq!(
            s.list_index_func_values("nope").unwrap_err(),
            Error::IndexNotFound("nope".into())
        );
        assert_eq!(
            s.add_index(NAMESPACE_INDEX, |_| vec![]).unwrap_err(),
            Error::IndexExists(NAMESPACE_INDEX.into())
        );
    }

    #[test]
    fn panicking_index_function_files_the_object_under_no_value() {
        let mut w = StoreWriter::new();
        let s = w.store();
        s.add_index("app", |cm: &ConfigMap| {
            let v = app_index(cm);
            assert!(v != ["bad"], "index function bug");
            v
        })
        .unwrap();
        w.apply(Delta::Added(cm("a", "x", "1", "bad")));
        w.apply(Delta::Added(cm("a", "y", "2", "web")));
        assert_eq!(s.list_index_func_values("app").unwrap(), ["web"]);
        w.apply(Delta::Updated(cm("a", "x", "3", "web")));
        assert_eq!(
            sorted_names(s.by_index("app", "web").unwrap()),
            ["a/x", "a/y"]
        );
        w.apply(Delta::Updated(cm("a", "y", "4", "bad")));
        w.apply(Delta::Deleted(cm("a", "y", "5", "bad")));
        assert_eq!(sorted_names(s.by_index("app", "web").unwrap()), ["a/x"]);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn same_resource_version_keeps_the_stored_arc() {
        let mut w = StoreWriter::new();
        let first = cm("a", "x", "1", "web");
        w.apply(Delta::Added(Arc::clone(&first)));
        let again = cm("a", "x", "1", "web");
        let Applied::Unchanged(kept) = w.apply(Delta::Updated(again)) else {
            panic!("expected Unchanged");
        };
        assert!(Arc::ptr_eq(&kept, &first));
        assert!(Arc::ptr_eq(
            &w.store().get_by(Some("a"), "x").unwrap(),
            &first
        ));
    }

    #[test]
    fn delete_of_unknown_key_is_absent() {
        let mut w = StoreWriter::new();
        assert!(matches!(
            w.apply(Delta::Deleted(cm("a", "x", "5", "web"))),
            Applied::Absent
        ));
        assert_eq!(w.store().last_sync_resource_version().as_deref(), Some("5"));
    }

    #[test]
    fn replace_reports_vanished_keys_with_last_state() {
        let mut w = StoreWriter::new();
        let s = w.store();
        let x = cm("a", "x", "1", "web");
        let y = cm("a", "y", "2", "web");
        w.apply(Delta::Added(Arc::clone(&x)));
        w.apply(Delta::Added(Arc::clone(&y)));

        let out = w.replace(
            vec![cm("a", "x", "3", "db"), cm("a", "z", "4", "db")],
            "10".into(),
        );
        assert_eq!(out.vanished.len(), 1);
        assert_eq!(out.vanished[0].0, ObjectKey::namespaced("a", "y"));
        assert!(Arc::ptr_eq(&out.vanished[0].1, &y));
        assert!(matches!(&out.applied[0], Applied::Updated { old, .. } if Arc::ptr_eq(old, &x)));
        assert!(matches!(&out.applied[1], Applied::Added(_)));
        assert_eq!(sorted_names(s.list()), ["a/x", "a/z"]);
        assert_eq!(s.last_sync_resource_version().as_deref(), Some("10"));
    }

    #[test]
    fn a_new_uid_under_a_held_key_is_a_recreation() {
        let with_uid = |rv: &str, uid: &str| {
            let mut obj = (*cm("a", "x", rv, "web")).clone();
            obj.metadata.uid = Some(uid.into());
            Arc::new(obj)
        };
        let mut w = StoreWriter::new();
        let first = with_uid("1", "u1");
        w.apply(Delta::Added(Arc::clone(&first)));
        assert!(matches!(
            w.apply(Delta::Updated(with_uid("2", "u1"))),
            Applied::Updated { .. }
        ));
        let out = w.replace(vec![with_uid("5", "u2")], "6".into());
        assert!(out.vanished.is_empty());
        assert!(matches!(
            &out.applied[0],
            Applied::Recreated { old, new }
                if old.metadata.uid.as_deref() == Some("u1") && new.metadata.uid.as_deref() == Some("u2")
        ));
        assert_eq!(w.store().len(), 1);
    }

    #[test]
    fn cluster_scoped_objects_file_under_the_empty_namespace() {
        let mut w = StoreWriter::new();
        let s = w.store();
        let obj = Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some("c".into()),
                ..Default::default()
            },
            ..Default::default()
        });
        w.apply(Delta::Added(obj));
        assert_eq!(sorted_names(s.list_namespace("")), ["c"]);
        assert!(s.get_by(None, "c").is_some());
    }
}
