//! The `memcached-operator` binary driven by the real `kubectl` (each test
//! with its own `KUBECACHEDIR`), then stopped with SIGTERM: the README's
//! main command (`--embedded --write-kubeconfig`), and the binary against
//! a "cluster" it finds through `--kubeconfig` and `--context`, with leader
//! election, as it runs in a real one.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use kubeforge::testing::{ApiServer, KUBECONFIG_CONTEXT};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const DEADLINE: Duration = Duration::from_secs(20);

/// The running binary, its kubeconfig and log (and the API server, when
/// the test runs one).
struct Operator {
    child: Option<Child>,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    banner: String,
    _server: Option<ApiServer>,
}

impl Drop for Operator {
    fn drop(&mut self) {
        // On a failed assertion, show what the operator logged.
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.log()).unwrap_or_default();
            eprintln!(
                "--- operator banner ---\n{}--- operator log ---\n{log}",
                self.banner
            );
        }
    }
}

/// What a kubectl run produced.
#[derive(Debug)]
struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Operator {
    /// Starts the binary with `--embedded` and waits for its banner.
    async fn embedded() -> Operator {
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        let mut op = Operator {
            child: None,
            dir,
            kubeconfig,
            banner: String::new(),
            _server: None,
        };
        let kubeconfig = op.kubeconfig.to_string_lossy().into_owned();
        op.spawn(&[
            "--embedded",
            // A free port; the banner says which.
            "--listen",
            "127.0.0.1:0",
            "--write-kubeconfig",
            &kubeconfig,
            "--resync-period",
            "5",
        ]);
        let stdout = op
            .child
            .as_mut()
            .and_then(|c| c.stdout.take())
            .expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        while !op.banner.contains("get events") {
            let line = tokio::time::timeout(DEADLINE, lines.next_line())
                .await
                .expect("the operator prints its banner in time")
                .expect("stdout readable")
                .unwrap_or_else(|| panic!("the operator exited; it printed:\n{}", op.banner));
            op.banner.push_str(&line);
            op.banner.push('\n');
        }
        // Keep reading, so the binary never writes to a closed pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        assert!(
            op.banner.contains("listening on https://127.0.0.1:"),
            "{}",
            op.banner
        );
        assert!(
            op.banner
                .contains(&format!("KUBECONFIG={kubeconfig} kubectl get memcached")),
            "{}",
            op.banner
        );
        op
    }

    /// An in-process API server standing in for a cluster, with a
    /// kubeconfig for it; the binary is started later with
    /// [`spawn`](Self::spawn).
    async fn cluster() -> Operator {
        let server = ApiServer::start().await.expect("API server starts");
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Operator {
            child: None,
            dir,
            kubeconfig,
            banner: String::new(),
            _server: Some(server),
        }
    }

    /// Starts the binary with `args`, probes and metrics on free ports,
    /// logs to a file.
    fn spawn(&mut self, args: &[&str]) {
        let log = std::fs::File::create(self.log()).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_memcached-operator"))
            .args(args)
            .args([
                "--metrics-bind-address",
                "127.0.0.1:0",
                "--health-probe-bind-address",
                "127.0.0.1:0",
            ])
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG")
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("the operator starts");
        self.child = Some(child);
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("operator.log")
    }

    async fn kubectl(&self, args: &[&str]) -> Out {
        let run = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.path().join("kube-cache"))
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(DEADLINE, run)
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish in time"))
            .expect("kubectl runs");
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs kubectl and expects success; returns stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args).await;
        assert!(
            out.ok,
            "kubectl {args:?} failed:\n{}{}",
            out.stdout, out.stderr
        );
        out.stdout
    }

    /// Runs kubectl until `pred` holds for its output, at most [`DEADLINE`].
    async fn eventually(&self, what: &str, args: &[&str], pred: impl Fn(&Out) -> bool) -> Out {
        let start = Instant::now();
        loop {
            let out = self.kubectl(args).await;
            if pred(&out) {
                return out;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}; last: {out:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends SIGTERM and waits for the exit status.
    async fn terminate(&mut self) -> std::process::ExitStatus {
        let child = self.child.as_mut().expect("started");
        let pid = child.id().expect("still running");
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        tokio::time::timeout(DEADLINE, child.wait())
            .await
            .expect("the operator exits in time after SIGTERM")
            .expect("exit status")
    }
}

fn config_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config")
}

/// Cells of the row named `name` in `kubectl get` table output, by header.
fn row(table: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next()?.split_whitespace().collect();
    let cells: Vec<&str> = lines
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&name))?;
    Some(
        header
            .iter()
            .zip(cells)
            .map(|(h, c)| (h.to_string(), c.to_owned()))
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drives_the_embedded_operator() {
    let mut op = Operator::embedded().await;

    // The sample, with its printer columns, once the operator reported on it.
    let started = Instant::now();
    let table = op
        .eventually("the sample's status", &["get", "mc"], |o| {
            o.ok && row(&o.stdout, "memcached-sample")
                .is_some_and(|r| r.iter().any(|(h, c)| h == "AVAILABLE" && c == "False"))
        })
        .await;
    eprintln!("banner -> sample reported: {:?}", started.elapsed());
    let cells = row(&table.stdout, "memcached-sample").expect("the sample's row");
    let headers: Vec<&str> = cells.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(
        headers,
        ["NAME", "SIZE", "READY", "AVAILABLE", "AGE"],
        "{}",
        table.stdout
    );
    assert_eq!(cells[1].1, "1");
    assert_eq!(cells[2].1, "0");
    // The long name and the category-free short name reach the same thing.
    let full = op
        .ok(&["get", "memcacheds.cache.example.com", "-o", "name"])
        .await;
    assert_eq!(full.trim(), "memcached.cache.example.com/memcached-sample");

    let deployment: Value = serde_json::from_str(
        &op.ok(&["get", "deployment", "memcached-sample", "-o", "json"])
            .await,
    )
    .expect("Deployment JSON");
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(
        deployment["metadata"]["ownerReferences"][0]["kind"],
        "Memcached"
    );
    assert_eq!(
        deployment["metadata"]["ownerReferences"][0]["controller"],
        true
    );

    // kubectl scale goes through the scale subresource; the Deployment follows.
    let scaled_at = Instant::now();
    op.ok(&["scale", "mc/memcached-sample", "--replicas=3"])
        .await;
    op.eventually(
        "the Deployment at 3 replicas",
        &[
            "get",
            "deployment",
            "memcached-sample",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
        |o| o.ok && o.stdout.trim() == "3",
    )
    .await;
    eprintln!(
        "kubectl scale -> Deployment follows: {:?}",
        scaled_at.elapsed()
    );
    let table = op.ok(&["get", "mc", "memcached-sample"]).await;
    assert_eq!(row(&table, "memcached-sample").expect("row")[1].1, "3");

    // The manifests for a real cluster, as kustomize renders them, are
    // accepted (validated by kubectl against the server's OpenAPI).
    let default = config_dir().join("default");
    let applied = op.ok(&["apply", "-k", &default.to_string_lossy()]).await;
    assert!(
        applied.contains(
            "clusterrole.rbac.authorization.k8s.io/memcached-operator-manager-role created"
        ),
        "{applied}"
    );
    assert!(
        applied.contains("deployment.apps/memcached-operator-controller-manager created"),
        "{applied}"
    );

    // kubectl delete waits for the object to go: the finalizer is released.
    let deleted_at = Instant::now();
    let out = op
        .kubectl(&["delete", "mc/memcached-sample", "--timeout=15s"])
        .await;
    assert!(out.ok, "{out:?}");
    eprintln!("kubectl delete returned after {:?}", deleted_at.elapsed());
    op.eventually(
        "the Deployment to be garbage-collected",
        &["get", "deployments", "-o", "name"],
        |o| o.ok && !o.stdout.contains("memcached-sample"),
    )
    .await;
    let events = op.ok(&["get", "events"]).await;
    let finalized = events
        .lines()
        .find(|l| l.contains("Finalized"))
        .unwrap_or_else(|| panic!("no Finalized event:\n{events}"));
    assert!(finalized.contains("memcached/memcached-sample"), "{events}");
    assert!(finalized.contains("Normal"), "{events}");

    // SIGTERM: a graceful stop, exit status 0.
    let stopping = Instant::now();
    let status = op.terminate().await;
    eprintln!("SIGTERM -> exit: {:?}", stopping.elapsed());
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_runs_against_a_cluster_from_its_kubeconfig_with_leader_election() {
    let mut op = Operator::cluster().await;
    // Installed the way a cluster gets them: kubectl apply of config/.
    let config = config_dir();
    let crd = config.join("crd/bases/cache.example.com_memcacheds.yaml");
    let out = op.ok(&["apply", "-f", &crd.to_string_lossy()]).await;
    assert!(
        out.contains("memcacheds.cache.example.com created"),
        "{out}"
    );
    op.eventually(
        "the Memcached resource to be served",
        &[
            "api-resources",
            "--api-group=cache.example.com",
            "-o",
            "name",
        ],
        |o| o.ok && o.stdout.contains("memcacheds.cache.example.com"),
    )
    .await;
    let sample = config.join("samples/cache_v1alpha1_memcached.yaml");
    op.ok(&["apply", "-f", &sample.to_string_lossy()]).await;

    let kubeconfig = op.kubeconfig.to_string_lossy().into_owned();
    op.spawn(&[
        "--kubeconfig",
        &kubeconfig,
        "--context",
        KUBECONFIG_CONTEXT,
        "--leader-elect",
    ]);
    let started = Instant::now();
    op.eventually(
        "the sample's Deployment",
        &[
            "get",
            "deployment",
            "memcached-sample",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
        |o| o.ok && o.stdout.trim() == "1",
    )
    .await;
    eprintln!("start -> elected -> Deployment: {:?}", started.elapsed());
    let holder = op
        .ok(&[
            "get",
            "lease",
            "memcached-operator.cache.example.com",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ])
        .await;
    assert!(!holder.trim().is_empty(), "the lease has a holder");

    let status = op.terminate().await;
    assert!(status.success(), "{status}");
    // Released on the way out, so a successor need not wait for it to expire.
    let holder = op
        .ok(&[
            "get",
            "lease",
            "memcached-operator.cache.example.com",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ])
        .await;
    assert_eq!(holder.trim(), "", "the lease is released");
}
