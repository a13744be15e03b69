//! [`eventually`]: polling a condition in a test until it holds or a
//! deadline passes, the way envtest suites use Gomega's `Eventually`.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often [`eventually`] probes.
const PROBE_INTERVAL: Duration = Duration::from_millis(20);

/// Runs `probe` until it returns `Some`, every 20 ms for at most
/// `timeout`, and returns its value. Panics, naming `what`, when the
/// deadline passes: it is a test assertion.
///
/// ```no_run
/// # use std::time::Duration;
/// # use kubeforge::prelude::*;
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # async fn demo(api: Api<ConfigMap>) {
/// use kubeforge::testing::eventually;
///
/// let cm = eventually("the ConfigMap", Duration::from_secs(30), || async {
///     api.get_opt("settings").await.ok().flatten()
/// })
/// .await;
/// # let _ = cm;
/// # }
/// ```
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(PROBE_INTERVAL).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn it_returns_the_first_value_the_probe_finds() {
        let calls = AtomicUsize::new(0);
        let value = eventually("the third call", Duration::from_secs(5), || async {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            (n == 3).then_some(n)
        })
        .await;
        assert_eq!(value, 3);
    }

    #[tokio::test]
    #[should_panic(expected = "waiting for nothing at all")]
    async fn it_panics_naming_what_never_came() {
        eventually("nothing at all", Duration::from_millis(50), || async {
            None::<()>
        })
        .await;
    }
}
