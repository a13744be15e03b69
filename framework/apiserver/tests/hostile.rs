//! What a careless or hostile client sends: CEL rules that nest too deeply,
//! cost too much or make the parser fail in odd places, YAML alias bombs,
//! oversized watch histories and unknown fields. The server answers each
//! with kube-apiserver's error and keeps serving.

mod common;

use common::Kube;
use kubeforge_apiserver::ApiServer;
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn watch_history_is_bounded_in_bytes_and_answers_410_past_it() {
    let k = Kube::with(ApiServer::builder().watch_history_bytes(1 << 20)).await;
    let first = k.configmap("default", "big", json!({})).await;
    let value = "v".repeat(300 << 10);
    for i in 0..6 {
        let r = k
            .merge(
                &format!("{CMS}/big"),
                &json!({"data": {"v": format!("{i}{value}")}}),
            )
            .await;
        assert_eq!(r.code(), 200);
    }
    let mut w = k
        .watch(&format!(
            "{CMS}?watch=1&resourceVersion={}",
            common::rv(&first)
        ))
        .await;
    let e = w.next().await;
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 410);
    assert_eq!(e["object"]["reason"], "Expired");
    // The recent past is still there.
    let latest = k.get(&format!("{CMS}/big")).await.json();
    let mut w = k
        .watch(&format!(
            "{CMS}?watch=1&resourceVersion={}",
            common::rv(&latest) - 1
        ))
        .await;
    assert_eq!(w.next().await["type"], "MODIFIED");
}
