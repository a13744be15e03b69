//! One named index of a store: the function that files an object under
//! zero or more values, and the inverted map from each value to the objects
//! filed under it (client-go's `Indexers` / `Indices`, `index.go`). Objects
//! are named by their slot in the store (four bytes each), so a look-up
//! reads the slots directly instead of hashing each key again.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use hashbrown::{HashMap, HashSet};
use kube_core::Resource;

/// Where an object lives in the store's slab.
pub(crate) type SlotId = u32;

/// The name of the index every store has: objects filed under their
/// namespace, `""` for cluster-scoped ones (client-go's `NamespaceIndex`).
pub const NAMESPACE_INDEX: &str = "namespace";

/// An index function: the values an object is filed under. It must be a pure
/// function of the object: the store calls it again on update and delete to
/// find the entries to move. If it panics, the object is filed under no
/// value and an error is logged; the store stays consistent.
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

enum IndexFunc<K> {
    /// The built-in namespace index. The namespace is part of the key, so it
    /// never changes on update: no call, no allocation on the hot path.
    Namespace,
    Custom {
        name: String,
        func: IndexFn<K>,
    },
}

/// An index: its function and the inverted map value -> slots.
pub(crate) struct Index<K> {
    func: IndexFunc<K>,
    values: HashMap<String, HashSet<SlotId>>,
}

/// The namespace the namespace index files `obj` under.
fn namespace_of<K: Resource>(obj: &K) -> &str {
    obj.meta().namespace.as_deref().unwrap_or("")
}

impl<K: Resource> Index<K> {
    /// Files a new object.
    pub(crate) fn insert(&mut self, id: SlotId, obj: &K) {
        match &self.func {
            IndexFunc::Namespace => add_value(&mut self.values, namespace_of(obj), id),
            IndexFunc::Custom { name, func } => {
                for v in call(name, func, obj) {
                    add_value(&mut self.values, &v, id);
                }
            }
        }
    }

    /// Moves an object from the values `old` is filed under to those of `new`,
    /// touching only the values that differ.
    pub(crate) fn update(&mut self, id: SlotId, old: &K, new: &K) {
        let IndexFunc::Custom { name, func } = &self.func else {
            return;
        };
        let (old_values, new_values) = (call(name, func, old), call(name, func, new));
        if old_values == new_values {
            return;
        }
        for v in old_values.iter().filter(|v| !new_values.contains(v)) {
            remove_value(&mut self.values, v, id);
        }
        for v in new_values.iter().filter(|v| !old_values.contains(v)) {
            add_value(&mut self.values, v, id);
        }
    }

    /// Unfiles a removed object.
    pub(crate) fn remove(&mut self, id: SlotId, obj: &K) {
        match &self.func {
            IndexFunc::Namespace => remove_value(&mut self.values, namespace_of(obj), id),
            IndexFunc::Custom { name, func } => {
                for v in call(name, func, obj) {
                    remove_value(&mut self.values, &v, id);
                }
            }
        }
    }
}

impl<K> Index<K> {
    pub(crate) fn namespace() -> Self {
        Self {
            func: IndexFunc::Namespace,
            values: HashMap::new(),
        }
    }

    pub(crate) fn custom(name: String, func: IndexFn<K>) -> Self {
        Self {
            func: IndexFunc::Custom { name, func },
            values: HashMap::new(),
        }
    }

    /// The slots filed under `value`.
    pub(crate) fn slots(&self, value: &str) -> impl Iterator<Item = SlotId> + '_ {
        self.values.get(value).into_iter().flatten().copied()
    }

    /// How many slots are filed under `value`.
    pub(crate) fn count(&self, value: &str) -> usize {
        self.values.get(value).map_or(0, HashSet::len)
    }

    /// Every value with at least one key filed under it.
    pub(crate) fn values(&self) -> impl Iterator<Item = &String> {
        self.values.keys()
    }
}

/// Runs a user index function. A panic files the object under no value:
/// that is still a pure function of the object, so the entries stay
/// consistent, and the store's lock is never poisoned by user code.
fn call<K>(name: &str, func: &IndexFn<K>, obj: &K) -> Vec<String> {
    catch_unwind(AssertUnwindSafe(|| func(obj))).unwrap_or_else(|_| {
        tracing::error!(
            index = name,
            "index function panicked; object filed under no value"
        );
        Vec::new()
    })
}

fn add_value(values: &mut HashMap<String, HashSet<SlotId>>, v: &str, id: SlotId) {
    // Look up by &str first so the common case (value already present)
    // allocates nothing.
    if let Some(set) = values.get_mut(v) {
        set.insert(id);
    } else {
        let mut set = HashSet::new();
        set.insert(id);
        values.insert(v.to_owned(), set);
    }
}

fn remove_value(values: &mut HashMap<String, HashSet<SlotId>>, v: &str, id: SlotId) {
    if let Some(set) = values.get_mut(v) {
        set.remove(&id);
        // Empty sets are dropped so `list_index_func_values` reports only
        // values something is filed under, and memory follows the contents.
        if set.is_empty() {
            values.remove(v);
        }
    }
}
