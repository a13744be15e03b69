//! `as=Table` output (`meta.k8s.io/v1` Table): column definitions and cells
//! for the common built-ins (the columns kubectl users know from
//! kube-apiserver's printers), the default Name / Created At table, and CRD
//! `additionalPrinterColumns` evaluated with a small JSONPath subset.

use serde_json::{json, Map, Value};

use super::registry::ResourceDef;
use super::util::{age_secs, human_duration};

/// Which built-in printer a kind uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Printer {
    Default,
    Namespace,
    ConfigMap,
    Secret,
    Service,
    ServiceAccount,
    Pod,
    Event,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    Job,
    CronJob,
    Lease,
    RoleBinding,
    Webhook,
}

/// What a row's `object` holds (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(v: Option<&str>) -> Result<Self, String> {
        match v {
            None | Some("") | Some("Metadata") => Ok(Self::Metadata),
            Some("None") => Ok(Self::None),
            Some("Object") => Ok(Self::Object),
            Some(other) => Err(format!(
                "includeObject: Unsupported value: \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
            )),
        }
    }
}

fn col(name: &str, ty: &str, format: &str, desc: &str, priority: i64) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": desc, "priority": priority})
}

fn name_col() -> Value {
    col("Name", "string", "name", "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names", 0)
}

fn age_col() -> Value {
    col("Age", "string", "", "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata", 0)
}

/// Column definitions for `def` at `version`.
pub(crate) fn columns(def: &ResourceDef, version: &str) -> Vec<Value> {
    if let Some(custom) = def.custom() {
        let mut cols = vec![name_col()];
        match custom.columns.get(version) {
            Some(extra) if !extra.is_empty() => {
                for c in extra {
                    cols.push(col(
                        &c.name,
                        &c.type_,
                        &c.format,
                        &c.description,
                        c.priority,
                    ));
                }
            }
            _ => cols.push(col("Age", "date", "", "", 0)),
        }
        return cols;
    }
    let printer = def.builtin().map_or(Printer::Default, |b| b.printer);
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
    }
    cols
}

fn str_at<'a>(o: &'a Value, ptr: &str) -> &'a str {
    o.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn int_at(o: &Value, ptr: &str) -> i64 {
    o.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn len_at(o: &Value, ptr: &str) -> i64 {
    match o.pointer(ptr) {
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
        o.pointer("/metadata/creationTimestamp")
    )))
}

fn containers(o: &Value, ptr: &str, field: &str) -> String {
    o.pointer(ptr)
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
        .pointer(&format!("{ptr}/matchLabels"))
        .or_else(|| {
            o.pointer(ptr)
                .filter(|v| v.get("matchExpressions").is_none())
        })
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

/// The cells of one row.
pub(crate) fn cells(def: &ResourceDef, version: &str, o: &Value) -> Vec<Value> {
    if let Some(custom) = def.custom() {
        let mut cells = vec![name(o)];
        match custom.columns.get(version) {
            Some(extra) if !extra.is_empty() => {
                for c in extra {
                    cells.push(column_cell(o, &c.json_path, &c.type_));
                }
            }
            _ => cells.push(date_cell(o.pointer("/metadata/creationTimestamp"))),
        }
        return cells;
    }
    let printer = def.builtin().map_or(Printer::Default, |b| b.printer);
    match printer {
        Printer::Default => vec![
            name(o),
            o.pointer("/metadata/creationTimestamp")
                .cloned()
                .unwrap_or(Value::Null),
        ],
        Printer::Namespace => vec![name(o), json!(str_at(o, "/status/phase")), age(o)],
        Printer::ConfigMap => vec![
            name(o),
            json!(len_at(o, "/data") + len_at(o, "/binaryData")),
            age(o),
        ],
        Printer::Secret => vec![
            name(o),
            json!(str_at(o, "/type")),
            json!(len_at(o, "/data")),
            age(o),
        ],
        Printer::Service => {
            let ports = o
                .pointer("/spec/ports")
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
        Printer::ServiceAccount => vec![name(o), json!(len_at(o, "/secrets")), age(o)],
        Printer::Pod => {
            let total = len_at(o, "/spec/containers");
            let statuses = o
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array);
            let ready = statuses.map_or(0, |s| {
                s.iter()
                    .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
                    .count()
            });
            let restarts: i64 =
                statuses.map_or(0, |s| s.iter().map(|c| int_at(c, "/restartCount")).sum());
            let mut status = str_at(o, "/status/reason").to_owned();
            if status.is_empty() {
                status = str_at(o, "/status/phase").to_owned();
            }
            if o.pointer("/metadata/deletionTimestamp").is_some() {
                status = "Terminating".into();
            }
            vec![
                name(o),
                json!(format!("{ready}/{total}")),
                json!(status),
                json!(restarts.to_string()),
                age(o),
                json!(none_if_empty(str_at(o, "/status/podIP").to_owned())),
                json!(none_if_empty(str_at(o, "/spec/nodeName").to_owned())),
                json!(none_if_empty(
                    str_at(o, "/status/nominatedNodeName").to_owned()
                )),
                json!("<none>"),
            ]
        }
        Printer::Event => {
            let last = o
                .pointer("/lastTimestamp")
                .filter(|v| !v.is_null())
                .or_else(|| o.pointer("/eventTime"))
                .or_else(|| o.pointer("/metadata/creationTimestamp"));
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
        Printer::Deployment => vec![
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
        ],
        Printer::ReplicaSet => vec![
            name(o),
            json!(int_at(o, "/spec/replicas")),
            json!(int_at(o, "/status/replicas")),
            json!(int_at(o, "/status/readyReplicas")),
            age(o),
            json!(containers(o, "/spec/template/spec/containers", "name")),
            json!(containers(o, "/spec/template/spec/containers", "image")),
            json!(selector(o, "/spec/selector")),
        ],
        Printer::StatefulSet => vec![
            name(o),
            json!(format!(
                "{}/{}",
                int_at(o, "/status/readyReplicas"),
                int_at(o, "/spec/replicas")
            )),
            age(o),
            json!(containers(o, "/spec/template/spec/containers", "name")),
            json!(containers(o, "/spec/template/spec/containers", "image")),
        ],
        Printer::DaemonSet => vec![
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
        ],
        Printer::Job => {
            let completions = o
                .pointer("/spec/completions")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let succeeded = int_at(o, "/status/succeeded");
            let conds = o.pointer("/status/conditions").and_then(Value::as_array);
            let has = |t: &str| {
                conds.is_some_and(|cs| {
                    cs.iter()
                        .any(|c| str_at(c, "/type") == t && str_at(c, "/status") == "True")
                })
            };
            let status = if has("Complete") {
                "Complete"
            } else if has("Failed") {
                "Failed"
            } else if o.pointer("/metadata/deletionTimestamp").is_some() {
                "Terminating"
            } else if has("Suspended") {
                "Suspended"
            } else {
                "Running"
            };
            vec![
                name(o),
                json!(status),
                json!(format!("{succeeded}/{completions}")),
                json!(""),
                age(o),
            ]
        }
        Printer::CronJob => vec![
            name(o),
            json!(str_at(o, "/spec/schedule")),
            json!(none_if_empty(str_at(o, "/spec/timeZone").to_owned())),
            json!(o
                .pointer("/spec/suspend")
                .and_then(Value::as_bool)
                .unwrap_or(false)
                .to_string()
                .replace("true", "True")
                .replace("false", "False")),
            json!(len_at(o, "/status/active")),
            json!(o
                .pointer("/status/lastScheduleTime")
                .map(|t| human_duration(age_secs(Some(t))))
                .unwrap_or_else(|| "<none>".into())),
            age(o),
        ],
        Printer::Lease => vec![name(o), json!(str_at(o, "/spec/holderIdentity")), age(o)],
        Printer::RoleBinding => {
            let subjects = |kind: &str| {
                o.pointer("/subjects")
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
        Printer::Webhook => vec![name(o), json!(len_at(o, "/webhooks")), age(o)],
    }
}

/// Evaluates a printer-column JSONPath and types the result.
fn column_cell(o: &Value, path: &str, ty: &str) -> Value {
    let found = json_path(o, path);
    let v = match found.as_slice() {
        [] => return Value::Null,
        [one] => (*one).clone(),
        many => Value::String(
            many.iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(","),
        ),
    };
    match (ty, &v) {
        ("date", Value::String(_)) => date_cell(Some(&v)),
        ("integer", Value::Number(_))
        | ("number", Value::Number(_))
        | ("boolean", Value::Bool(_)) => v,
        ("string", Value::String(_)) => v,
        ("string", other) => Value::String(other.to_string()),
        _ => v,
    }
}

/// A date column as the CRD table convertor renders it: the age of a
/// timestamp (`5m`), the text itself when it is not one.
fn date_cell(v: Option<&Value>) -> Value {
    match v.and_then(Value::as_str) {
        Some(s) if s.parse::<jiff::Timestamp>().is_ok() => json!(human_duration(age_secs(v))),
        Some(s) => json!(s),
        None => Value::Null,
    }
}

/// A JSONPath subset: `.a.b`, `['a']`, `[0]`, `[*]`, `[?(@.k=="v")]`.
pub(crate) fn json_path<'a>(root: &'a Value, path: &str) -> Vec<&'a Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let mut cur: Vec<&Value> = vec![root];
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'$' => i += 1,
            b'.' => {
                let start = i + 1;
                let mut end = start;
                while end < bytes.len() && bytes[end] != b'.' && bytes[end] != b'[' {
                    end += 1;
                }
                let field = &path[start..end];
                if !field.is_empty() {
                    cur = cur.into_iter().filter_map(|v| v.get(field)).collect();
                }
                i = end;
            }
            b'[' => {
                let Some(close) = find_close(path, i) else {
                    return Vec::new();
                };
                let inner = path[i + 1..close].trim();
                cur = step_bracket(cur, inner);
                i = close + 1;
            }
            _ => {
                // A leading field name without a dot.
                let start = i;
                let mut end = start;
                while end < bytes.len() && bytes[end] != b'.' && bytes[end] != b'[' {
                    end += 1;
                }
                let field = &path[start..end];
                cur = cur.into_iter().filter_map(|v| v.get(field)).collect();
                i = end;
            }
        }
    }
    cur
}

fn find_close(path: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    for (j, c) in path[open..].char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + j);
                }
            }
            _ => {}
        }
    }
    None
}

fn step_bracket<'a>(cur: Vec<&'a Value>, inner: &str) -> Vec<&'a Value> {
    if inner == "*" {
        return cur
            .into_iter()
            .flat_map(|v| match v {
                Value::Array(a) => a.iter().collect::<Vec<_>>(),
                Value::Object(m) => m.values().collect(),
                _ => Vec::new(),
            })
            .collect();
    }
    if let Ok(n) = inner.parse::<i64>() {
        return cur
            .into_iter()
            .filter_map(|v| {
                let a = v.as_array()?;
                let idx = if n < 0 { a.len() as i64 + n } else { n };
                usize::try_from(idx).ok().and_then(|i| a.get(i))
            })
            .collect();
    }
    if let Some(q) = inner
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
    {
        return cur.into_iter().filter_map(|v| v.get(q)).collect();
    }
    if let Some(filter) = inner.strip_prefix("?(").and_then(|s| s.strip_suffix(')')) {
        let (lhs, rhs, negate) = if let Some((l, r)) = filter.split_once("!=") {
            (l, r, true)
        } else if let Some((l, r)) = filter.split_once("==") {
            (l, r, false)
        } else {
            return Vec::new();
        };
        let field = lhs.trim().trim_start_matches('@').trim_start_matches('.');
        let want = rhs.trim().trim_matches('"').trim_matches('\'');
        return cur
            .into_iter()
            .flat_map(|v| {
                v.as_array()
                    .map(|a| a.iter().collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .filter(|item| {
                let got = json_path(item, &format!(".{field}"));
                let text = got.first().map(|g| match g {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                (text.as_deref() == Some(want)) != negate
            })
            .collect();
    }
    Vec::new()
}

/// `PartialObjectMetadata` for an object.
pub(crate) fn partial_metadata(o: &Value, version: &str) -> Value {
    let mut m = Map::new();
    m.insert("kind".into(), json!("PartialObjectMetadata"));
    m.insert("apiVersion".into(), json!(format!("meta.k8s.io/{version}")));
    m.insert(
        "metadata".into(),
        o.get("metadata").cloned().unwrap_or_else(|| json!({})),
    );
    Value::Object(m)
}

/// One row.
pub(crate) fn row(
    def: &ResourceDef,
    version: &str,
    table_version: &str,
    o: &Value,
    include: IncludeObject,
) -> Value {
    let mut r = json!({"cells": cells(def, version, o)});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => r["object"] = partial_metadata(o, table_version),
        IncludeObject::Object => r["object"] = o.clone(),
    }
    r
}

/// A Table of `rows`.
pub(crate) fn table(
    table_version: &str,
    columns: Option<Vec<Value>>,
    rows: Vec<Value>,
    rv: &str,
    cont: Option<&str>,
) -> Value {
    let mut meta = json!({"resourceVersion": rv});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{table_version}"),
        "metadata": meta,
        "columnDefinitions": columns.map_or(Value::Null, Value::Array),
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_path_subset() {
        let o = json!({"spec": {"size": 3, "items": [{"n": "a"}, {"n": "b"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Other", "status": "False"}]}});
        assert_eq!(json_path(&o, ".spec.size"), vec![&json!(3)]);
        assert_eq!(
            json_path(&o, ".status.conditions[?(@.type==\"Ready\")].status"),
            vec![&json!("True")]
        );
        assert_eq!(json_path(&o, ".spec.items[*].n").len(), 2);
        assert_eq!(json_path(&o, ".spec.items[1].n"), vec![&json!("b")]);
        assert!(json_path(&o, ".spec.missing").is_empty());
        assert_eq!(column_cell(&o, ".spec.items[*].n", "string"), json!("a,b"));
    }
}
