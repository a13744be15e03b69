//! The `pods/binding` subresource (`BindingREST.Create`): assigns a pod to
//! a node — `spec.nodeName` set, the binding's annotations copied, the
//! `PodScheduled=True` condition added — refusing a pod that is being
//! deleted or already assigned (409). The scheduler binds through here
//! too.

use serde_json::{json, Value};

use super::opts::{Sub, WriteOpts};
use super::update::{update, Precondition};
use crate::machinery::status::{ApiError, Cause};
use crate::machinery::util;
use crate::registry::state::Shared;
use crate::registry::ResourceDef;
use crate::storage::ObjKey;

/// Binds pod `key` to `node`.
pub(crate) fn bind(
    shared: &Shared,
    def: &ResourceDef,
    key: &ObjKey,
    node: &str,
    annotations: Option<&Value>,
    manager: &str,
) -> Result<(), ApiError> {
    if node.is_empty() {
        return Err(ApiError::invalid(
            "Binding",
            "",
            &key.1,
            vec![Cause::required("target.name")],
        ));
    }
    let opts = WriteOpts::internal(def, manager);
    update(shared, def, key, &opts, |cur| {
        if cur.pointer("/metadata/deletionTimestamp").is_some() {
            return Err(ApiError::conflict_msg(
                "pods",
                "",
                &key.1,
                &format!(
                    "pod {} is being deleted, cannot be assigned to a host",
                    key.1
                ),
            ));
        }
        let assigned = cur
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !assigned.is_empty() {
            return Err(ApiError::conflict_msg(
                "pods",
                "",
                &key.1,
                &format!("pod {} is already assigned to node \"{assigned}\"", key.1),
            ));
        }
        let mut next = cur.clone();
        next["spec"]["nodeName"] = json!(node);
        if let Some(Value::Object(extra)) = annotations {
            if let Some(meta) = util::meta_mut(&mut next) {
                let ann = meta.entry("annotations").or_insert_with(|| json!({}));
                if let Some(ann) = ann.as_object_mut() {
                    for (k, v) in extra {
                        ann.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        Ok((next, Precondition::None))
    })?;
    let mut opts = WriteOpts::internal(def, manager);
    opts.sub = Sub::Status;
    update(shared, def, key, &opts, |cur| {
        let mut next = cur.clone();
        let status = crate::registry::fields::ensure_object(&mut next, &["status"])
            .ok_or_else(|| ApiError::internal("pod status is not an object"))?;
        let conds = status.entry("conditions").or_insert_with(|| json!([]));
        if let Some(list) = conds.as_array_mut() {
            list.retain(|c| c.get("type").and_then(Value::as_str) != Some("PodScheduled"));
            list.push(json!({
                "type": "PodScheduled", "status": "True", "lastProbeTime": null,
                "lastTransitionTime": util::now(),
            }));
        }
        Ok((next, Precondition::None))
    })?;
    Ok(())
}
