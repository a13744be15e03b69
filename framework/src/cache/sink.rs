//! What a reflector feeds: [`Delta`]s from watch events, whole lists through
//! `replace`, and resourceVersions from bookmarks, through the
//! [`DeltaSink`] trait that both a bare [`StoreWriter`](super::StoreWriter)
//! and an informer's [`InformerWriter`](super::InformerWriter) implement.

use std::sync::Arc;

use super::{ObjectKey, ReflectorStatus, StoreWriter};

/// One change seen on a watch, already transformed and wrapped in an `Arc`.
///
/// `Added` and `Updated` are treated alike (an add of a key the store holds
/// is an update, and the other way round), as client-go's `processDeltas`
/// does, so a watch that resumes mid-stream converges either way.
#[derive(Debug)]
pub enum Delta<K> {
    /// A watch `ADDED` event.
    Added(Arc<K>),
    /// A watch `MODIFIED` event.
    Updated(Arc<K>),
    /// A watch `DELETED` event, carrying the object's final state.
    Deleted(Arc<K>),
}

impl<K> Delta<K> {
    /// The object the change carries.
    pub fn object(&self) -> &Arc<K> {
        match self {
            Delta::Added(o) | Delta::Updated(o) | Delta::Deleted(o) => o,
        }
    }
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        match self {
            Delta::Added(o) => Delta::Added(Arc::clone(o)),
            Delta::Updated(o) => Delta::Updated(Arc::clone(o)),
            Delta::Deleted(o) => Delta::Deleted(Arc::clone(o)),
        }
    }
}

/// What applying one change did to a store.
#[derive(Debug)]
pub enum Applied<K> {
    /// The key was new; the object was stored.
    Added(Arc<K>),
    /// The key was present with another resourceVersion; `new` replaced `old`.
    Updated {
        /// The object the store held before.
        old: Arc<K>,
        /// The object the store holds now.
        new: Arc<K>,
    },
    /// The key was present, held by another object (a different uid): the
    /// one held was deleted and a new one created under the same name while
    /// nobody was watching. `new` replaced `old`; handlers see a delete of
    /// `old` then an add of `new`, so every deletion is delivered.
    Recreated {
        /// The object the store held before (now gone from the server).
        old: Arc<K>,
        /// The object the store holds now.
        new: Arc<K>,
    },
    /// The key was present with the same (non-empty) resourceVersion, so the
    /// store kept the object it had: the server says it is the same object,
    /// and keeping the old `Arc` keeps it shared with everyone already
    /// holding it. Handlers are not told (client-go delivers such updates to
    /// resyncing handlers only).
    Unchanged(Arc<K>),
    /// The key was removed; this is the state the store held.
    Deleted(Arc<K>),
    /// A delete of a key the store does not hold: nothing changed.
    Absent,
}

/// The result of [`DeltaSink::replace`] on a store.
#[derive(Debug)]
pub struct Replaced<K> {
    /// Keys the store held that the new list lacks, with the last state the
    /// store held, sorted by key. They were removed from the store.
    pub vanished: Vec<(ObjectKey, Arc<K>)>,
    /// One entry per listed item, in list order: `Added`, `Updated`,
    /// `Recreated` or `Unchanged`.
    pub applied: Vec<Applied<K>>,
}

/// The writer side of a cache, as a reflector drives it. Calls are
/// synchronous and take only short locks (a `replace` of a large list holds
/// the store's write lock for the whole swap, so readers see the old list or
/// the new one, never a mix); none of them blocks on a handler.
pub trait DeltaSink<K>: Send + 'static {
    /// Applies one watch event.
    fn apply(&mut self, delta: Delta<K>);

    /// Makes the contents exactly `items` (a complete list at
    /// `resource_version`): listed items are added or updated and keys not
    /// listed are removed as deleted-final-state-unknown.
    fn replace(&mut self, items: Vec<Arc<K>>, resource_version: String);

    /// Records progress without a change (a watch bookmark).
    fn bookmark(&mut self, resource_version: String);

    /// The resourceVersion of the last list, event or bookmark applied.
    fn last_sync_resource_version(&self) -> Option<String>;

    /// The reflector reports how its lists and watches go (a failure, or
    /// recovery). Ignored unless the sink keeps it, as an informer does.
    fn report_status(&mut self, status: ReflectorStatus) {
        let _ = status;
    }
}

impl<K> DeltaSink<K> for StoreWriter<K>
where
    K: kube_core::Resource + Send + Sync + 'static,
{
    fn apply(&mut self, delta: Delta<K>) {
        StoreWriter::apply(self, delta);
    }

    fn replace(&mut self, items: Vec<Arc<K>>, resource_version: String) {
        StoreWriter::replace(self, items, resource_version);
    }

    fn bookmark(&mut self, resource_version: String) {
        self.set_resource_version(resource_version);
    }

    fn last_sync_resource_version(&self) -> Option<String> {
        self.store().last_sync_resource_version()
    }
}
