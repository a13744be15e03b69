//! A workqueue with client-go's semantics: deduplication, delays and
//! rate-limited retries. Knows nothing of Kubernetes.
//!
//! [`WorkQueue`] is client-go's `util/workqueue` rate-limiting queue in one
//! type: items are deduplicated while queued, an item is never handed to two
//! workers at once, adds during processing collapse into one re-run, delayed
//! adds keep the earliest ready time, and retries are spaced by a
//! [`RateLimiter`] ([`default_controller_rate_limiter`] unless configured).
//! Queue metrics go through a [`MetricsProvider`];
//! [`PrometheusMetricsProvider`] exports them under client-go's names.
//!
//! It is also controller-runtime's priority queue
//! (`pkg/controller/priorityqueue`, the default there since v0.23): every
//! queued item has a [`Priority`], higher priorities are handed out first,
//! an item added again keeps the higher of its priorities, and its delayed
//! and rate-limited re-adds keep theirs
//! ([`add_with_priority`](WorkQueue::add_with_priority),
//! [`get_with_priority`](WorkQueue::get_with_priority)). Within one
//! priority, a queue built with a
//! [`fairness`](WorkQueueBuilder::fairness) function takes items in turns
//! across the groups it names (controller-runtime PR #3261), so one group
//! flooding the queue cannot starve the others. Plain [`add`](WorkQueue::add)
//! is at [`DEFAULT_PRIORITY`]; with no priorities used and no fairness
//! function the queue is client-go's FIFO, and
//! [`priorities(false)`](WorkQueueBuilder::priorities) makes it one
//! whatever callers ask. The controller enqueues events from the initial
//! list and resyncs at [`LOW_PRIORITY`] and takes turns by namespace; the
//! queue itself knows nothing of either.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use kubeforge::workqueue::WorkQueue;
//!
//! let queue: WorkQueue<String> = WorkQueue::builder().name("example").build();
//! queue.add("ns/a".to_owned());
//! while let Some(key) = queue.get().await {
//!     let failed = false; // reconcile `key` here
//!     if failed {
//!         queue.add_rate_limited(key.clone());
//!     } else {
//!         queue.forget(&key);
//!     }
//!     queue.done(&key);
//!     # queue.shutdown();
//! }
//! # }
//! ```

mod metrics;
#[cfg(test)]
mod priority_tests;
mod prometheus;
mod queue;
mod rate_limiter;
mod ready;
mod waiting;

pub use metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, NoopMetric, NoopMetricsProvider,
    PriorityGaugeMetric, PriorityHistogramMetric, SettableGaugeMetric,
};
pub use prometheus::{PriorityLabels, PrometheusMetricsProvider, QueueLabels};
pub use queue::{WorkQueue, WorkQueueBuilder};
pub use rate_limiter::{
    default_controller_rate_limiter, Bucket, ItemExponentialFailure, ItemFastSlow, MaxOf,
    RateLimiter,
};
pub use ready::{Priority, DEFAULT_PRIORITY, LOW_PRIORITY};
