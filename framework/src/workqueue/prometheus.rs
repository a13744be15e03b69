//! Workqueue metrics exported to Prometheus through `prometheus-client`.
//!
//! The metric names, help texts and histogram buckets are those of
//! controller-runtime's `pkg/metrics/workqueue.go` (itself adapted from
//! client-go's component-base provider), so existing dashboards and alerts
//! work unchanged. Each series carries the queue's name in both the `name`
//! and the `controller` label, as controller-runtime does.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use super::metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric,
};

/// The labels of every workqueue series: the queue's name, twice.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    /// The queue's name.
    pub name: String,
    /// The queue's name again: controller-runtime labels its controller
    /// queues this way.
    pub controller: String,
}

impl QueueLabels {
    fn of(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            controller: name.to_owned(),
        }
    }
}

type HistogramFamily = Family<QueueLabels, Histogram, fn() -> Histogram>;
type SecondsGauge = Gauge<f64, AtomicU64>;

/// 10 ns to 1000 s in decades: `ExponentialBuckets(10e-9, 10, 12)`.
fn seconds_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 12))
}

/// A [`MetricsProvider`] backed by `prometheus-client` families.
///
/// Create one per process, [`register`](Self::register) it into the
/// registry served on `/metrics`, and hand it to every queue
/// (`WorkQueue::builder().metrics(provider.clone())`). Cloning is cheap and
/// clones share the same series.
#[derive(Clone, Debug)]
pub struct PrometheusMetricsProvider {
    depth: Family<QueueLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    latency: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished_work: Family<QueueLabels, SecondsGauge>,
    longest_running_processor: Family<QueueLabels, SecondsGauge>,
    retries: Family<QueueLabels, Counter>,
}

impl Default for PrometheusMetricsProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl PrometheusMetricsProvider {
    /// A provider with empty families; register it to export them.
    pub fn new() -> Self {
        Self {
            depth: Family::default(),
            adds: Family::default(),
            latency: Family::new_with_constructor(seconds_histogram as fn() -> Histogram),
            work_duration: Family::new_with_constructor(seconds_histogram as fn() -> Histogram),
            unfinished_work: Family::default(),
            longest_running_processor: Family::default(),
            retries: Family::default(),
        }
    }

    /// Registers the seven workqueue metrics into `registry`:
    /// `workqueue_depth`, `workqueue_adds_total`,
    /// `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`,
    /// `workqueue_unfinished_work_seconds`,
    /// `workqueue_longest_running_processor_seconds` and
    /// `workqueue_retries_total`.
    pub fn register(&self, registry: &mut Registry) {
        // prometheus-client appends `_total` to counters itself.
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            self.depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            self.adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            self.latency.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            self.work_duration.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been \
             observed by work_duration. Large values indicate stuck threads. One can deduce \
             the number of stuck threads by observing the rate at which this increases",
            self.unfinished_work.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            self.longest_running_processor.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            self.retries.clone(),
        );
    }
}

struct DepthHandle(Gauge);

impl GaugeMetric for DepthHandle {
    fn inc(&self) {
        self.0.inc();
    }
    fn dec(&self) {
        self.0.dec();
    }
}

struct CounterHandle(Counter);

impl CounterMetric for CounterHandle {
    fn inc(&self) {
        self.0.inc();
    }
}

struct HistogramHandle(Histogram);

impl HistogramMetric for HistogramHandle {
    fn observe(&self, value: f64) {
        self.0.observe(value);
    }
}

struct SecondsHandle(SecondsGauge);

impl SettableGaugeMetric for SecondsHandle {
    fn set(&self, value: f64) {
        self.0.set(value);
    }
}

impl MetricsProvider for PrometheusMetricsProvider {
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric> {
        Arc::new(DepthHandle(
            self.depth.get_or_create_owned(&QueueLabels::of(name)),
        ))
    }

    fn new_adds_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(CounterHandle(
            self.adds.get_or_create_owned(&QueueLabels::of(name)),
        ))
    }

    fn new_latency_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(HistogramHandle(
            self.latency.get_or_create_owned(&QueueLabels::of(name)),
        ))
    }

    fn new_work_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(HistogramHandle(
            self.work_duration
                .get_or_create_owned(&QueueLabels::of(name)),
        ))
    }

    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(SecondsHandle(
            self.unfinished_work
                .get_or_create_owned(&QueueLabels::of(name)),
        ))
    }

    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(SecondsHandle(
            self.longest_running_processor
                .get_or_create_owned(&QueueLabels::of(name)),
        ))
    }

    fn new_retries_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(CounterHandle(
            self.retries.get_or_create_owned(&QueueLabels::of(name)),
        ))
    }
}
