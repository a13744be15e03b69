//! The Job controller (`pkg/controller/job`, with the pod-replacement and
//! managed-by features on, as in current Kubernetes): up to `parallelism`
//! pods at once until `completions` succeed, each carrying the
//! `batch.kubernetes.io/job-tracking` finalizer, removed once the pod is
//! counted. Failed pods are replaced after a back-off (10 s doubling to
//! 10 min, shortened in tests) until more than `backoffLimit` failed
//! (for `OnFailure`, container restarts count). A Job that is done first
//! gets the interim `SuccessCriteriaMet` (or `FailureTarget`) condition,
//! its remaining pods are deleted, and once none is left terminating it
//! gets `Complete` (`CompletionsReached`, "Reached expected number of
//! succeeded pods") or `Failed` (`BackoffLimitExceeded`, "Job has reached
//! the specified backoff limit"; `DeadlineExceeded`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::api::{controller_ref, key_of, Api, JOBS, PODS};
use super::owners::claim;
use super::pods;
use super::queue::Queue;
use super::replicaset::{watch_owners_and_pods, Orphans};
use crate::controllers::write::MANAGER;
use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::storage::{ObjKey, StoredObject};

const COMPONENT: &str = "job-controller";
/// The finalizer on every pod of a Job until it is counted.
pub(crate) const TRACKING: &str = "batch.kubernetes.io/job-tracking";

/// Pod failures since the last success, and when the last one was seen.
#[derive(Default)]
struct Backoffs(Mutex<HashMap<String, (u32, Instant)>>);

/// Starts the controller.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    let queue = Arc::new(Queue::default());
    let orphans = Arc::new(Orphans::default());
    watch_owners_and_pods(&api, JOBS, &queue, &orphans, &cancel);
    let backoffs = Arc::new(Backoffs::default());
    let q = queue.clone();
    tokio::spawn(async move {
        q.clone()
            .run(cancel, |key| sync(&api, &q, &orphans, &backoffs, key))
            .await;
    });
}

fn int(v: &Value, ptr: &str) -> Option<i64> {
    v.at(ptr).and_then(Value::as_i64)
}

fn has_finalizer(pod: &Value) -> bool {
    util::finalizers(pod).iter().any(|f| f == TRACKING)
}

fn condition<'a>(job: &'a Value, ty: &str) -> Option<&'a Value> {
    job.at("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| {
            c.get("type").and_then(Value::as_str) == Some(ty)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

fn new_condition(ty: &str, reason: &str, message: &str) -> Value {
    let now = util::now();
    json!({"type": ty, "status": "True", "lastProbeTime": now, "lastTransitionTime": now, "reason": reason, "message": message})
}

/// Whether a pod counts as failed (`isPodFailed`): failed, or being
/// deleted before it succeeded.
fn failed(pod: &Value) -> bool {
    pods::phase(pod) == "Failed" || (pods::deleting(pod) && pods::phase(pod) != "Succeeded")
}

fn sync(api: &Api, queue: &Arc<Queue>, orphans: &Orphans, backoffs: &Backoffs, key: &ObjKey) {
    let Some(obj) = api.get(JOBS, key) else {
        return;
    };
    let job = obj.to_value();
    let uid = obj.uid().to_owned();
    if condition(&job, "Complete").is_some() || condition(&job, "Failed").is_some() {
        backoffs
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&uid);
        return;
    }
    let selector = job.at("/spec/selector").cloned().unwrap_or_default();
    if pods::selector_is_empty(&selector) {
        return;
    }
    let mut candidates = api.owned(PODS, &uid);
    candidates.extend(orphans.of(api, &key.0));
    let all = claim(api, &job, JOBS, &selector, PODS, candidates, Some(TRACKING));
    let active: Vec<&Arc<StoredObject>> = all.iter().filter(|p| pods::active(&p.value())).collect();
    let mut status = job.get("status").cloned().unwrap_or_else(|| json!({}));
    if !status.is_object() {
        status = json!({});
    }
    let prev_succeeded = int(&status, "/succeeded").unwrap_or(0);
    let prev_failed = int(&status, "/failed").unwrap_or(0);
    // Finished pods still carrying the finalizer are counted now.
    let new_succeeded: Vec<&Arc<StoredObject>> = all
        .iter()
        .filter(|p| has_finalizer(&p.value()) && pods::phase(&p.value()) == "Succeeded")
        .collect();
    let new_failed: Vec<&Arc<StoredObject>> = all
        .iter()
        .filter(|p| {
            has_finalizer(&p.value())
                && failed(&p.value())
                && pods::phase(&p.value()) != "Succeeded"
        })
        .filter(|p| pods::terminal(&p.value()) || p.deleting())
        .collect();
    let succeeded = prev_succeeded + new_succeeded.len() as i64;
    let failed_count = prev_failed + new_failed.len() as i64;
    {
        let mut b = backoffs.0.lock().unwrap_or_else(|e| e.into_inner());
        let entry = b.entry(uid.clone()).or_insert((0, Instant::now()));
        if !new_succeeded.is_empty() {
            *entry = (0, Instant::now());
        }
        if !new_failed.is_empty() {
            *entry = (entry.0 + new_failed.len() as u32, Instant::now());
        }
    }
    let suspended = job.at("/spec/suspend").and_then(Value::as_bool) == Some(true);
    if status.get("startTime").is_none() && !suspended {
        status["startTime"] = json!(util::now());
    }
    let backoff_limit = int(&job, "/spec/backoffLimit").unwrap_or(6);
    let completions = int(&job, "/spec/completions");
    let parallelism = int(&job, "/spec/parallelism").unwrap_or(1);
    let mut finished: Option<Value> = None;
    if let Some(c) = condition(&job, "SuccessCriteriaMet") {
        finished = Some(c.clone());
    } else if let Some(c) = condition(&job, "FailureTarget") {
        finished = Some(c.clone());
    } else {
        let restarts: i64 = all
            .iter()
            .filter(|p| matches!(pods::phase(&p.value()), "Running" | "Pending"))
            .map(|p| pods::restarts(&p.value()))
            .sum();
        let on_failure = job
            .at("/spec/template/spec/restartPolicy")
            .and_then(Value::as_str)
            == Some("OnFailure");
        let past_on_failure = on_failure
            && if backoff_limit == 0 {
                restarts > 0
            } else {
                restarts >= backoff_limit
            };
        let deadline = int(&job, "/spec/activeDeadlineSeconds");
        let started = status
            .get("startTime")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok());
        if failed_count > backoff_limit || past_on_failure {
            finished = Some(new_condition(
                "FailureTarget",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ));
        } else if let (Some(d), Some(s), false) = (deadline, started, suspended) {
            let elapsed = jiff::Timestamp::now().as_second() - s.as_second();
            if elapsed >= d {
                finished = Some(new_condition(
                    "FailureTarget",
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                ));
            } else {
                queue.add_after(key.clone(), Duration::from_secs((d - elapsed) as u64));
            }
        }
    }
    let mut active_count = active.len() as i64;
    if finished.is_some() {
        for p in &active {
            if api
                .delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None)
                .is_ok()
            {
                active_count -= 1;
            }
        }
    } else if !suspended && job.at("/metadata/deletionTimestamp").is_none() {
        let want = match completions {
            None if succeeded > 0 => active_count,
            None => parallelism,
            Some(c) => (c - succeeded).min(parallelism).max(0),
        };
        if active_count > want {
            let mut victims = active.clone();
            victims.sort_by(|a, b| pods::removal_order(&a.value(), &b.value()));
            for p in victims.into_iter().take((active_count - want) as usize) {
                if api
                    .delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None)
                    .is_ok()
                {
                    active_count -= 1;
                }
            }
        } else if active_count < want {
            let terminating = all.iter().filter(|p| pods::terminating(&p.value())).count() as i64;
            let diff = want - active_count - terminating;
            let (failures, last) = backoffs
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&uid)
                .copied()
                .unwrap_or((0, Instant::now()));
            let (first, cap) = api.cfg.timing.job_backoff;
            let delay = if failures == 0 {
                Duration::ZERO
            } else {
                first
                    .saturating_mul(2u32.saturating_pow(failures.saturating_sub(1).min(20)))
                    .min(cap)
            };
            let ready_at = last + delay;
            if diff > 0 && Instant::now() < ready_at {
                queue.add_after(key.clone(), ready_at - Instant::now());
            } else if diff > 0 {
                let mut template = job.at("/spec/template").cloned().unwrap_or_default();
                if let Some(meta) =
                    crate::registry::defaults::ensure_object(&mut template, &["metadata"])
                {
                    let fins = meta.entry("finalizers").or_insert_with(|| json!([]));
                    if let Some(f) = fins.as_array_mut() {
                        if !f.iter().any(|x| x.as_str() == Some(TRACKING)) {
                            f.push(json!(TRACKING));
                        }
                    }
                }
                let reference = controller_ref(&job, JOBS);
                for _ in 0..diff.min(500) {
                    let pod = pods::from_template(&template, &key.0, &key.1, reference.clone());
                    match api.create(PODS, MANAGER, pod) {
                        Ok(p) => {
                            active_count += 1;
                            api.event(
                                &job,
                                JOBS,
                                "Normal",
                                "SuccessfulCreate",
                                &format!("Created pod: {}", p.name()),
                                COMPONENT,
                            );
                        }
                        Err(e) => {
                            api.event(
                                &job,
                                JOBS,
                                "Warning",
                                "FailedCreate",
                                &format!("Error creating: {}", e.message),
                                COMPONENT,
                            );
                            break;
                        }
                    }
                }
            }
        }
        let complete = match completions {
            None => succeeded > 0 && active_count == 0,
            Some(c) => succeeded >= c && active_count == 0,
        };
        if complete {
            finished = Some(new_condition(
                "SuccessCriteriaMet",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            ));
        }
    }
    // Count finished pods: their finalizer goes.
    let counted: Vec<&Arc<StoredObject>> = all
        .iter()
        .filter(|p| has_finalizer(&p.value()))
        .filter(|p| {
            pods::terminal(&p.value())
                || p.deleting()
                || job.at("/metadata/deletionTimestamp").is_some()
        })
        .collect();
    for p in &counted {
        let _ = api.update(PODS, &key_of(&p.value()), MANAGER, |o| {
            let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) else {
                return false;
            };
            let Some(fins) = meta.get_mut("finalizers").and_then(Value::as_array_mut) else {
                return false;
            };
            let before = fins.len();
            fins.retain(|f| f.as_str() != Some(TRACKING));
            let changed = before != fins.len();
            if fins.is_empty() {
                meta.remove("finalizers");
            }
            changed
        });
    }
    status["succeeded"] = json!(succeeded);
    status["failed"] = json!(failed_count);
    let remaining: Vec<&Arc<StoredObject>> =
        all.iter().filter(|p| pods::active(&p.value())).collect();
    let ready = remaining.iter().filter(|p| pods::ready(&p.value())).count();
    let terminating = all.iter().filter(|p| pods::terminating(&p.value())).count() as i64
        + (active.len() as i64 - active_count).max(0) * i64::from(finished.is_some());
    status["active"] = json!(active_count.max(0));
    status["ready"] = json!(ready);
    status["terminating"] = json!(terminating);
    status["uncountedTerminatedPods"] = json!({});
    let mut events = Vec::new();
    if let Some(fin) = &finished {
        let ty = fin.get("type").and_then(Value::as_str).unwrap_or("");
        let reason = fin
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let message = fin
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let mut conds = status
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !conds
            .iter()
            .any(|c| c.get("type").and_then(Value::as_str) == Some(ty))
        {
            conds.push(fin.clone());
        }
        // The terminal condition once no pod is left terminating.
        if terminating == 0 {
            let terminal = if ty == "SuccessCriteriaMet" {
                "Complete"
            } else {
                "Failed"
            };
            let cond = new_condition(terminal, &reason, &message);
            if terminal == "Complete" {
                status["completionTime"] = cond["lastTransitionTime"].clone();
                events.push(("Normal", "Completed".to_owned(), "Job completed".to_owned()));
            } else {
                events.push(("Warning", reason.clone(), message.clone()));
            }
            conds.push(cond);
        }
        status["conditions"] = json!(conds);
    }
    if let Err(e) = api.set_status(JOBS, key, MANAGER, &status) {
        tracing::debug!(job = %key.1, error = %e.message, "job status not written");
        queue.add_after(key.clone(), Duration::from_millis(200));
    }
    for (ty, reason, msg) in events {
        api.event(&job, JOBS, ty, &reason, &msg, COMPONENT);
    }
}
