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

/// One pass over a Job: claim its pods, count the finished ones, decide
/// whether it is done (or create and delete pods toward its target), drop
/// the tracking finalizer of counted pods and write the status.
fn sync(api: &Api, queue: &Arc<Queue>, orphans: &Orphans, backoffs: &Backoffs, key: &ObjKey) {
    let Some(obj) = api.get(JOBS, key) else {
        return;
    };
    let job = obj.to_value();
    let uid = obj.uid().to_owned();
    if condition(&job, "Complete").is_some() || condition(&job, "Failed").is_some() {
        backoffs.forget(&uid);
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
    let counts = Counts::of(&status, &all);
    backoffs.record(&uid, &counts);
    let suspended = job.at("/spec/suspend").and_then(Value::as_bool) == Some(true);
    if status.get("startTime").is_none() && !suspended {
        status["startTime"] = json!(util::now());
    }
    let mut finished = condition(&job, "SuccessCriteriaMet")
        .or_else(|| condition(&job, "FailureTarget"))
        .cloned()
        .or_else(|| failure_target(queue, key, &job, &all, &status, counts.failed, suspended));
    let mut active_count = active.len() as i64;
    if finished.is_some() {
        active_count -= delete_pods(api, active.iter().copied());
    } else if !suspended && job.at("/metadata/deletionTimestamp").is_none() {
        let completions = int(&job, "/spec/completions");
        let parallelism = int(&job, "/spec/parallelism").unwrap_or(1);
        let want = match completions {
            None if counts.succeeded > 0 => active_count,
            None => parallelism,
            Some(c) => (c - counts.succeeded).min(parallelism).max(0),
        };
        let scaling = Scaling {
            api,
            queue,
            key,
            job: &job,
            all: &all,
        };
        active_count = scaling.toward(want, &active, backoffs.delay(api, &uid));
        let complete = match completions {
            None => counts.succeeded > 0 && active_count == 0,
            Some(c) => counts.succeeded >= c && active_count == 0,
        };
        if complete {
            finished = Some(new_condition(
                "SuccessCriteriaMet",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            ));
        }
    }
    uncount_finished(api, &job, &all);
    status["succeeded"] = json!(counts.succeeded);
    status["failed"] = json!(counts.failed);
    let remaining: Vec<&Arc<StoredObject>> =
        all.iter().filter(|p| pods::active(&p.value())).collect();
    let ready = remaining.iter().filter(|p| pods::ready(&p.value())).count();
    let terminating = all.iter().filter(|p| pods::terminating(&p.value())).count() as i64
        + (active.len() as i64 - active_count).max(0) * i64::from(finished.is_some());
    status["active"] = json!(active_count.max(0));
    status["ready"] = json!(ready);
    status["terminating"] = json!(terminating);
    status["uncountedTerminatedPods"] = json!({});
    let events = match &finished {
        Some(fin) => add_conditions(&mut status, fin, terminating),
        None => Vec::new(),
    };
    if let Err(e) = api.set_status(JOBS, key, MANAGER, &status) {
        tracing::debug!(job = %key.1, error = %e.message, "job status not written");
        queue.add_after(key.clone(), Duration::from_millis(200));
    }
    for (ty, reason, msg) in events {
        api.event(&job, JOBS, ty, &reason, &msg, COMPONENT);
    }
}

/// The Job's pod counts: the totals in its status plus the finished pods
/// still carrying the tracking finalizer, which are counted now.
struct Counts {
    succeeded: i64,
    failed: i64,
    new_succeeded: usize,
    new_failed: usize,
}

impl Counts {
    fn of(status: &Value, all: &[Arc<StoredObject>]) -> Self {
        let new_succeeded = all
            .iter()
            .filter(|p| has_finalizer(&p.value()) && pods::phase(&p.value()) == "Succeeded")
            .count();
        let new_failed = all
            .iter()
            .filter(|p| {
                has_finalizer(&p.value())
                    && failed(&p.value())
                    && pods::phase(&p.value()) != "Succeeded"
            })
            .filter(|p| pods::terminal(&p.value()) || p.deleting())
            .count();
        Self {
            succeeded: int(status, "/succeeded").unwrap_or(0) + new_succeeded as i64,
            failed: int(status, "/failed").unwrap_or(0) + new_failed as i64,
            new_succeeded,
            new_failed,
        }
    }
}

impl Backoffs {
    fn forget(&self, uid: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(uid);
    }

    /// A success resets the Job's failures; new failures add to them.
    fn record(&self, uid: &str, counts: &Counts) {
        let mut b = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let entry = b.entry(uid.to_owned()).or_insert((0, Instant::now()));
        if counts.new_succeeded > 0 {
            *entry = (0, Instant::now());
        }
        if counts.new_failed > 0 {
            *entry = (entry.0 + counts.new_failed as u32, Instant::now());
        }
    }

    /// When the Job may next create pods: its last failure plus the
    /// back-off, doubling per failure up to the cap.
    fn delay(&self, api: &Api, uid: &str) -> Instant {
        let (failures, last) = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(uid)
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
        last + delay
    }
}

/// The `FailureTarget` condition of a Job past its backoff limit (failed
/// pods, or container restarts under `OnFailure`) or its active deadline;
/// a Job within its deadline is looked at again when it passes.
fn failure_target(
    queue: &Arc<Queue>,
    key: &ObjKey,
    job: &Value,
    all: &[Arc<StoredObject>],
    status: &Value,
    failed_count: i64,
    suspended: bool,
) -> Option<Value> {
    let backoff_limit = int(job, "/spec/backoffLimit").unwrap_or(6);
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
    let deadline = int(job, "/spec/activeDeadlineSeconds");
    let started = status
        .get("startTime")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    if failed_count > backoff_limit || past_on_failure {
        return Some(new_condition(
            "FailureTarget",
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        ));
    }
    if let (Some(d), Some(s), false) = (deadline, started, suspended) {
        let elapsed = jiff::Timestamp::now().as_second() - s.as_second();
        if elapsed >= d {
            return Some(new_condition(
                "FailureTarget",
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
            ));
        }
        queue.add_after(key.clone(), Duration::from_secs((d - elapsed) as u64));
    }
    None
}

/// Deletes `pods`, returning how many deletions succeeded.
fn delete_pods<'a>(api: &Api, pods: impl Iterator<Item = &'a Arc<StoredObject>>) -> i64 {
    let mut deleted = 0;
    for p in pods {
        if api
            .delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None)
            .is_ok()
        {
            deleted += 1;
        }
    }
    deleted
}

/// What moving a running Job toward its wanted number of active pods
/// needs.
struct Scaling<'a> {
    api: &'a Api,
    queue: &'a Arc<Queue>,
    key: &'a ObjKey,
    job: &'a Value,
    all: &'a [Arc<StoredObject>],
}

impl Scaling<'_> {
    /// Deletes the excess active pods, or creates the missing ones once
    /// the back-off allows (`ready_at`), returning the active count.
    fn toward(&self, want: i64, active: &[&Arc<StoredObject>], ready_at: Instant) -> i64 {
        let mut active_count = active.len() as i64;
        if active_count > want {
            let mut victims = active.to_vec();
            victims.sort_by(|a, b| pods::removal_order(&a.value(), &b.value()));
            let excess = (active_count - want) as usize;
            active_count -= delete_pods(self.api, victims.into_iter().take(excess));
        } else if active_count < want {
            let terminating = self
                .all
                .iter()
                .filter(|p| pods::terminating(&p.value()))
                .count() as i64;
            let diff = want - active_count - terminating;
            if diff > 0 && Instant::now() < ready_at {
                self.queue
                    .add_after(self.key.clone(), ready_at - Instant::now());
            } else if diff > 0 {
                active_count += self.create_pods(diff);
            }
        }
        active_count
    }

    /// Creates up to `diff` pods from the template (with the tracking
    /// finalizer), stopping at the first failure; returns how many.
    fn create_pods(&self, diff: i64) -> i64 {
        let (api, job, key) = (self.api, self.job, self.key);
        let mut template = job.at("/spec/template").cloned().unwrap_or_default();
        if let Some(meta) = crate::registry::fields::ensure_object(&mut template, &["metadata"]) {
            let fins = meta.entry("finalizers").or_insert_with(|| json!([]));
            if let Some(f) = fins.as_array_mut() {
                if !f.iter().any(|x| x.as_str() == Some(TRACKING)) {
                    f.push(json!(TRACKING));
                }
            }
        }
        let reference = controller_ref(job, JOBS);
        let mut created = 0;
        for _ in 0..diff.min(500) {
            let pod = pods::from_template(&template, &key.0, &key.1, reference.clone());
            match api.create(PODS, MANAGER, pod) {
                Ok(p) => {
                    created += 1;
                    api.event(
                        job,
                        JOBS,
                        "Normal",
                        "SuccessfulCreate",
                        &format!("Created pod: {}", p.name()),
                        COMPONENT,
                    );
                }
                Err(e) => {
                    api.event(
                        job,
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
        created
    }
}

/// Removes the tracking finalizer from the finished pods (all of them once
/// the Job is being deleted): they are counted.
fn uncount_finished(api: &Api, job: &Value, all: &[Arc<StoredObject>]) {
    let counted = all
        .iter()
        .filter(|p| has_finalizer(&p.value()))
        .filter(|p| {
            pods::terminal(&p.value())
                || p.deleting()
                || job.at("/metadata/deletionTimestamp").is_some()
        });
    for p in counted {
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
}

/// Adds the interim condition `fin` to the status and, once no pod is left
/// terminating, the terminal `Complete` or `Failed`; returns the events to
/// record.
fn add_conditions(
    status: &mut Value,
    fin: &Value,
    terminating: i64,
) -> Vec<(&'static str, String, String)> {
    let mut events = Vec::new();
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
    events
}
