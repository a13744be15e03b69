//! Sharded controllers against the in-process API server: replicas, each
//! with its own client and cache as separate processes would have, split a
//! collection by slots; every object is reconciled, none by two replicas at
//! once, through a join, a graceful leave and a crash; each replica's cache
//! holds only its slots. Run with the server serving `shardSelector` and
//! with it ignoring the parameter (the reflector then filters).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubeforge::cache::{InformerOptions, SharedInformerFactory, Slots};
use kubeforge::controller::{Action, Context, Controller, ControllerMetrics, Error};
use kubeforge::kube_core::params::{Patch, PatchParams, PostParams};
use kubeforge::kube_core::ObjectMeta;
use kubeforge::manager::CancellationToken;
use kubeforge::reconcile::CachedClient;
use kubeforge::sharding::{ShardGate, Sharding};
use kubeforge::testing::{ApiServer, ApiServerExt};
use kubeforge::{Api, Client};
use prometheus_client::registry::Registry;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::{sleep, Instant};

const NS: &str = "default";
const RING: &str = "configmap-shards";
const OBJECTS: usize = 120;

/// Who is reconciling what right now, and what each replica reconciled.
#[derive(Default)]
struct Recorder {
    running: Mutex<HashMap<String, String>>,
    overlaps: Mutex<Vec<String>>,
    seen: Mutex<BTreeMap<String, BTreeMap<String, String>>>,
}

/// Removes its entry when the reconcile ends, however it ends (a crashed
/// replica's reconciles are dropped mid-way).
struct Running<'a> {
    recorder: &'a Recorder,
    key: String,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.recorder.running.lock().unwrap().remove(&self.key);
    }
}

impl Recorder {
    fn start(&self, key: &str, replica: &str, data: &str) -> Running<'_> {
        let mut running = self.running.lock().unwrap();
        if let Some(other) = running.insert(key.to_owned(), replica.to_owned()) {
            self.overlaps
                .lock()
                .unwrap()
                .push(format!("{key}: {replica} while {other}"));
        }
        self.seen
            .lock()
            .unwrap()
            .entry(key.to_owned())
            .or_default()
            .insert(data.to_owned(), replica.to_owned());
        Running {
            recorder: self,
            key: key.to_owned(),
        }
    }

    /// The objects reconciled at generation `data`.
    fn reconciled_at(&self, data: &str) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.values().filter(|by| by.contains_key(data)).count()
    }
}

struct Replica {
    name: String,
    metrics: ControllerMetrics,
    gate: ShardGate,
    cached: CachedClient,
    stop: CancellationToken,
    task: JoinHandle<Result<(), Error>>,
}

fn sharding(identity: &str) -> Sharding {
    Sharding {
        identity: Some(identity.to_owned()),
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1500),
        retry_period: Duration::from_millis(200),
        ..Sharding::ring(RING)
    }
}

async fn reconcile(
    cm: Arc<ConfigMap>,
    ctx: Arc<Context<(String, Arc<Recorder>)>>,
) -> Result<Action, Error> {
    let (replica, recorder) = ctx.data();
    let data = cm
        .data
        .as_ref()
        .and_then(|d| d.get("generation"))
        .cloned()
        .unwrap_or_default();
    let name = cm.metadata.name.as_deref().unwrap_or("");
    let _running = recorder.start(name, replica, &data);
    // An I/O-bound reconcile; a tenth of them slower than a handoff takes,
    // so a new holder that did not wait for the old one would overlap.
    let wait = if name.ends_with('7') { 600 } else { 20 };
    sleep(Duration::from_millis(wait)).await;
    Ok(Action::done())
}

fn start(client: &Client, name: &str, recorder: &Arc<Recorder>) -> Replica {
    let factory = SharedInformerFactory::new(client.clone());
    let cached = CachedClient::new(client.clone(), factory);
    let metrics = ControllerMetrics::new();
    let controller = Controller::<ConfigMap>::builder(cached.clone())
        .named("configmaps")
        .metrics(metrics.clone())
        .sharded(sharding(name))
        .concurrency(8)
        .reconcile(reconcile, (name.to_owned(), Arc::clone(recorder)));
    let gate = controller.shard_gate().expect("sharded").clone();
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(stop.clone()));
    Replica {
        name: name.to_owned(),
        metrics,
        gate,
        cached,
        stop,
        task,
    }
}

/// Whether the replicas' active slots are disjoint, in equal shares, and
/// cover every slot.
fn settled(replicas: &[&Replica]) -> bool {
    let mut union = Slots::NONE;
    let share = Slots::ALL.len() / replicas.len() as u32;
    for r in replicas {
        let active = r.gate.active();
        if active.len() < share {
            return false;
        }
        if !union.intersect(active).is_empty() {
            return false;
        }
        union = union.union(active);
    }
    union == Slots::ALL
}

async fn eventually(what: &str, deadline: Duration, mut check: impl FnMut() -> bool) {
    let until = Instant::now() + deadline;
    while !check() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        sleep(Duration::from_millis(50)).await;
    }
}

async fn touch_all(client: &Client, generation: &str) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    for i in 0..OBJECTS {
        let patch = json!({"data": {"generation": generation}});
        api.patch(
            &format!("cm-{i}"),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .expect("patch");
    }
}

fn exposition(metrics: &ControllerMetrics) -> String {
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
    text
}

/// Changes objects round and round until `stop`; returns how many.
async fn churn_until(client: Client, stop: CancellationToken) -> usize {
    let api: Api<ConfigMap> = Api::namespaced(client, NS);
    let mut changed = 0;
    while !stop.is_cancelled() {
        let patch = json!({"data": {"generation": format!("churn-{changed}")}});
        let name = format!("cm-{}", changed % OBJECTS);
        if api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .is_ok()
        {
            changed += 1;
        }
    }
    changed
}

/// The objects a replica's primary informer caches.
fn cached_names(replica: &Replica) -> BTreeSet<String> {
    let informer = replica.cached.informer_with::<ConfigMap>(
        InformerOptions::default().holdings(replica.gate.holdings(RING)),
    );
    informer
        .store()
        .list()
        .iter()
        .filter_map(|cm| cm.metadata.name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_split_the_objects_and_hand_slots_over_through_join_leave_and_crash() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    for served in [true, false] {
        let server = ApiServer::builder()
            .sharded_list_and_watch(served)
            .start()
            .await
            .expect("server starts");
        let client = server.client().expect("client");
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
        for i in 0..OBJECTS {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("cm-{i}")),
                    ..ObjectMeta::default()
                },
                data: Some(BTreeMap::from([("generation".into(), "0".into())])),
                ..ConfigMap::default()
            };
            api.create(&PostParams::default(), &cm)
                .await
                .expect("create");
        }
        let recorder = Arc::new(Recorder::default());
        let patience = Duration::from_secs(30);

        // Two replicas split everything; a third joins.
        let a = start(&client, "a", &recorder);
        let b = start(&client, "b", &recorder);
        eventually("two replicas to split the slots", patience, || {
            settled(&[&a, &b])
        })
        .await;
        eventually("every object reconciled once", patience, || {
            recorder.reconciled_at("0") == OBJECTS
        })
        .await;
        // c joins while every object keeps changing, so slots move with
        // reconciles of them in flight.
        let churn = CancellationToken::new();
        let churning = tokio::spawn(churn_until(client.clone(), churn.clone()));
        let c = start(&client, "c", &recorder);
        eventually("the third to take its share", patience, || {
            settled(&[&a, &b, &c])
        })
        .await;
        churn.cancel();
        assert!(
            churning.await.expect("joins") > 0,
            "objects changed during the join"
        );
        for r in [&a, &b, &c] {
            let share = r.gate.active().len();
            assert!((42..=43).contains(&share), "{}: {share} slots", r.name);
        }
        // Each cache holds its slots' objects and nothing else.
        eventually("each cache to hold exactly its slots", patience, || {
            let caches: Vec<BTreeSet<String>> = [&a, &b, &c].map(cached_names).into();
            let total: usize = caches.iter().map(BTreeSet::len).sum();
            let union: BTreeSet<&String> = caches.iter().flatten().collect();
            total == OBJECTS && union.len() == OBJECTS
        })
        .await;
        touch_all(&client, "1").await;
        eventually("every change reconciled by the three", patience, || {
            recorder.reconciled_at("1") == OBJECTS
        })
        .await;

        // a leaves gracefully, amid changes: b and c take its slots at once.
        let churn = CancellationToken::new();
        let churning = tokio::spawn(churn_until(client.clone(), churn.clone()));
        a.stop.cancel();
        a.task.await.expect("joins").expect("a stops cleanly");
        eventually("b and c to take a's slots", patience, || settled(&[&b, &c])).await;
        churn.cancel();
        churning.await.expect("joins");
        touch_all(&client, "2").await;
        eventually("every change reconciled by the two", patience, || {
            recorder.reconciled_at("2") == OBJECTS
        })
        .await;

        // c crashes (its tasks dropped, its Lease left to expire).
        c.task.abort();
        let crashed = Instant::now();
        touch_all(&client, "3").await;
        eventually("b alone to hold every slot", patience, || settled(&[&b])).await;
        let took = crashed.elapsed();
        assert!(
            took < Duration::from_secs(6),
            "took {took:?}: within two lease durations and a bit"
        );
        eventually("every change reconciled by the survivor", patience, || {
            recorder.reconciled_at("3") == OBJECTS
        })
        .await;
        let overlaps = recorder.overlaps.lock().unwrap().clone();
        assert!(
            overlaps.is_empty(),
            "served={served}: reconciled twice at once: {overlaps:?}"
        );

        // The ring's Leases show it.
        let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
            Api::namespaced(client.clone(), NS);
        let ring = leases.get(RING).await.expect("the ring's Lease");
        let summary = ring.metadata.annotations.unwrap_or_default()
            [kubeforge::sharding::SUMMARY_ANNOTATION]
            .clone();
        assert_eq!(summary, "b=128", "served={served}");
        let left = leases.get_opt(&format!("{RING}-a")).await.expect("get");
        assert!(left.is_none(), "a deleted its Lease when it left");

        // And b's metrics: every slot, one member, every object cached,
        // and the slots it took over from a and from c.
        eventually("b's metrics to show it alone", patience, || {
            let text = exposition(&b.metrics);
            let series = |name: &str| {
                text.lines()
                    .find(|l| l.starts_with(&format!("{name}{{controller=\"configmaps\"}}")))
                    .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            };
            series("kubeforge_shard_slots") == Some(128)
                && series("kubeforge_shard_members") == Some(1)
                && series("kubeforge_shard_objects") == Some(OBJECTS as u64)
                && series("kubeforge_shard_slots_taken_total").is_some_and(|n| n >= 128)
                && series("kubeforge_shard_slots_given_up_total").is_some()
        })
        .await;

        b.stop.cancel();
        b.task.await.expect("joins").expect("b stops cleanly");
        server.shutdown().await;
    }
}
