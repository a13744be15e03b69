//! The CRD controllers, run inline after every CRD write: the naming
//! controller (`NamesAccepted`, name conflicts), the establishing controller
//! (`Established`, at once with one server) and registration of the served
//! resource — re-reading stored objects through a changed schema — and
//! unregistration when a CRD is finally removed.

use serde_json::Value;

use crate::registry::state::Shared;
use crate::registry::{crd, ResKey, ResourceDef};
use crate::storage::StoredObject;
use crate::{machinery::util, objects::engines};

fn crd_key() -> ResKey {
    ResKey::new("apiextensions.k8s.io", "customresourcedefinitions")
}

/// The manager kube-apiserver's CRD controllers write status as.
const MANAGER: &str = "kube-apiserver";

/// Sets the CRD's conditions and (re)registers its resource.
pub(crate) fn sync(shared: &Shared, stored: &StoredObject) {
    let value = &stored.value();
    let name = stored.name().to_owned();
    let names = crd::names(value);
    let group = value
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let conflict = shared.registry().name_conflict(&group, &name, &names);
    let mut next = (**value).clone();
    let now = util::now();
    crd::set_status(&mut next, conflict, &now);
    if conflict.is_none() {
        let current = shared.registry().crd_def(&name);
        let spec = next.get("spec").unwrap_or(&Value::Null);
        let same = current
            .as_ref()
            .and_then(|d| d.custom())
            .is_some_and(|c| c.spec == *spec);
        // Status-only writes keep the definition (and its parsed schemas).
        if !same {
            let def = crd::resource_def(&next);
            let storage_schema_changed = current.as_ref().is_none_or(|old| {
                schema_of(old)
                    != def
                        .custom()
                        .and_then(|c| c.schemas.get(&def.storage_version))
            });
            let res = def.key();
            let def = shared.registry_mut().put_crd(&name, def);
            if storage_schema_changed {
                let changed = shared
                    .storage
                    .lock()
                    .reread(&res, |obj| engines::default_from_storage(&def, obj));
                if changed > 0 {
                    tracing::debug!(crd = %name, changed, "stored objects re-read through the new schema");
                }
            }
        }
    }
    if next != **value {
        if let Some(crd_def) =
            shared
                .registry()
                .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        {
            engines::track_managed_fields(
                &crd_def,
                Some(value),
                &mut next,
                MANAGER,
                Some("status"),
                &now,
            );
        }
        // A concurrent write re-runs this sync, so a conflict can be ignored.
        let _ =
            shared
                .storage
                .lock()
                .update(&crd_key(), &(String::new(), name), next, Some(stored.rv));
    }
}

fn schema_of(def: &ResourceDef) -> Option<&Value> {
    def.custom()
        .and_then(|c| c.schemas.get(&def.storage_version))
}

/// The CRD is gone: stop serving its resource and drop what is left of it.
pub(crate) fn removed(shared: &Shared, gone: &StoredObject) {
    let Some(def) = shared.registry_mut().remove_crd(gone.name()) else {
        return;
    };
    let res = def.key();
    let mut store = shared.storage.lock();
    for key in store.keys(&res) {
        let _ = store.delete(&res, &key, None, None);
    }
    store.reset_resource(&res);
}
