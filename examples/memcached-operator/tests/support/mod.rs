//! What the process tests share: operator copies as processes, each
//! reaching the API server through a TCP relay the test can cut; the
//! server's history of Leases, Memcacheds and Deployments with the
//! operator writes in each change; and timing helpers.

#![allow(dead_code)] // each test binary uses its own part

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kubeforge::cache::Slots;
use kubeforge::k8s_openapi::api::apps::v1::Deployment;
use kubeforge::k8s_openapi::api::coordination::v1::Lease;
use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeforge::kube_core::params::WatchParams;
use kubeforge::kube_core::watch::WatchEvent;
use kubeforge::prelude::*;
use kubeforge::sharding::RING_ANNOTATION;
use kubeforge::testing::ApiServer;
use memcached_operator::{Memcached, MemcachedSpec};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::sync::watch;

pub const NS: &str = "default";
/// The field managers of the operator processes start with this.
pub const MANAGER_PREFIX: &str = "op-";

/// A scratch directory for kubeconfigs and logs, and a server with the
/// Memcached CRD installed, with an admin client.
pub async fn start_server() -> (tempfile::TempDir, ApiServer, Client) {
    start_server_serving_shards(true).await
}

/// [`start_server`], serving `shardSelector` (KEP-5866) or ignoring it as
/// a server without the `ShardedListAndWatch` gate does.
pub async fn start_server_serving_shards(served: bool) -> (tempfile::TempDir, ApiServer, Client) {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ApiServer::builder()
        .sharded_list_and_watch(served)
        .start()
        .await
        .expect("API server");
    server
        .install_crd_for::<Memcached>()
        .expect("install the CRD");
    let client = server.client().expect("client");
    (dir, server, client)
}

/// A TCP relay in front of the API server for one process; cutting it
/// drops its open connections and refuses new ones.
pub struct Relay {
    pub addr: SocketAddr,
    pub cut: watch::Sender<bool>,
}

impl Relay {
    pub async fn start(upstream: SocketAddr) -> Relay {
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

    pub fn cut(&self) {
        self.cut.send_replace(true);
    }
}

/// One operator process.
pub struct Operator {
    pub manager: String,
    pub child: Child,
    pub relay: Relay,
    pub identity: Arc<Mutex<Option<String>>>,
    /// Set once the process logged that its caches synced.
    pub synced: Arc<std::sync::atomic::AtomicBool>,
}

impl Operator {
    /// Copy `n` with `--leader-elect`, the failover test's operator.
    pub async fn spawn(n: usize, server: &ApiServer, dir: &Path) -> Operator {
        Self::spawn_with(n, server, dir, &["--leader-elect"]).await
    }

    /// Copy `n` with `flags`; its field manager (and, as `POD_NAME`, its
    /// name in a sharding ring) is `op-<n>`.
    pub async fn spawn_with(n: usize, server: &ApiServer, dir: &Path, flags: &[&str]) -> Operator {
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
            .args(flags)
            .args(["--field-manager", &manager])
            .env("POD_NAME", &manager)
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
        let synced = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let saw_sync = synced.clone();
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
                if line.contains("caches synced") {
                    saw_sync.store(true, std::sync::atomic::Ordering::SeqCst);
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
            synced,
        }
    }

    /// Sends SIGTERM (a graceful stop).
    pub fn terminate(&self) {
        let pid = self.child.id().expect("still running").to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill -TERM");
        assert!(status.success());
    }

    pub fn identity(&self) -> Option<String> {
        self.identity.lock().unwrap().clone()
    }
}

/// The string value of `"name":"..."` in a JSON log line.
pub fn field(line: &str, name: &str) -> Option<String> {
    let key = format!("\"{name}\":\"");
    let start = line.find(&key)? + key.len();
    let end = line[start..].find('"')?;
    Some(line[start..start + end].to_owned())
}

/// One object change in the server's history.
#[derive(Debug)]
pub struct Change {
    pub rv: u64,
    pub what: String,
    /// For a Lease: its holder ("" when released).
    pub holder: Option<String>,
    /// For a Memcached or Deployment: the operator managers whose
    /// `managedFields` entry this change created or touched.
    pub writers: Vec<String>,
    /// For a Lease: its sharding ring annotation, if any.
    pub ring: Option<String>,
    /// For a Memcached, the slot of its uid; for a Deployment, the slot of
    /// its controlling owner's.
    pub slot: Option<u32>,
}

/// Follows Leases, Memcacheds and Deployments into `history`.
pub fn follow_history(client: Client, history: Arc<Mutex<Vec<Change>>>) {
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
                let ring = meta
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(RING_ANNOTATION))
                    .cloned();
                let slot = match kind.as_ref() {
                    "Memcached" => meta.uid.as_deref().map(Slots::slot_of_uid),
                    "Deployment" => meta
                        .owner_references
                        .iter()
                        .flatten()
                        .find(|o| o.controller == Some(true))
                        .map(|o| Slots::slot_of_uid(&o.uid)),
                    _ => None,
                };
                history.lock().unwrap().push(Change {
                    rv: rv(meta),
                    what: key,
                    holder,
                    writers,
                    ring,
                    slot,
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

/// Creates Memcached `name` and waits until its Deployment exists; the
/// time it took.
pub async fn reconciled(client: &Client, name: &str, deadline: Duration) -> Option<Duration> {
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
pub async fn deleted(client: &Client, name: &str, deadline: Duration) -> bool {
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

pub fn summary(times: &[Duration]) -> String {
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
