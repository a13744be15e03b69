//! Admission webhooks: the `AdmissionReview` wire format (`review`), the
//! answers ([`Verdict`], [`Denial`]), typed [`Defaulter`]s and
//! [`Validator`]s for a kind, and raw [`AdmissionHandler`]s for kinds the
//! operator does not own (a Pod defaulter, say).

mod review;
mod typed;
mod verdict;

use std::future::Future;

use futures::future::BoxFuture;

pub use review::{Admission, AdmissionRequest, Operation};
pub use typed::{AdmissionResult, Defaulter, Validator};
pub use verdict::{Denial, Verdict};

pub(crate) use typed::{Defaulting, Validating};

/// Answers admission calls at one path. Implemented by every
/// `Fn(Admission) -> impl Future<Output = Verdict>`, which is how a raw
/// webhook is written.
pub trait AdmissionHandler: Send + Sync + 'static {
    /// The verdict on one call.
    fn admit(&self, admission: Admission) -> BoxFuture<'_, Verdict>;
}

impl<F, Fut> AdmissionHandler for F
where
    F: Fn(Admission) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Verdict> + Send + 'static,
{
    fn admit(&self, admission: Admission) -> BoxFuture<'_, Verdict> {
        Box::pin(self(admission))
    }
}

/// The review answering `body`: the handler's verdict, or `allowed: false`
/// with a 400 result when the body is not a usable review.
pub(crate) async fn answer(handler: &dyn AdmissionHandler, body: &[u8]) -> Vec<u8> {
    match review::decode(body) {
        Ok((admission, api_version)) => {
            let uid = admission.request.uid.clone();
            let verdict = handler.admit(admission).await;
            review::encode(api_version, &uid, &verdict)
        }
        Err(bad) => {
            tracing::debug!(error = %bad.message, "bad admission review");
            review::encode_bad(&bad)
        }
    }
}

/// The answer to a request that never reached a handler (too large, not
/// JSON): an `AdmissionReview` with `allowed: false` and `code`.
pub(crate) fn refusal(code: u16, reason: &str, message: String) -> Vec<u8> {
    let verdict = Verdict::denied(Denial::new(code, reason, message));
    review::encode("admission.k8s.io/v1", "", &verdict)
}
