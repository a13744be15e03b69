//! Shutdown on SIGTERM or SIGINT, as controller-runtime's
//! `signals.SetupSignalHandler` (kube-apiserver's `SetupSignalContext`)
//! does: the first signal cancels a [`CancellationToken`] so the process
//! can stop gracefully; a second signal exits at once with status 1, for
//! when the graceful stop hangs.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kubeforge::manager::Error> {
//! let shutdown = kubeforge::manager::shutdown_on_signals()?;
//! // hand clones of `shutdown` to servers, the manager, ...
//! shutdown.cancelled().await;
//! # Ok(())
//! # }
//! ```

use std::sync::{Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::manager::Error;

/// The process's one signal token (signals are process-wide).
static TOKEN: Mutex<Option<CancellationToken>> = Mutex::new(None);

/// The exit status after a second signal, as kube-apiserver's handler.
pub const FORCED_EXIT_CODE: i32 = 1;

/// A token cancelled on the first SIGTERM or SIGINT (Ctrl-C elsewhere than
/// Unix); a second signal exits the process with status
/// [`FORCED_EXIT_CODE`].
///
/// Installs the handlers on the first call, which must happen inside a
/// tokio runtime with its I/O driver enabled; later calls return clones of
/// the same token.
pub fn shutdown_on_signals() -> Result<CancellationToken, Error> {
    let mut slot = TOKEN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(token) = &*slot {
        return Ok(token.clone());
    }
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(Error::Signal(std::io::Error::other(
            "shutdown_on_signals must be called from within a tokio runtime",
        )));
    }
    let mut signals = Signals::install().map_err(Error::Signal)?;
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        let Some(first) = signals.recv().await else {
            return;
        };
        tracing::info!(
            signal = first,
            "shutdown signal received, stopping gracefully (send it again to exit at once)"
        );
        cancel.cancel();
        if let Some(second) = signals.recv().await {
            tracing::warn!(
                signal = second,
                "second shutdown signal received, exiting now"
            );
            std::process::exit(FORCED_EXIT_CODE);
        }
    });
    *slot = Some(token.clone());
    Ok(token)
}

/// The signal streams this module listens to.
struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    #[cfg(unix)]
    fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    #[cfg(not(unix))]
    fn install() -> std::io::Result<Self> {
        Ok(Self {})
    }

    /// The next signal's name; `None` if the streams closed (runtime
    /// shutting down).
    #[cfg(unix)]
    async fn recv(&mut self) -> Option<&'static str> {
        tokio::select! {
            s = self.term.recv() => s.map(|()| "SIGTERM"),
            s = self.int.recv() => s.map(|()| "SIGINT"),
        }
    }

    #[cfg(not(unix))]
    async fn recv(&mut self) -> Option<&'static str> {
        tokio::signal::ctrl_c().await.ok().map(|()| "Ctrl-C")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_runtime_is_an_error_not_a_panic() {
        // Only meaningful before any test installed the handlers; the
        // in-process tests in this crate never do.
        if TOKEN
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
        {
            let err = shutdown_on_signals().unwrap_err();
            assert!(err.to_string().contains("tokio runtime"), "{err}");
        }
    }
}
