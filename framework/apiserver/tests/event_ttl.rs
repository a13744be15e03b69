//! Event expiry, kube-apiserver's `--event-ttl`: an Event not written for
//! the TTL goes (through either group's endpoint, one storage); one
//! written again stays; other kinds never expire; `None` turns it off.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod common;
mod poll;

use std::time::Duration;

use common::Kube;
use kubeforge_apiserver::ApiServer;
use poll::eventually;
use serde_json::{json, Value};

const CORE: &str = "/api/v1/namespaces/default/events";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn event(name: &str, note: &str) -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "reportingController": "example.com/soak", "reportingInstance": "soak-1",
        "action": "Finalize", "reason": "Finalized", "type": "Normal", "note": note,
        "regarding": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default", "name": "x"},
    })
}

#[tokio::test]
async fn an_event_not_written_for_the_ttl_is_deleted() {
    let k = Kube::with(ApiServer::builder().event_ttl(Some(Duration::from_millis(500)))).await;
    assert_eq!(k.post(EVENTS, &event("old", "once")).await.code(), 201);
    assert_eq!(
        k.configmap("default", "stays", json!({})).await["kind"],
        "ConfigMap"
    );
    eventually("the Event expired", async || {
        k.get(&format!("{EVENTS}/old")).await.code() == 404
    })
    .await;
    assert_eq!(
        k.get(&format!("{CORE}/old")).await.code(),
        404,
        "one storage"
    );
    assert_eq!(k.get(&format!("{CMS}/stays")).await.code(), 200);
}

#[tokio::test]
async fn an_event_written_again_within_the_ttl_stays() {
    let ttl = Duration::from_secs(2);
    let k = Kube::with(ApiServer::builder().event_ttl(Some(ttl))).await;
    assert_eq!(k.post(EVENTS, &event("series", "0")).await.code(), 201);
    // Rewritten every 400 ms for three TTLs: never expired.
    for i in 1..=15 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let mut current = k.get(&format!("{EVENTS}/series")).await;
        assert_eq!(current.code(), 200, "expired although written {i} times");
        let mut body = current.json();
        body["note"] = json!(i.to_string());
        current = k.put(&format!("{EVENTS}/series"), &body).await;
        assert_eq!(current.code(), 200);
    }
    eventually("the Event expired once no longer written", async || {
        k.get(&format!("{EVENTS}/series")).await.code() == 404
    })
    .await;
}

#[tokio::test]
async fn without_a_ttl_events_stay() {
    let k = Kube::with(ApiServer::builder().event_ttl(None)).await;
    assert_eq!(k.post(EVENTS, &event("kept", "once")).await.code(), 201);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(k.get(&format!("{EVENTS}/kept")).await.code(), 200);
}
