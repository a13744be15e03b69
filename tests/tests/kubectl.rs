//! The real `kubectl` against kubeforge's API server, with kubectl's
//! default client-side behaviour (`--validate=strict`, which reads the
//! server's `/openapi/v3`). Tests that only touch their own namespace share
//! one in-process server (each with its own namespace, kubeconfig and
//! `KUBECACHEDIR`); tests that install CRDs or look at the whole cluster
//! start their own, with a data directory, and one runs the `kubeforge
//! dev-server` binary.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kubeforge::testing::ApiServer;
use serde_json::{json, Value};
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

/// The kubeconfig of the server shared by this file's namespaced tests. It
/// runs on a runtime of its own, since every test has its own runtime.
fn shared_kubeconfig() -> &'static str {
    static KUBECONFIG: OnceLock<String> = OnceLock::new();
    KUBECONFIG.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime for the shared server");
            rt.block_on(async move {
                let server = ApiServer::start().await.expect("shared server starts");
                let dir = tempfile::tempdir().expect("temp dir");
                let path = dir.path().join("kubeconfig");
                server.write_kubeconfig(&path).expect("kubeconfig");
                let text = std::fs::read_to_string(&path).expect("kubeconfig text");
                tx.send(text).expect("test thread waits");
                // Serve until the test process exits.
                std::future::pending::<()>().await;
                drop(server);
            });
        });
        rx.recv().expect("shared server started")
    })
}

impl Env {
    /// A server of its own, keeping its state in a data directory (as
    /// `kubeforge dev-server --data-dir` does): every kubectl request is
    /// answered only once what it wrote is on disk. The shared server
    /// keeps the default, memory.
    async fn start() -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let server = ApiServer::builder()
            .data_dir(dir.path().join("data"))
            .start()
            .await
            .expect("server starts");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Env {
            _server: Some(server),
            dir,
            kubeconfig,
        }
    }

    /// The shared server, with namespace `ns` created and made the
    /// kubeconfig's default.
    async fn shared(ns: &str) -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        let text = shared_kubeconfig().replace("namespace: default", &format!("namespace: {ns}"));
        std::fs::write(&kubeconfig, text).expect("kubeconfig");
        let env = Env {
            _server: None,
            dir,
            kubeconfig,
        };
        env.ok(&["create", "namespace", ns]).await;
        env
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .env_remove("EDITOR")
            .env_remove("KUBE_EDITOR")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        c
    }

    async fn output(&self, mut cmd: Command, args: &[&str]) -> Out {
        let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .expect("kubectl runs");
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    async fn run(&self, args: &[&str]) -> Out {
        self.output(self.command(args), args).await
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

    /// Runs kubectl and expects failure; returns stderr.
    async fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert!(!out.ok, "kubectl {args:?} succeeded:\n{}", out.stdout);
        out.stderr
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
        self.ok(&["create", "-f", &f]).await
    }

    /// `kubectl apply -f` for a manifest (client-side apply, validated).
    async fn apply(&self, name: &str, text: &str) -> Out {
        let f = self.file(name, text);
        self.run(&["apply", "-f", &f]).await
    }

    /// An executable shell script in the test's directory.
    fn script(&self, name: &str, body: &str) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).expect("script");
        let status = std::process::Command::new("chmod")
            .arg("+x")
            .arg(&p)
            .status()
            .expect("chmod");
        assert!(status.success());
        p.to_string_lossy().into_owned()
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

/// `(manager, operation)` of every managedFields entry.
fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|es| {
            es.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or("").to_owned(),
                        e["operation"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn has_manager(obj: &Value, manager: &str, operation: &str) -> bool {
    managers(obj)
        .iter()
        .any(|(m, o)| m == manager && o == operation)
}

fn container_images(d: &Value) -> Vec<(String, String)> {
    d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or("").to_owned(),
                        c["image"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
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
        description: A widget of some size.
        properties:
          spec:
            type: object
            description: What the widget should look like.
            properties:
              size:
                type: integer
                minimum: 1
                maximum: 10
                description: Number of parts in the widget.
              color: {type: string}
              shape: {type: string, default: round, enum: [round, square]}
            x-kubernetes-validations:
            - rule: "!has(self.color) || self.color != 'red' || self.size <= 5"
              message: red widgets have at most 5 parts
          status:
            type: object
            properties:
              ready: {type: boolean}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_reports_the_server() {
    let env = Env::shared("version").await;
    let v: Value = serde_json::from_str(&env.ok(&["version", "-o", "json"]).await).unwrap();
    assert_eq!(v["serverVersion"]["major"], "1");
    assert_eq!(v["serverVersion"]["minor"], "33");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_resources_lists_names_short_names_and_categories() {
    let env = Env::shared("api-resources").await;
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
    let env = Env::shared("labels").await;
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
    let env = Env::shared("watching").await;
    env.create(
        "marker.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: marker\n",
    )
    .await;
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
    // Once the initial list is printed, the watch goes on from its
    // resourceVersion: every later change is seen.
    loop {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("kubectl prints the initial list")
            .expect("kubectl output")
            .expect("a line before the end");
        if line.contains("marker") {
            break;
        }
    }
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
    let env = Env::shared("patching").await;
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
    let env = Env::shared("scaling").await;
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
    let env = Env::shared("finalizers").await;
    env.create(
        "f.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\n",
    )
    .await;
    env.ok(&["delete", "cm", "held", "--wait=false"]).await;
    let cm = env.json(&["get", "cm", "held"]).await;
    assert!(cm["metadata"]["deletionTimestamp"].is_string());
    let waiting = env.run(&["delete", "cm", "held", "--timeout=1s"]).await;
    assert!(
        !waiting.ok
            && waiting
                .stderr
                .contains("timed out waiting for the condition on configmaps/held"),
        "kubectl delete waits for the finalizer: {waiting:?}"
    );
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
    let env = Env::shared("cascading").await;
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
    let env = Env::shared("deletion-observer").await;
    env.create(
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: doomed\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: doomed\n",
    )
    .await;
    env.create(
        "deploy.yaml",
        &DEPLOYMENT.replace(
            "name: web\n  labels",
            "name: web\n  namespace: doomed\n  labels",
        ),
    )
    .await;
    let out = env.ok(&["delete", "ns", "doomed", "--timeout=30s"]).await;
    assert!(out.contains("deleted"), "{out}");
    let gone = env.run(&["get", "ns", "doomed"]).await;
    assert!(!gone.ok && gone.stderr.contains("not found"), "{gone:?}");
    let left = env.ok(&["get", "all", "-n", "doomed", "-o", "name"]).await;
    assert!(left.trim().is_empty(), "{left}");
}

/// A server with the Widget CRD applied (validated like any manifest) and
/// Established.
async fn with_widgets() -> Env {
    let env = Env::start().await;
    let out = env.apply("crd.yaml", CRD).await;
    assert!(out.ok && out.stdout.contains("created"), "{out:?}");
    env.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=10s",
    ])
    .await;
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_apply_wait_and_custom_resources_with_printer_columns() {
    let env = with_widgets().await;
    let out = env
        .apply(
            "w.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n  color: blue\n",
        )
        .await;
    assert!(out.ok, "{out:?}");
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
    // kubectl patch defaults to a strategic merge patch, which custom
    // resources refuse with kube-apiserver's 415.
    let err = env
        .fails(&["patch", "wd", "w1", "-p", r#"{"spec":{"size":5}}"#])
        .await;
    assert!(
        err.contains("application/strategic-merge-patch+json is not supported")
            && err.contains("accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"),
        "{err}"
    );
    // Re-applying a custom resource is a JSON merge patch (client-side apply).
    let out = env
        .apply(
            "w.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 6\n",
        )
        .await;
    assert!(out.ok && out.stdout.contains("configured"), "{out:?}");
    let obj = env.json(&["get", "wd", "w1"]).await;
    assert_eq!(
        obj["spec"],
        json!({"size": 6, "shape": "round"}),
        "color removed by the three-way merge, shape defaulted"
    );
    env.ok(&["delete", "crd", "widgets.example.com", "--timeout=20s"])
        .await;
    let gone = env.run(&["get", "widgets"]).await;
    assert!(!gone.ok, "{gone:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_custom_resources_defaults_validation_and_unknown_fields() {
    let env = with_widgets().await;
    // Defaults are applied by the server.
    let out = env
        .apply(
            "ok.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ok\nspec:\n  size: 2\n",
        )
        .await;
    assert!(out.ok, "{out:?}");
    let obj = env.json(&["get", "wd", "ok"]).await;
    assert_eq!(obj["spec"], json!({"size": 2, "shape": "round"}));
    // Invalid values are refused, naming the field.
    let out = env
        .apply(
            "big.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: big\nspec:\n  size: 30\n",
        )
        .await;
    assert!(!out.ok);
    assert!(
        out.stderr.contains("spec.size: Invalid value: 30")
            && out.stderr.contains("should be less than or equal to 10"),
        "{}",
        out.stderr
    );
    let out = env
        .apply(
            "shape.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: shape\nspec:\n  size: 1\n  shape: oval\n",
        )
        .await;
    assert!(!out.ok);
    assert!(
        out.stderr
            .contains("spec.shape: Unsupported value: \"oval\""),
        "{}",
        out.stderr
    );
    // CEL rules are evaluated.
    let out = env
        .apply(
            "red.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: red\nspec:\n  size: 8\n  color: red\n",
        )
        .await;
    assert!(!out.ok);
    assert!(
        out.stderr.contains("red widgets have at most 5 parts"),
        "{}",
        out.stderr
    );
    // Unknown fields fail kubectl's default (strict) validation.
    let out = env
        .apply(
            "bogus.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: bogus\nspec:\n  size: 1\n  bogus: true\n",
        )
        .await;
    assert!(!out.ok);
    assert!(
        out.stderr.contains("unknown field \"spec.bogus\""),
        "{}",
        out.stderr
    );
    let f = env.file(
        "bogus.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: bogus\nspec:\n  size: 1\n  bogus: true\n",
    );
    let err = env.fails(&["create", "-f", &f]).await;
    assert!(err.contains("unknown field \"spec.bogus\""), "{err}");
    // --validate=warn: created without it, with a warning.
    let out = env.run(&["apply", "--validate=warn", "-f", &f]).await;
    assert!(out.ok, "{out:?}");
    assert!(
        out.stderr.contains("unknown field \"spec.bogus\""),
        "{}",
        out.stderr
    );
    assert_eq!(
        env.json(&["get", "wd", "bogus"]).await["spec"],
        json!({"size": 1, "shape": "round"})
    );
    let names = env.ok(&["get", "wd", "-o", "name"]).await;
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        ["widget.example.com/bogus", "widget.example.com/ok"]
    );
    // Server-side apply of a custom resource, and of its status.
    let f = env.file(
        "ssa.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ssa\nspec:\n  size: 4\n",
    );
    let out = env.ok(&["apply", "--server-side", "-f", &f]).await;
    assert!(out.contains("serverside-applied"), "{out}");
    let f = env.file(
        "status.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ssa\nstatus:\n  ready: true\n",
    );
    env.ok(&[
        "apply",
        "--server-side",
        "--subresource=status",
        "--field-manager=widget-controller",
        "-f",
        &f,
    ])
    .await;
    let obj = env
        .json(&["get", "wd", "ssa", "--show-managed-fields"])
        .await;
    assert_eq!(obj["status"], json!({"ready": true}));
    assert_eq!(obj["spec"], json!({"size": 4, "shape": "round"}));
    assert!(has_manager(&obj, "kubectl", "Apply"), "{obj}");
    assert!(has_manager(&obj, "widget-controller", "Apply"), "{obj}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_builtin_and_custom_resource_fields() {
    let env = with_widgets().await;
    let out = env.ok(&["explain", "deployment.spec.replicas"]).await;
    assert!(
        out.contains("KIND:       Deployment")
            && out.contains("FIELD: replicas <integer>")
            && out.contains("Number of desired pods"),
        "{out}"
    );
    let out = env.ok(&["explain", "pods.spec.containers.image"]).await;
    assert!(out.contains("FIELD: image <string>"), "{out}");
    let out = env.ok(&["explain", "widgets"]).await;
    assert!(
        out.contains("GROUP:      example.com")
            && out.contains("KIND:       Widget")
            && out.contains("A widget of some size."),
        "{out}"
    );
    let out = env.ok(&["explain", "wd.spec"]).await;
    assert!(
        out.contains("What the widget should look like.")
            && out.contains("size\t<integer>")
            && out.contains("Number of parts in the widget."),
        "{out}"
    );
    let out = env.ok(&["explain", "widget.spec.size"]).await;
    assert!(out.contains("FIELD: size <integer>"), "{out}");
    let err = env.fails(&["explain", "widget.spec.nope"]).await;
    assert!(err.contains("field \"nope\" does not exist"), "{err}");
}

const WEB_V1: &str = r#"
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
      - name: sidecar
        image: busybox:1
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_side_apply_merges_containers_by_name() {
    let env = Env::shared("client-side-apply").await;
    let out = env.apply("web.yaml", WEB_V1).await;
    assert!(out.ok && out.stdout.contains("created"), "{out:?}");
    // Someone else sets a field the manifest does not mention.
    env.ok(&["set", "env", "deployment/web", "-c", "nginx", "MODE=fast"])
        .await;
    // The next apply changes one image, drops one container, adds another.
    let v2 = WEB_V1.replace("nginx:1.27", "nginx:1.28").replace(
        "- name: sidecar\n        image: busybox:1",
        "- name: logger\n        image: fluentbit:3",
    );
    let out = env.apply("web.yaml", &v2).await;
    assert!(out.ok && out.stdout.contains("configured"), "{out:?}");
    let d = env.json(&["get", "deploy", "web"]).await;
    assert_eq!(
        container_images(&d),
        [
            ("nginx".to_owned(), "nginx:1.28".to_owned()),
            ("logger".to_owned(), "fluentbit:3".to_owned())
        ]
    );
    // Merged by name: the other writer's env survived on nginx.
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([{"name": "MODE", "value": "fast"}])
    );
    assert_eq!(d["metadata"]["generation"], 3);
    let out = env.apply("web.yaml", &v2).await;
    assert!(out.ok && out.stdout.contains("unchanged"), "{out:?}");
    // A scale in the manifest wins over nothing; server defaults stay.
    let out = env
        .apply("web.yaml", &v2.replace("replicas: 2", "replicas: 4"))
        .await;
    assert!(out.ok, "{out:?}");
    let d = env.json(&["get", "deploy", "web"]).await;
    assert_eq!(d["spec"]["replicas"], 4);
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
    assert!(
        d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .is_some_and(|a| a.contains("fluentbit:3"))
    );
    // kubectl patch's default is a strategic merge patch too.
    env.ok(&[
        "patch",
        "deploy",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"logger","image":"fluentbit:4"}]}}}}"#,
    ])
    .await;
    let d = env
        .json(&["get", "deploy", "web", "--show-managed-fields"])
        .await;
    assert_eq!(
        container_images(&d),
        [
            ("nginx".to_owned(), "nginx:1.28".to_owned()),
            ("logger".to_owned(), "fluentbit:4".to_owned())
        ]
    );
    for (manager, op) in [
        ("kubectl-client-side-apply", "Update"),
        ("kubectl-set", "Update"),
        ("kubectl-patch", "Update"),
    ] {
        assert!(
            has_manager(&d, manager, op),
            "{manager}: {:?}",
            managers(&d)
        );
    }
    // Managed fields are hidden unless asked for.
    let yaml = env.ok(&["get", "deploy", "web", "-o", "yaml"]).await;
    assert!(!yaml.contains("managedFields"), "{yaml}");
    let yaml = env
        .ok(&[
            "get",
            "deploy",
            "web",
            "-o",
            "yaml",
            "--show-managed-fields",
        ])
        .await;
    assert!(
        yaml.contains("managedFields:")
            && yaml.contains("manager: kubectl-client-side-apply")
            && yaml.contains("operation: Update")
            && yaml.contains("fieldsType: FieldsV1")
            && yaml.contains("k:{\"name\":\"nginx\"}"),
        "{yaml}"
    );
    // Moving to server-side apply: kubectl hands the client-side apply
    // manager's fields to its own Apply entry first (csaupgrade), so the
    // same manifest applies without conflicts.
    let f = env.file(
        "web.yaml",
        &v2.replace("replicas: 2", "replicas: 4")
            .replace("fluentbit:3", "fluentbit:4"),
    );
    let out = env.ok(&["apply", "--server-side", "-f", &f]).await;
    assert!(out.contains("serverside-applied"), "{out}");
    let d = env
        .json(&["get", "deploy", "web", "--show-managed-fields"])
        .await;
    assert!(has_manager(&d, "kubectl", "Apply"), "{:?}", managers(&d));
    assert!(
        !has_manager(&d, "kubectl-client-side-apply", "Update"),
        "{:?}",
        managers(&d)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_with_and_without_conflicts() {
    let env = Env::shared("server-side-apply").await;
    let f = env.file("web.yaml", WEB_V1);
    let out = env.ok(&["apply", "--server-side", "-f", &f]).await;
    assert!(out.contains("serverside-applied"), "{out}");
    let d = env
        .json(&["get", "deploy", "web", "--show-managed-fields"])
        .await;
    assert_eq!(managers(&d), [("kubectl".to_owned(), "Apply".to_owned())]);
    // Re-applying the same manifest is fine.
    env.ok(&["apply", "--server-side", "-f", &f]).await;
    // Another manager changing kubectl's field conflicts...
    let other = env.file(
        "other.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n",
    );
    let err = env
        .fails(&[
            "apply",
            "--server-side",
            "--field-manager=autoscaler",
            "-f",
            &other,
        ])
        .await;
    assert!(
        err.contains("Apply failed with 1 conflict: conflict with \"kubectl\": .spec.replicas"),
        "{err}"
    );
    assert_eq!(
        env.json(&["get", "deploy", "web"]).await["spec"]["replicas"],
        2
    );
    // ...unless forced, which moves the field to it.
    env.ok(&[
        "apply",
        "--server-side",
        "--field-manager=autoscaler",
        "--force-conflicts",
        "-f",
        &other,
    ])
    .await;
    let d = env
        .json(&["get", "deploy", "web", "--show-managed-fields"])
        .await;
    assert_eq!(d["spec"]["replicas"], 5);
    let entries = d["metadata"]["managedFields"].as_array().unwrap();
    let autoscaler = entries
        .iter()
        .find(|e| e["manager"] == "autoscaler")
        .unwrap();
    assert_eq!(
        autoscaler["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    let kubectl = entries.iter().find(|e| e["manager"] == "kubectl").unwrap();
    assert!(kubectl["fieldsV1"]["f:spec"].get("f:replicas").is_none());
    // kubectl now conflicts in turn, with an imperative writer too.
    env.ok(&["scale", "deploy", "web", "--replicas=3"]).await;
    let err = env.fails(&["apply", "--server-side", "-f", &f]).await;
    assert!(err.contains("conflict"), "{err}");
    assert!(err.contains(".spec.replicas"), "{err}");
    // A manifest that leaves replicas out applies cleanly and drops
    // kubectl's other fields it no longer sets.
    let without = WEB_V1.replace("  replicas: 2\n", "");
    let f = env.file(
        "web.yaml",
        &without.replace("      - name: sidecar\n        image: busybox:1\n", ""),
    );
    env.ok(&["apply", "--server-side", "-f", &f]).await;
    let d = env.json(&["get", "deploy", "web"]).await;
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(
        container_images(&d),
        [("nginx".to_owned(), "nginx:1.27".to_owned())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_with_a_scripted_editor() {
    let env = Env::shared("editing").await;
    env.create("web.yaml", WEB_V1).await;
    let editor = env.script(
        "editor.sh",
        "sed -i -e 's/image: nginx:1.27/image: nginx:1.29/' \"$1\"",
    );
    let mut cmd = env.command(&["edit", "deploy", "web"]);
    cmd.env("EDITOR", &editor);
    let out = env.output(cmd, &["edit"]).await;
    assert!(out.ok && out.stdout.contains("edited"), "{out:?}");
    let d = env
        .json(&["get", "deploy", "web", "--show-managed-fields"])
        .await;
    assert_eq!(container_images(&d)[0].1, "nginx:1.29");
    assert!(
        has_manager(&d, "kubectl-edit", "Update"),
        "{:?}",
        managers(&d)
    );
    assert!(
        has_manager(&d, "kubectl-create", "Update"),
        "{:?}",
        managers(&d)
    );
    // An edit the server refuses is reported, and kubectl gives up once the
    // editor makes no further change.
    let editor = env.script(
        "invalid.sh",
        "sed -i -e 's/replicas: 2/replicas: -1/' \"$1\"",
    );
    let mut cmd = env.command(&["edit", "deploy", "web"]);
    cmd.env("EDITOR", &editor);
    let out = env.output(cmd, &["edit"]).await;
    assert!(!out.ok, "{out:?}");
    assert!(out.stderr.contains("is invalid"), "{}", out.stderr);
    assert_eq!(
        env.json(&["get", "deploy", "web"]).await["spec"]["replicas"],
        2
    );
    // An editor session that changes nothing writes nothing.
    let editor = env.script("noop.sh", "true");
    let mut cmd = env.command(&["edit", "deploy", "web"]);
    cmd.env("EDITOR", &editor);
    let out = env.output(cmd, &["edit"]).await;
    assert!(
        out.ok && out.stderr.contains("Edit cancelled, no changes made"),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_restart_label_and_annotate() {
    let env = Env::shared("rollout").await;
    env.create("web.yaml", WEB_V1).await;
    let out = env.ok(&["rollout", "restart", "deployment/web"]).await;
    assert!(out.contains("restarted"), "{out}");
    let d = env
        .json(&["get", "deploy", "web", "--show-managed-fields"])
        .await;
    assert!(
        d["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
            .is_string()
    );
    assert_eq!(d["metadata"]["generation"], 2);
    assert!(
        has_manager(&d, "kubectl-rollout", "Update"),
        "{:?}",
        managers(&d)
    );
    // label/annotate refuse to change a key without --overwrite.
    env.ok(&["label", "deploy", "web", "tier=front"]).await;
    let err = env.fails(&["label", "deploy", "web", "tier=back"]).await;
    assert!(err.contains("already has a value (front)"), "{err}");
    env.ok(&["label", "deploy", "web", "tier=back", "--overwrite"])
        .await;
    env.ok(&["annotate", "deploy", "web", "note=first"]).await;
    let err = env
        .fails(&["annotate", "deploy", "web", "note=second"])
        .await;
    assert!(err.contains("already has a value (first)"), "{err}");
    env.ok(&["annotate", "deploy", "web", "note=second", "--overwrite"])
        .await;
    let d = env
        .json(&["get", "deploy", "web", "--show-managed-fields"])
        .await;
    assert_eq!(d["metadata"]["labels"]["tier"], "back");
    assert_eq!(d["metadata"]["annotations"]["note"], "second");
    assert_eq!(
        d["metadata"]["generation"], 2,
        "metadata changes keep the generation"
    );
    for manager in ["kubectl-label", "kubectl-annotate"] {
        assert!(
            has_manager(&d, manager, "Update"),
            "{manager}: {:?}",
            managers(&d)
        );
    }
    let names = env
        .ok(&["get", "deploy", "-l", "tier=back", "-o", "name"])
        .await;
    assert_eq!(names.trim(), "deployment.apps/web");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_rejected() {
    let env = Env::shared("tokens").await;
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
    kubeforge_e2e::run_ok(kubeforge_e2e::cargo().args([
        "build",
        "--quiet",
        "-p",
        "kubeforge-cli",
        "--bin",
        "kubeforge",
    ]));
    kubeforge_e2e::target_dir().join("debug").join("kubeforge")
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
    // An unknown gate is refused, naming it.
    let refused = Command::new(&bin)
        .args([
            "dev-server",
            "--listen",
            &listen,
            "--feature-gates",
            "Nope=true",
        ])
        .output()
        .await
        .expect("dev-server runs");
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("unrecognized feature gate: Nope"), "{said}");
    let mut server = Command::new(&bin)
        .args(["dev-server", "--listen", &listen, "--write-kubeconfig"])
        .arg(&kubeconfig)
        .arg("--crd")
        .arg(&crd)
        .args(["--feature-gates", "ShardedListAndWatch=false"])
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
    // With the gate off, a shardSelector is ignored, as kube-apiserver
    // without ShardedListAndWatch does: no shardInfo, every object.
    let half = "/api/v1/namespaces?shardSelector=shardRange(object.metadata.uid,%270x0000000000000000%27,%270x0000000000000001%27)";
    let list: Value = serde_json::from_str(&env.ok(&["get", "--raw", half]).await).unwrap();
    assert!(list["metadata"].get("shardInfo").is_none(), "{list}");
    assert!(!list["items"].as_array().unwrap().is_empty(), "{list}");
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
    let env = Env::shared("imperative").await;
    env.ok(&["create", "namespace", "imperative-team"]).await;
    env.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "imperative-team",
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
        "imperative-team",
        "--from-literal=user=me",
    ])
    .await;
    env.ok(&["create", "serviceaccount", "bot", "-n", "imperative-team"])
        .await;
    let cm = env
        .json(&["get", "cm", "settings", "-n", "imperative-team"])
        .await;
    assert_eq!(cm["data"], json!({"a": "1", "b": "2"}));
    let secret = env
        .json(&["get", "secret", "creds", "-n", "imperative-team"])
        .await;
    assert_eq!(secret["data"]["user"], "bWU=");
    assert_eq!(secret["type"], "Opaque");
    let ns = env.json(&["get", "ns", "imperative-team"]).await;
    assert_eq!(ns["status"]["phase"], "Active");
    assert!(ns["metadata"].get("generateName").is_none());
    let sas = env
        .ok(&["get", "sa", "-n", "imperative-team", "-o", "name"])
        .await;
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
        "imperative-team",
        "--image=nginx",
        "--replicas=2",
    ])
    .await;
    let web = env
        .json(&["get", "deploy", "web", "-n", "imperative-team"])
        .await;
    assert_eq!(web["spec"]["replicas"], 2);
    assert_eq!(
        web["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx"
    );
    assert_eq!(web["spec"]["selector"]["matchLabels"]["app"], "web");
    env.ok(&[
        "create",
        "job",
        "once",
        "-n",
        "imperative-team",
        "--image=busybox",
    ])
    .await;
    let job = env
        .json(&["get", "job", "once", "-n", "imperative-team"])
        .await;
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_of_an_invalid_webhook_configuration_prints_the_field_errors() {
    // A server of its own: a configuration that got in would reach every
    // other test's writes.
    let env = Env::start().await;
    let manifest = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: checks
webhooks:
- name: checks
  clientConfig:
    url: http://hooks.example.com/validate
  rules:
  - operations: [GET]
    apiGroups: ['']
    apiVersions: [v1]
    resources: [configmaps]
  sideEffects: Some
  admissionReviewVersions: [v1]
";
    let out = env.apply("webhooks.yaml", manifest).await;
    assert!(!out.ok, "{out:?}");
    let expected = [
        "The ValidatingWebhookConfiguration \"checks\" is invalid: ",
        "* webhooks[0].name: Invalid value: \"checks\": should be a domain with at least three segments separated by dots",
        "* webhooks[0].rules[0].operations[0]: Unsupported value: \"GET\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
        "* webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
        "* webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
    ];
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines, expected, "{}", out.stderr);
    let gone = env
        .run(&["get", "validatingwebhookconfiguration", "checks"])
        .await;
    assert!(!gone.ok && gone.stderr.contains("not found"), "{gone:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_admission_policy_denies_a_create_with_its_message() {
    // A server of its own: the policy would reach every other test's writes.
    let env = Env::start().await;
    let manifest = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-bad-names
spec:
  matchConstraints:
    resourceRules:
    - operations: [CREATE]
      apiGroups: ['']
      apiVersions: [v1]
      resources: [configmaps]
  validations:
  - expression: \"!object.metadata.name.startsWith('bad')\"
    messageExpression: \"'configmap ' + object.metadata.name + ' has a bad name'\"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-bad-names-binding
spec:
  policyName: no-bad-names
  validationActions: [Deny]
";
    let out = env.apply("policy.yaml", manifest).await;
    assert!(out.ok, "{out:?}");
    let denied = env
        .run(&["create", "configmap", "bad-one", "--from-literal=a=b"])
        .await;
    assert!(!denied.ok, "{denied:?}");
    assert!(
        denied.stderr.contains("configmaps \"bad-one\" is forbidden: ValidatingAdmissionPolicy 'no-bad-names' with binding 'no-bad-names-binding' denied request: configmap bad-one has a bad name"),
        "{}",
        denied.stderr
    );
    env.ok(&["create", "configmap", "good-one", "--from-literal=a=b"])
        .await;
    let policy = env
        .json(&["get", "validatingadmissionpolicy", "no-bad-names"])
        .await;
    assert_eq!(policy["spec"]["failurePolicy"], "Fail");
    // kube-apiserver's printer columns.
    for (resource, header, row) in [
        (
            "validatingadmissionpolicies",
            ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"],
            ["no-bad-names", "1", "<unset>"],
        ),
        (
            "validatingadmissionpolicybindings",
            ["NAME", "POLICYNAME", "PARAMREF", "AGE"],
            ["no-bad-names-binding", "no-bad-names", "<unset>"],
        ),
    ] {
        let table = env.ok(&["get", resource]).await;
        let lines: Vec<Vec<&str>> = table
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(lines.len(), 2, "{table}");
        assert_eq!(lines[0], header, "{table}");
        assert_eq!(lines[1][..3], row, "{table}");
    }
}
