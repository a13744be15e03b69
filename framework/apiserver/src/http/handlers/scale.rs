//! The scale subresource: an `autoscaling/v1` `Scale` view of
//! `spec.replicas` / `status.replicas` / the selector (built-in workloads),
//! or of a CRD's `specReplicasPath`, `statusReplicasPath` and
//! `labelSelectorPath`; get, update and merge/JSON patch. Writes pass the
//! admission chain as kube-apiserver's `ScaleREST` passes it: webhooks see
//! the `Scale` (object and old object), kind `autoscaling/v1` `Scale`,
//! subresource `scale`; a mutating webhook's change to
//! `spec.replicas` reaches the object.

use std::sync::Arc;

use http::Response;
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::ctx::Ctx;
use super::offload::admitted;
use super::read::parse_rv;
use super::write::{apply_patch, body_object, parse_patch, patch_options, write_opts};
use crate::admission::attributes::{Admission, Attributes, SCALE};
use crate::http::wire::{self as h, Body};
use crate::machinery::status::{ApiError, Cause};
use crate::machinery::util;
use crate::objects::{self, Precondition, Sub, WriteOpts};
use crate::registry::ResourceDef;
use crate::registry::{json_path, set_json_path, ScalePaths};

fn paths(ctx: &Ctx) -> Result<ScalePaths, ApiError> {
    ctx.def
        .scale
        .clone()
        .ok_or_else(ApiError::resource_not_found)
}

/// `matchLabels`/`matchExpressions` as selector text, keys sorted.
fn selector_string(sel: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            parts.push(format!("{k}={}", v.as_str().unwrap_or("")));
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => parts.push(format!("{key} in ({})", values.join(","))),
                "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
                "Exists" => parts.push(key.to_owned()),
                "DoesNotExist" => parts.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    parts.sort();
    parts.join(",")
}

fn scale_of(ctx: &Ctx, obj: &Value) -> Result<Value, ApiError> {
    let p = paths(ctx)?;
    let replicas = json_path(obj, &p.spec_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status_replicas = json_path(obj, &p.status_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let selector = match &p.label_selector {
        Some(path) => json_path(obj, path)
            .and_then(Value::as_str)
            .map(str::to_owned),
        None => obj.pointer("/spec/selector").map(selector_string),
    };
    let meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut scale_meta = json!({});
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(f) {
            scale_meta[f] = v.clone();
        }
    }
    let mut status = json!({"replicas": status_replicas});
    if let Some(s) = selector.filter(|s| !s.is_empty()) {
        status["selector"] = json!(s);
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": replicas},
        "status": status,
    }))
}

pub(super) fn get(ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    let key = ctx.key();
    let obj = ctx
        .shared
        .storage
        .lock()
        .get(&ctx.def.key(), &key)
        .ok_or_else(|| ApiError::not_found(&ctx.def.plural, &ctx.def.group, &key.1))?;
    Ok(h::json(200, &scale_of(ctx, &obj.value())?))
}

/// Writes the replicas of `scale` into `cur`.
fn apply_scale(ctx: &Ctx, cur: &Value, scale: &Value) -> Result<(Value, Precondition), ApiError> {
    let p = paths(ctx)?;
    let name = util::meta_str(cur, "name").unwrap_or("");
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if replicas < 0 {
        return Err(ApiError::invalid(
            "Scale",
            "autoscaling",
            name,
            vec![Cause::invalid(
                "spec.replicas",
                format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            )],
        ));
    }
    let pre = match util::meta_str(scale, "resourceVersion").filter(|s| !s.is_empty()) {
        Some(rv) => Precondition::Rv(parse_rv(rv)?),
        None => Precondition::None,
    };
    let mut next = cur.clone();
    set_json_path(&mut next, &p.spec_replicas, json!(replicas));
    Ok((next, pre))
}

/// The admission of a scale write: `inner` (the request's chain) shown
/// the `Scale`s of the object and the old object.
struct ScaleAdmission<'a> {
    ctx: &'a Ctx,
    inner: &'a dyn Admission,
}

impl Admission for ScaleAdmission<'_> {
    fn mutate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let attrs = Attributes {
            sub_kind: Some(SCALE),
            ..*attrs
        };
        let old_scale = old.map(|o| scale_of(self.ctx, o)).transpose()?;
        let Some(object) = object else {
            return self.inner.mutate(&attrs, None, old_scale.as_ref());
        };
        let mut scale = scale_of(self.ctx, object)?;
        let before = scale.clone();
        self.inner
            .mutate(&attrs, Some(&mut scale), old_scale.as_ref())?;
        if scale != before {
            *object = apply_scale(self.ctx, object, &scale)?.0;
        }
        Ok(())
    }

    fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let attrs = Attributes {
            sub_kind: Some(SCALE),
            ..*attrs
        };
        let scale = object.map(|o| scale_of(self.ctx, o)).transpose()?;
        let old_scale = old.map(|o| scale_of(self.ctx, o)).transpose()?;
        self.inner
            .validate(&attrs, scale.as_ref(), old_scale.as_ref())
    }

    fn convert(
        &self,
        def: &ResourceDef,
        object: Value,
        api_version: &str,
    ) -> Result<Value, ApiError> {
        self.inner.convert(def, object, api_version)
    }
}

fn respond(ctx: &Ctx, obj: &Value) -> Result<Response<Body>, ApiError> {
    Ok(h::json(200, &scale_of(ctx, obj)?))
}

pub(super) async fn update(ctx: &Arc<Ctx>, body: Incoming) -> Result<Response<Body>, ApiError> {
    let mut opts = write_opts(ctx, Sub::Scale, "UpdateOptions")?;
    let bytes = h::read_body(body).await?;
    let in_work = ctx.clone();
    admitted(ctx, move |chain| {
        let ctx = in_work;
        let scale = body_object(&ctx, &bytes, &mut opts)?;
        let key = ctx.key();
        let admission = ScaleAdmission {
            ctx: &ctx,
            inner: chain,
        };
        let w = objects::update_admitted(
            &ctx.shared,
            &ctx.def,
            &key,
            &opts,
            |cur| apply_scale(&ctx, cur, &scale),
            &admission,
        )?;
        respond(&ctx, &w.obj.value())
    })
    .await
}

pub(super) async fn patch(ctx: &Arc<Ctx>, body: Incoming) -> Result<Response<Body>, ApiError> {
    let opts = write_opts(ctx, Sub::Scale, "PatchOptions")?;
    let bytes = h::read_body(body).await?;
    let in_work = ctx.clone();
    admitted(ctx, move |chain| patch_with(&in_work, &bytes, &opts, chain)).await
}

fn patch_with(
    ctx: &Ctx,
    bytes: &[u8],
    opts: &WriteOpts,
    chain: &dyn Admission,
) -> Result<Response<Body>, ApiError> {
    let patch = parse_patch(ctx, bytes)?;
    let force = patch_options(ctx, &patch)?;
    let key = ctx.key();
    let admission = ScaleAdmission { ctx, inner: chain };
    let mutate = |cur: &Value| {
        let scale = scale_of(ctx, cur)?;
        let (patched, pre) = apply_patch(ctx, opts, force, &scale, &patch)?;
        let (next, scale_pre) = apply_scale(ctx, cur, &patched)?;
        Ok((
            next,
            if pre == Precondition::None {
                scale_pre
            } else {
                pre
            },
        ))
    };
    let w = objects::update_admitted(&ctx.shared, &ctx.def, &key, opts, mutate, &admission)?;
    respond(ctx, &w.obj.value())
}
