//! A stored object as served at the version a request names: the stored
//! bytes when they are at that version, re-encoded (the `apiVersion`
//! rewritten, a built-in kind's view at another group or version)
//! otherwise. Conversion by a CRD's webhook is [`crate::registry::conversion`]'s.

use bytes::Bytes;
use serde_json::json;

use crate::registry::ResourceDef;
use crate::storage::StoredObject;

/// The object as served at `version`: the stored bytes when that is the
/// storage version.
pub(super) fn render(def: &ResourceDef, version: &str, obj: &StoredObject) -> Bytes {
    match converted(def, version, obj) {
        Some(c) => c.bytes().clone(),
        None => obj.bytes().clone(),
    }
}

/// The object re-encoded for a version or group it is not stored at;
/// `None` when the stored bytes serve as they are.
pub(super) fn converted(
    def: &ResourceDef,
    version: &str,
    obj: &StoredObject,
) -> Option<StoredObject> {
    if def.conversion().is_none()
        && (version == def.storage_version
            || obj.api_version() == Some(def.api_version(version).as_str()))
    {
        return None;
    }
    let stored = obj.to_value();
    let mut v = def.view(&stored).unwrap_or(stored);
    v["apiVersion"] = json!(def.api_version(version));
    Some(StoredObject::encode(v, obj.rv))
}
