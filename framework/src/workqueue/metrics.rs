//! Queue metrics: the hook a queue reports through, and the bookkeeping
//! behind it.
//!
//! Mirrors client-go's `util/workqueue/metrics.go`: a [`MetricsProvider`]
//! hands a named queue its metric handles (depth, adds, queue latency, work
//! duration, unfinished work, longest running processor, retries) and the
//! queue feeds them. A priority queue also reports its depth and queue
//! latency by priority when the provider offers those (controller-runtime's
//! `MetricsProviderWithPriority`, `pkg/internal/metrics/workqueue.go`).
//! Every provider method defaults to a no-op handle, so a
//! provider implements only what it exports. The Prometheus implementation
//! lives in [`super::prometheus`].

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::ready::Priority;

/// A value that goes up and down by one (the queue depth).
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
}

/// A value that is set outright (unfinished work, longest running processor).
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the value.
    fn set(&self, value: f64);
}

/// A value that only goes up (adds, retries).
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A distribution of observations, in seconds (queue latency, work duration).
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, value: f64);
}

/// A gauge per priority (the depth by priority; controller-runtime's
/// `DepthMetricWithPriority`).
pub trait PriorityGaugeMetric: Send + Sync {
    /// Adds one to `priority`'s value.
    fn inc(&self, priority: Priority);
    /// Subtracts one from `priority`'s value.
    fn dec(&self, priority: Priority);
}

/// A histogram per priority, in seconds (the queue latency by priority).
pub trait PriorityHistogramMetric: Send + Sync {
    /// Records one observation for `priority`.
    fn observe(&self, priority: Priority, value: f64);
}

/// A metric that records nothing: the default for every provider method.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopMetric;

impl GaugeMetric for NoopMetric {
    fn inc(&self) {}
    fn dec(&self) {}
}

impl SettableGaugeMetric for NoopMetric {
    fn set(&self, _value: f64) {}
}

impl CounterMetric for NoopMetric {
    fn inc(&self) {}
}

impl HistogramMetric for NoopMetric {
    fn observe(&self, _value: f64) {}
}

/// Creates the metrics of a named queue (client-go's `MetricsProvider`).
///
/// A queue calls each method once, at construction, with its name. Queues
/// without a name report no metrics, as in client-go.
pub trait MetricsProvider: Send + Sync {
    /// Current depth: items waiting to be handed out.
    fn new_depth_metric(&self, _name: &str) -> Arc<dyn GaugeMetric> {
        Arc::new(NoopMetric)
    }
    /// Total number of adds handled.
    fn new_adds_metric(&self, _name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(NoopMetric)
    }
    /// Seconds an item waits in the queue before it is handed out.
    fn new_latency_metric(&self, _name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(NoopMetric)
    }
    /// Seconds between handing an item out and its `done`.
    fn new_work_duration_metric(&self, _name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(NoopMetric)
    }
    /// Seconds of work in progress not yet observed by the work duration.
    fn new_unfinished_work_seconds_metric(&self, _name: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(NoopMetric)
    }
    /// Seconds the longest-running item in progress has been running.
    fn new_longest_running_processor_seconds_metric(
        &self,
        _name: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(NoopMetric)
    }
    /// Total number of delayed and rate-limited adds (retries).
    fn new_retries_metric(&self, _name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(NoopMetric)
    }
    /// Current depth by priority, for a queue with priorities on. `None`
    /// (the default): such a queue reports its depth through
    /// [`new_depth_metric`](Self::new_depth_metric) instead.
    fn new_depth_with_priority_metric(&self, _name: &str) -> Option<Arc<dyn PriorityGaugeMetric>> {
        None
    }
    /// Seconds an item waits before it is handed out, by the priority it is
    /// handed out at, for a queue with priorities on; observed besides
    /// [`new_latency_metric`](Self::new_latency_metric)'s. `None` (the
    /// default): not reported.
    fn new_latency_with_priority_metric(
        &self,
        _name: &str,
    ) -> Option<Arc<dyn PriorityHistogramMetric>> {
        None
    }
}

/// A provider whose metrics record nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopMetricsProvider;

impl MetricsProvider for NoopMetricsProvider {}

/// How often in-progress work is re-measured (client-go's
/// `defaultUnfinishedWorkUpdatePeriod`).
pub(crate) const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// A queue's metric handles. The timestamps they need (when each item was
/// added and when its processing started) live beside the item in the
/// queue's state, so each item is hashed once per operation; this is only
/// touched under the queue's lock.
pub(crate) struct QueueMetrics {
    depth: Depth,
    latency_by_priority: Option<Arc<dyn PriorityHistogramMetric>>,
    adds: Arc<dyn CounterMetric>,
    latency: Arc<dyn HistogramMetric>,
    work_duration: Arc<dyn HistogramMetric>,
    unfinished_work_seconds: Arc<dyn SettableGaugeMetric>,
    longest_running_processor: Arc<dyn SettableGaugeMetric>,
}

/// The depth gauge: one series, or one per priority.
enum Depth {
    Plain(Arc<dyn GaugeMetric>),
    ByPriority(Arc<dyn PriorityGaugeMetric>),
}

impl QueueMetrics {
    /// The handles of queue `name`; by priority if `prioritized` and the
    /// provider offers them.
    pub(crate) fn new(provider: &dyn MetricsProvider, name: &str, prioritized: bool) -> Self {
        let by_priority = prioritized
            .then(|| provider.new_depth_with_priority_metric(name))
            .flatten();
        Self {
            depth: match by_priority {
                Some(gauge) => Depth::ByPriority(gauge),
                None => Depth::Plain(provider.new_depth_metric(name)),
            },
            latency_by_priority: prioritized
                .then(|| provider.new_latency_with_priority_metric(name))
                .flatten(),
            adds: provider.new_adds_metric(name),
            latency: provider.new_latency_metric(name),
            work_duration: provider.new_work_duration_metric(name),
            unfinished_work_seconds: provider.new_unfinished_work_seconds_metric(name),
            longest_running_processor: provider.new_longest_running_processor_seconds_metric(name),
        }
    }

    /// An add that was not a duplicate, at `priority`.
    pub(crate) fn added(&self, priority: Priority) {
        self.adds.inc();
        match &self.depth {
            Depth::Plain(g) => g.inc(),
            Depth::ByPriority(g) => g.inc(priority),
        }
    }

    /// A queued item raised from one priority to another.
    pub(crate) fn raised(&self, from: Priority, to: Priority) {
        if let Depth::ByPriority(g) = &self.depth {
            g.dec(from);
            g.inc(to);
        }
    }

    /// An item handed out at `now` and `priority`, queued since `added`.
    pub(crate) fn taken(&self, priority: Priority, added: Option<Instant>, now: Instant) {
        match &self.depth {
            Depth::Plain(g) => g.dec(),
            Depth::ByPriority(g) => g.dec(priority),
        }
        if let Some(added) = added {
            let waited = now.saturating_duration_since(added).as_secs_f64();
            self.latency.observe(waited);
            if let Some(by_priority) = &self.latency_by_priority {
                by_priority.observe(priority, waited);
            }
        }
    }

    /// An item done at `now`, processed since `started`.
    pub(crate) fn done(&self, started: Option<Instant>, now: Instant) {
        if let Some(started) = started {
            self.work_duration
                .observe(now.saturating_duration_since(started).as_secs_f64());
        }
    }

    /// Re-measures the work in progress from when each item in flight
    /// started.
    pub(crate) fn update_unfinished_work(
        &self,
        started: impl Iterator<Item = Instant>,
        now: Instant,
    ) {
        let (total, oldest) = started
            .map(|started| now.saturating_duration_since(started).as_secs_f64())
            .fold((0.0, 0.0), |(total, oldest): (f64, f64), age| {
                (total + age, oldest.max(age))
            });
        self.unfinished_work_seconds.set(total);
        self.longest_running_processor.set(oldest);
    }
}
