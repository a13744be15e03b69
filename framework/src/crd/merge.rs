//! Several versions of one kind, each derived in its own module, combined
//! into one CRD with exactly one storage version.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use super::{build_crd, CrdDescriptor, CrdError};

/// Build one CRD holding every given version of a kind.
///
/// The versions must agree on group, kind, scope and names. With one version
/// it is the storage version unless marked otherwise; with several, exactly
/// one must be marked `#[crd(storage)]` (as kubebuilder's
/// `+kubebuilder:storageversion`). Versions keep the order given.
pub fn combine(versions: &[CrdDescriptor]) -> Result<CustomResourceDefinition, CrdError> {
    let Some(first) = versions.first() else {
        return Err(CrdError::Empty);
    };
    let name = first.crd_name();
    for (i, desc) in versions.iter().enumerate() {
        if versions[..i].iter().any(|d| d.version == desc.version) {
            return Err(CrdError::DuplicateVersion {
                name,
                version: desc.version.into(),
            });
        }
    }
    let storage: Vec<&CrdDescriptor> = if versions.len() == 1 {
        versions
            .iter()
            .filter(|d| d.storage != Some(false))
            .collect()
    } else {
        versions
            .iter()
            .filter(|d| d.storage == Some(true))
            .collect()
    };
    if storage.len() != 1 {
        return Err(CrdError::StorageVersion {
            name,
            found: storage.iter().map(|d| d.version.to_string()).collect(),
        });
    }
    let storage_version = storage[0].version;

    let mut combined: Option<CustomResourceDefinition> = None;
    for desc in versions {
        let mut crd = build_crd(desc)?;
        for version in &mut crd.spec.versions {
            version.storage = version.name == storage_version;
        }
        match &mut combined {
            None => combined = Some(crd),
            Some(acc) => merge_into(acc, crd)?,
        }
    }
    combined.ok_or(CrdError::Empty)
}

/// Merge `other`'s versions into `acc`, checking that the shared parts agree.
pub(crate) fn merge_into(
    acc: &mut CustomResourceDefinition,
    other: CustomResourceDefinition,
) -> Result<(), CrdError> {
    let name = acc.metadata.name.clone().unwrap_or_default();
    let acc_version = acc
        .spec
        .versions
        .first()
        .map(|v| v.name.clone())
        .unwrap_or_default();
    let other_version = other
        .spec
        .versions
        .first()
        .map(|v| v.name.clone())
        .unwrap_or_default();
    let mismatch = |field: &'static str, found: String, expected: String| {
        CrdError::Mismatch {
        name: name.clone(),
        detail: format!(
            "version {other_version} has {field} {found:?}, but version {acc_version} has {expected:?}"
        ),
    }
    };
    let (a, b) = (&acc.spec, &other.spec);
    let checks: [(&'static str, String, String); 7] = [
        ("group", b.group.clone(), a.group.clone()),
        ("kind", b.names.kind.clone(), a.names.kind.clone()),
        ("scope", b.scope.clone(), a.scope.clone()),
        ("plural", b.names.plural.clone(), a.names.plural.clone()),
        (
            "singular",
            format!("{:?}", b.names.singular),
            format!("{:?}", a.names.singular),
        ),
        (
            "shortnames",
            format!("{:?}", b.names.short_names),
            format!("{:?}", a.names.short_names),
        ),
        (
            "categories",
            format!("{:?}", b.names.categories),
            format!("{:?}", a.names.categories),
        ),
    ];
    for (field, found, expected) in checks {
        if found != expected {
            return Err(mismatch(field, found, expected));
        }
    }
    merge_map(
        &mut acc.metadata.labels,
        other.metadata.labels,
        "labels",
        &mismatch,
    )?;
    merge_map(
        &mut acc.metadata.annotations,
        other.metadata.annotations,
        "annotations",
        &mismatch,
    )?;
    for version in other.spec.versions {
        if acc.spec.versions.iter().any(|v| v.name == version.name) {
            return Err(CrdError::DuplicateVersion {
                name: name.clone(),
                version: version.name,
            });
        }
        acc.spec.versions.push(version);
    }
    Ok(())
}

fn merge_map(
    acc: &mut Option<BTreeMap<String, String>>,
    other: Option<BTreeMap<String, String>>,
    field: &'static str,
    mismatch: &dyn Fn(&'static str, String, String) -> CrdError,
) -> Result<(), CrdError> {
    let Some(other) = other else {
        return Ok(());
    };
    let acc = acc.get_or_insert_with(BTreeMap::new);
    for (key, value) in other {
        match acc.get(&key) {
            Some(existing) if *existing != value => {
                return Err(mismatch(
                    field,
                    format!("{key}={value}"),
                    format!("{key}={existing}"),
                ));
            }
            _ => {
                acc.insert(key, value);
            }
        }
    }
    Ok(())
}
