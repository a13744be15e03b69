//! Object lifecycle semantics, independent of HTTP: create, update (incl.
//! the status and finalize subresources) and delete exactly as
//! kube-apiserver's generic registry store and strategies behave —
//! server-set metadata, generation bumps, status subresource rules,
//! finalizers and `deletionTimestamp`, optimistic concurrency — plus the
//! hooks that run after every successful write (CRD registration, the
//! garbage collector's bookkeeping). Handlers and the in-server controllers
//! both write through here.

mod checks;
mod create;
mod delete;
mod update;

use std::sync::Arc;

use super::admission::FieldValidation;
use super::registry::ResourceDef;
use super::state::Shared;
use super::status::{ApiError, Cause, Details};
use super::storage::{StoreError, StoredObject};

pub(crate) use create::create;
pub(crate) use delete::{delete, DeleteOpts, Deleted, Propagation};
pub(crate) use update::{update, Precondition};

/// Which endpoint a write came through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sub {
    Main,
    Status,
    Scale,
    Finalize,
}

impl Sub {
    pub fn name(self) -> Option<&'static str> {
        match self {
            Sub::Main => None,
            Sub::Status => Some("status"),
            Sub::Scale => Some("scale"),
            Sub::Finalize => Some("finalize"),
        }
    }
}

/// Options shared by writes.
#[derive(Clone, Debug)]
pub(crate) struct WriteOpts {
    pub dry_run: bool,
    pub manager: String,
    pub sub: Sub,
    pub validation: FieldValidation,
    /// The version the request was made at (`apiVersion` checks).
    pub version: String,
    /// A server-side apply: managed fields were already computed by the
    /// apply, so the write is not recorded again as an `Update`.
    pub apply: bool,
}

impl WriteOpts {
    /// Options for writes the server makes itself.
    pub fn internal(def: &ResourceDef, manager: &str) -> Self {
        Self {
            dry_run: false,
            manager: manager.to_owned(),
            sub: Sub::Main,
            validation: FieldValidation::Ignore,
            version: def.storage_version.clone(),
            apply: false,
        }
    }
}

/// A successful write.
#[derive(Debug)]
pub(crate) struct Written {
    pub obj: Arc<StoredObject>,
    pub warnings: Vec<String>,
}

pub(crate) fn store_error(def: &ResourceDef, name: &str, e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound => ApiError::not_found(&def.plural, &def.group, name),
        StoreError::AlreadyExists => ApiError::already_exists(&def.plural, &def.group, name),
        StoreError::Conflict => ApiError::conflict(&def.plural, &def.group, name),
        StoreError::UidMismatch { expected, actual } => ApiError::conflict_msg(
            &def.plural,
            &def.group,
            name,
            &format!("Precondition failed: UID in precondition: {expected}, UID in object meta: {actual}"),
        ),
        StoreError::Expired { requested, oldest } => ApiError::expired(format!(
            "too old resource version: {requested} ({oldest})"
        )),
        StoreError::TooLarge { requested, current } => too_large(requested, current),
    }
}

/// 504 for a resourceVersion the server has not reached.
pub(crate) fn too_large(requested: u64, current: u64) -> ApiError {
    ApiError::new(
        504,
        "Timeout",
        format!("Too large resource version: {requested}, current: {current}"),
    )
    .with_details(Details {
        causes: vec![Cause {
            reason: "ResourceVersionTooLarge".into(),
            message: "Too large resource version".into(),
            field: String::new(),
        }],
        ..Details::default()
    })
}

fn is_crd(def: &ResourceDef) -> bool {
    def.builtin().is_some()
        && def.group == "apiextensions.k8s.io"
        && def.plural == "customresourcedefinitions"
}

/// Runs after every stored create or update.
pub(crate) fn after_write(
    shared: &Shared,
    def: &ResourceDef,
    old: Option<&StoredObject>,
    new: &StoredObject,
) {
    if is_crd(def) {
        super::crds::sync(shared, new);
    }
    if old.is_none()
        && def.builtin().is_some()
        && def.group.is_empty()
        && def.plural == "namespaces"
    {
        ensure_default_service_account(shared, new.name());
    }
    if new.value.pointer("/metadata/deletionTimestamp").is_some() {
        shared.gc.mark_deleting(def, new);
    }
    shared.controllers.notify_one();
}

/// Creates the `default` ServiceAccount in a new namespace, as
/// kube-controller-manager's service-account controller does.
fn ensure_default_service_account(shared: &Shared, ns: &str) {
    let Some(def) = shared.registry().get("", "v1", "serviceaccounts") else {
        return;
    };
    let sa = serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}});
    let opts = WriteOpts::internal(&def, "kube-controller-manager");
    let _ = create(shared, &def, Some(ns), sa, &opts);
}

/// Runs after every object removal.
pub(crate) fn after_delete(shared: &Shared, def: &ResourceDef, gone: &StoredObject) {
    if is_crd(def) {
        super::crds::removed(shared, gone);
    }
    shared.gc.owner_gone(gone.uid());
    shared.controllers.notify_one();
}
