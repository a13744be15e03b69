//! `ControllerRefManager`: a controller claims the objects its selector
//! matches. Orphans it matches are adopted (a controller reference, and
//! for Jobs the tracking finalizer, are added); objects it controls that
//! no longer match are released (the reference is removed); objects
//! another controller owns are left alone.

use std::sync::Arc;

use serde_json::{json, Value};

use super::api::{controller_of, controller_ref, key_of, Api, Kind};
use crate::controllers::write::MANAGER;
use crate::machinery::selectors::selector_matches;
use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::storage::StoredObject;

/// Claims `candidates` for `owner`; returns the objects it now controls.
pub(crate) fn claim(
    api: &Api,
    owner: &Value,
    owner_kind: Kind,
    selector: &Value,
    child_kind: Kind,
    candidates: Vec<Arc<StoredObject>>,
    finalizer: Option<&str>,
) -> Vec<Arc<StoredObject>> {
    let owner_uid = util::meta_str(owner, "uid").unwrap_or("").to_owned();
    let owner_deleting = owner.at("/metadata/deletionTimestamp").is_some();
    let mut mine = Vec::new();
    for obj in candidates {
        let tree = obj.value();
        let labels = tree.at("/metadata/labels");
        let matches = selector_matches(selector, labels);
        match controller_of(&obj.value()) {
            Some(r) if r.get("uid").and_then(Value::as_str) == Some(owner_uid.as_str()) => {
                if matches {
                    mine.push(obj);
                } else if !owner_deleting {
                    let uid = owner_uid.clone();
                    let _ = api.update(child_kind, &key_of(&obj.value()), MANAGER, |o| {
                        let Some(refs) = o
                            .pointer_mut("/metadata/ownerReferences")
                            .and_then(Value::as_array_mut)
                        else {
                            return false;
                        };
                        let before = refs.len();
                        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
                        before != refs.len()
                    });
                }
            }
            Some(_) => {}
            None => {
                if owner_deleting
                    || !matches
                    || obj.deleting()
                    || util::meta_str(&obj.value(), "namespace")
                        != util::meta_str(owner, "namespace")
                {
                    continue;
                }
                let reference = controller_ref(owner, owner_kind);
                let adopted = api.update(child_kind, &key_of(&obj.value()), MANAGER, |o| {
                    if controller_of(o).is_some() {
                        return false;
                    }
                    let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) else {
                        return false;
                    };
                    let refs = meta.entry("ownerReferences").or_insert_with(|| json!([]));
                    if let Some(refs) = refs.as_array_mut() {
                        refs.push(reference.clone());
                    }
                    if let Some(f) = finalizer {
                        let fins = meta.entry("finalizers").or_insert_with(|| json!([]));
                        if let Some(fins) = fins.as_array_mut() {
                            if !fins.iter().any(|x| x.as_str() == Some(f)) {
                                fins.push(json!(f));
                            }
                        }
                    }
                    true
                });
                if let Ok(Some(obj)) = adopted {
                    mine.push(obj);
                }
            }
        }
    }
    mine
}
