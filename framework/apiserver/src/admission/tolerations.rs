//! The DefaultTolerationSeconds admission plugin: with simulated nodes, a
//! new pod tolerates `node.kubernetes.io/not-ready` and
//! `node.kubernetes.io/unreachable` (NoExecute) for the configured seconds
//! (kube-apiserver's default 300) unless it says otherwise, which is how
//! long it stays on a failed node before the taint manager evicts it.

use serde_json::{json, Value};

use crate::registry::state::Shared;
use crate::registry::ResourceDef;

const TAINTS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// Adds the default tolerations to a pod being created.
pub(crate) fn admit(shared: &Shared, def: &ResourceDef, pod: &mut Value) {
    let Some(seconds) = shared.options.default_toleration_seconds else {
        return;
    };
    if !def.is(crate::registry::BuiltinKind::Pod) {
        return;
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let list = spec.entry("tolerations").or_insert_with(|| json!([]));
    let Some(list) = list.as_array_mut() else {
        return;
    };
    for taint in TAINTS {
        let covered = list.iter().any(|t| {
            let key = t.get("key").and_then(Value::as_str).unwrap_or("");
            let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
            let op = t.get("operator").and_then(Value::as_str).unwrap_or("Equal");
            (key == taint || (key.is_empty() && op == "Exists"))
                && (effect.is_empty() || effect == "NoExecute")
        });
        if !covered {
            list.push(json!({
                "key": taint, "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": seconds,
            }));
        }
    }
}
