//! What runs after every stored write: a CRD's resource is served (or no
//! longer), and the in-server controllers are told what changed (a new
//! namespace, an object being deleted, an owner gone) and woken.

use crate::registry::ResourceDef;
use crate::state::Shared;
use crate::storage::StoredObject;

fn is_crd(def: &ResourceDef) -> bool {
    def.builtin().is_some()
        && def.group == "apiextensions.k8s.io"
        && def.plural == "customresourcedefinitions"
}

/// Runs after every stored create or update.
pub(crate) fn after_write(
    shared: &Shared,
    def: &ResourceDef,
    old: Option<&StoredObject>,
    new: &StoredObject,
) {
    if is_crd(def) {
        crate::crds::sync(shared, new);
    }
    if old.is_none()
        && def.builtin().is_some()
        && def.group.is_empty()
        && def.plural == "namespaces"
    {
        shared.controllers.namespace_created(new.name());
    }
    if new.deleting() {
        shared.controllers.mark_deleting(def, new);
    }
    crate::auth::written(shared, def);
    shared.controllers.wake();
}

/// Runs after every object removal.
pub(crate) fn after_delete(shared: &Shared, def: &ResourceDef, gone: &StoredObject) {
    if is_crd(def) {
        crate::crds::removed(shared, gone);
    }
    shared.controllers.owner_gone(gone.uid());
    crate::auth::written(shared, def);
    shared.controllers.wake();
}
