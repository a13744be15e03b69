//! Graceful deletion of pods (the pod strategy's `CheckGracefulDelete` and
//! `rest.BeforeDelete`): a scheduled, unfinished pod is not removed at
//! once but marked with `deletionTimestamp` = now + grace period and
//! `deletionGracePeriodSeconds`, and the kubelet removes it once its
//! containers stopped; a later delete may only shorten the period. Only
//! when the server runs simulated kubelets: without one nothing would
//! ever finish the deletion.

use serde_json::Value;

use crate::registry::state::Shared;
use crate::registry::ResourceDef;

/// What a delete does to a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Graceful {
    /// Not graceful: the usual rules (finalizers, then removal).
    No,
    /// Mark (or re-mark) with this grace period and keep the object.
    Mark(i64),
    /// Already being deleted gracefully with no shorter period asked:
    /// nothing to do.
    Pending,
}

/// How deleting `pod` with `grace` (DeleteOptions.gracePeriodSeconds)
/// proceeds.
pub(super) fn check(
    shared: &Shared,
    def: &ResourceDef,
    pod: &Value,
    grace: Option<i64>,
) -> Graceful {
    if !shared.options.kubelets || !def.is(crate::registry::BuiltinKind::Pod) {
        return Graceful::No;
    }
    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        let current = pod
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if current == 0 {
            return Graceful::No;
        }
        return match grace {
            Some(g) if g < current && g > 0 => Graceful::Mark(g),
            Some(0) => Graceful::No,
            _ => Graceful::Pending,
        };
    }
    let mut period = grace.unwrap_or_else(|| {
        pod.pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(30)
    });
    let unscheduled = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if unscheduled || matches!(phase, Some("Succeeded" | "Failed")) {
        period = 0;
    }
    if period > 0 {
        Graceful::Mark(period)
    } else {
        Graceful::No
    }
}

/// `deletionTimestamp` for a grace period starting now.
pub(super) fn deadline(period: i64) -> String {
    let at = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(period))
        .unwrap_or_else(|_| jiff::Timestamp::now());
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
