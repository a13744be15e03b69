//! Deployment status (`sync.go` `calculateStatus`, `progress.go`
//! `syncRolloutStatus`): the replica counts over its ReplicaSets, the
//! `Available` condition (`MinimumReplicasAvailable` /
//! `MinimumReplicasUnavailable`), the `Progressing` condition
//! (`NewReplicaSetCreated`, `FoundNewReplicaSet`, `ReplicaSetUpdated`,
//! `NewReplicaSetAvailable`, `ProgressDeadlineExceeded`) with
//! `lastUpdateTime` moving only on progress, and the `ReplicaFailure`
//! condition copied from the new ReplicaSet.

use serde_json::{json, Value};

use super::util::{
    actual_count, available_count, desired, max_unavailable, ready_count, replica_count, Rs,
};
use crate::machinery::util;
use crate::machinery::util::Pointer;

pub(crate) const AVAILABLE: &str = "Available";
pub(crate) const PROGRESSING: &str = "Progressing";
pub(crate) const REPLICA_FAILURE: &str = "ReplicaFailure";
pub(crate) const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
pub(crate) const TIMED_OUT: &str = "ProgressDeadlineExceeded";

/// `NewDeploymentCondition`.
pub(crate) fn condition(ty: &str, status: &str, reason: &str, message: &str) -> Value {
    let now = util::now();
    json!({
        "type": ty, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
        "reason": reason, "message": message,
    })
}

fn conds(status: &Value) -> Vec<Value> {
    status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The condition of type `ty`.
pub(crate) fn get<'a>(status: &'a Value, ty: &str) -> Option<&'a Value> {
    status
        .get("conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
}

fn field<'a>(c: &'a Value, f: &str) -> &'a str {
    c.get(f).and_then(Value::as_str).unwrap_or("")
}

/// `SetDeploymentCondition`: no change when status and reason match;
/// the transition time kept when only the reason changes.
pub(crate) fn set(status: &mut Value, mut cond: Value) {
    let ty = field(&cond, "type").to_owned();
    if let Some(cur) = get(status, &ty) {
        if field(cur, "status") == field(&cond, "status")
            && field(cur, "reason") == field(&cond, "reason")
        {
            return;
        }
        if field(cur, "status") == field(&cond, "status") {
            cond["lastTransitionTime"] = cur["lastTransitionTime"].clone();
        }
    }
    let mut list: Vec<Value> = conds(status)
        .into_iter()
        .filter(|c| field(c, "type") != ty)
        .collect();
    list.push(cond);
    status["conditions"] = json!(list);
}

/// `RemoveDeploymentCondition`.
pub(crate) fn remove(status: &mut Value, ty: &str) {
    let list: Vec<Value> = conds(status)
        .into_iter()
        .filter(|c| field(c, "type") != ty)
        .collect();
    if list.is_empty() {
        if let Some(m) = status.as_object_mut() {
            m.remove("conditions");
        }
    } else {
        status["conditions"] = json!(list);
    }
}

fn int(v: &Value, f: &str) -> i64 {
    v.get(f).and_then(Value::as_i64).unwrap_or(0)
}

/// `calculateStatus`.
pub(crate) fn calculate(d: &Value, all: &[&Rs], new_rs: Option<&Rs>) -> Value {
    let available = available_count(all);
    let total = replica_count(all);
    let mut status = d.get("status").cloned().unwrap_or_else(|| json!({}));
    if !status.is_object() {
        status = json!({});
    }
    status["observedGeneration"] = json!(d
        .at("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0));
    status["replicas"] = json!(actual_count(all));
    status["updatedReplicas"] = json!(new_rs.map_or(0, |r| r.status_replicas()));
    status["readyReplicas"] = json!(ready_count(all));
    status["availableReplicas"] = json!(available);
    status["unavailableReplicas"] = json!((total - available).max(0));
    if available >= desired(d) - max_unavailable(d) {
        set(
            &mut status,
            condition(
                AVAILABLE,
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            ),
        );
    } else {
        set(
            &mut status,
            condition(
                AVAILABLE,
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            ),
        );
    }
    status
}

/// `DeploymentComplete`.
pub(crate) fn complete(d: &Value, status: &Value) -> bool {
    let want = desired(d);
    int(status, "updatedReplicas") == want
        && int(status, "replicas") == want
        && int(status, "availableReplicas") == want
        && int(status, "observedGeneration")
            >= d.at("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0)
}

/// `DeploymentProgressing`: more updated, fewer old, more ready or more
/// available replicas than the last status.
fn progressing(d: &Value, new: &Value) -> bool {
    let old = d.get("status").cloned().unwrap_or_else(|| json!({}));
    let old_old = int(&old, "replicas") - int(&old, "updatedReplicas");
    let new_old = int(new, "replicas") - int(new, "updatedReplicas");
    int(new, "updatedReplicas") > int(&old, "updatedReplicas")
        || new_old < old_old
        || int(new, "readyReplicas") > int(&old, "readyReplicas")
        || int(new, "availableReplicas") > int(&old, "availableReplicas")
}

/// The progress deadline, when set.
pub(crate) fn deadline(d: &Value) -> Option<i64> {
    d.at("/spec/progressDeadlineSeconds")
        .and_then(Value::as_i64)
        .filter(|s| *s != i64::from(i32::MAX))
}

/// `DeploymentTimedOut`.
fn timed_out(d: &Value, status: &Value) -> bool {
    let Some(secs) = deadline(d) else {
        return false;
    };
    let Some(c) = get(status, PROGRESSING) else {
        return false;
    };
    match field(c, "reason") {
        NEW_RS_AVAILABLE => false,
        TIMED_OUT => true,
        _ => field(c, "lastUpdateTime")
            .parse::<jiff::Timestamp>()
            .is_ok_and(|t| t.as_second() + secs < jiff::Timestamp::now().as_second()),
    }
}

/// `syncRolloutStatus`: the status to write, and when to look again for a
/// deadline (`requeueStuckDeployment`).
pub(crate) fn rollout(d: &Value, all: &[&Rs], new_rs: Option<&Rs>) -> (Value, Option<i64>) {
    let mut status = calculate(d, all, new_rs);
    if deadline(d).is_none() {
        remove(&mut status, PROGRESSING);
    }
    let current = d.get("status").and_then(|s| get(s, PROGRESSING)).cloned();
    let is_complete = int(&status, "replicas") == int(&status, "updatedReplicas")
        && current
            .as_ref()
            .is_some_and(|c| field(c, "reason") == NEW_RS_AVAILABLE);
    if deadline(d).is_some() && !is_complete {
        let name = new_rs.map(Rs::name);
        if complete(d, &status) {
            let msg = match name {
                Some(n) => format!("ReplicaSet \"{n}\" has successfully progressed."),
                None => "Deployment has successfully progressed.".to_owned(),
            };
            set(
                &mut status,
                condition(PROGRESSING, "True", NEW_RS_AVAILABLE, &msg),
            );
        } else if progressing(d, &status) {
            let msg = match name {
                Some(n) => format!("ReplicaSet \"{n}\" is progressing."),
                None => "Deployment is progressing.".to_owned(),
            };
            let mut cond = condition(PROGRESSING, "True", "ReplicaSetUpdated", &msg);
            if let Some(cur) = &current {
                if field(cur, "status") == "True" {
                    cond["lastTransitionTime"] = cur["lastTransitionTime"].clone();
                }
                remove(&mut status, PROGRESSING);
            }
            set(&mut status, cond);
        } else if timed_out(d, &status) {
            let msg = match name {
                Some(n) => format!("ReplicaSet \"{n}\" has timed out progressing."),
                None => "Deployment has timed out progressing.".to_owned(),
            };
            set(
                &mut status,
                condition(PROGRESSING, "False", TIMED_OUT, &msg),
            );
        }
    }
    let new_rs_tree = new_rs.map(Rs::v);
    let failure = new_rs_tree
        .as_deref()
        .and_then(|r| r.get("status"))
        .and_then(|s| get(s, REPLICA_FAILURE))
        .filter(|c| field(c, "status") == "True")
        .cloned();
    match failure {
        Some(f) => {
            let cond = json!({
                "type": REPLICA_FAILURE, "status": f["status"], "lastUpdateTime": util::now(),
                "lastTransitionTime": f["lastTransitionTime"], "reason": f["reason"], "message": f["message"],
            });
            set(&mut status, cond);
        }
        None => remove(&mut status, REPLICA_FAILURE),
    }
    // requeueStuckDeployment: look again when the deadline would pass.
    let recheck = match (deadline(d), get(&status, PROGRESSING)) {
        (Some(secs), Some(c))
            if field(c, "reason") != NEW_RS_AVAILABLE
                && field(c, "reason") != TIMED_OUT
                && !complete(d, &status) =>
        {
            field(c, "lastUpdateTime")
                .parse::<jiff::Timestamp>()
                .ok()
                .map(|t| (t.as_second() + secs - jiff::Timestamp::now().as_second()).max(1))
        }
        _ => None,
    };
    (status, recheck)
}
