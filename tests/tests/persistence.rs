//! `kubeforge dev-server --data-dir` survives SIGKILL: 50 concurrent
//! writers create, update (with a resourceVersion precondition), patch
//! (without) and delete (with and without one) ConfigMaps against the
//! binary in a child process, which is killed at a random moment; then it
//! is started again on the same directory and the state is checked, 20
//! rounds:
//!
//! - every acknowledged write is there with its resourceVersion, unless
//!   the key's one write in flight at the kill (unacknowledged) replaced
//!   it — and then the key holds exactly what that write asked for;
//! - nothing else: no key holds a value nobody wrote or one an
//!   acknowledged later write replaced;
//! - resourceVersions strictly increase across restarts: every
//!   acknowledged write after a restart is above everything seen before;
//! - nothing read is lost: 10 readers get the keys meanwhile, and every
//!   state they were answered with is still there or was replaced by a
//!   later one (a reader is answered only once what it saw is durable).
//!
//!
//! The linearizability checker then judges a whole history across ten
//! SIGKILLs: concurrent clients with preconditions and a watch against
//! each server, the events a crash cut from the watch rebuilt from the
//! answers and the restarted state.
//!
//! And kubectl's scenario: objects of many kinds, a CRD and its custom
//! resource, RBAC for a token user, written through the dev server, which
//! is stopped and started again: kubectl, with the kubeconfigs written
//! before, reads everything back, and the user's RBAC still holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
use kubeforge::kube_core::params::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions,
};
use kubeforge::{Api, Client, Config};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const WRITERS: usize = 50;
const READERS: usize = 10;
const KEYS_PER_WRITER: usize = 2;
const ROUNDS: usize = 20;
const NS: &str = "default";

/// A key's state: `(resourceVersion, data.v)`, `None` when absent.
type State = Option<(u64, String)>;

/// A write that was sent and not answered when the server died.
#[derive(Clone, Debug)]
enum InFlight {
    /// Create, update or patch: the value it wrote.
    Put(String),
    Delete,
}

/// One key as the writers know it.
#[derive(Clone, Debug, Default)]
struct Key {
    /// The state the last acknowledged write left (or the restart found).
    acked: State,
    in_flight: Option<InFlight>,
}

/// A running `kubeforge dev-server`.
struct Server {
    child: Child,
    kubeconfig: PathBuf,
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

async fn start(bin: &Path, data: &Path, kubeconfig: &Path) -> Server {
    start_with(bin, data, kubeconfig, free_port(), &[]).await
}

/// Starts the dev server on `port` (a restart keeps the port, as the
/// kubeconfigs written before name it).
async fn start_with(
    bin: &Path,
    data: &Path,
    kubeconfig: &Path,
    port: u16,
    extra: &[&str],
) -> Server {
    let mut child = Command::new(bin)
        .args(["dev-server", "--nodes", "0", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(data)
        .arg("--write-kubeconfig")
        .arg(kubeconfig)
        .args(extra)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("dev-server starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The banner ends with a "written to" line per kubeconfig: the
    // admin's, then one per identity flag (a flag and its value).
    let mut kubeconfigs = 1 + extra.len() / 2;
    while kubeconfigs > 0 {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("dev-server prints its banner")
            .unwrap()
            .expect("dev-server keeps running until it prints its kubeconfigs");
        if line.contains("written to") {
            kubeconfigs -= 1;
        }
    }
    // Keep reading stdout, so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Server {
        child,
        kubeconfig: kubeconfig.to_owned(),
    }
}

/// SIGKILL, and the process reaped: its lock on the directory is gone.
async fn kill(mut server: Server) {
    server.child.start_kill().expect("SIGKILL");
    server.child.wait().await.expect("the server exits");
}

async fn configmaps(server: &Server) -> Api<ConfigMap> {
    let config = Config::from_kubeconfig_file(&server.kubeconfig, &Default::default())
        .await
        .expect("the kubeconfig loads");
    Api::namespaced(Client::new(config).expect("client"), NS)
}

fn cm(name: &str, value: &str, rv: Option<u64>) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "resourceVersion": rv.map(|r| r.to_string())},
        "data": {"v": value},
    }))
    .unwrap()
}

fn state_of(c: &ConfigMap) -> (u64, String) {
    let rv = c
        .metadata
        .resource_version
        .as_deref()
        .and_then(|r| r.parse().ok())
        .expect("a numeric resourceVersion");
    let v = c
        .data
        .as_ref()
        .and_then(|d| d.get("v"))
        .cloned()
        .unwrap_or_default();
    (rv, v)
}

/// One write: a create of an absent key; of a present one a delete or a
/// replace, each with or without a resourceVersion precondition, or a
/// merge patch.
async fn send(
    api: &Api<ConfigMap>,
    name: &str,
    value: &str,
    acked: Option<&(u64, String)>,
    delete: bool,
    precondition: bool,
) -> Result<State, kubeforge::Error> {
    let Some((rv, _)) = acked else {
        let c = api
            .create(&PostParams::default(), &cm(name, value, None))
            .await?;
        return Ok(Some(state_of(&c)));
    };
    if delete {
        let mut dp = DeleteParams::default();
        if precondition {
            dp = dp.preconditions(Preconditions {
                resource_version: Some(rv.to_string()),
                uid: None,
            });
        }
        api.delete(name, &dp).await?;
        return Ok(None);
    }
    let c = if precondition {
        api.replace(name, &PostParams::default(), &cm(name, value, Some(*rv)))
            .await?
    } else {
        let patch = Patch::Merge(json!({"data": {"v": value}}));
        api.patch(name, &PatchParams::default(), &patch).await?
    };
    Ok(Some(state_of(&c)))
}

/// One writer: random writes on its own keys until the server is gone.
/// Returns the smallest resourceVersion it saw acknowledged this round.
async fn writer(
    api: Api<ConfigMap>,
    id: usize,
    round: usize,
    keys: Arc<Mutex<BTreeMap<String, Key>>>,
) -> Option<u64> {
    let mut rng = fastrand::Rng::with_seed((round * WRITERS + id) as u64);
    let mut lowest: Option<u64> = None;
    for n in 0.. {
        let name = format!("w{id}-k{}", rng.usize(..KEYS_PER_WRITER));
        let value = format!("r{round}-w{id}-{n}");
        let acked = keys
            .lock()
            .unwrap()
            .entry(name.clone())
            .or_default()
            .acked
            .clone();
        // A quarter of the writes to a present key delete it.
        let delete = acked.is_some() && rng.u8(..4) == 0;
        let op = if delete {
            InFlight::Delete
        } else {
            InFlight::Put(value.clone())
        };
        keys.lock().unwrap().get_mut(&name).unwrap().in_flight = Some(op);
        let result = send(&api, &name, &value, acked.as_ref(), delete, rng.bool()).await;
        match result {
            Ok(state) => {
                if let Some((rv, _)) = &state {
                    lowest = Some(lowest.map_or(*rv, |l: u64| l.min(*rv)));
                }
                let mut keys = keys.lock().unwrap();
                let key = keys.get_mut(&name).unwrap();
                key.acked = state;
                key.in_flight = None;
            }
            // The server is gone: the write may or may not have happened.
            Err(kubeforge::Error::Api(status)) => {
                panic!("{name}: the server refused a write it should take: {status:?}")
            }
            Err(_) => return lowest,
        }
    }
    lowest
}

/// One reader: gets random keys until the server is gone; what it was
/// answered, `(name, resourceVersion)`.
async fn reader(api: Api<ConfigMap>, id: usize, round: usize) -> Vec<(String, u64)> {
    let mut rng = fastrand::Rng::with_seed((round * READERS + id) as u64 + 1_000_000);
    let mut seen = Vec::new();
    loop {
        let name = format!(
            "w{}-k{}",
            rng.usize(..WRITERS),
            rng.usize(..KEYS_PER_WRITER)
        );
        match api.get_opt(&name).await {
            Ok(Some(c)) => seen.push((name, state_of(&c).0)),
            Ok(None) => {}
            Err(_) => return seen,
        }
    }
}

/// The keys as the restarted server has them.
async fn stored(api: &Api<ConfigMap>) -> BTreeMap<String, (u64, String)> {
    let list = api.list(&ListParams::default()).await.expect("list");
    list.items
        .iter()
        .filter_map(|c| Some((c.metadata.name.clone()?, state_of(c))))
        .filter(|(name, _)| name.starts_with('w'))
        .collect()
}

/// Checks the restarted state against what the writers knew, and makes
/// it the writers' knowledge for the next round. Returns the highest
/// resourceVersion found.
fn check(keys: &mut BTreeMap<String, Key>, found: &BTreeMap<String, (u64, String)>) -> u64 {
    let mut highest = 0;
    for (name, key) in keys.iter_mut() {
        let now = found.get(name).cloned();
        let kept = now == key.acked;
        let in_flight_applied = match (&key.in_flight, &now) {
            (Some(InFlight::Put(v)), Some((rv, got))) => {
                got == v && key.acked.as_ref().is_none_or(|(old, _)| rv > old)
            }
            (Some(InFlight::Delete), None) => true,
            _ => false,
        };
        assert!(
            kept || in_flight_applied,
            "{name}: found {now:?}; the last acknowledged write left {:?}, the one in flight was {:?}",
            key.acked,
            key.in_flight
        );
        if let Some((rv, _)) = &now {
            highest = highest.max(*rv);
        }
        key.acked = now;
        key.in_flight = None;
    }
    for name in found.keys() {
        assert!(keys.contains_key(name), "{name}: nobody wrote it");
    }
    highest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_under_concurrent_writers_loses_no_acknowledged_write() {
    let bin = kubeforge_e2e::kubeforge_binary();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let kubeconfig = dir.path().join("kubeconfig");
    let keys = Arc::new(Mutex::new(BTreeMap::<String, Key>::new()));
    let mut seen_before = 0u64;
    let mut acknowledged = 0usize;
    let mut reads = 0usize;
    let mut rng = fastrand::Rng::with_seed(7);
    for round in 0..ROUNDS {
        let server = start(&bin, &data, &kubeconfig).await;
        let api = configmaps(&server).await;
        let writers: Vec<_> = (0..WRITERS)
            .map(|id| tokio::spawn(writer(api.clone(), id, round, keys.clone())))
            .collect();
        let readers: Vec<_> = (0..READERS)
            .map(|id| tokio::spawn(reader(api.clone(), id, round)))
            .collect();
        tokio::time::sleep(Duration::from_millis(rng.u64(150..600))).await;
        kill(server).await;
        for w in writers {
            if let Some(lowest) = w.await.expect("the writer ends") {
                assert!(
                    lowest > seen_before,
                    "round {round}: an acknowledged write got resourceVersion {lowest}, not above {seen_before} seen before the restart"
                );
                acknowledged += 1;
            }
        }
        let mut read = Vec::new();
        for r in readers {
            read.extend(r.await.expect("the reader ends"));
        }
        reads += read.len();
        let server = start(&bin, &data, &kubeconfig).await;
        let api = configmaps(&server).await;
        let found = stored(&api).await;
        for (name, rv) in &read {
            if let Some((now, _)) = found.get(name) {
                assert!(
                    now >= rv,
                    "round {round}: {name} was read at resourceVersion {rv}, the restart has {now}"
                );
            }
        }
        let highest = check(&mut keys.lock().unwrap(), &found);
        seen_before = seen_before.max(highest);
        // Later writes must be above every resourceVersion issued so far,
        // which the list's resourceVersion bounds.
        let list = api.list(&ListParams::default()).await.unwrap();
        let list_rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
        seen_before = seen_before.max(list_rv);
        // Gone before the next round starts on the directory.
        kill(server).await;
    }
    eprintln!("{ROUNDS} SIGKILLs under {WRITERS} writers and {READERS} readers: {acknowledged} writer-rounds with acknowledged writes, all kept; {reads} reads, none lost");
    assert!(
        acknowledged > ROUNDS * WRITERS / 2,
        "the writers got writes in"
    );
}

const SCENARIO: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 3}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team}
data: {color: blue}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: team}
stringData: {password: hunter2}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: team}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-reads, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
"#;

const GADGET: &str = r#"
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g1, namespace: team}
spec: {}
"#;

/// Runs kubectl with `kubeconfig`; its stdout, or its stderr on failure.
async fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
    use tokio::io::AsyncWriteExt;
    let mut child = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", kubeconfig.with_extension("cache"))
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl runs");
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(text.as_bytes()).await.unwrap();
    }
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(text(&out.stderr))
    }
}

async fn ok(kubeconfig: &Path, args: &[&str]) -> String {
    kubectl(kubeconfig, args, None)
        .await
        .unwrap_or_else(|e| panic!("kubectl {args:?}: {e}"))
}

/// SIGTERM, and a clean exit.
async fn stop(mut server: Server) {
    let pid = server.child.id().expect("pid").to_string();
    let term = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    assert!(term.unwrap().success());
    let status = tokio::time::timeout(Duration::from_secs(10), server.child.wait())
        .await
        .expect("exits")
        .unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_back_what_a_restarted_dev_server_kept() {
    let bin = kubeforge_e2e::kubeforge_binary();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let admin = dir.path().join("admin.kubeconfig");
    let alice = dir.path().join("alice.kubeconfig");
    let alice_flag = format!("alice={}", alice.display());
    let extra = ["--user", alice_flag.as_str()];
    let port = free_port();
    let server = start_with(&bin, &data, &admin, port, &extra).await;
    kubectl(&admin, &["apply", "-f", "-"], Some(SCENARIO))
        .await
        .unwrap();
    ok(
        &admin,
        &[
            "wait",
            "--for",
            "condition=established",
            "crd/gadgets.example.com",
        ],
    )
    .await;
    kubectl(&admin, &["apply", "-f", "-"], Some(GADGET))
        .await
        .unwrap();
    let settings = ok(
        &admin,
        &["get", "cm", "settings", "-n", "team", "-o", "json"],
    )
    .await;
    let settings: serde_json::Value = serde_json::from_str(&settings).unwrap();
    let rv: u64 = settings["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    stop(server).await;
    // The kubeconfigs written before the restart, kept aside: the restart
    // writes new ones.
    let admin_before = dir.path().join("admin-before.kubeconfig");
    let alice_before = dir.path().join("alice-before.kubeconfig");
    std::fs::copy(&admin, &admin_before).unwrap();
    std::fs::copy(&alice, &alice_before).unwrap();

    let server = start_with(&bin, &data, &admin, port, &extra).await;
    let again = ok(
        &admin_before,
        &["get", "cm", "settings", "-n", "team", "-o", "json"],
    )
    .await;
    let again: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(again["metadata"]["uid"], settings["metadata"]["uid"]);
    assert_eq!(
        again["metadata"]["resourceVersion"],
        settings["metadata"]["resourceVersion"]
    );
    assert_eq!(again["data"]["color"], "blue");
    let password = ok(
        &admin_before,
        &[
            "get",
            "secret",
            "creds",
            "-n",
            "team",
            "-o",
            "jsonpath={.data.password}",
        ],
    )
    .await;
    assert_eq!(password, "aHVudGVyMg==");
    let size = ok(
        &admin_before,
        &[
            "get",
            "gadget",
            "g1",
            "-n",
            "team",
            "-o",
            "jsonpath={.spec.size}",
        ],
    )
    .await;
    assert_eq!(size, "3", "the CRD is served again, its default applied");
    let replicas = ok(
        &admin_before,
        &[
            "get",
            "deploy",
            "web",
            "-n",
            "team",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
    )
    .await;
    assert_eq!(replicas, "2");
    // alice's token and RBAC survived: she reads ConfigMaps, not Secrets.
    ok(&alice_before, &["get", "cm", "settings", "-n", "team"]).await;
    let denied = kubectl(&alice_before, &["get", "secrets", "-n", "team"], None)
        .await
        .expect_err("alice may not read Secrets");
    assert!(
        denied.contains("Forbidden") || denied.contains("forbidden"),
        "{denied}"
    );
    // A write after the restart is above what was issued before.
    ok(
        &admin_before,
        &["label", "cm", "settings", "-n", "team", "tier=gold"],
    )
    .await;
    let after = ok(
        &admin_before,
        &[
            "get",
            "cm",
            "settings",
            "-n",
            "team",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ],
    )
    .await;
    assert!(after.parse::<u64>().unwrap() > rv, "{after} > {rv}");
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_linearizability_checker_accepts_a_history_across_sigkills() {
    use kubeforge_soak::linearizability::{check, crash_tail, run_segment, state, RunOptions};
    const CRASHES: u64 = 10;
    let bin = kubeforge_e2e::kubeforge_binary();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let kubeconfig = dir.path().join("kubeconfig");
    let port = free_port();
    let options = RunOptions {
        deletes: false,
        ..RunOptions::default()
    };
    let start = std::time::Instant::now();
    let (mut ops, mut events, mut problems) = (Vec::new(), Vec::new(), Vec::new());
    let mut cut = Vec::new();
    let mut unanswered = 0;
    let mut rng = fastrand::Rng::with_seed(11);
    for round in 0..=CRASHES {
        let server = start_with(&bin, &data, &kubeconfig, port, &[]).await;
        let api = configmaps(&server).await;
        if round > 0 {
            let restarted = state(&api).await.expect("the restarted state");
            let (tail, found) = crash_tail(&events, &cut, &restarted);
            cut.clear();
            events.extend(tail);
            problems.extend(found);
        }
        let crash = round < CRASHES;
        let (kill_it, keep) = if crash {
            let wait = Duration::from_millis(rng.u64(100..400));
            let kill_it: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> =
                Box::pin(async move {
                    tokio::time::sleep(wait).await;
                    kill(server).await;
                });
            (Some(kill_it), None)
        } else {
            (None, Some(server))
        };
        let segment = run_segment(api, round, options, start, kill_it)
            .await
            .expect("the segment runs");
        unanswered += segment
            .ops
            .iter()
            .filter(|o| {
                matches!(
                    o.outcome,
                    kubeforge_soak::linearizability::Outcome::Unknown(_)
                )
            })
            .count();
        if crash {
            cut.extend(segment.ops.iter().cloned());
        }
        ops.extend(segment.ops);
        events.extend(segment.events);
        if let Some(server) = keep {
            stop(server).await;
        }
    }
    let violations = check(&ops, &events);
    eprintln!(
        "linearizability across {CRASHES} SIGKILLs: {} operations ({unanswered} unanswered), {} events",
        ops.len(),
        events.len()
    );
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(
        violations.is_empty(),
        "{:#?}",
        &violations[..violations.len().min(20)]
    );
    assert!(unanswered > 0, "the kills cut requests off");
}
