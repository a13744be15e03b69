//! The shared informer factory and its reflectors against the in-process
//! API server: sharing (one watch, one copy of each object), late handlers,
//! index look-ups after real writes, resync, read-your-own-writes,
//! namespaces and selectors, transforms, dynamic and metadata-only
//! informers, streaming lists, named sync failures, and cached objects'
//! lists at their lengths.

#[path = "../apiserver/tests/poll/mod.rs"]
mod poll;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube_core::params::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_core::{ApiResource, DynamicObject, ObjectMeta, PartialObjectMeta, ResourceExt};
use kubeforge::cache::{
    strip_managed_fields, Event, HandlerFns, InformerOptions, ObjectKey, SharedInformer,
    SharedInformerFactory, SyncError, Transform,
};
use kubeforge::testing::{ApiServer, ApiServerExt};
use kubeforge::{Api, Client, Config};
use poll::eventually;
use serde_json::json;
use tokio::sync::mpsc;

const SYNC: Duration = Duration::from_secs(30);

async fn server() -> (ApiServer, Client) {
    let server = ApiServer::start().await.expect("server starts");
    let client = server.client().expect("client");
    (server, client)
}

async fn namespace(client: &Client, name: &str) {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
}

fn configmap(name: &str, labels: &[(&str, &str)], value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("v".to_owned(), value.to_owned())])),
        ..Default::default()
    }
}

async fn create(client: &Client, ns: &str, cm: &ConfigMap) -> ConfigMap {
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), cm)
        .await
        .expect("configmap created")
}

async fn set_label(client: &Client, ns: &str, name: &str, key: &str, value: &str) -> ConfigMap {
    let patch = json!({"metadata": {"labels": {key: value}}});
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("configmap patched")
}

async fn delete(client: &Client, ns: &str, name: &str) {
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .delete(name, &DeleteParams::default())
        .await
        .expect("configmap deleted");
}

fn sorted_keys<K: kube_core::Resource>(objs: &[Arc<K>]) -> Vec<String> {
    let mut keys: Vec<String> = objs
        .iter()
        .map(|o| ObjectKey::of(o.as_ref()).to_string())
        .collect();
    keys.sort();
    keys
}

async fn synced(factory: &SharedInformerFactory) {
    for (id, result) in factory.wait_for_cache_sync(SYNC).await {
        result.unwrap_or_else(|e| panic!("{id} did not sync: {e}"));
    }
}

/// Events as compact strings, for order assertions.
fn describe(e: &Event<ConfigMap>) -> String {
    let key = |o: &ConfigMap| ObjectKey::of(o).to_string();
    match e {
        Event::Add { object, .. } => format!("add {}", key(object)),
        Event::Update { old, new } if Arc::ptr_eq(old, new) => format!("resync {}", key(new)),
        Event::Update { new, .. } => format!("update {}", key(new)),
        Event::Delete(d) => format!("delete {}", key(&d.object)),
    }
}

#[tokio::test]
async fn three_consumers_share_one_informer_one_watch_and_one_copy_of_each_object() {
    let (server, client) = server().await;
    create(&client, "default", &configmap("a", &[], "1")).await;
    create(&client, "default", &configmap("b", &[], "2")).await;

    let factory = SharedInformerFactory::new(client.clone());
    // Three "controllers", each asking for ConfigMaps on its own.
    let first = factory.informer::<ConfigMap>();
    let second = factory.clone().informer::<ConfigMap>();
    factory.start();
    let third = factory.informer::<ConfigMap>();
    synced(&factory).await;

    assert_eq!(factory.informer_ids().len(), 1, "one informer for the type");
    // Synced once the list is in; the watch opens right after.
    let faults = server.faults();
    eventually("the watch to open", async || {
        faults.open_watches_for("", "configmaps") == 1
    })
    .await;

    let (tx, mut rx) = mpsc::unbounded_channel();
    third
        .add_handler(
            HandlerFns::new().on_add(move |cm: Arc<ConfigMap>, _| drop(tx.send(cm))),
            None,
        )
        .unwrap();
    let handed = tokio::time::timeout(SYNC, rx.recv())
        .await
        .unwrap()
        .unwrap();
    for name in ["a", "b"] {
        let a = first.store().get_by(Some("default"), name).unwrap();
        let b = second.store().get_by(Some("default"), name).unwrap();
        let c = third.lister().get_by(Some("default"), name).unwrap();
        assert!(
            Arc::ptr_eq(&a, &b) && Arc::ptr_eq(&b, &c),
            "one copy of {name}"
        );
    }
    let stored = first.store().get(&ObjectKey::of(handed.as_ref())).unwrap();
    assert!(Arc::ptr_eq(&stored, &handed), "handlers get the cached Arc");

    // A different namespace or selector is a different informer.
    let scoped =
        factory.informer_with(InformerOptions::<ConfigMap>::default().namespace("default"));
    let labelled = factory.informer_with(InformerOptions::<ConfigMap>::default().labels("app=web"));
    synced(&factory).await;
    assert_eq!(factory.informer_ids().len(), 3);
    eventually("three watches", async || {
        faults.open_watches_for("", "configmaps") == 3
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(faults.open_watches_for("", "configmaps"), 3, "and no more");
    assert_eq!(scoped.store().len(), 2);
    assert_eq!(labelled.store().len(), 0);
    factory.shutdown();
}

#[tokio::test]
async fn late_handler_gets_existing_objects_then_live_events() {
    let (_server, client) = server().await;
    namespace(&client, "team").await;
    for name in ["a", "b", "c"] {
        create(&client, "team", &configmap(name, &[], "1")).await;
    }
    let factory = SharedInformerFactory::builder(client.clone())
        .namespace("team")
        .build();
    let informer = factory.informer::<ConfigMap>();
    factory.start();
    synced(&factory).await;

    let (tx, mut rx) = mpsc::unbounded_channel();
    let registration = informer
        .add_handler(HandlerFns::from_fn(move |e| drop(tx.send(e))), None)
        .unwrap();
    let mut initial = Vec::new();
    for _ in 0..3 {
        let e = tokio::time::timeout(SYNC, rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(matches!(
            e,
            Event::Add {
                is_in_initial_list: true,
                ..
            }
        ));
        initial.push(describe(&e));
    }
    initial.sort();
    assert_eq!(initial, ["add team/a", "add team/b", "add team/c"]);
    assert!(registration.wait_for_sync().await);

    create(&client, "team", &configmap("d", &[], "1")).await;
    set_label(&client, "team", "a", "x", "y").await;
    delete(&client, "team", "b").await;
    let mut live = Vec::new();
    for _ in 0..3 {
        let e = tokio::time::timeout(SYNC, rx.recv())
            .await
            .unwrap()
            .unwrap();
        live.push(describe(&e));
    }
    assert_eq!(live, ["add team/d", "update team/a", "delete team/b"]);
    factory.shutdown();
}

#[tokio::test]
async fn index_look_ups_follow_adds_updates_and_deletes_through_the_server() {
    let (_server, client) = server().await;
    namespace(&client, "shop").await;
    let factory = SharedInformerFactory::new(client.clone());
    let informer = factory.informer::<ConfigMap>();
    informer
        .add_index("tier", |cm: &ConfigMap| {
            cm.labels().get("tier").cloned().into_iter().collect()
        })
        .unwrap();
    factory.start();
    synced(&factory).await;
    let store = informer.store();
    let tier = |value: &str| sorted_keys(&store.by_index("tier", value).unwrap());

    create(
        &client,
        "shop",
        &configmap("front", &[("tier", "web")], "1"),
    )
    .await;
    create(
        &client,
        "default",
        &configmap("edge", &[("tier", "web")], "1"),
    )
    .await;
    let db = create(&client, "shop", &configmap("pg", &[("tier", "db")], "1")).await;
    informer
        .wait_for_resource_version(&db.resource_version().unwrap(), SYNC)
        .await
        .unwrap();
    assert_eq!(tier("web"), ["default/edge", "shop/front"]);
    assert_eq!(tier("db"), ["shop/pg"]);
    assert_eq!(
        sorted_keys(&store.list_namespace("shop")),
        ["shop/front", "shop/pg"]
    );

    let moved = set_label(&client, "shop", "front", "tier", "db").await;
    informer
        .wait_for_resource_version(&moved.resource_version().unwrap(), SYNC)
        .await
        .unwrap();
    assert_eq!(tier("web"), ["default/edge"]);
    assert_eq!(tier("db"), ["shop/front", "shop/pg"]);

    delete(&client, "shop", "pg").await;
    eventually("the delete to reach the index", async || {
        tier("db") == ["shop/front"]
    })
    .await;
    assert_eq!(
        store.index_keys("tier", "db").unwrap(),
        [ObjectKey::namespaced("shop", "front")]
    );
    let mut values = store.list_index_func_values("tier").unwrap();
    values.sort();
    assert_eq!(values, ["db", "web"]);
    factory.shutdown();
}

#[tokio::test]
async fn resync_delivers_updates_with_old_equal_new() {
    let (_server, client) = server().await;
    create(&client, "default", &configmap("a", &[], "1")).await;
    let factory = SharedInformerFactory::builder(client.clone())
        .default_resync(Duration::from_secs(1))
        .build();
    let informer = factory.informer::<ConfigMap>();
    assert_eq!(informer.default_resync(), Some(Duration::from_secs(1)));
    factory.start();
    synced(&factory).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    informer
        .add_event_handler(HandlerFns::from_fn(move |e| drop(tx.send(e))))
        .unwrap();
    let first = tokio::time::timeout(SYNC, rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(describe(&first), "add default/a");
    let resync = tokio::time::timeout(SYNC, rx.recv())
        .await
        .unwrap()
        .unwrap();
    match resync {
        Event::Update { old, new } => {
            assert!(
                Arc::ptr_eq(&old, &new),
                "a resync hands the same object twice"
            );
            let cached = informer.store().get_by(Some("default"), "a").unwrap();
            assert!(Arc::ptr_eq(&new, &cached));
        }
        other => panic!("expected a resync, got {}", describe(&other)),
    }
    factory.shutdown();
}

#[tokio::test]
async fn wait_for_resource_version_gives_read_your_own_writes() {
    let (_server, client) = server().await;
    let factory = SharedInformerFactory::new(client.clone());
    let informer = factory.informer::<ConfigMap>();
    factory.start();
    synced(&factory).await;
    for i in 0..20 {
        let written = create(&client, "default", &configmap(&format!("cm-{i}"), &[], "1")).await;
        let rv = written.resource_version().unwrap();
        informer.wait_for_resource_version(&rv, SYNC).await.unwrap();
        let cached = informer
            .store()
            .get_by(Some("default"), &format!("cm-{i}"))
            .expect("a cached read after the wait sees the write");
        assert_eq!(cached.resource_version(), Some(rv));
    }
    // A version from the future times out, naming what was seen.
    let err = informer
        .wait_for_resource_version("999999999", Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kubeforge::cache::Error::ResourceVersionTimeout { wanted, seen: Some(_), .. } if wanted == "999999999"),
        "{err}"
    );
    factory.shutdown();
}

#[tokio::test]
async fn transform_runs_before_caching_and_is_fixed_by_the_first_creator() {
    let (_server, client) = server().await;
    create(&client, "default", &configmap("a", &[], "1")).await;
    let factory = SharedInformerFactory::new(client.clone());
    let informer = factory.informer_with(InformerOptions::<ConfigMap>::default().transform(
        strip_managed_fields().then(Transform::new(|mut cm: ConfigMap| {
            cm.data = None;
            cm
        })),
    ));
    // A later request with another transform gets the same informer.
    let again = factory
        .informer_with(InformerOptions::<ConfigMap>::default().transform(Transform::new(|cm| cm)));
    factory.start();
    synced(&factory).await;
    let cached = again.store().get_by(Some("default"), "a").unwrap();
    assert!(Arc::ptr_eq(
        &cached,
        &informer.store().get_by(Some("default"), "a").unwrap()
    ));
    assert_eq!(cached.metadata.managed_fields, None);
    assert_eq!(cached.data, None);
    factory.shutdown();
}

#[tokio::test]
async fn dynamic_and_metadata_only_informers() {
    let (_server, client) = server().await;
    let mut cm = configmap("a", &[("app", "web")], "hello");
    cm.metadata.annotations = Some(BTreeMap::from([("note".to_owned(), "x".to_owned())]));
    create(&client, "default", &cm).await;
    let factory = SharedInformerFactory::new(client.clone());
    let ar = ApiResource::erase::<ConfigMap>(&());
    let dynamic = factory.dynamic_informer(&ar, InformerOptions::default());
    let metadata = factory.metadata_informer::<ConfigMap>(InformerOptions::default());
    let same_metadata = factory.metadata_informer::<ConfigMap>(InformerOptions::default());
    let typed = factory.informer::<ConfigMap>();
    factory.start();
    synced(&factory).await;
    assert_eq!(factory.informer_ids().len(), 3);

    let d: Arc<DynamicObject> = dynamic.store().get_by(Some("default"), "a").unwrap();
    assert_eq!(d.data["data"]["v"], "hello");
    let m: Arc<PartialObjectMeta<ConfigMap>> =
        metadata.store().get_by(Some("default"), "a").unwrap();
    assert!(Arc::ptr_eq(
        &m,
        &same_metadata.store().get_by(Some("default"), "a").unwrap()
    ));
    assert_eq!(m.labels().get("app").map(String::as_str), Some("web"));
    assert_eq!(m.annotations().get("note").map(String::as_str), Some("x"));
    assert_eq!(
        m.types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata"),
        "the server sent metadata only"
    );
    assert_eq!(typed.store().len(), 1);

    let updated = set_label(&client, "default", "a", "app", "db").await;
    let rv = updated.resource_version().unwrap();
    metadata.wait_for_resource_version(&rv, SYNC).await.unwrap();
    dynamic.wait_for_resource_version(&rv, SYNC).await.unwrap();
    let m = metadata.store().get_by(Some("default"), "a").unwrap();
    assert_eq!(m.labels().get("app").map(String::as_str), Some("db"));
    factory.shutdown();
}

#[tokio::test]
async fn streaming_list_mode_syncs_and_keeps_watching() {
    let (server, client) = server().await;
    for i in 0..30 {
        create(&client, "default", &configmap(&format!("s-{i}"), &[], "1")).await;
    }
    let factory = SharedInformerFactory::builder(client.clone())
        .streaming_list(true)
        .build();
    let informer = factory.informer::<ConfigMap>();
    factory.start();
    synced(&factory).await;
    assert_eq!(informer.store().len(), 30);
    // The streaming list's watch goes on as the informer's watch.
    assert_eq!(server.faults().open_watches_for("", "configmaps"), 1);
    let written = create(&client, "default", &configmap("late", &[], "1")).await;
    informer
        .wait_for_resource_version(&written.resource_version().unwrap(), SYNC)
        .await
        .unwrap();
    assert_eq!(informer.store().len(), 31);
    factory.shutdown();
}

#[tokio::test]
async fn relist_after_compaction_delivers_vanished_objects_as_deletions() {
    let (server, client) = server().await;
    namespace(&client, "gap").await;
    for name in ["keep", "gone", "recreated"] {
        create(&client, "gap", &configmap(name, &[], "1")).await;
    }
    let factory = SharedInformerFactory::builder(client.clone())
        .backoff(kubeforge::cache::Backoff::new(
            Duration::from_millis(10),
            Duration::from_millis(100),
        ))
        .build();
    let informer = factory.informer::<ConfigMap>();
    let deletes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&deletes);
    informer
        .add_handler(
            HandlerFns::new().on_delete(move |d: kubeforge::cache::DeletedObject<ConfigMap>| {
                seen.lock().unwrap().push((
                    ObjectKey::of(d.object.as_ref()).to_string(),
                    d.object.uid(),
                    d.final_state_unknown,
                ));
            }),
            None,
        )
        .unwrap();
    factory.start();
    synced(&factory).await;
    let old_uid = informer
        .store()
        .get_by(Some("gap"), "recreated")
        .unwrap()
        .uid();

    // Changes while the watch is down, then the history is compacted: the
    // reflector's resourceVersion has expired, so it must relist.
    let faults = server.faults();
    faults.fail_next(
        100,
        kubeforge::testing::RequestMatch::verb("watch").resource("configmaps"),
        kubeforge::testing::Failure::InternalError,
    );
    faults.close_watches();
    delete(&client, "gap", "gone").await;
    delete(&client, "gap", "recreated").await;
    let new = create(&client, "gap", &configmap("recreated", &[], "2")).await;
    faults.compact();
    faults.clear();
    informer
        .wait_for_resource_version(&new.resource_version().unwrap(), SYNC)
        .await
        .unwrap();
    eventually("both deletions delivered", async || {
        deletes.lock().unwrap().len() == 2
    })
    .await;
    let got: BTreeSet<_> = deletes.lock().unwrap().iter().cloned().collect();
    // Learnt from the relist (final state unknown), not from watch events:
    // otherwise the faults missed the gap and the relist went untested.
    assert!(got.iter().all(|(_, _, unknown)| *unknown), "{got:?}");
    let gone_uid = got
        .iter()
        .find(|(k, _, _)| k == "gap/gone")
        .and_then(|(_, u, _)| u.clone());
    assert!(
        gone_uid.is_some(),
        "the vanished object's last known state: {got:?}"
    );
    assert!(
        got.contains(&("gap/recreated".to_owned(), old_uid, true)),
        "{got:?}"
    );
    assert_eq!(
        sorted_keys(&informer.store().list_namespace("gap")),
        ["gap/keep", "gap/recreated"]
    );
    assert_eq!(
        informer
            .store()
            .get_by(Some("gap"), "recreated")
            .unwrap()
            .uid(),
        new.uid()
    );
    factory.shutdown();
}

#[tokio::test]
async fn wrong_credentials_fail_the_sync_at_once_naming_the_informer() {
    let (server, _client) = server().await;
    let mut config: Config = server.config();
    config.auth =
        kubeforge::client::Auth::Bearer(kubeforge::client::SecretString::new("not-the-token"));
    let client = Client::new(config).unwrap();
    let factory = SharedInformerFactory::builder(client)
        .namespace("team-a")
        .build();
    let _secrets = factory.informer::<Secret>();
    factory.start();
    // The timeout is long: only an immediate, named failure passes quickly,
    // and the result says which it was.
    let results = factory.wait_for_cache_sync(Duration::from_secs(120)).await;
    assert_eq!(results.len(), 1);
    let (id, result) = &results[0];
    assert_eq!(id.to_string(), r#"secrets in namespace "team-a""#);
    match result {
        Err(e @ SyncError::Unauthorized { informer, message }) => {
            assert_eq!(informer, id);
            assert!(!message.is_empty());
            assert!(
                e.to_string()
                    .starts_with(r#"unauthorized: cannot list secrets in namespace "team-a""#),
                "{e}"
            );
        }
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    factory.shutdown();
}

#[tokio::test]
async fn a_forbidden_list_fails_the_sync_at_once_naming_the_informer() {
    use kubeforge::testing::{Failure, RequestMatch};
    let (server, client) = server().await;
    // Every list of secrets is denied, as RBAC without `list` would.
    server.faults().fail_next(
        usize::MAX,
        RequestMatch::verb("list").resource("secrets"),
        Failure::Forbidden,
    );
    let factory = SharedInformerFactory::builder(client)
        .namespace("team-a")
        .build();
    let _secrets = factory.informer::<Secret>();
    factory.start();
    let started = std::time::Instant::now();
    let results = factory.wait_for_cache_sync(Duration::from_secs(120)).await;
    let (id, result) = &results[0];
    match result {
        Err(e @ SyncError::Forbidden { informer, message }) => {
            assert_eq!(informer, id);
            assert!(
                message.contains(r#"cannot list resource "secrets""#),
                "{message}"
            );
            assert!(
                e.to_string()
                    .starts_with(r#"forbidden: cannot list secrets in namespace "team-a""#),
                "{e}"
            );
        }
        other => panic!("expected Forbidden, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "reported at once, not at the timeout"
    );
    factory.shutdown();
}

#[tokio::test]
async fn unstarted_and_shut_down_informers_report_why() {
    let (_server, client) = server().await;
    let factory = SharedInformerFactory::new(client);
    let informer = factory.informer::<ConfigMap>();
    let results = factory.wait_for_cache_sync(Duration::from_secs(60)).await;
    assert!(matches!(results[0].1, Err(SyncError::NotStarted { .. })));
    factory.shutdown();
    assert!(informer.is_stopped());
    let late: SharedInformer<Secret> = factory.informer::<Secret>();
    assert!(
        late.is_stopped(),
        "informers asked for after shutdown never start"
    );
    let results = factory.wait_for_cache_sync(Duration::from_secs(60)).await;
    assert!(results.iter().all(|(_, r)| r.is_err()));
}

#[tokio::test]
async fn server_state_and_cache_agree_after_a_burst_of_writes() {
    let (_server, client) = server().await;
    let factory = SharedInformerFactory::builder(client.clone())
        .page_size(7)
        .build();
    let informer = factory.informer::<ConfigMap>();
    for i in 0..40 {
        create(&client, "default", &configmap(&format!("p-{i}"), &[], "1")).await;
    }
    factory.start();
    synced(&factory).await;
    let mut last = String::new();
    for i in 0..40 {
        if i % 3 == 0 {
            delete(&client, "default", &format!("p-{i}")).await;
        } else {
            last = set_label(&client, "default", &format!("p-{i}"), "n", "1")
                .await
                .resource_version()
                .unwrap();
        }
    }
    informer
        .wait_for_resource_version(&last, SYNC)
        .await
        .unwrap();
    let api = Api::<ConfigMap>::all(client.clone());
    let server_state: BTreeMap<String, String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|o| (ObjectKey::of(o).to_string(), o.resource_version().unwrap()))
        .collect();
    eventually("the cache to match the server", async || {
        let cached: BTreeMap<String, String> = informer
            .store()
            .list()
            .iter()
            .map(|o| {
                (
                    ObjectKey::of(o.as_ref()).to_string(),
                    o.resource_version().unwrap(),
                )
            })
            .collect();
        cached == server_state
    })
    .await;
    factory.shutdown();
}

#[test]
fn handles_are_cheap_to_clone_and_shareable_across_tasks() {
    fn assert_shareable<T: Clone + Send + Sync + 'static>() {}
    assert_shareable::<SharedInformerFactory>();
    assert_shareable::<SharedInformer<ConfigMap>>();
    assert_shareable::<SharedInformer<DynamicObject>>();
    assert_shareable::<SharedInformer<PartialObjectMeta<ConfigMap>>>();
    assert_shareable::<InformerOptions<ConfigMap>>();
    assert_shareable::<SyncError>();
}

#[tokio::test]
async fn a_real_rbac_denial_fails_the_sync_at_once_naming_the_informer() {
    use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
    use kubeforge::testing::config_for;
    let (server, admin) = server().await;
    // The service account may read ConfigMaps in `default`, not Secrets.
    let role = Role {
        metadata: ObjectMeta {
            name: Some("reader".into()),
            ..Default::default()
        },
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["configmaps".into()]),
            verbs: vec!["list".into(), "watch".into()],
            ..Default::default()
        }]),
    };
    Api::<Role>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &role)
        .await
        .expect("role created");
    let binding = RoleBinding {
        metadata: ObjectMeta {
            name: Some("reader".into()),
            ..Default::default()
        },
        role_ref: serde_json::from_value::<RoleRef>(
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}),
        )
        .expect("role ref"),
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: "reader".into(),
            namespace: Some("default".into()),
            api_group: None,
        }]),
    };
    Api::<RoleBinding>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding created");
    let creds = server
        .add_service_account("default", "reader")
        .expect("service account");
    let client = Client::try_from(config_for(&server, &creds, "default")).expect("client");

    let factory = SharedInformerFactory::builder(client)
        .namespace("default")
        .build();
    let _configmaps = factory.informer::<ConfigMap>();
    let _secrets = factory.informer::<Secret>();
    factory.start();
    let started = std::time::Instant::now();
    let results = factory.wait_for_cache_sync(Duration::from_secs(120)).await;
    let by_kind = |plural: &str| {
        results
            .iter()
            .find(|(id, _)| id.plural == plural)
            .unwrap_or_else(|| panic!("no {plural} informer in {results:?}"))
    };
    assert!(by_kind("configmaps").1.is_ok(), "{results:?}");
    const DENIAL: &str = r#"secrets is forbidden: User "system:serviceaccount:default:reader" cannot list resource "secrets" in API group "" in the namespace "default""#;
    match &by_kind("secrets").1 {
        Err(e @ SyncError::Forbidden { message, .. }) => {
            assert_eq!(message, DENIAL);
            assert_eq!(
                e.to_string(),
                format!(r#"forbidden: cannot list secrets in namespace "default": {DENIAL}"#)
            );
        }
        other => panic!("expected Forbidden, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "reported at once, not at the timeout"
    );
    // The server's audit names the same missing rule.
    let audit = server.permission_audit(creds.user());
    let missing: Vec<_> = audit
        .denied
        .iter()
        .map(|r| {
            (
                r.namespace.as_deref(),
                r.rule.resources.clone(),
                r.rule.verbs.clone(),
            )
        })
        .collect();
    assert_eq!(
        missing,
        [(
            Some("default"),
            vec!["secrets".to_owned()],
            vec!["list".to_owned()]
        )],
        "{audit}"
    );
    factory.shutdown();
}

/// The lists inside a cached object are at their lengths, through both of
/// the reflector's decoders: the initial list and a watch event, for the
/// typed object and for the untyped one of a dynamic informer. (A `Vec`
/// decoded by plain serde_json keeps room for four where there is one.)
#[tokio::test]
async fn cached_objects_keep_no_spare_room_in_their_lists() {
    use k8s_openapi::api::apps::v1::Deployment;

    let (_server, client) = server().await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), "default");
    let deployment = |env: &[&str]| -> Deployment {
        let env: Vec<_> = env
            .iter()
            .map(|n| json!({"name": n, "value": "1"}))
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{
                        "name": "web", "image": "web:1", "env": env,
                        "ports": [{"containerPort": 8080}],
                    }]},
                },
            },
        }))
        .expect("a Deployment")
    };
    deployments
        .create(&PostParams::default(), &deployment(&["A"]))
        .await
        .expect("created");
    let factory = SharedInformerFactory::new(client.clone());
    let informer = factory.informer::<Deployment>();
    let dynamic = factory.dynamic_informer(
        &ApiResource::erase::<Deployment>(&()),
        InformerOptions::default(),
    );
    factory.start();
    synced(&factory).await;

    // (length, capacity) of the container's env and ports.
    let lists = |d: &Deployment| {
        let spec = d.spec.template.spec.as_ref().expect("pod spec");
        let c = &spec.containers[0];
        let env = c.env.as_ref().expect("env");
        let ports = c.ports.as_ref().expect("ports");
        [(env.len(), env.capacity()), (ports.len(), ports.capacity())]
    };
    let listed = informer
        .store()
        .get_by(Some("default"), "web")
        .expect("cached");
    assert_eq!(lists(&listed), [(1, 1), (1, 1)], "from the list");
    let untyped_lists = |d: &DynamicObject| {
        let c = &d.data["spec"]["template"]["spec"]["containers"];
        let sizes = |v: &serde_json::Value| {
            let a = v.as_array().expect("an array");
            (a.len(), a.capacity())
        };
        [sizes(&c[0]["env"]), sizes(&c[0]["ports"]), sizes(c)]
    };
    let untyped = || {
        dynamic
            .store()
            .get_by(Some("default"), "web")
            .expect("cached")
    };
    assert_eq!(
        untyped_lists(&untyped()),
        [(1, 1), (1, 1), (1, 1)],
        "untyped, from the list"
    );

    let patch = json!({"spec": {"template": {"spec": {"containers": [{
        "name": "web", "image": "web:1", "env": [{"name": "A", "value": "1"},
            {"name": "B", "value": "1"}, {"name": "C", "value": "1"}],
        "ports": [{"containerPort": 8080}],
    }]}}}});
    let written = deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patched");
    let rv = written.resource_version().expect("rv");
    informer.wait_for_resource_version(&rv, SYNC).await.unwrap();
    let watched = informer
        .store()
        .get_by(Some("default"), "web")
        .expect("cached");
    assert_eq!(lists(&watched), [(3, 3), (1, 1)], "from a watch event");
    dynamic.wait_for_resource_version(&rv, SYNC).await.unwrap();
    assert_eq!(
        untyped_lists(&untyped()),
        [(3, 3), (1, 1), (1, 1)],
        "untyped, from a watch event"
    );
    factory.shutdown();
}

/// Keys an informer holds.
fn held(informer: &SharedInformer<ConfigMap>) -> BTreeSet<String> {
    sorted_keys(&informer.store().list()).into_iter().collect()
}

/// KEP-5866 shards: informers of complementary shards hold disjoint parts
/// of the collection that together are all of it, through creates and
/// deletes, whether the server serves `shardSelector` or ignores it (then
/// the reflector's own check keeps the other shard out).
#[tokio::test]
async fn informers_of_complementary_shards_split_a_collection_with_and_without_server_support() {
    use kubeforge::cache::Shard;
    for served in [true, false] {
        let server = ApiServer::builder()
            .sharded_list_and_watch(served)
            .start()
            .await
            .expect("server starts");
        let client = server.client().expect("client");
        for i in 0..30 {
            create(&client, "default", &configmap(&format!("cm-{i}"), &[], "1")).await;
        }
        let factory = SharedInformerFactory::new(client.clone());
        let shard = |i| InformerOptions::<ConfigMap>::default().shard(Shard::of(i, 2).unwrap());
        let first = factory.informer_with(shard(0));
        let second = factory.informer_with(shard(1));
        let all = factory.informer::<ConfigMap>();
        factory.start();
        synced(&factory).await;
        assert_eq!(factory.informer_ids().len(), 3, "one informer per shard");
        let split = || {
            let (a, b, every) = (held(&first), held(&second), held(&all));
            let union: BTreeSet<String> = a.union(&b).cloned().collect();
            (a.is_disjoint(&b) && union == every && !a.is_empty() && !b.is_empty())
                .then_some(every.len())
        };
        let listed = split().unwrap_or_else(|| panic!("served={served}: after the list"));
        for i in 30..40 {
            create(&client, "default", &configmap(&format!("cm-{i}"), &[], "1")).await;
        }
        for i in 0..5 {
            delete(&client, "default", &format!("cm-{i}")).await;
        }
        eventually(
            "the shards to follow 10 creates and 5 deletes",
            async || split() == Some(listed + 5),
        )
        .await;
        factory.shutdown();
        server.shutdown().await;
    }
}
