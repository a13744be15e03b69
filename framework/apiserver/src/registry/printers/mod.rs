//! Each built-in kind's printer columns: the columns and cells kubectl users know from
//! kube-apiserver for pods, workloads, services, config maps, secrets,
//! namespaces, events, leases, bindings, webhooks and admission policies.

mod columns;
mod workloads;

use serde_json::{json, Value};

pub(crate) use columns::{col, name_col};

use crate::machinery::util::Pointer;
use crate::machinery::util::{age_secs, human_duration};
use crate::registry::Printer;
use columns::age_col;

/// Column definitions of a built-in printer (kube-apiserver's
/// `pkg/printers/internalversion`).
pub(crate) fn columns(printer: Printer) -> Vec<Value> {
    let s = |n: &str, p: i64| col(n, "string", "", "", p);
    let i = |n: &str, p: i64| col(n, "integer", "", "", p);
    let mut cols = vec![name_col()];
    match printer {
        Printer::Default => {
            return vec![name_col(), col("Created At", "date", "", "", 0)];
        }
        Printer::Namespace => cols.extend([s("Status", 0), age_col()]),
        Printer::ConfigMap => cols.extend([i("Data", 0), age_col()]),
        Printer::Secret => cols.extend([s("Type", 0), i("Data", 0), age_col()]),
        Printer::Service => cols.extend([
            s("Type", 0),
            s("Cluster-IP", 0),
            s("External-IP", 0),
            s("Port(s)", 0),
            age_col(),
            s("Selector", 1),
        ]),
        Printer::ServiceAccount => cols.extend([i("Secrets", 0), age_col()]),
        Printer::Pod => cols.extend([
            s("Ready", 0),
            s("Status", 0),
            s("Restarts", 0),
            age_col(),
            s("IP", 1),
            s("Node", 1),
            s("Nominated Node", 1),
            s("Readiness Gates", 1),
        ]),
        Printer::Node => cols.extend([
            s("Status", 0),
            s("Roles", 0),
            age_col(),
            s("Version", 0),
            s("Internal-IP", 1),
            s("External-IP", 1),
            s("OS-Image", 1),
            s("Kernel-Version", 1),
            s("Container-Runtime", 1),
        ]),
        Printer::PodDisruptionBudget => cols.extend([
            s("Min Available", 0),
            s("Max Unavailable", 0),
            i("Allowed Disruptions", 0),
            age_col(),
        ]),
        Printer::ControllerRevision => {
            cols.extend([s("Controller", 0), i("Revision", 0), age_col()])
        }
        Printer::Event => {
            return vec![
                s("Last Seen", 0),
                s("Type", 0),
                s("Reason", 0),
                s("Object", 0),
                s("Message", 0),
                name_col(),
            ];
        }
        Printer::Deployment => cols.extend([
            s("Ready", 0),
            i("Up-to-date", 0),
            i("Available", 0),
            age_col(),
            s("Containers", 1),
            s("Images", 1),
            s("Selector", 1),
        ]),
        Printer::ReplicaSet => cols.extend([
            i("Desired", 0),
            i("Current", 0),
            i("Ready", 0),
            age_col(),
            s("Containers", 1),
            s("Images", 1),
            s("Selector", 1),
        ]),
        Printer::StatefulSet => {
            cols.extend([s("Ready", 0), age_col(), s("Containers", 1), s("Images", 1)])
        }
        Printer::DaemonSet => cols.extend([
            i("Desired", 0),
            i("Current", 0),
            i("Ready", 0),
            i("Up-to-date", 0),
            i("Available", 0),
            s("Node Selector", 0),
            age_col(),
            s("Containers", 1),
            s("Images", 1),
            s("Selector", 1),
        ]),
        Printer::Job => cols.extend([
            s("Status", 0),
            s("Completions", 0),
            s("Duration", 0),
            age_col(),
        ]),
        Printer::CronJob => cols.extend([
            s("Schedule", 0),
            s("Timezone", 0),
            s("Suspend", 0),
            i("Active", 0),
            s("Last Schedule", 0),
            age_col(),
        ]),
        Printer::Lease => cols.extend([s("Holder", 0), age_col()]),
        Printer::RoleBinding => cols.extend([
            s("Role", 0),
            age_col(),
            s("Users", 1),
            s("Groups", 1),
            s("ServiceAccounts", 1),
        ]),
        Printer::Webhook => cols.extend([i("Webhooks", 0), age_col()]),
        Printer::AdmissionPolicy => {
            cols.extend([i("Validations", 0), s("ParamKind", 0), age_col()]);
        }
        Printer::AdmissionPolicyBinding => {
            cols.extend([s("PolicyName", 0), s("ParamRef", 0), age_col()]);
        }
    }
    cols
}

fn str_at<'a>(o: &'a Value, ptr: &str) -> &'a str {
    o.at(ptr).and_then(Value::as_str).unwrap_or("")
}

fn int_at(o: &Value, ptr: &str) -> i64 {
    o.at(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn len_at(o: &Value, ptr: &str) -> i64 {
    match o.at(ptr) {
        Some(Value::Object(m)) => m.len() as i64,
        Some(Value::Array(a)) => a.len() as i64,
        _ => 0,
    }
}

fn none_if_empty(s: String) -> String {
    if s.is_empty() {
        "<none>".into()
    } else {
        s
    }
}

fn age(o: &Value) -> Value {
    json!(human_duration(age_secs(
        o.at("/metadata/creationTimestamp")
    )))
}

fn containers(o: &Value, ptr: &str, field: &str) -> String {
    o.at(ptr)
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| str_at(c, &format!("/{field}")).to_owned())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn selector(o: &Value, ptr: &str) -> String {
    let labels = o
        .at(&format!("{ptr}/matchLabels"))
        .or_else(|| o.at(ptr).filter(|v| v.get("matchExpressions").is_none()))
        .and_then(Value::as_object);
    none_if_empty(
        labels
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
    )
}

fn name(o: &Value) -> Value {
    json!(str_at(o, "/metadata/name"))
}

/// The cells of a built-in printer's row.
pub(crate) fn cells(printer: Printer, o: &Value) -> Vec<Value> {
    match printer {
        Printer::Default => default_row(o),
        Printer::Namespace => vec![name(o), json!(str_at(o, "/status/phase")), age(o)],
        Printer::ConfigMap => config_map(o),
        Printer::Secret => secret(o),
        Printer::Service => service(o),
        Printer::ServiceAccount => vec![name(o), json!(len_at(o, "/secrets")), age(o)],
        Printer::Pod => workloads::pod(o),
        Printer::Node => workloads::node(o),
        Printer::PodDisruptionBudget => workloads::pdb(o),
        Printer::ControllerRevision => workloads::controller_revision(o),
        Printer::Event => event(o),
        Printer::Deployment => deployment(o),
        Printer::ReplicaSet => replica_set(o),
        Printer::StatefulSet => stateful_set(o),
        Printer::DaemonSet => daemon_set(o),
        Printer::Job => workloads::job(o),
        Printer::CronJob => cron_job(o),
        Printer::Lease => vec![name(o), json!(str_at(o, "/spec/holderIdentity")), age(o)],
        Printer::RoleBinding => role_binding(o),
        Printer::Webhook => vec![name(o), json!(len_at(o, "/webhooks")), age(o)],
        Printer::AdmissionPolicy => admission_policy(o),
        Printer::AdmissionPolicyBinding => admission_policy_binding(o),
    }
}

/// The cells of the default printer: name and creation time.
fn default_row(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        o.at("/metadata/creationTimestamp")
            .cloned()
            .unwrap_or(Value::Null),
    ]
}

/// The cells of a ConfigMap row.
fn config_map(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(len_at(o, "/data") + len_at(o, "/binaryData")),
        age(o),
    ]
}

/// The cells of a Secret row.
fn secret(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(str_at(o, "/type")),
        json!(len_at(o, "/data")),
        age(o),
    ]
}

/// The cells of a Service row.
fn service(o: &Value) -> Vec<Value> {
    let ports = o
        .at("/spec/ports")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    let node = p
                        .get("nodePort")
                        .and_then(Value::as_i64)
                        .map(|n| format!(":{n}"))
                        .unwrap_or_default();
                    format!("{}{node}/{}", int_at(p, "/port"), str_at(p, "/protocol"))
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let ty = str_at(o, "/spec/type");
    let external = if ty == "ExternalName" {
        str_at(o, "/spec/externalName").to_owned()
    } else {
        "<none>".to_owned()
    };
    let cip = str_at(o, "/spec/clusterIP");
    vec![
        name(o),
        json!(ty),
        json!(if cip.is_empty() { "<none>" } else { cip }),
        json!(external),
        json!(none_if_empty(ports)),
        age(o),
        json!(selector(o, "/spec/selector")),
    ]
}

/// The cells of an Event row.
fn event(o: &Value) -> Vec<Value> {
    let last = o
        .at("/lastTimestamp")
        .filter(|v| !v.is_null())
        .or_else(|| o.at("/eventTime"))
        .or_else(|| o.at("/metadata/creationTimestamp"));
    vec![
        json!(human_duration(age_secs(last))),
        json!(str_at(o, "/type")),
        json!(str_at(o, "/reason")),
        json!(format!(
            "{}/{}",
            str_at(o, "/involvedObject/kind").to_ascii_lowercase(),
            str_at(o, "/involvedObject/name")
        )),
        json!(str_at(o, "/message")),
        name(o),
    ]
}

/// The cells of a Deployment row.
fn deployment(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(format!(
            "{}/{}",
            int_at(o, "/status/readyReplicas"),
            int_at(o, "/spec/replicas")
        )),
        json!(int_at(o, "/status/updatedReplicas")),
        json!(int_at(o, "/status/availableReplicas")),
        age(o),
        json!(containers(o, "/spec/template/spec/containers", "name")),
        json!(containers(o, "/spec/template/spec/containers", "image")),
        json!(selector(o, "/spec/selector")),
    ]
}

/// The cells of a ReplicaSet row.
fn replica_set(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(int_at(o, "/spec/replicas")),
        json!(int_at(o, "/status/replicas")),
        json!(int_at(o, "/status/readyReplicas")),
        age(o),
        json!(containers(o, "/spec/template/spec/containers", "name")),
        json!(containers(o, "/spec/template/spec/containers", "image")),
        json!(selector(o, "/spec/selector")),
    ]
}

/// The cells of a StatefulSet row.
fn stateful_set(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(format!(
            "{}/{}",
            int_at(o, "/status/readyReplicas"),
            int_at(o, "/spec/replicas")
        )),
        age(o),
        json!(containers(o, "/spec/template/spec/containers", "name")),
        json!(containers(o, "/spec/template/spec/containers", "image")),
    ]
}

/// The cells of a DaemonSet row.
fn daemon_set(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(int_at(o, "/status/desiredNumberScheduled")),
        json!(int_at(o, "/status/currentNumberScheduled")),
        json!(int_at(o, "/status/numberReady")),
        json!(int_at(o, "/status/updatedNumberScheduled")),
        json!(int_at(o, "/status/numberAvailable")),
        json!(selector(o, "/spec/template/spec/nodeSelector")),
        age(o),
        json!(containers(o, "/spec/template/spec/containers", "name")),
        json!(containers(o, "/spec/template/spec/containers", "image")),
        json!(selector(o, "/spec/selector")),
    ]
}

/// The cells of a CronJob row.
fn cron_job(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(str_at(o, "/spec/schedule")),
        json!(none_if_empty(str_at(o, "/spec/timeZone").to_owned())),
        json!(o
            .at("/spec/suspend")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            .to_string()
            .replace("true", "True")
            .replace("false", "False")),
        json!(len_at(o, "/status/active")),
        json!(o
            .at("/status/lastScheduleTime")
            .map(|t| human_duration(age_secs(Some(t))))
            .unwrap_or_else(|| "<none>".into())),
        age(o),
    ]
}

/// The cells of a RoleBinding row.
fn role_binding(o: &Value) -> Vec<Value> {
    let subjects = |kind: &str| {
        o.at("/subjects")
            .and_then(Value::as_array)
            .map(|ss| {
                ss.iter()
                    .filter(|s| str_at(s, "/kind") == kind)
                    .map(|s| {
                        if kind == "ServiceAccount" {
                            format!("{}/{}", str_at(s, "/namespace"), str_at(s, "/name"))
                        } else {
                            str_at(s, "/name").to_owned()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    vec![
        name(o),
        json!(format!(
            "{}/{}",
            str_at(o, "/roleRef/kind"),
            str_at(o, "/roleRef/name")
        )),
        age(o),
        json!(subjects("User")),
        json!(subjects("Group")),
        json!(subjects("ServiceAccount")),
    ]
}

/// The cells of a ValidatingAdmissionPolicy row.
fn admission_policy(o: &Value) -> Vec<Value> {
    let param_kind = match o.at("/spec/paramKind").filter(|k| !k.is_null()) {
        Some(k) => format!("{}/{}", str_at(k, "/apiVersion"), str_at(k, "/kind")),
        None => "<unset>".into(),
    };
    vec![
        name(o),
        json!(len_at(o, "/spec/validations")),
        json!(param_kind),
        age(o),
    ]
}

/// The cells of a ValidatingAdmissionPolicyBinding row.
fn admission_policy_binding(o: &Value) -> Vec<Value> {
    let param_ref = match o.at("/spec/paramRef").filter(|r| !r.is_null()) {
        // Whether the parameter kind is namespaced is not known
        // here: a name without a namespace gets `*`.
        Some(r) if !str_at(r, "/name").is_empty() => {
            let namespace = match str_at(r, "/namespace") {
                "" => "*",
                ns => ns,
            };
            format!("{namespace}/{}", str_at(r, "/name"))
        }
        Some(r) if r.get("selector").is_some_and(|s| !s.is_null()) => selector(r, "/selector"),
        _ => "<unset>".into(),
    };
    vec![
        name(o),
        json!(str_at(o, "/spec/policyName")),
        json!(param_ref),
        age(o),
    ]
}
