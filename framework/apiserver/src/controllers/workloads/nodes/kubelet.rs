//! The simulated kubelet's pod side (kwok's pod stages, with the kubelet's
//! status shapes): a pod bound to a simulated node is `Pending`
//! (`ContainerCreating`), then after its start latency `Running` with a
//! pod IP, container statuses and conditions, ready as its [`Readiness`]
//! says. Containers that exit follow the restart policy: the pod
//! `Succeeded` or `Failed`, or a crash loop (`CrashLoopBackOff`, restart
//! counts and back-off doubling to a cap). A failing image pull alternates
//! `ErrImagePull` and `ImagePullBackOff`. A pod being deleted has its
//! containers stopped, then is removed (grace period 0), as the kubelet
//! finishes a graceful deletion. A stopped node's kubelet does nothing.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::behavior::{plan, Plan};
use super::heartbeat::node_ip;
use super::pod_status::{cond, container_id, full_image, image_id, keep_transition_times};
use super::processes::Processes;
use crate::controllers::config::{PodBehavior, Readiness};
use crate::controllers::workloads::api::{key_of, stored_key, Api, PODS};
use crate::controllers::workloads::informer::{self, Change};
use crate::controllers::workloads::queue::Queue;
use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::storage::ObjKey;

const COMPONENT: &str = "kubelet";

#[derive(Clone, Debug)]
enum Stage {
    /// Containers being created until the instant.
    Creating(Instant),
    /// The image pull failed; retried at the instant.
    PullBackOff(Instant),
    /// Containers running since the instant.
    Running(Instant),
    /// Crashed; restarted at the instant.
    BackOff(Instant),
    /// Finished (Succeeded or Failed).
    Done,
}

/// What the kubelet remembers of one pod.
#[derive(Clone, Debug)]
struct Runtime {
    plan: Plan,
    stage: Stage,
    restarts: i64,
    pulls: u32,
    ip: String,
    node_index: usize,
    start_time: String,
    started_at: String,
    ready: bool,
    last_terminated: Option<Value>,
    stopping_since: Option<Instant>,
}

struct Kubelet {
    api: Arc<Api>,
    queue: Arc<Queue>,
    processes: Processes,
    pods: Mutex<HashMap<String, Runtime>>,
    next_ip: Mutex<Vec<u32>>,
}

/// Starts the kubelets of every simulated node.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    let queue = Arc::new(Queue::default());
    let nodes = api.cfg.nodes.len();
    let k = Arc::new(Kubelet {
        api: api.clone(),
        queue: queue.clone(),
        processes: Processes::new(api.clone(), queue.clone()),
        pods: Mutex::new(HashMap::new()),
        next_ip: Mutex::new(vec![1; nodes]),
    });
    let q = queue.clone();
    let known: Vec<String> = api.cfg.nodes.iter().map(|n| n.name.clone()).collect();
    informer::watch(
        api.shared.clone(),
        PODS.res(),
        cancel.clone(),
        move |c: &Change| {
            // Only the node name: the version may be retired already, and
            // a whole parse of it would then be thrown away.
            let node = c.obj.field(&["spec".to_owned(), "nodeName".to_owned()]);
            let node = node.as_ref().and_then(Value::as_str).unwrap_or("");
            // A deletion too: a pod removed without the kubelet (forced)
            // may have processes to stop.
            if known.iter().any(|n| n == node) {
                q.add(stored_key(&c.obj));
            }
        },
    );
    // A node started again, or made (not) ready: look at its pods.
    let k2 = k.clone();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        let controls = k2.api.controls.clone();
        loop {
            tokio::select! {
                _ = c2.cancelled() => return,
                _ = controls.changed.notified() => {}
            }
            for p in k2.api.list(PODS, None) {
                if p.value().at("/spec/nodeName").is_some() {
                    k2.queue.add(key_of(&p.value()));
                }
            }
        }
    });
    tokio::spawn(async move {
        queue.run(cancel, |key| k.sync(key)).await;
    });
}

fn backoff(first: Duration, cap: Duration, n: u32) -> Duration {
    let factor = 2u32.saturating_pow(n.min(20));
    first.saturating_mul(factor).min(cap)
}

/// Whether a container that has run for `ran` since `since` is ready, and
/// when its readiness next changes.
fn readiness(readiness: &Readiness, since: Instant, ran: Duration) -> (bool, Option<Instant>) {
    match *readiness {
        Readiness::Immediate => (true, None),
        Readiness::Never => (false, None),
        Readiness::After(d) => (ran >= d, (ran < d).then(|| since + d)),
        Readiness::Flip(p) => {
            let p = p.max(Duration::from_millis(1));
            let phase = ran.as_nanos() / p.as_nanos();
            (
                phase % 2 == 0,
                Some(since + p.saturating_mul((phase + 1) as u32)),
            )
        }
    }
}

impl Kubelet {
    fn runtimes(&self) -> std::sync::MutexGuard<'_, HashMap<String, Runtime>> {
        self.pods.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn later(&self, key: &ObjKey, at: Instant) {
        self.queue
            .add_after(key.clone(), at.saturating_duration_since(Instant::now()));
    }

    /// One pass over a pod bound to a simulated node: admit it (a runtime
    /// and an IP), stop it if it is being deleted, else advance its
    /// container through its stages and write the status if it changed.
    fn sync(&self, key: &ObjKey) {
        let Some(obj) = self.api.get(PODS, key) else {
            // Gone without the kubelet (a forced deletion): its processes go.
            self.processes.forget(key, None);
            return;
        };
        let pod = &obj.value();
        let uid = obj.uid().to_owned();
        self.processes.forget(key, Some(&uid));
        let node = pod
            .at("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let Some(node_index) = self.api.cfg.nodes.iter().position(|n| n.name == node) else {
            return;
        };
        if self.api.controls.fault(node).stopped {
            return;
        }
        if self.processes.runs(pod) {
            let ip = || self.allocate_ip(node_index);
            self.processes.sync(key, pod, &uid, node_index, ip);
            return;
        }
        let mut rt = match self.runtimes().get(&uid).cloned() {
            Some(rt) => rt,
            None => {
                if crate::controllers::workloads::pods::terminal(pod) {
                    return;
                }
                self.admit(key, pod, node_index)
            }
        };
        let now = Instant::now();
        if pod.at("/metadata/deletionTimestamp").is_some() {
            if self.stop(key, pod, &uid, &mut rt, now) {
                self.runtimes().remove(&uid);
            } else {
                self.runtimes().insert(uid, rt);
            }
            return;
        }
        if self.advance(key, pod, &uid, &mut rt, now) {
            self.write(key, pod, &rt);
        }
        self.runtimes().insert(uid, rt);
    }

    /// The node's next pod IP: `10.(244 + N / 256).(N % 256).x` on node N.
    fn allocate_ip(&self, node_index: usize) -> Ipv4Addr {
        let mut ips = self.next_ip.lock().unwrap_or_else(|e| e.into_inner());
        let n = ips.get(node_index).copied().unwrap_or(1);
        if let Some(slot) = ips.get_mut(node_index) {
            *slot = n + 1;
        }
        Ipv4Addr::new(
            10,
            (244 + node_index / 256).min(255) as u8,
            (node_index % 256) as u8,
            ((n - 1) % 254 + 1) as u8,
        )
    }

    /// A new pod's runtime: its plan, the node's next pod IP, and the
    /// status written for it.
    fn admit(&self, key: &ObjKey, pod: &Value, node_index: usize) -> Runtime {
        let plan = plan(&self.api.cfg, pod);
        let ip = self.allocate_ip(node_index).to_string();
        let rt = Runtime {
            stage: Stage::Creating(Instant::now() + plan.start_latency),
            plan,
            restarts: 0,
            pulls: 0,
            ip,
            node_index,
            start_time: util::now(),
            started_at: String::new(),
            ready: false,
            last_terminated: None,
            stopping_since: None,
        };
        self.write(key, pod, &rt);
        rt
    }

    /// Stops a pod being deleted: its container is killed, and after the
    /// stop latency the pod is deleted for good. True once it is gone.
    fn stop(&self, key: &ObjKey, pod: &Value, uid: &str, rt: &mut Runtime, now: Instant) -> bool {
        let stop_latency = self.api.cfg.timing.stop_latency;
        match rt.stopping_since {
            None => {
                rt.stopping_since = Some(now);
                self.event(
                    pod,
                    "Normal",
                    "Killing",
                    &format!("Stopping container {}", first_container(pod)),
                );
                self.later(key, now + stop_latency);
            }
            Some(since) if now >= since + stop_latency => {
                let _ = self.api.delete(PODS, key, Some(uid), Some(0), None);
                return true;
            }
            Some(since) => self.later(key, since + stop_latency),
        }
        false
    }

    /// Moves the container through its stages as far as `now` allows,
    /// scheduling the next look; true if the status changed.
    fn advance(
        &self,
        key: &ObjKey,
        pod: &Value,
        uid: &str,
        rt: &mut Runtime,
        now: Instant,
    ) -> bool {
        let restart_policy = pod
            .at("/spec/restartPolicy")
            .and_then(Value::as_str)
            .unwrap_or("Always")
            .to_owned();
        let mut changed = false;
        loop {
            match rt.stage.clone() {
                Stage::Creating(at) | Stage::PullBackOff(at) if now < at => {
                    self.later(key, at);
                    break;
                }
                Stage::Creating(_) | Stage::PullBackOff(_) => {
                    changed = true;
                    if !self.pull_and_start(key, pod, rt, now) {
                        break;
                    }
                }
                Stage::Running(since) => {
                    let ran = now.saturating_duration_since(since);
                    let (ready, mut next) = readiness(&rt.plan.readiness, since, ran);
                    if ready != rt.ready {
                        rt.ready = ready;
                        changed = true;
                    }
                    if let PodBehavior::Exit { after, code } = rt.plan.behavior {
                        if ran >= after {
                            changed = true;
                            if self.exit(key, pod, uid, rt, code, &restart_policy, now) {
                                continue;
                            }
                            break;
                        }
                        let exit_at = since + after;
                        next = Some(next.map_or(exit_at, |n| n.min(exit_at)));
                    }
                    if let Some(n) = next {
                        self.later(key, n);
                    }
                    break;
                }
                Stage::BackOff(at) if now < at => {
                    self.later(key, at);
                    break;
                }
                Stage::BackOff(_) => {
                    rt.restarts += 1;
                    rt.stage = Stage::Running(now);
                    rt.started_at = util::now();
                    rt.ready = rt.plan.readiness == Readiness::Immediate;
                    changed = true;
                }
                Stage::Done => break,
            }
        }
        changed
    }

    /// Pulls the image and starts the container, or (for a pod planned to
    /// fail its pull) backs off the pull. True if the container started.
    fn pull_and_start(&self, key: &ObjKey, pod: &Value, rt: &mut Runtime, now: Instant) -> bool {
        let (first, cap) = self.api.cfg.timing.restart_backoff;
        if rt.plan.behavior == PodBehavior::ImagePullFails {
            rt.pulls += 1;
            let wait = backoff(first, cap, rt.pulls - 1);
            rt.stage = Stage::PullBackOff(now + wait);
            self.event(pod, "Warning", "Failed", &format!(
                "Failed to pull image \"{}\": rpc error: code = NotFound desc = failed to pull and unpack image: not found",
                first_image(pod)));
            self.later(key, now + wait);
            return false;
        }
        rt.stage = Stage::Running(now);
        rt.started_at = util::now();
        rt.ready = rt.plan.readiness == Readiness::Immediate;
        if rt.restarts == 0 {
            self.event(
                pod,
                "Normal",
                "Started",
                &format!("Started container {}", first_container(pod)),
            );
        }
        true
    }

    /// The container exited with `code`: records it, then per the restart
    /// policy it is done or restarts after the crash-loop back-off. True if
    /// it restarts at once.
    #[allow(clippy::too_many_arguments)]
    fn exit(
        &self,
        key: &ObjKey,
        pod: &Value,
        uid: &str,
        rt: &mut Runtime,
        code: i32,
        restart_policy: &str,
        now: Instant,
    ) -> bool {
        let exit = json!({
            "exitCode": code,
            "reason": if code == 0 { "Completed" } else { "Error" },
            "startedAt": rt.started_at,
            "finishedAt": util::now(),
            "containerID": container_id(uid, rt.restarts),
        });
        rt.last_terminated = Some(exit);
        rt.ready = false;
        let restart = match restart_policy {
            "Never" => false,
            "OnFailure" => code != 0,
            _ => true,
        };
        if !restart {
            rt.stage = Stage::Done;
            return false;
        }
        let wait = if rt.restarts == 0 {
            Duration::ZERO
        } else {
            let (first, cap) = self.api.cfg.timing.restart_backoff;
            backoff(first, cap, (rt.restarts - 1) as u32)
        };
        rt.stage = Stage::BackOff(now + wait);
        if !wait.is_zero() {
            self.event(
                pod,
                "Warning",
                "BackOff",
                &format!(
                    "Back-off restarting failed container {} in pod {}_{}({uid})",
                    first_container(pod),
                    key.1,
                    key.0
                ),
            );
            self.later(key, now + wait);
            return false;
        }
        true
    }

    fn event(&self, pod: &Value, ty: &str, reason: &str, msg: &str) {
        self.api.event(pod, PODS, ty, reason, msg, COMPONENT);
    }

    fn write(&self, key: &ObjKey, pod: &Value, rt: &Runtime) {
        let status = status(pod, rt);
        if let Err(e) = self.api.update_status(PODS, key, COMPONENT, |p| {
            let mut next = status.clone();
            // Conditions the kubelet does not own survive (DisruptionTarget).
            if let Some(old) = p.at("/status/conditions").and_then(Value::as_array) {
                let mine = [
                    "PodReadyToStartContainers",
                    "Initialized",
                    "Ready",
                    "ContainersReady",
                    "PodScheduled",
                ];
                let extra: Vec<Value> = old
                    .iter()
                    .filter(|c| {
                        !mine.contains(&c.get("type").and_then(Value::as_str).unwrap_or(""))
                    })
                    .cloned()
                    .collect();
                if let Some(list) = next.get_mut("conditions").and_then(Value::as_array_mut) {
                    list.extend(extra);
                }
                keep_transition_times(&mut next, old);
            }
            if let Some(q) = p.at("/status/qosClass") {
                next["qosClass"] = q.clone();
            }
            if p.get("status") == Some(&next) {
                return false;
            }
            p["status"] = next;
            true
        }) {
            tracing::debug!(pod = %key.1, error = %e.message, "pod status not written");
        }
    }
}

fn first_container(pod: &Value) -> String {
    pod.at("/spec/containers/0/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn first_image(pod: &Value) -> String {
    pod.at("/spec/containers/0/image")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// The pod status for the runtime state.
fn status(pod: &Value, rt: &Runtime) -> Value {
    let containers: Vec<Value> = pod
        .at("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let names: Vec<String> = containers
        .iter()
        .map(|c| {
            c.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    let uid = pod
        .at("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let last = rt.last_terminated.clone();
    let (phase, sandbox) = match &rt.stage {
        Stage::Creating(_) | Stage::PullBackOff(_) => {
            ("Pending", matches!(rt.stage, Stage::PullBackOff(_)))
        }
        Stage::Running(_) | Stage::BackOff(_) => ("Running", true),
        Stage::Done => {
            let code = last
                .as_ref()
                .and_then(|l| l.get("exitCode"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            (if code == 0 { "Succeeded" } else { "Failed" }, false)
        }
    };
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("");
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            let (state, started, ready) = match &rt.stage {
                Stage::Creating(_) => (json!({"waiting": {"reason": "ContainerCreating"}}), false, false),
                Stage::PullBackOff(_) => {
                    let st = if rt.pulls % 2 == 1 {
                        json!({"waiting": {"reason": "ErrImagePull", "message": format!("rpc error: code = NotFound desc = failed to pull and unpack image \"{}\": not found", full_image(image))}})
                    } else {
                        json!({"waiting": {"reason": "ImagePullBackOff", "message": format!("Back-off pulling image \"{image}\"")}})
                    };
                    (st, false, false)
                }
                Stage::Running(_) => (json!({"running": {"startedAt": rt.started_at}}), true, rt.ready),
                Stage::BackOff(_) => {
                    let wait = rt.restarts.max(0);
                    let secs = if wait == 0 { 0 } else { 10 << (wait - 1).min(5) };
                    (json!({"waiting": {"reason": "CrashLoopBackOff", "message": format!(
                        "back-off {}s restarting failed container={name} pod={}_{}({uid})", secs.min(300),
                        pod.at("/metadata/name").and_then(Value::as_str).unwrap_or(""),
                        pod.at("/metadata/namespace").and_then(Value::as_str).unwrap_or(""))}}), false, false)
                }
                Stage::Done => (json!({"terminated": last.clone().unwrap_or_else(|| json!({"exitCode": 0, "reason": "Completed"}))}), false, false),
            };
            let mut s = json!({
                "name": name,
                "image": full_image(image),
                "imageID": if matches!(rt.stage, Stage::Creating(_) | Stage::PullBackOff(_)) { String::new() } else { image_id(image) },
                "ready": ready,
                "restartCount": rt.restarts,
                "started": started,
                "state": state,
                "lastState": {},
            });
            if !matches!(rt.stage, Stage::Creating(_) | Stage::PullBackOff(_)) {
                s["containerID"] = json!(container_id(uid, rt.restarts));
            }
            if let (Some(l), false) = (&last, matches!(rt.stage, Stage::Done)) {
                s["lastState"] = json!({"terminated": l});
            }
            s
        })
        .collect();
    let all_ready = matches!(rt.stage, Stage::Running(_)) && rt.ready;
    let unready = format!("containers with unready status: [{}]", names.join(" "));
    let (ready_reason, ready_msg) = match phase {
        "Succeeded" | "Failed" => ("PodCompleted", String::new()),
        _ => ("ContainersNotReady", unready),
    };
    let scheduled = json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": util::now()});
    let mut status = json!({
        "phase": phase,
        "conditions": [
            cond("PodReadyToStartContainers", sandbox, "", ""),
            cond("Initialized", true, "", ""),
            cond("Ready", all_ready, ready_reason, &ready_msg),
            cond("ContainersReady", all_ready, ready_reason, &ready_msg),
            scheduled,
        ],
        "hostIP": node_ip(rt.node_index),
        "hostIPs": [{"ip": node_ip(rt.node_index)}],
        "startTime": rt.start_time,
        "containerStatuses": statuses,
    });
    if !matches!(rt.stage, Stage::Creating(_)) {
        status["podIP"] = json!(rt.ip);
        status["podIPs"] = json!([{"ip": rt.ip}]);
    }
    status
}
