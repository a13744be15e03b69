//! The [`Faults`] handle: close every open watch, fail the next N requests
//! matching a verb and resource with a chosen status, add latency, compact
//! the watch history, and count open watches per resource so tests can
//! assert that informers share connections.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::machinery::faults::{Failure, RequestMatch};
use crate::registry::state::Shared;

/// A handle for injecting faults into a running server. Cheap to clone.
#[derive(Clone)]
pub struct Faults {
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults").finish_non_exhaustive()
    }
}

impl Faults {
    /// Ends every open watch now; clients see a clean end of stream.
    pub fn close_watches(&self) {
        self.shared.storage.lock().close_watches();
        self.shared.close_watches.send_modify(|g| *g += 1);
    }

    /// Answers the next `n` requests matching `matcher` with `failure`.
    pub fn fail_next(&self, n: usize, matcher: RequestMatch, failure: Failure) {
        self.shared.faults.add(n, matcher, failure);
    }

    /// Delays every request by `latency` (`None` to stop).
    pub fn set_latency(&self, latency: Option<Duration>) {
        self.shared.faults.set_latency(latency);
    }

    /// Drops the watch history: every older resourceVersion is now expired
    /// (410 on list and watch), like an etcd compaction.
    pub fn compact(&self) {
        self.shared.storage.lock().compact();
    }

    /// Removes all pending failures and the latency.
    pub fn clear(&self) {
        self.shared.faults.clear();
    }

    /// Open watches per resource, keyed `group/plural` (`/configmaps` for
    /// the core group).
    pub fn open_watches(&self) -> BTreeMap<String, usize> {
        self.shared.storage.lock().open_watches()
    }

    /// Open watches on one resource (`group` empty for the core group).
    pub fn open_watches_for(&self, group: &str, plural: &str) -> usize {
        self.open_watches()
            .get(&format!("{group}/{plural}"))
            .copied()
            .unwrap_or(0)
    }
}
