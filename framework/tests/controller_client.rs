//! The cached client against the in-process API server: reads from the
//! shared informers (started and waited for on first use), label and
//! field-index selection, the errors a read can name, writes and their
//! read-your-own-writes guarantee (a cached read right after a write never
//! returns an older resourceVersion, checked over many rounds), and the
//! create-or-update and delete flows.

mod client_support;

use std::sync::Arc;
use std::time::Duration;

use client_support::{handler, json as respond, Fixture, Recorded};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kubeforge::cache::SharedInformerFactory;
use kubeforge::kube_core::params::{DeleteParams, Patch, PatchParams, PostParams};
use kubeforge::kube_core::ObjectMeta;
use kubeforge::reconcile::finalizer::Event;
use kubeforge::reconcile::{CachedClient, Error, ListOptions, OperationResult};
use kubeforge::testing::{ApiServer, ApiServerExt, Failure, RequestMatch};
use kubeforge::{Api, Client};
use serde_json::json;

const NS: &str = "default";

fn cm(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        ..Default::default()
    }
}

async fn started() -> (ApiServer, Client, CachedClient) {
    let server = ApiServer::start().await.expect("server starts");
    let client = server.client().expect("client");
    let factory = SharedInformerFactory::new(client.clone());
    factory.start();
    let cached = CachedClient::builder(client.clone(), factory)
        .sync_timeout(Duration::from_secs(20))
        .build();
    (server, client, cached)
}

fn rv<K: kubeforge::kube_core::Resource>(obj: &K) -> u64 {
    obj.meta()
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .expect("a numeric resourceVersion")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_read_after_a_write_never_returns_an_older_version() {
    let (_server, _client, cached) = started().await;
    let created = cached
        .create(&cm("counter", &[], &[("n", "0")]))
        .await
        .unwrap();
    let first = cached.get::<ConfigMap>(NS, "counter").await.unwrap();
    assert_eq!(rv(&*first), rv(&created));

    for n in 1..=150 {
        let written: ConfigMap = if n % 2 == 0 {
            let patch = Patch::Merge(json!({"data": {"n": n.to_string()}}));
            cached
                .patch(NS, "counter", &PatchParams::default(), &patch)
                .await
                .unwrap()
        } else {
            let mut next =
                ConfigMap::clone(&*cached.get::<ConfigMap>(NS, "counter").await.unwrap());
            next.data
                .get_or_insert_with(Default::default)
                .insert("n".into(), n.to_string());
            cached.replace(&next).await.unwrap()
        };
        // Immediately: no sleep, no retry.
        let read = cached.get::<ConfigMap>(NS, "counter").await.unwrap();
        assert!(
            rv(&*read) >= rv(&written),
            "round {n}: the cache returned resourceVersion {} after a write at {}",
            rv(&*read),
            rv(&written)
        );
        assert_eq!(read.data.as_ref().unwrap()["n"], n.to_string(), "round {n}");
        let listed = cached
            .list::<ConfigMap>(NS, &ListOptions::default())
            .await
            .unwrap();
        let listed = listed
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some("counter"))
            .unwrap();
        assert!(rv(&**listed) >= rv(&written), "round {n}: list is behind");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_the_plain_client_can_be_observed() {
    let (_server, client, cached) = started().await;
    let api: Api<ConfigMap> = Api::namespaced(client, NS);
    cached.create(&cm("outside", &[], &[])).await.unwrap();
    for n in 0..50 {
        let patch = Patch::Merge(json!({"data": {"n": n.to_string()}}));
        let written = api
            .patch("outside", &PatchParams::default(), &patch)
            .await
            .unwrap();
        cached.observe_write(&written);
        let read = cached.get::<ConfigMap>(NS, "outside").await.unwrap();
        assert!(rv(&*read) >= rv(&written), "round {n}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_read_of_a_type_starts_its_informer_and_waits_for_it() {
    let (_server, client, cached) = started().await;
    let secrets: Api<Secret> = Api::namespaced(client, NS);
    for i in 0..5 {
        let mut s = Secret::default();
        s.metadata.name = Some(format!("s{i}"));
        secrets.create(&PostParams::default(), &s).await.unwrap();
    }
    assert!(cached.factory().informer_ids().is_empty());
    let all = cached
        .list::<Secret>(NS, &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(all.len(), 5, "the first read sees the synced cache");
    assert_eq!(cached.factory().informer_ids().len(), 1);
    let again = cached.get::<Secret>(NS, "s3").await.unwrap();
    assert!(
        Arc::ptr_eq(
            &again,
            all.iter()
                .find(|s| s.metadata.name.as_deref() == Some("s3"))
                .unwrap()
        ),
        "reads share the cached Arc, no copy"
    );
    // managedFields are stripped before caching.
    assert!(again.metadata.managed_fields.is_none());
    assert_eq!(
        cached.factory().informer_ids().len(),
        1,
        "one informer per type"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_objects_and_unstarted_caches_are_named_errors() {
    let (_server, client, cached) = started().await;
    let err = cached.get::<ConfigMap>(NS, "absent").await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert_eq!(
        err.to_string(),
        r#"configmaps "default/absent" not found in the cache"#
    );
    assert!(cached
        .get_opt::<ConfigMap>(NS, "absent")
        .await
        .unwrap()
        .is_none());

    let idle = CachedClient::new(client.clone(), SharedInformerFactory::new(client));
    let err = idle.get::<ConfigMap>(NS, "x").await.unwrap_err();
    assert!(matches!(err, Error::CacheNotStarted { .. }), "{err}");
    assert!(err.to_string().contains("was not started"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_select_by_labels_and_field_indexes() {
    let (_server, _client, cached) = started().await;
    cached
        .index_field::<ConfigMap, _>("data.tier", |c: &ConfigMap| {
            c.data
                .as_ref()
                .and_then(|d| d.get("tier"))
                .cloned()
                .into_iter()
                .collect()
        })
        .unwrap();
    let again = cached.index_field::<ConfigMap, _>("data.tier", |_: &ConfigMap| vec![]);
    assert!(matches!(again, Err(Error::Cache(_))), "{again:?}");

    for (name, app, tier) in [
        ("a", "web", "front"),
        ("b", "web", "back"),
        ("c", "db", "back"),
    ] {
        cached
            .create(&cm(name, &[("app", app)], &[("tier", tier)]))
            .await
            .unwrap();
    }
    let names = |objs: Vec<Arc<ConfigMap>>| {
        let mut names: Vec<String> = objs
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        names.sort();
        names
    };
    let web = cached
        .list::<ConfigMap>(
            NS,
            &ListOptions::default().matching_labels([("app", "web")]),
        )
        .await
        .unwrap();
    assert_eq!(names(web), ["a", "b"]);
    let back = cached
        .list::<ConfigMap>(
            NS,
            &ListOptions::default().matching_field("data.tier", "back"),
        )
        .await
        .unwrap();
    assert_eq!(names(back), ["b", "c"]);
    let web_back = cached
        .list::<ConfigMap>(
            "",
            &ListOptions::default()
                .matching_labels([("app", "web")])
                .matching_field("data.tier", "back"),
        )
        .await
        .unwrap();
    assert_eq!(names(web_back), ["b"]);
    let err = cached
        .list::<ConfigMap>(
            NS,
            &ListOptions::default().matching_field("data.color", "red"),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::FieldNotIndexed { .. }), "{err}");
    let metadata = cached
        .list_metadata::<ConfigMap>(NS, &ListOptions::default().matching_labels([("app", "db")]))
        .await
        .unwrap();
    assert_eq!(metadata.len(), 1);
    assert_eq!(metadata[0].metadata.name.as_deref(), Some("c"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_scoped_cache_refuses_other_namespaces() {
    let server = ApiServer::start().await.unwrap();
    let client = server.client().unwrap();
    let factory = SharedInformerFactory::builder(client.clone())
        .namespace(NS)
        .build();
    factory.start();
    let cached = CachedClient::new(client, factory);
    let err = cached
        .get::<ConfigMap>("kube-system", "x")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"namespace "kube-system" is not cached: the cache holds namespace "default" only"#
    );
    assert!(cached
        .get_opt::<ConfigMap>(NS, "x")
        .await
        .unwrap()
        .is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_or_update_reports_what_it_did() {
    let (_server, _client, cached) = started().await;
    let set = |c: &mut ConfigMap| {
        c.data
            .get_or_insert_with(Default::default)
            .insert("k".into(), "v".into());
    };
    let (result, created) = cached
        .create_or_update::<ConfigMap, _>(NS, "cou", set)
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Created);
    let (result, same) = cached
        .create_or_update::<ConfigMap, _>(NS, "cou", set)
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Unchanged);
    assert_eq!(rv(&same), rv(&created));
    let (result, updated) = cached
        .create_or_update::<ConfigMap, _>(NS, "cou", |c| {
            c.data
                .get_or_insert_with(Default::default)
                .insert("k".into(), "w".into());
        })
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Updated);
    assert!(rv(&updated) > rv(&created));
    let renamed = cached
        .create_or_update::<ConfigMap, _>(NS, "cou", |c| c.metadata.name = Some("other".into()))
        .await
        .unwrap_err();
    assert!(matches!(renamed, Error::MutatedKey { .. }), "{renamed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_answers_the_held_object_or_nothing() {
    let (_server, _client, cached) = started().await;
    let mut held = cm("held", &[], &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cached.create(&held).await.unwrap();
    cached.create(&cm("gone", &[], &[])).await.unwrap();

    let still = cached
        .delete::<ConfigMap>(NS, "held", &DeleteParams::default())
        .await
        .unwrap()
        .expect("finalizers hold it");
    assert!(still.metadata.deletion_timestamp.is_some());
    // The cache has seen the deletion mark at once.
    let read = cached.get::<ConfigMap>(NS, "held").await.unwrap();
    assert!(read.metadata.deletion_timestamp.is_some());

    assert!(cached
        .delete::<ConfigMap>(NS, "gone", &DeleteParams::default())
        .await
        .unwrap()
        .is_none());
    let missing = cached
        .delete::<ConfigMap>(NS, "gone", &DeleteParams::default())
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
}

/// Server-side apply on the wire, against a stub that echoes the body (the
/// in-process server's apply support is tested in its own suite).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_and_apply_status_send_forced_apply_patches_as_the_field_manager() {
    let fixture = Fixture::start(handler(|r: Recorded| async move {
        let mut body: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
        body["metadata"]["namespace"] = json!(NS);
        body["metadata"]["resourceVersion"] = json!("7");
        respond(200, body)
    }))
    .await;
    let client = Client::try_from(fixture.config("token")).unwrap();
    let cached = CachedClient::builder(client.clone(), SharedInformerFactory::new(client))
        .field_manager("memcached-operator")
        .build();
    let mut desired = Deployment::default();
    desired.metadata.name = Some("web".into());
    desired.metadata.namespace = Some(NS.into());
    desired.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
    desired.metadata.managed_fields = Some(vec![Default::default()]);

    let applied = cached.apply(&desired).await.unwrap();
    assert_eq!(applied.metadata.resource_version.as_deref(), Some("7"));
    let sent = fixture.last();
    assert_eq!(sent.method, "PATCH");
    assert_eq!(
        sent.path_and_query(),
        "/apis/apps/v1/namespaces/default/deployments/web?force=true&fieldManager=memcached-operator"
    );
    assert_eq!(
        sent.header("content-type"),
        Some("application/apply-patch+yaml")
    );
    let body: serde_json::Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(body["apiVersion"], "apps/v1");
    assert_eq!(body["kind"], "Deployment");
    assert_eq!(
        body["metadata"],
        json!({"name": "web", "namespace": "default", "labels": {"app": "web"}})
    );

    let status = DeploymentStatus {
        replicas: Some(3),
        ..Default::default()
    };
    cached.apply_status(&desired, &status).await.unwrap();
    let sent = fixture.last();
    assert_eq!(
        sent.path_and_query(),
        "/apis/apps/v1/namespaces/default/deployments/web/status?force=true&fieldManager=memcached-operator"
    );
    let body: serde_json::Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(
        body,
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "status": {"replicas": 3}})
    );
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

/// Holds the informers back: their watches end, and every relist and
/// rewatch is refused, so the cache keeps what it has.
fn hold_back_the_cache(server: &ApiServer) {
    for verb in ["list", "watch"] {
        server.faults().fail_next(
            usize::MAX,
            RequestMatch::verb(verb),
            Failure::ServiceUnavailable {
                retry_after_seconds: 1,
            },
        );
    }
    server.faults().close_watches();
}

/// A cached read right after a write is never older than the write, or,
/// when the cache cannot catch up in time, fails as stale: never the older
/// object.
async fn assert_not_older<K>(cached: &CachedClient, written: u64, name: &str, what: &str)
where
    K: kubeforge::reconcile::CachedObject,
{
    match cached.get::<K>(NS, name).await {
        Ok(read) => assert!(
            rv(&*read) >= written,
            "{what}: the cache returned resourceVersion {} after a write at {written}",
            rv(&*read)
        ),
        Err(e) => assert!(matches!(e, Error::StaleCache(_)), "{what}: {e}"),
    }
}

/// The write helpers a reconcile is offered (server-side apply,
/// create-or-update, the finalizer flow, status patches and updates) all keep
/// read-your-own-writes: with the cache held back, a cached read right
/// after each one waits for the cache (and here reports it stale) instead
/// of returning the object as it was before the write. (The `Api`-based
/// free functions of these names that `kubeforge::controller` offered
/// returned the older object for all four; they are now deprecated, and
/// live on as `reconcile::uncached`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_write_helpers_keep_read_your_own_writes() {
    let server = ApiServer::start().await.expect("server starts");
    let client = server.client().expect("client");
    let factory = SharedInformerFactory::new(client.clone());
    factory.start();
    let cached = CachedClient::builder(client.clone(), factory)
        .sync_timeout(Duration::from_secs(20))
        .read_your_writes_timeout(Duration::from_millis(300))
        .build();
    let web = cached.create(&web_deployment()).await.unwrap();
    let settings = cached.create(&cm("settings", &[], &[])).await.unwrap();
    // Both informers synced and current.
    assert_eq!(
        rv(&*cached.get::<Deployment>(NS, "web").await.unwrap()),
        rv(&web)
    );
    assert_eq!(
        rv(&*cached.get::<ConfigMap>(NS, "settings").await.unwrap()),
        rv(&settings)
    );

    hold_back_the_cache(&server);

    // create_or_update reads through the cache first, so it goes first:
    // after any write the cache is stale for ConfigMaps, and its read would
    // rightly fail.
    let (_, updated) = cached
        .create_or_update::<ConfigMap, _>(NS, "settings", |c| {
            c.data
                .get_or_insert_with(Default::default)
                .insert("mode".into(), "fast".into());
        })
        .await
        .unwrap();
    assert_not_older::<ConfigMap>(&cached, rv(&updated), "settings", "create_or_update").await;

    let finalizer_added = Arc::new(std::sync::Mutex::new(0));
    let seen = Arc::clone(&finalizer_added);
    cached
        .finalizer(
            "example.com/cleanup",
            Arc::new(updated),
            |event| async move {
                if let Event::Apply(obj) = event {
                    *seen.lock().unwrap() = rv(&*obj);
                }
                Ok::<_, Never>(())
            },
        )
        .await
        .unwrap();
    let added = *finalizer_added.lock().unwrap();
    assert!(added > 0, "the flow applied");
    assert_not_older::<ConfigMap>(&cached, added, "settings", "finalizer").await;

    let applied = cached
        .apply(&cm("applied", &[], &[("k", "v")]))
        .await
        .unwrap();
    assert_not_older::<ConfigMap>(&cached, rv(&applied), "applied", "apply").await;

    let status = DeploymentStatus {
        observed_generation: Some(1),
        ..Default::default()
    };
    let patched = cached.patch_status(&web, &status).await.unwrap();
    assert_not_older::<Deployment>(&cached, rv(&patched), "web", "patch_status").await;

    let mut replaced = patched.clone();
    replaced.status = Some(DeploymentStatus::default());
    let replaced = cached.replace_status(&replaced).await.unwrap();
    assert!(rv(&replaced) > rv(&patched));
    assert_not_older::<Deployment>(&cached, rv(&replaced), "web", "replace_status").await;
}

fn web_deployment() -> Deployment {
    let mut web = Deployment::default();
    web.metadata.name = Some("web".into());
    web.metadata.namespace = Some(NS.into());
    web.spec = serde_json::from_value(json!({
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
    }))
    .unwrap();
    web
}

/// `replace_status` is controller-runtime's `Status().Update`: a PUT to
/// `/status` that keeps the sent status whole, so a list left out is
/// cleared (a merge patch that omits it leaves it in place), conditional
/// on the resourceVersion sent (409 when stale), and recorded so the next
/// cached read sees the write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_status_clears_what_a_merge_patch_cannot_and_is_read_back() {
    let (_server, client, cached) = started().await;
    let web = cached.create(&web_deployment()).await.unwrap();
    let with_conditions = DeploymentStatus {
        replicas: Some(2),
        conditions: Some(vec![serde_json::from_value(json!({
            "type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"
        }))
        .unwrap()]),
        ..Default::default()
    };
    let patched = cached.patch_status(&web, &with_conditions).await.unwrap();

    // A merge patch without `conditions` leaves them in place.
    let without_conditions = DeploymentStatus {
        replicas: Some(1),
        ..Default::default()
    };
    let patched = cached
        .patch_status(&patched, &without_conditions)
        .await
        .unwrap();
    let status = patched.status.clone().unwrap();
    assert_eq!(status.replicas, Some(1));
    assert_eq!(status.conditions.as_ref().map(Vec::len), Some(1));

    // A status PUT of the read object without them clears them.
    let mut cleared = patched.clone();
    cleared.status = Some(without_conditions);
    cleared.spec.replicas = Some(7); // not status: ignored
    let replaced = cached.replace_status(&cleared).await.unwrap();
    assert!(rv(&replaced) > rv(&patched));
    let status = replaced.status.clone().unwrap();
    assert_eq!(status.replicas, Some(1));
    assert_eq!(status.conditions, None);
    assert_eq!(
        replaced.spec.replicas, patched.spec.replicas,
        "a status write leaves the spec alone"
    );
    let read = cached.get::<Deployment>(NS, "web").await.unwrap();
    assert!(rv(&*read) >= rv(&replaced));
    assert_eq!(read.status.as_ref().unwrap().conditions, None);

    // The resourceVersion read makes it conditional.
    let err = cached.replace_status(&cleared).await.unwrap_err();
    assert!(err.is_conflict(), "a stale status update: {err}");
    let stored = Api::<Deployment>::namespaced(client.clone(), NS)
        .get("web")
        .await
        .unwrap();
    assert_eq!(rv(&stored), rv(&replaced), "the conflict wrote nothing");

    // The uncached function sends the same request.
    let api = Api::<Deployment>::namespaced(client, NS);
    let mut again = stored.clone();
    again.status.as_mut().unwrap().replicas = Some(3);
    let written = kubeforge::reconcile::uncached::replace_status(&api, &again)
        .await
        .unwrap();
    assert_eq!(written.status.unwrap().replicas, Some(3));
    let err = kubeforge::reconcile::uncached::replace_status(&api, &again)
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "a stale uncached status update: {err}");
}
