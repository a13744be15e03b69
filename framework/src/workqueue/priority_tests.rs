//! Tests of the queue's priority and fairness rules, each named after the
//! rule of controller-runtime's `pkg/controller/priorityqueue`
//! (`priorityqueue_test.go`) or PR #3261 it checks.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt as _;

use super::{
    MetricsProvider, Priority, PriorityGaugeMetric, PriorityHistogramMetric, WorkQueue,
    LOW_PRIORITY,
};

/// Takes what is queued now, without waiting, with priorities.
fn drain<T>(q: &WorkQueue<T>) -> Vec<(T, Priority)>
where
    T: Clone + Eq + std::hash::Hash + Send + Sync + 'static,
{
    let mut out = Vec::new();
    while let Some(Some((item, priority))) = q.get_with_priority().now_or_never() {
        q.done(&item);
        out.push((item, priority));
    }
    out
}

#[tokio::test]
async fn higher_priority_first_and_fifo_within_a_priority() {
    let q = WorkQueue::new();
    q.add_with_priority("low-1", LOW_PRIORITY);
    q.add("mid-1");
    q.add_with_priority("high", 10);
    q.add_with_priority("low-2", LOW_PRIORITY);
    q.add("mid-2");
    assert_eq!(q.len(), 5);
    assert_eq!(
        drain(&q),
        [
            ("high", 10),
            ("mid-1", 0),
            ("mid-2", 0),
            ("low-1", LOW_PRIORITY),
            ("low-2", LOW_PRIORITY)
        ]
    );
}

/// controller-runtime: "an item that is already enqueued at a lower
/// priority and re-enqueued with a higher priority is placed at the end
/// among items of the new priority"; a lower priority changes nothing.
#[tokio::test]
async fn a_queued_item_keeps_the_higher_priority_and_moves_to_the_back_of_it() {
    let q = WorkQueue::new();
    q.add_with_priority("a", LOW_PRIORITY);
    q.add_with_priority("b", LOW_PRIORITY);
    q.add("c");
    q.add("b"); // raised: behind c
    q.add_with_priority("c", LOW_PRIORITY); // lower: c stays at 0
    assert_eq!(q.len(), 3, "dedup holds across priorities");
    assert_eq!(drain(&q), [("c", 0), ("b", 0), ("a", LOW_PRIORITY)]);
    assert!(q.is_empty());
}

#[tokio::test]
async fn an_item_added_while_processing_is_requeued_at_the_highest_priority_asked() {
    let q = WorkQueue::new();
    q.add_with_priority("a", LOW_PRIORITY);
    q.add_with_priority("other", 1);
    let (a, p) = q.get_with_priority().await.unwrap();
    assert_eq!((a, p), ("other", 1));
    let (a, p) = q.get_with_priority().await.unwrap();
    assert_eq!((a, p), ("a", LOW_PRIORITY));
    // Dirty while processing: the highest of the adds meanwhile wins.
    q.add_with_priority("a", 3);
    q.add_with_priority("a", LOW_PRIORITY);
    assert!(q.is_empty(), "not queued while processing");
    q.done(&"other");
    q.done(&"a");
    assert_eq!(drain(&q), [("a", 3)]);
}

#[tokio::test(start_paused = true)]
async fn delayed_and_rate_limited_adds_keep_their_priority() {
    let q = WorkQueue::new();
    q.add_after_with_priority("delayed", Duration::from_millis(10), 5);
    // A later delayed add at a lower priority neither delays nor lowers it.
    q.add_after_with_priority("delayed", Duration::from_millis(50), LOW_PRIORITY);
    q.add_rate_limited_with_priority("limited", 2);
    q.add("now");
    assert_eq!(drain(&q), [("now", 0)]);
    tokio::time::advance(Duration::from_millis(10)).await;
    assert_eq!(drain(&q), [("delayed", 5), ("limited", 2)]);
    assert_eq!(q.num_requeues(&"limited"), 1);
}

/// PR #3261: within a priority, groups take turns, so a flood in one
/// group delays another group's item by one turn, not by the flood.
#[tokio::test]
async fn groups_take_turns_within_a_priority() {
    let q: WorkQueue<(u64, u32)> = WorkQueue::builder().fairness(|&(g, _)| g).build();
    for i in 0..100 {
        q.add((1, i));
    }
    q.add((2, 0));
    q.add((2, 1));
    q.add_with_priority((3, 0), LOW_PRIORITY);
    let order: Vec<_> = drain(&q).into_iter().map(|(k, _)| k).collect();
    assert_eq!(&order[..5], [(1, 0), (2, 0), (1, 1), (2, 1), (1, 2)]);
    assert_eq!(order.len(), 103);
    // Fairness never crosses priorities: the low item comes last.
    assert_eq!(order.last(), Some(&(3, 0)));
}

#[tokio::test]
async fn fairness_holds_for_items_requeued_by_done() {
    let q: WorkQueue<(u64, u32)> = WorkQueue::builder().fairness(|&(g, _)| g).build();
    q.add((1, 0));
    let first = q.get().await.unwrap();
    q.add((1, 1));
    q.add((2, 0));
    q.add(first); // dirty while processing
    q.done(&first);
    let order: Vec<_> = drain(&q).into_iter().map(|(k, _)| k).collect();
    // Group 1 holds (1,1) then (1,0); group 2 has its turn in between.
    assert_eq!(order, [(1, 1), (2, 0), (1, 0)]);
}

/// The opt-out: every add at one priority, client-go's FIFO.
#[tokio::test]
async fn without_priorities_the_queue_is_fifo() {
    let q = WorkQueue::builder().priorities(false).build();
    q.add_with_priority("a", LOW_PRIORITY);
    q.add_with_priority("b", 10);
    q.add("c");
    assert_eq!(drain(&q), [("a", 0), ("b", 0), ("c", 0)]);
}

#[tokio::test]
async fn shutdown_drains_every_priority_in_order() {
    let q = WorkQueue::new();
    q.add_with_priority("low", LOW_PRIORITY);
    q.add("mid");
    q.shutdown();
    q.add_with_priority("late", 100);
    assert_eq!(drain(&q), [("mid", 0), ("low", LOW_PRIORITY)]);
    assert_eq!(q.get().await, None);
}

#[derive(Default)]
struct Recorded {
    depth: Mutex<Vec<(Priority, i64)>>,
    waits: Mutex<Vec<Priority>>,
}

impl Recorded {
    fn depth_of(&self, priority: Priority) -> i64 {
        let depth = self.depth.lock().unwrap();
        depth
            .iter()
            .filter(|(p, _)| *p == priority)
            .map(|(_, d)| d)
            .sum()
    }
}

impl PriorityGaugeMetric for Recorded {
    fn inc(&self, priority: Priority) {
        self.depth.lock().unwrap().push((priority, 1));
    }
    fn dec(&self, priority: Priority) {
        self.depth.lock().unwrap().push((priority, -1));
    }
}

impl PriorityHistogramMetric for Recorded {
    fn observe(&self, priority: Priority, _value: f64) {
        self.waits.lock().unwrap().push(priority);
    }
}

struct Provider(Arc<Recorded>);

impl MetricsProvider for Provider {
    fn new_depth_with_priority_metric(&self, _name: &str) -> Option<Arc<dyn PriorityGaugeMetric>> {
        Some(self.0.clone())
    }
    fn new_latency_with_priority_metric(
        &self,
        _name: &str,
    ) -> Option<Arc<dyn PriorityHistogramMetric>> {
        Some(self.0.clone())
    }
}

/// controller-runtime's `updateDepthWithPriorityMetric`: a raise moves the
/// item's count from its old priority to its new one.
#[tokio::test]
async fn depth_and_wait_are_reported_by_priority() {
    let recorded = Arc::new(Recorded::default());
    let q = WorkQueue::builder()
        .name("q")
        .metrics(Arc::new(Provider(recorded.clone())))
        .build();
    q.add_with_priority("a", LOW_PRIORITY);
    q.add_with_priority("b", LOW_PRIORITY);
    assert_eq!(recorded.depth_of(LOW_PRIORITY), 2);
    q.add("b");
    assert_eq!(recorded.depth_of(LOW_PRIORITY), 1);
    assert_eq!(recorded.depth_of(0), 1);
    drain(&q);
    assert_eq!(recorded.depth_of(LOW_PRIORITY), 0);
    assert_eq!(recorded.depth_of(0), 0);
    assert_eq!(*recorded.waits.lock().unwrap(), [0, LOW_PRIORITY]);
}

/// The entry a raise leaves behind is never taken for the item's next
/// queuing at that priority, even after the item was done and forgotten.
#[tokio::test]
async fn an_entry_left_by_a_raise_never_stands_for_a_later_add() {
    let q = WorkQueue::new();
    q.add_with_priority("x", LOW_PRIORITY);
    q.add_with_priority("y", LOW_PRIORITY);
    q.add("x"); // raised; its low entry stays ahead of y's
    assert_eq!(drain_one(&q), Some(("x", 0)));
    q.add_with_priority("x", LOW_PRIORITY); // behind y now
    assert_eq!(drain(&q), [("y", LOW_PRIORITY), ("x", LOW_PRIORITY)]);
}

fn drain_one<T>(q: &WorkQueue<T>) -> Option<(T, Priority)>
where
    T: Clone + Eq + std::hash::Hash + Send + Sync + 'static,
{
    let (item, priority) = q.get_with_priority().now_or_never()??;
    q.done(&item);
    Some((item, priority))
}
