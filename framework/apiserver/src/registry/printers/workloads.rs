//! The printers kubectl users watch a workload through, as
//! `pkg/printers/internalversion` computes them: a pod's STATUS from its
//! container states (`ErrImagePull`, `CrashLoopBackOff`, `Completed`,
//! `Terminating`) and RESTARTS with the last restart's age, a node's
//! `Ready,SchedulingDisabled` and roles, a Job's status and duration,
//! PodDisruptionBudgets and ControllerRevisions.

use serde_json::{json, Value};

use crate::machinery::util::Pointer;
use crate::machinery::util::{age_secs, human_duration};

fn str_at<'a>(o: &'a Value, ptr: &str) -> &'a str {
    o.at(ptr).and_then(Value::as_str).unwrap_or("")
}

fn or_none(s: &str) -> Value {
    json!(if s.is_empty() { "<none>" } else { s })
}

fn age(o: &Value) -> Value {
    json!(human_duration(age_secs(
        o.at("/metadata/creationTimestamp")
    )))
}

fn parse(ts: &str) -> Option<jiff::Timestamp> {
    ts.parse().ok()
}

fn condition_true(o: &Value, ty: &str) -> bool {
    o.at("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| str_at(c, "/type") == ty && str_at(c, "/status") == "True")
        })
}

/// `printPod`: NAME READY STATUS RESTARTS AGE, wide IP NODE NOMINATED NODE
/// READINESS GATES.
pub(super) fn pod(o: &Value) -> Vec<Value> {
    let total = o
        .at("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let phase = str_at(o, "/status/phase");
    let mut reason = match str_at(o, "/status/reason") {
        "" => phase.to_owned(),
        r => r.to_owned(),
    };
    let mut restarts = 0i64;
    let mut ready = 0;
    let mut last_restart: Option<jiff::Timestamp> = None;
    let mut has_running = false;
    let statuses = o
        .at("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in statuses.iter().rev() {
        restarts += c.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
        if let Some(t) = parse(str_at(c, "/lastState/terminated/finishedAt")) {
            if last_restart.is_none_or(|l| l < t) {
                last_restart = Some(t);
            }
        }
        let waiting = str_at(c, "/state/waiting/reason");
        let terminated = c.at("/state/terminated");
        if !waiting.is_empty() {
            reason = waiting.to_owned();
        } else if let Some(t) = terminated {
            reason = match str_at(t, "/reason") {
                "" => match t.get("signal").and_then(Value::as_i64).filter(|s| *s != 0) {
                    Some(sig) => format!("Signal:{sig}"),
                    None => format!(
                        "ExitCode:{}",
                        t.get("exitCode").and_then(Value::as_i64).unwrap_or(0)
                    ),
                },
                r => r.to_owned(),
            };
        } else if c.get("ready").and_then(Value::as_bool) == Some(true)
            && c.at("/state/running").is_some()
        {
            has_running = true;
            ready += 1;
        }
    }
    if reason == "Completed" && has_running {
        reason = if condition_true(o, "Ready") {
            "Running".into()
        } else {
            "NotReady".into()
        };
    }
    let deleting = o.at("/metadata/deletionTimestamp").is_some();
    if deleting && str_at(o, "/status/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }
    let restarts = match last_restart {
        Some(t) if restarts != 0 => format!(
            "{restarts} ({} ago)",
            human_duration(jiff::Timestamp::now().as_second() - t.as_second())
        ),
        _ => restarts.to_string(),
    };
    let ip = o
        .at("/status/podIPs/0/ip")
        .and_then(Value::as_str)
        .unwrap_or_else(|| str_at(o, "/status/podIP"));
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts),
        age(o),
        or_none(ip),
        or_none(str_at(o, "/spec/nodeName")),
        or_none(str_at(o, "/status/nominatedNodeName")),
        json!("<none>"),
    ]
}

/// `printNode`: NAME STATUS ROLES AGE VERSION, wide INTERNAL-IP
/// EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME.
pub(super) fn node(o: &Value) -> Vec<Value> {
    let ready = o
        .at("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| str_at(c, "/type") == "Ready"));
    let mut status = vec![match ready {
        Some(c) if str_at(c, "/status") == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if o.at("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled");
    }
    let mut roles: Vec<String> = o
        .at("/metadata/labels")
        .and_then(Value::as_object)
        .map(|ls| {
            ls.iter()
                .filter_map(|(k, v)| {
                    if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                        (!role.is_empty()).then(|| role.to_owned())
                    } else if k == "kubernetes.io/role" {
                        v.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
                    } else {
                        None
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    roles.sort();
    roles.dedup();
    let address = |ty: &str| {
        o.at("/status/addresses")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|x| str_at(x, "/type") == ty))
            .map(|x| str_at(x, "/address").to_owned())
            .unwrap_or_default()
    };
    let unknown = |s: &str| json!(if s.is_empty() { "<unknown>" } else { s });
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(status.join(",")),
        or_none(&roles.join(",")),
        age(o),
        json!(str_at(o, "/status/nodeInfo/kubeletVersion")),
        or_none(&address("InternalIP")),
        or_none(&address("ExternalIP")),
        unknown(str_at(o, "/status/nodeInfo/osImage")),
        unknown(str_at(o, "/status/nodeInfo/kernelVersion")),
        unknown(str_at(o, "/status/nodeInfo/containerRuntimeVersion")),
    ]
}

fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".into(),
    }
}

/// `printPodDisruptionBudget`: NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED
/// DISRUPTIONS AGE.
pub(super) fn pdb(o: &Value) -> Vec<Value> {
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(int_or_string(o.at("/spec/minAvailable"))),
        json!(int_or_string(o.at("/spec/maxUnavailable"))),
        json!(o
            .at("/status/disruptionsAllowed")
            .and_then(Value::as_i64)
            .unwrap_or(0)),
        age(o),
    ]
}

/// `printControllerRevision`: NAME CONTROLLER REVISION AGE.
pub(super) fn controller_revision(o: &Value) -> Vec<Value> {
    let controller = o
        .at("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .and_then(|rs| {
            rs.iter()
                .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        })
        .map(|r| {
            let api_version = str_at(r, "/apiVersion");
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let kind = str_at(r, "/kind").to_ascii_lowercase();
            let kind = if group.is_empty() {
                kind
            } else {
                format!("{kind}.{group}")
            };
            format!("{kind}/{}", str_at(r, "/name"))
        })
        .unwrap_or_else(|| "<none>".into());
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(controller),
        json!(o.get("revision").and_then(Value::as_i64).unwrap_or(0)),
        age(o),
    ]
}

/// `printJob`: NAME STATUS COMPLETIONS DURATION AGE.
pub(super) fn job(o: &Value) -> Vec<Value> {
    let status = if condition_true(o, "Complete") {
        "Complete"
    } else if condition_true(o, "Failed") {
        "Failed"
    } else if o.at("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if condition_true(o, "Suspended") {
        "Suspended"
    } else if condition_true(o, "FailureTarget") {
        "FailureTarget"
    } else if condition_true(o, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let succeeded = o
        .at("/status/succeeded")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let parallelism = o.at("/spec/parallelism").and_then(Value::as_i64);
    let completions = match (
        o.at("/spec/completions").and_then(Value::as_i64),
        parallelism,
    ) {
        (Some(c), _) => format!("{succeeded}/{c}"),
        (None, Some(p)) if p > 1 => format!("{succeeded}/1 of {p}"),
        _ => format!("{succeeded}/1"),
    };
    let start = parse(str_at(o, "/status/startTime"));
    let end = parse(str_at(o, "/status/completionTime"));
    let duration = match (start, end) {
        (None, _) => String::new(),
        (Some(s), None) => human_duration(jiff::Timestamp::now().as_second() - s.as_second()),
        (Some(s), Some(e)) => human_duration(e.as_second() - s.as_second()),
    };
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(status),
        json!(completions),
        json!(duration),
        age(o),
    ]
}
