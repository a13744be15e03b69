//! The history's compactor, as kube-apiserver's etcd compactor
//! (`k8s.io/apiserver/pkg/storage/etcd3/compact.go`, every
//! `--etcd-compaction-interval`, `DefaultCompactInterval` = 5 minutes in
//! `storagebackend/config.go`): at each tick it compacts to the
//! resourceVersion it saw at the tick before, so the history always
//! covers at least one interval.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::registry::state::Shared;

/// kube-apiserver's default interval.
pub(super) const DEFAULT_INTERVAL: Duration = Duration::from_secs(5 * 60);

pub(super) async fn run(shared: Arc<Shared>, interval: Duration, cancel: CancellationToken) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate: it records where the history starts.
    let mut previous: Option<u64> = None;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let mut store = shared.storage.lock();
        if let Some(rv) = previous {
            store.compact_to(rv);
        }
        previous = Some(store.rv());
    }
}
