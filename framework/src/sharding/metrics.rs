//! [`ShardMetrics`]: one sharded controller's series — the slots this
//! replica holds, the members it sees, the objects in its cache, and the
//! slots it took and gave up — exported beside the controller's own by
//! [`ControllerMetrics`](crate::controller::ControllerMetrics) as
//! `kubeforge_shard_*`.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

/// One sharded controller's series. The default's are detached: nobody
/// exports them.
#[derive(Clone, Debug, Default)]
pub struct ShardMetrics {
    /// `kubeforge_shard_slots`: the slots this replica admits.
    pub slots: Gauge,
    /// `kubeforge_shard_members`: the live members this replica sees.
    pub members: Gauge,
    /// `kubeforge_shard_objects`: the objects in its primary cache.
    pub objects: Gauge,
    /// `kubeforge_shard_slots_taken_total`: slots written in as its own.
    pub taken: Counter,
    /// `kubeforge_shard_slots_given_up_total`: slots written free.
    pub given_up: Counter,
}
