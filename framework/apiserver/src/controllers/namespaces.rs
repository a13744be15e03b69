//! Namespace deletion, as the namespace controller does it: delete every
//! object in the namespace, and once it is empty drop the `kubernetes`
//! finalizer through the `finalize` subresource.

use serde_json::Value;

use super::write::{delete_quietly, MANAGER};
use crate::objects::{self, Precondition, Propagation, Sub, WriteOpts};
use crate::registry::state::Shared;
use crate::registry::ResourceDef;
use crate::storage::ObjKey;

/// Advances a terminating namespace; `true` once it is finalized.
pub(crate) fn finalize(shared: &Shared, def: &ResourceDef, key: &ObjKey) -> bool {
    let ns = key.1.clone();
    let contents = shared.storage.lock().in_namespace(&ns);
    for (res, obj) in &contents {
        if obj.deleting() {
            continue;
        }
        let odef = shared.registry().by_key(res);
        if let Some(odef) = odef {
            delete_quietly(
                shared,
                &odef,
                &(ns.clone(), obj.name().to_owned()),
                Propagation::Background,
            );
        }
    }
    if !shared.storage.lock().in_namespace(&ns).is_empty() {
        return false;
    }
    let mut opts = WriteOpts::internal(def, MANAGER);
    opts.sub = Sub::Finalize;
    let _ = objects::update(shared, def, key, &opts, |cur| {
        let mut next = cur.clone();
        if let Some(spec) = next.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("finalizers");
        }
        Ok((next, Precondition::None))
    });
    true
}
