//! How the in-server controllers write: through the same write path as
//! requests (`objects::create`/`update`/`delete`), as a named field
//! manager, with the small edits every controller repeats (drop an owner
//! reference, drop a finalizer, delete ignoring "already gone").

use serde_json::{json, Value};

use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::objects::{self, DeleteOpts, Precondition, Propagation, WriteOpts};
use crate::registry::state::Shared;
use crate::registry::ResourceDef;
use crate::storage::ObjKey;

/// The field manager of kube-controller-manager's writes.
pub(crate) const MANAGER: &str = "kube-controller-manager";

/// `metadata.ownerReferences`, cloned.
pub(crate) fn owner_refs(obj: &Value) -> Vec<Value> {
    obj.at("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The `uid` of an owner reference.
pub(crate) fn ref_uid(r: &Value) -> &str {
    r.get("uid").and_then(Value::as_str).unwrap_or("")
}

/// Removes owner references for which `drop` holds.
pub(crate) fn strip_refs(
    shared: &Shared,
    def: &ResourceDef,
    key: &ObjKey,
    drop: impl Fn(&Value) -> bool,
) {
    let opts = WriteOpts::internal(def, MANAGER);
    let _ = objects::update(shared, def, key, &opts, |cur| {
        let mut next = cur.clone();
        let refs: Vec<Value> = owner_refs(cur).into_iter().filter(|r| !drop(r)).collect();
        if let Some(meta) = util::meta_mut(&mut next) {
            if refs.is_empty() {
                meta.remove("ownerReferences");
            } else {
                meta.insert("ownerReferences".into(), json!(refs));
            }
        }
        Ok((next, Precondition::None))
    });
}

/// Removes one finalizer (a no-op when it is not there).
pub(crate) fn remove_finalizer(shared: &Shared, def: &ResourceDef, key: &ObjKey, finalizer: &str) {
    let opts = WriteOpts::internal(def, MANAGER);
    let _ = objects::update(shared, def, key, &opts, |cur| {
        let mut next = cur.clone();
        let fins: Vec<String> = util::finalizers(cur)
            .into_iter()
            .filter(|f| f != finalizer)
            .collect();
        if let Some(meta) = util::meta_mut(&mut next) {
            if fins.is_empty() {
                meta.remove("finalizers");
            } else {
                meta.insert("finalizers".into(), json!(fins));
            }
        }
        Ok((next, Precondition::None))
    });
}

/// Deletes an object; "not found" is success, other errors are logged.
pub(crate) fn delete_quietly(
    shared: &Shared,
    def: &ResourceDef,
    key: &ObjKey,
    propagation: Propagation,
) {
    let opts = DeleteOpts {
        propagation: Some(propagation),
        ..DeleteOpts::default()
    };
    if let Err(e) = objects::delete(shared, def, key, &opts) {
        if e.code != 404 {
            tracing::debug!(name = %key.1, error = %e.message, "controller could not delete");
        }
    }
}

/// The object an Event is about, with its kind and API version.
pub(crate) struct Involved<'a> {
    pub obj: &'a Value,
    pub kind: &'a str,
    pub api_version: &'a str,
}

/// What an Event says, and who says it.
pub(crate) struct Note<'a> {
    /// `Normal` or `Warning`.
    pub ty: &'a str,
    pub reason: &'a str,
    pub message: &'a str,
    /// `source.component`, also the write's field manager.
    pub component: &'a str,
}

/// Records a core/v1 Event as client-go's recorder does: named after the
/// involved object and the time, in its namespace (`default` for a
/// cluster-scoped one). A failure to record is logged, never an error.
pub(crate) fn record_event(shared: &Shared, about: Involved<'_>, note: Note<'_>) {
    let Some(def) = shared.registry().get("", "v1", "events") else {
        return;
    };
    let obj = about.obj;
    let name = util::meta_str(obj, "name").unwrap_or("");
    let ns = match util::meta_str(obj, "namespace").unwrap_or("") {
        "" => "default",
        ns => ns,
    };
    let now = util::now();
    let nanos = jiff::Timestamp::now().as_nanosecond();
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": format!("{name}.{:x}", nanos as u64), "namespace": ns},
        "involvedObject": {
            "kind": about.kind,
            "namespace": util::meta_str(obj, "namespace").unwrap_or(""),
            "name": name,
            "uid": util::meta_str(obj, "uid").unwrap_or(""),
            "apiVersion": about.api_version,
            "resourceVersion": util::meta_str(obj, "resourceVersion").unwrap_or(""),
        },
        "reason": note.reason,
        "message": note.message,
        "source": {"component": note.component},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "type": note.ty,
        "eventTime": null,
        "reportingComponent": note.component,
        "reportingInstance": "",
    });
    let opts = WriteOpts::internal(&def, note.component);
    if let Err(e) = objects::create(shared, &def, Some(ns), event, &opts) {
        tracing::debug!(reason = note.reason, error = %e.message, "event not recorded");
    }
}
