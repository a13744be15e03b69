//! `Api<K>`, watch streaming, pagination and discovery against a real HTTPS
//! fixture on 127.0.0.1. The fixture records each request, so these tests
//! check the exact method, path, query, headers and body the client sends,
//! and how it reads the answers.

mod client_support;

use std::time::Duration;

use client_support::{handler, json, status, streamed, text, Fixture, Recorded};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kubeforge::client::discovery::Discovery;
use kubeforge::client::Either;
use kubeforge::kube_core::discovery::{ApiResource, Scope};
use kubeforge::kube_core::params::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, VersionMatch,
    WatchParams,
};
use kubeforge::kube_core::{DynamicObject, GroupVersionKind, PartialObjectMeta, WatchEvent};
use kubeforge::{Api, Client};
use serde_json::json as j;

fn cm(name: &str, rv: &str) -> serde_json::Value {
    j!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}, "data": {"k": "v"}})
}

/// Answers like a tiny API server for ConfigMaps in `ns`.
async fn configmaps(r: Recorded) -> http::Response<client_support::Body> {
    let path = r.uri.path().to_owned();
    let query = r.uri.query().unwrap_or("").to_owned();
    match (r.method.as_str(), path.as_str()) {
        ("GET", "/api/v1/namespaces/ns/configmaps")
            if query.contains("continue=") || query.contains("limit=") =>
        {
            // Three pages of two, keyed by the continue token.
            let (items, next) = if query.contains("continue=page2") {
                (vec![cm("c", "10"), cm("d", "10")], "page3")
            } else if query.contains("continue=page3") {
                (vec![cm("e", "10")], "")
            } else {
                (vec![cm("a", "10"), cm("b", "10")], "page2")
            };
            json(
                200,
                j!({"apiVersion": "v1", "kind": "ConfigMapList",
                "metadata": {"resourceVersion": "10", "continue": next}, "items": items}),
            )
        }
        ("GET", "/api/v1/namespaces/ns/configmaps") => json(
            200,
            j!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": "10"}, "items": [cm("a", "1")]}),
        ),
        ("GET", "/api/v1/namespaces/ns/configmaps/a") => {
            if r.header("accept")
                .is_some_and(|a| a.contains("as=PartialObjectMetadata"))
            {
                json(
                    200,
                    j!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                    "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "1", "labels": {"x": "y"}}}),
                )
            } else {
                json(200, cm("a", "1"))
            }
        }
        ("POST", "/api/v1/namespaces/ns/configmaps") => {
            let mut body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            body["metadata"]["resourceVersion"] = "2".into();
            json(201, body)
        }
        ("PUT", "/api/v1/namespaces/ns/configmaps/a")
        | ("PATCH", "/api/v1/namespaces/ns/configmaps/a") => json(200, cm("a", "3")),
        ("DELETE", "/api/v1/namespaces/ns/configmaps/a") => json(
            200,
            j!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": "a", "kind": "configmaps", "uid": "u1"}}),
        ),
        ("DELETE", "/api/v1/namespaces/ns/configmaps/held") => {
            // A finalizer holds it: the server answers with the object.
            let mut obj = cm("held", "4");
            obj["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z".into();
            obj["metadata"]["finalizers"] = j!(["example.com/cleanup"]);
            json(200, obj)
        }
        ("DELETE", "/api/v1/namespaces/ns/configmaps") => json(
            200,
            j!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {}, "items": [cm("a", "5")]}),
        ),
        ("GET", "/api/v1/namespaces/ns/configmaps/exists") => {
            status(409, "AlreadyExists", "exists")
        }
        _ => text(404, "404 page not found\n"),
    }
}

fn query_pairs(r: &Recorded) -> Vec<(String, String)> {
    form_urlencoded_pairs(r.uri.query().unwrap_or(""))
}

fn form_urlencoded_pairs(q: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(q.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn setup() -> (Fixture, Client) {
    let server = Fixture::start(handler(configmaps)).await;
    let client = Client::try_from(server.config("t")).unwrap();
    (server, client)
}

#[tokio::test]
async fn crud_paths_methods_bodies_and_params() {
    let (server, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "ns");
    assert_eq!(api.resource_url(), "/api/v1/namespaces/ns/configmaps");

    let a = api.get("a").await.unwrap();
    assert_eq!(a.metadata.resource_version.as_deref(), Some("1"));
    assert_eq!(
        server.last().path_and_query(),
        "/api/v1/namespaces/ns/configmaps/a"
    );

    // list: every list parameter reaches the server.
    let lp = ListParams::default()
        .labels("app=web,tier!=db")
        .fields("metadata.name=a")
        .at("7")
        .matching(VersionMatch::NotOlderThan);
    let list = api.list(&lp).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.metadata.resource_version.as_deref(), Some("10"));
    let q = query_pairs(&server.last());
    for p in pairs(&[
        ("labelSelector", "app=web,tier!=db"),
        ("fieldSelector", "metadata.name=a"),
        ("resourceVersion", "7"),
        ("resourceVersionMatch", "NotOlderThan"),
    ]) {
        assert!(q.contains(&p), "{p:?} missing from {q:?}");
    }
    let exact = ListParams::default()
        .at("7")
        .matching(VersionMatch::Exact)
        .limit(2);
    api.list(&exact).await.unwrap();
    let q = query_pairs(&server.last());
    assert!(
        q.contains(&("resourceVersionMatch".into(), "Exact".into())),
        "{q:?}"
    );
    assert!(q.contains(&("limit".into(), "2".into())), "{q:?}");

    // create with fieldManager and dryRun.
    let new: ConfigMap = serde_json::from_value(cm("new", "")).unwrap();
    let mut new = new;
    new.metadata.resource_version = None;
    let pp = PostParams {
        dry_run: true,
        field_manager: Some("kubeforge-test".into()),
    };
    let created = api.create(&pp, &new).await.unwrap();
    assert_eq!(created.metadata.resource_version.as_deref(), Some("2"));
    let req = server.last();
    assert_eq!(req.method, "POST");
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(
        query_pairs(&req),
        pairs(&[("dryRun", "All"), ("fieldManager", "kubeforge-test")])
    );
    let sent: ConfigMap = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(sent.metadata.name.as_deref(), Some("new"));

    // replace.
    api.replace("a", &PostParams::default(), &a).await.unwrap();
    let req = server.last();
    assert_eq!(
        (req.method.as_str(), req.uri.path()),
        ("PUT", "/api/v1/namespaces/ns/configmaps/a")
    );
    let sent: ConfigMap = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(sent.metadata.resource_version.as_deref(), Some("1"));

    // every patch kind, with its content type and params.
    type Case = (
        Patch<serde_json::Value>,
        PatchParams,
        &'static str,
        Vec<(String, String)>,
    );
    let cases: Vec<Case> = vec![
        (
            Patch::Merge(j!({"data": {"k": "w"}})),
            PatchParams::default(),
            "application/merge-patch+json",
            vec![],
        ),
        (
            Patch::Strategic(j!({"data": {"k": "w"}})),
            PatchParams::default().validation_strict(),
            "application/strategic-merge-patch+json",
            pairs(&[("fieldValidation", "Strict")]),
        ),
        (
            Patch::Apply(j!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "w"}})),
            PatchParams::apply("kubeforge").force(),
            "application/apply-patch+yaml",
            pairs(&[("force", "true"), ("fieldManager", "kubeforge")]),
        ),
        (
            Patch::Apply(j!({"apiVersion": "v1", "kind": "ConfigMap"})),
            PatchParams::apply("kubeforge").dry_run(),
            "application/apply-patch+yaml",
            pairs(&[("dryRun", "All"), ("fieldManager", "kubeforge")]),
        ),
    ];
    for (patch, pp, content_type, params) in cases {
        api.patch("a", &pp, &patch).await.unwrap();
        let req = server.last();
        assert_eq!(req.method, "PATCH");
        assert_eq!(req.header("content-type"), Some(content_type));
        assert_eq!(query_pairs(&req), params, "{content_type}");
    }
    let json_patch: json_patch::Patch =
        serde_json::from_value(j!([{"op": "replace", "path": "/data/k", "value": "z"}])).unwrap();
    api.patch("a", &PatchParams::default(), &Patch::Json::<()>(json_patch))
        .await
        .unwrap();
    let req = server.last();
    assert_eq!(
        req.header("content-type"),
        Some("application/json-patch+json")
    );
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(body[0]["op"], "replace");

    // delete: Status or the object, with preconditions and propagation.
    let dp = DeleteParams::foreground()
        .grace_period(0)
        .preconditions(Preconditions {
            resource_version: Some("3".into()),
            uid: Some("u1".into()),
        });
    match api.delete("a", &dp).await.unwrap() {
        Either::Right(status) => {
            assert!(status.is_success());
            assert_eq!(status.details.unwrap().uid, "u1");
        }
        Either::Left(obj) => panic!("expected a Status, got {obj:?}"),
    }
    let body: serde_json::Value = serde_json::from_slice(&server.last().body).unwrap();
    assert_eq!(body["propagationPolicy"], "Foreground");
    assert_eq!(body["gracePeriodSeconds"], 0);
    assert_eq!(body["preconditions"]["resourceVersion"], "3");
    match api.delete("held", &DeleteParams::default()).await.unwrap() {
        Either::Left(obj) => assert!(obj.metadata.deletion_timestamp.is_some()),
        Either::Right(s) => panic!("expected the object, got {s:?}"),
    }

    // delete_collection with selectors.
    let deleted = api
        .delete_collection(
            &DeleteParams::background(),
            &ListParams::default().labels("app=web"),
        )
        .await
        .unwrap();
    assert_eq!(deleted.left().unwrap().items.len(), 1);
    let req = server.last();
    assert_eq!(
        (req.method.as_str(), req.uri.path()),
        ("DELETE", "/api/v1/namespaces/ns/configmaps")
    );
    assert_eq!(query_pairs(&req), pairs(&[("labelSelector", "app=web")]));

    // A name kube-core rejects never reaches the server.
    let before = server.recorded().len();
    assert!(matches!(
        api.get("").await,
        Err(kubeforge::Error::Request(_))
    ));
    assert_eq!(server.recorded().len(), before);
}

#[tokio::test]
async fn cluster_scoped_all_namespaces_dynamic_and_subresource_paths() {
    let server = Fixture::start(handler(|r| async move {
        let p = r.uri.path();
        if p.ends_with("/scale") {
            json(200, j!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {"name": "web"}, "spec": {"replicas": 3}, "status": {"replicas": 2}}))
        } else if p.contains("/deployments/") {
            json(200, j!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}))
        } else if p.starts_with("/apis/ex.com/") {
            let ns = if p.contains("/namespaces/") { Some("ns") } else { None };
            json(200, j!({"apiVersion": "ex.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": ns}, "spec": {"size": 1}}))
        } else if p.ends_with("/namespaces/team") {
            json(200, j!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}))
        } else {
            json(200, j!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": []}))
        }
    }))
    .await;
    let client = Client::try_from(server.config("t")).unwrap();

    let namespaces: Api<Namespace> = Api::all(client.clone());
    assert_eq!(namespaces.resource_url(), "/api/v1/namespaces");
    namespaces.get("team").await.unwrap();
    assert_eq!(server.last().uri.path(), "/api/v1/namespaces/team");

    let all_cms: Api<ConfigMap> = Api::all(client.clone());
    all_cms.list(&ListParams::default()).await.unwrap();
    assert_eq!(server.last().uri.path(), "/api/v1/configmaps");

    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    assert_eq!(deploys.namespace(), Some("default"));
    deploys.get_status("web").await.unwrap();
    assert_eq!(
        server.last().uri.path(),
        "/apis/apps/v1/namespaces/default/deployments/web/status"
    );
    deploys
        .patch_status(
            "web",
            &PatchParams::apply("mgr"),
            &Patch::Apply(j!({"status": {"replicas": 1}})),
        )
        .await
        .unwrap();
    let req = server.last();
    assert_eq!(
        req.uri.path(),
        "/apis/apps/v1/namespaces/default/deployments/web/status"
    );
    assert_eq!(
        req.header("content-type"),
        Some("application/apply-patch+yaml")
    );
    let d: Deployment = deploys.get("web").await.unwrap();
    deploys
        .replace_status("web", &PostParams::default(), &d)
        .await
        .unwrap();
    assert_eq!(server.last().method, "PUT");
    assert!(server.last().uri.path().ends_with("/web/status"));

    let scale = deploys.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(3));
    assert_eq!(
        server.last().uri.path(),
        "/apis/apps/v1/namespaces/default/deployments/web/scale"
    );
    deploys
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(j!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(server.last().method, "PATCH");

    // Dynamic objects from an ApiResource.
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("ex.com", "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "ns", &ar);
    let w = widgets.get("w").await.unwrap();
    assert_eq!(w.data["spec"]["size"], 1);
    assert_eq!(
        server.last().uri.path(),
        "/apis/ex.com/v1/namespaces/ns/widgets/w"
    );
    let all_widgets: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    all_widgets.get("w").await.unwrap();
    assert_eq!(server.last().uri.path(), "/apis/ex.com/v1/widgets/w");
}

#[tokio::test]
async fn metadata_only_requests_ask_for_partial_object_metadata() {
    let (server, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "ns");
    let meta = api.get_metadata("a").await.unwrap();
    assert_eq!(meta.metadata.labels.unwrap()["x"], "y");
    assert_eq!(
        server.last().header("accept"),
        Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
    );
    api.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(
        server.last().header("accept"),
        Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
    );

    // An Api over PartialObjectMeta<K> does the same through the plain verbs.
    let partial: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(client, "ns");
    let got = partial.get("a").await.unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("a"));
    assert!(server
        .last()
        .header("accept")
        .unwrap()
        .contains("as=PartialObjectMetadata"));
    let patch = Patch::Merge(j!({"metadata": {"labels": {"x": "z"}}}));
    api.patch_metadata("a", &PatchParams::default(), &patch)
        .await
        .ok();
    assert!(server
        .last()
        .header("accept")
        .unwrap()
        .contains("as=PartialObjectMetadata"));
}

#[tokio::test]
async fn pagination_follows_continue_tokens() {
    let (server, client) = setup().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "ns");
    let names: Vec<String> = api
        .list_stream(&ListParams::default().limit(2))
        .map_ok(|cm| cm.metadata.name.unwrap())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
    let queries: Vec<String> = server
        .recorded()
        .iter()
        .map(|r| r.uri.query().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        queries,
        [
            "limit=2",
            "limit=2&continue=page2",
            "limit=2&continue=page3"
        ]
    );

    // Pages carry the list's resourceVersion; the default page size is 500.
    let pages: Vec<_> = api
        .list_pages(&ListParams::default())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(pages.len(), 3);
    assert!(pages
        .iter()
        .all(|p| p.metadata.resource_version.as_deref() == Some("10")));
    assert!(server.recorded()[3]
        .uri
        .query()
        .unwrap()
        .contains("limit=500"));
}

const EVENTS: [&str; 3] = [
    r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"11"}}}"#,
    r#"{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"12"}}}"#,
    r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (11)","reason":"Expired","code":410}}"#,
];

#[tokio::test]
async fn watch_events_stream_as_they_arrive_and_expired_is_gone() {
    let server = Fixture::start(handler(|r| async move {
        assert!(r.uri.query().unwrap().contains("watch=true"));
        // Split events across chunks at awkward places.
        let body = format!("{}\n{}\n{}\n", EVENTS[0], EVENTS[1], EVENTS[2]).into_bytes();
        let chunks = vec![
            body[..10].to_vec(),
            body[10..EVENTS[0].len() + 5].to_vec(),
            body[EVENTS[0].len() + 5..].to_vec(),
        ];
        streamed(chunks, Duration::from_millis(20))
    }))
    .await;
    let client = Client::try_from(server.config("t")).unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "ns");
    let wp = WatchParams::default()
        .labels("app=web")
        .fields("metadata.name=a")
        .timeout(120);
    let events: Vec<_> = api.watch(&wp, "5").await.unwrap().collect().await;
    let q = query_pairs(&server.last());
    for p in pairs(&[
        ("watch", "true"),
        ("timeoutSeconds", "120"),
        ("labelSelector", "app=web"),
        ("fieldSelector", "metadata.name=a"),
        ("allowWatchBookmarks", "true"),
        ("resourceVersion", "5"),
    ]) {
        assert!(q.contains(&p), "{p:?} missing from {q:?}");
    }
    assert_eq!(events.len(), 3);
    assert!(
        matches!(&events[0], Ok(WatchEvent::Added(cm)) if cm.metadata.name.as_deref() == Some("a"))
    );
    assert!(
        matches!(&events[1], Ok(WatchEvent::Bookmark(b)) if b.metadata.resource_version == "12")
    );
    let err = events[2].as_ref().unwrap_err();
    assert!(err.is_gone(), "{err:?}");
    assert!(err.to_string().contains("too old resource version"));
}

#[tokio::test]
async fn streaming_list_params_and_watch_errors_before_streaming() {
    let server = Fixture::start(handler(|r| async move {
        let asks_for_rv_1 = form_urlencoded_pairs(r.uri.query().unwrap_or(""))
            .contains(&("resourceVersion".to_owned(), "1".to_owned()));
        if asks_for_rv_1 {
            status(410, "Expired", "too old resource version: 1 (50)")
        } else {
            streamed(vec![b"\n".to_vec()], Duration::from_millis(1))
        }
    }))
    .await;
    let client = Client::try_from(server.config("t")).unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "ns");
    let events: Vec<_> = api
        .watch(&WatchParams::streaming_lists(), "")
        .await
        .unwrap()
        .collect()
        .await;
    assert!(events.is_empty());
    let q = query_pairs(&server.last());
    for p in pairs(&[
        ("sendInitialEvents", "true"),
        ("resourceVersionMatch", "NotOlderThan"),
        ("allowWatchBookmarks", "true"),
    ]) {
        assert!(q.contains(&p), "{p:?} missing from {q:?}");
    }
    // A 410 before the stream starts is an Err from watch() itself.
    let err = api.watch(&WatchParams::default(), "1").await.err().unwrap();
    assert!(err.is_gone(), "{err:?}");
}

fn legacy_discovery(r: Recorded) -> http::Response<client_support::Body> {
    match r.uri.path() {
        "/api" => json(
            200,
            j!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}),
        ),
        "/apis" => json(
            200,
            j!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                 "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}},
                {"name": "broken.io", "versions": [{"groupVersion": "broken.io/v1", "version": "v1"}]}
            ]}),
        ),
        "/api/v1" => json(
            200,
            j!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                {"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap",
                 "verbs": ["create","delete","get","list","patch","update","watch"], "shortNames": ["cm"]},
                {"name": "namespaces", "singularName": "namespace", "namespaced": false, "kind": "Namespace", "verbs": ["get","list"], "shortNames": ["ns"]}
            ]}),
        ),
        "/apis/apps/v1" => json(
            200,
            j!({"kind": "APIResourceList", "groupVersion": "apps/v1", "resources": [
                {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment",
                 "verbs": ["get","list","watch"], "shortNames": ["deploy"]},
                {"name": "deployments/scale", "singularName": "", "namespaced": true, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get","patch","update"]},
                {"name": "deployments/status", "singularName": "", "namespaced": true, "kind": "Deployment", "verbs": ["get","patch","update"]}
            ]}),
        ),
        "/apis/broken.io/v1" => status(
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
        ),
        _ => text(404, "404 page not found\n"),
    }
}

#[tokio::test]
async fn legacy_discovery_fetches_group_versions_and_tolerates_failures() {
    let server = Fixture::start(handler(|r| async move { legacy_discovery(r) })).await;
    let client = Client::try_from(server.config("t")).unwrap();
    let d = Discovery::run(&client).await.unwrap();
    assert!(!d.is_aggregated());
    // The first /api and /apis asked for aggregated discovery.
    let first = &server.recorded()[0];
    assert!(first
        .header("accept")
        .unwrap()
        .starts_with("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"));

    let deploy = d.find("deploy").unwrap();
    assert_eq!(deploy.resource.plural, "deployments");
    assert_eq!(deploy.scope, Scope::Namespaced);
    assert!(deploy.supports("watch"));
    assert_eq!(
        deploy.subresource("scale").unwrap().kind.group,
        "autoscaling"
    );
    assert_eq!(d.find("ns").unwrap().scope, Scope::Cluster);
    let cm = d
        .resolve_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"))
        .unwrap();
    assert_eq!(cm.resource.plural, "configmaps");
    assert_eq!(d.failures().len(), 1);
    assert_eq!(d.failures()[0].group_version, "broken.io/v1");
    assert_eq!(d.failures()[0].error.code(), Some(503));
}

#[tokio::test]
async fn aggregated_discovery_is_used_when_both_roots_answer_it() {
    let server = Fixture::start(handler(|r| async move {
        let agg = |body: serde_json::Value| {
            http::Response::builder()
                .status(200)
                .header("content-type", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
                .body(http_body_util::BodyExt::boxed(http_body_util::Full::new(bytes::Bytes::from(body.to_string()))))
                .unwrap()
        };
        match r.uri.path() {
            "/api" => agg(j!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": [
                {"metadata": {"name": ""}, "versions": [{"version": "v1", "resources": [
                    {"resource": "pods", "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
                     "scope": "Namespaced", "singularResource": "pod", "verbs": ["get","list"], "shortNames": ["po"],
                     "subresources": [{"subresource": "status", "responseKind": {"group": "", "version": "v1", "kind": "Pod"}, "verbs": ["get"]}]}]}]}]})),
            "/apis" => agg(j!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": [
                {"metadata": {"name": "ex.com"}, "versions": [
                    {"version": "v2", "resources": [{"resource": "widgets", "responseKind": {"group": "ex.com", "version": "v2", "kind": "Widget"},
                      "scope": "Cluster", "singularResource": "widget", "verbs": ["get"]}]},
                    {"version": "v1", "resources": [{"resource": "widgets", "responseKind": {"group": "ex.com", "version": "v1", "kind": "Widget"},
                      "scope": "Cluster", "singularResource": "widget", "verbs": ["get"]}]}]}]})),
            _ => text(404, "404 page not found\n"),
        }
    }))
    .await;
    let client = Client::try_from(server.config("t")).unwrap();
    let d = Discovery::run(&client).await.unwrap();
    assert!(d.is_aggregated());
    assert_eq!(server.recorded().len(), 2, "no per-group-version requests");
    assert_eq!(
        d.find("po").unwrap().subresource("status").unwrap().verbs,
        ["get"]
    );
    let w = d.find("widgets").unwrap();
    assert_eq!(w.resource.version, "v2", "the first version is preferred");
    assert_eq!(w.scope, Scope::Cluster);
    assert!(d
        .resolve_gvk(&GroupVersionKind::gvk("ex.com", "v1", "Widget"))
        .is_some());
}

#[tokio::test]
async fn mixed_answers_fall_back_to_legacy() {
    // /api answers aggregated but /apis does not: use legacy everywhere.
    let server = Fixture::start(handler(|r| async move {
        if r.uri.path() == "/api"
            && r.header("accept")
                .is_some_and(|a| a.contains("apidiscovery"))
        {
            http::Response::builder()
                .status(200)
                .header(
                    "content-type",
                    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
                )
                .body(http_body_util::BodyExt::boxed(http_body_util::Full::new(
                    bytes::Bytes::from_static(b"{\"items\":[]}"),
                )))
                .unwrap()
        } else {
            legacy_discovery(r)
        }
    }))
    .await;
    let client = Client::try_from(server.config("t")).unwrap();
    let d = Discovery::run(&client).await.unwrap();
    assert!(!d.is_aggregated());
    assert!(
        d.find("cm").is_some(),
        "core resources come from the legacy /api"
    );
}
