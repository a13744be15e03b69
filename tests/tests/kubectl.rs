//! The real `kubectl` against kubeforge's API server: each test starts its
//! own server (in-process, or the `kubeforge dev-server` binary), writes a
//! kubeconfig and uses its own `KUBECACHEDIR`.
//!
//! Manifests go through `create`/`apply --validate=false`: kubectl's
//! default validation needs the server's OpenAPI v3 documents, which this
//! server does not serve yet.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use kubeforge::testing::ApiServer;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// A server plus a kubectl environment for it.
struct Env {
    _server: Option<ApiServer>,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

/// What a kubectl run produced.
#[derive(Debug)]
struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Env {
    async fn start() -> Env {
        let server = ApiServer::start().await.expect("server starts");
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Env {
            _server: Some(server),
            dir,
            kubeconfig,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        c
    }

    async fn run(&self, args: &[&str]) -> Out {
        let out = tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .expect("kubectl runs");
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs kubectl and expects success.
    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert!(
            out.ok,
            "kubectl {args:?} failed:\n{}\n{}",
            out.stdout, out.stderr
        );
        out.stdout
    }

    async fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&all).await).expect("kubectl JSON")
    }

    fn file(&self, name: &str, text: &str) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).expect("manifest");
        p.to_string_lossy().into_owned()
    }

    /// `kubectl create -f` for a manifest.
    async fn create(&self, name: &str, text: &str) -> String {
        let f = self.file(name, text);
        self.ok(&["create", "--validate=false", "-f", &f]).await
    }

    async fn eventually(&self, what: &str, args: &[&str], pred: impl Fn(&Out) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = self.run(args).await;
            if pred(&out) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {out:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
"#;

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Color, type: string, jsonPath: .spec.color, priority: 1}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_reports_the_server() {
    let env = Env::start().await;
    let v: Value = serde_json::from_str(&env.ok(&["version", "-o", "json"]).await).unwrap();
    assert_eq!(v["serverVersion"]["major"], "1");
    assert_eq!(v["serverVersion"]["minor"], "33");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_resources_lists_names_short_names_and_categories() {
    let env = Env::start().await;
    let out = env.ok(&["api-resources", "--no-headers"]).await;
    let line = |name: &str, group: &str| {
        out.lines()
            .find(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.first() == Some(&name) && cols.contains(&group)
            })
            .unwrap_or_else(|| panic!("{name} in\n{out}"))
            .to_owned()
    };
    assert!(line("deployments", "apps/v1").contains("deploy"));
    assert!(line("customresourcedefinitions", "apiextensions.k8s.io/v1").contains("crd,crds"));
    assert!(line("leases", "coordination.k8s.io/v1").contains("Lease"));
    let wide = env
        .ok(&["api-resources", "-o", "wide", "--api-group=apps"])
        .await;
    assert!(
        wide.lines()
            .any(|l| l.starts_with("deployments") && l.contains("all")),
        "{wide}"
    );
    let names = env
        .ok(&["api-resources", "--namespaced=false", "-o", "name"])
        .await;
    assert!(names.lines().any(|l| l == "namespaces"));
    assert!(!names.lines().any(|l| l == "configmaps"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_get_list_and_describe_builtins() {
    let env = Env::start().await;
    env.create("deploy.yaml", DEPLOYMENT).await;
    env.create(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels: {app: web}\ndata:\n  a: '1'\n  b: '2'\n",
    )
    .await;
    env.create(
        "svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n",
    )
    .await;
    let table = env.ok(&["get", "deploy"]).await;
    assert!(table.starts_with("NAME"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("web") && l.contains("0/2")),
        "{table}"
    );
    let wide = env
        .ok(&["get", "deployments.apps", "web", "-o", "wide"])
        .await;
    assert!(
        wide.contains("nginx:1.27") && wide.contains("app=web"),
        "{wide}"
    );
    let cm = env.ok(&["get", "cm"]).await;
    assert!(
        cm.lines()
            .any(|l| l.starts_with("settings") && l.split_whitespace().nth(1) == Some("2")),
        "{cm}"
    );
    let svc = env.ok(&["get", "svc", "web"]).await;
    assert!(svc.contains("ClusterIP") && svc.contains("80/TCP"), "{svc}");
    let json = env.json(&["get", "deploy", "web"]).await;
    assert_eq!(json["kind"], "Deployment");
    assert_eq!(json["spec"]["replicas"], 2);
    let yaml = env.ok(&["get", "cm", "settings", "-o", "yaml"]).await;
    assert!(
        yaml.contains("kind: ConfigMap") && yaml.contains("a: \"1\""),
        "{yaml}"
    );
    let list = env.json(&["get", "cm,deploy"]).await;
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    let all_ns = env.ok(&["get", "sa", "-A", "--no-headers"]).await;
    assert_eq!(all_ns.lines().count(), 4, "{all_ns}");
    let describe = env.ok(&["describe", "deploy", "web"]).await;
    assert!(
        describe.contains("Replicas:") && describe.contains("2 desired"),
        "{describe}"
    );
    let describe = env.ok(&["describe", "cm", "settings"]).await;
    assert!(
        describe.contains("Name:") && describe.contains("settings"),
        "{describe}"
    );
    let all = env.ok(&["get", "all"]).await;
    assert!(
        all.contains("deployment.apps/web") && all.contains("service/web"),
        "{all}"
    );
    let missing = env.run(&["get", "cm", "nope"]).await;
    assert!(!missing.ok);
    assert!(
        missing.stderr.contains("configmaps \"nope\" not found"),
        "{}",
        missing.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_selectors() {
    let env = Env::start().await;
    for (n, app) in [("a", "web"), ("b", "db"), ("c", "web")] {
        env.create(
            &format!("{n}.yaml"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\n  labels: {{app: {app}}}\n"),
        )
        .await;
    }
    let names = env.ok(&["get", "cm", "-l", "app=web", "-o", "name"]).await;
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        ["configmap/a", "configmap/c"]
    );
    let names = env
        .ok(&["get", "cm", "-l", "app notin (web),app", "-o", "name"])
        .await;
    assert_eq!(names.trim(), "configmap/b");
    let names = env
        .ok(&[
            "get",
            "cm",
            "--field-selector",
            "metadata.name=c",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(names.trim(), "configmap/c");
    env.ok(&["label", "cm", "b", "app=web", "--overwrite"])
        .await;
    let names = env.ok(&["get", "cm", "-l", "app=web", "-o", "name"]).await;
    assert_eq!(names.lines().count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_watch_sees_changes() {
    let env = Env::start().await;
    let mut child = env
        .command(&[
            "get",
            "cm",
            "--watch",
            "--output-watch-events",
            "--no-headers",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("kubectl get -w");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    // Let the watch start, then change things.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    env.create(
        "w.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched\n",
    )
    .await;
    env.ok(&["label", "cm", "watched", "x=y"]).await;
    env.ok(&["delete", "cm", "watched"]).await;
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while seen.len() < 3 && Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(5), lines.next_line()).await {
            Ok(Ok(Some(l))) if l.contains("watched") => {
                seen.push(l.split_whitespace().next().unwrap_or("").to_owned())
            }
            Ok(Ok(Some(_))) => {}
            _ => break,
        }
    }
    let _ = child.kill().await;
    assert_eq!(seen, ["ADDED", "MODIFIED", "DELETED"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_merge_json_and_status() {
    let env = Env::start().await;
    env.create("deploy.yaml", DEPLOYMENT).await;
    env.ok(&[
        "patch",
        "deploy",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ])
    .await;
    env.ok(&[
        "patch",
        "deploy",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/metadata/labels/tier","value":"front"}]"#,
    ])
    .await;
    env.ok(&[
        "patch",
        "deploy",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"readyReplicas":3,"replicas":3}}"#,
    ])
    .await;
    let d = env.json(&["get", "deploy", "web"]).await;
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["metadata"]["labels"]["tier"], "front");
    assert_eq!(d["status"]["readyReplicas"], 3);
    assert_eq!(d["metadata"]["generation"], 2);
    let table = env.ok(&["get", "deploy", "web", "--no-headers"]).await;
    assert!(table.contains("3/3"), "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale() {
    let env = Env::start().await;
    env.create("deploy.yaml", DEPLOYMENT).await;
    let out = env.ok(&["scale", "deploy", "web", "--replicas=5"]).await;
    assert!(out.contains("scaled"), "{out}");
    let d = env.json(&["get", "deploy", "web"]).await;
    assert_eq!(d["spec"]["replicas"], 5);
    let stale = env
        .run(&[
            "scale",
            "deploy",
            "web",
            "--replicas=1",
            "--current-replicas=2",
        ])
        .await;
    assert!(!stale.ok, "precondition on current replicas");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_with_a_finalizer_waits_until_it_is_removed() {
    let env = Env::start().await;
    env.create(
        "f.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\n",
    )
    .await;
    env.ok(&["delete", "cm", "held", "--wait=false"]).await;
    let cm = env.json(&["get", "cm", "held"]).await;
    assert!(cm["metadata"]["deletionTimestamp"].is_string());
    let waiting = env.run(&["delete", "cm", "held", "--timeout=2s"]).await;
    assert!(!waiting.ok, "kubectl delete waits for the finalizer");
    env.ok(&[
        "patch",
        "cm",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])
    .await;
    let gone = env.run(&["get", "cm", "held"]).await;
    assert!(!gone.ok && gone.stderr.contains("not found"), "{gone:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cascading_deletion_of_owned_objects() {
    let env = Env::start().await;
    env.create(
        "owner.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owner\n",
    )
    .await;
    let uid = env
        .ok(&["get", "cm", "owner", "-o", "jsonpath={.metadata.uid}"])
        .await;
    for (name, block) in [("child", "true"), ("other", "false")] {
        env.create(
            &format!("{name}.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}, blockOwnerDeletion: {block}}}\n"
            ),
        )
        .await;
    }
    env.ok(&[
        "delete",
        "cm",
        "owner",
        "--cascade=foreground",
        "--timeout=20s",
    ])
    .await;
    env.eventually("dependents deleted", &["get", "cm", "-o", "name"], |o| {
        o.ok && !o.stdout.contains("child") && !o.stdout.contains("other")
    })
    .await;
    // Orphaning keeps the dependent.
    env.create(
        "owner2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owner2\n",
    )
    .await;
    let uid = env
        .ok(&["get", "cm", "owner2", "-o", "jsonpath={.metadata.uid}"])
        .await;
    env.create(
        "kept.yaml",
        &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: owner2, uid: {uid}}}\n"),
    )
    .await;
    env.ok(&["delete", "cm", "owner2", "--cascade=orphan"])
        .await;
    let kept = env.json(&["get", "cm", "kept"]).await;
    assert!(kept["metadata"].get("ownerReferences").is_none(), "{kept}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_deletion_finishes() {
    let env = Env::start().await;
    env.create(
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: team\n",
    )
    .await;
    env.create(
        "deploy.yaml",
        &DEPLOYMENT.replace(
            "name: web\n  labels",
            "name: web\n  namespace: team\n  labels",
        ),
    )
    .await;
    let out = env.ok(&["delete", "ns", "team", "--timeout=30s"]).await;
    assert!(out.contains("deleted"), "{out}");
    let gone = env.run(&["get", "ns", "team"]).await;
    assert!(!gone.ok && gone.stderr.contains("not found"), "{gone:?}");
    let left = env.ok(&["get", "all", "-n", "team", "-o", "name"]).await;
    assert!(left.trim().is_empty(), "{left}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_apply_wait_and_custom_resources_with_printer_columns() {
    let env = Env::start().await;
    let f = env.file("crd.yaml", CRD);
    env.ok(&["apply", "--validate=false", "-f", &f]).await;
    env.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=10s",
    ])
    .await;
    let w = env.file("w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n  color: blue\n");
    env.ok(&["apply", "--validate=false", "-f", &w]).await;
    let table = env.ok(&["get", "widgets"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SIZE", "AGE"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..2], ["w1", "3"]);
    assert!(row[2].ends_with('s'), "AGE is an age: {table}");
    let wide = env.ok(&["get", "wd", "-o", "wide"]).await;
    assert!(
        wide.lines().next().unwrap().contains("COLOR") && wide.contains("blue"),
        "{wide}"
    );
    let all = env.ok(&["get", "all", "-o", "name"]).await;
    assert!(all.contains("widget.example.com/w1"), "{all}");
    let obj = env.json(&["get", "widget", "w1"]).await;
    assert_eq!(obj["apiVersion"], "example.com/v1");
    assert_eq!(obj["metadata"]["generation"], 1);
    env.ok(&[
        "patch",
        "wd",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":4}}"#,
    ])
    .await;
    assert_eq!(
        env.json(&["get", "wd", "w1"]).await["metadata"]["generation"],
        2
    );
    // Re-applying a custom resource is a JSON merge patch (client-side apply).
    let w = env.file(
        "w.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 6\n",
    );
    let out = env.ok(&["apply", "--validate=false", "-f", &w]).await;
    assert!(out.contains("configured"), "{out}");
    let obj = env.json(&["get", "wd", "w1"]).await;
    assert_eq!(
        obj["spec"],
        serde_json::json!({"size": 6}),
        "color removed by the three-way merge"
    );
    env.ok(&["delete", "crd", "widgets.example.com", "--timeout=20s"])
        .await;
    let gone = env.run(&["get", "widgets"]).await;
    assert!(!gone.ok, "{gone:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_rejected() {
    let env = Env::start().await;
    let text = std::fs::read_to_string(&env.kubeconfig).unwrap();
    let token_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("token:"))
        .unwrap();
    std::fs::write(
        &env.kubeconfig,
        text.replace(token_line, "    token: wrong"),
    )
    .unwrap();
    let out = env.run(&["get", "ns"]).await;
    assert!(!out.ok);
    assert!(
        out.stderr.contains("Unauthorized") || out.stderr.contains("You must be logged in"),
        "{}",
        out.stderr
    );
}

/// The `kubeforge` binary, built if needed.
fn kubeforge_binary() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "kubeforge-cli",
            "--bin",
            "kubeforge",
        ])
        .current_dir(&root)
        .status()
        .expect("cargo build runs");
    assert!(status.success(), "building kubeforge failed");
    target.join("debug").join("kubeforge")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_server_binary_serves_kubectl_and_installs_crds() {
    let bin = kubeforge_binary();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let crd = dir.path().join("crds");
    std::fs::create_dir(&crd).unwrap();
    std::fs::write(crd.join("widgets.yaml"), format!("---\n{CRD}\n---\n")).unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let listen = format!("127.0.0.1:{port}");
    let mut server = Command::new(&bin)
        .args(["dev-server", "--listen", &listen, "--write-kubeconfig"])
        .arg(&kubeconfig)
        .arg("--crd")
        .arg(&crd)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("dev-server starts");
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut banner = String::new();
    while !banner.contains("kubeconfig written") {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("dev-server prints its banner")
            .unwrap()
            .expect("a banner line");
        banner.push_str(&line);
        banner.push('\n');
    }
    assert!(banner.contains(&format!("https://{listen}")), "{banner}");
    let env = Env {
        _server: None,
        dir,
        kubeconfig,
    };
    env.ok(&["get", "ns", "default"]).await;
    let crds = env.ok(&["get", "crd", "-o", "name"]).await;
    assert_eq!(
        crds.trim(),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com"
    );
    // SIGTERM ends it cleanly.
    let pid = server.id().expect("pid");
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(10), server.wait())
        .await
        .expect("exits")
        .unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imperative_creates_send_protobuf_and_are_decoded() {
    // kubectl sends these bodies as protobuf.
    let env = Env::start().await;
    env.ok(&["create", "namespace", "team"]).await;
    env.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "team",
        "--from-literal=a=1",
        "--from-literal=b=2",
    ])
    .await;
    env.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "team",
        "--from-literal=user=me",
    ])
    .await;
    env.ok(&["create", "serviceaccount", "bot", "-n", "team"])
        .await;
    let cm = env.json(&["get", "cm", "settings", "-n", "team"]).await;
    assert_eq!(cm["data"], serde_json::json!({"a": "1", "b": "2"}));
    let secret = env.json(&["get", "secret", "creds", "-n", "team"]).await;
    assert_eq!(secret["data"]["user"], "bWU=");
    assert_eq!(secret["type"], "Opaque");
    let ns = env.json(&["get", "ns", "team"]).await;
    assert_eq!(ns["status"]["phase"], "Active");
    assert!(ns["metadata"].get("generateName").is_none());
    let sas = env.ok(&["get", "sa", "-n", "team", "-o", "name"]).await;
    assert_eq!(
        sas.lines().collect::<Vec<_>>(),
        ["serviceaccount/bot", "serviceaccount/default"]
    );
    // Workloads too: kubectl sends them as protobuf.
    env.ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        "team",
        "--image=nginx",
        "--replicas=2",
    ])
    .await;
    let web = env.json(&["get", "deploy", "web", "-n", "team"]).await;
    assert_eq!(web["spec"]["replicas"], 2);
    assert_eq!(
        web["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx"
    );
    assert_eq!(web["spec"]["selector"]["matchLabels"]["app"], "web");
    env.ok(&["create", "job", "once", "-n", "team", "--image=busybox"])
        .await;
    let job = env.json(&["get", "job", "once", "-n", "team"]).await;
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
}
