//! Leader election across processes: three copies of the operator binary
//! (`--leader-elect`, the default 15 s lease and 2 s retry period) on one
//! Lease in kubeforge's API server. The leader is killed with SIGKILL,
//! stopped with SIGTERM, or cut off the network (each process reaches the
//! server through its own TCP relay here, which the test can cut); a
//! Memcached created right after is timed until its Deployment exists,
//! a fresh copy replaces the one that went, and the round's Memcacheds are
//! deleted, so that every successor starts with the same few objects to
//! reconcile. Figures (min/median/max per mode) are printed, not asserted.
//!
//! Each process writes under its own field manager (`--field-manager`),
//! and the test follows the server's history (Leases, Memcacheds and
//! Deployments, merged in resourceVersion order): every write an operator
//! made must come from the process that held the Lease at that
//! resourceVersion, so no two processes ever wrote as leader at once.
//!
//! The short version (one kill per mode) runs with `cargo test`; the long
//! one (10 per mode) with `-- --ignored`. With `FAILOVER_KEEP_LOGS` set,
//! the per-process logs (JSON, timestamped) are kept and their directory
//! printed, to line up each kill with the successor's election and first
//! reconcile.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kubeforge::k8s_openapi::api::apps::v1::Deployment;
use kubeforge::k8s_openapi::api::coordination::v1::Lease;
use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeforge::kube_core::params::{ListParams, WatchParams};
use kubeforge::kube_core::watch::WatchEvent;
use kubeforge::prelude::*;
use kubeforge::testing::ApiServer;
use memcached_operator::{Memcached, MemcachedSpec, LEASE_NAME};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::sync::watch;

const NS: &str = "default";
/// The field managers of the operator processes start with this.
const MANAGER_PREFIX: &str = "op-";

/// How a leader goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Sigkill,
    Sigterm,
    NetworkCut,
}

/// A TCP relay in front of the API server for one process; cutting it
/// drops its open connections and refuses new ones.
struct Relay {
    addr: SocketAddr,
    cut: watch::Sender<bool>,
}

impl Relay {
    async fn start(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind relay");
        let addr = listener.local_addr().expect("relay address");
        let (cut, cut_rx) = watch::channel(false);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if *cut_rx.borrow() {
                    continue; // dropped: the connection is reset
                }
                let mut cut_rx = cut_rx.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut_rx.wait_for(|cut| *cut) => {}
                    }
                });
            }
        });
        Relay { addr, cut }
    }

    fn cut(&self) {
        self.cut.send_replace(true);
    }
}

/// One operator process.
struct Operator {
    manager: String,
    child: Child,
    relay: Relay,
    identity: Arc<Mutex<Option<String>>>,
}

impl Operator {
    async fn spawn(n: usize, server: &ApiServer, dir: &Path) -> Operator {
        let relay = Relay::start(server.addr()).await;
        let kubeconfig = server
            .kubeconfig()
            .expect("kubeconfig")
            .replace(&server.addr().to_string(), &relay.addr.to_string());
        let path = dir.join(format!("kubeconfig-{n}"));
        std::fs::write(&path, kubeconfig).expect("write kubeconfig");
        let manager = format!("{MANAGER_PREFIX}{n}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_memcached-operator"))
            .arg("--kubeconfig")
            .arg(&path)
            .args(["--leader-elect", "--field-manager", &manager])
            .args([
                "--metrics-bind-address",
                "0",
                "--health-probe-bind-address",
                "0",
            ])
            .args(["--log-format", "json", "--log-level", "info"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the operator binary starts");
        let identity = Arc::new(Mutex::new(None));
        let stderr = child.stderr.take().expect("stderr");
        let log_path = dir.join(format!("operator-{n}.log"));
        let found = identity.clone();
        // Written line by line, so the log of a process still running
        // when the test ends is there too.
        let mut log = tokio::fs::File::create(log_path)
            .await
            .expect("create the process log");
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(id) = field(&line, "identity") {
                    found.lock().unwrap().get_or_insert(id);
                }
                let _ = log.write_all(line.as_bytes()).await;
                let _ = log.write_all(b"\n").await;
            }
        });
        Operator {
            manager,
            child,
            relay,
            identity,
        }
    }

    fn identity(&self) -> Option<String> {
        self.identity.lock().unwrap().clone()
    }
}

/// The string value of `"name":"..."` in a JSON log line.
fn field(line: &str, name: &str) -> Option<String> {
    let key = format!("\"{name}\":\"");
    let start = line.find(&key)? + key.len();
    let end = line[start..].find('"')?;
    Some(line[start..start + end].to_owned())
}

/// One object change in the server's history.
#[derive(Debug)]
struct Change {
    rv: u64,
    what: String,
    /// For a Lease: its holder ("" when released).
    holder: Option<String>,
    /// For a Memcached or Deployment: the operator managers whose
    /// `managedFields` entry this change created or touched.
    writers: Vec<String>,
}

/// Follows Leases, Memcacheds and Deployments into `history`.
fn follow_history(client: Client, history: Arc<Mutex<Vec<Change>>>) {
    fn managers(meta: &ObjectMeta) -> BTreeMap<String, String> {
        meta.managed_fields
            .iter()
            .flatten()
            .filter_map(|m| {
                let manager = m.manager.clone()?;
                let key = format!(
                    "{manager}|{}|{}",
                    m.operation.as_deref().unwrap_or(""),
                    m.subresource.as_deref().unwrap_or("")
                );
                Some((key, format!("{:?}", m.time)))
            })
            .collect()
    }
    fn rv(meta: &ObjectMeta) -> u64 {
        meta.resource_version
            .as_deref()
            .and_then(|r| r.parse().ok())
            .unwrap_or(0)
    }
    async fn follow<K>(api: Api<K>, history: Arc<Mutex<Vec<Change>>>)
    where
        K: Resource<DynamicType = ()>
            + Clone
            + Serialize
            + serde::de::DeserializeOwned
            + std::fmt::Debug
            + Send
            + 'static,
    {
        let kind = K::kind(&());
        let mut last: HashMap<String, BTreeMap<String, String>> = HashMap::new();
        let mut from = "0".to_owned();
        loop {
            let Ok(stream) = api.watch(&WatchParams::default(), &from).await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let mut stream = std::pin::pin!(stream);
            while let Some(Ok(event)) = stream.next().await {
                let (obj, deleted) = match event {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => (o, false),
                    WatchEvent::Deleted(o) => (o, true),
                    _ => continue,
                };
                let meta = obj.meta();
                from = meta.resource_version.clone().unwrap_or_default();
                let key = format!("{kind}/{}", obj.name_any());
                let now = managers(meta);
                let before = if deleted {
                    last.remove(&key)
                } else {
                    last.insert(key.clone(), now.clone())
                }
                .unwrap_or_default();
                let writers = if deleted {
                    Vec::new()
                } else {
                    now.iter()
                        .filter(|(k, t)| before.get(*k) != Some(*t))
                        .filter_map(|(k, _)| k.split('|').next())
                        .filter(|m| m.starts_with(MANAGER_PREFIX))
                        .map(str::to_owned)
                        .collect()
                };
                let holder = (kind == "Lease").then(|| {
                    serde_json::to_value(&obj)
                        .ok()
                        .and_then(|v| {
                            Some(v.get("spec")?.get("holderIdentity")?.as_str()?.to_owned())
                        })
                        .unwrap_or_default()
                });
                history.lock().unwrap().push(Change {
                    rv: rv(meta),
                    what: key,
                    holder,
                    writers,
                });
            }
        }
    }
    tokio::spawn(follow(Api::<Lease>::all(client.clone()), history.clone()));
    tokio::spawn(follow(
        Api::<Memcached>::namespaced(client.clone(), NS),
        history.clone(),
    ));
    tokio::spawn(follow(Api::<Deployment>::namespaced(client, NS), history));
}

/// Every operator write that did not come from the Lease's holder at its
/// resourceVersion. `managers` maps candidate identities to field managers.
fn overlaps(history: &[Change], managers: &HashMap<String, String>) -> (usize, Vec<String>) {
    let mut changes: Vec<&Change> = history.iter().collect();
    changes.sort_by_key(|c| c.rv);
    let mut holder = String::new();
    let mut writes = 0;
    let mut wrong = Vec::new();
    for c in changes {
        if let Some(h) = &c.holder {
            holder = h.clone();
            continue;
        }
        for w in &c.writers {
            writes += 1;
            if managers.get(&holder) != Some(w) {
                wrong.push(format!(
                    "{} at rv {} written by {w} while the Lease was held by {holder:?} ({:?})",
                    c.what,
                    c.rv,
                    managers.get(&holder)
                ));
            }
        }
    }
    (writes, wrong)
}

async fn lease_holder(client: &Client) -> Option<String> {
    let leases: Api<Lease> = Api::all(client.clone());
    let list = leases.list(&ListParams::default()).await.ok()?;
    list.items
        .into_iter()
        .find(|l| l.metadata.name.as_deref() == Some(LEASE_NAME))?
        .spec?
        .holder_identity
        .filter(|h| !h.is_empty())
}

/// Creates Memcached `name` and waits until its Deployment exists; the
/// time it took.
async fn reconciled(client: &Client, name: &str, deadline: Duration) -> Option<Duration> {
    let started = Instant::now();
    let memcacheds: Api<Memcached> = Api::namespaced(client.clone(), NS);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    memcacheds
        .create(
            &PostParams::default(),
            &Memcached::new(name, MemcachedSpec::with_size(1)),
        )
        .await
        .expect("create Memcached");
    while started.elapsed() < deadline {
        if let Ok(Some(_)) = deployments.get_opt(name).await {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    None
}

/// Deletes Memcached `name` and waits until it is gone (the leader
/// removes its finalizer); whether it went within `deadline`.
async fn deleted(client: &Client, name: &str, deadline: Duration) -> bool {
    let started = Instant::now();
    let memcacheds: Api<Memcached> = Api::namespaced(client.clone(), NS);
    let _ = memcacheds.delete(name, &DeleteParams::default()).await;
    while started.elapsed() < deadline {
        if let Ok(None) = memcacheds.get_opt(name).await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn summary(times: &[Duration]) -> String {
    let mut sorted = times.to_vec();
    sorted.sort();
    match (sorted.first(), sorted.last()) {
        (Some(min), Some(max)) => format!(
            "min {:.2}s  median {:.2}s  max {:.2}s  (n = {})",
            min.as_secs_f64(),
            sorted[sorted.len() / 2].as_secs_f64(),
            max.as_secs_f64(),
            sorted.len()
        ),
        _ => "no samples".to_owned(),
    }
}

async fn failover(kills_per_mode: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ApiServer::start().await.expect("API server");
    server
        .install_crd_for::<Memcached>()
        .expect("install the CRD");
    let client = server.client().expect("client");
    let history = Arc::new(Mutex::new(Vec::new()));
    follow_history(client.clone(), history.clone());

    let mut spawned = 0;
    let mut operators = Vec::new();
    for _ in 0..3 {
        operators.push(Operator::spawn(spawned, &server, dir.path()).await);
        spawned += 1;
    }
    let mut managers: HashMap<String, String> = HashMap::new();
    let mut times: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    let mut not_stopped = Vec::new();
    let modes = [Mode::Sigkill, Mode::Sigterm, Mode::NetworkCut];
    let mut round = 0;
    for mode in modes {
        for _ in 0..kills_per_mode {
            round += 1;
            // A leader that reconciles.
            let warm = reconciled(&client, &format!("warm-{round}"), Duration::from_secs(60)).await;
            assert!(
                warm.is_some(),
                "round {round}: no leader reconciled within 60 s"
            );
            for op in &operators {
                if let Some(id) = op.identity() {
                    managers.insert(id, op.manager.clone());
                }
            }
            let holder = lease_holder(&client).await.expect("a Lease holder");
            let at = operators
                .iter()
                .position(|op| op.identity().as_deref() == Some(holder.as_str()))
                .unwrap_or_else(|| panic!("the holder {holder} is none of the processes"));
            let mut leader = operators.remove(at);

            eprintln!(
                "round {round} {mode:?}: taking {} down at {}",
                leader.manager,
                kubeforge::k8s_openapi::jiff::Timestamp::now()
            );
            match mode {
                Mode::Sigkill => leader.child.start_kill().expect("SIGKILL"),
                Mode::Sigterm => {
                    let pid = leader.child.id().expect("pid").to_string();
                    let status = std::process::Command::new("kill")
                        .args(["-TERM", &pid])
                        .status()
                        .expect("kill -TERM");
                    assert!(status.success());
                }
                Mode::NetworkCut => leader.relay.cut(),
            }
            let took = reconciled(&client, &format!("probe-{round}"), Duration::from_secs(60))
                .await
                .unwrap_or_else(|| {
                    panic!("round {round} ({mode:?}): no new leader reconciled within 60 s")
                });
            eprintln!(
                "round {round} {mode:?}: {} -> new leader reconciled in {:.2}s",
                leader.manager,
                took.as_secs_f64()
            );
            times
                .entry(match mode {
                    Mode::Sigkill => "SIGKILL",
                    Mode::Sigterm => "SIGTERM",
                    Mode::NetworkCut => "network cut",
                })
                .or_default()
                .push(took);
            // A leader cut off must give up and stop on its own.
            let exited = tokio::time::timeout(Duration::from_secs(30), leader.child.wait()).await;
            if exited.is_err() {
                not_stopped.push(format!("{} ({mode:?})", leader.manager));
                let _ = leader.child.kill().await;
            }
            operators.push(Operator::spawn(spawned, &server, dir.path()).await);
            spawned += 1;
            // The next leader starts by reconciling every Memcached there
            // is: keep their number the same in every round, so that the
            // modes compare failover, not backlog.
            for name in [format!("warm-{round}"), format!("probe-{round}")] {
                assert!(
                    deleted(&client, &name, Duration::from_secs(60)).await,
                    "round {round}: Memcached {name} not finalized within 60 s"
                );
            }
        }
    }
    for op in &operators {
        if let Some(id) = op.identity() {
            managers.insert(id, op.manager.clone());
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (writes, wrong) = overlaps(&history.lock().unwrap(), &managers);
    eprintln!(
        "failover over {} candidates ({} kills per mode):",
        spawned, kills_per_mode
    );
    for (mode, t) in &times {
        eprintln!("  {mode:<12} {}", summary(t));
    }
    eprintln!(
        "  {writes} operator writes in the server's history, {} outside their writer's tenure",
        wrong.len()
    );
    for op in &mut operators {
        let _ = op.child.kill().await;
    }
    // Keep the logs of a failed run, or of any run when asked to.
    let logs: PathBuf = dir.keep();
    let keep = std::env::var_os("FAILOVER_KEEP_LOGS").is_some();
    if keep {
        eprintln!("per-process logs kept in {}", logs.display());
    }
    assert!(
        wrong.is_empty(),
        "writes as non-leader (logs in {}): {wrong:#?}",
        logs.display()
    );
    assert!(writes > 0, "the history holds the operators' writes");
    assert!(
        not_stopped.is_empty(),
        "leaders that lost the Lease kept running: {not_stopped:?}"
    );
    if !keep {
        let _ = std::fs::remove_dir_all(logs);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_is_replaced_after_sigkill_sigterm_and_a_network_cut() {
    failover(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: 10 kills per mode, several minutes (-- --ignored)"]
async fn ten_failovers_per_mode() {
    failover(10).await;
}
