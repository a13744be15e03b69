//! `/openapi/v3` and its per-group-version documents as kube-openapi's
//! `handler3` serves them: JSON only (406 when the client accepts neither
//! JSON nor a wildcard), an `ETag` with `If-None-Match`, and for `?hash=`
//! URLs a 301 to the current hash when it is stale, or immutable caching
//! headers when it matches (kubectl keeps them in its `KUBECACHEDIR`).

use bytes::Bytes;
use http::request::Parts;
use http::{header, HeaderValue, Response, StatusCode};

use crate::http::wire::{self as h, Body, Query};
use crate::machinery::status::ApiError;
use crate::registry::openapi;
use crate::registry::state::Shared;

fn with_status(code: StatusCode, body: Bytes) -> Response<Body> {
    let mut resp = Response::new(h::full(body));
    *resp.status_mut() = code;
    resp
}

fn set(resp: &mut Response<Body>, name: header::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        resp.headers_mut().insert(name, v);
    }
}

/// 304 when the client already has this `ETag`, else the body.
fn serve(parts: &Parts, etag: &str, body: Bytes) -> Response<Body> {
    let quoted = format!("\"{etag}\"");
    let fresh = parts
        .headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == quoted || t.trim() == "*"));
    let mut resp = if fresh {
        with_status(StatusCode::NOT_MODIFIED, Bytes::new())
    } else {
        h::json_bytes(200, body)
    };
    set(&mut resp, header::ETAG, &quoted);
    resp
}

/// `GET /openapi/v3`.
pub(super) async fn index(shared: &Shared, parts: &Parts) -> Result<Response<Body>, ApiError> {
    let index = shared.openapi.index(&shared.registry).await;
    let body = serde_json::to_vec(&index).unwrap_or_default();
    let etag = openapi::body_hash(&body);
    let body = Bytes::from(body);
    Ok(serve(parts, &etag, body))
}

/// `GET /openapi/v3/{api/v1 | apis/{group}/{version}}[?hash=...]`.
pub(super) async fn document(
    shared: &Shared,
    parts: &Parts,
    query: &Query,
    key: &str,
) -> Result<Response<Body>, ApiError> {
    if !h::accepts_json(&parts.headers) {
        return Ok(with_status(StatusCode::NOT_ACCEPTABLE, Bytes::new()));
    }
    let doc = shared
        .openapi
        .document(&shared.registry, key)
        .await
        .ok_or_else(ApiError::page_not_found)?;
    let hash = query.non_empty("hash");
    if hash.is_some_and(|h| h != doc.hash) {
        let mut resp = with_status(StatusCode::MOVED_PERMANENTLY, Bytes::new());
        set(
            &mut resp,
            header::LOCATION,
            &format!("/openapi/v3/{key}?hash={}", doc.hash),
        );
        return Ok(resp);
    }
    let mut resp = serve(parts, &doc.hash, doc.body.clone());
    set(&mut resp, header::VARY, "Accept");
    if hash.is_some() {
        set(&mut resp, header::CACHE_CONTROL, "public, immutable");
        let year = jiff::SignedDuration::from_hours(24 * 365);
        if let Ok(expires) = jiff::Timestamp::now().checked_add(year) {
            set(
                &mut resp,
                header::EXPIRES,
                &expires.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string(),
            );
        }
    }
    Ok(resp)
}
