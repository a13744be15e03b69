//! Lists and watches: resourceVersion semantics, resuming, 410 after the
//! history moves on or is compacted, bookmarks and the initial-events-end
//! bookmark, timeouts, pagination with continue tokens, the 422 parameter
//! rules, selectors, Table output and slow watchers.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod common;

use std::time::Duration;

use base64::Engine as _;
use common::{ev, rv, Kube};
use kubeforge_apiserver::ApiServer;
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn watch_from_a_resource_version_resumes_exactly_after_it() {
    let k = Kube::start().await;
    let a = k.configmap("default", "a", json!({})).await;
    k.configmap("default", "b", json!({})).await;
    k.merge(&format!("{CMS}/a"), &json!({"data": {"x": "1"}}))
        .await;
    k.delete(&format!("{CMS}/b")).await;
    let mut w = k
        .watch(&format!("{CMS}?watch=true&resourceVersion={}", rv(&a)))
        .await;
    assert_eq!(ev(&w.next().await), ("ADDED".into(), "b".into()));
    assert_eq!(ev(&w.next().await), ("MODIFIED".into(), "a".into()));
    let del = w.next().await;
    assert_eq!(ev(&del), ("DELETED".into(), "b".into()));
    assert!(
        rv(&del["object"]) > rv(&a),
        "DELETED carries the deletion revision"
    );
    k.configmap("default", "c", json!({})).await;
    assert_eq!(ev(&w.next().await), ("ADDED".into(), "c".into()));
}

#[tokio::test]
async fn watch_without_resource_version_starts_with_synthetic_adds() {
    let k = Kube::start().await;
    k.configmap("default", "a", json!({})).await;
    k.configmap("kube-system", "b", json!({})).await;
    let mut w = k.watch("/api/v1/configmaps?watch=1").await;
    let mut names = vec![ev(&w.next().await).1, ev(&w.next().await).1];
    names.sort();
    assert_eq!(names, ["a", "b"]);
    let e = w.next_within(Duration::from_millis(200)).await;
    assert!(e.is_none());
    // Watching one object by name.
    let mut one = k.watch(&format!("{CMS}/a?watch=1")).await;
    assert_eq!(ev(&one.next().await).1, "a");
    k.merge(&format!("{CMS}/a"), &json!({"data": {"k": "v"}}))
        .await;
    k.configmap("default", "z", json!({})).await;
    assert_eq!(ev(&one.next().await), ("MODIFIED".into(), "a".into()));
    assert!(one.next_within(Duration::from_millis(200)).await.is_none());
}

#[tokio::test]
async fn expired_resource_versions_get_410() {
    let k = Kube::with(ApiServer::builder().watch_history(3)).await;
    let first = k.configmap("default", "a", json!({})).await;
    for i in 0..5 {
        k.merge(&format!("{CMS}/a"), &json!({"data": {"i": i.to_string()}}))
            .await;
    }
    let mut w = k
        .watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&first)))
        .await;
    let e = w.next().await;
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 410);
    assert_eq!(e["object"]["reason"], "Expired");
    assert!(e["object"]["message"]
        .as_str()
        .unwrap()
        .starts_with("too old resource version:"));
    assert!(w.ends_within(Duration::from_secs(2)).await);
    let r = k
        .get(&format!(
            "{CMS}?resourceVersion={}&resourceVersionMatch=Exact",
            rv(&first)
        ))
        .await;
    assert_eq!(r.code(), 410);
    assert_eq!(r.json()["reason"], "Expired");
}

/// kube-apiserver's compactor (`storage/etcd3/compact.go`): each interval
/// it compacts to the revision it saw the interval before.
#[tokio::test]
async fn the_history_is_compacted_each_interval_to_the_tick_before() {
    let k =
        Kube::with(ApiServer::builder().compaction_interval(Some(Duration::from_secs(1)))).await;
    let old = k.configmap("default", "a", json!({})).await;
    // The tick at 1 s saw `old`; the tick at 2 s compacts to it.
    tokio::time::sleep(Duration::from_millis(2300)).await;
    let recent = k.configmap("default", "b", json!({})).await;
    // From before `old`: its creation is gone.
    let mut w = k
        .watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&old) - 1))
        .await;
    assert_eq!(w.next().await["object"]["code"], 410);
    // What was written since the last tick still resumes.
    let mut w = k
        .watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&recent)))
        .await;
    k.configmap("default", "c", json!({})).await;
    assert_eq!(ev(&w.next().await), ("ADDED".into(), "c".into()));
}

#[tokio::test]
async fn compaction_expires_every_older_resource_version() {
    let k = Kube::start().await;
    let a = k.configmap("default", "a", json!({})).await;
    k.configmap("default", "b", json!({})).await;
    k.server.faults().compact();
    let mut w = k
        .watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&a)))
        .await;
    assert_eq!(w.next().await["object"]["code"], 410);
    // Also for resources that were never written.
    let mut w = k
        .watch(&format!(
            "/api/v1/namespaces/default/secrets?watch=1&resourceVersion={}",
            rv(&a)
        ))
        .await;
    assert_eq!(w.next().await["object"]["code"], 410);
    let list = k.get(CMS).await.json();
    let mut w = k
        .watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&list)))
        .await;
    k.configmap("default", "c", json!({})).await;
    assert_eq!(ev(&w.next().await), ("ADDED".into(), "c".into()));
}

#[tokio::test]
async fn list_resource_version_semantics() {
    let k = Kube::start().await;
    let a = k.configmap("default", "a", json!({"v": "1"})).await;
    k.merge(&format!("{CMS}/a"), &json!({"data": {"v": "2"}}))
        .await;
    k.configmap("default", "b", json!({})).await;
    let exact = k
        .get(&format!(
            "{CMS}?resourceVersion={}&resourceVersionMatch=Exact",
            rv(&a)
        ))
        .await
        .json();
    assert_eq!(
        exact["metadata"]["resourceVersion"],
        a["metadata"]["resourceVersion"]
    );
    assert_eq!(exact["items"].as_array().unwrap().len(), 1);
    assert_eq!(exact["items"][0]["data"]["v"], "1");
    let latest = k
        .get(&format!(
            "{CMS}?resourceVersion={}&resourceVersionMatch=NotOlderThan",
            rv(&a)
        ))
        .await
        .json();
    assert_eq!(latest["items"].as_array().unwrap().len(), 2);
    // Legacy: an RV with a limit is an exact read.
    let legacy = k
        .get(&format!("{CMS}?resourceVersion={}&limit=10", rv(&a)))
        .await
        .json();
    assert_eq!(legacy["items"][0]["data"]["v"], "1");
    // RV 0 ignores limit.
    let zero = k
        .get(&format!("{CMS}?resourceVersion=0&limit=1"))
        .await
        .json();
    assert_eq!(zero["items"].as_array().unwrap().len(), 2);
    assert!(zero["metadata"].get("continue").is_none());
}

#[tokio::test]
async fn a_resource_version_from_the_future_times_out_with_504() {
    let k = Kube::start().await;
    let r = k
        .get(&format!(
            "{CMS}?resourceVersion=999999&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    assert_eq!(r.code(), 504);
    let s = r.json();
    assert_eq!(s["reason"], "Timeout");
    assert_eq!(
        s["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
}

#[tokio::test]
async fn list_parameter_rules_answer_422() {
    let k = Kube::start().await;
    for q in [
        "resourceVersionMatch=Exact",
        "resourceVersion=0&resourceVersionMatch=Exact",
        "resourceVersion=1&resourceVersionMatch=Sometimes",
        "sendInitialEvents=true",
        "watch=1&resourceVersionMatch=NotOlderThan",
        "watch=1&sendInitialEvents=true&resourceVersionMatch=Exact",
        "watch=1&sendInitialEvents=true",
    ] {
        let r = k.get(&format!("{CMS}?{q}")).await;
        assert_eq!(r.code(), 422, "{q}");
        let s = r.json();
        assert_eq!(s["reason"], "Invalid");
        assert!(
            s["message"]
                .as_str()
                .unwrap()
                .starts_with("ListOptions.meta.k8s.io \"\" is invalid"),
            "{q}: {s}"
        );
    }
    let r = k
        .get(&format!("{CMS}?resourceVersion=5&continue=abc"))
        .await;
    assert_eq!(r.code(), 400);
    assert_eq!(k.get(&format!("{CMS}?continue=garbage")).await.code(), 400);
}

#[tokio::test]
async fn pagination_keeps_one_resource_version_and_expired_tokens_get_410() {
    let k = Kube::with(ApiServer::builder().watch_history(5)).await;
    for i in 0..7 {
        k.configmap("default", &format!("cm{i}"), json!({})).await;
    }
    let p1 = k.get(&format!("{CMS}?limit=3")).await.json();
    assert_eq!(p1["items"].as_array().unwrap().len(), 3);
    let token = p1["metadata"]["continue"].as_str().unwrap().to_owned();
    k.delete(&format!("{CMS}/cm4")).await;
    k.configmap("default", "cm35", json!({})).await;
    let p2 = k
        .get(&format!("{CMS}?limit=3&continue={token}"))
        .await
        .json();
    assert_eq!(
        p2["metadata"]["resourceVersion"],
        p1["metadata"]["resourceVersion"]
    );
    let names: Vec<&str> = p2["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["cm3", "cm4", "cm5"],
        "the snapshot of the first page"
    );
    let t2 = p2["metadata"]["continue"].as_str().unwrap().to_owned();
    let p3 = k.get(&format!("{CMS}?limit=3&continue={t2}")).await.json();
    assert_eq!(p3["items"].as_array().unwrap().len(), 1);
    assert!(p3["metadata"].get("continue").is_none());
    assert!(p3["metadata"].get("remainingItemCount").is_none());
    // Enough writes to push the page's revision out of the history.
    for i in 0..6 {
        k.merge(
            &format!("{CMS}/cm0"),
            &json!({"data": {"i": i.to_string()}}),
        )
        .await;
    }
    let r = k.get(&format!("{CMS}?limit=3&continue={token}")).await;
    assert_eq!(r.code(), 410);
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .starts_with("The provided continue parameter is too old"));
}

/// A page that has more after it counts them, as etcd's count does, unless
/// a selector makes the count unknown; the last page has none.
#[tokio::test]
async fn pages_say_how_many_items_remain_when_no_selector_is_given() {
    let k = Kube::start().await;
    for i in 0..7 {
        let labels = if i % 2 == 0 {
            json!({"even": "yes"})
        } else {
            json!({})
        };
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm{i}"), "labels": labels}});
        assert_eq!(k.post(CMS, &cm).await.code(), 201);
    }
    let p1 = k.get(&format!("{CMS}?limit=3")).await.json();
    assert_eq!(p1["metadata"]["remainingItemCount"], 4);
    let token = p1["metadata"]["continue"].as_str().unwrap().to_owned();
    let p2 = k
        .get(&format!("{CMS}?limit=3&continue={token}"))
        .await
        .json();
    assert_eq!(p2["metadata"]["remainingItemCount"], 1);
    // The count rides in the token, so later pages do not walk the rest of
    // the list again; a token whose count was altered misstates only its
    // own list's count.
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(&token)
        .unwrap();
    let claims: serde_json::Value = serde_json::from_slice(&decoded).unwrap();
    assert_eq!(claims["remaining"], 4);
    let second_page_claiming = |remaining: u64| {
        let mut altered = claims.clone();
        altered["remaining"] = json!(remaining);
        let token = base64::engine::general_purpose::STANDARD.encode(altered.to_string());
        format!("{CMS}?limit=3&continue={token}")
    };
    let p2 = k.get(&second_page_claiming(1000)).await.json();
    assert_eq!(p2["metadata"]["remainingItemCount"], 997);
    let p2 = k.get(&second_page_claiming(0)).await.json();
    assert_eq!(
        p2["metadata"]["remainingItemCount"], 1,
        "never below one while more follow"
    );
    let exact = k.get(&format!("{CMS}?limit=7")).await.json();
    assert!(exact["metadata"].get("remainingItemCount").is_none());
    assert!(exact["metadata"].get("continue").is_none());
    let selected = k
        .get(&format!("{CMS}?limit=2&labelSelector=even"))
        .await
        .json();
    assert!(selected["metadata"]["continue"].is_string());
    assert!(selected["metadata"].get("remainingItemCount").is_none());
    // Every namespace: the count spans them all.
    let all = k.get("/api/v1/configmaps?limit=1").await.json();
    let total = k.get("/api/v1/configmaps").await.json()["items"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(all["metadata"]["remainingItemCount"], total as u64 - 1);
    // Tables and metadata-only lists carry it too.
    let table = k
        .get_accept(
            &format!("{CMS}?limit=3"),
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await
        .json();
    assert_eq!(table["metadata"]["remainingItemCount"], 4);
}

/// `in` and `notin` are identifiers wherever apimachinery's grammar
/// expects one, and a bad selector is answered with `labels.Parse`'s or
/// `fields.ParseSelector`'s own message (`pkg/labels/selector.go`,
/// `pkg/fields/selector.go`).
#[tokio::test]
async fn selectors_read_keywords_as_identifiers_and_answer_with_upstreams_messages() {
    let k = Kube::start().await;
    for (n, zone, mode) in [("a", "in", "notin"), ("b", "out", "in"), ("c", "up", "on")] {
        let r = k
            .post(CMS, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "labels": {"zone": zone, "mode": mode}}}))
            .await;
        assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    }
    let names = |l: serde_json::Value| -> Vec<String> {
        l["items"]
            .as_array()
            .unwrap_or_else(|| panic!("a list: {l}"))
            .iter()
            .map(|i| {
                i["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    };
    for (selector, want) in [
        ("zone%20in%20(in,out)", vec!["a", "b"]),
        ("mode!%3Dnotin", vec!["b", "c"]),
        ("zone%3Din", vec!["a"]),
        ("zone%20notin%20(in),mode%3D%3Din", vec!["b"]),
    ] {
        let r = k.get(&format!("{CMS}?labelSelector={selector}")).await;
        assert_eq!(
            r.code(),
            200,
            "{selector}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(names(r.json()), want, "{selector}");
    }
    for (query, message) in [
        (
            "labelSelector=zone%20in%20in",
            "unable to parse requirement: found 'in' expected: '('",
        ),
        (
            "labelSelector=x,,y",
            "found ',', expected: identifier after ','",
        ),
        (
            "labelSelector=x%3E1.5",
            "unable to parse requirement: values[0]: Invalid value: \"1.5\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            "fieldSelector=metadata.name",
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'",
        ),
        (
            "fieldSelector=metadata.name%3Da%3Db",
            "invalid field selector: unescaped character in value: 61",
        ),
    ] {
        let r = k.get(&format!("{CMS}?{query}")).await;
        assert_eq!(r.code(), 400, "{query}");
        let status = r.json();
        assert_eq!(status["reason"], "BadRequest", "{query}");
        assert_eq!(status["message"], message, "{query}");
    }
}

#[tokio::test]
async fn selectors_filter_lists_and_watches() {
    let k = Kube::start().await;
    for (n, app) in [("a", "web"), ("b", "db"), ("c", "web")] {
        k.post(CMS, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "labels": {"app": app}}})).await;
    }
    let l = k
        .get(&format!("{CMS}?labelSelector=app%20in%20(web)"))
        .await
        .json();
    assert_eq!(l["items"].as_array().unwrap().len(), 2);
    let l = k
        .get(&format!("{CMS}?labelSelector=app!%3Dweb,app"))
        .await
        .json();
    assert_eq!(l["items"].as_array().unwrap().len(), 1);
    let l = k
        .get(&format!("{CMS}?fieldSelector=metadata.name%3Db"))
        .await
        .json();
    assert_eq!(l["items"][0]["metadata"]["name"], "b");
    let l = k
        .get("/api/v1/configmaps?fieldSelector=metadata.namespace%3Ddefault,metadata.name!%3Da")
        .await
        .json();
    assert_eq!(l["items"].as_array().unwrap().len(), 2);
    let bad = k.get(&format!("{CMS}?fieldSelector=data.x%3D1")).await;
    assert_eq!(bad.code(), 400);
    // ConfigMaps have no field label conversion of their own, so
    // apimachinery's `DefaultMetaV1FieldSelectorConversion` answers.
    assert_eq!(
        bad.json()["message"],
        r#""data.x" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
    assert_eq!(
        k.get(&format!("{CMS}?labelSelector=a%20in%20b"))
            .await
            .code(),
        400
    );
    let pods = k
        .get("/api/v1/pods?fieldSelector=status.phase%3DRunning,spec.nodeName%3D")
        .await;
    assert_eq!(pods.code(), 200);
    // A watch sees objects entering and leaving the selection.
    let list = k.get(CMS).await.json();
    let mut w = k
        .watch(&format!(
            "{CMS}?watch=1&labelSelector=app%3Dweb&resourceVersion={}",
            rv(&list)
        ))
        .await;
    k.merge(
        &format!("{CMS}/b"),
        &json!({"metadata": {"labels": {"app": "web"}}}),
    )
    .await;
    assert_eq!(ev(&w.next().await), ("ADDED".into(), "b".into()));
    k.merge(
        &format!("{CMS}/a"),
        &json!({"metadata": {"labels": {"app": "none"}}}),
    )
    .await;
    assert_eq!(ev(&w.next().await), ("DELETED".into(), "a".into()));
}

#[tokio::test]
async fn bookmarks_and_the_initial_events_end_marker() {
    let k = Kube::with(ApiServer::builder().bookmark_interval(Duration::from_millis(200))).await;
    k.configmap("default", "a", json!({})).await;
    k.configmap("default", "b", json!({})).await;
    let mut w = k
        .watch(&format!("{CMS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"))
        .await;
    assert_eq!(w.next().await["type"], "ADDED");
    assert_eq!(w.next().await["type"], "ADDED");
    let end = w.next().await;
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(end["object"]["kind"], "ConfigMap");
    let snapshot_rv = rv(&end["object"]);
    let c = k.configmap("default", "c", json!({})).await;
    assert!(rv(&c) > snapshot_rv);
    assert_eq!(ev(&w.next().await), ("ADDED".into(), "c".into()));
    // A periodic bookmark carries only the resourceVersion.
    let b = w.next().await;
    assert_eq!(b["type"], "BOOKMARK");
    assert!(rv(&b["object"]) >= rv(&c));
    assert!(b["object"]["metadata"].get("name").is_none());
    // Without allowWatchBookmarks: no bookmarks at all.
    let mut quiet = k
        .watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&c)))
        .await;
    assert!(quiet
        .next_within(Duration::from_millis(600))
        .await
        .is_none());
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream_cleanly() {
    let k = Kube::start().await;
    let mut w = k
        .watch(&format!("{CMS}?watch=1&timeoutSeconds=1&resourceVersion=1"))
        .await;
    assert!(w.ends_within(Duration::from_secs(3)).await);
}

#[tokio::test]
async fn table_output_for_lists_gets_and_watches() {
    let k = Kube::start().await;
    k.configmap("default", "t", json!({"a": "1", "b": "2"}))
        .await;
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    let t = k.get_accept(CMS, accept).await.json();
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    let cols: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, ["Name", "Data", "Age"]);
    assert_eq!(t["rows"][0]["cells"][0], "t");
    assert_eq!(t["rows"][0]["cells"][1], 2);
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let full = k
        .get_accept(&format!("{CMS}?includeObject=Object"), accept)
        .await
        .json();
    assert_eq!(full["rows"][0]["object"]["data"]["a"], "1");
    let none = k
        .get_accept(&format!("{CMS}?includeObject=None"), accept)
        .await
        .json();
    assert!(none["rows"][0].get("object").is_none());
    // Kinds without a printer get Name and Created At.
    let roles = k
        .get_accept(
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            accept,
        )
        .await
        .json();
    let cols: Vec<&str> = roles["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, ["Name", "Created At"]);
    let mut w = k
        .watch_accept(&format!("{CMS}?watch=1"), Some(accept))
        .await;
    let first = w.next().await;
    assert_eq!(first["object"]["kind"], "Table");
    assert!(first["object"]["columnDefinitions"].is_array());
    k.configmap("default", "u", json!({})).await;
    let second = w.next().await;
    assert!(
        second["object"]["columnDefinitions"].is_null(),
        "only the first event has columns"
    );
    assert_eq!(second["object"]["rows"][0]["cells"][0], "u");
    // Metadata-only lists.
    let meta = k
        .get_accept(
            CMS,
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )
        .await
        .json();
    assert_eq!(meta["kind"], "PartialObjectMetadataList");
    assert!(meta["items"][0].get("data").is_none());
}

#[tokio::test]
async fn a_slow_watcher_is_dropped_without_blocking_writers() {
    let k = Kube::with(ApiServer::builder().watch_buffer(2)).await;
    let list = k.get(CMS).await.json();
    // Opened but never read: its buffer fills and it is closed.
    let stalled = k
        .watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&list)))
        .await;
    assert_eq!(k.server.faults().open_watches_for("", "configmaps"), 1);
    // More than the client's HTTP/2 windows and the socket buffers hold.
    let pad = "x".repeat(64 * 1024);
    for i in 0..400 {
        k.configmap("default", &format!("c{i}"), json!({ "pad": pad }))
            .await;
        if k.server.faults().open_watches_for("", "configmaps") == 0 {
            break;
        }
    }
    assert_eq!(k.server.faults().open_watches_for("", "configmaps"), 0);
    drop(stalled);
}

#[tokio::test]
async fn a_bookmark_comes_shortly_before_the_timeout() {
    let k = Kube::start().await;
    let list = k.get(CMS).await.json();
    let t = std::time::Instant::now();
    let mut w = k
        .watch(&format!(
            "{CMS}?watch=1&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion={}",
            rv(&list)
        ))
        .await;
    let b = w.next().await;
    assert_eq!(b["type"], "BOOKMARK");
    assert!(
        t.elapsed() >= Duration::from_millis(2500),
        "{:?}",
        t.elapsed()
    );
    assert!(w.ends_within(Duration::from_secs(4)).await);
}
