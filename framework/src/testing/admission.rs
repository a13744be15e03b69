//! Admission hooks: the single places where the full CRD validation, the
//! custom-resource schema (validation, pruning, defaulting) and managed
//! fields plug into the write path. Until those modules are wired in, the
//! hooks make the minimal checks this server owns (CRD names, group,
//! versions, exactly one storage version) and leave objects as they are.

use serde_json::Value;

use super::registry::{crd, ResourceDef};
use super::status::{ApiError, Cause};

/// How unknown fields are treated (`fieldValidation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

/// What a custom-resource admission produced.
#[derive(Debug, Default)]
pub(crate) struct Admitted {
    /// Field errors (422).
    pub causes: Vec<Cause>,
    /// Paths of unknown fields that were dropped (400 under Strict, a 299
    /// warning under Warn).
    pub pruned: Vec<String>,
}

/// Validates a CRD on create (`old == None`) and update.
pub(crate) fn admit_crd(new: &Value, _old: Option<&Value>) -> Vec<Cause> {
    crd::basic_validation(new)
}

/// Prunes, defaults and validates a custom resource against its CRD schema
/// for `version`.
pub(crate) fn admit_custom_resource(
    def: &ResourceDef,
    version: &str,
    new: &mut Value,
    old: Option<&Value>,
) -> Admitted {
    // The CRD's schema for this version, for the schema module.
    let schema = def.custom().and_then(|c| c.schemas.get(version));
    let _ = (schema, new, old);
    Admitted::default()
}

/// Records the write in `metadata.managedFields` for `manager`.
pub(crate) fn track_managed_fields(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
) {
    let _ = (old, new, manager, subresource, now);
}

/// Whether strategic merge patch is implemented; until then
/// `application/strategic-merge-patch+json` is answered with 415.
pub(crate) const STRATEGIC_MERGE: bool = false;

/// Whether server-side apply is implemented; until then
/// `application/apply-patch+yaml` is answered with 415.
pub(crate) const SERVER_SIDE_APPLY: bool = false;

fn not_implemented() -> ApiError {
    ApiError::unsupported_media_type(&[
        "application/json-patch+json",
        "application/merge-patch+json",
    ])
}

/// Applies a strategic merge patch to a built-in object (the `patch`
/// module's `strategic_merge`, with the kind's merge schema).
pub(crate) fn strategic_merge(
    def: &ResourceDef,
    original: &Value,
    patch: &Value,
) -> Result<Value, ApiError> {
    let _ = (def, original, patch);
    Err(not_implemented())
}

/// Server-side apply of `config` by `manager` onto `live` (`None`: the
/// object does not exist yet); returns the object to store, with
/// `managedFields` updated, or 409 with `FieldManagerConflict` causes.
pub(crate) fn server_side_apply(
    def: &ResourceDef,
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    subresource: Option<&str>,
    now: &str,
) -> Result<Value, ApiError> {
    let _ = (def, live, config, manager, force, subresource, now);
    Err(not_implemented())
}

/// The field manager: the `fieldManager` parameter, or the User-Agent up to
/// its first `/` (apiserver `fieldmanager.go`).
pub(crate) fn field_manager(param: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(p) = param.filter(|p| !p.is_empty()) {
        return p.to_owned();
    }
    let ua = user_agent.unwrap_or("");
    let prefix = ua.split('/').next().unwrap_or("");
    prefix.chars().take(128).collect()
}
