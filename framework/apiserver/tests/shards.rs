//! `shardSelector` on the wire (KEP-5866): N ranges partition a list
//! exactly and each list echoes its selector in `shardInfo`; a watch with
//! a range gets its objects' events, deletions included, and no others;
//! shard, label and field selectors are AND-ed; `limit` counts matched
//! items; namespace sharding keeps a namespace whole; an invalid selector
//! is kube-apiserver's 500; with the feature gate off the parameter is
//! ignored.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{ev, Kube};
use kubeforge_apiserver::ApiServer;
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// The selector for shard `i` of `n` equal ranges over `field`.
fn range(field: &str, i: u128, n: u128) -> String {
    let step = (1u128 << 64) / n;
    let end = if i == n - 1 {
        1u128 << 64
    } else {
        (i + 1) * step
    };
    format!(
        "shardRange(object.metadata.{field}, '0x{:016x}', '0x{end:016x}')",
        i * step
    )
}

/// `selector` percent-encoded for a query string.
fn q(selector: &str) -> String {
    selector
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn names(list: &Value) -> BTreeSet<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test]
async fn ranges_partition_a_list_exactly_and_are_echoed() {
    let kube = Kube::start().await;
    for i in 0..40 {
        kube.configmap("default", &format!("cm-{i}"), json!({}))
            .await;
    }
    let all = names(&kube.get(CMS).await.json());
    assert_eq!(all.len(), 40);
    let mut union = BTreeSet::new();
    for i in 0..4 {
        let selector = range("uid", i, 4);
        let r = kube
            .get(&format!("{CMS}?shardSelector={}", q(&selector)))
            .await;
        assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
        let list = r.json();
        assert_eq!(list["metadata"]["shardInfo"]["selector"], selector);
        let shard = names(&list);
        assert!(shard.is_disjoint(&union), "shard {i} overlaps another");
        union.extend(shard);
    }
    assert_eq!(union, all);

    // ANDed with a label selector; `limit` counts matched items.
    let first = range("uid", 0, 2);
    let r = kube
        .get(&format!("{CMS}?shardSelector={}&limit=3", q(&first)))
        .await
        .json();
    assert_eq!(r["items"].as_array().unwrap().len(), 3);
    assert!(r["metadata"]["continue"].is_string());
    assert!(r["metadata"].get("remainingItemCount").is_none());
    let r = kube
        .get(&format!(
            "{CMS}?shardSelector={}&labelSelector=none%3Dhere",
            q(&first)
        ))
        .await
        .json();
    assert_eq!(names(&r).len(), 0);
}

#[tokio::test]
async fn a_watch_gets_its_ranges_events_and_no_others() {
    let kube = Kube::start().await;
    let half = range("uid", 0, 2);
    let mut w = kube
        .watch(&format!("{CMS}?watch=true&shardSelector={}", q(&half)))
        .await;
    let mut expected = Vec::new();
    for i in 0..12 {
        let name = format!("w-{i}");
        let obj = kube.configmap("default", &name, json!({})).await;
        let uid = obj["metadata"]["uid"].as_str().unwrap().to_owned();
        let r = kube.delete(&format!("{CMS}/{name}")).await;
        assert_eq!(r.code(), 200);
        if in_range(&uid, &half) {
            expected.push(("ADDED".to_owned(), name.clone()));
            expected.push(("DELETED".to_owned(), name));
        }
    }
    assert!(!expected.is_empty() && expected.len() < 24, "{expected:?}");
    let mut seen = Vec::new();
    while let Some(e) = w.next_within(Duration::from_millis(500)).await {
        seen.push(ev(&e));
    }
    assert_eq!(seen, expected);
}

/// Whether `uid` is in the first half (the test's own FNV-1a 64).
fn in_range(uid: &str, half: &str) -> bool {
    assert!(half.contains("'0x0000000000000000', '0x8000000000000000'"));
    let h = uid.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    h < 0x8000_0000_0000_0000
}

#[tokio::test]
async fn namespace_sharding_keeps_a_namespace_whole() {
    let kube = Kube::start().await;
    for ns in ["team-a", "team-b", "team-c", "team-d"] {
        let r = kube
            .post(
                "/api/v1/namespaces",
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            )
            .await;
        assert_eq!(r.code(), 201);
        for i in 0..3 {
            kube.configmap(ns, &format!("c{i}"), json!({})).await;
        }
    }
    let mut total = 0;
    for i in 0..2 {
        let selector = range("namespace", i, 2);
        let list = kube
            .get(&format!(
                "/api/v1/configmaps?shardSelector={}",
                q(&selector)
            ))
            .await
            .json();
        let mut per_ns = std::collections::BTreeMap::<String, usize>::new();
        for o in list["items"].as_array().unwrap() {
            let ns = o["metadata"]["namespace"].as_str().unwrap().to_owned();
            *per_ns.entry(ns).or_default() += 1;
        }
        for (ns, n) in &per_ns {
            if ns.starts_with("team-") {
                assert_eq!(*n, 3, "{ns} is split");
                total += n;
            }
        }
    }
    assert_eq!(total, 12);
}

/// `ErrorToAPIStatus` answers the store's plain error with a 500 and no
/// reason.
#[tokio::test]
async fn an_invalid_selector_is_a_500_with_the_parsers_message() {
    let kube = Kube::start().await;
    let r = kube
        .get(&format!(
            "{CMS}?shardSelector={}",
            q("shardRange(object.metadata.uid, '0x0', '0x10000000000000000')")
        ))
        .await;
    assert_eq!(r.code(), 500);
    let status = r.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(
        status["message"],
        r#"invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)"#
    );
    assert!(status.get("reason").is_none(), "{status}");
    let r = kube.get(&format!("{CMS}?shardSelector=%20")).await;
    assert_eq!(r.code(), 500);
    assert_eq!(
        r.json()["message"],
        "invalid shard selector: empty shard selector is not allowed; omit the parameter for unfiltered lists"
    );
    // An empty value counts as absent.
    let r = kube.get(&format!("{CMS}?shardSelector=")).await;
    assert_eq!(r.code(), 200);
    assert!(r.json()["metadata"].get("shardInfo").is_none());
}

#[tokio::test]
async fn with_the_gate_off_the_parameter_is_ignored() {
    let kube = Kube::with(ApiServer::builder().sharded_list_and_watch(false)).await;
    for i in 0..6 {
        kube.configmap("default", &format!("cm-{i}"), json!({}))
            .await;
    }
    let r = kube
        .get(&format!("{CMS}?shardSelector={}", q(&range("uid", 0, 4))))
        .await;
    assert_eq!(r.code(), 200);
    let list = r.json();
    assert!(list["metadata"].get("shardInfo").is_none());
    assert_eq!(names(&list).len(), 6);
    let r = kube.get(&format!("{CMS}?shardSelector=nonsense(")).await;
    assert_eq!(r.code(), 200);
}
