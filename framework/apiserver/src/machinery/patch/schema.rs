//! What the patch engine needs to know about a kind's schema: how each list
//! merges (atomic, set, or map keyed by some fields), which objects are
//! atomic, which objects are open maps rather than structs, and the defaults
//! of list-map keys. Paths are field names from the object root with list
//! items skipped, e.g. `["spec", "template", "spec", "containers", "ports"]`.

use serde_json::Value;

/// How a list merges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListType {
    /// Replaced as a whole (`x-kubernetes-list-type: atomic`, or no
    /// information at all).
    Atomic,
    /// A set of scalars, merged by value (`listType=set`).
    Set,
    /// A list of objects merged by the given key fields (`listType=map`,
    /// `listMapKey=...`). For strategic merge patch the first key is the
    /// `patchMergeKey`.
    Map(Vec<String>),
}

/// Merge information about one kind.
pub trait MergeSchema: Send + Sync {
    /// How the list at `path` merges under server-side apply.
    fn list_type(&self, path: &[&str]) -> ListType;

    /// Whether the object at `path` is atomic (`mapType=atomic`,
    /// `structType=atomic`): owned and replaced as a whole. For list items
    /// the path is the list's.
    fn map_is_atomic(&self, _path: &[&str]) -> bool {
        false
    }

    /// How the list at `path` merges under a strategic merge patch (its
    /// `patchStrategy`/`patchMergeKey`). `Map(keys)` merges by `keys[0]`,
    /// `Set` merges scalars, `Atomic` replaces. Defaults to
    /// [`list_type`](Self::list_type).
    fn strategic_list_type(&self, path: &[&str]) -> ListType {
        self.list_type(path)
    }

    /// Whether the object at `path` is a map with arbitrary keys (Go map,
    /// OpenAPI `additionalProperties`) rather than a struct with named
    /// fields. An applier owns a map's entries themselves, but only the
    /// leaves of a struct.
    fn is_open_map(&self, _path: &[&str]) -> bool {
        false
    }

    /// The default of key field `key` of the list-map at `path`, used when
    /// an item omits it (e.g. `protocol: TCP` for container ports).
    fn list_key_default(&self, _path: &[&str], _key: &str) -> Option<Value> {
        None
    }
}

/// A schema that knows nothing: every list is atomic, every object a struct.
#[derive(Clone, Copy, Debug, Default)]
#[cfg(test)]
pub struct Untyped;

#[cfg(test)]
impl MergeSchema for Untyped {
    fn list_type(&self, _path: &[&str]) -> ListType {
        ListType::Atomic
    }
}
