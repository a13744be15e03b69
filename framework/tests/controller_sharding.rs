//! Sharded controllers against the in-process API server: replicas, each
//! with its own client and cache as separate processes would have, split a
//! collection by slots; every object is reconciled, none by two replicas at
//! once, through a join, a graceful leave and a crash; each replica's cache
//! holds only its slots, and each replica's cache of owned objects only
//! the children of the owners it holds. Run with the server serving
//! `shardSelector`; with it ignoring the parameter, so the ring shards by
//! label; and with the ring told to use `shardSelector` anyway (each
//! reflector then filters what arrives).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubeforge::cache::{slot_label_key, InformerOptions, SharedInformerFactory, Slots};
use kubeforge::controller::{Action, Context, Controller, ControllerMetrics, Error};
use kubeforge::kube_core::params::{Patch, PatchParams, PostParams};
use kubeforge::kube_core::ObjectMeta;
use kubeforge::manager::CancellationToken;
use kubeforge::reconcile::CachedClient;
use kubeforge::sharding::{Mechanism, ShardGate, Sharding};
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

fn sharding(identity: &str, mechanism: Mechanism) -> Sharding {
    Sharding {
        identity: Some(identity.to_owned()),
        mechanism,
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

fn start(client: &Client, name: &str, recorder: &Arc<Recorder>, mechanism: Mechanism) -> Replica {
    let factory = SharedInformerFactory::new(client.clone());
    let cached = CachedClient::new(client.clone(), factory);
    let metrics = ControllerMetrics::new();
    let controller = Controller::<ConfigMap>::builder(cached.clone())
        .named("configmaps")
        .metrics(metrics.clone())
        .sharded(sharding(name, mechanism))
        .owns::<Secret>()
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

/// The owned objects a replica's informer of them caches.
fn cached_children(replica: &Replica) -> BTreeSet<String> {
    let key = slot_label_key(RING);
    let informer = replica.cached.factory().metadata_informer::<Secret>(
        InformerOptions::default().holdings(replica.gate.holdings_by_label(RING, &key)),
    );
    informer
        .store()
        .list()
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect()
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
    let runs = [
        (true, Mechanism::Auto),
        (false, Mechanism::Auto),
        (false, Mechanism::ShardSelector),
    ];
    for (served, mechanism) in runs {
        let by_label = !served && mechanism == Mechanism::Auto;
        let server = ApiServer::builder()
            .sharded_list_and_watch(served)
            .start()
            .await
            .expect("server starts");
        let client = server.client().expect("client");
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
        let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
        for i in 0..OBJECTS {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("cm-{i}")),
                    ..ObjectMeta::default()
                },
                data: Some(BTreeMap::from([("generation".into(), "0".into())])),
                ..ConfigMap::default()
            };
            let cm = api
                .create(&PostParams::default(), &cm)
                .await
                .expect("create");
            // Each ConfigMap controls a Secret: its child.
            let owner = OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: format!("cm-{i}"),
                uid: cm.metadata.uid.clone().expect("uid"),
                controller: Some(true),
                ..OwnerReference::default()
            };
            let child = Secret {
                metadata: ObjectMeta {
                    name: Some(format!("child-{i}")),
                    owner_references: Some(vec![owner]),
                    ..ObjectMeta::default()
                },
                ..Secret::default()
            };
            secrets
                .create(&PostParams::default(), &child)
                .await
                .expect("create child");
        }
        let recorder = Arc::new(Recorder::default());
        let patience = Duration::from_secs(30);

        // Two replicas split everything; a third joins.
        let a = start(&client, "a", &recorder, mechanism);
        let b = start(&client, "b", &recorder, mechanism);
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
        let c = start(&client, "c", &recorder, mechanism);
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
        // Each holds the children of its owners and nothing else.
        eventually(
            "each cache of children to hold its owners' children",
            patience,
            || {
                [&a, &b, &c].iter().all(|r| {
                    let owners = cached_names(r);
                    let children: BTreeSet<String> = cached_children(r)
                        .into_iter()
                        .map(|c| c.replace("child-", "cm-"))
                        .collect();
                    !owners.is_empty() && owners == children
                })
            },
        )
        .await;
        // Children carry their owner's slot; owners carry theirs only when
        // the ring shards them by label.
        let key = slot_label_key(RING);
        let owners = api.list(&Default::default()).await.expect("list");
        let slot_of_owner: HashMap<String, u32> = owners
            .items
            .iter()
            .map(|cm| (cm.metadata.uid.clone().unwrap(), Slots::slot_of(cm)))
            .collect();
        for cm in &owners.items {
            let label = Slots::slot_labelled(cm, &key);
            let expected = by_label.then(|| Slots::slot_of(cm));
            assert_eq!(label, expected, "served={served} {:?}", cm.metadata.name);
        }
        for child in secrets.list(&Default::default()).await.expect("list").items {
            let owner = &child.metadata.owner_references.as_ref().unwrap()[0].uid;
            assert_eq!(
                Slots::slot_labelled(&child, &key),
                Some(slot_of_owner[owner]),
                "{:?}",
                child.metadata.name
            );
        }
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
            "served={served} {mechanism:?}: reconciled twice at once: {overlaps:?}"
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
