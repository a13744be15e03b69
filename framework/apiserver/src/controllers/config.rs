//! The simulated cluster's configuration, public: [`Workloads`] turns on
//! kube-controller-manager's workload controllers and kwok-like simulated
//! nodes ([`SimNode`]) whose kubelet runs pods by a [`PodBehavior`] chosen
//! per pod (annotations, or [`PodPolicy`] rules). It also holds the live
//! node controls behind [`SimulatedNodes`], the handle tests use to make a
//! node fail. A leaf: it knows nothing of the server around it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

/// Annotation: how long the simulated kubelet takes to start the pod's
/// containers (`"500ms"`, `"2s"`, Go duration syntax).
pub const ANNOTATION_START_LATENCY: &str = "sim.kubeforge.dev/start-latency";
/// Annotation: the containers exit this long after starting (`"3s"`).
pub const ANNOTATION_EXIT_AFTER: &str = "sim.kubeforge.dev/exit-after";
/// Annotation: the exit code when they do (default `0`).
pub const ANNOTATION_EXIT_CODE: &str = "sim.kubeforge.dev/exit-code";
/// Annotation: `"fail"` makes the image pull fail (`ErrImagePull`, then
/// `ImagePullBackOff`).
pub const ANNOTATION_IMAGE_PULL: &str = "sim.kubeforge.dev/image-pull";
/// Annotation: readiness: `"never"`, a delay after start (`"2s"`), or
/// `"flip:5s"`, ready and not ready by turns every 5 s.
pub const ANNOTATION_READY: &str = "sim.kubeforge.dev/ready";

/// What a simulated pod's containers do once started.
#[derive(Clone, Debug, PartialEq)]
pub enum PodBehavior {
    /// Run until deleted (a server).
    RunForever,
    /// Exit with `code` after running for `after`; the restart policy then
    /// decides (a Job's pod finishes; `Always` becomes a crash loop with
    /// growing restart counts and back-off when `code` is not 0).
    Exit {
        /// How long the containers run.
        after: Duration,
        /// Their exit code.
        code: i32,
    },
    /// The image pull fails: `ErrImagePull`, then `ImagePullBackOff`.
    ImagePullFails,
}

/// When a running simulated pod is ready.
#[derive(Clone, Debug, PartialEq)]
pub enum Readiness {
    /// As soon as its containers run.
    Immediate,
    /// This long after they start.
    After(Duration),
    /// Never (a readiness probe that always fails).
    Never,
    /// Ready and not ready by turns, each phase this long.
    Flip(Duration),
}

/// A rule choosing the behaviour of pods it matches; the first matching
/// rule wins, and a pod's own annotations win over every rule.
#[derive(Clone, Debug)]
pub struct PodPolicy {
    pub(crate) namespace: Option<String>,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) image_contains: Option<String>,
    pub(crate) behavior: Option<PodBehavior>,
    pub(crate) readiness: Option<Readiness>,
    pub(crate) start_latency: Option<Duration>,
}

impl PodPolicy {
    /// A rule matching every pod (narrow it with the other methods).
    pub fn all() -> Self {
        Self {
            namespace: None,
            labels: BTreeMap::new(),
            image_contains: None,
            behavior: None,
            readiness: None,
            start_latency: None,
        }
    }

    /// Only pods in this namespace.
    pub fn namespace(mut self, ns: &str) -> Self {
        self.namespace = Some(ns.to_owned());
        self
    }

    /// Only pods with this label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Only pods with a container whose image contains `text`.
    pub fn image(mut self, text: &str) -> Self {
        self.image_contains = Some(text.to_owned());
        self
    }

    /// What matching pods do.
    pub fn behavior(mut self, behavior: PodBehavior) -> Self {
        self.behavior = Some(behavior);
        self
    }

    /// When matching pods are ready.
    pub fn readiness(mut self, readiness: Readiness) -> Self {
        self.readiness = Some(readiness);
        self
    }

    /// How long matching pods take to start.
    pub fn start_latency(mut self, latency: Duration) -> Self {
        self.start_latency = Some(latency);
        self
    }
}

/// A simulated node: name, labels, taints and allocatable resources.
#[derive(Clone, Debug)]
pub struct SimNode {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) taints: Vec<(String, String, String)>,
    pub(crate) cpu: String,
    pub(crate) memory: String,
    pub(crate) pods: u32,
}

impl SimNode {
    /// A node with 32 CPUs, 256 GiB and room for 110 pods.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            labels: BTreeMap::new(),
            taints: Vec::new(),
            cpu: "32".into(),
            memory: "256Gi".into(),
            pods: 110,
        }
    }

    /// Adds a label (beside the `kubernetes.io/hostname`, `kubernetes.io/os`
    /// and `kubernetes.io/arch` every node has).
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Adds a taint (`effect`: `NoSchedule`, `PreferNoSchedule`, `NoExecute`).
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        self.taints
            .push((key.to_owned(), value.to_owned(), effect.to_owned()));
        self
    }

    /// Allocatable CPU, memory (quantities, `"8"`, `"32Gi"`) and pod slots.
    pub fn capacity(mut self, cpu: &str, memory: &str, pods: u32) -> Self {
        self.cpu = cpu.to_owned();
        self.memory = memory.to_owned();
        self.pods = pods;
        self
    }
}

/// The durations of the simulation; [`Workloads::fast`] shortens them all
/// for tests.
#[derive(Clone, Debug)]
pub(crate) struct Timing {
    /// Bound pod to running containers.
    pub start_latency: Duration,
    /// How long pods owned by a Job run before exiting 0.
    pub job_pod_duration: Duration,
    /// Node status and Lease renewal.
    pub heartbeat: Duration,
    /// How long a node may miss heartbeats before it is `Unknown`
    /// (`--node-monitor-grace-period`).
    pub node_grace: Duration,
    /// kube-apiserver's `--default-not-ready-toleration-seconds` and
    /// `--default-unreachable-toleration-seconds`.
    pub toleration_seconds: i64,
    /// The kubelet's restart back-off: first delay and cap.
    pub restart_backoff: (Duration, Duration),
    /// The job controller's pod-failure back-off: first delay and cap.
    pub job_backoff: (Duration, Duration),
    /// How long a deleted pod's containers take to stop.
    pub stop_latency: Duration,
}

/// The workload controllers and simulated nodes of a server.
///
/// Off by default, so tests that write status by hand (as envtest users
/// do) keep working; turn it on with
/// [`ApiServerBuilder::workloads`](crate::ApiServerBuilder::workloads):
///
/// ```no_run
/// # async fn demo() -> Result<(), kubeforge_apiserver::Error> {
/// use kubeforge_apiserver::{ApiServer, Workloads};
///
/// let server = ApiServer::builder()
///     .workloads(Workloads::fast().nodes(3))
///     .start()
///     .await?;
/// # let _ = server;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Workloads {
    pub(crate) nodes: Vec<SimNode>,
    /// Images whose containers run as processes: the image as pods name
    /// it, and the executable it stands for.
    pub(crate) images: Vec<(String, PathBuf)>,
    pub(crate) timing: Timing,
    pub(crate) policies: Vec<PodPolicy>,
    pub(crate) events: bool,
}

impl Default for Workloads {
    fn default() -> Self {
        Self::new()
    }
}

impl Workloads {
    /// Real-cluster timings: pods start in a second, heartbeats every
    /// 10 s, a node is `Unknown` after 40 s without one and its pods are
    /// evicted 300 s later, restart back-off 10 s doubling to 5 min, Job
    /// pod back-off 10 s doubling to 10 min. Three nodes.
    pub fn new() -> Self {
        Self {
            nodes: Vec::new(),
            timing: Timing {
                start_latency: Duration::from_secs(1),
                job_pod_duration: Duration::from_secs(1),
                heartbeat: Duration::from_secs(10),
                node_grace: Duration::from_secs(40),
                toleration_seconds: 300,
                restart_backoff: (Duration::from_secs(10), Duration::from_secs(300)),
                job_backoff: (Duration::from_secs(10), Duration::from_secs(600)),
                stop_latency: Duration::from_millis(200),
            },
            policies: Vec::new(),
            events: true,
            images: Vec::new(),
        }
        .nodes(3)
    }

    /// Timings for tests: everything in tens of milliseconds (pods start
    /// in 20 ms, Job pods run 100 ms, back-offs from 100 ms, a silent node
    /// is `Unknown` after 1 s and its pods are evicted 1 s later). Three
    /// nodes.
    pub fn fast() -> Self {
        let mut w = Self::new();
        w.timing = Timing {
            start_latency: Duration::from_millis(20),
            job_pod_duration: Duration::from_millis(100),
            heartbeat: Duration::from_millis(200),
            node_grace: Duration::from_secs(1),
            toleration_seconds: 1,
            restart_backoff: (Duration::from_millis(100), Duration::from_secs(2)),
            job_backoff: (Duration::from_millis(100), Duration::from_secs(2)),
            stop_latency: Duration::from_millis(20),
        };
        w
    }

    /// `n` identical nodes named `node-1` … `node-n` (replacing the nodes
    /// set so far).
    pub fn nodes(mut self, n: usize) -> Self {
        self.nodes = (1..=n)
            .map(|i| SimNode::new(&format!("node-{i}")))
            .collect();
        self
    }

    /// Adds one node.
    pub fn node(mut self, node: SimNode) -> Self {
        self.nodes.push(node);
        self
    }

    /// Sets every node's allocatable CPU, memory and pod slots.
    pub fn node_capacity(mut self, cpu: &str, memory: &str, pods: u32) -> Self {
        for n in &mut self.nodes {
            *n = n.clone().capacity(cpu, memory, pods);
        }
        self
    }

    /// Adds a label to every node.
    pub fn node_label(mut self, key: &str, value: &str) -> Self {
        for n in &mut self.nodes {
            n.labels.insert(key.to_owned(), value.to_owned());
        }
        self
    }

    /// How long a bound pod takes to run (default 1 s).
    pub fn start_latency(mut self, latency: Duration) -> Self {
        self.timing.start_latency = latency;
        self
    }

    /// How long pods owned by a Job run before exiting 0, unless a policy
    /// or annotation says otherwise (default 1 s; kwok completes them).
    pub fn job_pod_duration(mut self, duration: Duration) -> Self {
        self.timing.job_pod_duration = duration;
        self
    }

    /// Node heartbeat interval, and how long a node may miss them before
    /// the node lifecycle controller marks it `Unknown`.
    pub fn heartbeats(mut self, interval: Duration, grace: Duration) -> Self {
        self.timing.heartbeat = interval;
        self.timing.node_grace = grace;
        self
    }

    /// Seconds a pod tolerates a not-ready or unreachable node before it
    /// is evicted (kube-apiserver's default tolerations, 300).
    pub fn eviction_toleration_seconds(mut self, seconds: i64) -> Self {
        self.timing.toleration_seconds = seconds;
        self
    }

    /// The kubelet's crash-loop and image-pull back-off (first, cap).
    pub fn restart_backoff(mut self, first: Duration, cap: Duration) -> Self {
        self.timing.restart_backoff = (first, cap);
        self
    }

    /// The job controller's back-off before replacing a failed pod.
    pub fn job_backoff(mut self, first: Duration, cap: Duration) -> Self {
        self.timing.job_backoff = (first, cap);
        self
    }

    /// Adds a pod behaviour rule (first match wins).
    pub fn policy(mut self, policy: PodPolicy) -> Self {
        self.policies.push(policy);
        self
    }

    /// Whether controllers, the scheduler and the kubelet record Events
    /// (default true).
    pub fn events(mut self, on: bool) -> Self {
        self.events = on;
        self
    }
}

/// What a test did to a node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NodeFault {
    /// The kubelet reports `Ready=False`.
    pub not_ready: bool,
    /// The kubelet stopped: no heartbeats, no pod updates.
    pub stopped: bool,
}

/// The live node controls, shared by the handle and the kubelets.
#[derive(Debug, Default)]
pub(crate) struct NodeControls {
    faults: Mutex<BTreeMap<String, NodeFault>>,
    /// Wakes the heartbeat task after a change.
    pub changed: Notify,
    /// The server as pods reach it (the `kubernetes` Service); set by the
    /// server before the kubelets start.
    pub cluster_api: std::sync::OnceLock<ClusterApi>,
}

/// What the kubelet needs of the server for the pods it runs as
/// processes: how to serve the API on a listener it opened in a pod's
/// network namespace (a closure, since the server that accepts sits above
/// the controllers that open the listener), and the CA that signs the
/// serving certificate, for the pods' `ca.crt`.
#[derive(Clone)]
pub(crate) struct ClusterApi {
    pub serve: Arc<dyn Fn(std::net::TcpListener) + Send + Sync>,
    pub ca_pem: String,
}

impl std::fmt::Debug for ClusterApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterApi")
    }
}

impl NodeControls {
    /// The current fault of `node`.
    pub fn fault(&self, node: &str) -> NodeFault {
        self.faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(node)
            .copied()
            .unwrap_or_default()
    }

    fn update(&self, node: &str, f: impl FnOnce(&mut NodeFault)) {
        f(self
            .faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(node.to_owned())
            .or_default());
        self.changed.notify_one();
    }
}

/// Fault injection on the simulated nodes, from
/// [`ApiServer::nodes`](crate::ApiServer::nodes).
#[derive(Clone, Debug)]
pub struct SimulatedNodes {
    pub(crate) controls: Arc<NodeControls>,
}

impl SimulatedNodes {
    /// The node's kubelet reports `Ready=False` (`KubeletNotReady`), or
    /// `Ready=True` again; the node lifecycle controller taints the node
    /// and, after the pods' toleration, evicts them.
    pub fn set_ready(&self, node: &str, ready: bool) {
        self.controls.update(node, |f| f.not_ready = !ready);
    }

    /// The node's kubelet stops (no heartbeats: after the grace period the
    /// node is `Unknown`, `Kubelet stopped posting node status.`), or
    /// starts again.
    pub fn set_running(&self, node: &str, running: bool) {
        self.controls.update(node, |f| f.stopped = !running);
    }
}

/// Parses a Go duration (`"300ms"`, `"1.5s"`, `"2m"`, `"1h30m"`).
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest.get(..num_len)?.parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("300ms"), Some(Duration::from_millis(300)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("x"), None);
    }
}
