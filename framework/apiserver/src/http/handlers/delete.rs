//! delete and deletecollection: `DeleteOptions` from the body or the query
//! (propagation policy, preconditions, dryRun), admission, and the response kube-apiserver
//! gives — the object while finalizers hold it, a `Success` Status once it is
//! gone (the object itself for pods).

use std::sync::Arc;

use http::Response;
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::ctx::Ctx;
use super::list_body::{list_body, ListMeta};
use super::offload::admitted;
use super::read::{filter, parse_rv, render_written};
use crate::admission::attributes::Admission;
use crate::http::wire::{self as h, Body};
use crate::machinery::status::{success_status, ApiError, Cause};
use crate::objects::{self, DeleteOpts, Deleted, Propagation};
use crate::registry::conversion::webhook_conversion;
use crate::storage::StoredObject;

/// A deleted object as the request's version shows it.
fn served(
    ctx: &Ctx,
    admission: &dyn Admission,
    obj: Arc<StoredObject>,
) -> Result<Arc<StoredObject>, ApiError> {
    let api_version = ctx.def.api_version(&ctx.path.version);
    if webhook_conversion(&ctx.def).is_none() || obj.api_version() == Some(api_version.as_str()) {
        return Ok(obj);
    }
    let value = admission.convert(&ctx.def, obj.to_value(), &api_version)?;
    Ok(Arc::new(StoredObject::encode(value, obj.rv)))
}

async fn options(ctx: &Ctx, body: Incoming) -> Result<DeleteOpts, ApiError> {
    let bytes = h::read_body(body).await?;
    let body: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        let media = h::content_type(&ctx.parts.headers);
        let media = if media.is_empty() {
            "application/json".to_owned()
        } else {
            media
        };
        h::decode_object(&bytes, &media)?
    };
    let q = &ctx.query;
    let policy = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| q.non_empty("propagationPolicy").map(str::to_owned));
    let orphan = match body.get("orphanDependents").and_then(Value::as_bool) {
        Some(b) => Some(b),
        None => q.flag("orphanDependents")?,
    };
    let invalid = |c: Cause| ApiError::invalid("DeleteOptions", "meta.k8s.io", "", vec![c]);
    if policy.is_some() && orphan.is_some() {
        return Err(invalid(Cause::invalid(
            "propagationPolicy",
            "Invalid value: \"\": orphanDependents and deletionPropagation cannot be both set",
        )));
    }
    let propagation = match (policy.as_deref(), orphan) {
        (Some("Orphan"), _) | (None, Some(true)) => Some(Propagation::Orphan),
        (Some("Foreground"), _) => Some(Propagation::Foreground),
        (Some("Background"), _) | (None, Some(false)) => Some(Propagation::Background),
        (None, None) => None,
        (Some(other), _) => {
            return Err(invalid(Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!("Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""),
                field: "propagationPolicy".into(),
            }))
        }
    };
    let dry_run = match body.get("dryRun").and_then(Value::as_array) {
        Some(a) => a.iter().any(|v| v.as_str() == Some("All")),
        None => q.get("dryRun") == Some("All"),
    };
    let uid = body
        .pointer("/preconditions/uid")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let rv = match body
        .pointer("/preconditions/resourceVersion")
        .and_then(Value::as_str)
    {
        Some(r) => Some(parse_rv(r)?),
        None => None,
    };
    let grace_period = match body.get("gracePeriodSeconds").and_then(Value::as_i64) {
        Some(g) => Some(g),
        None => q.int("gracePeriodSeconds")?,
    };
    Ok(DeleteOpts {
        propagation,
        uid,
        rv,
        dry_run,
        grace_period,
    })
}

pub(super) async fn delete(ctx: &Arc<Ctx>, body: Incoming) -> Result<Response<Body>, ApiError> {
    let opts = options(ctx, body).await?;
    let in_work = ctx.clone();
    admitted(ctx, move |chain| delete_one(&in_work, &opts, chain)).await
}

fn delete_one(
    ctx: &Ctx,
    opts: &DeleteOpts,
    admission: &dyn Admission,
) -> Result<Response<Body>, ApiError> {
    let key = ctx.key();
    let version = &ctx.path.version;
    match objects::delete_admitted(&ctx.shared, &ctx.def, &key, opts, version, admission)? {
        Deleted::Pending(obj) => Ok(h::json_bytes(200, render_written(ctx, admission, &obj)?)),
        Deleted::Gone(obj) => {
            if ctx.def.builtin().is_some_and(|b| b.delete_returns_object) {
                Ok(h::json_bytes(200, render_written(ctx, admission, &obj)?))
            } else {
                Ok(h::json(
                    200,
                    &success_status(&key.1, &ctx.def.group, &ctx.def.plural, obj.uid()),
                ))
            }
        }
    }
}

pub(super) async fn delete_collection(
    ctx: &Arc<Ctx>,
    body: Incoming,
) -> Result<Response<Body>, ApiError> {
    if ctx.def.namespaced && ctx.path.namespace.is_none() {
        return Err(ApiError::method_not_allowed());
    }
    let opts = options(ctx, body).await?;
    let in_work = ctx.clone();
    admitted(ctx, move |chain| delete_each(&in_work, &opts, chain)).await
}

/// Deletes every selected object, each through admission.
fn delete_each(
    ctx: &Ctx,
    opts: &DeleteOpts,
    admission: &dyn Admission,
) -> Result<Response<Body>, ApiError> {
    let filter = filter(ctx)?;
    let page = {
        let store = ctx.shared.storage.lock();
        store.list(&ctx.def.key(), &filter, None, None, None)
    }
    .map_err(|e| objects::store_error(&ctx.def, "", e))?;
    let mut deleted = Vec::new();
    for obj in &page.items {
        let key = (obj.namespace().to_owned(), obj.name().to_owned());
        let version = &ctx.path.version;
        match objects::delete_admitted(&ctx.shared, &ctx.def, &key, opts, version, admission) {
            Ok(Deleted::Gone(o) | Deleted::Pending(o)) => deleted.push(served(ctx, admission, o)?),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let rv = ctx.shared.storage.lock().rv().to_string();
    Ok(h::json_bytes(
        200,
        list_body(
            Arc::clone(&ctx.def),
            &ctx.path.version,
            deleted,
            &ListMeta {
                rv: &rv,
                cont: None,
                remaining: None,
                shard_info: None,
            },
        ),
    ))
}
