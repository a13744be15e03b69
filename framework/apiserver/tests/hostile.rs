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
async fn yaml_alias_bombs_are_refused() {
    let k = Kube::start().await;
    let mut doc = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\nx:\n  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let mut prev = 'a';
    for name in 'b'..='j' {
        let refs = vec![format!("*{prev}"); 9].join(",");
        doc.push_str(&format!("  {name}: &{name} [{refs}]\n"));
        prev = name;
    }
    let r = k
        .raw("POST", CMS, Some("application/yaml"), doc, None)
        .await;
    assert_eq!(r.code(), 400, "{}", String::from_utf8_lossy(&r.body));
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("yaml: document contains excessive aliasing"),
        "{}",
        r.json()
    );
    // Few aliases of long strings: bounded in bytes.
    let long = "x".repeat(1 << 20);
    let doc = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: long\ndata:\n  a: &a \"{long}\"\n  b: *a\n  c: *a\n  d: *a\n  e: *a\n");
    let r = k
        .raw("POST", CMS, Some("application/yaml"), doc, None)
        .await;
    assert_eq!(r.code(), 400, "{}", String::from_utf8_lossy(&r.body));
    // Anchors used as intended still work.
    let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n  labels: &l {app: web}\n  annotations: *l\n";
    let r = k
        .raw("POST", CMS, Some("application/yaml"), doc, None)
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["metadata"]["annotations"]["app"], "web");
}

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
