//! Custom resources defined by CRDs: turning a stored (validated)
//! `CustomResourceDefinition` into a served [`ResourceDef`] with its
//! per-version schemas parsed once, the `NamesAccepted`/`Established`
//! conditions, and Kubernetes version ordering. CRD validation itself is the
//! admission hook's (`schema::validate_crd`).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use serde_json::{json, Value};

use super::def::{Behavior, CustomInfo, PrinterColumn, ResourceDef, ScalePaths};
use crate::apiextensions::StructuralSchema;
use crate::machinery::patch::OpenApiMergeSchema;
use crate::machinery::util::strings_at;

/// Names of a CRD, with kube-apiserver's defaults applied.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Names {
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
}

/// Source of [`CustomInfo::serial`].
static SERIAL: AtomicU64 = AtomicU64::new(1);

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// `spec.names` with defaults (singular: lowercased kind, listKind: kind+List).
pub(crate) fn names(crd: &Value) -> Names {
    let kind = str_at(crd, "/spec/names/kind").to_owned();
    let mut singular = str_at(crd, "/spec/names/singular").to_owned();
    if singular.is_empty() {
        singular = kind.to_ascii_lowercase();
    }
    let mut list_kind = str_at(crd, "/spec/names/listKind").to_owned();
    if list_kind.is_empty() && !kind.is_empty() {
        list_kind = format!("{kind}List");
    }
    Names {
        plural: str_at(crd, "/spec/names/plural").to_owned(),
        singular,
        kind,
        list_kind,
        short_names: strings_at(crd, "/spec/names/shortNames"),
        categories: strings_at(crd, "/spec/names/categories"),
    }
}

/// Builds the served definition for a (valid) CRD.
pub(crate) fn resource_def(crd: &Value) -> ResourceDef {
    let n = names(crd);
    let versions: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut served: Vec<String> = versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .map(|v| str_at(v, "/name").to_owned())
        .collect();
    served.sort_by(|a, b| compare_versions(b, a));
    let storage = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true));
    let storage_version = storage
        .map(|v| str_at(v, "/name").to_owned())
        .unwrap_or_default();
    let sub_source = storage.or(versions.first());
    let status = sub_source
        .and_then(|v| v.pointer("/subresources/status"))
        .is_some();
    let scale = sub_source
        .and_then(|v| v.pointer("/subresources/scale"))
        .map(|s| ScalePaths {
            spec_replicas: str_at(s, "/specReplicasPath").to_owned(),
            status_replicas: str_at(s, "/statusReplicasPath").to_owned(),
            label_selector: s
                .get("labelSelectorPath")
                .and_then(Value::as_str)
                .map(str::to_owned),
        });
    let mut columns = BTreeMap::new();
    let mut schemas = BTreeMap::new();
    let mut structural = BTreeMap::new();
    let mut merge = BTreeMap::new();
    let mut selectable = Vec::new();
    for v in &versions {
        let vname = str_at(v, "/name").to_owned();
        let cols = v
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .map(|c| PrinterColumn {
                        name: str_at(c, "/name").to_owned(),
                        type_: str_at(c, "/type").to_owned(),
                        format: str_at(c, "/format").to_owned(),
                        description: str_at(c, "/description").to_owned(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: str_at(c, "/jsonPath").to_owned(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        columns.insert(vname.clone(), cols);
        if let Some(s) = v.pointer("/schema/openAPIV3Schema") {
            schemas.insert(vname.clone(), s.clone());
            match StructuralSchema::parse(s) {
                Ok(parsed) => {
                    structural.insert(vname.clone(), parsed);
                }
                // Validation on write already refused such schemas.
                Err(errs) => tracing::warn!(
                    crd = str_at(crd, "/metadata/name"),
                    version = %vname,
                    errors = errs.len(),
                    "schema is not structural; objects of this version are not validated"
                ),
            }
            merge.insert(vname.clone(), Arc::new(OpenApiMergeSchema::new(s.clone())));
        }
        if vname == storage_version {
            if let Some(fields) = v.get("selectableFields").and_then(Value::as_array) {
                selectable = fields
                    .iter()
                    .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                    .map(|p| p.trim_start_matches('.').to_owned())
                    .collect();
            }
        }
    }
    let mut verbs = vec![
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "create",
        "update",
        "watch",
    ];
    verbs.sort_unstable();
    ResourceDef {
        group: str_at(crd, "/spec/group").to_owned(),
        versions: served,
        storage_version,
        plural: n.plural,
        singular: n.singular,
        kind: n.kind,
        list_kind: n.list_kind,
        namespaced: str_at(crd, "/spec/scope") == "Namespaced",
        verbs,
        short_names: n.short_names,
        categories: n.categories,
        status,
        scale,
        extra_subresources: Vec::new(),
        behavior: Behavior::Custom(Arc::new(CustomInfo {
            crd_name: str_at(crd, "/metadata/name").to_owned(),
            selectable_fields: selectable,
            columns,
            schemas,
            structural,
            merge,
            spec: crd.get("spec").cloned().unwrap_or(Value::Null),
            serial: SERIAL.fetch_add(1, AtomicOrdering::Relaxed),
        })),
    }
}

/// Sets `status.acceptedNames`, `storedVersions` and the `NamesAccepted` /
/// `Established` conditions (naming and establishing controllers; with one
/// apiserver, Established follows at once).
pub(crate) fn set_status(crd: &mut Value, conflict: Option<&str>, now: &str) {
    let n = names(crd);
    let storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .map(|v| str_at(v, "/name").to_owned())
        .unwrap_or_default();
    let old_conditions = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let transition = |ty: &str, status: &str| -> String {
        old_conditions
            .iter()
            .find(|c| str_at(c, "/type") == ty && str_at(c, "/status") == status)
            .and_then(|c| c.get("lastTransitionTime").and_then(Value::as_str))
            .map(str::to_owned)
            .unwrap_or_else(|| now.to_owned())
    };
    let mut stored = strings_at(crd, "/status/storedVersions");
    if !storage.is_empty() && !stored.contains(&storage) {
        stored.push(storage);
    }
    let (names_cond, established) = match conflict {
        None => (
            json!({"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                   "message": "no conflicts found", "lastTransitionTime": transition("NamesAccepted", "True")}),
            json!({"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                   "message": "the initial names have been accepted", "lastTransitionTime": transition("Established", "True")}),
        ),
        Some(reason) => (
            json!({"type": "NamesAccepted", "status": "False", "reason": reason,
                   "message": format!("\"{}\" is already in use", n.plural), "lastTransitionTime": transition("NamesAccepted", "False")}),
            json!({"type": "Established", "status": "False", "reason": "NotAccepted",
                   "message": "not all names are accepted", "lastTransitionTime": transition("Established", "False")}),
        ),
    };
    let mut conditions = vec![names_cond, established];
    if crd.pointer("/metadata/deletionTimestamp").is_some() {
        conditions.push(json!({"type": "Terminating", "status": "True", "reason": "InstanceDeletionInProgress",
            "message": "CustomResource deletion is in progress", "lastTransitionTime": transition("Terminating", "True")}));
    }
    let mut accepted = json!({"plural": n.plural, "singular": n.singular, "kind": n.kind, "listKind": n.list_kind});
    if !n.short_names.is_empty() {
        accepted["shortNames"] = json!(n.short_names);
    }
    if !n.categories.is_empty() {
        accepted["categories"] = json!(n.categories);
    }
    if let Some(obj) = crd.as_object_mut() {
        obj.insert(
            "status".into(),
            json!({
                "conditions": conditions,
                "acceptedNames": if conflict.is_none() { accepted } else { json!({"plural": "", "kind": ""}) },
                "storedVersions": stored,
            }),
        );
    }
}

/// Kubernetes version priority (`v2` > `v1` > `v1beta2` > `v1beta1` >
/// `v1alpha1` > anything not Kubernetes-like, which sorts by name).
pub(crate) fn compare_versions(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u64 = digits.parse().ok()?;
        let rest = &rest[digits.len()..];
        if rest.is_empty() {
            return Some((major, 2, 0));
        }
        let (stage, num) = if let Some(n) = rest.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = rest.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        Some((major, stage, num.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sa.cmp(&sb).then(ma.cmp(&mb)).then(na.cmp(&nb)),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_priority() {
        let mut vs = vec!["v1alpha1", "v1", "foo", "v2beta1", "v2", "v1beta1", "v10"];
        vs.sort_by(|a, b| compare_versions(b, a));
        assert_eq!(
            vs,
            ["v10", "v2", "v1", "v2beta1", "v1beta1", "v1alpha1", "foo"]
        );
    }
}
