//! A server with a data directory (`ApiServerBuilder::data_dir`): a
//! restart keeps every object at its resourceVersion, CRDs and what they
//! serve, the CA, the admin token, token users and service-account tokens;
//! resourceVersions continue above every one issued before, and older ones
//! answer 410 as after a compaction. A directory another server holds, or
//! one that is not a server's state, is refused with an error naming it.
//! The crash test (SIGKILL under concurrent writers) is `crash.rs`.

mod common;

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use kubeforge_apiserver::{ApiServer, User};
use serde_json::{json, Value};

use common::{rv, Kube, Resp};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "default": 1},
                    }},
                }}},
            }],
        },
    })
}

/// A GET as the identity holding `token`.
async fn get_as(k: &Kube, token: &str, path: &str) -> Resp {
    let req = Request::builder()
        .uri(format!("{}{path}", k.base()))
        .header("authorization", format!("Bearer {token}"))
        .body(Full::new(Bytes::new()))
        .expect("request");
    k.send(req).await
}

async fn served(k: &Kube, path: &str) {
    for _ in 0..200 {
        if k.get(path).await.code() == 200 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{path} is not served");
}

#[tokio::test]
async fn a_restarted_server_keeps_objects_crds_identities_and_counts_on() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("state");
    let k = Kube::with(ApiServer::builder().data_dir(&data)).await;
    k.create_crd(&widget_crd()).await;
    served(&k, WIDGETS).await;
    let widget = k
        .post(
            WIDGETS,
            &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}),
        )
        .await;
    assert_eq!(
        widget.code(),
        201,
        "{}",
        String::from_utf8_lossy(&widget.body)
    );
    let widget = widget.json();
    k.configmap("default", "kept", json!({"v": "1"})).await;
    let kept = k
        .merge(&format!("{CMS}/kept"), &json!({"data": {"v": "2"}}))
        .await
        .json();
    k.configmap("default", "gone", json!({})).await;
    assert_eq!(k.delete(&format!("{CMS}/gone")).await.code(), 200);
    let alice = k.server.add_user(&User::new("alice")).unwrap();
    let robot = k.server.add_service_account("default", "robot").unwrap();
    let before = k.get(CMS).await.json();
    let before_rv = rv(&before);
    let ca = k.server.ca_der().to_vec();
    let admin = k.server.token().to_owned();
    k.server.shutdown().await;

    let k = Kube::with(ApiServer::builder().data_dir(&data)).await;
    assert_eq!(
        k.server.ca_der(),
        ca,
        "the same CA: old kubeconfigs verify the server"
    );
    assert_eq!(k.server.token(), admin, "the same admin token");
    let got = k.get(&format!("{CMS}/kept")).await;
    assert_eq!(got.code(), 200);
    let got = got.json();
    assert_eq!(got["data"]["v"], "2");
    assert_eq!(
        rv(&got),
        rv(&kept),
        "at the resourceVersion it was written at"
    );
    assert_eq!(got["metadata"]["uid"], kept["metadata"]["uid"]);
    assert_eq!(
        k.get(&format!("{CMS}/gone")).await.code(),
        404,
        "the deletion too"
    );
    // The CRD's resource is served again, with its schema's defaults.
    let w = k.get(&format!("{WIDGETS}/w")).await;
    assert_eq!(w.code(), 200, "{}", String::from_utf8_lossy(&w.body));
    assert_eq!(w.json()["spec"]["size"], 1);
    assert_eq!(rv(&w.json()), rv(&widget));
    // Kept identities authenticate (RBAC grants them nothing: 403, not 401).
    for creds in [&alice, &robot] {
        let token = creds.bearer_token().unwrap();
        let r = get_as(&k, token, CMS).await;
        assert_eq!(
            r.code(),
            403,
            "{}: {}",
            creds.user(),
            String::from_utf8_lossy(&r.body)
        );
    }
    // resourceVersions continue above every one issued before.
    let next = k.configmap("default", "after", json!({})).await;
    assert!(rv(&next) > before_rv, "{} > {before_rv}", rv(&next));
    // The history was not kept: older resourceVersions are compacted.
    let mut w = k
        .watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&kept)))
        .await;
    let e = w.next().await;
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 410);
    let r = k
        .get(&format!(
            "{CMS}?resourceVersion={}&resourceVersionMatch=Exact",
            rv(&kept)
        ))
        .await;
    assert_eq!(r.code(), 410);
    // The current state lists and watches as usual.
    let list = k.get(CMS).await.json();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["after", "kept"]);
    k.server.shutdown().await;
}

#[tokio::test]
async fn a_restart_resumes_deletions_and_keeps_cluster_ips_unique() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("state");
    let k = Kube::with(ApiServer::builder().data_dir(&data)).await;
    let svc = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"ports": [{"port": 80}]}})
    };
    let services = "/api/v1/namespaces/default/services";
    let first = k.post(services, &svc("first")).await.json();
    // A namespace whose deletion waits on a finalizer of its ConfigMap.
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}});
    assert_eq!(k.post("/api/v1/namespaces", &ns).await.code(), 201);
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    assert_eq!(
        k.post("/api/v1/namespaces/doomed/configmaps", &held)
            .await
            .code(),
        201
    );
    assert_eq!(k.delete("/api/v1/namespaces/doomed").await.code(), 200);
    k.server.shutdown().await;

    let k = Kube::with(ApiServer::builder().data_dir(&data)).await;
    let second = k.post(services, &svc("second")).await.json();
    assert_ne!(
        second["spec"]["clusterIP"], first["spec"]["clusterIP"],
        "a cluster IP taken before the restart is not handed out again"
    );
    // Releasing the finalizer lets the restored namespace deletion finish.
    let path = "/api/v1/namespaces/doomed/configmaps/held";
    assert_eq!(
        k.merge(path, &json!({"metadata": {"finalizers": null}}))
            .await
            .code(),
        200
    );
    for _ in 0..300 {
        if k.get("/api/v1/namespaces/doomed").await.code() == 404 {
            k.server.shutdown().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the namespace deletion did not resume after the restart");
}

#[tokio::test]
async fn a_directory_held_by_a_running_server_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let first = ApiServer::builder()
        .data_dir(dir.path())
        .start()
        .await
        .unwrap();
    let err = ApiServer::builder()
        .data_dir(dir.path())
        .start()
        .await
        .expect_err("a second server on the same directory");
    let msg = err.to_string();
    assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
    assert!(msg.contains("in use by another running server"), "{msg}");
    first.shutdown().await;
    // Once the first is gone, the directory is free again.
    let again = ApiServer::builder()
        .data_dir(dir.path())
        .start()
        .await
        .unwrap();
    again.shutdown().await;
}

#[tokio::test]
async fn a_directory_that_is_not_a_servers_state_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let msg = ApiServer::builder()
        .data_dir(&foreign)
        .start()
        .await
        .expect_err("a directory of other files")
        .to_string();
    assert!(msg.contains("not a server's state"), "{msg}");
    assert_eq!(
        std::fs::read_dir(&foreign).unwrap().count(),
        1,
        "nothing written"
    );

    let corrupt = dir.path().join("corrupt");
    std::fs::create_dir(&corrupt).unwrap();
    std::fs::write(corrupt.join("state.redb"), vec![0x5a; 8192]).unwrap();
    let msg = ApiServer::builder()
        .data_dir(&corrupt)
        .start()
        .await
        .expect_err("a corrupt database")
        .to_string();
    assert!(msg.contains(&corrupt.display().to_string()), "{msg}");
    assert!(msg.contains("move the directory aside"), "{msg}");
    assert_eq!(
        std::fs::read(corrupt.join("state.redb")).unwrap(),
        vec![0x5a; 8192]
    );
}
