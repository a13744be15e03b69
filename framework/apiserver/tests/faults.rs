//! Fault injection: closing watches, failing requests with chosen
//! statuses, latency, and counting open watches.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod common;
mod poll;

use std::time::{Duration, Instant};

use common::{rv, Kube};
use kubeforge_apiserver::{ApiServer, Failure, RequestMatch};
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn close_watches_ends_every_stream() {
    let k = Kube::start().await;
    let list = k.get(CMS).await.json();
    let mut a = k
        .watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&list)))
        .await;
    let mut b = k
        .watch(&format!(
            "/api/v1/secrets?watch=1&resourceVersion={}",
            rv(&list)
        ))
        .await;
    let faults = k.server.faults();
    assert_eq!(faults.open_watches_for("", "configmaps"), 1);
    assert_eq!(faults.open_watches_for("", "secrets"), 1);
    faults.close_watches();
    assert!(a.ends_within(Duration::from_secs(2)).await);
    assert!(b.ends_within(Duration::from_secs(2)).await);
    assert!(faults.open_watches().is_empty());
    // New watches work afterwards.
    let mut c = k
        .watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&list)))
        .await;
    k.configmap("default", "x", json!({})).await;
    assert_eq!(c.next().await["type"], "ADDED");
}

#[tokio::test]
async fn open_watches_are_counted_per_resource() {
    let k = Kube::start().await;
    let faults = k.server.faults();
    let w1 = k.watch(&format!("{CMS}?watch=1")).await;
    let w2 = k.watch("/api/v1/configmaps?watch=1").await;
    let w3 = k.watch("/apis/apps/v1/deployments?watch=1").await;
    assert_eq!(faults.open_watches_for("", "configmaps"), 2);
    assert_eq!(faults.open_watches_for("apps", "deployments"), 1);
    drop((w1, w2));
    // The count drops once the server notices the closed streams, which a
    // write to them makes it do.
    poll::eventually("the closed watches to be noticed", async || {
        if faults.open_watches_for("", "configmaps") == 0 {
            return true;
        }
        k.configmap("default", &format!("n{}", fastrand::u32(..)), json!({}))
            .await;
        false
    })
    .await;
    drop(w3);
}

#[tokio::test]
async fn fail_next_answers_matching_requests_with_the_chosen_status() {
    let k = Kube::start().await;
    let faults = k.server.faults();
    faults.fail_next(
        2,
        RequestMatch::verb("list").resource("configmaps"),
        Failure::TooManyRequests {
            retry_after_seconds: 3,
        },
    );
    let r = k.get(CMS).await;
    assert_eq!(r.code(), 429);
    assert_eq!(r.headers["retry-after"], "3");
    let s = r.json();
    assert_eq!(s["reason"], "TooManyRequests");
    assert_eq!(s["details"]["retryAfterSeconds"], 3);
    // Other resources and verbs are untouched.
    assert_eq!(
        k.get("/api/v1/namespaces/default/secrets").await.code(),
        200
    );
    assert_eq!(k.get(CMS).await.code(), 429);
    assert_eq!(k.get(CMS).await.code(), 200, "only the next two");
    faults.fail_next(1, RequestMatch::any(), Failure::InternalError);
    assert_eq!(k.get("/api/v1/namespaces").await.code(), 500);
    faults.fail_next(
        1,
        RequestMatch::verb("create"),
        Failure::ServiceUnavailable {
            retry_after_seconds: 1,
        },
    );
    let r = k
        .post(
            CMS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        )
        .await;
    assert_eq!(r.code(), 503);
    assert_eq!(r.json()["reason"], "ServiceUnavailable");
    faults.fail_next(1, RequestMatch::verb("list"), Failure::Expired);
    let r = k.get(CMS).await;
    assert_eq!(r.code(), 410);
    assert_eq!(r.json()["reason"], "Expired");
}

#[tokio::test]
async fn an_injected_410_on_a_watch_is_an_error_event() {
    let k = Kube::start().await;
    k.server.faults().fail_next(
        1,
        RequestMatch::verb("watch").resource("configmaps"),
        Failure::Expired,
    );
    let mut w = k.watch(&format!("{CMS}?watch=1&resourceVersion=1")).await;
    let e = w.next().await;
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 410);
    assert!(w.ends_within(Duration::from_secs(2)).await);
}

#[tokio::test]
async fn latency_delays_requests_and_clear_removes_it() {
    let k = Kube::with(ApiServer::builder().latency(Duration::from_millis(150))).await;
    let t = Instant::now();
    k.get(CMS).await;
    assert!(t.elapsed() >= Duration::from_millis(150));
    // A latency no request could sit out: after `clear` the GET answers,
    // where it would otherwise hit the client's 20 s timeout. (Not a timed
    // upper bound, which a loaded machine could miss.)
    k.server
        .faults()
        .set_latency(Some(Duration::from_secs(3600)));
    k.server.faults().clear();
    assert_eq!(k.get(CMS).await.code(), 200);
}

#[tokio::test]
async fn builder_failures_apply_from_the_start() {
    let k = Kube::with(ApiServer::builder().fail_next(
        1,
        RequestMatch::verb("get"),
        Failure::InternalError,
    ))
    .await;
    assert_eq!(k.get(&format!("{CMS}/x")).await.code(), 500);
    assert_eq!(k.get(&format!("{CMS}/x")).await.code(), 404);
}

#[tokio::test]
async fn many_watches_share_one_http2_connection() {
    let k = Kube::start().await;
    let mut watches = Vec::new();
    for _ in 0..150 {
        watches.push(k.watch(&format!("{CMS}?watch=1&resourceVersion=1")).await);
    }
    assert_eq!(k.server.faults().open_watches_for("", "configmaps"), 150);
    // Streams of one HTTP/2 connection (the client pools one per host);
    // over HTTP/1.1 each watch would hold a connection of its own.
    assert!(watches.iter().all(|w| w.version == http::Version::HTTP_2));
    k.configmap("default", "seen", json!({})).await;
    for w in &mut watches {
        assert_eq!(w.next().await["object"]["metadata"]["name"], "seen");
    }
}
