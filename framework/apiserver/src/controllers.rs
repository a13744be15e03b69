//! What kube-controller-manager would do for a lone API server: the
//! ownerReference garbage collector (background and foreground propagation,
//! orphaning, dangling references), namespace deletion (delete the
//! contents, then drop the `kubernetes` finalizer) and CRD deletion (delete
//! the custom resources, then drop the cleanup finalizer), plus the
//! `default` ServiceAccount of every namespace. Runs as one task woken after
//! writes; work that cannot progress yet stays pending.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::defaults::CRD_CLEANUP;
use crate::objects::{self, DeleteOpts, Precondition, Propagation, Sub, WriteOpts};
use crate::registry::{ResKey, ResourceDef};
use crate::state::Shared;
use crate::storage::ObjKey;
use crate::util;

const MANAGER: &str = "kube-controller-manager";

/// Runs the controllers until `cancel`.
pub(crate) async fn run(shared: Arc<Shared>, cancel: CancellationToken) {
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = shared.controllers.woken() => {}
        }
        process(&shared);
    }
}

/// One pass over the queued work. Creating a ServiceAccount is itself a
/// write that wakes the loop again; nothing here waits.
pub(crate) fn process(shared: &Shared) {
    for ns in shared.controllers.take_new_namespaces() {
        ensure_default_service_account(shared, &ns);
    }
    let gone = shared.controllers.take_owners_gone();
    for uid in gone {
        owner_gone(shared, &uid);
    }
    let deleting = shared.controllers.deleting();
    for (res, key) in deleting {
        if finalize(shared, &res, &key) {
            shared.controllers.done_deleting(res, key);
        }
    }
}

fn owner_refs(obj: &Value) -> Vec<Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn ref_uid(r: &Value) -> &str {
    r.get("uid").and_then(Value::as_str).unwrap_or("")
}

/// Removes owner references for which `drop` holds.
fn strip_refs(shared: &Shared, def: &ResourceDef, key: &ObjKey, drop: impl Fn(&Value) -> bool) {
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

fn remove_finalizer(shared: &Shared, def: &ResourceDef, key: &ObjKey, finalizer: &str) {
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

fn delete_quietly(shared: &Shared, def: &ResourceDef, key: &ObjKey, propagation: Propagation) {
    let opts = DeleteOpts {
        propagation: Some(propagation),
        ..DeleteOpts::default()
    };
    if let Err(e) = objects::delete(shared, def, key, &opts) {
        if e.code != 404 {
            tracing::debug!(name = %key.1, error = %e.message, "garbage collector could not delete");
        }
    }
}

/// Dependents of a removed owner: deleted when no owner is left, otherwise
/// the dangling reference is removed.
fn owner_gone(shared: &Shared, uid: &str) {
    let deps = shared.storage.lock().dependents(uid);
    for (res, key) in deps {
        let Some(def) = shared.registry().by_key(&res) else {
            continue;
        };
        let Some(obj) = shared.storage.lock().get(&res, &key) else {
            continue;
        };
        let refs = owner_refs(&obj.value);
        let alive: Vec<&Value> = {
            let store = shared.storage.lock();
            refs.iter()
                .filter(|r| store.by_uid(ref_uid(r)).is_some())
                .collect()
        };
        if alive.is_empty() {
            delete_quietly(shared, &def, &key, Propagation::Background);
        } else {
            let store_uids: Vec<String> = alive.iter().map(|r| ref_uid(r).to_owned()).collect();
            strip_refs(shared, &def, &key, |r| {
                !store_uids.iter().any(|u| u == ref_uid(r))
            });
        }
    }
}

/// Advances one object under deletion; `true` once nothing is left for
/// the controllers to do.
fn finalize(shared: &Shared, res: &ResKey, key: &ObjKey) -> bool {
    let Some(def) = shared.registry().by_key(res) else {
        return true;
    };
    let Some(obj) = shared.storage.lock().get(res, key) else {
        return true;
    };
    if obj.value.pointer("/metadata/deletionTimestamp").is_none() {
        return true;
    }
    let fins = util::finalizers(&obj.value);
    let mut done = true;
    if def.builtin().is_some() && def.group.is_empty() && def.plural == "namespaces" {
        done &= finalize_namespace(shared, &def, key);
    }
    if fins.iter().any(|f| f == CRD_CLEANUP) {
        done &= finalize_crd(shared, &def, key, obj.name());
    }
    if fins.iter().any(|f| f == "orphan") {
        let uid = obj.uid().to_owned();
        // Guards are never held across a write: writes take the locks again.
        let deps = shared.storage.lock().dependents(&uid);
        for (dres, dkey) in deps {
            let ddef = shared.registry().by_key(&dres);
            if let Some(ddef) = ddef {
                let u = uid.clone();
                strip_refs(shared, &ddef, &dkey, move |r| ref_uid(r) == u);
            }
        }
        remove_finalizer(shared, &def, key, "orphan");
    }
    if fins.iter().any(|f| f == "foregroundDeletion") {
        let uid = obj.uid().to_owned();
        let deps = shared.storage.lock().dependents(&uid);
        let mut blocking = 0;
        for (dres, dkey) in &deps {
            let Some(ddef) = shared.registry().by_key(dres) else {
                continue;
            };
            let Some(dep) = shared.storage.lock().get(dres, dkey) else {
                continue;
            };
            let blocks = owner_refs(&dep.value).iter().any(|r| {
                ref_uid(r) == uid
                    && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
            });
            if blocks {
                blocking += 1;
            }
            if dep.value.pointer("/metadata/deletionTimestamp").is_none() {
                delete_quietly(shared, &ddef, dkey, Propagation::Foreground);
            }
        }
        if blocking == 0 {
            remove_finalizer(shared, &def, key, "foregroundDeletion");
        } else {
            done = false;
        }
    }
    done
}

fn finalize_namespace(shared: &Shared, def: &ResourceDef, key: &ObjKey) -> bool {
    let ns = key.1.clone();
    let contents = shared.storage.lock().in_namespace(&ns);
    for (res, obj) in &contents {
        if obj.value.pointer("/metadata/deletionTimestamp").is_some() {
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

fn finalize_crd(shared: &Shared, def: &ResourceDef, key: &ObjKey, name: &str) -> bool {
    let crdef = shared.registry().crd_def(name);
    if let Some(crdef) = crdef {
        let res = crdef.key();
        let keys = shared.storage.lock().keys(&res);
        for k in &keys {
            delete_quietly(shared, &crdef, k, Propagation::Background);
        }
        if shared.storage.lock().count(&res) > 0 {
            return false;
        }
    }
    remove_finalizer(shared, def, key, CRD_CLEANUP);
    true
}

/// Creates the `default` ServiceAccount of a new namespace, as
/// kube-controller-manager's service-account controller does.
fn ensure_default_service_account(shared: &Shared, ns: &str) {
    let Some(def) = shared.registry().get("", "v1", "serviceaccounts") else {
        return;
    };
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}});
    let opts = WriteOpts::internal(&def, MANAGER);
    let _ = objects::create(shared, &def, Some(ns), sa, &opts);
}
