//! ControllerRevisions (`pkg/controller/history`), the template history of
//! StatefulSets: one revision per distinct template, named
//! `<owner>-<hash>` with the hash of its data (the template as a
//! strategic-merge `$patch: replace`), numbered in order; a template that
//! comes back reuses its revision with a new number.

use std::sync::Arc;

use serde_json::{json, Value};

use super::api::{controller_ref, Api, Kind, REVISIONS};
use super::hash::revision_hash;
use crate::controllers::write::MANAGER;
use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::storage::StoredObject;

/// The revision data for a template.
pub(crate) fn data_for(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(m) = t.as_object_mut() {
        m.insert("$patch".into(), json!("replace"));
    }
    json!({"spec": {"template": t}})
}

/// The template a revision records.
pub(crate) fn template_of(revision: &Value) -> Value {
    let mut t = revision
        .at("/data/spec/template")
        .cloned()
        .unwrap_or_default();
    if let Some(m) = t.as_object_mut() {
        m.remove("$patch");
    }
    t
}

/// The revisions `owner` controls, by revision number.
pub(crate) fn list(api: &Api, owner_uid: &str) -> Vec<Arc<StoredObject>> {
    let mut revs = api.owned(REVISIONS, owner_uid);
    revs.sort_by_key(|r| {
        r.value()
            .get("revision")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    });
    revs
}

/// Finds or creates the revision for `template`; returns it.
pub(crate) fn ensure(
    api: &Api,
    owner: &Value,
    owner_kind: Kind,
    template: &Value,
    collision: Option<i64>,
) -> Option<Arc<StoredObject>> {
    let data = data_for(template);
    let (ns, name) = super::api::key_of(owner);
    let uid = util::meta_str(owner, "uid").unwrap_or("");
    let revs = list(api, uid);
    let max = revs
        .iter()
        .filter_map(|r| r.value().get("revision").and_then(Value::as_i64))
        .max()
        .unwrap_or(0);
    let rev_name = format!("{name}-{}", revision_hash(&data, collision));
    if let Some(existing) = revs.iter().find(|r| r.value().get("data") == Some(&data)) {
        let is_latest = existing.value().get("revision").and_then(Value::as_i64) == Some(max);
        if is_latest {
            return Some(existing.clone());
        }
        // A template that comes back (a rollback) becomes the newest revision.
        return api
            .update(
                REVISIONS,
                &super::api::key_of(&existing.value()),
                MANAGER,
                |r| {
                    r["revision"] = json!(max + 1);
                    true
                },
            )
            .ok()
            .flatten();
    }
    let labels = template.at("/metadata/labels").cloned().unwrap_or_default();
    let rev = json!({
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": rev_name, "namespace": ns, "labels": labels,
            "ownerReferences": [controller_ref(owner, owner_kind)]},
        "data": data,
        "revision": max + 1,
    });
    match api.create(REVISIONS, MANAGER, rev) {
        Ok(r) => Some(r),
        Err(e) if e.code == 409 => api.get(REVISIONS, &(ns, rev_name)),
        Err(_) => None,
    }
}
