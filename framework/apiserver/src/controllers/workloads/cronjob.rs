//! The CronJob controller (`cronjob_controllerv2.go`): at each scheduled
//! time (in `timeZone`, UTC by default) a Job `<cronjob>-<minutes since
//! the epoch>` from the `jobTemplate`, annotated
//! `batch.kubernetes.io/cronjob-scheduled-timestamp`; `concurrencyPolicy`
//! (Allow, Forbid, Replace), `startingDeadlineSeconds` and `suspend`
//! honoured; `status.active`, `lastScheduleTime` and `lastSuccessfulTime`
//! kept; finished Jobs beyond `successfulJobsHistoryLimit` and
//! `failedJobsHistoryLimit` deleted.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::api::{controller_ref, key_of, stored_controller_key, stored_key, Api, CRONJOBS, JOBS};
use super::cron::Schedule;
use super::informer::{self, Change};
use super::queue::Queue;
use crate::controllers::write::MANAGER;
use crate::machinery::util::Pointer;
use crate::objects::Propagation;
use crate::storage::{ObjKey, StoredObject};

const COMPONENT: &str = "cronjob-controller";

/// Starts the controller.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    let queue = Arc::new(Queue::default());
    let q = queue.clone();
    informer::watch(
        api.shared.clone(),
        CRONJOBS.res(),
        cancel.clone(),
        move |c: &Change| q.add(stored_key(&c.obj)),
    );
    let q = queue.clone();
    informer::watch(
        api.shared.clone(),
        JOBS.res(),
        cancel.clone(),
        move |c: &Change| {
            if let Some(k) = stored_controller_key(&c.obj, CRONJOBS) {
                q.add(k);
            }
        },
    );
    let q = queue.clone();
    tokio::spawn(async move {
        q.clone().run(cancel, |key| sync(&api, &q, key)).await;
    });
}

fn finished(job: &Value) -> Option<&'static str> {
    let conds = job.at("/status/conditions")?.as_array()?;
    for (ty, name) in [("Complete", "Complete"), ("Failed", "Failed")] {
        if conds.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(ty)
                && c.get("status").and_then(Value::as_str) == Some("True")
        }) {
            return Some(name);
        }
    }
    None
}

fn ts(v: Option<&Value>) -> Option<jiff::Timestamp> {
    v?.as_str()?.parse().ok()
}

fn sync(api: &Api, queue: &Arc<Queue>, key: &ObjKey) {
    let Some(obj) = api.get(CRONJOBS, key) else {
        return;
    };
    let cj = obj.to_value();
    let jobs = api.owned(JOBS, obj.uid());
    let mut status = cj.get("status").cloned().unwrap_or_else(|| json!({}));
    if !status.is_object() {
        status = json!({});
    }
    // Active Jobs: drop the finished and the gone.
    let mut active: Vec<Value> = Vec::new();
    for j in &jobs {
        match finished(&j.value()) {
            None if !j.deleting() => active.push(json!({
                "apiVersion": "batch/v1", "kind": "Job", "name": j.name(), "namespace": key.0,
                "uid": j.uid(), "resourceVersion": j.rv.to_string(),
            })),
            Some(cond) => {
                let was_active = status
                    .get("active")
                    .and_then(Value::as_array)
                    .is_some_and(|a| {
                        a.iter()
                            .any(|r| r.get("uid").and_then(Value::as_str) == Some(j.uid()))
                    });
                if was_active {
                    api.event(
                        &cj,
                        CRONJOBS,
                        "Normal",
                        "SawCompletedJob",
                        &format!("Saw completed job: {}, condition: {cond}", j.name()),
                        COMPONENT,
                    );
                }
                if cond == "Complete" {
                    let done = j.value().at("/status/completionTime").cloned();
                    if let Some(done) = done {
                        if ts(status.get("lastSuccessfulTime"))
                            .is_none_or(|l| ts(Some(&done)).is_some_and(|d| d > l))
                        {
                            status["lastSuccessfulTime"] = done;
                        }
                    }
                }
            }
            None => {}
        }
    }
    active.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    if active.is_empty() {
        if let Some(m) = status.as_object_mut() {
            m.remove("active");
        }
    } else {
        status["active"] = json!(active);
    }
    let deleting = cj.at("/metadata/deletionTimestamp").is_some();
    let suspended = cj.at("/spec/suspend").and_then(Value::as_bool) == Some(true);
    let mut requeue: Option<Duration> = None;
    if !deleting && !suspended {
        requeue = schedule(api, &cj, key, &mut status, &jobs);
    }
    cleanup(api, &cj, &jobs);
    if cj.get("status") != Some(&status) {
        let _ = api.set_status(CRONJOBS, key, MANAGER, &status);
    }
    if let Some(d) = requeue {
        queue.add_after(key.clone(), d);
    }
}

/// Starts the Job of the most recent missed schedule, if any; when to look
/// again.
fn schedule(
    api: &Api,
    cj: &Value,
    key: &ObjKey,
    status: &mut Value,
    jobs: &[Arc<StoredObject>],
) -> Option<Duration> {
    let (sched, tz) = parse_schedule(api, cj)?;
    let now = jiff::Timestamp::now();
    let since = ts(status.get("lastScheduleTime"))
        .or_else(|| ts(cj.at("/metadata/creationTimestamp")))
        .unwrap_or(now);
    let latest = latest_missed(&sched, &tz, since, now)?;
    let next_in = sched
        .next(now.to_zoned(tz.clone()).datetime())
        .and_then(|n| tz.to_timestamp(n).ok())
        .map(|n| Duration::from_secs((n.as_second() - now.as_second()).max(1) as u64));
    let Some(at) = latest else {
        return next_in;
    };
    if let Some(deadline) = cj
        .at("/spec/startingDeadlineSeconds")
        .and_then(Value::as_i64)
    {
        if at.as_second() + deadline < now.as_second() {
            api.event(
                cj,
                CRONJOBS,
                "Warning",
                "MissSchedule",
                &format!(
                    "Missed scheduled time to start a job: {}",
                    at.strftime("%Y-%m-%dT%H:%M:%SZ")
                ),
                COMPONENT,
            );
            status["lastScheduleTime"] = json!(at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
            return next_in;
        }
    }
    let has_active = status
        .get("active")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    match cj.at("/spec/concurrencyPolicy").and_then(Value::as_str) {
        Some("Forbid") if has_active => return next_in,
        Some("Replace") if has_active => {
            for j in jobs.iter().filter(|j| finished(&j.value()).is_none()) {
                delete_job(api, cj, j);
            }
            status.as_object_mut()?.remove("active");
        }
        _ => {}
    }
    let job = job_for(cj, key, at, tz);
    if let Err(requeue) = start_job(api, cj, key, status, job) {
        return requeue;
    }
    status["lastScheduleTime"] = json!(at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    next_in
}

/// The CronJob's schedule and time zone, or `None` (with a warning event)
/// if either does not parse.
fn parse_schedule(api: &Api, cj: &Value) -> Option<(Schedule, jiff::tz::TimeZone)> {
    let spec = cj
        .at("/spec/schedule")
        .and_then(Value::as_str)
        .unwrap_or("");
    let sched = match Schedule::parse(spec) {
        Ok(s) => s,
        Err(e) => {
            api.event(
                cj,
                CRONJOBS,
                "Warning",
                "UnparseableSchedule",
                &format!("unparseable schedule: {spec:?} : {e}"),
                COMPONENT,
            );
            return None;
        }
    };
    let tz = match cj.at("/spec/timeZone").and_then(Value::as_str) {
        None | Some("") => jiff::tz::TimeZone::UTC,
        Some(name) => match jiff::tz::TimeZone::get(name) {
            Ok(tz) => tz,
            Err(_) => {
                api.event(
                    cj,
                    CRONJOBS,
                    "Warning",
                    "UnknownTimeZone",
                    &format!("invalid timeZone: {name:?}"),
                    COMPONENT,
                );
                return None;
            }
        },
    };
    Some((sched, tz))
}

/// The most recent scheduled time in `(since, now]`, if any (`None` if a
/// time does not exist in `tz`).
fn latest_missed(
    sched: &Schedule,
    tz: &jiff::tz::TimeZone,
    since: jiff::Timestamp,
    now: jiff::Timestamp,
) -> Option<Option<jiff::Timestamp>> {
    let mut t = since.to_zoned(tz.clone()).datetime();
    let mut latest = None;
    let mut missed = 0;
    while let Some(n) = sched.next(t) {
        let at = tz.to_timestamp(n).ok()?;
        if at > now {
            break;
        }
        latest = Some(at);
        missed += 1;
        t = n;
        if missed > 100 {
            // Too many missed starts: start from the most recent only.
            let recent = now
                .to_zoned(tz.clone())
                .datetime()
                .checked_sub(jiff::ToSpan::minutes(1))
                .ok()?;
            t = recent.max(t);
        }
    }
    Some(latest)
}

/// The Job for the run scheduled `at`: the job template's labels,
/// annotations and spec, named after the minute, owned by the CronJob and
/// annotated with the scheduled time.
fn job_for(cj: &Value, key: &ObjKey, at: jiff::Timestamp, tz: jiff::tz::TimeZone) -> Value {
    let name = format!("{}-{}", key.1, at.as_second() / 60);
    let template = cj.at("/spec/jobTemplate").cloned().unwrap_or_default();
    let mut meta = serde_json::Map::new();
    for f in ["labels", "annotations"] {
        if let Some(v) = template
            .at(&format!("/metadata/{f}"))
            .filter(|v| !v.is_null())
        {
            meta.insert(f.into(), v.clone());
        }
    }
    meta.insert("name".into(), json!(name));
    meta.insert("namespace".into(), json!(key.0));
    meta.insert(
        "ownerReferences".into(),
        json!([controller_ref(cj, CRONJOBS)]),
    );
    let scheduled = at
        .to_zoned(tz)
        .strftime("%Y-%m-%dT%H:%M:%S%:z")
        .to_string()
        .replace("+00:00", "Z");
    let ann = meta.entry("annotations").or_insert_with(|| json!({}));
    if let Some(a) = ann.as_object_mut() {
        a.insert(
            "batch.kubernetes.io/cronjob-scheduled-timestamp".into(),
            json!(scheduled),
        );
    }
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
        "spec": template.get("spec").cloned().unwrap_or_default()})
}

/// Creates `job` and lists it in the status's `active` (a Job of that name
/// already existing counts as started). `Err` carries what [`schedule`]
/// returns instead of going on.
fn start_job(
    api: &Api,
    cj: &Value,
    key: &ObjKey,
    status: &mut Value,
    job: Value,
) -> Result<(), Option<Duration>> {
    match api.create(JOBS, MANAGER, job) {
        Ok(j) => {
            api.event(
                cj,
                CRONJOBS,
                "Normal",
                "SuccessfulCreate",
                &format!("Created job {}", j.name()),
                COMPONENT,
            );
            let entry = json!({"apiVersion": "batch/v1", "kind": "Job", "name": j.name(), "namespace": key.0,
                "uid": j.uid(), "resourceVersion": j.rv.to_string()});
            let list = status
                .as_object_mut()
                .ok_or(None)?
                .entry("active")
                .or_insert_with(|| json!([]));
            if let Some(l) = list.as_array_mut() {
                l.push(entry);
            }
            Ok(())
        }
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => {
            api.event(
                cj,
                CRONJOBS,
                "Warning",
                "FailedCreate",
                &format!("Error creating job: {}", e.message),
                COMPONENT,
            );
            Err(Some(Duration::from_secs(1)))
        }
    }
}

/// Deletes finished Jobs past the history limits, oldest first.
fn cleanup(api: &Api, cj: &Value, jobs: &[Arc<StoredObject>]) {
    for (cond, field, default) in [
        ("Complete", "successfulJobsHistoryLimit", 3),
        ("Failed", "failedJobsHistoryLimit", 1),
    ] {
        let limit = cj
            .at(&format!("/spec/{field}"))
            .and_then(Value::as_i64)
            .unwrap_or(default);
        let mut done: Vec<&Arc<StoredObject>> = jobs
            .iter()
            .filter(|j| finished(&j.value()) == Some(cond))
            .collect();
        done.sort_by(|a, b| {
            let start = |j: &Arc<StoredObject>| {
                j.value()
                    .at("/status/startTime")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            start(a).cmp(&start(b)).then_with(|| a.name().cmp(b.name()))
        });
        let surplus = done.len() as i64 - limit;
        for j in done.into_iter().take(surplus.max(0) as usize) {
            delete_job(api, cj, j);
        }
    }
}

/// Deletes one of the CronJob's Jobs (its pods in the background) and
/// records `SuccessfulDelete`, as `deleteJob` does.
fn delete_job(api: &Api, cj: &Value, job: &StoredObject) {
    let deleted = api.delete(
        JOBS,
        &key_of(&job.value()),
        Some(job.uid()),
        None,
        Some(Propagation::Background),
    );
    if deleted.is_ok() {
        api.event(
            cj,
            CRONJOBS,
            "Normal",
            "SuccessfulDelete",
            &format!("Deleted job {}", job.name()),
            COMPONENT,
        );
    }
}
