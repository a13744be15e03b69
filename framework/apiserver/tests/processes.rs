//! Pods of mapped images run as real processes (`ApiServerBuilder::image`),
//! the way a kubelet runs containers (../shared/reference/kubelet.md): a
//! Deployment's replicas each in a network namespace of its own (both bind
//! the same port), the pod's name as hostname, the service-account files
//! and `KUBERNETES_SERVICE_HOST` that reach this server over TLS as the
//! pod's service account, SIGTERM then SIGKILL on deletion, restarts with
//! the crash-loop back-off, and a bad mapping refused at start.
//!
//! The "image" is a Python script: it writes what it saw to a report
//! directory of the test's, since the containers share the host's files.

mod common;
mod poll;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Kube;
use kubeforge_apiserver::{ApiServer, Workloads};
use poll::eventually;
use serde_json::{json, Value};

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const PODS: &str = "/api/v1/namespaces/default/pods";
const IMAGE: &str = "example.com/probe:v1";

/// The container: reports its hostname, environment, in-cluster identity
/// and whether it could bind :8081, then serves until SIGTERM (recorded)
/// or, with `crash`, exits 3 at once.
const SCRIPT: &str = r#"#!/usr/bin/env python3
import http.server, json, os, signal, socket, ssl, sys, threading, time, urllib.request

report_dir, mode = sys.argv[1], sys.argv[2]
host = socket.gethostname()
print("started", host, flush=True)
print("to stderr", file=sys.stderr, flush=True)
if mode == "crash":
    print("crashing", flush=True)
    sys.exit(3)
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
report = {"hostname": host, "env": dict(os.environ), "pid": os.getpid(),
          "uid": os.getuid(), "gid": os.getgid()}
# Is the root filesystem writable? (readOnlyRootFilesystem)
probe = "/tmp/kubeforge-rootfs-check-" + host
try:
    open(probe, "w").close()
    os.remove(probe)
    report["root_writable"] = True
except OSError as e:
    report["root_writable"] = e.errno
for mount in ["/scratch"]:
    try:
        open(mount + "/written", "w").write("x")
        report["scratch_writable"] = True
    except OSError as e:
        report["scratch_writable"] = e.errno
files = {}
for top in ["/config", "/secret", "/podinfo"]:
    for base, _, names in os.walk(top):
        for n in names:
            files[os.path.join(base, n)] = open(os.path.join(base, n)).read()
report["files"] = files
def flag(name):
    return os.path.exists(os.path.join(report_dir, host + "." + name))

class Health(http.server.BaseHTTPRequestHandler):
    # /readyz answers 200 once the test made HOST.ready; /healthz 500
    # while HOST.sick exists.
    def do_GET(self):
        ok = flag("ready") if self.path == "/readyz" else not flag("sick")
        self.send_response(200 if ok else 500)
        self.end_headers()
        self.wfile.write(b"ok" if ok else b"no")

try:
    server = http.server.HTTPServer(("0.0.0.0", 8081), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    report["bound"] = True
except OSError as e:
    report["bound"] = str(e)
try:
    token = open(sa + "/token").read()
    report["namespace"] = open(sa + "/namespace").read()
    url = "https://%s:%s/apis/authentication.k8s.io/v1/selfsubjectreviews" % (
        os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
    body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).encode()
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": "Bearer " + token, "Content-Type": "application/json"})
    ctx = ssl.create_default_context(cafile=sa + "/ca.crt")
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        report["user"] = json.load(r)["status"]["userInfo"]["username"]
except Exception as e:
    report["user"] = "error: %r" % e

def term(*_):
    open(os.path.join(report_dir, host + ".term"), "w").write("SIGTERM")
    if mode != "ignore-term":
        sys.exit(0)
signal.signal(signal.SIGTERM, term)
with open(os.path.join(report_dir, host + ".tmp"), "w") as f:
    json.dump(report, f)
os.rename(os.path.join(report_dir, host + ".tmp"), os.path.join(report_dir, host + ".json"))
tick = 0
while True:
    time.sleep(0.3)
    tick += 1
    print("tick", tick, flush=True)
"#;

struct Image {
    dir: tempfile::TempDir,
}

impl Image {
    fn new() -> Image {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let script = dir.path().join("probe");
        std::fs::write(&script, SCRIPT).expect("script written");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::create_dir(dir.path().join("reports")).expect("reports dir");
        Image { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("probe")
    }

    fn reports(&self) -> PathBuf {
        self.dir.path().join("reports")
    }

    fn report(&self, pod: &str) -> Option<Value> {
        let text = std::fs::read_to_string(self.reports().join(format!("{pod}.json"))).ok()?;
        serde_json::from_str(&text).ok()
    }
}

/// Whether this machine lets the server make namespaces; the tests that
/// run processes say why they skip otherwise (CI runs as root).
fn can_sandbox() -> bool {
    let ok = std::process::Command::new("unshare")
        .args(["--net", "--mount", "--uts", "--pid", "--fork", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: this machine cannot make Linux namespaces (needs CAP_SYS_ADMIN)");
    }
    ok
}

async fn server(image: &Image) -> Kube {
    let workloads = Workloads::fast().nodes(2);
    Kube::with(
        ApiServer::builder()
            .workloads(workloads)
            .image(IMAGE, image.path()),
    )
    .await
}

fn deployment(name: &str, replicas: i64, args: Vec<String>) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"terminationGracePeriodSeconds": 3,
                    "containers": [{"name": "main", "image": IMAGE,
                        "command": ["/probe"], "args": args,
                        "env": [{"name": "GREETING", "value": "hello"}]}]}}}})
}

fn args(image: &Image, mode: &str) -> Vec<String> {
    vec![image.reports().display().to_string(), mode.to_owned()]
}

async fn pods(k: &Kube, app: &str) -> Vec<Value> {
    k.get(&format!("{PODS}?labelSelector=app%3D{app}"))
        .await
        .json()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn name(p: &Value) -> String {
    p["metadata"]["name"].as_str().unwrap_or("").to_owned()
}

/// The one pod of the Deployment `app`, once it runs and has reported.
async fn running_pod(k: &Kube, image: &Image, app: &str) -> String {
    let mut pod = String::new();
    eventually("the pod runs", async || {
        let ps = pods(k, app).await;
        pod = ps.first().map(name).unwrap_or_default();
        ps.len() == 1 && running(&ps[0]) && image.report(&pod).is_some()
    })
    .await;
    pod
}

fn running(p: &Value) -> bool {
    p["status"]["phase"] == "Running"
        && p["status"]["containerStatuses"][0]["state"]["running"].is_object()
}

#[tokio::test]
async fn a_deployments_replicas_run_as_processes_with_what_a_kubelet_gives() {
    if !can_sandbox() {
        return;
    }
    let image = Image::new();
    let k = server(&image).await;
    let r = k
        .post(DEPLOYS, &deployment("probe", 2, args(&image, "serve")))
        .await;
    assert_eq!(r.code(), 201, "{}", r.json());
    let mut names = Vec::new();
    eventually("both replicas running and reported", async || {
        let ps = pods(&k, "probe").await;
        names = ps.iter().map(name).collect();
        ps.len() == 2 && ps.iter().all(running) && names.iter().all(|n| image.report(n).is_some())
    })
    .await;
    for pod in &names {
        let report = image.report(pod).expect("report");
        assert_eq!(
            report["hostname"],
            json!(pod),
            "the pod's name is its hostname"
        );
        // Each pod has its own network namespace: both bound :8081.
        assert_eq!(report["bound"], json!(true), "{pod}: {}", report["bound"]);
        let env = &report["env"];
        assert_eq!(env["GREETING"], "hello");
        assert_eq!(env["KUBERNETES_SERVICE_HOST"], "10.96.0.1");
        assert_eq!(env["KUBERNETES_SERVICE_PORT"], "443");
        assert_eq!(env["HOSTNAME"], json!(pod));
        assert!(
            env.get("CARGO").is_none(),
            "the server's environment does not leak"
        );
        assert_eq!(report["namespace"], "default");
        // The token and CA reach this server over TLS at the Service IP,
        // as the pod's service account.
        assert_eq!(report["user"], "system:serviceaccount:default:default");
    }
    // The kubernetes Service the pods reached, with its EndpointSlice.
    let svc = k
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await
        .json();
    assert_eq!(svc["spec"]["clusterIP"], "10.96.0.1");
    assert_eq!(svc["spec"]["ports"][0]["port"], 443);
    let slice = k
        .get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes")
        .await
        .json();
    assert_eq!(slice["endpoints"][0]["addresses"], json!(["127.0.0.1"]));
    assert_eq!(slice["ports"][0]["port"], json!(k.server.url().port_u16()));
    let pod = k.get(&format!("{PODS}/{}", names[0])).await.json();
    let status = &pod["status"]["containerStatuses"][0];
    assert_eq!(status["ready"], true);
    assert_eq!(status["started"], true);
    assert_eq!(status["restartCount"], 0);
    assert_eq!(status["image"], IMAGE);
    assert!(pod["status"]["podIP"]
        .as_str()
        .is_some_and(|ip| ip.starts_with("10.244.")));
    let events = k.get("/api/v1/namespaces/default/events").await.json();
    let started = events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["reason"] == "Started" && e["involvedObject"]["name"] == json!(names[0]))
        .count();
    assert_eq!(started, 1, "one Started event per start");

    // Deletion: SIGTERM first (the script records it and exits), then
    // the pod is gone; the Deployment replaces it.
    let r = k.delete(&format!("{PODS}/{}", names[0])).await;
    assert_eq!(r.code(), 200);
    let term = image.reports().join(format!("{}.term", names[0]));
    eventually(
        "the deleted pod's process got SIGTERM and the pod is gone",
        async || term.exists() && k.get(&format!("{PODS}/{}", names[0])).await.code() == 404,
    )
    .await;
    eventually("a replacement runs", async || {
        let ps = pods(&k, "probe").await;
        ps.len() == 2 && ps.iter().all(running) && !ps.iter().any(|p| name(p) == names[0])
    })
    .await;
}

#[tokio::test]
async fn a_process_ignoring_sigterm_is_killed_after_the_grace_period() {
    if !can_sandbox() {
        return;
    }
    let image = Image::new();
    let k = server(&image).await;
    k.post(
        DEPLOYS,
        &deployment("stubborn", 1, args(&image, "ignore-term")),
    )
    .await;
    let pod = running_pod(&k, &image, "stubborn").await;
    let pid = image.report(&pod).expect("report")["pid"]
        .as_i64()
        .expect("pid");
    let started = std::time::Instant::now();
    k.delete_with(&format!("{PODS}/{pod}"), &json!({"gracePeriodSeconds": 2}))
        .await;
    eventually("the pod is gone", async || {
        k.get(&format!("{PODS}/{pod}")).await.code() == 404
    })
    .await;
    let took = started.elapsed();
    assert!(
        image.reports().join(format!("{pod}.term")).exists(),
        "SIGTERM came first"
    );
    assert!(
        took >= Duration::from_secs(2),
        "SIGKILL waited the grace period: {took:?}"
    );
    // The script is PID 1 of its own PID namespace; the pid it saw is 1.
    assert_eq!(
        pid, 1,
        "the container's process is PID 1 in its PID namespace"
    );
}

/// The processes whose command line names `dir` (the test's reports).
fn processes_naming(dir: &Path) -> usize {
    let needle = dir.display().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmd| String::from_utf8_lossy(cmd).contains(&needle))
        .count()
}

// A forced deletion (grace 0) removes the object at once; the kubelet
// still stops what ran (pkg/kubelet/pod_workers.go: a pod gone from the
// API is killed).
#[tokio::test]
async fn a_force_deleted_pods_processes_are_killed() {
    if !can_sandbox() {
        return;
    }
    let image = Image::new();
    let k = server(&image).await;
    k.post(
        DEPLOYS,
        &deployment("forced", 1, args(&image, "ignore-term")),
    )
    .await;
    let pod = running_pod(&k, &image, "forced").await;
    assert_eq!(processes_naming(&image.reports()), 1);
    k.delete_with(&format!("{PODS}/{pod}"), &json!({"gracePeriodSeconds": 0}))
        .await;
    eventually("the replacement runs, and only its process", async || {
        let ps = pods(&k, "forced").await;
        ps.len() == 1
            && name(&ps[0]) != pod
            && image.report(&name(&ps[0])).is_some()
            && processes_naming(&image.reports()) == 1
    })
    .await;
    // Scaled to zero, nothing of the Deployment runs any more.
    k.merge(
        &format!("{DEPLOYS}/forced"),
        &json!({"spec": {"replicas": 0}}),
    )
    .await;
    eventually("no process left", async || {
        processes_naming(&image.reports()) == 0
    })
    .await;
}

#[tokio::test]
async fn a_crashing_container_restarts_with_back_off() {
    if !can_sandbox() {
        return;
    }
    let image = Image::new();
    let k = server(&image).await;
    k.post(DEPLOYS, &deployment("crasher", 1, args(&image, "crash")))
        .await;
    eventually("CrashLoopBackOff after restarts", async || {
        let ps = pods(&k, "crasher").await;
        let Some(s) = ps
            .first()
            .map(|p| p["status"]["containerStatuses"][0].clone())
        else {
            return false;
        };
        s["restartCount"].as_i64().unwrap_or(0) >= 2
            && s["state"]["waiting"]["reason"] == "CrashLoopBackOff"
            && s["lastState"]["terminated"]["exitCode"] == 3
    })
    .await;
    let ps = pods(&k, "crasher").await;
    let message = ps[0]["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(message.starts_with("back-off "), "{message}");
    assert!(
        message.contains("restarting failed container=main"),
        "{message}"
    );

    // `kubectl logs --previous`: the instance before the current one.
    let pod = name(&ps[0]);
    let previous = k.get(&format!("{PODS}/{pod}/log?previous=true")).await;
    assert_eq!(previous.code(), 200);
    let text = String::from_utf8_lossy(&previous.body).into_owned();
    // stdout and stderr are two pipes: their lines interleave as they come.
    for line in [
        format!("started {pod}"),
        "to stderr".into(),
        "crashing".into(),
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in {text}");
    }
}

// kubectl logs: pkg/registry/core/pod/rest/log.go and the kubelet's
// kuberuntime/logs (tail, since, timestamps, limitBytes, follow).
#[tokio::test]
async fn logs_keep_each_containers_output_with_the_kubelets_options() {
    if !can_sandbox() {
        return;
    }
    let image = Image::new();
    let k = server(&image).await;
    k.post(DEPLOYS, &deployment("talker", 1, args(&image, "serve")))
        .await;
    let mut pod = String::new();
    eventually("a few ticks logged", async || {
        let ps = pods(&k, "talker").await;
        pod = ps.first().map(name).unwrap_or_default();
        let log = k.get(&format!("{PODS}/{pod}/log")).await;
        log.code() == 200 && String::from_utf8_lossy(&log.body).contains("tick 2\n")
    })
    .await;
    let log = |q: &str| {
        let path = format!("{PODS}/{pod}/log{q}");
        let k = &k;
        async move {
            let r = k.get(&path).await;
            (
                r.code(),
                String::from_utf8_lossy(&r.body).into_owned(),
                r.headers.get("content-type").cloned(),
            )
        }
    };
    let (code, all, ct) = log("").await;
    assert_eq!(
        (code, ct.as_ref().and_then(|c| c.to_str().ok())),
        (200, Some("text/plain"))
    );
    for line in [
        format!("started {pod}"),
        "to stderr".into(),
        "tick 1".into(),
    ] {
        assert!(all.lines().any(|l| l == line), "{line:?} in {all}");
    }
    let (_, tail, _) = log("?tailLines=1").await;
    assert_eq!(tail.lines().count(), 1, "{tail}");
    assert!(tail.starts_with("tick "), "{tail}");
    let (_, stamped, _) = log("?tailLines=2&timestamps=true").await;
    for line in stamped.lines() {
        let (at, rest) = line
            .split_once(' ')
            .expect("a timestamp, a space, the line");
        assert!(at.parse::<jiff::Timestamp>().is_ok(), "{at}");
        assert!(rest.starts_with("tick "), "{line}");
    }
    let (_, limited, _) = log("?limitBytes=7").await;
    assert_eq!(limited, all[..7]);
    let (_, none, _) = log("?tailLines=0").await;
    assert_eq!(none, "");
    // Following: the stream grows with new lines (ended here by limitBytes).
    let (_, now, _) = log("").await;
    let want = now.len() + 40;
    let (code, followed, _) = log(&format!("?follow=true&limitBytes={want}")).await;
    assert_eq!(code, 200);
    assert_eq!(followed.len(), want, "{followed}");
    assert!(
        followed.starts_with(&now),
        "the kept lines, then the new ones"
    );

    // The errors kubectl users see.
    let (code, body, _) = log("?container=nope").await;
    assert_eq!(code, 400, "{body}");
    assert!(
        body.contains(&format!("container nope is not valid for pod {pod}")),
        "{body}"
    );
    let (code, body, _) = log("?previous=true").await;
    assert_eq!(code, 400, "{body}");
    let message = serde_json::from_str::<Value>(&body).expect("a Status")["message"].clone();
    assert_eq!(
        message,
        format!("previous terminated container \"main\" in pod \"{pod}\" not found")
    );
    let (code, body, _) = log("?sinceSeconds=0").await;
    assert_eq!(code, 422, "{body}");
    let (code, _, _) = log("?sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z").await;
    assert_eq!(code, 422);
}

fn probed(name: &str, image: &Image) -> Value {
    let mut d = deployment(name, 1, args(image, "serve"));
    let c = &mut d["spec"]["template"]["spec"]["containers"][0];
    c["ports"] = json!([{"name": "health", "containerPort": 8081}]);
    c["readinessProbe"] = json!({"httpGet": {"path": "/readyz", "port": "health"},
        "periodSeconds": 1, "failureThreshold": 1});
    c["livenessProbe"] = json!({"httpGet": {"path": "/healthz", "port": 8081},
        "periodSeconds": 1, "failureThreshold": 2});
    d
}

fn container_ready(p: &Value) -> bool {
    p["status"]["containerStatuses"][0]["ready"] == true
        && p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

async fn events_of(k: &Kube, pod: &str, reason: &str) -> Vec<String> {
    k.get("/api/v1/namespaces/default/events").await.json()["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["reason"] == reason && e["involvedObject"]["name"] == pod)
        .filter_map(|e| e["message"].as_str().map(str::to_owned))
        .collect()
}

// pkg/kubelet/prober/worker.go: readiness starts false and follows the
// probe; liveness failures past the threshold restart the container.
#[tokio::test]
async fn probes_drive_readiness_and_a_failed_liveness_probe_restarts() {
    if !can_sandbox() {
        return;
    }
    let image = Image::new();
    let k = server(&image).await;
    k.post(DEPLOYS, &probed("probed", &image)).await;
    let pod = running_pod(&k, &image, "probed").await;
    let get = async |k: &Kube| k.get(&format!("{PODS}/{pod}")).await.json();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !container_ready(&get(&k).await),
        "not ready before /readyz answers 200"
    );
    // A Service over the pod: its EndpointSlice follows readiness
    // (pkg/controller/endpointslice), the named targetPort resolved.
    k.post(
        "/api/v1/namespaces/default/services",
        &json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "probed"}, "spec": {"selector": {"app": "probed"},
            "ports": [{"name": "web", "port": 80, "targetPort": "health"}]}}),
    )
    .await;
    let slice = async |k: &Kube| {
        let list = k
            .get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dprobed")
            .await
            .json();
        list["items"][0].clone()
    };
    eventually("an EndpointSlice with the unready pod", async || {
        let s = slice(&k).await;
        s["endpoints"][0]["conditions"]["ready"] == false
            && s["endpoints"][0]["targetRef"]["name"] == json!(pod)
            && s["ports"] == json!([{"name": "web", "port": 8081, "protocol": "TCP"}])
    })
    .await;
    let flag = |f: &str| image.reports().join(format!("{pod}.{f}"));
    std::fs::write(flag("ready"), "").expect("flag");
    eventually("ready once /readyz answers 200", async || {
        container_ready(&get(&k).await)
    })
    .await;
    eventually("the endpoint ready", async || {
        slice(&k).await["endpoints"][0]["conditions"]["ready"] == true
    })
    .await;
    std::fs::remove_file(flag("ready")).expect("unflag");
    eventually("unready again", async || !container_ready(&get(&k).await)).await;
    let unhealthy = events_of(&k, &pod, "Unhealthy").await;
    assert!(
        unhealthy
            .iter()
            .any(|m| m == "Readiness probe failed: HTTP probe failed with statuscode: 500"),
        "{unhealthy:?}"
    );
    std::fs::write(flag("sick"), "").expect("flag");
    eventually("restarted after the liveness probe failed", async || {
        get(&k).await["status"]["containerStatuses"][0]["restartCount"]
            .as_i64()
            .unwrap_or(0)
            >= 1
    })
    .await;
    std::fs::remove_file(flag("sick")).expect("unflag");
    let killing = events_of(&k, &pod, "Killing").await;
    assert!(
        killing
            .iter()
            .any(|m| m == "Container main failed liveness probe, will be restarted"),
        "{killing:?}"
    );
    let status = &get(&k).await["status"]["containerStatuses"][0];
    // The script exits 0 on SIGTERM.
    assert_eq!(status["lastState"]["terminated"]["exitCode"], 0, "{status}");
}

/// A pod that runs as the scaffold asks (`runAsNonRoot`,
/// `readOnlyRootFilesystem`) with env and volumes from ConfigMaps,
/// Secrets and the downward API; its reports go to a hostPath.
fn configured(image: &Image) -> Value {
    let mut d = deployment("configured", 1, vec!["/reports".into(), "serve".into()]);
    let spec = &mut d["spec"]["template"]["spec"];
    spec["securityContext"] = json!({"runAsNonRoot": true});
    spec["volumes"] = json!([
        {"name": "reports", "hostPath": {"path": image.reports(), "type": "Directory"}},
        {"name": "scratch", "emptyDir": {}},
        {"name": "config", "configMap": {"name": "settings", "items": [{"key": "mode", "path": "nested/mode"}]}},
        {"name": "secret", "secret": {"secretName": "creds"}},
        {"name": "podinfo", "downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
    ]);
    let c = &mut spec["containers"][0];
    c["securityContext"] =
        json!({"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false});
    c["volumeMounts"] = json!([
        {"name": "reports", "mountPath": "/reports"},
        {"name": "scratch", "mountPath": "/scratch"},
        {"name": "config", "mountPath": "/config"},
        {"name": "secret", "mountPath": "/secret"},
        {"name": "podinfo", "mountPath": "/podinfo"},
    ]);
    c["envFrom"] = json!([{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}]);
    c["env"] = json!([
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
        {"name": "GREETING", "value": "hello $(POD_NAME)"},
        {"name": "MEMORY", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
    ]);
    c["resources"] = json!({"limits": {"memory": "128Mi"}});
    d
}

// pkg/kubelet/kubelet_pods.go makeEnvironmentVariables, pkg/volume, and
// kuberuntime's verifyRunAsNonRoot.
#[tokio::test]
async fn env_volumes_and_the_security_context_as_the_kubelet_gives_them() {
    if !can_sandbox() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let image = Image::new();
    // The container runs as 65532: it must reach the script and reports.
    std::fs::set_permissions(image.dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    std::fs::set_permissions(image.reports(), std::fs::Permissions::from_mode(0o777))
        .expect("chmod");
    let k = server(&image).await;
    k.post(
        "/api/v1/namespaces/default/services",
        &json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web-api"}, "spec": {"ports": [{"name": "http", "port": 80}]}}),
    )
    .await;
    k.post(DEPLOYS, &configured(&image)).await;
    // No ConfigMap yet: the volume cannot be set up and the pod waits.
    let mut pod = String::new();
    eventually("FailedMount for the missing ConfigMap", async || {
        let ps = pods(&k, "configured").await;
        pod = ps.first().map(name).unwrap_or_default();
        events_of(&k, &pod, "FailedMount").await.iter().any(|m| {
            m == "MountVolume.SetUp failed for volume \"config\" : configmap \"settings\" not found"
        })
    })
    .await;
    k.configmap("default", "settings", json!({"mode": "fast"}))
        .await;
    k.post(
        "/api/v1/namespaces/default/secrets",
        &json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds"}, "stringData": {"password": "s3cret"}}),
    )
    .await;
    eventually("the pod runs once its volumes can be set up", async || {
        image.report(&pod).is_some()
    })
    .await;
    let report = image.report(&pod).expect("report");
    assert_eq!(
        (report["uid"].clone(), report["gid"].clone()),
        (json!(65532), json!(65532)),
        "runAsNonRoot without runAsUser runs as the image's nonroot user"
    );
    assert_eq!(report["root_writable"], 30, "EROFS: readOnlyRootFilesystem");
    assert_eq!(
        report["scratch_writable"], true,
        "an emptyDir stays writable"
    );
    let env = &report["env"];
    assert_eq!(env["POD_NAME"], json!(pod));
    assert!(env["POD_IP"]
        .as_str()
        .is_some_and(|ip| ip.starts_with("10.244.")));
    assert_eq!(env["MODE"], "fast");
    assert_eq!(env["CFG_mode"], "fast");
    assert_eq!(env["PASSWORD"], "s3cret");
    assert_eq!(env["GREETING"], json!(format!("hello {pod}")));
    assert_eq!(env["MEMORY"], "128");
    assert_eq!(
        env["WEB_API_SERVICE_HOST"]
            .as_str()
            .map(|ip| ip.starts_with("10.96.")),
        Some(true)
    );
    assert_eq!(env["WEB_API_SERVICE_PORT_HTTP"], "80");
    assert_eq!(env["KUBERNETES_PORT_443_TCP"], "tcp://10.96.0.1:443");
    let files = &report["files"];
    assert_eq!(files["/config/nested/mode"], "fast");
    assert_eq!(files["/secret/password"], "s3cret");
    assert_eq!(
        files["/podinfo/labels"]
            .as_str()
            .map(|l| l.contains("app=\"configured\"")),
        Some(true),
        "{files}"
    );
    assert_eq!(report["user"], "system:serviceaccount:default:default");
}

// A missing key is CreateContainerConfigError (kubelet_pods.go), and
// runAsUser 0 with runAsNonRoot breaks the policy (verifyRunAsNonRoot).
#[tokio::test]
async fn unresolvable_config_is_create_container_config_error() {
    if !can_sandbox() {
        return;
    }
    let image = Image::new();
    let k = server(&image).await;
    k.configmap("default", "settings", json!({"mode": "fast"}))
        .await;
    let mut d = deployment("misconfigured", 1, args(&image, "serve"));
    d["spec"]["template"]["spec"]["containers"][0]["env"] = json!([
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "absent"}}}]);
    k.post(DEPLOYS, &d).await;
    let mut root = deployment("rooted", 1, args(&image, "serve"));
    root["spec"]["template"]["spec"]["securityContext"] =
        json!({"runAsNonRoot": true, "runAsUser": 0});
    k.post(DEPLOYS, &root).await;
    let waiting = |p: &Value| p["status"]["containerStatuses"][0]["state"]["waiting"].clone();
    eventually(
        "CreateContainerConfigError for the missing key",
        async || {
            pods(&k, "misconfigured").await.first().is_some_and(|p| {
                waiting(p)["reason"] == "CreateContainerConfigError"
                    && waiting(p)["message"]
                        == "couldn't find key absent in ConfigMap default/settings"
            })
        },
    )
    .await;
    eventually("CreateContainerConfigError for runAsUser 0", async || {
        pods(&k, "rooted").await.first().is_some_and(|p| {
            waiting(p)["reason"] == "CreateContainerConfigError"
                && waiting(p)["message"].as_str().is_some_and(|m| {
                    m.starts_with("container's runAsUser breaks non-root policy (pod: \"rooted-")
                })
        })
    })
    .await;
}

async fn start_error(image: &str, path: &Path) -> String {
    match ApiServer::builder()
        .workloads(Workloads::fast().nodes(1))
        .image(image, path)
        .start()
        .await
    {
        Ok(_) => panic!("a bad image mapping ({image}={}) started", path.display()),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_bad_image_mapping_stops_the_server_with_the_rule_and_an_example() {
    let image = Image::new();
    let missing = image.dir.path().join("no-such-binary");
    let e = start_error(IMAGE, &missing).await;
    assert!(
        e.contains("cannot be read") && e.contains("controller:latest=target/debug/manager"),
        "{e}"
    );
    let not_exec = image.dir.path().join("data.txt");
    std::fs::write(&not_exec, "not a program").expect("written");
    let e = start_error(IMAGE, &not_exec).await;
    assert!(e.contains("not an executable file"), "{e}");
    let e = start_error(" ", &image.path()).await;
    assert!(e.contains("no image name"), "{e}");
    let e = match ApiServer::builder()
        .image(IMAGE, image.path())
        .start()
        .await
    {
        Ok(_) => panic!("an image mapping without nodes started"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("node"), "{e}");
}
