//! Entry points for the fuzz targets under `tests/fuzz` (feature
//! `fuzzing`, hidden from the docs): the label and field selector parsers
//! and the CRD admission chain (CRD defaulting and validation, structural
//! schema, CEL compilation, then pruning, defaulting and validating custom
//! resources), called on values directly so a fuzzer runs them thousands
//! of times a second. Each calls the functions a request reaches, in the
//! order it reaches them, on the threads it runs them on.

use std::sync::{Arc, LazyLock};

use serde_json::Value;

use crate::machinery::status::ApiError;
use crate::machinery::work;
use crate::objects::engines;
use crate::registry::{crd::resource_def, Registry, ResourceDef};

/// Pods: the built-in resource with the most field labels.
static PODS: LazyLock<Option<Arc<ResourceDef>>> =
    LazyLock::new(|| Registry::with_builtins().get("", "v1", "pods"));

/// What a list with these selectors would do with `object`: per selector,
/// whether it matches, or the message of the 400 its parse error gives.
#[derive(Debug)]
pub struct SelectorOutcome {
    /// The `labelSelector`'s answer.
    pub label: Result<bool, String>,
    /// The `fieldSelector`'s answer, with pods' field labels.
    pub field: Result<bool, String>,
}

/// Parses `label` and `field` as a list of pods would and matches `object`.
pub fn selectors(label: &str, field: &str, object: &Value) -> SelectorOutcome {
    let label = crate::machinery::selectors::LabelSelector::parse(label).map(|s| s.matches(object));
    // Field selectors match what the server stores: the object's bytes
    // under its key.
    let stored = crate::storage::object::StoredObject::encode(object.clone(), 1);
    let key = (stored.namespace().to_owned(), stored.name().to_owned());
    let field = match PODS.as_ref() {
        Some(pods) => {
            crate::machinery::selectors::FieldSelector::parse(field, |l| pods.field_label(l))
                .map(|s| s.matches_stored(&key, &stored))
        }
        None => Err("pods are not registered".to_owned()),
    };
    SelectorOutcome { label, field }
}

/// What admitting a CRD and then custom resources of it gave.
#[derive(Debug, Default)]
pub struct CrdOutcome {
    /// The 422 `Status` the CRD's create was answered with, serialized;
    /// `None` when the CRD was accepted.
    pub crd_rejected: Option<String>,
    /// Per object, in order: the 422 `Status` it was answered with,
    /// serialized, or `None` when it was accepted.
    pub objects_rejected: Vec<Option<String>>,
}

/// Admits `crd` as a create (defaulting, validation, CEL compilation and
/// cost estimation), and when it is valid, admits each of `objects` as a
/// custom resource of its storage version (pruning, defaulting,
/// validation, CEL), each accepted object being the `old` of the next (for
/// transition rules and ratcheting). Runs on a CEL-sized stack as the
/// server does; `Err` holds the message of a panic.
pub fn crd_admission(crd: Value, objects: Vec<Value>) -> Result<CrdOutcome, String> {
    work::with_large_stack(move || admit(crd, objects)).map_err(|p| p.0)
}

fn admit(mut crd: Value, objects: Vec<Value>) -> CrdOutcome {
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let causes = engines::admit_crd(&mut crd, None);
    if !causes.is_empty() {
        let status = ApiError::invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            &name,
            causes,
        );
        return CrdOutcome {
            crd_rejected: Some(status.to_status().to_string()),
            objects_rejected: Vec::new(),
        };
    }
    // An update to itself is what every later write of the CRD does.
    let mut again = crd.clone();
    let _ = engines::admit_crd(&mut again, Some(&crd));
    let def = resource_def(&crd);
    let mut old: Option<Value> = None;
    let mut objects_rejected = Vec::with_capacity(objects.len());
    for mut obj in objects {
        let admitted =
            engines::admit_custom_resource(&def, &def.storage_version, &mut obj, old.as_ref());
        if admitted.causes.is_empty() {
            engines::default_from_storage(&def, &mut obj);
            objects_rejected.push(None);
            old = Some(obj);
        } else {
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let status = ApiError::invalid(&def.kind, &def.group, name, admitted.causes);
            objects_rejected.push(Some(status.to_status().to_string()));
        }
    }
    CrdOutcome {
        crd_rejected: None,
        objects_rejected,
    }
}
