//! The real `kubectl` against a server running the workload controllers
//! and simulated nodes (`Workloads::fast()`): Deployments roll out, scale,
//! update and roll back; deleted pods are replaced; Jobs complete and
//! fail; StatefulSets scale in order; a node is drained through the
//! eviction subresource. Every wait polls (kubectl's own `rollout status`
//! and `wait` poll too); no assertion depends on timing.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use kubeforge::testing::{ApiServer, Workloads};
use serde_json::Value;
use tokio::process::Command;

struct Env {
    _server: ApiServer,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

#[derive(Debug)]
struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Env {
    async fn start() -> Env {
        let server = ApiServer::builder()
            .workloads(Workloads::fast().nodes(3))
            .start()
            .await
            .expect("server starts");
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Env {
            _server: server,
            dir,
            kubeconfig,
        }
    }

    async fn run(&self, args: &[&str]) -> Out {
        let mut c = Command::new("kubectl");
        c.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(90), c.output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .expect("kubectl runs");
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

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

    async fn create(&self, name: &str, text: &str) {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).expect("manifest");
        self.ok(&["create", "-f", &p.to_string_lossy()]).await;
    }

    /// Polls `check` on `kubectl get ... -o json` until it holds.
    async fn eventually(&self, what: &str, args: &[&str], check: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let v = self.json(args).await;
            if check(&v) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {v}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

fn running_ready(pod: &Value) -> bool {
    pod["status"]["phase"] == "Running"
        && pod["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

fn names(list: &Value) -> Vec<String> {
    let mut n: Vec<String> = items(list)
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap_or("").to_owned())
        .collect();
    n.sort();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_rolls_out_scales_updates_and_rolls_back() {
    let env = Env::start().await;
    env.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=2",
    ])
    .await;
    let out = env
        .ok(&["rollout", "status", "deployment/web", "--timeout=60s"])
        .await;
    assert!(out.contains("successfully rolled out"), "{out}");
    let d = env.json(&["get", "deployment", "web"]).await;
    assert_eq!(d["status"]["readyReplicas"], 2);
    assert_eq!(d["status"]["availableReplicas"], 2);
    assert_eq!(
        d["status"]["observedGeneration"],
        d["metadata"]["generation"]
    );
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    let conds = d["status"]["conditions"].as_array().unwrap();
    assert!(conds
        .iter()
        .any(|c| c["type"] == "Available" && c["reason"] == "MinimumReplicasAvailable"));
    assert!(conds
        .iter()
        .any(|c| c["type"] == "Progressing" && c["reason"] == "NewReplicaSetAvailable"));

    env.ok(&["scale", "deployment/web", "--replicas=4"]).await;
    env.ok(&["rollout", "status", "deployment/web", "--timeout=60s"])
        .await;
    let pods = env.json(&["get", "pods", "-l", "app=web"]).await;
    assert_eq!(items(&pods).iter().filter(|p| running_ready(p)).count(), 4);
    let rs = env.json(&["get", "rs", "-l", "app=web"]).await;
    let first_rs = items(&rs)[0].clone();
    let hash = first_rs["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(first_rs["metadata"]["name"], format!("web-{hash}"));
    assert_eq!(
        first_rs["spec"]["selector"]["matchLabels"]["pod-template-hash"],
        hash.as_str()
    );
    let owner = &first_rs["metadata"]["ownerReferences"][0];
    assert_eq!(
        (
            owner["kind"].as_str(),
            owner["controller"].as_bool(),
            owner["blockOwnerDeletion"].as_bool()
        ),
        (Some("Deployment"), Some(true), Some(true))
    );

    env.ok(&["set", "image", "deployment/web", "nginx=nginx:1.28"])
        .await;
    env.ok(&["rollout", "status", "deployment/web", "--timeout=60s"])
        .await;
    let rs = env.json(&["get", "rs", "-l", "app=web"]).await;
    assert_eq!(items(&rs).len(), 2, "{rs}");
    let new = items(&rs)
        .into_iter()
        .find(|r| r["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28")
        .unwrap();
    assert_eq!(
        new["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    assert_eq!(new["status"]["readyReplicas"], 4);
    let old = items(&rs)
        .into_iter()
        .find(|r| r["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27")
        .unwrap();
    assert_eq!(old["spec"]["replicas"], 0);
    let pods = env.json(&["get", "pods", "-l", "app=web"]).await;
    assert!(items(&pods)
        .iter()
        .all(|p| p["spec"]["containers"][0]["image"] == "nginx:1.28"
            || p["metadata"]["deletionTimestamp"].is_string()));

    let undo = env.ok(&["rollout", "undo", "deployment/web"]).await;
    assert!(undo.contains("rolled back"), "{undo}");
    env.ok(&["rollout", "status", "deployment/web", "--timeout=60s"])
        .await;
    let d = env.json(&["get", "deployment", "web"]).await;
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
    let rs = env.json(&["get", "rs", "-l", "app=web"]).await;
    assert_eq!(items(&rs).len(), 2, "the old ReplicaSet is reused: {rs}");
    let back = items(&rs)
        .into_iter()
        .find(|r| r["metadata"]["name"] == first_rs["metadata"]["name"])
        .unwrap();
    assert_eq!(
        back["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
    assert_eq!(
        back["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"],
        "1"
    );
    assert_eq!(back["spec"]["replicas"], 4);

    let wide = env
        .ok(&["get", "pods", "-o", "wide", "-l", "app=web"])
        .await;
    let lines: Vec<&str> = wide
        .lines()
        .skip(1)
        .filter(|l| l.contains("Running"))
        .collect();
    assert_eq!(lines.len(), 4, "{wide}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("node-") && l.contains("10.244.")),
        "{wide}"
    );

    let pods = env.json(&["get", "pods", "-l", "app=web"]).await;
    let victim = items(&pods)[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    env.ok(&["delete", "pod", &victim]).await;
    env.eventually(
        "a replacement pod",
        &["get", "pods", "-l", "app=web"],
        |l| {
            let ps = items(l);
            ps.len() == 4 && ps.iter().all(running_ready) && !names(l).contains(&victim)
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_complete_and_fail_after_their_backoff_limit() {
    let env = Env::start().await;
    env.ok(&[
        "create",
        "job",
        "once",
        "--image=busybox",
        "--",
        "echo",
        "hi",
    ])
    .await;
    env.ok(&[
        "wait",
        "--for=condition=Complete",
        "job/once",
        "--timeout=60s",
    ])
    .await;
    let job = env.json(&["get", "job", "once"]).await;
    assert_eq!(job["status"]["succeeded"], 1);
    let types: Vec<&str> = job["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
    assert_eq!(
        job["status"]["conditions"][1]["reason"],
        "CompletionsReached"
    );
    assert!(job["status"]["completionTime"].is_string());
    let pods = env.json(&["get", "pods", "-l", "job-name=once"]).await;
    let pod = &items(&pods)[0];
    assert_eq!(pod["status"]["phase"], "Succeeded");
    assert!(
        pod["metadata"]["finalizers"].is_null(),
        "the tracking finalizer is removed once counted"
    );
    let table = env.ok(&["get", "jobs"]).await;
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("once") && l.contains("Complete") && l.contains("1/1")),
        "{table}"
    );

    env.create("fails.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: fails}\nspec:\n  backoffLimit: 1\n  template:\n    metadata:\n      annotations: {sim.kubeforge.dev/exit-code: \"3\"}\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox}]\n").await;
    env.ok(&[
        "wait",
        "--for=condition=Failed",
        "job/fails",
        "--timeout=60s",
    ])
    .await;
    let job = env.json(&["get", "job", "fails"]).await;
    assert_eq!(job["status"]["failed"], 2);
    let conds = job["status"]["conditions"].as_array().unwrap();
    assert_eq!(conds[0]["type"], "FailureTarget");
    assert_eq!(conds[1]["type"], "Failed");
    assert_eq!(conds[1]["reason"], "BackoffLimitExceeded");
    assert_eq!(
        conds[1]["message"],
        "Job has reached the specified backoff limit"
    );
    let pods = env.json(&["get", "pods", "-l", "job-name=fails"]).await;
    assert_eq!(items(&pods).len(), 2);
    assert!(items(&pods)
        .iter()
        .all(|p| p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3));
}

const STS: &str = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata:
      labels: {app: db}
      annotations: {sim.kubeforge.dev/start-latency: 200ms}
    spec:
      containers: [{name: db, image: postgres:17}]
"#;

/// Polls the StatefulSet's pods until there are `want`, asserting at each
/// look that they are `db-0` … `db-(n-1)` with no gap (ordered).
async fn ordered_until(env: &Env, want: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let list = env.json(&["get", "pods", "-l", "app=db"]).await;
        let ns = names(&list);
        let expect: Vec<String> = (0..ns.len()).map(|i| format!("db-{i}")).collect();
        let mut sorted = ns.clone();
        sorted.sort_by_key(|n| {
            n.trim_start_matches("db-")
                .parse::<usize>()
                .unwrap_or(usize::MAX)
        });
        assert_eq!(sorted, expect, "pods out of order");
        if ns.len() == want && items(&list).iter().all(running_ready) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out at {ns:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulset_scales_up_and_down_in_order() {
    let env = Env::start().await;
    env.create("sts.yaml", STS).await;
    ordered_until(&env, 1).await;
    env.ok(&["scale", "statefulset/db", "--replicas=4"]).await;
    ordered_until(&env, 4).await;
    let pods = env.json(&["get", "pods", "-l", "app=db"]).await;
    // Each pod was created after the one before it was ready.
    for i in 1..4 {
        let find = |n: String| {
            items(&pods)
                .into_iter()
                .find(|p| p["metadata"]["name"] == n.as_str())
                .unwrap()
        };
        let prev = find(format!("db-{}", i - 1));
        let this = find(format!("db-{i}"));
        let ready_at = prev["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap()["lastTransitionTime"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(this["metadata"]["creationTimestamp"].as_str().unwrap() >= ready_at.as_str());
        assert_eq!(this["spec"]["hostname"], format!("db-{i}"));
        assert_eq!(
            this["metadata"]["labels"]["apps.kubernetes.io/pod-index"],
            i.to_string()
        );
    }
    let sts = env.json(&["get", "statefulset", "db"]).await;
    assert_eq!(sts["status"]["readyReplicas"], 4);
    assert_eq!(
        sts["status"]["currentRevision"],
        sts["status"]["updateRevision"]
    );
    let rev = sts["status"]["updateRevision"].as_str().unwrap().to_owned();
    assert!(items(&pods)
        .iter()
        .all(|p| p["metadata"]["labels"]["controller-revision-hash"] == rev.as_str()));
    let revs = env.ok(&["get", "controllerrevisions"]).await;
    assert!(
        revs.contains(&rev) && revs.contains("statefulset.apps/db"),
        "{revs}"
    );
    env.ok(&["scale", "statefulset/db", "--replicas=1"]).await;
    ordered_until(&env, 1).await;
    let out = env
        .ok(&["rollout", "status", "statefulset/db", "--timeout=60s"])
        .await;
    // The default partition (0) makes kubectl report a partitioned roll out.
    assert!(out.contains("roll out complete: 1 new pods"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_evicts_pods_and_they_move() {
    let env = Env::start().await;
    env.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
    ])
    .await;
    env.ok(&["rollout", "status", "deployment/web", "--timeout=60s"])
        .await;
    let pods = env.json(&["get", "pods", "-l", "app=web"]).await;
    let node = items(&pods)[0]["spec"]["nodeName"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = env
        .run(&["drain", &node, "--ignore-daemonsets", "--timeout=60s"])
        .await;
    assert!(out.ok, "{out:?}");
    assert!(
        out.stdout.contains("evicted") && out.stdout.contains("drained"),
        "{out:?}"
    );
    let nodes = env.ok(&["get", "nodes"]).await;
    assert!(
        nodes
            .lines()
            .any(|l| l.starts_with(&node) && l.contains("Ready,SchedulingDisabled")),
        "{nodes}"
    );
    env.ok(&["rollout", "status", "deployment/web", "--timeout=60s"])
        .await;
    env.eventually(
        "pods off the drained node",
        &["get", "pods", "-l", "app=web"],
        |l| {
            let ps = items(l);
            ps.len() == 3
                && ps
                    .iter()
                    .all(|p| running_ready(p) && p["spec"]["nodeName"] != node.as_str())
        },
    )
    .await;
    env.ok(&["uncordon", &node]).await;
}
