//! Running the synchronous part of a write (decoding, admission,
//! validation, storing) on the work threads, off the runtime's, with a
//! panic there answered as kube-apiserver's panic filter answers it; a
//! write that may wait on an admission webhook gets a thread of its own,
//! and the webhooks' warnings become `Warning` headers.

use std::sync::Arc;

use http::{HeaderValue, Response};

use super::ctx::Ctx;
use crate::admission::escalation::Guarded;
use crate::admission::webhooks::Chain;
use crate::auth::UserInfo;
use crate::http::wire::{self as h, Body};
use crate::machinery::status::ApiError;
use crate::machinery::work;

/// Runs a write that goes through admission (the webhook chain, behind
/// RBAC's escalation check): on the work threads, or on a thread of its
/// own when it may wait on a webhook; the webhooks' warnings become
/// `Warning` headers, on an error response too.
pub(super) async fn admitted<F>(ctx: &Arc<Ctx>, work: F) -> Result<Response<Body>, ApiError>
where
    F: FnOnce(&Guarded<'_>) -> Result<Response<Body>, ApiError> + Send + 'static,
{
    let user = ctx.parts.extensions.get::<Arc<UserInfo>>().cloned();
    let chain = Arc::new(
        Chain::new(ctx.shared.clone(), tokio::runtime::Handle::current()).for_user(user.clone()),
    );
    let calls_out = chain.may_call_out(&ctx.def);
    let in_work = chain.clone();
    let shared = ctx.shared.clone();
    let job = move || {
        work(&Guarded {
            inner: &*in_work,
            shared: &shared,
            user,
            authorize_create: false,
        })
    };
    let outcome = if calls_out {
        work::run_dedicated(job).await
    } else {
        work::run(job).await
    };
    let result = outcome.unwrap_or_else(|panicked| {
        tracing::error!(%panicked, "a write panicked");
        Err(ApiError::panicked())
    });
    let mut resp = result.unwrap_or_else(|e| h::error(&e));
    add_warnings(&mut resp, &chain.warnings());
    Ok(resp)
}

/// Adds `Warning: 299 - "text"` headers, once per distinct text.
pub(super) fn add_warnings(resp: &mut Response<Body>, warnings: &[String]) {
    for warning in warnings {
        let escaped = warning.replace('\\', "\\\\").replace('"', "\\\"");
        let text = format!("299 - \"{escaped}\"");
        let Ok(v) = HeaderValue::from_str(&text) else {
            continue;
        };
        if !resp
            .headers()
            .get_all(http::header::WARNING)
            .iter()
            .any(|h| *h == v)
        {
            resp.headers_mut().append(http::header::WARNING, v);
        }
    }
}
