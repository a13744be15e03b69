//! The manager's work in named groups, each started as one and stopped as
//! one (controller-runtime's `runnable_group.go`): the HTTP servers, the
//! runnables that need no leadership, and the controllers and runnables
//! that need it. The start sequence in [`run`](super::run) starts the
//! groups in order and stops them in reverse; a group knows how to start
//! its runnables, watch for the first to fail, and stop them all within a
//! deadline.

use std::time::Duration;

use futures::future::BoxFuture;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Error;

/// Starts a runnable: given the token that tells it to stop, the future
/// that runs it.
pub(crate) type StartFn =
    Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, Result<(), Error>> + Send>;

/// A server, a controller or a user's runnable, not yet started.
pub(crate) struct Runnable {
    name: String,
    /// How long it may take to stop, when it says (a controller's own
    /// graceful shutdown timeout); else the manager's.
    grace: Option<Duration>,
    start: StartFn,
}

impl Runnable {
    pub(crate) fn new(name: impl Into<String>, start: StartFn) -> Self {
        Self {
            name: name.into(),
            grace: None,
            start,
        }
    }

    /// Lets it take `grace` to stop, even beyond the manager's timeout.
    pub(crate) fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }
}

/// Runnables started together and stopped together.
pub(crate) struct RunnableGroup {
    name: &'static str,
    pending: Vec<Runnable>,
    running: JoinSet<(String, Result<(), Error>)>,
    stop: CancellationToken,
    /// The longest grace a runnable of the group asked for.
    grace: Option<Duration>,
}

impl RunnableGroup {
    pub(crate) fn new(name: &'static str) -> Self {
        Self {
            name,
            pending: Vec::new(),
            running: JoinSet::new(),
            stop: CancellationToken::new(),
            grace: None,
        }
    }

    /// Adds a runnable, started with the group.
    pub(crate) fn add(&mut self, runnable: Runnable) {
        if let Some(grace) = runnable.grace {
            self.grace = Some(self.grace.map_or(grace, |g| g.max(grace)));
        }
        self.pending.push(runnable);
    }

    /// How long stopping the group may take: `default`, or longer if one of
    /// its runnables asked for more.
    pub(crate) fn grace(&self, default: Duration) -> Duration {
        self.grace.map_or(default, |g| g.max(default))
    }

    /// Starts every runnable added so far.
    pub(crate) fn start(&mut self) {
        if !self.pending.is_empty() {
            tracing::info!(
                group = self.name,
                runnables = self.pending.len(),
                "starting"
            );
        }
        for runnable in self.pending.drain(..) {
            let name = runnable.name;
            let run = (runnable.start)(self.stop.clone());
            tracing::debug!(group = self.name, runnable = %name, "starting");
            self.running.spawn(async move { (name, run.await) });
        }
    }

    /// The first error of a running runnable; runnables that end well are
    /// done. Pends while none fails, forever once none runs.
    pub(crate) async fn first_failure(&mut self) -> Error {
        loop {
            match self.running.join_next().await {
                Some(Ok((name, Ok(())))) => {
                    tracing::info!(group = self.name, runnable = %name, "finished")
                }
                Some(Ok((_, Err(e)))) => return e,
                Some(Err(e)) => {
                    return Error::Runnable {
                        name: format!("a runnable of the {} group", self.name),
                        source: Box::new(e),
                    }
                }
                None => std::future::pending::<()>().await,
            }
        }
    }

    /// Ends the group at once, without waiting (another process may lead
    /// already when leadership is lost).
    pub(crate) fn abort(&mut self) {
        self.stop.cancel();
        self.running.abort_all();
    }

    /// Tells every runnable to stop and waits for them until `deadline`;
    /// then abandons what is left, saying so. Errors of runnables that stop
    /// badly are logged: the manager is stopping anyway.
    pub(crate) async fn stop_and_wait(&mut self, deadline: Instant) {
        self.stop.cancel();
        self.pending.clear();
        let running = &mut self.running;
        let name = self.name;
        let drained = tokio::time::timeout_at(deadline, async {
            while let Some(joined) = running.join_next().await {
                match joined {
                    Ok((runnable, Err(e))) => {
                        tracing::error!(group = name, %runnable, error = %e, "stopped with an error")
                    }
                    Ok((runnable, Ok(()))) => {
                        tracing::debug!(group = name, %runnable, "stopped")
                    }
                    Err(e) if e.is_cancelled() => {}
                    Err(e) => tracing::error!(group = name, error = %e, "runnable task failed"),
                }
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                group = name,
                left = running.len(),
                "still running after the graceful shutdown timeout: abandoning them"
            );
            running.abort_all();
        }
    }
}

/// The manager's groups, in start order.
pub(crate) struct Groups {
    /// The probe and metrics servers: started first, stopped last.
    pub(crate) servers: RunnableGroup,
    /// Runnables that need no leadership, started once the caches synced.
    pub(crate) others: RunnableGroup,
    /// Controllers and runnables that need leadership, started once
    /// elected.
    pub(crate) leaders: RunnableGroup,
}

impl Groups {
    /// How many runnables wait to start.
    pub(crate) fn len(&self) -> usize {
        self.servers.pending.len() + self.others.pending.len() + self.leaders.pending.len()
    }
}

impl Default for Groups {
    fn default() -> Self {
        Self {
            servers: RunnableGroup::new("servers"),
            others: RunnableGroup::new("runnables"),
            leaders: RunnableGroup::new("controllers and leader runnables"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt as _;

    fn runnable(name: &str, result: Result<(), &'static str>) -> Runnable {
        let name = name.to_owned();
        let failure = name.clone();
        Runnable::new(
            name,
            Box::new(move |stop: CancellationToken| {
                async move {
                    match result {
                        Ok(()) => {
                            stop.cancelled().await;
                            Ok(())
                        }
                        Err(message) => Err(Error::Runnable {
                            name: failure,
                            source: message.into(),
                        }),
                    }
                }
                .boxed()
            }),
        )
    }

    #[tokio::test]
    async fn the_first_failure_of_a_group_is_its_error_and_stopping_waits_for_the_rest() {
        let mut group = RunnableGroup::new("test");
        group.add(runnable("steady", Ok(())));
        group.add(runnable("broken", Err("on fire")));
        group.start();
        let error = group.first_failure().await;
        assert_eq!(error.to_string(), "runnable broken: on fire");
        group
            .stop_and_wait(Instant::now() + Duration::from_secs(30))
            .await;
        assert!(group.running.is_empty(), "the steady runnable stopped");
    }

    #[test]
    fn a_group_waits_as_long_as_its_most_patient_runnable_asks() {
        let mut group = RunnableGroup::new("test");
        let default = Duration::from_secs(30);
        assert_eq!(group.grace(default), default);
        group.add(runnable("short", Ok(())).with_grace(Duration::from_secs(1)));
        assert_eq!(group.grace(default), default);
        group.add(runnable("long", Ok(())).with_grace(Duration::from_secs(90)));
        assert_eq!(group.grace(default), Duration::from_secs(90));
    }
}
