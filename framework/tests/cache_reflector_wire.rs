//! The reflector on the wire, against a scripted HTTPS stub: the exact
//! list and watch requests client-go's reflector makes (reflector.go:
//! `resourceVersion=0&limit=500` first, watch from the list's version with
//! bookmarks and a timeout in [300, 600], relist at the last version after
//! a watch 410, `""` after a list 410, continue tokens), Retry-After on 429,
//! backoff on 500, the streaming-list fallback, and a 403 reported by name
//! at once — answers the in-process server cannot give on demand.

mod client_support;
#[path = "../apiserver/tests/poll/mod.rs"]
mod poll;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client_support::{handler, json, status, streamed, streamed_from, Fixture, Recorded};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kubeforge::cache::{ObjectKey, SharedInformerFactory, SyncError};
use kubeforge::Client;
use poll::eventually;
use serde_json::{json, Value};

fn query(r: &Recorded) -> BTreeMap<String, String> {
    form_urlencoded::parse(r.uri.query().unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

fn is_watch(r: &Recorded) -> bool {
    query(r).get("watch").map(String::as_str) == Some("true")
}

fn cm(name: &str, rv: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "uid": format!("uid-{name}")}})
}

fn list(rv: &str, items: Vec<Value>, cont: Option<&str>) -> http::Response<client_support::Body> {
    let mut meta = json!({"resourceVersion": rv});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    json(
        200,
        json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": items}),
    )
}

fn event(kind: &str, object: Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap();
    line.push(b'\n');
    line
}

/// A watch that stays open and silent.
fn open_watch() -> http::Response<client_support::Body> {
    streamed_from(futures::stream::pending::<
        Result<hyper::body::Frame<bytes::Bytes>, std::convert::Infallible>,
    >())
}

/// Serves `steps` in order, one per request; later requests get an open,
/// silent watch.
type Step = Box<dyn Fn(&Recorded) -> http::Response<client_support::Body> + Send + Sync>;

async fn scripted(steps: Vec<Step>) -> Fixture {
    scripted_timed(steps).await.0
}

/// As [`scripted`], also recording when each request arrived.
async fn scripted_timed(steps: Vec<Step>) -> (Fixture, Arc<Mutex<Vec<Instant>>>) {
    let steps = Arc::new(steps);
    let next = Arc::new(AtomicUsize::new(0));
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let times = Arc::clone(&arrivals);
    let fixture = Fixture::start(handler(move |r: Recorded| {
        times.lock().unwrap().push(Instant::now());
        let steps = Arc::clone(&steps);
        let n = next.fetch_add(1, Ordering::SeqCst);
        async move {
            match steps.get(n) {
                Some(step) => step(&r),
                None => open_watch(),
            }
        }
    }))
    .await;
    (fixture, arrivals)
}

fn client(fixture: &Fixture) -> Client {
    Client::new(fixture.config("token")).unwrap()
}

fn keys(store: &kubeforge::cache::Store<ConfigMap>) -> Vec<String> {
    let mut keys: Vec<String> = store
        .list()
        .iter()
        .map(|o| ObjectKey::of(o.as_ref()).to_string())
        .collect();
    keys.sort();
    keys
}

#[tokio::test]
async fn list_and_watch_requests_follow_client_go() {
    let steps: Vec<Step> = vec![
        // 1. First list: resourceVersion=0 with limit=500.
        Box::new(|_| list("10", vec![cm("a", "9"), cm("gone", "5")], None)),
        // 2. Watch from 10: one add, then the version expires mid-stream.
        Box::new(|_| {
            streamed(
                vec![
                    event("ADDED", cm("b", "11")),
                    event(
                        "ERROR",
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "reason": "Expired", "code": 410, "message": "too old resource version: 10 (12)"}),
                    ),
                ],
                Duration::from_millis(5),
            )
        }),
        // 3. Relist at the last version seen (11): that too has expired.
        Box::new(|_| status(410, "Expired", "too old resource version: 11 (12)")),
        // 4-5. Relist with resourceVersion "": two pages.
        Box::new(|_| list("20", vec![cm("a", "9")], Some("page-2"))),
        Box::new(|_| list("20", vec![cm("b", "11"), cm("c", "19")], None)),
        // 6. Watch from 20: too many requests, retry after 1 s.
        Box::new(|_| {
            let mut resp = status(429, "TooManyRequests", "slow down");
            resp.headers_mut()
                .insert("retry-after", http::HeaderValue::from_static("1"));
            resp
        }),
        // 7. Watch from 20: a clean end after one event.
        Box::new(|_| {
            streamed(
                vec![event("MODIFIED", cm("c", "21"))],
                Duration::from_millis(5),
            )
        }),
        // 8. Re-watch from 21 without relisting; stays open.
    ];
    let fixture = scripted(steps).await;
    let factory = SharedInformerFactory::new(client(&fixture));
    let informer = factory.informer::<ConfigMap>();
    factory.start();
    eventually("eight requests", async || fixture.recorded().len() >= 8).await;
    eventually("the final state", async || {
        keys(&informer.store()) == ["ns/a", "ns/b", "ns/c"]
            && informer.last_sync_resource_version().as_deref() == Some("21")
    })
    .await;
    let reqs = fixture.recorded();
    let q: Vec<BTreeMap<String, String>> = reqs.iter().map(query).collect();
    for r in &reqs {
        assert_eq!(r.uri.path(), "/api/v1/configmaps");
    }

    assert!(!is_watch(&reqs[0]));
    assert_eq!(q[0].get("resourceVersion").map(String::as_str), Some("0"));
    assert_eq!(q[0].get("limit").map(String::as_str), Some("500"));

    assert!(is_watch(&reqs[1]));
    assert_eq!(q[1]["resourceVersion"], "10");
    assert_eq!(q[1]["allowWatchBookmarks"], "true");
    let timeout: u32 = q[1]["timeoutSeconds"].parse().unwrap();
    assert!((300..=600).contains(&timeout), "timeoutSeconds {timeout}");

    // After the watch expired: a list at the last version, unpaged (served
    // "not older than" from the watch cache).
    assert!(!is_watch(&reqs[2]));
    assert_eq!(q[2]["resourceVersion"], "11");
    assert!(!q[2].contains_key("limit"));

    // After the list expired: a consistent list from etcd, paged.
    assert!(!is_watch(&reqs[3]));
    assert!(!q[3].contains_key("resourceVersion"));
    assert_eq!(q[3]["limit"], "500");
    assert_eq!(q[4]["continue"], "page-2");

    assert!(is_watch(&reqs[5]));
    assert_eq!(q[5]["resourceVersion"], "20");
    assert!(is_watch(&reqs[6]));
    assert_eq!(q[6]["resourceVersion"], "20");

    // A clean end re-watches from the last version, without a list.
    assert!(is_watch(&reqs[7]));
    assert_eq!(q[7]["resourceVersion"], "21");
    factory.shutdown();
}

#[tokio::test]
async fn retry_after_is_honoured_and_other_errors_back_off() {
    // The 429 comes first: the first backoff is 0.8-1.6 s, so only
    // Retry-After can explain a 2 s wait. (Second, the backoff would be
    // 1.6-3.2 s and a wait of 2 s would prove nothing.)
    let steps: Vec<Step> = vec![
        Box::new(|_| {
            let mut resp = status(429, "TooManyRequests", "slow down");
            resp.headers_mut()
                .insert("retry-after", http::HeaderValue::from_static("2"));
            resp
        }),
        Box::new(|_| status(500, "InternalError", "etcd is sad")),
        Box::new(|_| list("3", vec![cm("a", "2")], None)),
    ];
    let (fixture, arrivals) = scripted_timed(steps).await;
    let factory = SharedInformerFactory::new(client(&fixture));
    let informer = factory.informer::<ConfigMap>();
    factory.start();
    let results = factory.wait_for_cache_sync(Duration::from_secs(30)).await;
    assert!(results[0].1.is_ok(), "{:?}", results[0].1);
    assert_eq!(keys(&informer.store()), ["ns/a"]);
    // The retry after the 429 waited for Retry-After, the one after the
    // 500 for the backoff (800 ms at least).
    let times = arrivals.lock().unwrap().clone();
    assert!(
        times[1] - times[0] >= Duration::from_secs(2),
        "{:?}",
        times[1] - times[0]
    );
    assert!(
        times[2] - times[1] >= Duration::from_millis(800),
        "{:?}",
        times[2] - times[1]
    );
    factory.shutdown();
}

#[tokio::test]
async fn forbidden_during_sync_is_reported_at_once_with_the_server_message() {
    const MESSAGE: &str = r#"configmaps is forbidden: User "system:serviceaccount:team-a:op" cannot list resource "configmaps" in API group "" in the namespace "team-a""#;
    let fixture = Fixture::start(handler(|_r: Recorded| async move {
        status(403, "Forbidden", MESSAGE)
    }))
    .await;
    let factory = SharedInformerFactory::builder(client(&fixture))
        .namespace("team-a")
        .build();
    let informer = factory.informer::<ConfigMap>();
    factory.start();
    // A long timeout: a result other than Forbidden would mean the failure
    // was left to it.
    let results = factory.wait_for_cache_sync(Duration::from_secs(300)).await;
    let (id, result) = &results[0];
    assert_eq!(id.namespace.as_deref(), Some("team-a"));
    let err = result.clone().unwrap_err();
    assert_eq!(
        err,
        SyncError::Forbidden {
            informer: id.clone(),
            message: MESSAGE.to_owned()
        }
    );
    assert_eq!(
        err.to_string(),
        format!(r#"forbidden: cannot list configmaps in namespace "team-a": {MESSAGE}"#)
    );
    // The informer's own wait says the same.
    assert!(matches!(
        informer.wait_for_cache_sync(Duration::from_secs(300)).await,
        Err(SyncError::Forbidden { .. })
    ));
    assert!(informer.last_error().is_some_and(|e| e.is_forbidden()));
    assert_eq!(
        fixture.recorded()[0].uri.path(),
        "/api/v1/namespaces/team-a/configmaps"
    );
    factory.shutdown();
}

#[tokio::test]
async fn streaming_list_falls_back_to_list_when_the_server_refuses_it() {
    let steps: Vec<Step> = vec![
        Box::new(|_| {
            json(
                422,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 422,
                       "reason": "Invalid", "message": "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch"}),
            )
        }),
        Box::new(|_| list("5", vec![cm("a", "4")], None)),
    ];
    let fixture = scripted(steps).await;
    let factory = SharedInformerFactory::builder(client(&fixture))
        .streaming_list(true)
        .build();
    let informer = factory.informer::<ConfigMap>();
    factory.start();
    let results = factory.wait_for_cache_sync(Duration::from_secs(30)).await;
    assert!(results[0].1.is_ok(), "{:?}", results[0].1);
    assert_eq!(keys(&informer.store()), ["ns/a"]);
    eventually("the watch", async || fixture.recorded().len() >= 3).await;
    let reqs = fixture.recorded();
    let q0 = query(&reqs[0]);
    assert!(is_watch(&reqs[0]));
    assert_eq!(q0["sendInitialEvents"], "true");
    assert_eq!(q0["resourceVersionMatch"], "NotOlderThan");
    assert_eq!(q0["allowWatchBookmarks"], "true");
    assert!(!is_watch(&reqs[1]), "fell back to a list");
    assert_eq!(query(&reqs[1])["resourceVersion"], "0");
    assert!(is_watch(&reqs[2]));
    assert_eq!(query(&reqs[2])["resourceVersion"], "5");
    assert!(!query(&reqs[2]).contains_key("sendInitialEvents"));
    factory.shutdown();
}

#[tokio::test]
async fn streaming_list_ends_at_the_initial_events_end_bookmark() {
    let steps: Vec<Step> = vec![Box::new(|_| {
        let bookmark = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {
            "resourceVersion": "30", "annotations": {"k8s.io/initial-events-end": "true"}}});
        streamed_from(
            futures::stream::iter(
                [
                    event("ADDED", cm("a", "10")),
                    event("ADDED", cm("b", "20")),
                    event("BOOKMARK", bookmark),
                    event("MODIFIED", cm("a", "31")),
                ]
                .into_iter()
                .map(|c| Ok(hyper::body::Frame::data(bytes::Bytes::from(c)))),
            )
            .chain(futures::stream::pending()),
        )
    })];
    let fixture = scripted(steps).await;
    let factory = SharedInformerFactory::builder(client(&fixture))
        .streaming_list(true)
        .build();
    let informer = factory.informer::<ConfigMap>();
    factory.start();
    let results = factory.wait_for_cache_sync(Duration::from_secs(30)).await;
    assert!(results[0].1.is_ok(), "{:?}", results[0].1);
    informer
        .wait_for_resource_version("31", Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(keys(&informer.store()), ["ns/a", "ns/b"]);
    assert_eq!(
        fixture.recorded().len(),
        1,
        "one request: the watch goes on"
    );
    assert!(
        !query(&fixture.recorded()[0]).contains_key("resourceVersion")
            || query(&fixture.recorded()[0])["resourceVersion"].is_empty()
    );
    factory.shutdown();
}

/// A shard's informer sends its `shardSelector` on every list and watch
/// (KEP-5866), and keeps out what a server that ignores it sends anyway:
/// here the stub answers with objects of both halves.
#[tokio::test]
async fn a_shard_is_asked_for_on_list_and_watch_and_checked_on_arrival() {
    use kubeforge::cache::{InformerOptions, Shard};
    let shard = Shard::of(0, 2).unwrap();
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for i in 0u64..40 {
        let mut object = cm(&format!("o{i}"), "5");
        // Random uids, as the server's: FNV-1a's top bits barely move
        // between names that differ in their last characters.
        let mixed = (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17);
        object["metadata"]["uid"] = json!(format!("{mixed:016x}-{:016x}", !mixed));
        let mut probe = ConfigMap::default();
        probe.metadata.uid = object["metadata"]["uid"].as_str().map(str::to_owned);
        if shard.contains(&probe) {
            ours.push(object);
        } else {
            theirs.push(object);
        }
    }
    assert!(!ours.is_empty() && !theirs.is_empty());
    let all: Vec<Value> = ours.iter().chain(&theirs).cloned().collect();
    let (late_ours, late_theirs) = (ours[0].clone(), theirs[0].clone());
    let steps: Vec<Step> = vec![
        Box::new(move |_| list("10", all.clone(), None)),
        Box::new(move |_| {
            let mut ours = late_ours.clone();
            ours["metadata"]["resourceVersion"] = json!("11");
            let mut theirs = late_theirs.clone();
            theirs["metadata"]["resourceVersion"] = json!("12");
            streamed(
                vec![event("MODIFIED", ours), event("DELETED", theirs)],
                Duration::from_millis(5),
            )
        }),
    ];
    let fixture = scripted(steps).await;
    let factory = SharedInformerFactory::new(client(&fixture));
    let informer = factory.informer_with(InformerOptions::<ConfigMap>::default().shard(shard));
    factory.start();
    eventually("the watch's events", async || {
        informer.last_sync_resource_version().as_deref() == Some("12")
    })
    .await;
    let mut expected: Vec<String> = ours
        .iter()
        .map(|o| format!("ns/{}", o["metadata"]["name"].as_str().unwrap()))
        .collect();
    expected.sort();
    assert_eq!(
        keys(&informer.store()),
        expected,
        "only the shard is cached"
    );
    let reqs = fixture.recorded();
    assert!(reqs.len() >= 2);
    for r in &reqs[..2] {
        assert_eq!(
            query(r).get("shardSelector").map(String::as_str),
            Some("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"),
            "{}",
            r.uri
        );
    }
    factory.shutdown();
}
