//! CRD deletion: the custom resources of a deleted CRD are deleted, then
//! the CRD's cleanup finalizer is dropped.

use super::write::{delete_quietly, remove_finalizer};
use crate::objects::Propagation;
use crate::registry::apiextensions::customresourcedefinition::CRD_CLEANUP;
use crate::registry::state::Shared;
use crate::registry::ResourceDef;
use crate::storage::ObjKey;

/// Advances a CRD under deletion; `true` once its resources are gone.
pub(crate) fn finalize(shared: &Shared, def: &ResourceDef, key: &ObjKey, name: &str) -> bool {
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
