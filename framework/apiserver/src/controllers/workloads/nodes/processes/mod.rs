//! Pods whose images are mapped to local executables
//! ([`ApiServerBuilder::image`](crate::ApiServerBuilder::image)) run as
//! real processes, as a kubelet runs containers: a network namespace per
//! pod and mount, UTS and PID namespaces per container ([`sandbox`], over
//! [`netlink`]); each instance started with its argv and environment,
//! its output kept, its exit recorded; restarts by the pod's
//! `restartPolicy` with the crash-loop back-off; deletion by SIGTERM, the
//! grace period, then SIGKILL ([`Processes::sync`]). Containers of other
//! images in such a pod are simulated as running and ready.

mod env;
mod instance;
mod netlink;
mod probes;
mod sandbox;
mod volumes;

use std::collections::HashMap;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::process::{ChildStderr, ChildStdout, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::heartbeat::node_ip;
use super::pod_status::{cond, container_id, full_image, image_id, keep_transition_times};
use crate::controllers::config::ClusterApi;
use crate::controllers::workloads::api::{Api, PODS};
use crate::controllers::workloads::queue::Queue;
use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::registry::core::service::KUBERNETES_SERVICE_IP;
use crate::registry::pod_logs::InstanceLog;
use crate::storage::ObjKey;
use env::KUBERNETES_SERVICE_PORT;
use instance::{exit_of, Exit, Instance};
use sandbox::{ContainerShim, PodNetwork};

const COMPONENT: &str = "kubelet";

/// kube's floor on the time a container gets between SIGTERM and SIGKILL
/// (`minimumGracePeriodInSeconds`, kuberuntime_container.go).
const MINIMUM_GRACE: Duration = Duration::from_secs(2);

#[derive(Clone, Debug)]
enum State {
    /// Not running: the reason and message `waiting` shows, and when to
    /// try a start again (none: at once).
    Waiting {
        reason: &'static str,
        message: Option<String>,
        retry_at: Option<Instant>,
    },
    Running {
        started_at: String,
    },
    /// Ended and not restarted.
    Terminated(Value),
}

struct ContainerRun {
    name: String,
    image: String,
    /// The executable; none for a container of an unmapped image.
    entrypoint: Option<PathBuf>,
    shim: Option<Arc<ContainerShim>>,
    instance: Option<Arc<Instance>>,
    /// The current instance's probe verdicts.
    health: Option<Arc<probes::Health>>,
    /// When SIGKILL follows the SIGTERM of a failed liveness probe.
    kill_at: Option<Instant>,
    state: State,
    restarts: i64,
    last_terminated: Option<Value>,
    /// When the current instance started, for the back-off's reset.
    started: Option<Instant>,
}

struct PodRun {
    key: ObjKey,
    ip: Ipv4Addr,
    node_index: usize,
    start_time: String,
    /// The pod's network, or why it could not be made.
    network: Result<PodNetwork, String>,
    /// The pod's volumes, once set up.
    volumes: Option<volumes::PodVolumes>,
    dir: PathBuf,
    containers: Vec<ContainerRun>,
    /// When SIGKILL follows the SIGTERM of a deletion.
    kill_at: Option<Instant>,
}

impl Drop for PodRun {
    fn drop(&mut self) {
        for c in &self.containers {
            if let Some(i) = &c.instance {
                i.signal(libc::SIGKILL);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The process-running side of the kubelet.
pub(super) struct Processes {
    api: Arc<Api>,
    queue: Arc<Queue>,
    images: Vec<(String, PathBuf)>,
    root: PathBuf,
    pods: Mutex<HashMap<String, PodRun>>,
}

impl Processes {
    pub(super) fn new(api: Arc<Api>, queue: Arc<Queue>) -> Processes {
        let images = api
            .cfg
            .images
            .iter()
            .map(|(image, path)| (full_image(image), path.clone()))
            .collect();
        let temp = std::env::temp_dir();
        sweep_stale(&temp);
        let root = temp.join(format!(
            "{ROOT_PREFIX}{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        Processes {
            api,
            queue,
            images,
            root,
            pods: Mutex::new(HashMap::new()),
        }
    }

    fn entrypoint(&self, image: &str) -> Option<PathBuf> {
        let image = full_image(image);
        self.images
            .iter()
            .find(|(i, _)| *i == image)
            .map(|(_, p)| p.clone())
    }

    /// Whether this side runs the pod: one of its containers has a mapped
    /// image.
    pub(super) fn runs(&self, pod: &Value) -> bool {
        !self.images.is_empty()
            && containers(pod).iter().any(|c| {
                self.entrypoint(c.get("image").and_then(Value::as_str).unwrap_or(""))
                    .is_some()
            })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, PodRun>> {
        self.pods.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn later(&self, key: &ObjKey, at: Instant) {
        self.queue
            .add_after(key.clone(), at.saturating_duration_since(Instant::now()));
    }

    /// Kills the processes of the pods at `key` other than `keep` (none:
    /// all), whose objects are gone.
    pub(super) fn forget(&self, key: &ObjKey, keep: Option<&str>) {
        let mut pods = self.lock();
        let gone: Vec<String> = pods
            .iter()
            .filter(|(uid, run)| run.key == *key && Some(uid.as_str()) != keep)
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in gone {
            // Dropping the run kills its processes and removes its files.
            pods.remove(&uid);
            self.api.shared.pod_logs.remove_pod(&uid);
        }
    }

    /// One pass over a pod: admit it (its namespaces), stop it if it is
    /// being deleted, else start, watch and restart its containers, and
    /// write the status if it changed. `ip` allocates the pod's IP.
    pub(super) fn sync(
        &self,
        key: &ObjKey,
        pod: &Value,
        uid: &str,
        node_index: usize,
        ip: impl FnOnce() -> Ipv4Addr,
    ) {
        let mut pods = self.lock();
        if !pods.contains_key(uid) {
            if crate::controllers::workloads::pods::terminal(pod) {
                return;
            }
            let run = self.admit(key, pod, uid, node_index, ip());
            pods.insert(uid.to_owned(), run);
        }
        let Some(run) = pods.get_mut(uid) else {
            return;
        };
        let now = Instant::now();
        if pod.at("/metadata/deletionTimestamp").is_some() {
            if self.stop(key, pod, run, now) {
                pods.remove(uid);
                drop(pods);
                self.api.shared.pod_logs.remove_pod(uid);
                let _ = self.api.delete(PODS, key, Some(uid), Some(0), None);
            } else {
                self.write(key, run);
            }
            return;
        }
        let policy = pod
            .at("/spec/restartPolicy")
            .and_then(Value::as_str)
            .unwrap_or("Always")
            .to_owned();
        for i in 0..run.containers.len() {
            self.advance(key, pod, uid, run, i, &policy, now);
        }
        let setup = self.setup(pod, run.ip, &run.dir);
        if let Some(due) = run
            .volumes
            .as_mut()
            .and_then(|v| v.refresh_token(&setup, now))
        {
            self.later(key, due);
        }
        self.write(key, run);
    }

    fn admit(
        &self,
        key: &ObjKey,
        pod: &Value,
        uid: &str,
        node_index: usize,
        ip: Ipv4Addr,
    ) -> PodRun {
        let dir = self.root.join(uid);
        // The root is the server's alone: it holds the pods' tokens.
        let network = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.root)
            .and_then(|()| std::fs::create_dir_all(&dir))
            .and_then(|()| {
                PodNetwork::create(
                    &key.1,
                    ip,
                    vec![KUBERNETES_SERVICE_IP],
                    vec![SocketAddr::from((
                        KUBERNETES_SERVICE_IP,
                        KUBERNETES_SERVICE_PORT,
                    ))],
                )
            })
            .map_err(|e| {
                format!(
                    "Failed to create pod sandbox: cannot make the pod's Linux namespaces: {e} \
                     (running pods as processes needs Linux and CAP_SYS_ADMIN)"
                )
            })
            .map(|(network, listeners)| {
                if let Some(ClusterApi { serve, .. }) = self.api.controls.cluster_api.get() {
                    for l in listeners {
                        serve(l);
                    }
                }
                network
            })
            .inspect_err(|why| {
                self.api.event(
                    pod,
                    PODS,
                    "Warning",
                    "FailedCreatePodSandBox",
                    why,
                    COMPONENT,
                );
            });
        let containers = containers(pod)
            .iter()
            .map(|c| {
                let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                ContainerRun {
                    name: c
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    image: image.to_owned(),
                    entrypoint: self.entrypoint(image),
                    shim: None,
                    instance: None,
                    health: None,
                    kill_at: None,
                    state: State::Waiting {
                        reason: "ContainerCreating",
                        message: None,
                        retry_at: None,
                    },
                    restarts: 0,
                    last_terminated: None,
                    started: None,
                }
            })
            .collect();
        PodRun {
            key: key.clone(),
            ip,
            node_index,
            start_time: util::now(),
            network,
            volumes: None,
            dir,
            containers,
            kill_at: None,
        }
    }

    /// A deleted pod: SIGTERM to every process, SIGKILL after the grace
    /// period. True once none is left.
    fn stop(&self, key: &ObjKey, pod: &Value, run: &mut PodRun, now: Instant) -> bool {
        if run.kill_at.is_none() {
            let grace = grace_of(pod, pod.at("/metadata/deletionGracePeriodSeconds"));
            for c in &run.containers {
                if let Some(i) = &c.instance {
                    self.event(
                        pod,
                        "Normal",
                        "Killing",
                        &format!("Stopping container {}", c.name),
                    );
                    i.signal(libc::SIGTERM);
                }
            }
            run.kill_at = Some(now + grace);
        }
        let kill_at = run.kill_at.unwrap_or(now);
        let mut left = false;
        for c in &mut run.containers {
            let Some(i) = &c.instance else { continue };
            if let Some(exit) = i.exit() {
                c.last_terminated = Some(terminated(&exit, c, key));
                c.state = State::Terminated(terminated(&exit, c, key));
                c.instance = None;
                continue;
            }
            if now >= kill_at {
                i.signal(libc::SIGKILL);
            }
            left = true;
        }
        if left {
            // An exit queues the pod too; this is the SIGKILL's turn.
            self.later(key, kill_at.max(now + Duration::from_millis(50)));
        }
        !left
    }

    /// Moves container `i` on: records an exit, restarts or starts it.
    #[allow(clippy::too_many_arguments)]
    fn advance(
        &self,
        key: &ObjKey,
        pod: &Value,
        uid: &str,
        run: &mut PodRun,
        i: usize,
        policy: &str,
        now: Instant,
    ) {
        let (first, cap) = self.api.cfg.timing.restart_backoff;
        let c = &mut run.containers[i];
        if c.entrypoint.is_none() {
            if !matches!(c.state, State::Running { .. }) {
                c.state = State::Running {
                    started_at: util::now(),
                };
            }
            return;
        }
        if let Some(instance) = c.instance.clone().filter(|i| i.exit().is_none()) {
            if let Some(why) = c.health.as_ref().and_then(|h| h.take_failure()) {
                // A failed liveness or startup probe: the kubelet kills the
                // container with its grace period, then restarts it.
                self.event(pod, "Normal", "Killing", &why);
                instance.signal(libc::SIGTERM);
                let at = now + grace_of(pod, None);
                c.kill_at = Some(at);
                self.later(key, at);
            } else if let Some(at) = c.kill_at {
                if now >= at {
                    instance.signal(libc::SIGKILL);
                } else {
                    self.later(key, at);
                }
            }
            return;
        }
        if let Some(exit) = c.instance.as_ref().and_then(|i| i.exit()) {
            let record = terminated(&exit, c, key);
            c.instance = None;
            c.health = None;
            c.kill_at = None;
            c.last_terminated = Some(record.clone());
            let restart = match policy {
                "Never" => false,
                "OnFailure" => exit.code != 0,
                _ => true,
            };
            if !restart {
                c.state = State::Terminated(record);
                return;
            }
            // kube's back-off: the first restart at once, then 10 s
            // doubling to 5 min; reset after 10 min without a crash
            // (kuberuntime_manager.go doBackOff, pod-lifecycle docs).
            let ran = c.started.map(|s| now.saturating_duration_since(s));
            if ran.is_some_and(|r| r >= Duration::from_secs(600)) {
                c.restarts = 0;
            }
            let wait = if c.restarts == 0 {
                Duration::ZERO
            } else {
                backoff(first, cap, (c.restarts - 1) as u32)
            };
            c.restarts += 1;
            if !wait.is_zero() {
                let message = format!(
                    "back-off {} restarting failed container={} pod={}_{}({uid})",
                    go_duration(wait),
                    c.name,
                    key.1,
                    key.0
                );
                c.state = State::Waiting {
                    reason: "CrashLoopBackOff",
                    message: Some(message),
                    retry_at: Some(now + wait),
                };
                let name = c.name.clone();
                self.event(
                    pod,
                    "Warning",
                    "BackOff",
                    &format!(
                        "Back-off restarting failed container {name} in pod {}_{}({uid})",
                        key.1, key.0
                    ),
                );
                self.later(key, now + wait);
                return;
            }
            c.state = State::Waiting {
                reason: "ContainerCreating",
                message: None,
                retry_at: None,
            };
        }
        let State::Waiting { retry_at, .. } = &c.state else {
            return;
        };
        if let Some(at) = *retry_at {
            if now < at {
                self.later(key, at);
                return;
            }
        }
        self.start(key, pod, uid, run, i, now);
    }

    /// Container `i` cannot be created yet: it waits with `reason`, said
    /// in an event, and is tried again after the first back-off.
    fn not_created(
        &self,
        key: &ObjKey,
        pod: &Value,
        c: &mut ContainerRun,
        reason: &'static str,
        message: String,
        now: Instant,
    ) {
        let (first, _) = self.api.cfg.timing.restart_backoff;
        self.event(pod, "Warning", "Failed", &format!("Error: {message}"));
        c.state = State::Waiting {
            reason,
            message: Some(message),
            retry_at: Some(now + first),
        };
        self.later(key, now + first);
    }

    /// What starting container `i` needs: the pod's volumes (set up
    /// once), the process's launch and the container's namespaces (made
    /// once); none while one of them cannot be had yet.
    fn prepare(
        &self,
        key: &ObjKey,
        pod: &Value,
        spec: &Value,
        run: &mut PodRun,
        i: usize,
        now: Instant,
    ) -> Option<(Launch, Arc<ContainerShim>)> {
        let (first, _) = self.api.cfg.timing.restart_backoff;
        let network = match &run.network {
            Ok(n) => n,
            Err(why) => {
                run.containers[i].state = State::Waiting {
                    reason: "ContainerCreating",
                    message: Some(why.clone()),
                    retry_at: Some(now + first.max(Duration::from_secs(1))),
                };
                return None;
            }
        };
        if run.volumes.is_none() {
            match self.setup(pod, run.ip, &run.dir).run() {
                Ok(v) => run.volumes = Some(v),
                Err(why) => {
                    // The kubelet's volume manager retries; the pod waits.
                    self.event(pod, "Warning", "FailedMount", &why);
                    self.later(key, now + first.max(Duration::from_secs(1)));
                    return None;
                }
            }
        }
        let volumes = run.volumes.as_ref()?;
        let c = &mut run.containers[i];
        let entrypoint = c.entrypoint.clone()?;
        let launch = match Launch::of(&self.api.shared, pod, spec, &entrypoint, run.ip) {
            Ok(l) => {
                if let Some(why) = &l.unhonoured {
                    self.event(pod, "Warning", "SecurityContextNotHonoured", why);
                }
                l
            }
            Err(message) => {
                self.not_created(key, pod, c, "CreateContainerConfigError", message, now);
                return None;
            }
        };
        if c.shim.is_none() {
            let mounts = match volumes.mounts(spec) {
                Ok(m) => m,
                Err(message) => {
                    self.not_created(key, pod, c, "CreateContainerConfigError", message, now);
                    return None;
                }
            };
            let shim = ContainerShim::start(
                format!("ctr-{}", c.name),
                network,
                key.1.clone(),
                mounts,
                spec.at("/securityContext/readOnlyRootFilesystem")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                run.dir.join(&c.name),
            );
            match shim {
                Ok(s) => c.shim = Some(Arc::new(s)),
                Err(e) => {
                    let message = format!("cannot make the container's namespaces: {e}");
                    self.not_created(key, pod, c, "CreateContainerError", message, now);
                    return None;
                }
            }
        }
        Some((launch, c.shim.clone()?))
    }

    /// Forks a new instance of the container from its shim and waits for
    /// the exec: its stdout and stderr, or why it failed (containerd's
    /// StartError). The instance's thread records the exit and queues the
    /// pod.
    fn spawn(
        &self,
        key: &ObjKey,
        name: &str,
        shim: &ContainerShim,
        launch: Launch,
        instance: &Arc<Instance>,
    ) -> Result<(Option<ChildStdout>, Option<ChildStderr>), String> {
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let me = instance.clone();
        let queue = self.queue.clone();
        let queued = key.clone();
        shim.spawn_instance(format!("run-{name}"), move |entered| {
            let child = entered.and_then(|()| launch.command().spawn());
            let mut child = match child {
                Ok(child) => child,
                Err(e) => {
                    // containerd's StartError: the exec failed.
                    let _ = started_tx.send(Err(e.to_string()));
                    return;
                }
            };
            *me.pid.lock().unwrap_or_else(|e| e.into_inner()) = Some(child.id() as i32);
            // The output is read by threads the kubelet starts: a thread
            // that unshared its children's PID namespace cannot start
            // threads (clone(2): EINVAL with CLONE_THREAD).
            let _ = started_tx.send(Ok((child.stdout.take(), child.stderr.take())));
            let status = child.wait();
            *me.exit.lock().unwrap_or_else(|e| e.into_inner()) = Some(exit_of(status));
            *me.pid.lock().unwrap_or_else(|e| e.into_inner()) = None;
            queue.add(queued);
        })
        .map_err(|e| e.to_string())?;
        started_rx
            .recv()
            .map_err(|_| "the container's thread ended".to_owned())?
    }

    /// Starts container `i`: its namespaces once, then a new instance.
    fn start(
        &self,
        key: &ObjKey,
        pod: &Value,
        uid: &str,
        run: &mut PodRun,
        i: usize,
        now: Instant,
    ) {
        let spec = containers(pod).get(i).cloned().unwrap_or(Value::Null);
        let Some((launch, shim)) = self.prepare(key, pod, &spec, run, i, now) else {
            return;
        };
        let Ok(network) = &run.network else { return };
        let c = &mut run.containers[i];
        let instance = Arc::new(Instance {
            pid: Mutex::new(None),
            exit: Mutex::new(None),
        });
        let started = self.spawn(key, &c.name, &shim, launch, &instance);
        let name = c.name.clone();
        match started {
            Ok((stdout, stderr)) => {
                let log = self.api.shared.pod_logs.start_instance(uid, &name, 2);
                for out in [
                    stdout.map(|o| Box::new(o) as Box<dyn Read + Send>),
                    stderr.map(|e| Box::new(e) as Box<dyn Read + Send>),
                ] {
                    match out {
                        Some(out) => drain(out, log.clone()),
                        None => log.finish(),
                    }
                }
                let reporter = probes::Reporter {
                    component: COMPONENT,
                    api: self.api.clone(),
                    queue: self.queue.clone(),
                    key: key.clone(),
                    pod: pod.clone(),
                };
                let health =
                    probes::start(&spec, instance.clone(), network, shim, run.ip, reporter)
                        .unwrap_or_else(|why| {
                            // A probe this kubelet cannot run: said, and the
                            // container never counts as ready.
                            self.event(pod, "Warning", "Unhealthy", &why);
                            probes::Health::unverifiable()
                        });
                c.health = Some(health);
                c.instance = Some(instance);
                c.started = Some(now);
                c.state = State::Running {
                    started_at: util::now(),
                };
                self.event(
                    pod,
                    "Normal",
                    "Created",
                    &format!("Created container: {name}"),
                );
                self.event(
                    pod,
                    "Normal",
                    "Started",
                    &format!("Started container {name}"),
                );
            }
            Err(message) => {
                *instance.exit.lock().unwrap_or_else(|e| e.into_inner()) = Some(Exit {
                    code: 128,
                    reason: "StartError",
                    message: Some(message.clone()),
                    finished_at: util::now(),
                });
                c.instance = Some(instance);
                c.started = Some(now);
                self.event(pod, "Warning", "Failed", &format!("Error: {message}"));
                self.queue.add(key.clone());
            }
        }
    }

    /// What the pod's volumes are set up from.
    fn setup<'a>(
        &'a self,
        pod: &'a Value,
        ip: Ipv4Addr,
        dir: &'a std::path::Path,
    ) -> volumes::Setup<'a> {
        let ca_pem = self
            .api
            .controls
            .cluster_api
            .get()
            .map_or("", |c| c.ca_pem.as_str());
        volumes::Setup {
            shared: &self.api.shared,
            pod,
            pod_ip: ip.to_string(),
            ca_pem,
            dir,
        }
    }

    fn event(&self, pod: &Value, ty: &str, reason: &str, msg: &str) {
        self.api.event(pod, PODS, ty, reason, msg, COMPONENT);
    }

    fn write(&self, key: &ObjKey, run: &PodRun) {
        let status = status(run);
        if let Err(e) = self.api.update_status(PODS, key, COMPONENT, |p| {
            let mut next = status.clone();
            if let Some(old) = p.at("/status/conditions").and_then(Value::as_array) {
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

/// The time between SIGTERM and SIGKILL: the deletion's own grace
/// period, else the pod's `terminationGracePeriodSeconds` (30 s by
/// default), never under [`MINIMUM_GRACE`].
fn grace_of(pod: &Value, deletion: Option<&Value>) -> Duration {
    let secs = deletion
        .and_then(Value::as_i64)
        .or_else(|| {
            pod.at("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(30);
    Duration::from_secs(secs.max(0) as u64).max(MINIMUM_GRACE)
}

/// The prefix of each server's directory of pod files, followed by its
/// process ID.
const ROOT_PREFIX: &str = "kubeforge-pods-";

impl Drop for Processes {
    fn drop(&mut self) {
        // The pods' runs first: they kill their processes.
        self.lock().clear();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Removes the pod files of servers that died without cleaning up (a
/// SIGKILL): directories whose process is gone.
fn sweep_stale(temp: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(ROOT_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The pod's containers, borrowed (the kubelet asks on every sync).
fn containers(pod: &Value) -> &[Value] {
    pod.at("/spec/containers")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn backoff(first: Duration, cap: Duration, n: u32) -> Duration {
    first
        .saturating_mul(2u32.saturating_pow(n.min(20)))
        .min(cap)
}

/// A duration as Go prints it in the back-off message (`10s`, `5m0s`).
fn go_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 60 {
        format!("{}m{}s", secs / 60, secs % 60)
    } else if secs > 0 {
        format!("{secs}s")
    } else {
        format!("{}ms", d.as_millis())
    }
}

fn terminated(exit: &Exit, c: &ContainerRun, key: &ObjKey) -> Value {
    let mut t = json!({
        "exitCode": exit.code,
        "reason": exit.reason,
        "startedAt": match &c.state { State::Running { started_at } => json!(started_at), _ => Value::Null },
        "finishedAt": exit.finished_at,
        "containerID": container_id(&format!("{}/{}/{}", key.0, key.1, c.name), c.restarts),
    });
    if let Some(m) = &exit.message {
        t["message"] = json!(m);
    }
    t
}

/// The longest line kept whole; a longer one is split, as the CRI log
/// format splits lines at 16 KiB.
const MAX_LINE: usize = 16 * 1024;

/// Reads a process's output until it closes, line by line into `log`.
fn drain(mut from: Box<dyn Read + Send>, log: Arc<InstanceLog>) {
    let spawned = std::thread::Builder::new()
        .name("container-output".into())
        .spawn({
            let log = log.clone();
            move || {
                let mut pending: Vec<u8> = Vec::new();
                let mut buf = [0u8; 8192];
                while let Ok(n) = from.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    pending.extend_from_slice(&buf[..n]);
                    let mut start = 0;
                    while let Some(end) = pending[start..].iter().position(|b| *b == b'\n') {
                        log.push(bytes::Bytes::copy_from_slice(&pending[start..=start + end]));
                        start += end + 1;
                    }
                    pending.drain(..start);
                    while pending.len() >= MAX_LINE {
                        let rest = pending.split_off(MAX_LINE);
                        log.push(bytes::Bytes::from(std::mem::replace(&mut pending, rest)));
                    }
                }
                if !pending.is_empty() {
                    log.push(bytes::Bytes::from(pending));
                }
                log.finish();
            }
        });
    if spawned.is_err() {
        log.finish();
    }
}

/// What a container instance is started with.
struct Launch {
    argv: Vec<String>,
    env: Vec<(String, String)>,
    working_dir: Option<PathBuf>,
    uid: Option<u32>,
    gid: Option<u32>,
    /// What of the security context cannot be honoured, for an event.
    unhonoured: Option<String>,
}

/// The user a mapped image declares when the pod asks for a non-root one
/// and names none: 65532, the `nonroot` user of distroless images and of
/// the scaffold's Dockerfile (`USER 65532:65532`), so a project's
/// `config/default` (`runAsNonRoot: true`) runs unchanged.
const IMAGE_NONROOT_USER: u32 = 65532;

/// The user and group the process runs as, by the security context, as
/// far as the server can switch (only root can); a policy the settings break is an error, as the
/// kubelet's `verifyRunAsNonRoot` makes it.
fn identity(pod: &Value, container: &Value, server_uid: u32) -> Result<Identity, String> {
    let field = |name: &str| {
        container
            .at(&format!("/securityContext/{name}"))
            .or_else(|| pod.at(&format!("/spec/securityContext/{name}")))
    };
    let id = |name: &str| {
        field(name)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    let non_root = field("runAsNonRoot").and_then(Value::as_bool) == Some(true);
    let (user, group) = (id("runAsUser"), id("runAsGroup"));
    let who = || {
        format!(
            "(pod: \"{}_{}({})\", container: {})",
            pod.at("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(""),
            pod.at("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or(""),
            pod.at("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or(""),
            container.get("name").and_then(Value::as_str).unwrap_or("")
        )
    };
    if non_root && user == Some(0) {
        return Err(format!(
            "container's runAsUser breaks non-root policy {}",
            who()
        ));
    }
    if server_uid != 0 {
        let unhonoured = user.filter(|u| *u != server_uid).map(|u| {
            format!(
                "runAsUser {u} is not honoured: the server runs as uid {server_uid} and cannot switch users; \
                 the container runs as {server_uid}"
            )
        });
        return Ok(Identity {
            uid: None,
            gid: None,
            unhonoured,
        });
    }
    let (uid, gid) = match (user, non_root) {
        (Some(u), _) => (Some(u), group),
        (None, true) => (
            Some(IMAGE_NONROOT_USER),
            Some(group.unwrap_or(IMAGE_NONROOT_USER)),
        ),
        (None, false) => (None, group),
    };
    Ok(Identity {
        uid,
        gid,
        unhonoured: None,
    })
}

/// Who a container's process runs as; none keeps the server's own.
struct Identity {
    uid: Option<u32>,
    gid: Option<u32>,
    /// What of the security context cannot be honoured, for an event.
    unhonoured: Option<String>,
}

impl Launch {
    fn of(
        shared: &crate::registry::state::Shared,
        pod: &Value,
        container: &Value,
        entrypoint: &std::path::Path,
        ip: Ipv4Addr,
    ) -> Result<Launch, String> {
        let strings = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let command = strings(container.get("command"));
        let args = strings(container.get("args"));
        let mut argv = vec![entrypoint.display().to_string()];
        argv.extend(command.into_iter().skip(1));
        argv.extend(args);
        let env = env::environment(shared, pod, container, &ip.to_string())?;
        // SAFETY: geteuid(2) has no preconditions.
        let server_uid = unsafe { libc::geteuid() };
        let Identity {
            uid,
            gid,
            unhonoured,
        } = identity(pod, container, server_uid)?;
        Ok(Launch {
            argv,
            env,
            working_dir: container
                .get("workingDir")
                .and_then(Value::as_str)
                .map(PathBuf::from),
            uid,
            gid,
            unhonoured,
        })
    }

    fn command(&self) -> std::process::Command {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..])
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(self.working_dir.as_deref().unwrap_or("/".as_ref()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(uid) = self.uid {
            cmd.uid(uid);
        }
        if let Some(gid) = self.gid {
            cmd.gid(gid);
        }
        // SAFETY: `in_child` makes only async-signal-safe calls.
        unsafe {
            cmd.pre_exec(sandbox::in_child);
        }
        cmd
    }
}

/// The pod status for the processes' states.
fn status(run: &PodRun) -> Value {
    let key = &run.key;
    let statuses: Vec<Value> = run
        .containers
        .iter()
        .map(|c| {
            let (state, started, ready) = match &c.state {
                State::Waiting {
                    reason, message, ..
                } => {
                    let mut w = json!({"reason": reason});
                    if let Some(m) = message {
                        w["message"] = json!(m);
                    }
                    (json!({ "waiting": w }), false, false)
                }
                // Without probes a container is started and ready once
                // running (`health` says so), as upstream.
                State::Running { started_at } => {
                    let (started, ready) = c
                        .health
                        .as_ref()
                        .map_or((true, true), |h| (h.started(), h.ready()));
                    (
                        json!({"running": {"startedAt": started_at}}),
                        started,
                        ready,
                    )
                }
                State::Terminated(t) => (json!({ "terminated": t }), false, false),
            };
            let created = !matches!(
                c.state,
                State::Waiting {
                    reason: "ContainerCreating"
                        | "CreateContainerConfigError"
                        | "CreateContainerError",
                    ..
                }
            ) || c.restarts > 0;
            let mut s = json!({
                "name": c.name,
                "image": full_image(&c.image),
                "imageID": if created { image_id(&c.image) } else { String::new() },
                "ready": ready,
                "restartCount": c.restarts,
                "started": started,
                "state": state,
                "lastState": {},
            });
            if created {
                s["containerID"] = json!(container_id(
                    &format!("{}/{}/{}", key.0, key.1, c.name),
                    c.restarts
                ));
            }
            if let (Some(l), false) = (&c.last_terminated, matches!(c.state, State::Terminated(_)))
            {
                s["lastState"] = json!({ "terminated": l });
            }
            s
        })
        .collect();
    let running = run
        .containers
        .iter()
        .any(|c| matches!(c.state, State::Running { .. }));
    let all_done = run
        .containers
        .iter()
        .all(|c| matches!(c.state, State::Terminated(_)));
    let never_ran = run
        .containers
        .iter()
        .all(|c| c.restarts == 0 && matches!(c.state, State::Waiting { .. }));
    // kubelet_pods.go getPhase.
    let phase = if all_done {
        let ok = run.containers.iter().all(|c| {
            matches!(&c.state, State::Terminated(t) if t.get("exitCode").and_then(Value::as_i64) == Some(0))
        });
        if ok {
            "Succeeded"
        } else {
            "Failed"
        }
    } else if running || !never_ran {
        "Running"
    } else {
        "Pending"
    };
    let unready: Vec<&str> = run
        .containers
        .iter()
        .filter(|c| {
            !matches!(c.state, State::Running { .. })
                || c.health.as_ref().is_some_and(|h| !h.ready())
        })
        .map(|c| c.name.as_str())
        .collect();
    let all_ready = unready.is_empty();
    let (reason, message) = match phase {
        "Succeeded" | "Failed" => ("PodCompleted", String::new()),
        _ => (
            "ContainersNotReady",
            format!("containers with unready status: [{}]", unready.join(" ")),
        ),
    };
    let sandbox = run.network.is_ok() && !all_done;
    let mut status = json!({
        "phase": phase,
        "conditions": [
            cond("PodReadyToStartContainers", sandbox, "", ""),
            cond("Initialized", true, "", ""),
            cond("Ready", all_ready, reason, &message),
            cond("ContainersReady", all_ready, reason, &message),
            cond("PodScheduled", true, "", ""),
        ],
        "hostIP": node_ip(run.node_index),
        "hostIPs": [{"ip": node_ip(run.node_index)}],
        "startTime": run.start_time,
        "containerStatuses": statuses,
    });
    if run.network.is_ok() {
        status["podIP"] = json!(run.ip.to_string());
        status["podIPs"] = json!([{"ip": run.ip.to_string()}]);
    }
    status
}
