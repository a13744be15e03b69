//! What every write takes and gives: the endpoint it came through
//! ([`Sub`]), its options ([`WriteOpts`]), its result ([`Written`]), and
//! storage errors as kube-apiserver words them.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::admission::attributes::Operation;
use crate::machinery::status::{ApiError, Cause, Details};
use crate::objects::engines::FieldValidation;
use crate::registry::ResourceDef;
use crate::storage::{StoreError, StoredObject};

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
    /// Paths of keys the body had twice (`fieldValidation` judges them with
    /// the unknown fields).
    pub duplicates: Vec<String>,
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
            duplicates: Vec::new(),
        }
    }
}

/// The `meta.k8s.io/v1` options admission sees for a create or update
/// (`CreateOptions`, `UpdateOptions`; a patch is seen as the operation it
/// performs).
pub(crate) fn write_options(operation: Operation, opts: &WriteOpts) -> Value {
    let kind = match operation {
        Operation::Create => "CreateOptions",
        _ => "UpdateOptions",
    };
    let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if opts.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if !opts.manager.is_empty() {
        options["fieldManager"] = json!(opts.manager);
    }
    options["fieldValidation"] = json!(match opts.validation {
        FieldValidation::Ignore => "Ignore",
        FieldValidation::Warn => "Warn",
        FieldValidation::Strict => "Strict",
    });
    options
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
