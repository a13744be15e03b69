//! The shared informer driven with synthetic deltas, as a reflector would
//! drive it: event order (client-go's RealFIFO), late handlers, resync,
//! slow and removed handlers, sync tracking and object sharing.

#[path = "../apiserver/tests/poll/mod.rs"]
mod poll;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_core::ObjectMeta;
use kubeforge::cache::{
    DeletedObject, Delta, DeltaSink, Error, Event, EventHandler, HandlerFns, InformerConfig,
    ObjectKey, SharedInformer,
};
use tokio::sync::{mpsc, Semaphore};

fn cm(ns: &str, name: &str, rv: u64) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            resource_version: Some(rv.to_string()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("rv".to_owned(), rv.to_string())])),
        ..Default::default()
    })
}

fn key(obj: &ConfigMap) -> String {
    ObjectKey::of(obj).to_string()
}

fn rv(obj: &ConfigMap) -> &str {
    obj.metadata.resource_version.as_deref().unwrap_or("")
}

/// A handler that forwards every event to a channel.
fn recorder() -> (
    HandlerFns<ConfigMap>,
    mpsc::UnboundedReceiver<Event<ConfigMap>>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    (HandlerFns::from_fn(move |e| drop(tx.send(e))), rx)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Event<ConfigMap>>) -> Event<ConfigMap> {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("event within 10s")
        .expect("handler alive")
}

/// Events as compact strings: `add a/x 1 initial`, `update a/x 1->2`,
/// `delete a/x 2`, `delete? a/x 2` (final state unknown), `resync a/x 2`.
fn describe(e: &Event<ConfigMap>) -> String {
    match e {
        Event::Add {
            object,
            is_in_initial_list,
        } => {
            format!(
                "add {} {}{}",
                key(object),
                rv(object),
                if *is_in_initial_list { " initial" } else { "" }
            )
        }
        Event::Update { old, new } if Arc::ptr_eq(old, new) => {
            format!("resync {} {}", key(new), rv(new))
        }
        Event::Update { old, new } => format!("update {} {}->{}", key(new), rv(old), rv(new)),
        Event::Delete(DeletedObject {
            object,
            final_state_unknown,
        }) => {
            format!(
                "delete{} {} {}",
                if *final_state_unknown { "?" } else { "" },
                key(object),
                rv(object)
            )
        }
    }
}

async fn take(rx: &mut mpsc::UnboundedReceiver<Event<ConfigMap>>, n: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(describe(&next(rx).await));
    }
    out
}

/// Nothing more arrives within a short grace period.
async fn assert_quiet(rx: &mut mpsc::UnboundedReceiver<Event<ConfigMap>>) {
    if let Ok(Some(e)) = tokio::time::timeout(Duration::from_millis(100), rx.recv()).await {
        panic!("unexpected event: {}", describe(&e));
    }
}

/// A handler that holds every event until the test releases a permit, then
/// forwards it. Its `on_add` awaits, as a slow async handler would.
struct Gated {
    gate: Arc<Semaphore>,
    tx: mpsc::UnboundedSender<Event<ConfigMap>>,
}

impl EventHandler<ConfigMap> for Gated {
    async fn on_add(&mut self, object: Arc<ConfigMap>, is_in_initial_list: bool) {
        if let Ok(permit) = self.gate.acquire().await {
            permit.forget();
        }
        let _ = self.tx.send(Event::Add {
            object,
            is_in_initial_list,
        });
    }

    async fn on_update(&mut self, old: Arc<ConfigMap>, new: Arc<ConfigMap>) {
        if let Ok(permit) = self.gate.acquire().await {
            permit.forget();
        }
        let _ = self.tx.send(Event::Update { old, new });
    }

    async fn on_delete(&mut self, deleted: DeletedObject<ConfigMap>) {
        if let Ok(permit) = self.gate.acquire().await {
            permit.forget();
        }
        let _ = self.tx.send(Event::Delete(deleted));
    }
}

fn gated() -> (
    Gated,
    Arc<Semaphore>,
    mpsc::UnboundedReceiver<Event<ConfigMap>>,
) {
    let gate = Arc::new(Semaphore::new(0));
    let (tx, rx) = mpsc::unbounded_channel();
    (
        Gated {
            gate: Arc::clone(&gate),
            tx,
        },
        gate,
        rx,
    )
}

/// client-go RealFIFO: watch events in order; a relist emits
/// deleted-final-state-unknown for vanished keys first, then the listed
/// objects; unchanged resourceVersions are not delivered.
#[tokio::test]
async fn events_arrive_in_real_fifo_order() {
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    let (handler, mut rx) = recorder();
    informer.add_handler(handler, None).unwrap();

    w.replace(vec![cm("a", "x", 1), cm("a", "y", 2)], "2".into());
    w.apply(Delta::Added(cm("b", "z", 3)));
    w.apply(Delta::Updated(cm("a", "x", 4)));
    w.apply(Delta::Deleted(cm("a", "y", 5)));
    w.apply(Delta::Deleted(cm("a", "never-seen", 6)));
    w.apply(Delta::Updated(cm("a", "x", 4))); // same resourceVersion: no event
    w.bookmark("7".into());
    assert_eq!(w.last_sync_resource_version().as_deref(), Some("7"));
    // Relist after a gap: b/z vanished, a/x unchanged, a/w new.
    w.replace(vec![cm("a", "x", 4), cm("a", "w", 8)], "9".into());

    assert_eq!(
        take(&mut rx, 7).await,
        [
            "add a/x 1 initial",
            "add a/y 2 initial",
            "add b/z 3",
            "update a/x 1->4",
            "delete a/y 5",
            "delete? b/z 3",
            "add a/w 8",
        ]
    );
    assert_quiet(&mut rx).await;
    assert_eq!(informer.last_sync_resource_version().as_deref(), Some("9"));
}

/// The store and every handler hold the same `Arc`, never a copy.
#[tokio::test]
async fn objects_are_shared_between_store_and_handlers() {
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    let (h1, mut rx1) = recorder();
    let (h2, mut rx2) = recorder();
    informer.add_handler(h1, None).unwrap();
    informer.add_handler(h2, None).unwrap();

    w.replace(vec![cm("a", "x", 1)], "1".into());
    w.apply(Delta::Updated(cm("a", "x", 2)));

    let stored = informer.store().get_by(Some("a"), "x").unwrap();
    for rx in [&mut rx1, &mut rx2] {
        let Event::Add { object: added, .. } = next(rx).await else {
            panic!("expected add")
        };
        let Event::Update { old, new } = next(rx).await else {
            panic!("expected update")
        };
        assert!(Arc::ptr_eq(&old, &added));
        assert!(Arc::ptr_eq(&new, &stored));
    }
}

/// A handler added while a writer is busy gets the cache as synthetic adds,
/// then every later change: each update's `old` is exactly the object the
/// handler last saw for that key (no gap), no add for a key it already has
/// (no duplicate), and its final view is the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_handler_gets_cache_then_live_events_without_gap_or_duplicate() {
    const KEYS: u64 = 50;
    const WRITES: u64 = 20_000;
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    w.replace(
        (0..KEYS).map(|k| cm("ns", &k.to_string(), k + 1)).collect(),
        KEYS.to_string(),
    );

    let writer = std::thread::spawn(move || {
        let mut present: Vec<bool> = vec![true; KEYS as usize];
        for i in 0..WRITES {
            let rv = KEYS + 1 + i;
            let k = fastrand::u64(0..KEYS);
            let obj = cm("ns", &k.to_string(), rv);
            let slot = &mut present[k as usize];
            if *slot && i % 7 == 0 {
                w.apply(Delta::Deleted(obj));
                *slot = false;
            } else {
                w.apply(if *slot {
                    Delta::Updated(obj)
                } else {
                    Delta::Added(obj)
                });
                *slot = true;
            }
            if i % 1000 == 0 {
                std::thread::yield_now();
            }
        }
        w.apply(Delta::Added(cm("ns", "done", KEYS + WRITES + 1)));
        w
    });

    // Join at different points of the stream.
    let mut receivers = Vec::new();
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let (handler, rx) = recorder();
        let registration = informer.add_handler(handler, None).unwrap();
        receivers.push((registration, rx));
    }
    let _w = writer.join().unwrap();

    for (registration, mut rx) in receivers {
        let mut view: HashMap<String, Arc<ConfigMap>> = HashMap::new();
        loop {
            match next(&mut rx).await {
                Event::Add { object, .. } => {
                    let k = key(&object);
                    assert!(
                        view.insert(k.clone(), Arc::clone(&object)).is_none(),
                        "duplicate add of {k}"
                    );
                    if k == "ns/done" {
                        break;
                    }
                }
                Event::Update { old, new } => {
                    let seen = view
                        .get(&key(&new))
                        .expect("update of a key the handler has");
                    assert!(
                        Arc::ptr_eq(seen, &old),
                        "gap before {}",
                        describe(&Event::Update { old, new })
                    );
                    view.insert(key(&new), new);
                }
                Event::Delete(d) => {
                    assert!(
                        view.remove(&key(&d.object)).is_some(),
                        "delete of a key the handler lacks"
                    );
                }
            }
        }
        assert!(registration.has_synced());
        let store = informer.store();
        assert_eq!(view.len(), store.len());
        for (k, obj) in &view {
            let stored = store.get(&k.parse().unwrap()).expect("key in store");
            assert!(Arc::ptr_eq(obj, &stored), "{k} differs from the store");
        }
    }
}

/// A late handler's replay comes newest first, so a controller that starts
/// on a warm cache (a new leader) reaches the latest changes before the
/// rest; objects whose version is not a number come last.
#[tokio::test]
async fn a_late_handler_replays_the_cache_newest_first() {
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    let mut items: Vec<Arc<ConfigMap>> = (1..=500)
        .map(|rv| cm("ns", &format!("o{rv}"), rv))
        .collect();
    fastrand::shuffle(&mut items);
    w.replace(items, "500".into());
    w.apply(Delta::Added(cm("ns", "after-the-list", 501)));
    let mut odd = (*cm("ns", "odd", 0)).clone();
    odd.metadata.resource_version = Some("not-a-number".into());
    w.apply(Delta::Added(Arc::new(odd)));
    let (handler, mut rx) = recorder();
    let _registration = informer.add_handler(handler, None).unwrap();
    let replay = take(&mut rx, 502).await;
    assert_eq!(replay[0], "add ns/after-the-list 501 initial");
    assert_eq!(replay[1], "add ns/o500 500 initial");
    assert_eq!(replay[500], "add ns/o1 1 initial");
    assert_eq!(replay[501], "add ns/odd not-a-number initial");
}

/// Per-handler resync: an update with old and new the same `Arc` (the
/// store's) for every cached object, on the handler's own period only.
#[tokio::test(start_paused = true)]
async fn resync_delivers_updates_with_old_equal_new_on_each_handlers_period() {
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    let (fast, mut fast_rx) = recorder();
    let (slow, mut slow_rx) = recorder();
    let (never, mut never_rx) = recorder();
    informer
        .add_handler(fast, Some(Duration::from_secs(10)))
        .unwrap();
    informer
        .add_handler(slow, Some(Duration::from_secs(25)))
        .unwrap();
    informer.add_handler(never, None).unwrap();
    w.replace(vec![cm("a", "x", 1), cm("a", "y", 2)], "2".into());
    for rx in [&mut fast_rx, &mut slow_rx, &mut never_rx] {
        take(rx, 2).await;
    }

    tokio::time::sleep(Duration::from_secs(11)).await;
    let mut got = take(&mut fast_rx, 2).await;
    got.sort();
    assert_eq!(got, ["resync a/x 1", "resync a/y 2"]);
    let store = informer.store();
    let stored_x = store.get_by(Some("a"), "x").unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await; // t = 21: fast again
    for _ in 0..2 {
        let Event::Update { old, new } = next(&mut fast_rx).await else {
            panic!("expected resync")
        };
        assert!(Arc::ptr_eq(&old, &new));
        if key(&new) == "a/x" {
            assert!(Arc::ptr_eq(&new, &stored_x));
        }
    }
    assert!(slow_rx.try_recv().is_err(), "slow handler resynced early");

    tokio::time::sleep(Duration::from_secs(5)).await; // t = 26: slow's first
    let mut got = take(&mut slow_rx, 2).await;
    got.sort();
    assert_eq!(got, ["resync a/x 1", "resync a/y 2"]);
    assert!(
        never_rx.try_recv().is_err(),
        "a handler without resync got one"
    );
}

/// Resync periods below client-go's minimum of one second are raised to it.
#[tokio::test(start_paused = true)]
async fn resync_period_is_at_least_one_second() {
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    let (h, mut rx) = recorder();
    informer
        .add_handler(h, Some(Duration::from_millis(10)))
        .unwrap();
    w.replace(vec![cm("a", "x", 1)], "1".into());
    take(&mut rx, 1).await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(rx.try_recv().is_err(), "resynced before 1s");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(take(&mut rx, 1).await, ["resync a/x 1"]);
}

/// `Duration::MAX` means "forever" for both the sync wait and a resync
/// period, rather than overflowing an `Instant` (which would panic the
/// caller, or silently kill the handler's task).
#[tokio::test]
async fn unbounded_durations_mean_forever() {
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    let (h, mut rx) = recorder();
    informer.add_handler(h, Some(Duration::MAX)).unwrap();
    w.replace(vec![cm("a", "x", 1)], "1".into());
    informer
        .wait_for_cache_sync(Duration::MAX)
        .await
        .expect("synced");
    assert_eq!(take(&mut rx, 1).await, ["add a/x 1 initial"]);
    w.apply(Delta::Added(cm("a", "y", 2)));
    assert_eq!(take(&mut rx, 1).await, ["add a/y 2"]);
}

/// A handler stuck on its first event delays neither the store nor the
/// other handlers; its backlog is reported and it catches up, in order.
#[tokio::test]
async fn blocked_handler_delays_neither_store_nor_other_handlers() {
    const N: u64 = 2000;
    let (informer, mut w) = SharedInformer::<ConfigMap>::with_config(
        InformerConfig::new("configmaps").backlog_warn_threshold(100),
    );
    let (stuck, gate, mut stuck_rx) = gated();
    let stuck_reg = informer.add_handler(stuck, None).unwrap();
    let (fast, mut fast_rx) = recorder();
    let fast_reg = informer.add_handler(fast, None).unwrap();

    w.replace(vec![cm("a", "first", 1)], "1".into());
    for i in 0..N {
        w.apply(Delta::Added(cm("a", &format!("o{i}"), i + 2)));
    }
    assert_eq!(informer.store().len(), N as usize + 1);
    let got = take(&mut fast_rx, N as usize + 1).await;
    assert_eq!(got[N as usize], format!("add a/o{} {}", N - 1, N + 1));
    assert!(fast_reg.wait_for_sync().await);

    assert!(
        !stuck_reg.has_synced(),
        "stuck handler has not handled the initial list"
    );
    assert!(
        stuck_reg.backlog() >= N as usize,
        "backlog {}",
        stuck_reg.backlog()
    );
    assert!(stuck_rx.try_recv().is_err());

    gate.add_permits(N as usize + 1);
    let got = take(&mut stuck_rx, N as usize + 1).await;
    assert_eq!(got[0], "add a/first 1 initial");
    for (i, line) in got[1..].iter().enumerate() {
        assert_eq!(*line, format!("add a/o{i} {}", i + 2));
    }
    assert!(stuck_reg.wait_for_sync().await);
    assert_eq!(stuck_reg.backlog(), 0);
    assert!(stuck_reg.max_backlog() >= N as usize);
}

/// After `remove` returns, no further event is handed to the handler: the
/// one in hand finishes, the queued ones are dropped.
#[tokio::test]
async fn removal_stops_delivery() {
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    let (h, mut rx) = recorder();
    let reg = informer.add_handler(h, None).unwrap();
    let (stuck, gate, mut stuck_rx) = gated();
    let stuck_reg = informer.add_handler(stuck, None).unwrap();
    assert_eq!(informer.handler_count(), 2);

    w.apply(Delta::Added(cm("a", "x", 1)));
    w.apply(Delta::Added(cm("a", "y", 2)));
    assert_eq!(take(&mut rx, 2).await, ["add a/x 1", "add a/y 2"]);
    assert!(reg.remove());
    assert!(!reg.remove(), "second remove is a no-op");
    assert!(reg.is_removed());
    w.apply(Delta::Added(cm("a", "z", 3)));
    assert_quiet(&mut rx).await;

    // The stuck handler holds a/x; a/y and a/z are queued when it is removed
    // (its backlog is what waits behind the event in hand).
    poll::eventually("the stuck handler to take a/x", async || {
        stuck_reg.backlog() == 2
    })
    .await;
    assert!(stuck_reg.remove());
    gate.add_permits(10);
    assert_eq!(take(&mut stuck_rx, 1).await, ["add a/x 1"]);
    assert_quiet(&mut stuck_rx).await;
    assert_eq!(informer.handler_count(), 0);
}

/// Informer sync = the store took in the first list; handler sync = the
/// informer synced and the handler handled every add up to it (for a late
/// handler, the replay of the cache), as client-go's SingleFileTracker.
#[tokio::test]
async fn has_synced_semantics() {
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    let (early, early_gate, mut early_rx) = gated();
    let early_reg = informer.add_handler(early, None).unwrap();
    assert!(!informer.has_synced());
    assert!(!early_reg.has_synced());

    w.replace(vec![cm("a", "x", 1), cm("a", "y", 2)], "2".into());
    assert!(informer.has_synced());
    assert!(informer.wait_for_sync().await);
    assert!(!early_reg.has_synced(), "initial adds not handled yet");
    early_gate.add_permits(1);
    take(&mut early_rx, 1).await;
    assert!(!early_reg.has_synced(), "one initial add still pending");
    early_gate.add_permits(1);
    take(&mut early_rx, 1).await;
    assert!(early_reg.wait_for_sync().await);
    assert!(early_reg.has_synced());

    // A late handler is unsynced the moment it is returned, until it has
    // handled the replay; live events do not hold it back.
    let (late, late_gate, mut late_rx) = gated();
    let late_reg = informer.add_handler(late, None).unwrap();
    assert!(!late_reg.has_synced());
    w.apply(Delta::Added(cm("a", "z", 3)));
    late_gate.add_permits(2);
    let mut replay = take(&mut late_rx, 2).await;
    replay.sort();
    assert_eq!(replay, ["add a/x 1 initial", "add a/y 2 initial"]);
    assert!(late_reg.wait_for_sync().await);
    late_gate.add_permits(1);
    assert_eq!(take(&mut late_rx, 1).await, ["add a/z 3"]);

    // A late handler on an empty synced store is synced at once.
    let (empty_informer, mut empty_w) = SharedInformer::<ConfigMap>::new("empty");
    empty_w.replace(Vec::new(), "1".into());
    let (h, _rx) = recorder();
    assert!(empty_informer.add_handler(h, None).unwrap().has_synced());
}

/// Waiting for a sync that can no longer happen returns `false`.
#[tokio::test]
async fn removal_or_shutdown_before_sync_ends_the_wait() {
    let (informer, _w) = SharedInformer::<ConfigMap>::new("configmaps");
    let (h, _rx) = recorder();
    let reg = informer.add_handler(h, None).unwrap();
    let waiting = tokio::spawn({
        let reg = reg.clone();
        async move { reg.wait_for_sync().await }
    });
    reg.remove();
    assert!(!waiting.await.unwrap());

    let waiting = tokio::spawn({
        let informer = informer.clone();
        async move { informer.wait_for_sync().await }
    });
    informer.shutdown();
    assert!(!waiting.await.unwrap());
    assert!(informer.is_stopped());
    let (h, _rx) = recorder();
    assert_eq!(
        informer.add_handler(h, None).unwrap_err(),
        Error::InformerStopped("configmaps".into())
    );
}

/// Shutting down stops every handler; the store stays readable.
#[tokio::test]
async fn shutdown_stops_handlers_and_keeps_the_store() {
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    let (h, mut rx) = recorder();
    let reg = informer.add_handler(h, None).unwrap();
    w.apply(Delta::Added(cm("a", "x", 1)));
    take(&mut rx, 1).await;
    informer.shutdown();
    assert!(reg.is_removed());
    w.apply(Delta::Added(cm("a", "y", 2)));
    assert_eq!(informer.store().len(), 2);
    assert_quiet(&mut rx).await;
}

/// Dropping every informer handle and the writer ends the handler tasks.
#[tokio::test]
async fn dropping_the_informer_ends_its_handlers() {
    let (informer, w) = SharedInformer::<ConfigMap>::new("configmaps");
    let (h, mut rx) = recorder();
    let reg = informer.add_handler(h, None).unwrap();
    drop((informer, w));
    assert!(reg.is_removed());
    // The task drops the handler (and its sender) when it ends.
    let closed = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("task ended");
    assert!(closed.is_none());
}

/// A handler that panics loses that event, not the ones after it.
#[tokio::test]
async fn panicking_handler_keeps_receiving() {
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let calls = Arc::new(AtomicUsize::new(0));
    let handler = HandlerFns::new().on_add({
        let calls = Arc::clone(&calls);
        move |o: Arc<ConfigMap>, _| {
            if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("handler bug");
            }
            let _ = tx.send(key(&o));
        }
    });
    informer.add_handler(handler, None).unwrap();
    w.apply(Delta::Added(cm("a", "x", 1)));
    w.apply(Delta::Added(cm("a", "y", 2)));
    let got = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .unwrap();
    assert_eq!(got.as_deref(), Some("a/y"));
}

/// Handlers run on tokio tasks; adding one outside a runtime is an error,
/// not a panic.
#[test]
fn add_handler_outside_a_runtime_is_an_error() {
    let (informer, _w) = SharedInformer::<ConfigMap>::new("configmaps");
    let (h, _rx) = recorder();
    assert_eq!(informer.add_handler(h, None).unwrap_err(), Error::NoRuntime);
}

/// Lister and indexes through the informer see what handlers see.
#[tokio::test]
async fn lister_and_indexes_through_the_informer() {
    let (informer, mut w) = SharedInformer::<ConfigMap>::new("configmaps");
    informer
        .add_index("rv", |cm: &ConfigMap| {
            cm.metadata.resource_version.iter().cloned().collect()
        })
        .unwrap();
    w.replace(vec![cm("a", "x", 1), cm("b", "y", 2)], "2".into());
    let lister = informer.lister();
    assert_eq!(lister.list(&Default::default()).len(), 2);
    assert_eq!(
        lister.namespace("b").get("y").map(|o| key(&o)).as_deref(),
        Some("b/y")
    );
    assert_eq!(
        informer.store().index_keys("rv", "1").unwrap(),
        [ObjectKey::namespaced("a", "x")]
    );
}

/// Read-your-own-writes rests on this: once `wait_for_resource_version`
/// returns, the store already holds that version (the version is announced
/// after the store changes, never before). Each round the reader is already
/// waiting when the writer applies the version, and checks the store the
/// moment it wakes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_is_announced_only_once_the_store_holds_it() {
    let (informer, mut writer) = SharedInformer::<ConfigMap>::new("configmaps");
    writer.replace(vec![cm("ns", "a", 1)], "1".into());
    let rounds = 20_000u64;
    let (go_tx, go_rx) = std::sync::mpsc::channel::<u64>();
    let feeder = std::thread::spawn(move || {
        while let Ok(rv) = go_rx.recv() {
            writer.apply(Delta::Updated(cm("ns", "a", rv)));
        }
    });
    let store = informer.store();
    let mut stale = 0;
    for wanted in 2..=rounds {
        let wanted_rv = wanted.to_string();
        let wait = informer.wait_for_resource_version(&wanted_rv, Duration::from_secs(10));
        tokio::pin!(wait);
        // Register the waiter before the write exists.
        assert!(futures::poll!(&mut wait).is_pending());
        go_tx.send(wanted).expect("feeder alive");
        wait.await.expect("version seen");
        let held = store.get_by(Some("ns"), "a").expect("object cached");
        if rv(&held).parse::<u64>().expect("numeric rv") < wanted {
            stale += 1;
        }
    }
    drop(go_tx);
    feeder.join().expect("feeder finished");
    assert_eq!(stale, 0, "reads older than the version waited for");
}
