//! The ReplicaSet controller (`pkg/controller/replicaset`): keeps
//! `spec.replicas` active pods from the template, adopting matching
//! orphans and releasing pods that stopped matching; creates in slow-start
//! batches (1, 2, 4, … up to 500 a pass), deletes surplus pods in
//! `ActivePods` order; reports `replicas`, `fullyLabeledReplicas`,
//! `readyReplicas`, `availableReplicas`, `observedGeneration` and the
//! `ReplicaFailure` condition.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::api::{
    controller_key, controller_of, controller_ref, key_of, stored_controller_key, stored_key, Api,
    Kind, PODS, REPLICASETS,
};
use super::informer::{self, Change};
use super::owners::claim;
use super::pods;
use super::queue::Queue;
use crate::controllers::write::MANAGER;
use crate::machinery::selectors::selector_matches;
use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::storage::{EventType, ObjKey, StoredObject};

const COMPONENT: &str = "replicaset-controller";
/// `burstReplicas`: the most pods created or deleted in one pass.
const BURST: usize = 500;

/// Orphan pods (no controller) per namespace, candidates for adoption.
#[derive(Default)]
pub(crate) struct Orphans(Mutex<HashMap<String, BTreeSet<String>>>);

impl Orphans {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeSet<String>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tracks `pod`: an active pod without a controller is an orphan.
    pub fn observe(&self, ty: EventType, pod: &Value) {
        let (ns, name) = key_of(pod);
        let orphan = ty != EventType::Deleted && controller_of(pod).is_none() && pods::active(pod);
        let mut map = self.lock();
        if orphan {
            map.entry(ns).or_default().insert(name);
        } else if let Some(set) = map.get_mut(&ns) {
            set.remove(&name);
        }
    }

    /// The orphans of a namespace.
    pub fn of(&self, api: &Api, ns: &str) -> Vec<Arc<StoredObject>> {
        let names: Vec<String> = self
            .lock()
            .get(ns)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        names
            .into_iter()
            .filter_map(|n| api.get(PODS, &(ns.to_owned(), n)))
            .collect()
    }
}

/// Feeds `queue` for a controller of pods of `kind`: each change of a
/// `kind` object queues it; each pod change is noted in `orphans` and
/// queues the `kind` object controlling the pod.
pub(crate) fn watch_owners_and_pods(
    api: &Api,
    kind: Kind,
    queue: &Arc<Queue>,
    orphans: &Arc<Orphans>,
    cancel: &CancellationToken,
) {
    let q = queue.clone();
    informer::watch(
        api.shared.clone(),
        kind.res(),
        cancel.clone(),
        move |c: &Change| q.add(stored_key(&c.obj)),
    );
    let (q, o) = (queue.clone(), orphans.clone());
    informer::watch(
        api.shared.clone(),
        PODS.res(),
        cancel.clone(),
        move |c: &Change| {
            let pod = c.obj.value();
            o.observe(c.ty, &pod);
            if let Some(k) = controller_key(&pod, kind) {
                q.add(k);
            }
        },
    );
}

/// Starts the controller.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    let queue = Arc::new(Queue::default());
    let orphans = Arc::new(Orphans::default());
    let q = queue.clone();
    informer::watch(
        api.shared.clone(),
        REPLICASETS.res(),
        cancel.clone(),
        move |c: &Change| q.add(stored_key(&c.obj)),
    );
    let q = queue.clone();
    let o = orphans.clone();
    let a = api.clone();
    informer::watch(
        api.shared.clone(),
        PODS.res(),
        cancel.clone(),
        move |c: &Change| {
            let pod = c.obj.value();
            o.observe(c.ty, &pod);
            if let Some(k) = controller_key(&pod, REPLICASETS) {
                q.add(k);
            } else if pods::active(&pod) && c.ty != EventType::Deleted {
                // An orphan: wake the ReplicaSets that would adopt it.
                let ns = c.obj.namespace();
                for rs in a.list(REPLICASETS, Some(ns)) {
                    let sel = rs.value().at("/spec/selector").cloned().unwrap_or_default();
                    if !pods::selector_is_empty(&sel)
                        && selector_matches(&sel, pod.at("/metadata/labels"))
                    {
                        q.add(key_of(&rs.value()));
                    }
                }
            }
            if let Some(old) = &c.old {
                if let Some(k) = stored_controller_key(old, REPLICASETS) {
                    q.add(k);
                }
            }
        },
    );
    let q = queue.clone();
    tokio::spawn(async move {
        q.clone()
            .run(cancel, |key| sync(&api, &q, &orphans, key))
            .await;
    });
}

fn int(v: &Value, ptr: &str) -> i64 {
    v.at(ptr).and_then(Value::as_i64).unwrap_or(0)
}

/// One `syncReplicaSet`.
fn sync(api: &Api, queue: &Arc<Queue>, orphans: &Orphans, key: &ObjKey) {
    let Some(rs) = api.get(REPLICASETS, key) else {
        return;
    };
    let rs = rs.value().clone();
    let selector = rs.at("/spec/selector").cloned().unwrap_or_default();
    if pods::selector_is_empty(&selector) {
        return;
    }
    let uid = util::meta_str(&rs, "uid").unwrap_or("");
    let mut candidates = api.owned(PODS, uid);
    candidates.extend(orphans.of(api, &key.0));
    let claimed = claim(api, &rs, REPLICASETS, &selector, PODS, candidates, None);
    let active: Vec<Arc<StoredObject>> = claimed
        .into_iter()
        .filter(|p| pods::active(&p.value()))
        .collect();
    let mut failure = None;
    if rs.at("/metadata/deletionTimestamp").is_none() {
        failure = manage(api, &rs, &active);
    }
    let desired = int(&rs, "/spec/replicas");
    let min_ready = int(&rs, "/spec/minReadySeconds");
    let template_labels = rs
        .at("/spec/template/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let fully_labeled = active
        .iter()
        .filter(|p| {
            let tree = p.value();
            let have = tree.at("/metadata/labels");
            template_labels.as_object().is_none_or(|want| {
                want.iter()
                    .all(|(k, v)| have.and_then(|h| h.get(k)) == Some(v))
            })
        })
        .count();
    let ready = active.iter().filter(|p| pods::ready(&p.value())).count();
    let available = active
        .iter()
        .filter(|p| pods::available(&p.value(), min_ready))
        .count();
    let mut status = rs.get("status").cloned().unwrap_or_else(|| json!({}));
    status["replicas"] = json!(active.len());
    status["fullyLabeledReplicas"] = json!(fully_labeled);
    status["readyReplicas"] = json!(ready);
    status["availableReplicas"] = json!(available);
    status["observedGeneration"] = json!(int(&rs, "/metadata/generation"));
    set_failure(&mut status, failure, active.len() as i64 - desired);
    if let Some(map) = status.as_object_mut() {
        // Zero counts are omitted, as Go's omitempty does.
        for f in ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"] {
            if map.get(f) == Some(&json!(0)) {
                map.remove(f);
            }
        }
    }
    if let Err(e) = api.set_status(REPLICASETS, key, MANAGER, &status) {
        tracing::debug!(rs = %key.1, error = %e.message, "replicaset status not written");
        queue.add_after(key.clone(), std::time::Duration::from_millis(200));
    }
    if let Some(wait) = active
        .iter()
        .filter_map(|p| pods::until_available(&p.value(), min_ready))
        .min()
    {
        queue.add_after(key.clone(), std::time::Duration::from_secs(wait as u64));
    }
}

fn set_failure(status: &mut Value, failure: Option<String>, diff: i64) {
    let Some(map) = status.as_object_mut() else {
        return;
    };
    let conds = map
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let has = conds
        .iter()
        .any(|c| c.get("type").and_then(Value::as_str) == Some("ReplicaFailure"));
    let mut conds: Vec<Value> = conds;
    match failure {
        Some(msg) if !has => conds.push(json!({
            "type": "ReplicaFailure",
            "status": "True",
            "lastTransitionTime": util::now(),
            "reason": if diff < 0 { "FailedCreate" } else { "FailedDelete" },
            "message": msg,
        })),
        None if has => {
            conds.retain(|c| c.get("type").and_then(Value::as_str) != Some("ReplicaFailure"))
        }
        _ => {}
    }
    if conds.is_empty() {
        map.remove("conditions");
    } else {
        map.insert("conditions".into(), json!(conds));
    }
}

/// `manageReplicas`: creates or deletes pods; the first error, if any.
fn manage(api: &Api, rs: &Value, active: &[Arc<StoredObject>]) -> Option<String> {
    let desired = int(rs, "/spec/replicas").max(0) as usize;
    let (ns, name) = key_of(rs);
    if active.len() < desired {
        let want = (desired - active.len()).min(BURST);
        let template = rs.at("/spec/template").cloned().unwrap_or_default();
        let reference = controller_ref(rs, REPLICASETS);
        let mut created = 0;
        let mut batch = 1;
        while created < want {
            let n = batch.min(want - created);
            for _ in 0..n {
                let pod = pods::from_template(&template, &ns, &name, reference.clone());
                match api.create(PODS, MANAGER, pod) {
                    Ok(p) => {
                        api.event(
                            rs,
                            REPLICASETS,
                            "Normal",
                            "SuccessfulCreate",
                            &format!("Created pod: {}", p.name()),
                            COMPONENT,
                        );
                    }
                    Err(e) => {
                        let msg = format!("Error creating: {}", e.message);
                        api.event(rs, REPLICASETS, "Warning", "FailedCreate", &msg, COMPONENT);
                        return Some(e.message);
                    }
                }
            }
            created += n;
            batch *= 2;
        }
    } else if active.len() > desired {
        let surplus = (active.len() - desired).min(BURST);
        let mut victims: Vec<&Arc<StoredObject>> = active.iter().collect();
        victims.sort_by(|a, b| pods::removal_order(&a.value(), &b.value()));
        for p in victims.into_iter().take(surplus) {
            match api.delete(PODS, &key_of(&p.value()), Some(p.uid()), None, None) {
                Ok(_) => api.event(
                    rs,
                    REPLICASETS,
                    "Normal",
                    "SuccessfulDelete",
                    &format!("Deleted pod: {}", p.name()),
                    COMPONENT,
                ),
                Err(e) if e.code == 404 => {}
                Err(e) => return Some(e.message),
            }
        }
    }
    None
}
