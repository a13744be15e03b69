//! Waiting with a deadline for something that happens elsewhere (a
//! controller inside the API server, a reflector, a handler task): check
//! every 20 ms, give up after 20 s. A passing test never waits out the
//! deadline, so it is sized for a loaded 2-core CI machine.
#![allow(dead_code)]

use std::time::Duration;

/// How long a condition may take to come true.
pub const DEADLINE: Duration = Duration::from_secs(20);

const INTERVAL: Duration = Duration::from_millis(20);

/// Whether `check` comes to hold within [`DEADLINE`].
pub async fn holds(mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(INTERVAL).await;
    }
}

/// Waits until `check` holds; panics naming `what` after [`DEADLINE`].
pub async fn eventually(what: &str, check: impl AsyncFnMut() -> bool) {
    assert!(holds(check).await, "timed out waiting for {what}");
}
