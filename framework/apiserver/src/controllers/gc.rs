//! The ownerReference garbage collector: dependents of a removed owner are
//! deleted when no owner is left (or lose the dangling reference), and the
//! `orphan` and `foregroundDeletion` finalizers are carried out.

use serde_json::Value;

use super::write::{
    delete_quietly, record_event, ref_uid, remove_finalizer, strip_refs, Involved, Note,
};
use crate::objects::owners::{lookup, owner_refs, Verdict};
use crate::objects::Propagation;
use crate::registry::state::Shared;
use crate::registry::{ResKey, ResourceDef};
use crate::storage::ObjKey;

/// The event source of kube-controller-manager's garbage collector.
const GC_COMPONENT: &str = "garbage-collector-controller";

/// Dependents of a removed (or absent) owner: deleted when no owner is
/// left, otherwise the dangling references are removed. A dependent with a
/// reference that cannot be judged is left alone, as kube's collector
/// leaves it.
pub(crate) fn owner_gone(shared: &Shared, uid: &str) {
    let deps = shared.storage.lock().dependents(uid);
    for (res, key) in deps {
        let Some(def) = shared.registry().by_key(&res) else {
            continue;
        };
        let Some(obj) = shared.storage.lock().get(&res, &key) else {
            continue;
        };
        let mut alive: Vec<&str> = Vec::new();
        let mut unresolvable = false;
        let tree = obj.value();
        for r in owner_refs(&tree) {
            match lookup(shared, obj.namespace(), r).verdict {
                Verdict::Present => alive.push(ref_uid(r)),
                Verdict::Absent => {}
                Verdict::Unresolvable => unresolvable = true,
            }
        }
        if unresolvable {
            continue;
        }
        if alive.is_empty() {
            delete_quietly(shared, &def, &key, Propagation::Background);
        } else {
            let alive: Vec<String> = alive.into_iter().map(str::to_owned).collect();
            strip_refs(shared, &def, &key, |r| {
                !alive.iter().any(|u| u == ref_uid(r))
            });
        }
    }
}

/// kube's `OwnerRefInvalidNamespace` Warning on the dependent at `key`,
/// given a reference to `uid`, an object in another namespace (a
/// namespaced owner is looked for only in its dependent's namespace).
/// Nothing is recorded when the dependent or the reference went meanwhile.
pub(crate) fn report_misplaced(shared: &Shared, res: &ResKey, key: &ObjKey, uid: &str) {
    let Some(def) = shared.registry().by_key(res) else {
        return;
    };
    let Some(dependent) = shared.storage.lock().get(res, key) else {
        return;
    };
    let tree = dependent.value();
    let Some(r) = owner_refs(&tree).iter().find(|r| ref_uid(r) == uid) else {
        return;
    };
    let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let ns = dependent.namespace();
    let message = format!(
        "ownerRef [{}/{}, namespace: {ns}, name: {}, uid: {}] does not exist in namespace {}",
        field("apiVersion"),
        field("kind"),
        field("name"),
        field("uid"),
        crate::machinery::util::go_quote(ns),
    );
    let api_version = def.api_version(&def.storage_version);
    let about = Involved {
        obj: &dependent.value(),
        kind: &def.kind,
        api_version: &api_version,
    };
    let note = Note {
        ty: "Warning",
        reason: "OwnerRefInvalidNamespace",
        message: &message,
        component: GC_COMPONENT,
    };
    record_event(shared, about, note);
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
        let blocks = owner_refs(&dep.value()).iter().any(|r| {
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
