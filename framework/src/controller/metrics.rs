//! Reconcile metrics under controller-runtime's names
//! (`pkg/internal/controller/metrics`), plus the workqueue metrics of the
//! controllers' queues, so existing dashboards and alerts work unchanged:
//!
//! - `controller_runtime_reconcile_total{controller,result}` with `result`
//!   one of `success`, `error`, `requeue`, `requeue_after`;
//! - `controller_runtime_reconcile_errors_total{controller}`,
//!   `controller_runtime_terminal_reconcile_errors_total{controller}`,
//!   `controller_runtime_reconcile_panics_total{controller}`;
//! - `controller_runtime_reconcile_time_seconds{controller}` (histogram);
//! - `controller_runtime_max_concurrent_reconciles{controller}` and
//!   `controller_runtime_active_workers{controller}` (gauges);
//! - `workqueue_*{name,controller}` from [`PrometheusMetricsProvider`].

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::sharding::ShardMetrics;
use crate::workqueue::{MetricsProvider, PrometheusMetricsProvider};

/// controller-runtime's `ReconcileTime` buckets, in seconds.
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// The label of per-controller series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The controller's name.
    pub controller: String,
}

/// The labels of `controller_runtime_reconcile_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// The controller's name.
    pub controller: String,
    /// `success`, `error`, `requeue` or `requeue_after`.
    pub result: String,
}

type HistogramFamily = Family<ControllerLabels, Histogram, fn() -> Histogram>;

fn reconcile_time_histogram() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS)
}

/// The reconcile and workqueue metric families of every controller in a
/// process. Create one, [`register`](Self::register) it into the registry
/// `/metrics` serves, and hand clones to the controllers (the manager does
/// all of this). Cheap to clone; clones share the series.
#[derive(Clone, Debug)]
pub struct ControllerMetrics {
    total: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    terminal_errors: Family<ControllerLabels, Counter>,
    panics: Family<ControllerLabels, Counter>,
    time: HistogramFamily,
    max_concurrent: Family<ControllerLabels, Gauge>,
    active_workers: Family<ControllerLabels, Gauge>,
    shard_slots: Family<ControllerLabels, Gauge>,
    shard_members: Family<ControllerLabels, Gauge>,
    shard_objects: Family<ControllerLabels, Gauge>,
    shard_taken: Family<ControllerLabels, Counter>,
    shard_given_up: Family<ControllerLabels, Counter>,
    workqueue: PrometheusMetricsProvider,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ControllerMetrics {
    /// Empty families; register them to export them.
    pub fn new() -> Self {
        Self {
            total: Family::default(),
            errors: Family::default(),
            terminal_errors: Family::default(),
            panics: Family::default(),
            time: Family::new_with_constructor(reconcile_time_histogram as fn() -> Histogram),
            max_concurrent: Family::default(),
            active_workers: Family::default(),
            shard_slots: Family::default(),
            shard_members: Family::default(),
            shard_objects: Family::default(),
            shard_taken: Family::default(),
            shard_given_up: Family::default(),
            workqueue: PrometheusMetricsProvider::new(),
        }
    }

    /// Registers the reconcile metrics and the workqueue metrics into
    /// `registry`. Register once per registry.
    pub fn register(&self, registry: &mut Registry) {
        // prometheus-client appends `_total` to counters itself.
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            self.total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            self.errors.clone(),
        );
        registry.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            self.terminal_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            self.panics.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            self.time.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            self.max_concurrent.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            self.active_workers.clone(),
        );
        registry.register(
            "kubeforge_shard_slots",
            "Slots of the uid hash a sharded controller's replica reconciles",
            self.shard_slots.clone(),
        );
        registry.register(
            "kubeforge_shard_members",
            "Live replicas a sharded controller's replica sees in its ring",
            self.shard_members.clone(),
        );
        registry.register(
            "kubeforge_shard_objects",
            "Objects in a sharded controller's primary cache",
            self.shard_objects.clone(),
        );
        registry.register(
            "kubeforge_shard_slots_taken",
            "Slots a sharded controller's replica took over",
            self.shard_taken.clone(),
        );
        registry.register(
            "kubeforge_shard_slots_given_up",
            "Slots a sharded controller's replica handed over",
            self.shard_given_up.clone(),
        );
        self.workqueue.register(registry);
    }

    /// The sharding series of the controller named `name`.
    pub(crate) fn for_shard(&self, name: &str) -> ShardMetrics {
        let labels = ControllerLabels {
            controller: name.to_owned(),
        };
        ShardMetrics {
            slots: self.shard_slots.get_or_create_owned(&labels),
            members: self.shard_members.get_or_create_owned(&labels),
            objects: self.shard_objects.get_or_create_owned(&labels),
            taken: self.shard_taken.get_or_create_owned(&labels),
            given_up: self.shard_given_up.get_or_create_owned(&labels),
        }
    }

    /// The provider the controllers' workqueues report through.
    pub fn workqueue_provider(&self) -> Arc<dyn MetricsProvider> {
        Arc::new(self.workqueue.clone())
    }

    /// The handles of one controller's series, created at zero as
    /// controller-runtime's `initMetrics` does.
    pub(crate) fn for_controller(&self, name: &str, concurrency: usize) -> Handles {
        let labels = ControllerLabels {
            controller: name.to_owned(),
        };
        let result = |result: &str| {
            self.total.get_or_create_owned(&ResultLabels {
                controller: name.to_owned(),
                result: result.to_owned(),
            })
        };
        let handles = Handles {
            success: result("success"),
            error: result("error"),
            requeue: result("requeue"),
            requeue_after: result("requeue_after"),
            errors: self.errors.get_or_create_owned(&labels),
            terminal_errors: self.terminal_errors.get_or_create_owned(&labels),
            panics: self.panics.get_or_create_owned(&labels),
            time: self.time.get_or_create_owned(&labels),
            active_workers: self.active_workers.get_or_create_owned(&labels),
        };
        self.max_concurrent
            .get_or_create_owned(&labels)
            .set(i64::try_from(concurrency).unwrap_or(i64::MAX));
        handles.active_workers.set(0);
        handles
    }
}

/// One controller's series. Without metrics configured, the handles are
/// detached series nobody exports.
#[derive(Clone, Debug)]
pub(crate) struct Handles {
    pub(crate) success: Counter,
    pub(crate) error: Counter,
    pub(crate) requeue: Counter,
    pub(crate) requeue_after: Counter,
    pub(crate) errors: Counter,
    pub(crate) terminal_errors: Counter,
    pub(crate) panics: Counter,
    pub(crate) time: Histogram,
    pub(crate) active_workers: Gauge,
}

impl Handles {
    /// The counter for a `result` label value.
    pub(crate) fn result(&self, label: &str) -> &Counter {
        match label {
            "error" => &self.error,
            "requeue" => &self.requeue,
            "requeue_after" => &self.requeue_after,
            _ => &self.success,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    #[test]
    fn series_use_controller_runtime_names_and_start_at_zero() {
        let metrics = ControllerMetrics::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let handles = metrics.for_controller("memcached", 4);
        handles.result("requeue_after").inc();
        handles.time.observe(0.02);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        for line in [
            r#"controller_runtime_reconcile_total{controller="memcached",result="success"} 0"#,
            r#"controller_runtime_reconcile_total{controller="memcached",result="requeue_after"} 1"#,
            r#"controller_runtime_reconcile_errors_total{controller="memcached"} 0"#,
            r#"controller_runtime_terminal_reconcile_errors_total{controller="memcached"} 0"#,
            r#"controller_runtime_reconcile_panics_total{controller="memcached"} 0"#,
            r#"controller_runtime_max_concurrent_reconciles{controller="memcached"} 4"#,
            r#"controller_runtime_active_workers{controller="memcached"} 0"#,
            r#"controller_runtime_reconcile_time_seconds_bucket{le="0.025",controller="memcached"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }
}
