//! What runs after every stored write: a CRD's resource is served (or no
//! longer), and the in-server controllers are told what changed (a new
//! namespace, an object being deleted, an owner gone or found absent) and
//! woken. After a restart from a data directory, the same hooks run once
//! for every stored object ([`after_restart`]).

use super::owners::{self, Verdict};
use crate::registry::state::Shared;
use crate::registry::{BuiltinKind, ResourceDef};
use crate::storage::StoredObject;

/// Runs after every stored create or update.
pub(crate) fn after_write(
    shared: &Shared,
    def: &ResourceDef,
    old: Option<&StoredObject>,
    new: &StoredObject,
) {
    if def.is(BuiltinKind::CustomResourceDefinition) {
        crate::objects::crds::sync(shared, new);
    }
    if old.is_none() && def.is(BuiltinKind::Namespace) {
        shared.controllers.namespace_created(new.name());
    }
    if new.deleting() {
        shared.controllers.mark_deleting(def, new);
    }
    queue_absent_owners(shared, def, old, new);
    rbac_written(shared, def);
    shared.controllers.wake();
}

/// A reference added to an owner that no longer exists (a controller that
/// read the owner from its cache before the deletion writes its dependent
/// after it), or never existed where the dependent is (another namespace),
/// is handled as that owner's removal, or the dependent would
/// outlive it: kube-controller-manager's garbage collector likewise
/// verifies an owner it has not seen ("virtual" node) and, finding it
/// absent, collects its dependents. A reference to an object in another
/// namespace is queued for the collector to record on the dependent, as
/// kube's records it when the dependent enters its graph. A reference the
/// object already had was checked when it was added; the owner's later
/// removal queues it anyway.
fn queue_absent_owners(
    shared: &Shared,
    def: &ResourceDef,
    old: Option<&StoredObject>,
    new: &StoredObject,
) {
    let added = |uid: &str| old.is_none_or(|old| !old.owner_uids().iter().any(|o| &**o == uid));
    if !new.owner_uids().iter().any(|uid| added(uid)) {
        return;
    }
    for r in owners::owner_refs(&new.value()) {
        let uid = owners::ref_uid(r);
        if !added(uid) {
            continue;
        }
        let found = owners::lookup(shared, new.namespace(), r);
        if found.misplaced {
            let key = (new.namespace().to_owned(), new.name().to_owned());
            shared.controllers.owner_misplaced(def.key(), key, uid);
        }
        if found.verdict == Verdict::Absent {
            shared.controllers.owner_gone(uid);
        }
    }
}

/// Runs the write hooks for every object a data directory restored, as if
/// each had just been written: CRDs first, so their resources are served
/// before their objects are looked at; then deletions in progress resume,
/// dependents of owners gone meanwhile are collected, and the authorizer
/// reads the restored RBAC objects.
pub(crate) fn after_restart(shared: &Shared) {
    let crds = crate::registry::ResKey::new("apiextensions.k8s.io", "customresourcedefinitions");
    let all = shared.storage.lock().all();
    let (first, rest): (Vec<_>, Vec<_>) = all.into_iter().partition(|(res, _)| *res == crds);
    for (res, obj) in first.into_iter().chain(rest) {
        // The registry's guard must be gone before a CRD's sync takes it.
        let def = shared.registry().by_key(&res);
        if let Some(def) = def {
            after_write(shared, &def, None, &obj);
        }
    }
}

/// Runs after every object removal.
pub(crate) fn after_delete(shared: &Shared, def: &ResourceDef, gone: &StoredObject) {
    if def.is(BuiltinKind::CustomResourceDefinition) {
        crate::objects::crds::removed(shared, gone);
    }
    shared.controllers.owner_gone(gone.uid());
    rbac_written(shared, def);
    shared.controllers.wake();
}

/// Called after every stored write or removal: a change to an RBAC object
/// invalidates the authorizer's index (and a ClusterRole's, aggregation).
fn rbac_written(shared: &Shared, def: &ResourceDef) {
    if def.builtin_kind().is_some_and(BuiltinKind::is_rbac) {
        shared.rbac.invalidate(def.is(BuiltinKind::ClusterRole));
    }
}
