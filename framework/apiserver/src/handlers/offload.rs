//! Running the synchronous part of a write (decoding, admission,
//! validation, storing) on the work threads, off the runtime's, with a
//! panic there answered as kube-apiserver's panic filter answers it. Its
//! own module so the verb handlers reach it without reaching back into the
//! router that dispatches to them.

use crate::http::Body;
use crate::status::ApiError;
use crate::work;
use http::Response;

/// Runs `work` on the work threads; a panic in it is a 500 `Status`.
pub(super) async fn off_reactor<F>(work: F) -> Result<Response<Body>, ApiError>
where
    F: FnOnce() -> Result<Response<Body>, ApiError> + Send + 'static,
{
    match work::run(work).await {
        Ok(r) => r,
        Err(panicked) => {
            tracing::error!(%panicked, "a write panicked");
            Err(ApiError::panicked())
        }
    }
}
