//! Where writes do their work: a small pool of threads with large stacks,
//! apart from the runtime's worker threads (which accept connections, do
//! TLS handshakes and answer health checks). Decoding a body, admission
//! and CEL validation run here, so a slow validation delays only other
//! writes, never the server; and CEL parsing and evaluation, which recurse
//! once per nesting level of a rule, get a stack sized for the deepest
//! rule the parser accepts. kube-apiserver runs each request on a
//! goroutine whose stack grows as needed; Rust threads cannot grow theirs.
//!
//! [`run`] hands work to the pool from async code; [`with_large_stack`]
//! runs CEL from anywhere (at once on a pool thread, else on a scoped
//! thread of its own). A panic in the work is caught and returned as
//! [`Panicked`].

use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, LazyLock, Mutex};

/// The stack of every thread CEL runs on. The deepest rule the bounds let
/// through (96 nested expressions, 250 levels of operators) needs about
/// 20 MiB in an unoptimized build and a tenth of that optimized
/// (measured); the rest is headroom. Only the pages touched are backed.
const STACK_BYTES: usize = 64 << 20;

thread_local! {
    /// Whether this thread has a [`STACK_BYTES`] stack.
    static LARGE_STACK: Cell<bool> = const { Cell::new(false) };
}

/// Work that panicked; the panic message, when it had one.
#[derive(Debug)]
pub(crate) struct Panicked(pub String);

impl std::fmt::Display for Panicked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "panicked: {}", self.0)
    }
}

fn message(payload: Box<dyn Any + Send>) -> Panicked {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".to_owned());
    Panicked(text)
}

type Job = Box<dyn FnOnce() + Send>;

/// The pool: a queue and the threads taking from it.
struct Pool {
    queue: Mutex<mpsc::Sender<Job>>,
}

/// As many threads as cores (at least two): the work is CPU-bound.
static POOL: LazyLock<Option<Pool>> = LazyLock::new(|| {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let (tx, rx) = mpsc::channel::<Job>();
    let rx = Arc::new(Mutex::new(rx));
    let mut started = 0;
    for i in 0..threads {
        let rx = rx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("apiserver-work-{i}"))
            .stack_size(STACK_BYTES)
            .spawn(move || {
                LARGE_STACK.with(|l| l.set(true));
                loop {
                    let job = match rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(poisoned) => poisoned.into_inner().recv(),
                    };
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                }
            });
        match spawned {
            Ok(_) => started += 1,
            Err(e) => tracing::warn!(error = %e, "could not start a work thread"),
        }
    }
    (started > 0).then(|| Pool {
        queue: Mutex::new(tx),
    })
});

/// Runs `f` on the pool and waits for it without blocking the runtime.
pub(crate) async fn run<T, F>(f: F) -> Result<T, Panicked>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let Some(pool) = POOL.as_ref() else {
        // No pool thread could be started: a blocking thread of the
        // runtime, with a large-stack thread for the work itself.
        return tokio::task::spawn_blocking(move || with_large_stack(f))
            .await
            .map_err(|e| Panicked(e.to_string()))?;
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)).map_err(message));
    });
    let sent = pool
        .queue
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send(job)
        .is_ok();
    if !sent {
        return Err(Panicked("the work threads stopped".into()));
    }
    rx.await
        .map_err(|_| Panicked("the work was dropped".into()))?
}

/// Runs `f` on a large-stack thread of its own and waits for it without
/// blocking the runtime: for writes that may wait on a webhook for
/// seconds, which must not hold a pool thread meanwhile.
pub(crate) async fn run_dedicated<T, F>(f: F) -> Result<T, Panicked>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("apiserver-admit".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            LARGE_STACK.with(|l| l.set(true));
            let _ = tx.send(catch_unwind(AssertUnwindSafe(f)).map_err(message));
        })
        .map_err(|e| Panicked(format!("could not start a thread: {e}")))?;
    rx.await
        .map_err(|_| Panicked("the work was dropped".into()))?
}

/// Runs `f` on a thread with a large stack: at once on a pool thread,
/// else on a new scoped thread (in-server controllers, `install_crd`).
pub(crate) fn with_large_stack<T, F>(f: F) -> Result<T, Panicked>
where
    T: Send,
    F: FnOnce() -> T + Send,
{
    if LARGE_STACK.with(Cell::get) {
        return catch_unwind(AssertUnwindSafe(f)).map_err(message);
    }
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("apiserver-cel".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(s, || {
                LARGE_STACK.with(|l| l.set(true));
                catch_unwind(AssertUnwindSafe(f)).map_err(message)
            })
            .map_err(|e| Panicked(format!("could not start a thread: {e}")))?;
        handle.join().map_err(message)?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_runs_off_the_runtime_and_panics_come_back_as_errors() {
        let runtime_thread = std::thread::current().id();
        let ran_on = run(std::thread::current).await.expect("runs");
        assert_ne!(ran_on.id(), runtime_thread);
        assert!(run(|| LARGE_STACK.with(Cell::get)).await.expect("runs"));
        let err = run(|| -> u8 { panic!("boom") }).await.unwrap_err();
        assert_eq!(err.0, "boom");
    }

    #[test]
    fn large_stack_work_runs_anywhere() {
        assert!(with_large_stack(|| LARGE_STACK.with(Cell::get)).expect("runs"));
        let err = with_large_stack(|| -> u8 { panic!("{}", "deep") }).unwrap_err();
        assert_eq!(err.0, "deep");
    }
}
