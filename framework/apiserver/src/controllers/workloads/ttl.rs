//! The TTL-after-finished controller: a Job with
//! `ttlSecondsAfterFinished` is deleted (foreground, so its pods go first)
//! that long after its `Complete` or `Failed` condition.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::api::{stored_key, Api, JOBS};
use super::informer::{self, Change};
use super::queue::Queue;
use crate::machinery::util::Pointer;
use crate::objects::Propagation;
use crate::storage::ObjKey;

/// Starts the controller.
pub(crate) fn start(api: Arc<Api>, cancel: CancellationToken) {
    let queue = Arc::new(Queue::default());
    let q = queue.clone();
    informer::watch(
        api.shared.clone(),
        JOBS.res(),
        cancel.clone(),
        move |c: &Change| {
            let ttl = ["spec".to_owned(), "ttlSecondsAfterFinished".to_owned()];
            if c.obj.field(&ttl).is_some() {
                q.add(stored_key(&c.obj));
            }
        },
    );
    let q = queue.clone();
    tokio::spawn(async move {
        q.clone().run(cancel, |key| sync(&api, &q, key)).await;
    });
}

fn finished_at(job: &Value) -> Option<jiff::Timestamp> {
    job.at("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| {
            matches!(
                c.get("type").and_then(Value::as_str),
                Some("Complete" | "Failed")
            ) && c.get("status").and_then(Value::as_str) == Some("True")
        })?
        .get("lastTransitionTime")?
        .as_str()?
        .parse()
        .ok()
}

fn sync(api: &Api, queue: &Arc<Queue>, key: &ObjKey) {
    let Some(obj) = api.get(JOBS, key) else {
        return;
    };
    let job = &obj.value();
    if job.at("/metadata/deletionTimestamp").is_some() {
        return;
    }
    let (Some(ttl), Some(at)) = (
        job.at("/spec/ttlSecondsAfterFinished")
            .and_then(Value::as_i64),
        finished_at(job),
    ) else {
        return;
    };
    let left = at.as_second() + ttl - jiff::Timestamp::now().as_second();
    if left > 0 {
        queue.add_after(key.clone(), Duration::from_secs(left as u64));
        return;
    }
    let _ = api.delete(
        JOBS,
        key,
        Some(obj.uid()),
        None,
        Some(Propagation::Foreground),
    );
}
