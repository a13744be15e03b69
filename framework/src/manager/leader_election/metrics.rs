//! Leader-election metrics under client-go's names
//! (`tools/leaderelection/metrics.go`, exported by controller-runtime's
//! `pkg/metrics/leaderelection.go`): `leader_election_master_status` (1
//! while this process leads, else 0) and `leader_election_slowpath_total`
//! (renewals that had to read the lease first because the optimistic
//! update failed).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The label of every leader-election series: the election's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ElectionLabels {
    /// The election's name (the lease's name unless configured).
    pub name: String,
}

/// Leader-election metric families. Cheap to clone; clones share series.
/// [`register`](Self::register) them in the registry served on `/metrics`
/// and pass them to [`LeaderElector::with_metrics`](super::LeaderElector::with_metrics).
#[derive(Clone, Debug, Default)]
pub struct LeaderElectionMetrics {
    master_status: Family<ElectionLabels, Gauge>,
    slowpath: Family<ElectionLabels, Counter>,
}

impl LeaderElectionMetrics {
    /// Empty families; register them to export them.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the families to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            self.master_status.clone(),
        );
        registry.register(
            "leader_election_slowpath",
            "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.",
            self.slowpath.clone(),
        );
    }

    pub(crate) fn set_leading(&self, name: &str, leading: bool) {
        self.master_status
            .get_or_create(&ElectionLabels {
                name: name.to_owned(),
            })
            .set(i64::from(leading));
    }

    pub(crate) fn slowpath_exercised(&self, name: &str) {
        self.slowpath
            .get_or_create(&ElectionLabels {
                name: name.to_owned(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_use_client_go_names() {
        let metrics = LeaderElectionMetrics::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        metrics.set_leading("op", true);
        metrics.slowpath_exercised("op");
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("leader_election_master_status{name=\"op\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("leader_election_slowpath_total{name=\"op\"} 1"),
            "{text}"
        );
    }
}
