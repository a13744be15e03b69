//! The real `kubectl` reading and writing a custom resource at both
//! versions of a CRD whose conversion goes through a webhook: written at
//! v1, read at v2 and back unchanged; written at v2, stored at v1. The
//! webhook is the API server tests' own small ConversionReview server, so
//! neither side shares code with the server's conversion.

#[allow(dead_code)]
#[path = "../../framework/apiserver/tests/webhooks/server.rs"]
mod server;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use kubeforge::testing::ApiServer;
use serde_json::{json, Value};
use tokio::process::Command;

use server::Webhook;

struct Env {
    _server: ApiServer,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Env {
    async fn start() -> Env {
        let server = ApiServer::start().await.expect("server starts");
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Env {
            _server: server,
            dir,
            kubeconfig,
        }
    }

    /// Runs kubectl, feeding `stdin`, and expects success.
    async fn ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let mut c = Command::new("kubectl");
        c.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = c.spawn().expect("kubectl runs");
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            use tokio::io::AsyncWriteExt;
            pipe.write_all(text.as_bytes()).await.expect("stdin");
        }
        let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .expect("kubectl finishes");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    async fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&all, None).await).expect("kubectl JSON")
    }
}

fn crd(hook: &Webhook) -> Value {
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}})
    };
    let column = |path: &str| json!([{"name": "Count", "type": "integer", "jsonPath": path}]);
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.ex.com"},
        "spec": {"group": "ex.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("size"),
                 "additionalPrinterColumns": column(".spec.size")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("replicas"),
                 "additionalPrinterColumns": column(".spec.replicas")}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": hook.url("/convert"), "caBundle": hook.ca_bundle},
                "conversionReviewVersions": ["v1"]}}}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_and_writes_a_widget_at_both_versions() {
    let env = Env::start().await;
    let hook = Webhook::start().await;
    env.ok(&["create", "-f", "-"], Some(&crd(&hook).to_string()))
        .await;
    env.ok(
        &[
            "wait",
            "--for=condition=Established",
            "crd/widgets.ex.com",
            "--timeout=10s",
        ],
        None,
    )
    .await;
    let widget = json!({"apiVersion": "ex.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"}, "spec": {"size": 3}});
    env.ok(&["create", "-f", "-"], Some(&widget.to_string()))
        .await;

    let at_v1 = env.json(&["get", "widgets.v1.ex.com", "w1"]).await;
    let at_v2 = env.json(&["get", "widgets.v2.ex.com", "w1"]).await;
    assert_eq!(at_v1["apiVersion"], "ex.com/v1");
    assert_eq!(at_v1["spec"], json!({"size": 3}));
    assert_eq!(at_v2["apiVersion"], "ex.com/v2");
    assert_eq!(at_v2["spec"], json!({"replicas": 3}));
    assert_eq!(at_v2["metadata"], at_v1["metadata"]);
    assert_eq!(server::convert_widget(&at_v2, "ex.com/v1"), at_v1);
    // The Table kubectl prints is built from the converted object.
    let table = env.ok(&["get", "widgets.v2.ex.com"], None).await;
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(row.get(..2), Some(&["w1", "3"][..]), "{table}");

    // Written at v2, stored at v1.
    env.ok(
        &[
            "patch",
            "widgets.v2.ex.com",
            "w1",
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":5}}"#,
        ],
        None,
    )
    .await;
    let stored = env.json(&["get", "widgets.v1.ex.com", "w1"]).await;
    assert_eq!(stored["spec"], json!({"size": 5}));
    assert!(!hook.seen("/convert").is_empty());
}
