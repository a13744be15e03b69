//! What decides where a pod may run, shared by the scheduler, the
//! DaemonSet controller and the taint manager: taints and tolerations,
//! `nodeSelector` and required node affinity, and resource requests
//! against allocatable (quantities parsed as kube's `resource.Quantity`).

use crate::machinery::util::Pointer;
use serde_json::Value;

fn str_at<'a>(o: &'a Value, ptr: &str) -> &'a str {
    o.at(ptr).and_then(Value::as_str).unwrap_or("")
}

/// A `resource.Quantity` in base units (`"100m"` = 0.1, `"1Ki"` = 1024).
pub(crate) fn quantity(text: &str) -> Option<f64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let n: f64 = num.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "u" => 1e-6,
        "n" => 1e-9,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        s if s.starts_with('e') || s.starts_with('E') => 10f64.powi(s[1..].parse().ok()?),
        _ => return None,
    };
    Some(n * scale)
}

fn q(v: Option<&Value>) -> f64 {
    match v {
        Some(Value::String(s)) => quantity(s).unwrap_or(0.0),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// A pod's requests: (cpu, memory), the larger of the containers' sum and
/// any init container's.
pub(crate) fn requests(pod: &Value) -> (f64, f64) {
    let sum = |ptr: &str| -> (f64, f64) {
        pod.at(ptr)
            .and_then(Value::as_array)
            .map_or((0.0, 0.0), |cs| {
                cs.iter().fold((0.0, 0.0), |(c, m), x| {
                    (
                        c + q(x.at("/resources/requests/cpu")),
                        m + q(x.at("/resources/requests/memory")),
                    )
                })
            })
    };
    let (c, m) = sum("/spec/containers");
    let (ic, im) = pod
        .at("/spec/initContainers")
        .and_then(Value::as_array)
        .map_or((0.0, 0.0), |cs| {
            cs.iter().fold((0.0f64, 0.0f64), |(c, m), x| {
                (
                    c.max(q(x.at("/resources/requests/cpu"))),
                    m.max(q(x.at("/resources/requests/memory"))),
                )
            })
        });
    (c.max(ic), m.max(im))
}

/// A node's allocatable (cpu, memory, pods).
pub(crate) fn allocatable(node: &Value) -> (f64, f64, f64) {
    (
        q(node.at("/status/allocatable/cpu")),
        q(node.at("/status/allocatable/memory")),
        q(node.at("/status/allocatable/pods")),
    )
}

/// Whether `toleration` tolerates `taint` (`ToleratesTaint`).
pub(crate) fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let effect = str_at(toleration, "/effect");
    if !effect.is_empty() && effect != str_at(taint, "/effect") {
        return false;
    }
    let key = str_at(toleration, "/key");
    match str_at(toleration, "/operator") {
        "Exists" => key.is_empty() || key == str_at(taint, "/key"),
        _ => {
            key == str_at(taint, "/key") && str_at(toleration, "/value") == str_at(taint, "/value")
        }
    }
}

/// The node's taints.
pub(crate) fn taints(node: &Value) -> Vec<Value> {
    node.at("/spec/taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The pod's tolerations.
pub(crate) fn tolerations(pod: &Value) -> Vec<Value> {
    pod.at("/spec/tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The first NoSchedule/NoExecute taint the pod does not tolerate.
pub(crate) fn untolerated(pod: &Value, node: &Value) -> Option<Value> {
    let tols = tolerations(pod);
    taints(node).into_iter().find(|t| {
        matches!(str_at(t, "/effect"), "NoSchedule" | "NoExecute")
            && !tols.iter().any(|tol| tolerates(tol, t))
    })
}

fn requirement(expr: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = expr
        .get("values")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match str_at(expr, "/operator") {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), Some(bound)) = (
                value.and_then(|v| v.parse::<i64>().ok()),
                values.first().and_then(|b| b.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if str_at(expr, "/operator") == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

/// `nodeSelector` and required node affinity.
pub(crate) fn selects(pod: &Value, node: &Value) -> bool {
    let label = |k: &str| {
        node.at("/metadata/labels")
            .and_then(|l| l.get(k))
            .and_then(Value::as_str)
    };
    if let Some(sel) = pod.at("/spec/nodeSelector").and_then(Value::as_object) {
        if !sel.iter().all(|(k, v)| label(k) == v.as_str()) {
            return false;
        }
    }
    let Some(terms) = pod
        .at("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
    else {
        return true;
    };
    let name = str_at(node, "/metadata/name");
    terms.iter().any(|term| {
        let exprs = term
            .get("matchExpressions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let fields = term
            .get("matchFields")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        (!exprs.is_empty() || !fields.is_empty())
            && exprs
                .iter()
                .all(|e| requirement(e, label(str_at(e, "/key"))))
            && fields.iter().all(|f| {
                let v = (str_at(f, "/key") == "metadata.name").then_some(name);
                requirement(f, v)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities() {
        assert_eq!(quantity("100m"), Some(0.1));
        assert_eq!(quantity("2"), Some(2.0));
        assert_eq!(quantity("1Gi"), Some(1024.0 * 1024.0 * 1024.0));
        assert_eq!(quantity("1e3"), Some(1000.0));
        assert_eq!(quantity("x"), None);
    }

    #[test]
    fn taints_and_selectors() {
        let node = json!({"metadata": {"name": "n1", "labels": {"disk": "ssd"}},
            "spec": {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]}});
        let pod = json!({"spec": {"nodeSelector": {"disk": "ssd"}}});
        assert!(untolerated(&pod, &node).is_some());
        let pod = json!({"spec": {"nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "gpu", "operator": "Equal", "value": "yes"}]}});
        assert!(untolerated(&pod, &node).is_none());
        assert!(selects(&pod, &node));
        let pod = json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}}}});
        assert!(!selects(&pod, &node));
    }
}
