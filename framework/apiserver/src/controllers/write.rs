//! How the in-server controllers write: through the same write path as
//! requests (`objects::create`/`update`/`delete`), as a named field
//! manager, with the small edits every controller repeats (drop an owner
//! reference, drop a finalizer, delete ignoring "already gone").

use serde_json::{json, Value};

use crate::objects::{self, DeleteOpts, Precondition, Propagation, WriteOpts};
use crate::registry::ResourceDef;
use crate::state::Shared;
use crate::storage::ObjKey;
use crate::util;

/// The field manager of kube-controller-manager's writes.
pub(crate) const MANAGER: &str = "kube-controller-manager";

/// `metadata.ownerReferences`, cloned.
pub(crate) fn owner_refs(obj: &Value) -> Vec<Value> {
    obj.pointer("/metadata/ownerReferences")
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
