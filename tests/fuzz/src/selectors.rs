//! The API server's label and field selector parsers (apimachinery's
//! grammar), run as a list of pods runs them, then matched against an
//! object. A parse error is a 400 whose message may quote the selector,
//! but not repeat it without bound.
//!
//! Input: the label selector on the first line, the field selector on the
//! second, and the object as JSON after them (a pod with labels when it is
//! not JSON).

use serde_json::{json, Value};

use crate::input::first_line;
use crate::{bounded, timed, Checked, Limits};

pub(crate) fn check(data: &[u8], limits: &Limits) -> Checked {
    let (label, rest) = first_line(data);
    let (field, object) = first_line(rest);
    let label = String::from_utf8_lossy(label);
    let field = String::from_utf8_lossy(field);
    let object: Value = serde_json::from_slice(object).unwrap_or_else(|_| {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web", "tier": "front", "n": "7"}},
            "spec": {"nodeName": "node-1", "restartPolicy": "Always"},
            "status": {"phase": "Running"}
        })
    });
    let outcome = timed(limits, "parsing and matching the selectors", || {
        kubeforge_apiserver::fuzzing::selectors(&label, &field, &object)
    })?;
    for (what, answer, selector) in [
        ("the labelSelector error", &outcome.label, &label),
        ("the fieldSelector error", &outcome.field, &field),
    ] {
        // apimachinery reports every invalid value of a requirement, each
        // message quoting it beside a fixed explanation of up to ~300
        // bytes (`labels.NewRequirement`, `validation.IsValidLabelValue`),
        // so kube-apiserver's own answer to distinct two-byte bad values
        // is ~150 bytes per input byte. The bound catches growth beyond
        // that line, not the line.
        if let Err(message) = answer {
            bounded(what, message.len(), selector.len(), 160, 1024)?;
        }
    }
    Ok(())
}
