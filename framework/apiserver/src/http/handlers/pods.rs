//! The pod subresources a scheduler and `kubectl drain` post to:
//! `pods/binding` (a `Binding`) and `pods/eviction` (a policy/v1
//! `Eviction`), each answering `201` with a `Success` Status; and the
//! service-account `token` subresource (a TokenRequest).

use http::Response;
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::ctx::Ctx;
use crate::http::wire::{self as h, Body};
use crate::machinery::status::ApiError;
use crate::objects;

async fn body(ctx: &Ctx, body: Incoming) -> Result<Value, ApiError> {
    let bytes = h::read_body(body).await?;
    let media = h::content_type(&ctx.parts.headers);
    let media = if media.is_empty() {
        "application/json".to_owned()
    } else {
        media
    };
    h::decode_object(&bytes, &media)
}

fn success() -> Response<Body> {
    h::json(
        201,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}

/// `POST pods/{name}/binding`.
pub(super) async fn binding(ctx: &Ctx, b: Incoming) -> Result<Response<Body>, ApiError> {
    let binding = body(ctx, b).await?;
    let key = ctx.key();
    if let Some(kind) = binding.pointer("/target/kind").and_then(Value::as_str) {
        if !kind.is_empty() && kind != "Node" {
            return Err(ApiError::invalid(
                "Binding",
                "",
                &key.1,
                vec![crate::machinery::status::Cause::invalid(
                    "to.kind",
                    format!("Invalid value: \"{kind}\": must be empty or 'Node'"),
                )],
            ));
        }
    }
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let manager = crate::objects::engines::field_manager(
        ctx.query.get("fieldManager"),
        ctx.parts
            .headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok()),
    );
    objects::bind(
        &ctx.shared,
        &ctx.def,
        &key,
        node,
        binding.pointer("/metadata/annotations"),
        &manager,
    )?;
    Ok(success())
}

/// `POST pods/{name}/eviction`.
pub(super) async fn eviction(ctx: &Ctx, b: Incoming) -> Result<Response<Body>, ApiError> {
    let eviction = body(ctx, b).await?;
    objects::evict(&ctx.shared, &ctx.def, &ctx.key(), &eviction)?;
    Ok(success())
}

/// `POST serviceaccounts/{name}/token` (a TokenRequest).
pub(super) async fn token_request(ctx: &Ctx, b: Incoming) -> Result<Response<Body>, ApiError> {
    let request = body(ctx, b).await?;
    let (namespace, name) = ctx.key();
    let answer = crate::auth::tokens::token_request(&*ctx.shared, &namespace, &name, request)?;
    Ok(h::json(201, &answer))
}
