//! The CRD controllers, run inline after every CRD write: the naming
//! controller (`NamesAccepted`, name conflicts), the establishing controller
//! (`Established`, at once with one server) and registration of the served
//! resource, and unregistration when a CRD is finally removed.

use serde_json::Value;

use super::registry::{crd, ResKey};
use super::server::Shared;
use super::storage::StoredObject;
use super::util;

fn crd_key() -> ResKey {
    ResKey::new("apiextensions.k8s.io", "customresourcedefinitions")
}

/// Sets the CRD's conditions and (re)registers its resource.
pub(crate) fn sync(shared: &Shared, stored: &StoredObject) {
    let value = &stored.value;
    let name = stored.name().to_owned();
    let names = crd::names(value);
    let group = value
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let conflict = shared.registry().name_conflict(&group, &name, &names);
    let mut next = (**value).clone();
    crd::set_status(&mut next, conflict, &util::now());
    if conflict.is_none() {
        let def = crd::resource_def(&next);
        shared.registry_mut().put_crd(&name, def);
    }
    if next != **value {
        // A concurrent write re-runs this sync, so a conflict can be ignored.
        let _ =
            shared
                .storage
                .lock()
                .update(&crd_key(), &(String::new(), name), next, Some(stored.rv));
    }
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
