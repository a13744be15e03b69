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
mod prometheus;
mod queue;
mod rate_limiter;
mod waiting;

pub use metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, NoopMetric, NoopMetricsProvider,
    SettableGaugeMetric,
};
pub use prometheus::{PrometheusMetricsProvider, QueueLabels};
pub use queue::{WorkQueue, WorkQueueBuilder};
pub use rate_limiter::{
    default_controller_rate_limiter, Bucket, ItemExponentialFailure, ItemFastSlow, MaxOf,
    RateLimiter,
};
