//! Running the synchronous part of a write (decoding, admission,
//! validation, storing) on the work threads, off the runtime's, with a
//! panic there answered as kube-apiserver's panic filter answers it.

use http::Response;

use crate::http::Body;
use crate::status::ApiError;
use crate::work;

/// Runs the synchronous part of a write (decoding, admission, validation,
/// storing) on the work threads, off the runtime's.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> Result<Response<Body>, ApiError> {
        Ok(Response::new(crate::http::full("ok")))
    }

    #[tokio::test]
    async fn a_panicking_write_is_a_500_status() {
        let err = off_reactor(|| {
            if ok().is_ok() {
                panic!("boom");
            }
            ok()
        })
        .await
        .unwrap_err();
        assert_eq!(err.code, 500);
        assert!(off_reactor(ok).await.is_ok());
    }
}
