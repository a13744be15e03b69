//! Workqueue metrics exported to Prometheus through `prometheus-client`.
//!
//! The metric names, help texts and histogram buckets are those of
//! controller-runtime's `pkg/metrics/workqueue.go` (itself adapted from
//! client-go's component-base provider), so existing dashboards and alerts
//! work unchanged. Each series carries the queue's name in both the `name`
//! and the `controller` label, as controller-runtime does.
//!
//! As in controller-runtime since its priority queue, `workqueue_depth` has
//! a `priority` label: the priority of the items counted, or `""` for a
//! queue without priorities; past 25 distinct priorities a queue's further
//! ones count under `exceeded_cardinality_limit` (controller-runtime's
//! `depthWithPriorityMetric`). controller-runtime has no latency by
//! priority; `workqueue_queue_duration_by_priority_seconds` adds it, with
//! the buckets of `workqueue_queue_duration_seconds`.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use super::metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, PriorityGaugeMetric,
    PriorityHistogramMetric, SettableGaugeMetric,
};
use super::ready::{Priority, DEFAULT_PRIORITY, LOW_PRIORITY};

/// Distinct priorities a queue's series are labelled with before the rest
/// share one label (controller-runtime's `priorityCardinalityLimit`).
const PRIORITY_CARDINALITY_LIMIT: usize = 25;

/// The `priority` label past the limit.
const PRIORITY_CARDINALITY_EXCEEDED: &str = "exceeded_cardinality_limit";

/// The labels of the series by priority: the queue's name, twice, and the
/// priority (`""` for a queue without priorities).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PriorityLabels {
    /// The queue's name.
    pub name: String,
    /// The queue's name again.
    pub controller: String,
    /// The priority, in decimal.
    pub priority: String,
}

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
type PriorityHistogramFamily = Family<PriorityLabels, Histogram, fn() -> Histogram>;
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
    depth: Family<PriorityLabels, Gauge, fn() -> Gauge>,
    latency_by_priority: PriorityHistogramFamily,
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
            depth: Family::new_with_constructor(Gauge::default as fn() -> Gauge),
            latency_by_priority: Family::new_with_constructor(
                seconds_histogram as fn() -> Histogram,
            ),
            adds: Family::default(),
            latency: Family::new_with_constructor(seconds_histogram as fn() -> Histogram),
            work_duration: Family::new_with_constructor(seconds_histogram as fn() -> Histogram),
            unfinished_work: Family::default(),
            longest_running_processor: Family::default(),
            retries: Family::default(),
        }
    }

    /// Registers the eight workqueue metrics into `registry`:
    /// `workqueue_depth`, `workqueue_adds_total`,
    /// `workqueue_queue_duration_seconds`,
    /// `workqueue_queue_duration_by_priority_seconds`,
    /// `workqueue_work_duration_seconds`,
    /// `workqueue_unfinished_work_seconds`,
    /// `workqueue_longest_running_processor_seconds` and
    /// `workqueue_retries_total`.
    pub fn register(&self, registry: &mut Registry) {
        // prometheus-client appends `_total` to counters itself.
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
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
            "workqueue_queue_duration_by_priority_seconds",
            "How long in seconds an item stays in workqueue before being requested, by the \
             priority it is requested at",
            self.latency_by_priority.clone(),
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

/// One queue's series by priority, created on first use: labelled with the
/// priority while fewer than the limit have been seen, then with the
/// placeholder. The series of the two priorities a controller uses
/// ([`DEFAULT_PRIORITY`] and [`LOW_PRIORITY`]) are kept, once created with
/// their own label, where a lookup is one atomic load; the others are a
/// short list scanned under a mutex. So the hot path neither locks, hashes
/// labels nor allocates.
struct ByPriority<M> {
    name: String,
    family: Family<PriorityLabels, M, fn() -> M>,
    /// The series of [`COMMON_PRIORITIES`], in that order, once labelled
    /// with their own priority.
    common: [OnceLock<M>; 2],
    /// `None`: the series past the cardinality limit.
    series: Mutex<Vec<(Option<Priority>, M)>>,
}

/// The priorities whose series skip the mutex.
const COMMON_PRIORITIES: [Priority; 2] = [DEFAULT_PRIORITY, LOW_PRIORITY];

impl<M: Clone> ByPriority<M> {
    fn new(name: &str, family: Family<PriorityLabels, M, fn() -> M>) -> Self {
        Self {
            name: name.to_owned(),
            family,
            common: [OnceLock::new(), OnceLock::new()],
            series: Mutex::new(Vec::new()),
        }
    }

    fn with(&self, priority: Priority, f: impl FnOnce(&M)) {
        let common = COMMON_PRIORITIES.iter().position(|&p| p == priority);
        if let Some(m) = common.and_then(|at| self.common[at].get()) {
            f(m);
            return;
        }
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, m)) = series.iter().find(|(p, _)| *p == Some(priority)) {
            f(m);
            return;
        }
        let labelled = series.iter().filter(|(p, _)| p.is_some()).count();
        let key = (labelled < PRIORITY_CARDINALITY_LIMIT).then_some(priority);
        if let Some((_, m)) = series.iter().find(|(p, _)| *p == key) {
            f(m);
            return;
        }
        let metric = self.family.get_or_create_owned(&PriorityLabels {
            name: self.name.clone(),
            controller: self.name.clone(),
            priority: key.map_or_else(
                || PRIORITY_CARDINALITY_EXCEEDED.to_owned(),
                |p| p.to_string(),
            ),
        });
        f(&metric);
        if let (Some(at), Some(_)) = (common, key) {
            // Set under the mutex, once: its own label, never the placeholder.
            let _ = self.common[at].set(metric.clone());
        }
        series.push((key, metric));
    }
}

impl PriorityGaugeMetric for ByPriority<Gauge> {
    fn inc(&self, priority: Priority) {
        self.with(priority, |g| {
            g.inc();
        });
    }
    fn dec(&self, priority: Priority) {
        self.with(priority, |g| {
            g.dec();
        });
    }
}

impl PriorityHistogramMetric for ByPriority<Histogram> {
    fn observe(&self, priority: Priority, value: f64) {
        self.with(priority, |h| h.observe(value));
    }
}

impl MetricsProvider for PrometheusMetricsProvider {
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric> {
        Arc::new(DepthHandle(self.depth.get_or_create_owned(
            &PriorityLabels {
                name: name.to_owned(),
                controller: name.to_owned(),
                priority: String::new(),
            },
        )))
    }

    fn new_depth_with_priority_metric(&self, name: &str) -> Option<Arc<dyn PriorityGaugeMetric>> {
        let depth = ByPriority::new(name, self.depth.clone());
        // The default priority's series exists from the start, as a plain
        // queue's depth does.
        depth.with(DEFAULT_PRIORITY, |_| {});
        Some(Arc::new(depth))
    }

    fn new_latency_with_priority_metric(
        &self,
        name: &str,
    ) -> Option<Arc<dyn PriorityHistogramMetric>> {
        Some(Arc::new(ByPriority::new(
            name,
            self.latency_by_priority.clone(),
        )))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_family() -> Family<PriorityLabels, Gauge, fn() -> Gauge> {
        Family::new_with_constructor(Gauge::default as fn() -> Gauge)
    }

    fn depth_of(family: &Family<PriorityLabels, Gauge, fn() -> Gauge>, priority: &str) -> i64 {
        family
            .get_or_create(&PriorityLabels {
                name: "q".to_owned(),
                controller: "q".to_owned(),
                priority: priority.to_owned(),
            })
            .get()
    }

    #[test]
    fn the_common_priorities_keep_their_series_once_labelled() {
        let family = depth_family();
        let depth = ByPriority::new("q", family.clone());
        depth.inc(LOW_PRIORITY);
        depth.inc(DEFAULT_PRIORITY);
        depth.inc(LOW_PRIORITY);
        depth.dec(DEFAULT_PRIORITY);
        assert!(depth.common.iter().all(|m| m.get().is_some()));
        assert_eq!(depth_of(&family, "-100"), 2);
        assert_eq!(depth_of(&family, "0"), 0);
    }

    /// controller-runtime's `priorityCardinalityLimit` holds for the common
    /// priorities too: seen after 25 others, `LOW_PRIORITY` counts under
    /// the placeholder, every time, and keeps no series of its own.
    #[test]
    fn a_common_priority_past_the_limit_counts_under_the_placeholder() {
        let family = depth_family();
        let depth = ByPriority::new("q", family.clone());
        for priority in 1..=25 {
            depth.inc(priority);
        }
        depth.inc(LOW_PRIORITY);
        depth.inc(LOW_PRIORITY);
        depth.inc(26);
        assert!(depth.common[1].get().is_none());
        assert_eq!(depth_of(&family, PRIORITY_CARDINALITY_EXCEEDED), 3);
        assert_eq!(depth_of(&family, "25"), 1);
    }
}
