//! The ownerReference garbage collector: dependents of a removed owner are
//! deleted when no owner is left (or lose the dangling reference), and the
//! `orphan` and `foregroundDeletion` finalizers are carried out.

use serde_json::Value;

use super::write::{delete_quietly, owner_refs, ref_uid, remove_finalizer, strip_refs};
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

/// Whether the owner that reference `r` names exists for a dependent in
/// `namespace` (`""` when cluster-scoped). kube-controller-manager's
/// garbage collector looks an owner up by the reference's group, kind and
/// name in the dependent's namespace (a cluster-scoped dependent's only
/// among cluster-scoped kinds) and compares uids: the uid's object
/// elsewhere (in another namespace, of another kind or name) is no owner,
/// so the reference is dangling (and kube records `OwnerRefInvalidNamespace`
/// when the namespace is what differs).
pub(crate) fn owner_present(shared: &Shared, namespace: &str, r: &Value) -> bool {
    let Some((res, (owner_ns, owner_name))) = shared.storage.lock().by_uid(ref_uid(r)) else {
        return false;
    };
    let Some(def) = shared.registry().by_key(&res) else {
        return false;
    };
    let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let group = field("apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
    let placed = owner_ns.is_empty() || owner_ns == namespace;
    placed && owner_name == field("name") && def.kind == field("kind") && def.group == group
}

/// The uids of the owners `obj` (in `namespace`) references that are not
/// [present](owner_present).
pub(crate) fn dangling_owner_uids(shared: &Shared, namespace: &str, obj: &Value) -> Vec<String> {
    owner_refs(obj)
        .iter()
        .filter(|r| !owner_present(shared, namespace, r))
        .map(|r| ref_uid(r).to_owned())
        .collect()
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
