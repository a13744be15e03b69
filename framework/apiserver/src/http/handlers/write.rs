//! create (POST), update (PUT) and patch (PATCH) over HTTP: body decoding
//! (JSON, YAML), write options (`dryRun`, `fieldManager`,
//! `fieldValidation`, `force`), the one place that dispatches on the patch
//! content type, a PUT that creates its object, and `Warning` headers.

use std::sync::Arc;

use http::Response;
use hyper::body::Incoming;
use serde_json::Value;

use super::ctx::Ctx;
use super::offload::{add_warnings, admitted};
use super::read::{parse_rv, render_written};
use crate::admission::attributes::Admission;
use crate::admission::escalation::Guarded;
use crate::http::wire::{self as h, Body, Format, Output};
use crate::machinery::status::{ApiError, Cause};
use crate::machinery::util;
use crate::objects::engines::{self, FieldValidation};
use crate::objects::{self, Precondition, Sub, WriteOpts, Written};
use crate::storage::ObjKey;

const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];
const CR_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// The options of a write (`CreateOptions`, `UpdateOptions` or
/// `PatchOptions`, which `kind` names in errors).
pub(super) fn write_opts(ctx: &Ctx, sub: Sub, kind: &str) -> Result<WriteOpts, ApiError> {
    let dry_run = match ctx.query.get("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Invalid dry run value: {other}. Valid values: All"
            )))
        }
    };
    let validation = match ctx.query.get("fieldValidation") {
        None | Some("") | Some("Warn") => FieldValidation::Warn,
        Some("Ignore") => FieldValidation::Ignore,
        Some("Strict") => FieldValidation::Strict,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "fieldValidation parameter unsupported: {other}"
            )))
        }
    };
    let ua = ctx
        .parts
        .headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    if let Some(param) = ctx.query.get("fieldManager") {
        let causes = engines::validate_field_manager(param);
        if !causes.is_empty() {
            return Err(ApiError::invalid(kind, "meta.k8s.io", "", causes));
        }
    }
    let manager = engines::field_manager(ctx.query.get("fieldManager"), ua);
    Ok(WriteOpts {
        dry_run,
        manager,
        sub,
        validation,
        version: ctx.path.version.clone(),
        apply: false,
        duplicates: Vec::new(),
    })
}

/// The object response of a write at the request's version, with
/// `Warning` headers.
pub(super) fn written(
    ctx: &Ctx,
    code: u16,
    w: &Written,
    admission: &dyn Admission,
) -> Result<Response<Body>, ApiError> {
    let format = match h::negotiate(&ctx.parts.headers)? {
        Output::Object(f) => f,
        _ => Format::Json,
    };
    let body = render_written(ctx, admission, &w.obj)?;
    let mut resp = h::respond(code, format, body);
    add_warnings(&mut resp, &w.warnings);
    Ok(resp)
}

/// Decodes a body read whole; the duplicate keys it had go into `opts`
/// for `fieldValidation` to judge.
pub(super) fn body_object(
    ctx: &Ctx,
    bytes: &[u8],
    opts: &mut WriteOpts,
) -> Result<Value, ApiError> {
    let media = h::content_type(&ctx.parts.headers);
    let decoded = h::decode_body(bytes, &media)?;
    opts.duplicates = decoded.duplicates;
    Ok(decoded.value)
}

pub(super) async fn create(ctx: &Arc<Ctx>, body: Incoming) -> Result<Response<Body>, ApiError> {
    let mut opts = write_opts(ctx, Sub::Main, "CreateOptions")?;
    let bytes = h::read_body(body).await?;
    let in_work = ctx.clone();
    admitted(ctx, move |chain| {
        let ctx = in_work;
        let obj = body_object(&ctx, &bytes, &mut opts)?;
        let w = objects::create_admitted(
            &ctx.shared,
            &ctx.def,
            ctx.path.namespace.as_deref(),
            obj,
            &opts,
            chain,
        )?;
        written(&ctx, 201, &w, chain)
    })
    .await
}

fn sub_of(ctx: &Ctx) -> Sub {
    match ctx.path.subresource.as_deref() {
        Some("status") => Sub::Status,
        Some("finalize") => Sub::Finalize,
        Some("scale") => Sub::Scale,
        _ => Sub::Main,
    }
}

/// The name and namespace in a body must match the URL.
fn check_identity(ctx: &Ctx, obj: &Value) -> Result<(), ApiError> {
    let key = ctx.key();
    let name = util::meta_str(obj, "name").unwrap_or("");
    if name != key.1 {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            key.1
        )));
    }
    if ctx.def.namespaced {
        if let Some(ns) = util::meta_str(obj, "namespace").filter(|n| !n.is_empty()) {
            if ns != key.0 {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
    }
    Ok(())
}

pub(super) async fn update(ctx: &Arc<Ctx>, body: Incoming) -> Result<Response<Body>, ApiError> {
    let mut opts = write_opts(ctx, sub_of(ctx), "UpdateOptions")?;
    let bytes = h::read_body(body).await?;
    let in_work = ctx.clone();
    admitted(ctx, move |chain| {
        let obj = body_object(&in_work, &bytes, &mut opts)?;
        update_with(&in_work, obj, &opts, chain)
    })
    .await
}

fn update_with(
    ctx: &Ctx,
    obj: Value,
    opts: &WriteOpts,
    admission: &Guarded<'_>,
) -> Result<Response<Body>, ApiError> {
    check_identity(ctx, &obj)?;
    let pre = match util::meta_str(&obj, "resourceVersion").filter(|s| !s.is_empty()) {
        Some(rv) => Precondition::Rv(parse_rv(rv)?),
        None => Precondition::None,
    };
    let key = ctx.key();
    let missing = !exists(ctx, &key);
    if missing {
        uid_precondition(ctx, &obj, "")?;
    }
    if missing && ctx.def.creates_on_update() && opts.sub == Sub::Main {
        match create_on_update(ctx, obj.clone(), opts, &admission.creating()) {
            Ok(w) => return written(ctx, 201, &w, admission),
            // Created meanwhile: update what is there now.
            Err(e) if e.code == 409 && e.reason == "AlreadyExists" => {}
            Err(e) => return Err(e),
        }
    }
    let w = objects::update_admitted(
        &ctx.shared,
        &ctx.def,
        &key,
        opts,
        |current| {
            uid_precondition(ctx, &obj, util::meta_str(current, "uid").unwrap_or(""))?;
            // Custom resources allow no unconditional update; the check
            // comes after the object is found, as in the registry store's
            // `Update` (a missing one is a 404, not this 422).
            if pre == Precondition::None && ctx.def.is_custom() {
                return Err(ApiError::invalid(
                    &ctx.def.kind,
                    &ctx.def.group,
                    &key.1,
                    vec![Cause::invalid(
                        "metadata.resourceVersion",
                        "Invalid value: 0x0: must be specified for an update",
                    )],
                ));
            }
            Ok((obj.clone(), pre))
        },
        admission,
    )?;
    written(ctx, 200, &w, admission)
}

/// The UID in a PUT body is a precondition of the update
/// (`rest.DefaultUpdatedObjectInfo`) that etcd3's `GuaranteedUpdate` checks
/// against the stored object (`stored_uid`, empty when there is none)
/// before the store looks at it: a mismatch is a 409 with the storage error
/// quoted, before any 404, create on update or validation. A patch carries
/// no such precondition; a UID it changes is the validation's 422.
fn uid_precondition(ctx: &Ctx, obj: &Value, stored_uid: &str) -> Result<(), ApiError> {
    let Some(uid) = util::meta_str(obj, "uid").filter(|u| !u.is_empty() && *u != stored_uid) else {
        return Ok(());
    };
    let (namespace, name) = ctx.key();
    let key = ctx.def.etcd_key(&namespace, &name);
    Err(ApiError::conflict_msg(
        &ctx.def.plural,
        &ctx.def.group,
        &name,
        &format!(
            "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, \
             AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object meta: {stored_uid}"
        ),
    ))
}

fn exists(ctx: &Ctx, key: &ObjKey) -> bool {
    ctx.shared.storage.lock().get(&ctx.def.key(), key).is_some()
}

/// A PUT of a missing object of a kind that creates on update: the
/// registry store's `Update` creates it through the create strategy and
/// the create admission (operation `CREATE`, `CreateOptions`), authorized
/// for `create` as well (`handlers/update.go`).
fn create_on_update(
    ctx: &Ctx,
    mut obj: Value,
    opts: &WriteOpts,
    admission: &dyn Admission,
) -> Result<Written, ApiError> {
    // A resourceVersion is ignored: etcd3's `GuaranteedUpdate` clears it
    // before storing what the store's create branch returns.
    if let Some(meta) = util::meta_mut(&mut obj) {
        meta.remove("resourceVersion");
    }
    objects::create_admitted(
        &ctx.shared,
        &ctx.def,
        ctx.path.namespace.as_deref(),
        obj,
        opts,
        admission,
    )
}

/// A patch, parsed by content type.
pub(super) enum Patch {
    Merge(Value),
    Json(json_patch::Patch),
    Strategic(Value),
    Apply(Value),
}

/// The one place that dispatches on the patch content type. Custom
/// resources accept no strategic merge patch (apiextensions-apiserver's
/// `customresource_handler.go`), so it is a 415 there.
pub(super) fn parse_patch(ctx: &Ctx, bytes: &[u8]) -> Result<Patch, ApiError> {
    let media = h::content_type(&ctx.parts.headers);
    let accepted = if ctx.def.is_custom() {
        CR_PATCH_TYPES
    } else {
        PATCH_TYPES
    };
    if !accepted.contains(&media.as_str()) {
        return Err(ApiError::unsupported_media_type(accepted));
    }
    let bad = |e: serde_json::Error| ApiError::bad_request(format!("error decoding patch: {e}"));
    match media.as_str() {
        "application/merge-patch+json" => {
            serde_json::from_slice(bytes).map(Patch::Merge).map_err(bad)
        }
        "application/json-patch+json" => {
            serde_json::from_slice(bytes).map(Patch::Json).map_err(bad)
        }
        "application/strategic-merge-patch+json" => serde_json::from_slice(bytes)
            .map(Patch::Strategic)
            .map_err(bad),
        _ => h::decode_object(bytes, "application/apply-patch+yaml").map(Patch::Apply),
    }
}

/// Applies a patch to `cur`; an RV the patch sets becomes a precondition.
pub(super) fn apply_patch(
    ctx: &Ctx,
    opts: &WriteOpts,
    force: bool,
    cur: &Value,
    patch: &Patch,
) -> Result<(Value, Precondition), ApiError> {
    let mut next = cur.clone();
    match patch {
        Patch::Merge(p) => json_patch::merge(&mut next, p),
        Patch::Json(p) => super::jsonpatch::apply(&mut next, p)?,
        Patch::Strategic(p) => next = engines::strategic_merge(&ctx.def, cur, p)?,
        Patch::Apply(config) => {
            next = engines::server_side_apply(
                &ctx.def,
                Some(cur),
                config,
                &opts.manager,
                force,
                opts.sub.name(),
                &util::now(),
            )?
        }
    }
    let before = util::meta_str(cur, "resourceVersion");
    let pre = match util::meta_str(&next, "resourceVersion") {
        Some(rv) if Some(rv) != before && !rv.is_empty() => Precondition::Rv(parse_rv(rv)?),
        _ => Precondition::None,
    };
    if let Some(meta) = util::meta_mut(&mut next) {
        if let Some(rv) = before {
            meta.insert("resourceVersion".into(), Value::String(rv.to_owned()));
        }
    }
    Ok((next, pre))
}

/// `PatchOptions` validation: `force` only on apply, `fieldManager`
/// required for apply (apimachinery `ValidatePatchOptions`). Returns `force`.
pub(super) fn patch_options(ctx: &Ctx, patch: &Patch) -> Result<bool, ApiError> {
    let is_apply = matches!(patch, Patch::Apply(_));
    let force = ctx.query.flag("force")?;
    let invalid = |c: Cause| ApiError::invalid("PatchOptions", "meta.k8s.io", "", vec![c]);
    if force.is_some() && !is_apply {
        return Err(invalid(Cause::forbidden(
            "force",
            "may not be specified for non-apply patch",
        )));
    }
    if is_apply && ctx.query.non_empty("fieldManager").is_none() {
        return Err(invalid(Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value: is required for apply patch".into(),
            field: "fieldManager".into(),
        }));
    }
    Ok(force.unwrap_or(false))
}

pub(super) async fn patch(ctx: &Arc<Ctx>, body: Incoming) -> Result<Response<Body>, ApiError> {
    let opts = write_opts(ctx, sub_of(ctx), "PatchOptions")?;
    let bytes = h::read_body(body).await?;
    let in_work = ctx.clone();
    admitted(ctx, move |chain| patch_with(&in_work, &bytes, opts, chain)).await
}

fn patch_with(
    ctx: &Ctx,
    bytes: &[u8],
    mut opts: WriteOpts,
    admission: &Guarded<'_>,
) -> Result<Response<Body>, ApiError> {
    let patch = parse_patch(ctx, bytes)?;
    let force = patch_options(ctx, &patch)?;
    opts.apply = matches!(patch, Patch::Apply(_));
    let key = ctx.key();
    if let Patch::Apply(config) = &patch {
        // Apply creates what does not exist yet.
        if opts.sub == Sub::Main && !exists(ctx, &key) {
            let obj = engines::server_side_apply(
                &ctx.def,
                None,
                config,
                &opts.manager,
                force,
                None,
                &util::now(),
            )?;
            check_identity(ctx, &obj)?;
            match objects::create_admitted(
                &ctx.shared,
                &ctx.def,
                ctx.path.namespace.as_deref(),
                obj,
                &opts,
                &admission.creating(),
            ) {
                Ok(w) => return written(ctx, 201, &w, admission),
                // Created meanwhile: apply to what is there now.
                Err(e) if e.code == 409 && e.reason == "AlreadyExists" => {}
                Err(e) => return Err(e),
            }
        }
    }
    let w = objects::update_admitted(
        &ctx.shared,
        &ctx.def,
        &key,
        &opts,
        |cur| {
            let patched = apply_patch(ctx, &opts, force, cur, &patch)?;
            check_identity(ctx, &patched.0)?;
            Ok(patched)
        },
        admission,
    )?;
    written(ctx, 200, &w, admission)
}
