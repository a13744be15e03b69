//! The `pods/eviction` subresource (`EvictionREST.Create`): deletes a pod
//! (with the eviction's DeleteOptions) unless a PodDisruptionBudget
//! forbids it. A pod that is not running (pending, finished) or already
//! being deleted is deleted at once; otherwise its one matching budget
//! must allow a disruption (429 `TooManyRequests`, cause
//! `DisruptionBudget`, when not), which the eviction uses up
//! (`disruptionsAllowed` decremented, the pod recorded in
//! `disruptedPods`). More than one matching budget is a 500.

use serde_json::{json, Value};

use super::delete::{delete, DeleteOpts};
use super::opts::{Sub, WriteOpts};
use super::update::{update, Precondition};
use crate::machinery::status::{ApiError, Cause, Details};
use crate::machinery::util;
use crate::registry::state::Shared;
use crate::registry::{ResKey, ResourceDef};
use crate::storage::{Filter, ObjKey};

fn selects(selector: &Value, labels: Option<&Value>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let ml_ok = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(|m| m.iter().all(|(k, v)| get(k) == v.as_str()));
    let exprs_ok = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .is_none_or(|es| {
            es.iter().all(|e| {
                let key = e.get("key").and_then(Value::as_str).unwrap_or("");
                let vals: Vec<&str> = e
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|v| v.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                    "In" => get(key).is_some_and(|v| vals.contains(&v)),
                    "NotIn" => get(key).is_none_or(|v| !vals.contains(&v)),
                    "Exists" => get(key).is_some(),
                    "DoesNotExist" => get(key).is_none(),
                    _ => false,
                }
            })
        });
    ml_ok && exprs_ok
}

fn too_many(message: String) -> ApiError {
    ApiError::new(
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    )
    .with_details(Details {
        causes: vec![Cause {
            reason: "DisruptionBudget".into(),
            message,
            field: String::new(),
        }],
        ..Details::default()
    })
}

/// Evicts pod `key` with the eviction body `eviction`.
pub(crate) fn evict(
    shared: &Shared,
    pods: &ResourceDef,
    key: &ObjKey,
    eviction: &Value,
) -> Result<(), ApiError> {
    if let Some(n) = util::meta_str(eviction, "name").filter(|n| !n.is_empty()) {
        if n != key.1 {
            return Err(ApiError::bad_request(
                "name in URL does not match name in Eviction object",
            ));
        }
    }
    let opts = eviction.get("deleteOptions").cloned().unwrap_or_default();
    let dry_run = opts
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v.as_str() == Some("All")));
    let del = DeleteOpts {
        grace_period: opts.get("gracePeriodSeconds").and_then(Value::as_i64),
        uid: opts
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_owned),
        dry_run,
        ..DeleteOpts::default()
    };
    let pod = shared
        .storage
        .lock()
        .get(&pods.key(), key)
        .ok_or_else(|| ApiError::not_found("pods", "", &key.1))?;
    let tree = pod.value();
    let phase = tree
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    let deleting = pod.deleting();
    if deleting || matches!(phase, "Succeeded" | "Failed" | "Pending") {
        delete(shared, pods, key, &del)?;
        return Ok(());
    }
    let pdb_res = ResKey::new("policy", "poddisruptionbudgets");
    let filter = Filter {
        namespace: Some(key.0.clone()),
        ..Filter::default()
    };
    let budgets: Vec<_> = shared
        .storage
        .lock()
        .list(&pdb_res, &filter, None, None, None)
        .map(|p| p.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|b| {
            let sel = b
                .value()
                .pointer("/spec/selector")
                .cloned()
                .unwrap_or_default();
            // An empty selector selects nothing in policy/v1... and everything
            // in the beta API; v1 is what is served.
            (sel.get("matchLabels").is_some() || sel.get("matchExpressions").is_some())
                && selects(&sel, pod.value().pointer("/metadata/labels"))
        })
        .collect();
    if budgets.len() > 1 {
        return Err(ApiError::internal(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        ));
    }
    if let Some(budget) = budgets.first() {
        let pdb_def = shared
            .registry()
            .get("policy", "v1", "poddisruptionbudgets")
            .ok_or_else(|| ApiError::internal("PodDisruptionBudgets are not served"))?;
        let budget_key = (key.0.clone(), budget.name().to_owned());
        let mut opts = WriteOpts::internal(&pdb_def, "kube-apiserver");
        opts.sub = Sub::Status;
        opts.dry_run = dry_run;
        let pod_name = key.1.clone();
        update(shared, &pdb_def, &budget_key, &opts, |cur| {
            let name = util::meta_str(cur, "name").unwrap_or("");
            let int = |p: &str| cur.pointer(p).and_then(Value::as_i64).unwrap_or(0);
            if int("/status/observedGeneration") < int("/metadata/generation") {
                return Err(too_many(format!(
                    "The disruption budget {name} is still being processed by the server."
                )));
            }
            let allowed = int("/status/disruptionsAllowed");
            if allowed < 0 {
                return Err(ApiError::forbidden("pdb disruptions allowed is negative"));
            }
            if allowed == 0 {
                return Err(too_many(format!(
                    "The disruption budget {name} needs {} healthy pods and has {} currently",
                    int("/status/desiredHealthy"),
                    int("/status/currentHealthy")
                )));
            }
            let mut next = cur.clone();
            next["status"]["disruptionsAllowed"] = json!(allowed - 1);
            if let Some(status) = crate::registry::fields::ensure_object(&mut next, &["status"]) {
                let dp = status.entry("disruptedPods").or_insert_with(|| json!({}));
                if let Some(dp) = dp.as_object_mut() {
                    dp.insert(pod_name.clone(), json!(util::now()));
                }
            }
            Ok((next, Precondition::None))
        })?;
    }
    delete(shared, pods, key, &del)?;
    Ok(())
}
