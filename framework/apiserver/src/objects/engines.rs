//! Admission hooks: the single places where CRD validation, the
//! custom-resource schema (pruning, defaulting, validation incl. CEL),
//! strategic merge patch, server-side apply and managed fields plug into the
//! write path. The engines live in [`schema`](crate::apiextensions) and
//! [`patch`](crate::machinery::patch); this module picks the schema a resource uses,
//! the fields an endpoint resets, and turns their errors into `Status`es.

use serde_json::Value;

use crate::apiextensions::FieldError;
use crate::machinery::patch::{
    self, ApplyError, FieldSet, MergeSchema, PatchError, PathElement, FIELD_MANAGER_CONFLICT,
};
use crate::machinery::status::{ApiError, Cause, Details};
use crate::registry::ResourceDef;

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

/// A schema error as a `Status` cause (`field.Error` to `StatusCause`).
pub(crate) fn cause_of(e: &FieldError) -> Cause {
    Cause {
        reason: e.cause.as_str().to_owned(),
        message: e.message.clone(),
        field: e.field.clone(),
    }
}

/// Defaults and validates a CRD on create (`old == None`) and update, as
/// the apiextensions decoder and strategy do.
pub(crate) fn admit_crd(new: &mut Value, old: Option<&Value>) -> Vec<Cause> {
    crate::apiextensions::default_crd(new);
    crate::apiextensions::validate_crd(new, old)
        .iter()
        .map(cause_of)
        .collect()
}

/// Prunes, defaults and validates a custom resource against its CRD schema
/// for `version` (the request's), in apiextensions-apiserver's order:
/// unknown fields are dropped while decoding, defaults applied, then the
/// strategy validates (with `old` for ratcheting and transition rules).
pub(crate) fn admit_custom_resource(
    def: &ResourceDef,
    version: &str,
    new: &mut Value,
    old: Option<&Value>,
) -> Admitted {
    let Some(custom) = def.custom() else {
        return Admitted::default();
    };
    let Some(schema) = custom
        .structural
        .get(version)
        .or_else(|| custom.structural.get(&def.storage_version))
    else {
        return Admitted::default();
    };
    let pruned = schema.prune(new);
    schema.default(new);
    let causes = schema.validate(new, old).iter().map(cause_of).collect();
    Admitted { causes, pruned }
}

/// Prunes and defaults a stored custom resource with the storage version's
/// schema, as kube-apiserver does on every read from storage; `true` when
/// that changed it.
pub(crate) fn default_from_storage(def: &ResourceDef, obj: &mut Value) -> bool {
    let Some(schema) = def
        .custom()
        .and_then(|c| c.structural.get(&def.storage_version))
    else {
        return false;
    };
    let before = obj.clone();
    schema.prune(obj);
    schema.default(obj);
    *obj != before
}

/// Runs `f` with the merge schema of `def`: a CRD's storage-version schema
/// (objects are kept at the storage version), or the built-in kind's.
fn with_merge_schema<R>(def: &ResourceDef, f: impl FnOnce(&dyn MergeSchema) -> R) -> R {
    match def.custom().and_then(|c| c.merge.get(&def.storage_version)) {
        Some(s) => f(s.as_ref()),
        None => f(crate::registry::builtin_merge_schema(&def.group, &def.kind)),
    }
}

/// The fields an endpoint resets, which nobody comes to own through it
/// (the strategies' `GetResetFields`): `status` on the main resource of a
/// kind with a status subresource, `spec` on `/status`.
fn reset_fields(def: &ResourceDef, subresource: Option<&str>) -> FieldSet {
    let top = match subresource {
        None if def.status => "status",
        Some("status") => "spec",
        _ => return FieldSet::new(),
    };
    let path = [PathElement::field(top)];
    FieldSet::from_paths([&path[..]])
}

/// Records a non-apply write (create, update, merge/JSON/strategic patch,
/// subresource write) in `metadata.managedFields` for `manager`.
pub(crate) fn track_managed_fields(
    def: &ResourceDef,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
) {
    let reset = reset_fields(def, subresource);
    with_merge_schema(def, |schema| {
        patch::track_update_ignoring(old, new, manager, subresource, now, schema, &reset)
    });
}

/// A strategic merge patch error as kube-apiserver reports it
/// (`interpretStrategicMergePatchError`): 400 for malformed directives, 422
/// for lists of lists, and an unclassified 500 for the rest.
fn patch_error(e: &PatchError) -> ApiError {
    match e.http_status() {
        400 => ApiError::bad_request(e.to_string()),
        422 => ApiError::new(422, "Invalid", e.to_string()),
        code => ApiError::new(code, "", e.to_string()),
    }
}

/// Applies a strategic merge patch to a built-in object with the kind's
/// `patchStrategy`/`patchMergeKey` tags.
pub(crate) fn strategic_merge(
    def: &ResourceDef,
    original: &Value,
    patch: &Value,
) -> Result<Value, ApiError> {
    let schema = crate::registry::builtin_merge_schema(&def.group, &def.kind);
    patch::strategic_merge(original, patch, schema).map_err(|e| patch_error(&e))
}

/// An apply error as a `Status`: conflicts are a 409 whose causes name
/// each field and its owner (`NewApplyConflict`: details carry only the
/// causes).
fn apply_error(e: &ApplyError) -> ApiError {
    let err = ApiError::new(e.http_status(), e.reason(), e.status_message());
    match e {
        ApplyError::Conflicts(conflicts) => err.with_details(Details {
            causes: conflicts
                .iter()
                .map(|c| Cause {
                    reason: FIELD_MANAGER_CONFLICT.to_owned(),
                    message: c.message(),
                    field: c.field.clone(),
                })
                .collect(),
            ..Details::default()
        }),
        _ => err,
    }
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
    // Objects are kept at the storage version; a configuration sent to
    // another served version of the same kind applies to it unchanged (the
    // versions of a CRD without conversion differ only in apiVersion).
    let target = live
        .and_then(|l| l.get("apiVersion"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| def.api_version(&def.storage_version));
    let sent = config.get("apiVersion").and_then(Value::as_str);
    let served = sent.is_some_and(|s| def.versions.iter().any(|v| def.api_version(v) == s));
    let normalized;
    let config = if served && sent != Some(target.as_str()) {
        let mut c = config.clone();
        c["apiVersion"] = Value::String(target);
        normalized = c;
        &normalized
    } else {
        config
    };
    let reset = reset_fields(def, subresource);
    with_merge_schema(def, |schema| {
        patch::apply_ignoring(
            live,
            config,
            manager,
            force,
            subresource,
            now,
            schema,
            &reset,
        )
    })
    .map_err(|e| apply_error(&e))
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

/// The longest `fieldManager` (apimachinery `FieldManagerMaxLength`).
const FIELD_MANAGER_MAX_LENGTH: i64 = 128;

/// `ValidateFieldManager` (apimachinery meta/v1/validation): at most 128
/// bytes, every character printable.
///
/// kube-apiserver reports each unprintable character in an error that
/// quotes the whole value, so its answer grows with the square of the
/// value's length: a query of 48 KB of `%00` would take gigabytes. Here a
/// value over the limit is reported as too long and nothing more, which
/// bounds the answer (at most 128 errors quoting at most 128 bytes); a
/// value within it gets kube-apiserver's errors, every one.
pub(crate) fn validate_field_manager(manager: &str) -> Vec<Cause> {
    if manager.len() as i64 > FIELD_MANAGER_MAX_LENGTH {
        let too_long = FieldError::too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH);
        return vec![cause_of(&too_long)];
    }
    let mut errs = Vec::new();
    for (i, c) in manager.char_indices() {
        if !printable(c) {
            errs.push(FieldError::invalid_str(
                "fieldManager",
                manager,
                &format!("invalid character U+{:04X} (at position {i})", c as u32),
            ));
        }
    }
    errs.iter().map(cause_of).collect()
}

/// Go's `unicode.IsPrint` (letters, marks, numbers, punctuation, symbols
/// and the ASCII space), without Unicode tables: no control, no space
/// other than U+0020, no format character (Cf), private-use character or
/// noncharacter.
fn printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    let format = matches!(
        u,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    );
    let private_use = matches!(u, 0xE000..=0xF8FF | 0xF0000..=0x10FFFF);
    let noncharacter = matches!(u, 0xFDD0..=0xFDEF) || u & 0xFFFE == 0xFFFE;
    !(format || private_use || noncharacter)
}
