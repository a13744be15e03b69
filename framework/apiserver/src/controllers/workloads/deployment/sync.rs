//! One `syncDeployment` (`deployment_controller.go`, `sync.go`,
//! `rolling.go`, `recreate.go`): claim the ReplicaSets, find or create the
//! new one (named `<deployment>-<pod-template-hash>`, revision = highest
//! old revision + 1), then scale: proportionally on a scaling event or
//! while paused, by `maxSurge`/`maxUnavailable` for RollingUpdate, all
//! old down before the new up for Recreate; prune old ReplicaSets past
//! `revisionHistoryLimit`; write the status.

use std::sync::Arc;

use serde_json::{json, Value};

use super::status::{self, PROGRESSING};
use super::util::{
    actual_count, annotations_mut, available_count, by_creation, desired, equal_ignore_hash,
    max_surge, max_unavailable, replica_count, rolling, set_new_rs_annotations,
    set_replicas_annotations, Rs, DESIRED_REPLICAS, HASH_LABEL, MAX_REPLICAS, REVISION,
};
use crate::controllers::workloads::api::{
    controller_ref, key_of, Api, DEPLOYMENTS, PODS, REPLICASETS,
};
use crate::controllers::workloads::hash::pod_template_hash;
use crate::controllers::workloads::owners::claim;
use crate::controllers::workloads::pods;
use crate::controllers::workloads::queue::Queue;
use crate::controllers::write::MANAGER;
use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::objects::Propagation;
use crate::storage::ObjKey;

const COMPONENT: &str = "deployment-controller";

/// What one sync works on.
struct Sync<'a> {
    api: &'a Api,
    queue: &'a Arc<Queue>,
    key: &'a ObjKey,
    /// The Deployment as last read or written.
    d: Value,
}

/// Syncs the Deployment at `key`.
pub(crate) fn sync(api: &Api, queue: &Arc<Queue>, key: &ObjKey) {
    let Some(obj) = api.get(DEPLOYMENTS, key) else {
        return;
    };
    let mut s = Sync {
        api,
        queue,
        key,
        d: obj.to_value(),
    };
    s.run();
}

impl Sync<'_> {
    fn event(&self, ty: &str, reason: &str, msg: &str) {
        self.api
            .event(&self.d, DEPLOYMENTS, ty, reason, msg, COMPONENT);
    }

    fn status(&self) -> Value {
        self.d.get("status").cloned().unwrap_or_else(|| json!({}))
    }

    fn write_status(&mut self, status: Value) {
        match self.api.update_status(DEPLOYMENTS, self.key, MANAGER, |o| {
            if o.get("status") == Some(&status) {
                return false;
            }
            o["status"] = status.clone();
            true
        }) {
            Ok(Some(obj)) => self.d = obj.to_value(),
            Ok(None) => {}
            Err(e) => {
                tracing::debug!(deployment = %self.key.1, error = %e.message, "status not written");
                self.queue
                    .add_after(self.key.clone(), std::time::Duration::from_millis(200));
            }
        }
    }

    /// `SetDeploymentRevision` (written through the main endpoint; status
    /// updates keep metadata).
    fn set_revision(&mut self, revision: &str) {
        let current = self
            .d
            .at("/metadata/annotations")
            .and_then(|a| a.get(REVISION))
            .and_then(Value::as_str);
        if current == Some(revision) {
            return;
        }
        let rev = revision.to_owned();
        if let Ok(Some(obj)) = self.api.update(DEPLOYMENTS, self.key, MANAGER, |o| {
            annotations_mut(o).insert(REVISION.into(), json!(rev));
            true
        }) {
            self.d = obj.to_value();
        }
    }

    fn run(&mut self) {
        let selector = self.d.at("/spec/selector").cloned().unwrap_or_default();
        if pods::selector_is_empty(&selector) {
            self.event(
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            );
            let mut st = self.status();
            st["observedGeneration"] = self.d["metadata"]["generation"].clone();
            self.write_status(st);
            return;
        }
        let candidates = self.api.list(REPLICASETS, Some(&self.key.0));
        let mut rss: Vec<Rs> = claim(
            self.api,
            &self.d,
            DEPLOYMENTS,
            &selector,
            REPLICASETS,
            candidates,
            None,
        )
        .into_iter()
        .map(|obj| Rs { obj })
        .collect();
        rss.sort_by(by_creation);
        if self.d.at("/metadata/deletionTimestamp").is_some() {
            let (new, old) = self.get_all(&rss, false);
            self.sync_status(new.as_ref(), &old);
            return;
        }
        self.check_paused();
        let paused = self.d.at("/spec/paused").and_then(Value::as_bool) == Some(true);
        if paused || self.scaling_event(&rss) {
            self.sync_scale(&rss, paused);
            return;
        }
        if rolling(&self.d) {
            self.rolling(&rss);
        } else {
            self.recreate(&rss);
        }
    }

    /// `checkPausedConditions`.
    fn check_paused(&mut self) {
        if status::deadline(&self.d).is_none() {
            return;
        }
        let st = self.status();
        let reason = status::get(&st, PROGRESSING)
            .and_then(|c| c.get("reason"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if reason == status::TIMED_OUT {
            return;
        }
        let paused = self.d.at("/spec/paused").and_then(Value::as_bool) == Some(true);
        let exists = reason == "DeploymentPaused";
        let mut st = st;
        if paused && !exists {
            status::set(
                &mut st,
                status::condition(
                    PROGRESSING,
                    "Unknown",
                    "DeploymentPaused",
                    "Deployment is paused",
                ),
            );
        } else if !paused && exists {
            status::set(
                &mut st,
                status::condition(
                    PROGRESSING,
                    "Unknown",
                    "DeploymentResumed",
                    "Deployment is resumed",
                ),
            );
        } else {
            return;
        }
        self.write_status(st);
    }

    /// `getAllReplicaSetsAndSyncRevision`: (new, old).
    fn get_all(&mut self, rss: &[Rs], create: bool) -> (Option<Rs>, Vec<Rs>) {
        let template = self.d.at("/spec/template").cloned().unwrap_or_default();
        let new = rss
            .iter()
            .find(|r| {
                equal_ignore_hash(
                    r.v().at("/spec/template").unwrap_or(&Value::Null),
                    &template,
                )
            })
            .cloned();
        let old: Vec<Rs> = rss
            .iter()
            .filter(|r| new.as_ref().is_none_or(|n| n.uid() != r.uid()))
            .cloned()
            .collect();
        let max_old = old.iter().map(Rs::revision).max().unwrap_or(0);
        let new_revision = max_old + 1;
        let new = match new {
            Some(rs) => Some(self.sync_existing_new(rs, new_revision)),
            None if create => self.create_new(&old, new_revision),
            None => None,
        };
        (new, old)
    }

    fn sync_existing_new(&mut self, rs: Rs, new_revision: i64) -> Rs {
        let d = self.d.clone();
        let min_ready = d.at("/spec/minReadySeconds").cloned();
        let updated = self
            .api
            .update(REPLICASETS, &key_of(&rs.v()), MANAGER, |o| {
                let mut changed = set_new_rs_annotations(&d, o, new_revision, true);
                let cur = o.at("/spec/minReadySeconds").cloned();
                let want = min_ready.clone().filter(|v| v.as_i64() != Some(0));
                if cur.filter(|v| v.as_i64() != Some(0)) != want {
                    if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
                        match &want {
                            Some(v) => spec.insert("minReadySeconds".into(), v.clone()),
                            None => spec.remove("minReadySeconds"),
                        };
                    }
                    changed = true;
                }
                changed
            });
        if let Ok(Some(obj)) = updated {
            // The next sync carries on with the updated ReplicaSet.
            return Rs { obj };
        }
        let revision = rs.annotation(REVISION).unwrap_or_default();
        self.set_revision(&revision);
        let mut st = self.status();
        if status::deadline(&self.d).is_some() && status::get(&st, PROGRESSING).is_none() {
            let msg = format!("Found new replica set \"{}\"", rs.name());
            status::set(
                &mut st,
                status::condition(PROGRESSING, "True", "FoundNewReplicaSet", &msg),
            );
            self.write_status(st);
        }
        rs
    }

    fn create_new(&mut self, old: &[Rs], new_revision: i64) -> Option<Rs> {
        let d = self.d.clone();
        let (ns, name) = self.key.clone();
        let template = d.at("/spec/template").cloned().unwrap_or_default();
        let collision = d.at("/status/collisionCount").and_then(Value::as_i64);
        let hash = pod_template_hash(&template, collision);
        let mut new_template = template.clone();
        if let Some(labels) =
            crate::registry::fields::ensure_object(&mut new_template, &["metadata", "labels"])
        {
            labels.insert(HASH_LABEL.into(), json!(hash));
        }
        let mut selector = d.at("/spec/selector").cloned().unwrap_or_default();
        if let Some(ml) = crate::registry::fields::ensure_object(&mut selector, &["matchLabels"]) {
            ml.insert(HASH_LABEL.into(), json!(hash));
        }
        let rs_name = format!("{name}-{hash}");
        let mut spec = json!({"replicas": 0, "selector": selector, "template": new_template});
        if let Some(m) = d
            .at("/spec/minReadySeconds")
            .filter(|v| v.as_i64() != Some(0))
        {
            spec["minReadySeconds"] = m.clone();
        }
        let mut rs = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": rs_name,
                "namespace": ns,
                "labels": new_template.at("/metadata/labels").cloned().unwrap_or_default(),
                "ownerReferences": [controller_ref(&d, DEPLOYMENTS)],
            },
            "spec": spec,
        });
        // NewRSNewReplicas with the new ReplicaSet at 0.
        let old_refs: Vec<&Rs> = old.iter().collect();
        let replicas = if rolling(&d) {
            let max_total = desired(&d) + max_surge(&d);
            let current = replica_count(&old_refs);
            if current >= max_total {
                0
            } else {
                (max_total - current).min(desired(&d))
            }
        } else {
            desired(&d)
        };
        rs["spec"]["replicas"] = json!(replicas);
        set_new_rs_annotations(&d, &mut rs, new_revision, false);
        let created = match self.api.create(REPLICASETS, MANAGER, rs) {
            Ok(obj) => {
                if replicas > 0 {
                    self.event(
                        "Normal",
                        "ScalingReplicaSet",
                        &format!("Scaled up replica set {rs_name} from 0 to {replicas}"),
                    );
                }
                Rs { obj }
            }
            Err(e) if e.code == 409 => {
                let existing = self.api.get(REPLICASETS, &(ns.clone(), rs_name.clone()))?;
                let ours = crate::controllers::workloads::api::controller_of(&existing.value())
                    .and_then(|r| r.get("uid"))
                    .and_then(Value::as_str)
                    == util::meta_str(&d, "uid");
                if ours
                    && equal_ignore_hash(
                        existing
                            .value()
                            .at("/spec/template")
                            .unwrap_or(&Value::Null),
                        &template,
                    )
                {
                    Rs { obj: existing }
                } else {
                    // A hash collision: count it, and the next sync hashes anew.
                    let mut st = self.status();
                    st["collisionCount"] = json!(collision.unwrap_or(0) + 1);
                    self.write_status(st);
                    return None;
                }
            }
            Err(e) => {
                let msg = format!(
                    "Failed to create new replica set \"{rs_name}\": {}",
                    e.message
                );
                if status::deadline(&d).is_some() {
                    let mut st = self.status();
                    status::set(
                        &mut st,
                        status::condition(PROGRESSING, "False", "ReplicaSetCreateError", &msg),
                    );
                    self.write_status(st);
                }
                self.event("Warning", "ReplicaSetCreateError", &msg);
                return None;
            }
        };
        self.set_revision(&new_revision.to_string());
        if status::deadline(&self.d).is_some() {
            let mut st = self.status();
            let msg = format!("Created new replica set \"{rs_name}\"");
            status::set(
                &mut st,
                status::condition(PROGRESSING, "True", "NewReplicaSetCreated", &msg),
            );
            self.write_status(st);
        }
        Some(created)
    }

    /// `scaleReplicaSet`: size and replica annotations; whether it scaled.
    fn scale_rs(&self, rs: &Rs, to: i64, op: &str) -> bool {
        let d = &self.d;
        let (want, max) = (desired(d), desired(d) + max_surge(d));
        let from = rs.replicas();
        let res = self
            .api
            .update(REPLICASETS, &key_of(&rs.v()), MANAGER, |o| {
                let mut changed = set_replicas_annotations(o, want, max);
                if o.at("/spec/replicas").and_then(Value::as_i64) != Some(to) {
                    o["spec"]["replicas"] = json!(to);
                    changed = true;
                }
                changed
            });
        let scaled = matches!(res, Ok(Some(_))) && from != to;
        if scaled {
            self.event(
                "Normal",
                "ScalingReplicaSet",
                &format!("Scaled {op} replica set {} from {from} to {to}", rs.name()),
            );
        }
        scaled
    }

    /// `scaleReplicaSetAndRecordEvent`.
    fn scale_and_record(&self, rs: &Rs, to: i64) -> bool {
        if rs.replicas() == to {
            return false;
        }
        let op = if rs.replicas() < to { "up" } else { "down" };
        self.scale_rs(rs, to, op)
    }

    /// `isScalingEvent`.
    fn scaling_event(&mut self, rss: &[Rs]) -> bool {
        let (new, old) = self.get_all(rss, false);
        let want = desired(&self.d);
        new.iter()
            .chain(old.iter())
            .filter(|r| r.replicas() > 0)
            .any(|r| {
                r.annotation(DESIRED_REPLICAS)
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|v| v != want)
            })
    }

    /// `dc.sync`: proportional scaling, cleanup while paused, status.
    fn sync_scale(&mut self, rss: &[Rs], paused: bool) {
        let (new, old) = self.get_all(rss, false);
        self.scale(new.as_ref(), &old);
        if paused {
            self.cleanup(&old);
        }
        self.sync_status(new.as_ref(), &old);
    }

    /// `syncDeploymentStatus`: counts and Available, no progress check.
    fn sync_status(&mut self, new: Option<&Rs>, old: &[Rs]) {
        let all: Vec<&Rs> = old.iter().chain(new).collect();
        let st = status::calculate(&self.d, &all, new);
        self.write_status(st);
    }

    /// `syncRolloutStatus`.
    fn sync_rollout(&mut self, new: Option<&Rs>, old: &[Rs]) {
        let all: Vec<&Rs> = old.iter().chain(new).collect();
        let (st, recheck) = status::rollout(&self.d, &all, new);
        self.write_status(st);
        if let Some(secs) = recheck {
            self.queue.add_after(
                self.key.clone(),
                std::time::Duration::from_secs(secs as u64),
            );
        }
    }

    /// `dc.scale`: proportional scaling across active ReplicaSets.
    fn scale(&self, new: Option<&Rs>, old: &[Rs]) {
        let d = &self.d;
        let want = desired(d);
        let mut olds: Vec<&Rs> = old.iter().collect();
        olds.sort_by(|a, b| by_creation(b, a));
        let active: Vec<&Rs> = olds
            .iter()
            .copied()
            .chain(new)
            .filter(|r| r.replicas() > 0)
            .collect();
        // FindActiveOrLatest.
        let target = match active.len() {
            0 => new.or_else(|| olds.first().copied()),
            1 => Some(active[0]),
            _ => None,
        };
        if let Some(rs) = target {
            if rs.replicas() != want {
                self.scale_and_record(rs, want);
            }
            return;
        }
        // IsSaturated: the new ReplicaSet carries everything.
        if let Some(n) = new {
            let saturated = n.replicas() == want
                && n.annotation(DESIRED_REPLICAS)
                    .and_then(|v| v.parse::<i64>().ok())
                    == Some(want)
                && n.available() == want;
            if saturated {
                for rs in olds.iter().filter(|r| r.replicas() > 0) {
                    self.scale_and_record(rs, 0);
                }
                return;
            }
        }
        if !rolling(d) {
            return;
        }
        let mut all: Vec<&Rs> = active;
        let all_replicas = replica_count(&all);
        let allowed = if want > 0 { want + max_surge(d) } else { 0 };
        let to_add = allowed - all_replicas;
        if to_add > 0 {
            // Larger first; newer first among equals.
            all.sort_by(|a, b| {
                b.replicas()
                    .cmp(&a.replicas())
                    .then_with(|| by_creation(b, a))
            });
        } else if to_add < 0 {
            // Larger first; older first among equals.
            all.sort_by(|a, b| {
                b.replicas()
                    .cmp(&a.replicas())
                    .then_with(|| by_creation(a, b))
            });
        }
        let op = if to_add > 0 { "up" } else { "down" };
        let mut added = 0;
        let mut sizes: Vec<i64> = Vec::with_capacity(all.len());
        for rs in &all {
            if to_add != 0 {
                let p = proportion(rs, d, to_add, added);
                sizes.push(rs.replicas() + p);
                added += p;
            } else {
                sizes.push(rs.replicas());
            }
        }
        for (i, rs) in all.iter().enumerate() {
            let mut size = sizes[i];
            if i == 0 && to_add != 0 {
                size = (size + to_add - added).max(0);
            }
            self.scale_rs(rs, size, op);
        }
    }

    /// `cleanupDeployment`: old ReplicaSets past `revisionHistoryLimit`.
    fn cleanup(&self, old: &[Rs]) {
        let Some(limit) = self
            .d
            .at("/spec/revisionHistoryLimit")
            .and_then(Value::as_i64)
        else {
            return;
        };
        let mut alive: Vec<&Rs> = old.iter().filter(|r| !r.deleting()).collect();
        let diff = alive.len() as i64 - limit;
        if diff <= 0 {
            return;
        }
        alive.sort_by(|a, b| {
            a.revision()
                .cmp(&b.revision())
                .then_with(|| by_creation(a, b))
        });
        for rs in alive.into_iter().take(diff as usize) {
            if rs.status_replicas() != 0
                || rs.replicas() != 0
                || rs.generation() > rs.observed_generation()
            {
                continue;
            }
            let _ = self.api.delete(
                REPLICASETS,
                &key_of(&rs.v()),
                Some(rs.uid()),
                None,
                Some(Propagation::Background),
            );
        }
    }

    /// `rolloutRolling`.
    fn rolling(&mut self, rss: &[Rs]) {
        let (new, old) = self.get_all(rss, true);
        let all: Vec<&Rs> = old.iter().chain(new.as_ref()).collect();
        if let Some(n) = &new {
            if self.reconcile_new(&all, n) {
                self.sync_rollout(new.as_ref(), &old);
                return;
            }
        }
        let active_old: Vec<&Rs> = old.iter().filter(|r| r.replicas() > 0).collect();
        if self.reconcile_old(&all, &active_old, new.as_ref()) {
            self.sync_rollout(new.as_ref(), &old);
            return;
        }
        if status::complete(&self.d, &self.status()) {
            self.cleanup(&old);
        }
        self.sync_rollout(new.as_ref(), &old);
    }

    /// `reconcileNewReplicaSet`.
    fn reconcile_new(&self, all: &[&Rs], new: &Rs) -> bool {
        let d = &self.d;
        let want = desired(d);
        if new.replicas() == want {
            return false;
        }
        if new.replicas() > want {
            return self.scale_and_record(new, want);
        }
        let max_total = want + max_surge(d);
        let current = replica_count(all);
        let target = if current >= max_total {
            new.replicas()
        } else {
            new.replicas() + (max_total - current).min(want - new.replicas())
        };
        self.scale_and_record(new, target)
    }

    /// `reconcileOldReplicaSets`.
    fn reconcile_old(&self, all: &[&Rs], old: &[&Rs], new: Option<&Rs>) -> bool {
        let d = &self.d;
        if replica_count(old) == 0 {
            return false;
        }
        let min_available = desired(d) - max_unavailable(d);
        let new_unavailable = new.map_or(0, |n| n.replicas() - n.available());
        let max_scaled_down = replica_count(all) - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return false;
        }
        let mut sorted: Vec<&Rs> = old.to_vec();
        sorted.sort_by(|a, b| by_creation(a, b));
        // cleanupUnhealthyReplicas.
        let mut cleaned = 0;
        let mut after: Vec<(i64, &Rs)> = Vec::new();
        for rs in &sorted {
            let mut replicas = rs.replicas();
            if cleaned < max_scaled_down && replicas != 0 && replicas != rs.available() {
                let down = (max_scaled_down - cleaned).min(replicas - rs.available());
                replicas -= down;
                if self.scale_and_record(rs, replicas) {
                    cleaned += down;
                } else {
                    replicas = rs.replicas();
                }
            }
            after.push((replicas, rs));
        }
        // scaleDownOldReplicaSetsForRollingUpdate.
        let available = available_count(all);
        let mut scaled = 0;
        if available > min_available {
            let total = available - min_available;
            for (replicas, rs) in after {
                if scaled >= total {
                    break;
                }
                if replicas == 0 {
                    continue;
                }
                let down = replicas.min(total - scaled);
                if self.scale_rs(rs, replicas - down, "down") {
                    scaled += down;
                }
            }
        }
        cleaned + scaled > 0
    }

    /// `rolloutRecreate`.
    fn recreate(&mut self, rss: &[Rs]) {
        let (new, old) = self.get_all(rss, false);
        let mut scaled_down = false;
        for rs in old.iter().filter(|r| r.replicas() > 0) {
            scaled_down |= self.scale_and_record(rs, 0);
        }
        if scaled_down {
            self.sync_rollout(new.as_ref(), &old);
            return;
        }
        if self.old_pods_running(new.as_ref(), &old) {
            self.sync_rollout(new.as_ref(), &old);
            return;
        }
        let new = match new {
            Some(n) => Some(n),
            None => self.get_all(rss, true).0,
        };
        if let Some(n) = &new {
            self.scale_and_record(n, desired(&self.d));
        }
        if status::complete(&self.d, &self.status()) {
            self.cleanup(&old);
        }
        self.sync_rollout(new.as_ref(), &old);
    }

    /// `oldPodsRunning`.
    fn old_pods_running(&self, new: Option<&Rs>, old: &[Rs]) -> bool {
        let refs: Vec<&Rs> = old.iter().collect();
        if actual_count(&refs) > 0 {
            return true;
        }
        old.iter()
            .filter(|r| new.is_none_or(|n| n.uid() != r.uid()))
            .any(|r| {
                self.api
                    .owned(PODS, r.uid())
                    .iter()
                    .any(|p| !pods::terminal(&p.value()))
            })
    }
}

/// `GetProportion`.
fn proportion(rs: &Rs, d: &Value, to_add: i64, added: i64) -> i64 {
    if rs.replicas() == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = if desired(d) == 0 {
        -rs.replicas()
    } else {
        let deployment_replicas = desired(d) + max_surge(d);
        let annotated = rs
            .annotation(MAX_REPLICAS)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or_else(|| {
                d.at("/status/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            });
        if annotated == 0 {
            0
        } else {
            ((rs.replicas() * deployment_replicas) as f64 / annotated as f64).round() as i64
                - rs.replicas()
        }
    };
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}
