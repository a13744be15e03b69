//! Finalizers: keep an object from disappearing until the controller has
//! cleaned up after it.
//!
//! [`CachedClient::finalizer`](super::CachedClient::finalizer) (or
//! `ctx.finalizer(...)` in a reconcile) is the whole flow in one call, as
//! kube-rs's `finalizer()` and controller-runtime's `finalizer.Finalizers`
//! offer it:
//!
//! | object                              | what happens                                   |
//! |-------------------------------------|------------------------------------------------|
//! | not deleting, finalizer missing     | add the finalizer, then [`Event::Apply`]       |
//! | not deleting, finalizer present     | [`Event::Apply`]                               |
//! | deleting, finalizer present         | [`Event::Cleanup`]; on success remove it       |
//! | deleting, finalizer missing         | nothing: the object is not ours to hold        |
//!
//! A finalizer is never added to an object being deleted (the API server
//! forbids it anyway), and it is removed only after cleanup succeeded, so
//! once an apply has started a cleanup always completes before the object
//! goes. Unlike kube-rs, the flow applies right after adding the finalizer
//! (with the object the server returned) instead of waiting for the next
//! watch event: a metadata-only change is filtered by `GenerationChanged`,
//! which would otherwise leave a new object unreconciled.
//!
//! The decision is a pure function ([`plan`]) and the writes are JSON
//! patches built by [`add_finalizer_patch`] and [`remove_finalizer_patch`];
//! the cached client (and, over a plain `Api`, the functions of
//! [`uncached`](super::uncached)) only send them.
//!
//! ## Optimistic concurrency
//!
//! Patches carry JSON-patch `test` operations instead of a whole-object
//! `resourceVersion` precondition, as kube-rs does, so a status write by the
//! same controller does not make a finalizer edit conflict:
//!
//! - adding to a non-empty list tests the list it read, then appends;
//! - adding the first finalizer tests `metadata.resourceVersion` (when the
//!   object has one), then creates the list — testing an absent list
//!   against `null` only works on servers using Go's json-patch, which
//!   treats a missing path as `null`;
//! - removing tests `metadata/finalizers/<i>` holds our name, then removes
//!   index `i`, so a concurrent edit by another finalizer fails instead of
//!   removing the wrong entry.
//!
//! A failed `test` is answered with 422 (apiserver `patch.go`);
//! [`Error::is_stale`](super::Error::is_stale) recognises it, and the next
//! reconcile, from the fresh object, succeeds.

use std::error::Error as StdError;
use std::future::Future;
use std::sync::Arc;

use json_patch::jsonptr::PointerBuf;
use json_patch::{
    AddOperation, Patch as JsonPatch, PatchOperation, RemoveOperation, TestOperation,
};
use kube_core::Resource;

use super::error::Error;
pub use super::error::FinalizerError;
use crate::cache::ObjectKey;

/// What the reconciler is asked to do.
#[derive(Debug)]
pub enum Event<K> {
    /// Make the world match the object. Must be idempotent.
    Apply(Arc<K>),
    /// The object is being deleted: remove what the controller created for
    /// it. Must be idempotent and must cope with an apply that never ran or
    /// never finished.
    Cleanup(Arc<K>),
}

/// How a finalizer flow ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// [`Event::Apply`] ran (after adding the finalizer if
    /// `finalizer_added`) and returned this.
    Applied {
        /// What the reconciler returned.
        value: T,
        /// Whether this call added the finalizer first.
        finalizer_added: bool,
    },
    /// [`Event::Cleanup`] ran, returned this, and the finalizer was removed.
    CleanedUp(T),
    /// The object is being deleted and does not carry our finalizer:
    /// nothing to do.
    Skipped,
}

impl<T> Outcome<T> {
    /// The reconciler's value, `None` when nothing ran.
    pub fn into_value(self) -> Option<T> {
        match self {
            Outcome::Applied { value, .. } | Outcome::CleanedUp(value) => Some(value),
            Outcome::Skipped => None,
        }
    }
}

/// The next step for an object, decided from its state alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Not deleting, no finalizer: add it, then apply.
    AddFinalizerThenApply,
    /// Not deleting, finalizer present: apply.
    Apply,
    /// Deleting with our finalizer at `index`: clean up, then remove it.
    CleanupThenRemove {
        /// Where our finalizer sits in `metadata.finalizers`.
        index: usize,
    },
    /// Deleting without our finalizer: nothing to do.
    Skip,
}

/// Decides the next step of the flow for `obj` and finalizer `name`.
pub fn plan<K: Resource>(obj: &K, name: &str) -> Step {
    let deleting = obj.meta().deletion_timestamp.is_some();
    match (finalizer_index(obj, name), deleting) {
        (None, false) => Step::AddFinalizerThenApply,
        (Some(_), false) => Step::Apply,
        (Some(index), true) => Step::CleanupThenRemove { index },
        (None, true) => Step::Skip,
    }
}

/// Whether `obj` carries finalizer `name`.
pub fn has_finalizer<K: Resource>(obj: &K, name: &str) -> bool {
    finalizer_index(obj, name).is_some()
}

fn finalizer_index<K: Resource>(obj: &K, name: &str) -> Option<usize> {
    obj.meta()
        .finalizers
        .as_deref()
        .unwrap_or(&[])
        .iter()
        .position(|f| f == name)
}

/// Adds `name` to the object in memory (controller-runtime's
/// `controllerutil.AddFinalizer`); returns whether it was missing. For
/// objects about to be created or replaced; to change a stored object use
/// [`CachedClient::add_finalizer`](super::CachedClient::add_finalizer).
pub fn ensure_finalizer<K: Resource>(obj: &mut K, name: &str) -> bool {
    if has_finalizer(obj, name) {
        return false;
    }
    obj.meta_mut()
        .finalizers
        .get_or_insert_with(Vec::new)
        .push(name.to_owned());
    true
}

/// Removes every `name` from the object in memory (controller-runtime's
/// `controllerutil.RemoveFinalizer`); returns whether one was there.
pub fn strip_finalizer<K: Resource>(obj: &mut K, name: &str) -> bool {
    let Some(list) = obj.meta_mut().finalizers.as_mut() else {
        return false;
    };
    let before = list.len();
    list.retain(|f| f != name);
    list.len() != before
}

fn pointer(tokens: &[&str]) -> PointerBuf {
    PointerBuf::from_tokens(tokens.iter().copied())
}

/// The JSON patch that adds finalizer `name` to the stored object `obj`
/// was read from, guarded by a `test` (see the module docs); `None` when
/// `obj` already has it.
pub fn add_finalizer_patch<K: Resource>(obj: &K, name: &str) -> Option<JsonPatch> {
    if has_finalizer(obj, name) {
        return None;
    }
    let meta = obj.meta();
    let current = meta.finalizers.as_deref().unwrap_or(&[]);
    let ops = if current.is_empty() {
        let guard = match meta.resource_version.as_deref() {
            Some(rv) if !rv.is_empty() => TestOperation {
                path: pointer(&["metadata", "resourceVersion"]),
                value: rv.into(),
            },
            _ => TestOperation {
                path: pointer(&["metadata", "finalizers"]),
                value: serde_json::Value::Null,
            },
        };
        vec![
            PatchOperation::Test(guard),
            PatchOperation::Add(AddOperation {
                path: pointer(&["metadata", "finalizers"]),
                value: serde_json::json!([name]),
            }),
        ]
    } else {
        vec![
            PatchOperation::Test(TestOperation {
                path: pointer(&["metadata", "finalizers"]),
                value: current.into(),
            }),
            PatchOperation::Add(AddOperation {
                path: pointer(&["metadata", "finalizers", "-"]),
                value: name.into(),
            }),
        ]
    };
    Some(JsonPatch(ops))
}

/// The JSON patch that removes finalizer `name` (its first occurrence) from
/// the stored object `obj` was read from, testing it is still at the same
/// index; `None` when `obj` does not have it.
pub fn remove_finalizer_patch<K: Resource>(obj: &K, name: &str) -> Option<JsonPatch> {
    let index = finalizer_index(obj, name)?.to_string();
    let path = pointer(&["metadata", "finalizers", &index]);
    Some(JsonPatch(vec![
        PatchOperation::Test(TestOperation {
            path: path.clone(),
            value: name.into(),
        }),
        PatchOperation::Remove(RemoveOperation { path }),
    ]))
}

/// The finalizer flow, with the finalizer edits left to the caller:
/// `add` and `remove` send the patch for the object they are handed (through
/// an [`Api`], or through the cached client so its reads see the edit) and
/// return the object the server answered with, `None` when nothing was sent.
pub(crate) async fn flow<K, F, Fut, T, E, A, AddFut, R, RemoveFut>(
    name: &str,
    obj: Arc<K>,
    reconcile: F,
    add: A,
    remove: R,
) -> Result<Outcome<T>, FinalizerError<E>>
where
    K: Resource,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: StdError + 'static,
    A: FnOnce(Arc<K>) -> AddFut,
    AddFut: Future<Output = Result<Option<K>, Error>>,
    R: FnOnce(Arc<K>) -> RemoveFut,
    RemoveFut: Future<Output = Result<Option<K>, Error>>,
{
    if obj.meta().name.as_deref().is_none_or(str::is_empty) {
        return Err(FinalizerError::Unnamed);
    }
    match plan(&*obj, name) {
        Step::Apply => reconcile(Event::Apply(obj))
            .await
            .map(|value| Outcome::Applied {
                value,
                finalizer_added: false,
            })
            .map_err(FinalizerError::Apply),
        Step::AddFinalizerThenApply => {
            let updated = match add(Arc::clone(&obj))
                .await
                .map_err(FinalizerError::AddFinalizer)?
            {
                Some(updated) => {
                    tracing::debug!(object = %ObjectKey::of(&updated), finalizer = name, "added finalizer");
                    Arc::new(updated)
                }
                // Unreachable by `plan`, but harmless: apply what we have.
                None => obj,
            };
            reconcile(Event::Apply(updated))
                .await
                .map(|value| Outcome::Applied {
                    value,
                    finalizer_added: true,
                })
                .map_err(FinalizerError::Apply)
        }
        Step::CleanupThenRemove { .. } => {
            // Cleanup must succeed before the finalizer may go.
            let value = reconcile(Event::Cleanup(Arc::clone(&obj)))
                .await
                .map_err(FinalizerError::Cleanup)?;
            let removed = remove(Arc::clone(&obj))
                .await
                .map_err(FinalizerError::RemoveFinalizer)?;
            if removed.is_some() {
                tracing::debug!(object = %ObjectKey::of(&*obj), finalizer = name, "removed finalizer after cleanup");
            }
            Ok(Outcome::CleanedUp(value))
        }
        Step::Skip => Ok(Outcome::Skipped),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    const NAME: &str = "example.com/cleanup";

    fn cm(finalizers: &[&str], deleting: bool, rv: Option<&str>) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                namespace: Some("ns".into()),
                resource_version: rv.map(Into::into),
                finalizers: (!finalizers.is_empty())
                    .then(|| finalizers.iter().map(|s| s.to_string()).collect()),
                deletion_timestamp: deleting.then_some(Time(jiff::Timestamp::UNIX_EPOCH)),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn json(obj: &ConfigMap) -> serde_json::Value {
        serde_json::to_value(obj).unwrap()
    }

    fn finalizers_of(v: &serde_json::Value) -> Vec<String> {
        serde_json::from_value(v["metadata"]["finalizers"].clone()).unwrap_or_default()
    }

    #[test]
    fn plan_covers_the_four_states() {
        assert_eq!(
            plan(&cm(&[], false, None), NAME),
            Step::AddFinalizerThenApply
        );
        assert_eq!(
            plan(&cm(&["other"], false, None), NAME),
            Step::AddFinalizerThenApply
        );
        assert_eq!(plan(&cm(&[NAME], false, None), NAME), Step::Apply);
        assert_eq!(
            plan(&cm(&["other", NAME], true, None), NAME),
            Step::CleanupThenRemove { index: 1 }
        );
        // Being deleted without our finalizer: never add one.
        assert_eq!(plan(&cm(&["other"], true, None), NAME), Step::Skip);
        assert_eq!(plan(&cm(&[], true, None), NAME), Step::Skip);
    }

    #[test]
    fn first_finalizer_patch_is_guarded_by_the_resource_version() {
        let obj = cm(&[], false, Some("7"));
        let patch = add_finalizer_patch(&obj, NAME).unwrap();
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            serde_json::json!([
                {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                {"op": "add", "path": "/metadata/finalizers", "value": [NAME]},
            ])
        );
        let mut doc = json(&obj);
        json_patch::patch(&mut doc, &patch).unwrap();
        assert_eq!(finalizers_of(&doc), [NAME]);

        // The same patch against a newer version fails its test.
        let mut newer = json(&cm(&[], false, Some("8")));
        assert!(json_patch::patch(&mut newer, &patch).is_err());
    }

    #[test]
    fn first_finalizer_without_resource_version_tests_for_null() {
        let patch = add_finalizer_patch(&cm(&[], false, None), NAME).unwrap();
        assert_eq!(
            serde_json::to_value(&patch).unwrap()[0],
            serde_json::json!({"op": "test", "path": "/metadata/finalizers", "value": null})
        );
    }

    #[test]
    fn appending_tests_the_list_it_read() {
        let obj = cm(&["other"], false, Some("7"));
        let patch = add_finalizer_patch(&obj, NAME).unwrap();
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            serde_json::json!([
                {"op": "test", "path": "/metadata/finalizers", "value": ["other"]},
                {"op": "add", "path": "/metadata/finalizers/-", "value": NAME},
            ])
        );
        let mut doc = json(&obj);
        json_patch::patch(&mut doc, &patch).unwrap();
        assert_eq!(finalizers_of(&doc), ["other", NAME]);

        // A status write in between (new resourceVersion) does not matter...
        let mut status_written = json(&cm(&["other"], false, Some("9")));
        json_patch::patch(&mut status_written, &patch).unwrap();
        assert_eq!(finalizers_of(&status_written), ["other", NAME]);
        // ...but a concurrent finalizer edit does.
        let mut edited = json(&cm(&["other", "third"], false, Some("9")));
        assert!(json_patch::patch(&mut edited, &patch).is_err());
        assert_eq!(finalizers_of(&edited), ["other", "third"]);
    }

    #[test]
    fn no_patch_when_already_present() {
        assert!(add_finalizer_patch(&cm(&[NAME], false, None), NAME).is_none());
        assert!(remove_finalizer_patch(&cm(&["other"], true, None), NAME).is_none());
    }

    #[test]
    fn removal_tests_the_index_it_removes() {
        let obj = cm(&["a", NAME, "b"], true, Some("3"));
        let patch = remove_finalizer_patch(&obj, NAME).unwrap();
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            serde_json::json!([
                {"op": "test", "path": "/metadata/finalizers/1", "value": NAME},
                {"op": "remove", "path": "/metadata/finalizers/1"},
            ])
        );
        let mut doc = json(&obj);
        json_patch::patch(&mut doc, &patch).unwrap();
        assert_eq!(finalizers_of(&doc), ["a", "b"]);

        // If "a" was removed meanwhile, index 1 is now "b": refuse.
        let mut shifted = json(&cm(&[NAME, "b"], true, Some("4")));
        assert!(json_patch::patch(&mut shifted, &patch).is_err());
        assert_eq!(finalizers_of(&shifted), [NAME, "b"]);
    }

    #[test]
    fn finalizer_names_with_slashes_and_tildes_are_values_not_paths() {
        let name = "x.io/a~b";
        let obj = cm(&["other"], true, None);
        let mut obj2 = obj.clone();
        ensure_finalizer(&mut obj2, name);
        let patch = remove_finalizer_patch(&obj2, name).unwrap();
        let mut doc = json(&obj2);
        json_patch::patch(&mut doc, &patch).unwrap();
        assert_eq!(finalizers_of(&doc), ["other"]);
    }

    #[test]
    fn in_memory_helpers_match_controllerutil() {
        let mut obj = cm(&[], false, None);
        assert!(ensure_finalizer(&mut obj, NAME));
        assert!(!ensure_finalizer(&mut obj, NAME));
        assert!(has_finalizer(&obj, NAME));
        obj.metadata.finalizers.as_mut().unwrap().push(NAME.into());
        // RemoveFinalizer drops every occurrence.
        assert!(strip_finalizer(&mut obj, NAME));
        assert!(!strip_finalizer(&mut obj, NAME));
        assert!(!has_finalizer(&obj, NAME));
        assert!(!strip_finalizer(&mut cm(&[], false, None), NAME));
    }

    #[test]
    fn outcome_values() {
        assert_eq!(
            Outcome::Applied {
                value: 1,
                finalizer_added: true
            }
            .into_value(),
            Some(1)
        );
        assert_eq!(Outcome::CleanedUp(2).into_value(), Some(2));
        assert_eq!(Outcome::<i32>::Skipped.into_value(), None);
    }
}
