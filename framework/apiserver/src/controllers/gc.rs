//! The ownerReference garbage collector: dependents of a removed owner are
//! deleted when no owner is left (or lose the dangling reference), and the
//! `orphan` and `foregroundDeletion` finalizers are carried out.

use serde_json::Value;

use super::write::{delete_quietly, owner_refs, ref_uid, remove_finalizer, strip_refs};
use crate::objects::owners::owner_present;
use crate::objects::Propagation;
use crate::registry::ResourceDef;
use crate::state::Shared;
use crate::storage::ObjKey;

/// Dependents of a removed owner: deleted when no owner is left, otherwise
/// the dangling reference is removed.
pub(crate) fn owner_gone(shared: &Shared, uid: &str) {
    let deps = shared.storage.lock().dependents(uid);
    for (res, key) in deps {
        let Some(def) = shared.registry().by_key(&res) else {
            continue;
        };
        let Some(obj) = shared.storage.lock().get(&res, &key) else {
            continue;
        };
        let refs = owner_refs(obj.value());
        let alive: Vec<String> = refs
            .iter()
            .filter(|r| owner_present(shared, obj.namespace(), r))
            .map(|r| ref_uid(r).to_owned())
            .collect();
        if alive.is_empty() {
            delete_quietly(shared, &def, &key, Propagation::Background);
        } else {
            strip_refs(shared, &def, &key, |r| {
                !alive.iter().any(|u| u == ref_uid(r))
            });
        }
    }
}

/// The `orphan` finalizer: dependents lose their reference to `uid`, then
/// the finalizer goes.
pub(crate) fn orphan(shared: &Shared, def: &ResourceDef, key: &ObjKey, uid: &str) {
    // Guards are never held across a write: writes take the locks again.
    let deps = shared.storage.lock().dependents(uid);
    for (dres, dkey) in deps {
        let ddef = shared.registry().by_key(&dres);
        if let Some(ddef) = ddef {
            let u = uid.to_owned();
            strip_refs(shared, &ddef, &dkey, move |r| ref_uid(r) == u);
        }
    }
    remove_finalizer(shared, def, key, "orphan");
}

/// The `foregroundDeletion` finalizer: dependents are deleted (in the
/// foreground too); the owner goes once none blocks it. `true` when done.
pub(crate) fn foreground(shared: &Shared, def: &ResourceDef, key: &ObjKey, uid: &str) -> bool {
    let deps = shared.storage.lock().dependents(uid);
    let mut blocking = 0;
    for (dres, dkey) in &deps {
        let Some(ddef) = shared.registry().by_key(dres) else {
            continue;
        };
        let Some(dep) = shared.storage.lock().get(dres, dkey) else {
            continue;
        };
        let blocks = owner_refs(dep.value()).iter().any(|r| {
            ref_uid(r) == uid && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
        });
        if blocks {
            blocking += 1;
        }
        if !dep.deleting() {
            delete_quietly(shared, &ddef, dkey, Propagation::Foreground);
        }
    }
    if blocking == 0 {
        remove_finalizer(shared, def, key, "foregroundDeletion");
        true
    } else {
        false
    }
}
