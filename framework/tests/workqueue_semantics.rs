//! The workqueue's semantics, case by case, after client-go's
//! `util/workqueue` tests (queue_test.go, delaying_queue_test.go,
//! rate_limiting_queue_test.go, default_rate_limiters_test.go,
//! metrics_test.go). Delays run on tokio's paused clock.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt as _;
use kubeforge::workqueue::{
    default_controller_rate_limiter, Bucket, CounterMetric, GaugeMetric, HistogramMetric,
    ItemExponentialFailure, ItemFastSlow, MaxOf, MetricsProvider, PrometheusMetricsProvider,
    RateLimiter, SettableGaugeMetric, WorkQueue,
};
use prometheus_client::registry::Registry;
use tokio::time::{advance, Instant};

const MS: Duration = Duration::from_millis(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `get` without waiting: `Some(item)`, `Some(None)` after shutdown, or
/// `None` if it would block.
fn try_get<T>(q: &WorkQueue<T>) -> Option<Option<T>>
where
    T: Clone + Eq + std::hash::Hash + Send + Sync + 'static,
{
    q.get().now_or_never()
}

/// Lets spawned tasks (the queue's timer, getters) run.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

// ---------------------------------------------------------------- queue

#[tokio::test]
async fn add_of_a_queued_item_is_dropped() {
    let q = WorkQueue::new();
    q.add("a");
    q.add("b");
    q.add("a");
    assert_eq!(q.len(), 2);
    assert_eq!(try_get(&q), Some(Some("a")));
    assert_eq!(try_get(&q), Some(Some("b")));
    assert_eq!(try_get(&q), None, "nothing else queued");
}

#[tokio::test]
async fn items_come_out_in_fifo_order() {
    let q = WorkQueue::new();
    for i in 0..50 {
        q.add(i);
    }
    for i in 0..50 {
        assert_eq!(try_get(&q), Some(Some(i)));
    }
}

// client-go queue_test.go TestAddWhileProcessing / TestReinsert.
#[tokio::test]
async fn add_while_processing_requeues_once_on_done() {
    let q = WorkQueue::new();
    q.add("a");
    let a = q.get().await.unwrap();
    q.add("a");
    q.add("a");
    q.add("a");
    assert_eq!(q.len(), 0, "not queued while being processed");
    assert_eq!(try_get(&q), None, "no second holder");
    q.done(&a);
    assert_eq!(q.len(), 1, "queued once on done");
    assert_eq!(try_get(&q), Some(Some("a")));
    q.done(&"a");
    assert_eq!(q.len(), 0);
    assert_eq!(try_get(&q), None);
}

#[tokio::test]
async fn done_without_re_add_forgets_the_item() {
    let q = WorkQueue::new();
    q.add(1);
    let item = q.get().await.unwrap();
    q.done(&item);
    assert_eq!(q.len(), 0);
    q.add(1);
    assert_eq!(q.len(), 1, "can be added again after done");
}

#[tokio::test]
async fn done_of_an_item_not_processing_is_ignored() {
    let q = WorkQueue::new();
    q.add("a");
    q.done(&"a"); // queued, not processing
    q.done(&"zzz"); // unknown
    assert_eq!(q.len(), 1, "no second copy queued");
    assert_eq!(try_get(&q), Some(Some("a")));
    assert_eq!(try_get(&q), None);
}

#[tokio::test]
async fn get_waits_for_an_add() {
    let q = WorkQueue::new();
    let getter = tokio::spawn({
        let q = q.clone();
        async move { q.get().await }
    });
    settle().await;
    assert!(!getter.is_finished());
    q.add(7);
    assert_eq!(getter.await.unwrap(), Some(7));
}

#[tokio::test]
async fn a_cancelled_get_takes_nothing() {
    let q = WorkQueue::new();
    let timed_out = tokio::time::timeout(ms(5), q.get()).await;
    assert!(timed_out.is_err());
    q.add("a");
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("a"));
}

#[tokio::test]
async fn each_blocked_getter_receives_a_distinct_item() {
    let q = WorkQueue::new();
    let getters: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    settle().await;
    for i in 0..4 {
        q.add(i);
    }
    let mut got = Vec::new();
    for g in getters {
        got.push(g.await.unwrap().unwrap());
    }
    got.sort();
    assert_eq!(got, vec![0, 1, 2, 3]);
}

// client-go queue_test.go TestBasic's shutdown contract: Get keeps handing
// out queued items, then reports shutdown.
#[tokio::test]
async fn shutdown_hands_out_what_is_queued_then_none() {
    let q = WorkQueue::new();
    q.add("a");
    q.add("b");
    q.shutdown();
    assert!(q.is_shutting_down());
    q.add("c");
    assert_eq!(q.len(), 2, "adds after shutdown are ignored");
    assert_eq!(q.get().await, Some("a"));
    assert_eq!(q.get().await, Some("b"));
    assert_eq!(q.get().await, None);
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn shutdown_wakes_blocked_getters() {
    let q: WorkQueue<u32> = WorkQueue::new();
    let getters: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    settle().await;
    q.shutdown();
    for g in getters {
        assert_eq!(g.await.unwrap(), None);
    }
}

// A dirty item still re-queues on done after shutdown, as in client-go.
#[tokio::test]
async fn done_after_shutdown_still_requeues_a_dirty_item() {
    let q = WorkQueue::new();
    q.add("a");
    let a = q.get().await.unwrap();
    q.add("a");
    q.shutdown();
    q.done(&a);
    assert_eq!(q.get().await, Some("a"));
    q.done(&"a");
    assert_eq!(q.get().await, None);
}

// client-go queue_test.go TestQueueDrainageUsingShutDownWithDrain.
#[tokio::test]
async fn shutdown_with_drain_waits_for_items_in_flight() {
    let q = WorkQueue::new();
    q.add("a");
    q.add("b");
    let a = q.get().await.unwrap();
    let b = q.get().await.unwrap();
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shutdown_with_drain().await }
    });
    settle().await;
    assert!(q.is_shutting_down());
    assert!(!drain.is_finished(), "two items in flight");
    q.done(&a);
    settle().await;
    assert!(!drain.is_finished(), "one item in flight");
    q.done(&b);
    drain.await.unwrap();
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn shutdown_with_drain_returns_at_once_when_idle() {
    let q: WorkQueue<u8> = WorkQueue::new();
    q.shutdown_with_drain().await;
    assert!(q.is_shutting_down());
}

// client-go queue_test.go TestForceQueueShutdownUsingShutDown.
#[tokio::test]
async fn shutdown_ends_a_pending_drain() {
    let q = WorkQueue::new();
    q.add("a");
    let _a = q.get().await.unwrap();
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shutdown_with_drain().await }
    });
    settle().await;
    assert!(!drain.is_finished());
    q.shutdown();
    drain.await.unwrap();
}

#[tokio::test]
async fn clones_share_one_queue() {
    let q = WorkQueue::builder().name("shared").build();
    let other = q.clone();
    q.add(1);
    assert_eq!(other.len(), 1);
    assert_eq!(other.name(), "shared");
    assert_eq!(other.get().await, Some(1));
    assert!(q.is_empty());
}

// ---------------------------------------------------------------- delays

#[tokio::test(start_paused = true)]
async fn add_after_zero_adds_at_once() {
    let q = WorkQueue::new();
    q.add_after("a", Duration::ZERO);
    assert_eq!(q.len(), 1);
}

// client-go delaying_queue_test.go TestSimpleQueue.
#[tokio::test(start_paused = true)]
async fn add_after_adds_exactly_when_due() {
    let q = WorkQueue::new();
    q.add_after("a", ms(50));
    assert_eq!(q.len(), 0);
    advance(ms(49)).await;
    assert_eq!(q.len(), 0, "not before 50 ms");
    advance(MS).await;
    assert_eq!(q.len(), 1, "due at 50 ms");
    assert_eq!(q.get().await, Some("a"));
    q.done(&"a");
    advance(Duration::from_secs(60)).await;
    assert_eq!(q.len(), 0, "fired once");
}

#[tokio::test(start_paused = true)]
async fn a_waiting_getter_wakes_when_the_delay_ends() {
    let q = WorkQueue::new();
    let start = Instant::now();
    q.add_after("a", ms(250));
    // Paused time auto-advances to the queue's timer.
    assert_eq!(q.get().await, Some("a"));
    assert_eq!(start.elapsed(), ms(250));
}

#[tokio::test(start_paused = true)]
async fn the_timer_task_moves_due_items_without_any_caller() {
    let q = WorkQueue::new();
    q.add_after("a", ms(10));
    tokio::time::sleep(ms(20)).await;
    // Peek at the state without `len`/`get`, which would promote it themselves.
    let shown = format!("{q:?}");
    assert!(shown.contains("queued: 1"), "{shown}");
}

// client-go delaying_queue_test.go TestDeduping.
#[tokio::test(start_paused = true)]
async fn a_duplicate_delayed_add_keeps_the_earlier_time() {
    let q = WorkQueue::new();
    q.add_after("a", ms(50));
    q.add_after("a", ms(70));
    advance(ms(60)).await;
    assert_eq!(q.len(), 1, "fired at 50 ms");
    let a = q.get().await.unwrap();
    q.done(&a);
    advance(ms(20)).await;
    assert_eq!(q.len(), 0, "the later time was dropped");

    // The earlier time also wins when it comes second.
    q.add_after("a", ms(50));
    q.add_after("a", ms(30));
    advance(ms(40)).await;
    assert_eq!(q.len(), 1, "fired at 30 ms");
    let a = q.get().await.unwrap();
    q.done(&a);
    advance(ms(20)).await;
    assert_eq!(q.len(), 0, "fired once");
}

// client-go delaying_queue_test.go TestAddTwoFireEarly and TestCopyShifting.
#[tokio::test(start_paused = true)]
async fn delayed_items_come_out_in_ready_order() {
    let q = WorkQueue::new();
    q.add_after("first", Duration::from_secs(1));
    q.add_after("second", ms(500));
    q.add_after("third", ms(250));
    advance(Duration::from_secs(2)).await;
    assert_eq!(q.len(), 3);
    assert_eq!(q.get().await, Some("third"));
    assert_eq!(q.get().await, Some("second"));
    assert_eq!(q.get().await, Some("first"));
}

#[tokio::test(start_paused = true)]
async fn a_new_earlier_item_rearms_the_timer() {
    let q = WorkQueue::new();
    q.add_after("late", Duration::from_secs(10));
    settle().await;
    q.add_after("early", ms(10));
    let start = Instant::now();
    assert_eq!(q.get().await, Some("early"));
    assert_eq!(start.elapsed(), ms(10));
}

// client-go semantics: a delayed add of an item that is queued still fires
// later and queues it again if it has been processed by then.
#[tokio::test(start_paused = true)]
async fn a_delayed_add_of_a_queued_item_fires_later() {
    let q = WorkQueue::new();
    q.add("a");
    q.add_after("a", ms(10));
    let a = q.get().await.unwrap();
    q.done(&a);
    assert_eq!(q.len(), 0);
    advance(ms(10)).await;
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_delayed_item_that_fires_during_processing_reruns_once() {
    let q = WorkQueue::new();
    q.add("a");
    let a = q.get().await.unwrap();
    q.add_after("a", ms(10));
    advance(ms(10)).await;
    assert_eq!(q.len(), 0, "dirty, not queued, while processing");
    q.done(&a);
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn shutdown_drops_delayed_items() {
    let q = WorkQueue::new();
    q.add_after("a", ms(10));
    q.shutdown();
    q.add_after("b", ms(10));
    advance(ms(100)).await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn an_enormous_delay_does_not_overflow() {
    let q = WorkQueue::new();
    q.add_after("a", Duration::MAX);
    q.add_after("b", Duration::from_secs(u64::MAX / 2));
    advance(Duration::from_secs(86_400 * 365)).await;
    assert_eq!(q.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_every_handle_stops_the_timer_task() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let q = WorkQueue::new();
    q.add_after(1u32, Duration::from_secs(3600));
    settle().await;
    assert_eq!(metrics.num_alive_tasks(), 1, "the queue's timer");
    drop(q);
    settle().await;
    assert_eq!(
        metrics.num_alive_tasks(),
        0,
        "the timer exits with the queue"
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_the_timer_task() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let q = WorkQueue::new();
    q.add_after(1u32, Duration::from_secs(3600));
    settle().await;
    assert_eq!(metrics.num_alive_tasks(), 1);
    q.shutdown();
    settle().await;
    assert_eq!(metrics.num_alive_tasks(), 0);
}

// ---------------------------------------------------------------- rate-limited queue

// client-go rate_limiting_queue_test.go TestRateLimitingQueue.
#[tokio::test(start_paused = true)]
async fn add_rate_limited_backs_off_per_item_and_forget_resets() {
    let q = WorkQueue::builder()
        .rate_limiter(ItemExponentialFailure::new(MS, Duration::from_secs(1)))
        .build();
    q.add_rate_limited("one");
    q.add_rate_limited("one");
    q.add_rate_limited("two");
    assert_eq!(q.num_requeues(&"one"), 2);
    assert_eq!(q.num_requeues(&"two"), 1);
    assert_eq!(q.len(), 0);
    // "one" waits 1 ms (its first delay wins over the second's 2 ms).
    advance(MS).await;
    assert_eq!(q.len(), 2);

    q.forget(&"one");
    assert_eq!(q.num_requeues(&"one"), 0);
    assert_eq!(q.num_requeues(&"two"), 1);
}

#[tokio::test(start_paused = true)]
async fn the_default_queue_limiter_is_client_gos() {
    let q = WorkQueue::new();
    q.add_rate_limited("a");
    advance(ms(4)).await;
    assert_eq!(q.len(), 0);
    advance(MS).await;
    assert_eq!(q.len(), 1, "5 ms for a first failure");
    let a = q.get().await.unwrap();
    q.done(&a);
    q.add_rate_limited("a");
    advance(ms(9)).await;
    assert_eq!(q.len(), 0);
    advance(MS).await;
    assert_eq!(q.len(), 1, "10 ms for a second failure");
}

// ---------------------------------------------------------------- rate limiters

// client-go default_rate_limiters_test.go TestItemExponentialFailureRateLimiter.
#[test]
fn exponential_doubles_per_item_and_forget_resets() {
    let l = ItemExponentialFailure::new(MS, Duration::from_secs(1));
    let expected: Vec<Duration> = [1, 2, 4, 8, 16].into_iter().map(ms).collect();
    let got: Vec<Duration> = (0..5).map(|_| l.when(&"one")).collect();
    assert_eq!(got, expected);
    assert_eq!(l.num_requeues(&"one"), 5);

    assert_eq!(l.when(&"two"), ms(1), "items are independent");
    assert_eq!(l.when(&"two"), ms(2));
    assert_eq!(l.num_requeues(&"two"), 2);

    l.forget(&"one");
    assert_eq!(l.num_requeues(&"one"), 0);
    assert_eq!(l.when(&"one"), ms(1));
}

#[test]
fn exponential_default_runs_5ms_to_1000s() {
    let l = ItemExponentialFailure::<&str>::default();
    let first: Vec<Duration> = (0..4).map(|_| l.when(&"k")).collect();
    assert_eq!(first, vec![ms(5), ms(10), ms(20), ms(40)]);
    // 5 ms * 2^17 = 655.36 s; the 19th failure would be 1310.72 s: capped.
    for _ in 4..18 {
        l.when(&"k");
    }
    assert_eq!(l.num_requeues(&"k"), 18);
    assert_eq!(l.when(&"k"), Duration::from_secs(1000));
}

// client-go TestItemExponentialFailureRateLimiterOverFlow.
#[test]
fn exponential_caps_instead_of_overflowing() {
    let l = ItemExponentialFailure::new(MS, Duration::from_secs(1000 * 86_400));
    for _ in 0..5 {
        l.when(&"one");
    }
    assert_eq!(l.when(&"one"), ms(32));
    for _ in 0..1000 {
        l.when(&"overflow");
    }
    assert_eq!(l.when(&"overflow"), Duration::from_secs(1000 * 86_400));

    let huge = ItemExponentialFailure::new(Duration::from_secs(u64::MAX / 2), Duration::MAX);
    for _ in 0..200 {
        assert!(huge.when(&"x") >= Duration::from_secs(u64::MAX / 2));
    }
    assert_eq!(huge.when(&"x"), Duration::MAX);
}

// client-go TestItemFastSlowRateLimiter.
#[test]
fn fast_slow_switches_after_max_fast_attempts() {
    let l = ItemFastSlow::new(ms(5), Duration::from_secs(10), 3);
    let got: Vec<Duration> = (0..5).map(|_| l.when(&"one")).collect();
    assert_eq!(
        got,
        vec![
            ms(5),
            ms(5),
            ms(5),
            Duration::from_secs(10),
            Duration::from_secs(10)
        ]
    );
    assert_eq!(l.num_requeues(&"one"), 5);
    assert_eq!(l.when(&"two"), ms(5));
    assert_eq!(l.num_requeues(&"two"), 1);
    l.forget(&"one");
    assert_eq!(l.num_requeues(&"one"), 0);
    assert_eq!(l.when(&"one"), ms(5));
}

// client-go TestMaxOfRateLimiter.
#[test]
fn max_of_takes_the_longest_and_forgets_everywhere() {
    let l = MaxOf::new(vec![
        Box::new(ItemFastSlow::new(ms(5), Duration::from_secs(3), 3)),
        Box::new(ItemExponentialFailure::new(MS, Duration::from_secs(1))),
    ]);
    let got: Vec<Duration> = (0..5).map(|_| l.when(&"one")).collect();
    assert_eq!(
        got,
        vec![
            ms(5),
            ms(5),
            ms(5),
            Duration::from_secs(3),
            Duration::from_secs(3)
        ]
    );
    assert_eq!(l.num_requeues(&"one"), 5);
    assert_eq!(l.when(&"two"), ms(5));
    assert_eq!(l.num_requeues(&"two"), 1);
    l.forget(&"one");
    assert_eq!(l.num_requeues(&"one"), 0);
    assert_eq!(l.when(&"one"), ms(5));

    let empty = MaxOf::<u8>::new(Vec::new());
    assert_eq!(empty.when(&1), Duration::ZERO);
    assert_eq!(empty.num_requeues(&1), 0);
}

#[tokio::test(start_paused = true)]
async fn token_bucket_spends_its_burst_then_spaces_by_qps() {
    let b = Bucket::new(10.0, 100);
    for i in 0..100 {
        assert_eq!(
            RateLimiter::<u32>::when(&b, &i),
            Duration::ZERO,
            "token {i}"
        );
    }
    assert_eq!(RateLimiter::<u32>::when(&b, &0), ms(100));
    assert_eq!(RateLimiter::<u32>::when(&b, &0), ms(200));
    assert_eq!(
        RateLimiter::<u32>::num_requeues(&b, &0),
        0,
        "tracks no items"
    );
    // One second refills ten tokens and repays the debt of two.
    advance(Duration::from_secs(1)).await;
    for _ in 0..8 {
        assert_eq!(RateLimiter::<u32>::when(&b, &0), Duration::ZERO);
    }
    assert_eq!(RateLimiter::<u32>::when(&b, &0), ms(100));
    // A long pause refills up to the burst and no further.
    advance(Duration::from_secs(3600)).await;
    for _ in 0..100 {
        assert_eq!(RateLimiter::<u32>::when(&b, &0), Duration::ZERO);
    }
    assert_eq!(RateLimiter::<u32>::when(&b, &0), ms(100));
}

#[tokio::test(start_paused = true)]
async fn token_bucket_edge_rates_follow_x_time_rate() {
    let no_burst = Bucket::new(10.0, 0);
    assert_eq!(RateLimiter::<u8>::when(&no_burst, &0), Duration::MAX);
    let unlimited = Bucket::new(f64::INFINITY, 0);
    for _ in 0..1000 {
        assert_eq!(RateLimiter::<u8>::when(&unlimited, &0), Duration::ZERO);
    }
    let zero_rate = Bucket::new(0.0, 2);
    assert_eq!(RateLimiter::<u8>::when(&zero_rate, &0), Duration::ZERO);
    assert_eq!(RateLimiter::<u8>::when(&zero_rate, &0), Duration::ZERO);
    advance(Duration::from_secs(3600)).await;
    assert_eq!(RateLimiter::<u8>::when(&zero_rate, &0), Duration::MAX);
    let nan_rate = Bucket::new(f64::NAN, 1);
    assert_eq!(RateLimiter::<u8>::when(&nan_rate, &0), Duration::ZERO);
    assert_eq!(RateLimiter::<u8>::when(&nan_rate, &0), Duration::MAX);
}

#[tokio::test(start_paused = true)]
async fn default_controller_limiter_is_max_of_exponential_and_bucket() {
    let l = default_controller_rate_limiter::<u32>();
    assert_eq!(l.when(&0), ms(5));
    assert_eq!(l.when(&0), ms(10));
    assert_eq!(l.num_requeues(&0), 2);
    // 98 more first failures use up the bucket's burst of 100 ...
    for i in 1..99 {
        assert_eq!(l.when(&i), ms(5));
    }
    // ... so the 101st retry overall waits for the bucket: 100 ms.
    assert_eq!(l.when(&1000), ms(100));
    assert_eq!(l.when(&1001), ms(200));
    l.forget(&0);
    assert_eq!(l.num_requeues(&0), 0);
}

// ---------------------------------------------------------------- metrics

#[derive(Default)]
struct Recorded {
    depth: AtomicI64,
    adds: AtomicUsize,
    retries: AtomicUsize,
    latency: Mutex<Vec<f64>>,
    work: Mutex<Vec<f64>>,
    unfinished: Mutex<f64>,
    longest: Mutex<f64>,
    names: Mutex<Vec<String>>,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Recorded>);

struct Depth(Arc<Recorded>);
impl GaugeMetric for Depth {
    fn inc(&self) {
        self.0.depth.fetch_add(1, Ordering::SeqCst);
    }
    fn dec(&self) {
        self.0.depth.fetch_sub(1, Ordering::SeqCst);
    }
}
struct Adds(Arc<Recorded>);
impl CounterMetric for Adds {
    fn inc(&self) {
        self.0.adds.fetch_add(1, Ordering::SeqCst);
    }
}
struct Retries(Arc<Recorded>);
impl CounterMetric for Retries {
    fn inc(&self) {
        self.0.retries.fetch_add(1, Ordering::SeqCst);
    }
}
struct Latency(Arc<Recorded>);
impl HistogramMetric for Latency {
    fn observe(&self, v: f64) {
        self.0.latency.lock().unwrap().push(v);
    }
}
struct Work(Arc<Recorded>);
impl HistogramMetric for Work {
    fn observe(&self, v: f64) {
        self.0.work.lock().unwrap().push(v);
    }
}
struct Unfinished(Arc<Recorded>);
impl SettableGaugeMetric for Unfinished {
    fn set(&self, v: f64) {
        *self.0.unfinished.lock().unwrap() = v;
    }
}
struct Longest(Arc<Recorded>);
impl SettableGaugeMetric for Longest {
    fn set(&self, v: f64) {
        *self.0.longest.lock().unwrap() = v;
    }
}

impl MetricsProvider for Recorder {
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric> {
        self.0.names.lock().unwrap().push(name.to_owned());
        Arc::new(Depth(self.0.clone()))
    }
    fn new_adds_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Adds(self.0.clone()))
    }
    fn new_latency_metric(&self, _: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(Latency(self.0.clone()))
    }
    fn new_work_duration_metric(&self, _: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(Work(self.0.clone()))
    }
    fn new_unfinished_work_seconds_metric(&self, _: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Unfinished(self.0.clone()))
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        _: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Longest(self.0.clone()))
    }
    fn new_retries_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Retries(self.0.clone()))
    }
}

// client-go metrics_test.go TestMetrics / TestMetricShutdown, with a paused
// clock in place of the fake one.
#[tokio::test(start_paused = true)]
async fn metrics_follow_client_go() {
    let rec = Recorder::default();
    let q = WorkQueue::builder()
        .name("test")
        .metrics(Arc::new(rec.clone()))
        .build();
    let m = &rec.0;
    assert_eq!(*m.names.lock().unwrap(), vec!["test".to_owned()]);

    q.add("foo");
    assert_eq!(m.adds.load(Ordering::SeqCst), 1);
    assert_eq!(m.depth.load(Ordering::SeqCst), 1);
    advance(ms(50)).await;
    let foo = q.get().await.unwrap();
    assert_eq!(m.depth.load(Ordering::SeqCst), 0);
    assert_eq!(*m.latency.lock().unwrap(), vec![0.05]);

    // Added while processing: counted as an add, and in the depth.
    q.add("foo");
    q.add("foo");
    assert_eq!(m.adds.load(Ordering::SeqCst), 2);
    assert_eq!(m.depth.load(Ordering::SeqCst), 1);

    advance(ms(25)).await;
    q.done(&foo);
    assert_eq!(*m.work.lock().unwrap(), vec![0.025]);
    advance(ms(25)).await;
    let foo = q.get().await.unwrap();
    assert_eq!(m.depth.load(Ordering::SeqCst), 0);
    // It became dirty at 50 ms and was handed out at 100 ms.
    assert_eq!(*m.latency.lock().unwrap(), vec![0.05, 0.05]);

    // The unfinished-work gauges are refreshed every 500 ms while it runs.
    q.add("bar");
    let bar = q.get().await.unwrap();
    tokio::time::sleep(ms(1600)).await;
    let unfinished = *m.unfinished.lock().unwrap();
    let longest = *m.longest.lock().unwrap();
    assert!(longest > 1.0 && longest <= 1.6, "{longest}");
    assert!((unfinished - 2.0 * longest).abs() < 1e-9, "{unfinished}");
    q.done(&foo);
    q.done(&bar);

    q.add_after("baz", ms(10));
    q.add_rate_limited("qux");
    assert_eq!(m.retries.load(Ordering::SeqCst), 2);
    q.shutdown();
    q.add_after("late", ms(10));
    assert_eq!(
        m.retries.load(Ordering::SeqCst),
        2,
        "no retries after shutdown"
    );
}

#[tokio::test]
async fn an_unnamed_queue_reports_no_metrics() {
    let rec = Recorder::default();
    let q = WorkQueue::builder().metrics(Arc::new(rec.clone())).build();
    q.add(1);
    assert!(rec.0.names.lock().unwrap().is_empty());
    assert_eq!(rec.0.adds.load(Ordering::SeqCst), 0);
}

fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text
}

/// The value of the series whose line starts with `series` followed by a space.
fn value(text: &str, series: &str) -> f64 {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no series {series:?} in\n{text}"));
    line.parse().unwrap()
}

#[tokio::test(start_paused = true)]
async fn prometheus_provider_exports_client_go_metric_names() {
    let provider = PrometheusMetricsProvider::new();
    let mut registry = Registry::default();
    provider.register(&mut registry);
    let q = WorkQueue::builder()
        .name("memcached")
        .metrics(Arc::new(provider.clone()))
        .build();
    q.add("a");
    q.add("b");
    advance(ms(2)).await;
    let a = q.get().await.unwrap();
    advance(Duration::from_secs(3)).await;
    q.done(&a);
    q.add_after("c", Duration::from_secs(1));
    let b = q.get().await.unwrap();
    tokio::time::sleep(ms(1100)).await;

    let text = encode(&registry);
    let l = r#"{name="memcached",controller="memcached"}"#;
    // controller-runtime labels the depth by priority.
    assert_eq!(
        value(
            &text,
            r#"workqueue_depth{name="memcached",controller="memcached",priority="0"}"#
        ),
        1.0,
        "c is queued"
    );
    let by_priority = r#"{name="memcached",controller="memcached",priority="0"}"#;
    assert_eq!(
        value(
            &text,
            &format!("workqueue_queue_duration_by_priority_seconds_count{by_priority}")
        ),
        2.0
    );
    assert_eq!(value(&text, &format!("workqueue_adds_total{l}")), 3.0);
    assert_eq!(value(&text, &format!("workqueue_retries_total{l}")), 1.0);
    let count = |m: &str| value(&text, &format!("workqueue_{m}_count{l}"));
    let sum = |m: &str| value(&text, &format!("workqueue_{m}_sum{l}"));
    assert_eq!(count("queue_duration_seconds"), 2.0);
    assert!((sum("queue_duration_seconds") - 3.004).abs() < 1e-9);
    assert_eq!(count("work_duration_seconds"), 1.0);
    assert!((sum("work_duration_seconds") - 3.0).abs() < 1e-9);
    // b has run for about 1.1 s, measured at the last 500 ms refresh.
    let longest = value(
        &text,
        &format!("workqueue_longest_running_processor_seconds{l}"),
    );
    assert!(longest > 0.5 && longest <= 1.1, "{longest}");
    let unfinished = value(&text, &format!("workqueue_unfinished_work_seconds{l}"));
    assert_eq!(unfinished, longest, "one item in flight");
    for ty in [
        "# TYPE workqueue_depth gauge",
        "# TYPE workqueue_adds counter",
        "# TYPE workqueue_queue_duration_seconds histogram",
        "# TYPE workqueue_queue_duration_by_priority_seconds histogram",
        "# TYPE workqueue_work_duration_seconds histogram",
        "# TYPE workqueue_unfinished_work_seconds gauge",
        "# TYPE workqueue_longest_running_processor_seconds gauge",
        "# TYPE workqueue_retries counter",
    ] {
        assert!(text.contains(ty), "missing {ty:?} in\n{text}");
    }
    // controller-runtime's buckets: 1e-8 s to 1000 s in decades, then +Inf.
    let buckets = text
        .lines()
        .filter(|l| l.starts_with("workqueue_work_duration_seconds_bucket"))
        .count();
    assert_eq!(buckets, 13, "{text}");
    q.done(&b);
}

/// controller-runtime's `depthWithPriorityMetric`: one series per priority
/// seen, up to 25, then `exceeded_cardinality_limit`; a plain queue's
/// depth has `priority=""`.
#[tokio::test]
async fn prometheus_depth_is_labelled_by_priority_within_a_cardinality_limit() {
    let provider = PrometheusMetricsProvider::new();
    let mut registry = Registry::default();
    provider.register(&mut registry);
    let q = WorkQueue::builder()
        .name("q")
        .metrics(Arc::new(provider.clone()))
        .build();
    for p in 0..30 {
        q.add_with_priority(p, p);
    }
    let plain = WorkQueue::builder()
        .name("plain")
        .priorities(false)
        .metrics(Arc::new(provider.clone()))
        .build();
    plain.add_with_priority(1, 9);
    let text = encode(&registry);
    let depth = |priority: &str| {
        value(
            &text,
            &format!(r#"workqueue_depth{{name="q",controller="q",priority="{priority}"}}"#),
        )
    };
    assert_eq!(depth("0"), 1.0);
    assert_eq!(depth("24"), 1.0);
    assert_eq!(depth("exceeded_cardinality_limit"), 5.0);
    assert!(!text.contains(r#"priority="25""#), "{text}");
    assert_eq!(
        value(
            &text,
            r#"workqueue_depth{name="plain",controller="plain",priority=""}"#
        ),
        1.0
    );
}
