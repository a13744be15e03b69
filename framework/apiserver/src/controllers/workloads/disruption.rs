//! The disruption controller (`pkg/controller/disruption`): a
//! PodDisruptionBudget's status — `expectedPods`, `currentHealthy`,
//! `desiredHealthy` (from `minAvailable` or `maxUnavailable`, percentages
//! of the expected pods), `disruptionsAllowed`, the `DisruptionAllowed`
//! condition (`SufficientPods` / `InsufficientPods`) — which the eviction
//! subresource reads and decrements. Evicted pods stay in
//! `disruptedPods` until they are gone.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::api::{key_of, stored_key, Api, PDBS, PODS};
use super::deployment::scaled;
use super::informer::{self, Change};
use super::pods;
use super::queue::Queue;
use crate::controllers::write::MANAGER;
use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::storage::ObjKey;

/// Starts the controller.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    let queue = Arc::new(Queue::default());
    let q = queue.clone();
    informer::watch(
        api.shared.clone(),
        PDBS.res(),
        cancel.clone(),
        move |c: &Change| q.add(stored_key(&c.obj)),
    );
    let (q, a) = (queue.clone(), api.clone());
    informer::watch(
        api.shared.clone(),
        PODS.res(),
        cancel.clone(),
        move |c: &Change| {
            let ns = c.obj.namespace();
            let budgets = a.list(PDBS, Some(ns));
            if budgets.is_empty() {
                return;
            }
            let labels = c.obj.labels().map(Value::Object);
            for pdb in budgets {
                let sel = pdb
                    .value()
                    .at("/spec/selector")
                    .cloned()
                    .unwrap_or_default();
                if !pods::selector_is_empty(&sel)
                    && crate::machinery::selectors::selector_matches(&sel, labels.as_ref())
                {
                    q.add(key_of(&pdb.value()));
                }
            }
        },
    );
    let q = queue.clone();
    tokio::spawn(async move {
        q.run(cancel, |key| sync(&api, key)).await;
    });
}

fn sync(api: &Api, key: &ObjKey) {
    let Some(obj) = api.get(PDBS, key) else {
        return;
    };
    let pdb = &obj.value();
    let sel = pdb.at("/spec/selector").cloned().unwrap_or_default();
    let matching: Vec<_> = if pods::selector_is_empty(&sel) {
        Vec::new()
    } else {
        api.list(PODS, Some(&key.0))
            .into_iter()
            .filter(|p| {
                crate::machinery::selectors::selector_matches(
                    &sel,
                    p.value().at("/metadata/labels"),
                )
            })
            .filter(|p| !pods::terminal(&p.value()))
            .collect()
    };
    // Evicted pods count as disrupted until they are gone.
    let disrupted: serde_json::Map<String, Value> = pdb
        .at("/status/disruptedPods")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(name, _)| {
                    matching
                        .iter()
                        .any(|p| p.name() == name.as_str() && !p.deleting())
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let expected = matching.len() as i64;
    let healthy = matching
        .iter()
        .filter(|p| pods::ready(&p.value()) && !p.deleting() && !disrupted.contains_key(p.name()))
        .count() as i64;
    let desired = match (pdb.at("/spec/minAvailable"), pdb.at("/spec/maxUnavailable")) {
        (Some(min), _) => scaled(Some(min), expected, true),
        (None, Some(max)) => (expected - scaled(Some(max), expected, true)).max(0),
        (None, None) => 0,
    };
    let allowed = (healthy - desired).max(0);
    let mut status = pdb.get("status").cloned().unwrap_or_else(|| json!({}));
    if !status.is_object() {
        status = json!({});
    }
    let cond_status = if allowed > 0 { "True" } else { "False" };
    let reason = if allowed > 0 {
        "SufficientPods"
    } else {
        "InsufficientPods"
    };
    let transition = status
        .at("/conditions/0")
        .filter(|c| c.get("status").and_then(Value::as_str) == Some(cond_status))
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(util::now()));
    status["observedGeneration"] = pdb["metadata"]["generation"].clone();
    status["expectedPods"] = json!(expected);
    status["currentHealthy"] = json!(healthy);
    status["desiredHealthy"] = json!(desired);
    status["disruptionsAllowed"] = json!(allowed);
    status["conditions"] = json!([{
        "type": "DisruptionAllowed", "status": cond_status, "reason": reason, "message": "",
        "observedGeneration": pdb["metadata"]["generation"], "lastTransitionTime": transition,
    }]);
    if disrupted.is_empty() {
        if let Some(m) = status.as_object_mut() {
            m.remove("disruptedPods");
        }
    } else {
        status["disruptedPods"] = Value::Object(disrupted);
    }
    let _ = api.set_status(PDBS, key, MANAGER, &status);
}
