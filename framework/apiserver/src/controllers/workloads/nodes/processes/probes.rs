//! The kubelet's probes of a running container (pkg/kubelet/prober:
//! `worker.go`, `prober.go`): startup, liveness and readiness, each
//! `httpGet`, `tcpSocket` or `exec`, run from a thread of the pod's
//! network namespace after `initialDelaySeconds`, every `periodSeconds`,
//! each try bounded by `timeoutSeconds`; a verdict flips after
//! `successThreshold` successes or `failureThreshold` failures in a row.
//! Until the startup probe succeeds the others wait; readiness starts
//! false; a failed liveness or startup probe asks the kubelet to restart
//! the container. Each failure is an `Unhealthy` event, as upstream.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::instance::Instance;
use super::sandbox::{ContainerShim, PodNetwork};
use crate::controllers::workloads::api::{Api, PODS};
use crate::controllers::workloads::queue::Queue;
use crate::storage::ObjKey;

/// What the kubelet sends as `User-Agent` (`ProbeUserAgent`, 1.35).
const USER_AGENT: &str = "kube-probe/1.35";
/// How much of a response an HTTP probe reads: the status line is enough.
const HTTP_READ_LIMIT: usize = 10 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Startup,
    Liveness,
    Readiness,
}

impl Which {
    const ALL: [(Which, &'static str); 3] = [
        (Which::Startup, "startupProbe"),
        (Which::Liveness, "livenessProbe"),
        (Which::Readiness, "readinessProbe"),
    ];

    fn title(self) -> &'static str {
        match self {
            Which::Startup => "Startup",
            Which::Liveness => "Liveness",
            Which::Readiness => "Readiness",
        }
    }
}

#[derive(Clone, Debug)]
enum Action {
    Http {
        https: bool,
        path: String,
        port: u16,
        headers: Vec<(String, String)>,
    },
    Tcp {
        port: u16,
    },
    Exec {
        argv: Vec<String>,
    },
}

#[derive(Clone, Debug)]
struct Probe {
    which: Which,
    action: Action,
    initial_delay: Duration,
    period: Duration,
    timeout: Duration,
    success_threshold: u32,
    failure_threshold: u32,
}

/// The probes' verdicts on one container instance.
#[derive(Debug)]
pub(super) struct Health {
    state: Mutex<Verdicts>,
}

#[derive(Clone, Debug, Default)]
struct Verdicts {
    started: bool,
    ready: bool,
    /// Why the container must be restarted (a liveness or startup probe
    /// failed), once.
    failed: Option<String>,
}

impl Health {
    fn lock(&self) -> std::sync::MutexGuard<'_, Verdicts> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the container counts as started (`containerStatuses[].started`).
    pub(super) fn started(&self) -> bool {
        self.lock().started
    }

    /// Whether the container counts as ready.
    pub(super) fn ready(&self) -> bool {
        self.lock().ready
    }

    /// The verdicts on a container whose probes cannot be run: started,
    /// never ready.
    pub(super) fn unverifiable() -> Arc<Health> {
        Arc::new(Health {
            state: Mutex::new(Verdicts {
                started: true,
                ready: false,
                failed: None,
            }),
        })
    }

    /// The liveness or startup failure that asks for a restart, taken.
    pub(super) fn take_failure(&self) -> Option<String> {
        self.lock().failed.take()
    }
}

/// The probes of `container`, or why one cannot be run (an unknown named
/// port, no handler).
fn probes_of(container: &Value) -> Result<Vec<Probe>, String> {
    let mut out = Vec::new();
    for (which, field) in Which::ALL {
        let Some(p) = container.get(field).filter(|p| p.is_object()) else {
            continue;
        };
        let secs = |name: &str, default: u64| {
            Duration::from_secs(p.get(name).and_then(Value::as_u64).unwrap_or(default))
        };
        let count = |name: &str, default: u32| {
            p.get(name)
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n > 0)
                .unwrap_or(default)
        };
        let action = if let Some(h) = p.get("httpGet") {
            Action::Http {
                https: h.get("scheme").and_then(Value::as_str) == Some("HTTPS"),
                path: h
                    .get("path")
                    .and_then(Value::as_str)
                    .unwrap_or("/")
                    .to_owned(),
                port: port(container, h.get("port"), field)?,
                headers: h
                    .get("httpHeaders")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|kv| {
                        Some((
                            kv.get("name")?.as_str()?.to_owned(),
                            kv.get("value")?.as_str()?.to_owned(),
                        ))
                    })
                    .collect(),
            }
        } else if let Some(t) = p.get("tcpSocket") {
            Action::Tcp {
                port: port(container, t.get("port"), field)?,
            }
        } else if let Some(e) = p.get("exec") {
            Action::Exec {
                argv: e
                    .get("command")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect(),
            }
        } else {
            return Err(format!(
                "{field} has no handler this kubelet runs (httpGet, tcpSocket or exec)"
            ));
        };
        out.push(Probe {
            which,
            action,
            initial_delay: secs("initialDelaySeconds", 0),
            period: secs("periodSeconds", 10).max(Duration::from_secs(1)),
            timeout: secs("timeoutSeconds", 1).max(Duration::from_secs(1)),
            // Liveness and startup allow only 1 (validation); readiness
            // may ask for more.
            success_threshold: if which == Which::Readiness {
                count("successThreshold", 1)
            } else {
                1
            },
            failure_threshold: count("failureThreshold", 3),
        });
    }
    Ok(out)
}

/// A probe's port: a number, or the name of one of the container's ports.
fn port(container: &Value, port: Option<&Value>, field: &str) -> Result<u16, String> {
    match port {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u16::try_from(n).ok())
            .ok_or_else(|| format!("{field}: port {n} is out of range")),
        Some(Value::String(name)) => container
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|p| p.get("containerPort")?.as_u64())
            .and_then(|n| u16::try_from(n).ok())
            .or_else(|| name.parse().ok())
            .ok_or_else(|| format!("{field}: the container has no port named {name:?}")),
        _ => Err(format!("{field}: a port is required")),
    }
}

/// Where a prober reports.
pub(super) struct Reporter {
    /// The events' source component.
    pub component: &'static str,
    pub api: Arc<Api>,
    pub queue: Arc<Queue>,
    pub key: ObjKey,
    pub pod: Value,
}

/// Starts the prober of one container instance: its verdicts, shared with
/// the kubelet. No probes: started and ready at once, as upstream.
pub(super) fn start(
    container: &Value,
    instance: Arc<Instance>,
    network: &PodNetwork,
    shim: Arc<ContainerShim>,
    ip: Ipv4Addr,
    reporter: Reporter,
) -> Result<Arc<Health>, String> {
    let probes = probes_of(container)?;
    let has = |w: Which| probes.iter().any(|p| p.which == w);
    let health = Arc::new(Health {
        state: Mutex::new(Verdicts {
            started: !has(Which::Startup),
            ready: !has(Which::Readiness),
            failed: None,
        }),
    });
    if probes.is_empty() {
        return Ok(health);
    }
    let name = container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let verdicts = health.clone();
    network
        .spawn_in(format!("probe-{name}"), move || {
            Prober {
                probes,
                instance,
                shim,
                ip,
                health: verdicts,
                reporter,
                container: name,
            }
            .run();
        })
        .map_err(|e| format!("cannot start the container's prober: {e}"))?;
    Ok(health)
}

struct Prober {
    probes: Vec<Probe>,
    instance: Arc<Instance>,
    shim: Arc<ContainerShim>,
    ip: Ipv4Addr,
    health: Arc<Health>,
    reporter: Reporter,
    container: String,
}

/// A probe's run of results.
struct Streak {
    next: Instant,
    successes: u32,
    failures: u32,
}

impl Prober {
    fn run(self) {
        let begun = Instant::now();
        let mut streaks: Vec<Streak> = self
            .probes
            .iter()
            .map(|p| Streak {
                next: begun + p.initial_delay,
                successes: 0,
                failures: 0,
            })
            .collect();
        while self.instance.exit().is_none() {
            let now = Instant::now();
            let started = self.health.started();
            for (probe, streak) in self.probes.iter().zip(streaks.iter_mut()) {
                let active = match probe.which {
                    Which::Startup => !started,
                    _ => started,
                };
                if !active || now < streak.next {
                    continue;
                }
                streak.next = now + probe.period;
                let outcome = self.try_once(probe);
                if self.instance.exit().is_some() {
                    return;
                }
                self.record(probe, streak, outcome);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn record(&self, probe: &Probe, streak: &mut Streak, outcome: Result<(), String>) {
        let changed = match outcome {
            Ok(()) => {
                streak.failures = 0;
                streak.successes = streak.successes.saturating_add(1);
                let mut v = self.health.lock();
                match probe.which {
                    Which::Startup if !v.started => {
                        v.started = true;
                        true
                    }
                    Which::Readiness if !v.ready && streak.successes >= probe.success_threshold => {
                        v.ready = true;
                        true
                    }
                    _ => false,
                }
            }
            Err(why) => {
                streak.successes = 0;
                streak.failures = streak.failures.saturating_add(1);
                let message = format!("{} probe failed: {why}", probe.which.title());
                self.reporter.api.event(
                    &self.reporter.pod,
                    PODS,
                    "Warning",
                    "Unhealthy",
                    &message,
                    self.reporter.component,
                );
                if streak.failures < probe.failure_threshold {
                    return;
                }
                let mut v = self.health.lock();
                match probe.which {
                    Which::Readiness if v.ready => {
                        v.ready = false;
                        true
                    }
                    Which::Readiness => false,
                    Which::Liveness | Which::Startup => {
                        streak.failures = 0;
                        let what = if probe.which == Which::Liveness {
                            "liveness"
                        } else {
                            "startup"
                        };
                        v.failed = Some(format!(
                            "Container {} failed {what} probe, will be restarted",
                            self.container
                        ));
                        true
                    }
                }
            }
        };
        if changed {
            self.reporter.queue.add(self.reporter.key.clone());
        }
    }

    fn try_once(&self, probe: &Probe) -> Result<(), String> {
        match &probe.action {
            Action::Http {
                https,
                path,
                port,
                headers,
            } => http_get(self.ip, *port, path, headers, *https, probe.timeout),
            Action::Tcp { port } => {
                let addr = SocketAddr::from((self.ip, *port));
                TcpStream::connect_timeout(&addr, probe.timeout)
                    .map(drop)
                    .map_err(|e| format!("dial tcp {addr}: {e}"))
            }
            Action::Exec { argv } => self.exec(argv, probe.timeout),
        }
    }

    fn exec(&self, argv: &[String], timeout: Duration) -> Result<(), String> {
        let mut child = self
            .shim
            .exec(argv)
            .map_err(|e| format!("exec {argv:?}: {e}"))?;
        let deadline = std::time::Instant::now() + timeout;
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    let mut out = String::new();
                    if let Some(mut o) = child.stdout.take() {
                        let _ = o.read_to_string(&mut out);
                    }
                    return Err(format!(
                        "command {argv:?} exited with {}: {}",
                        status.code().unwrap_or(-1),
                        out.trim()
                    ));
                }
                Ok(None) if std::time::Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("command timed out after {timeout:?}"));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

/// An HTTP GET as the kubelet's prober sends it; 200 to 399 succeeds.
fn http_get(
    ip: Ipv4Addr,
    port: u16,
    path: &str,
    headers: &[(String, String)],
    https: bool,
    timeout: Duration,
) -> Result<(), String> {
    let url = format!("http://{ip}:{port}{path}");
    if https {
        return Err(format!(
            "Get \"https://{ip}:{port}{path}\": HTTPS probes are not run by this kubelet; \
             probe over HTTP or tcpSocket"
        ));
    }
    let addr = SocketAddr::from((ip, port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("Get \"{url}\": dial tcp {addr}: {e}"))?;
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nHost: {ip}:{port}\r\nUser-Agent: {USER_AGENT}\r\nAccept: */*\r\nConnection: close\r\n"
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("Get \"{url}\": {e}"))?;
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(2).any(|w| w == b"\r\n") && got.len() < HTTP_READ_LIMIT {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("Get \"{url}\": {e}")),
        }
    }
    let line = String::from_utf8_lossy(&got);
    let code: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("Get \"{url}\": malformed HTTP response"))?;
    if (200..400).contains(&code) {
        Ok(())
    } else {
        Err(format!("HTTP probe failed with statuscode: {code}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn probes_take_kube_defaults_and_resolve_named_ports() {
        let c = json!({"name": "m", "ports": [{"name": "health", "containerPort": 8081}],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "health"}},
            "readinessProbe": {"tcpSocket": {"port": 8081}, "periodSeconds": 2, "successThreshold": 2}});
        let probes = probes_of(&c).unwrap();
        assert_eq!(probes.len(), 2);
        let live = &probes[0];
        assert_eq!(live.which, Which::Liveness);
        assert!(
            matches!(&live.action, Action::Http { port: 8081, path, .. } if path == "/healthz")
        );
        assert_eq!(
            (
                live.period,
                live.timeout,
                live.failure_threshold,
                live.success_threshold
            ),
            (Duration::from_secs(10), Duration::from_secs(1), 3, 1)
        );
        let ready = &probes[1];
        assert_eq!(
            (ready.period, ready.success_threshold),
            (Duration::from_secs(2), 2)
        );
        let bad = json!({"livenessProbe": {"tcpSocket": {"port": "nope"}}});
        assert!(probes_of(&bad)
            .unwrap_err()
            .contains("no port named \"nope\""));
        let none = json!({"readinessProbe": {"grpc": {"port": 1}}});
        assert!(probes_of(&none).unwrap_err().contains("no handler"));
    }
}
