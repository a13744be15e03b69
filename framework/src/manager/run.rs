//! [`Manager::run`]: the start sequence, one named step after another, and
//! the stop sequence in reverse (controller-runtime's
//! `controllerManager.Start` and `engageStopProcedure`). Each step is a
//! method below; the groups of runnables are in [`runnables`](super::runnables).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::builder::add_webhook_check;
use super::runnables::{Groups, Runnable, StartFn};
use super::runtime::{lock, Election, Manager, Pending};
use super::{shutdown_on_signals, Error, LeaderElectionConfig, LeadershipHandle, Phase};
use crate::events::Recorder;
use crate::webhook::{WebhookServerOptions, DEFAULT_WEBHOOK_PORT};

/// How long, beyond the graceful shutdown timeout, the manager waits for
/// controllers that are abandoning their reconciles themselves.
const ABANDON_MARGIN: Duration = Duration::from_secs(1);

/// How long recorders may take to write their open event series at exit.
const RECORDER_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the manager stops.
enum Ending {
    Requested,
    LeadershipLost,
    Failed(Error),
}

/// The election, once started: its handle, how to stop it, and the lease
/// it runs for (none without leader election).
struct RunningElection {
    handle: LeadershipHandle,
    stop: CancellationToken,
    lease: Option<(String, LeaderElectionConfig)>,
}

impl RunningElection {
    fn lease_name(&self) -> String {
        self.lease
            .as_ref()
            .map(|(lease, _)| lease.clone())
            .unwrap_or_default()
    }
}

impl Manager {
    /// Runs until SIGTERM or SIGINT, then stops gracefully (a second signal
    /// exits at once). See [`run_until`](Self::run_until).
    pub async fn run(self) -> Result<(), Error> {
        let stop = shutdown_on_signals()?;
        self.run_until(stop).await
    }

    /// Runs until `stop` is cancelled, then stops gracefully; returns early
    /// with an error if a cache does not sync, leadership is lost, or a
    /// controller, runnable or server fails. See the [module docs](super).
    pub async fn run_until(self, stop: CancellationToken) -> Result<(), Error> {
        let mut groups = self.take_groups()?;

        // 1. The probe and metrics servers, so probes answer from the start.
        groups.servers.start();

        // 2. The caches, blocking until every informer has synced.
        if let Err(ending) = self.sync_caches(&stop).await {
            return self.shut_down(groups, None, ending).await;
        }

        // 3. The runnables that need no leadership.
        groups.others.start();

        // 4. Leader election (leading at once without it).
        let election = self.start_election();

        // 5. Once elected: the controllers and the runnables that need
        //    leadership, until told to stop, leadership is lost, or
        //    something fails.
        let ending = match self.wait_until_elected(&election, &mut groups, &stop).await {
            Ok(()) => {
                tracing::info!("elected: starting controllers");
                groups.leaders.start();
                self.lead(&election, &mut groups, &stop).await
            }
            Err(ending) => ending,
        };

        // 6. Stop in reverse.
        self.shut_down(groups, Some(election), ending).await
    }

    /// The registered runnables in their groups, the servers added; a
    /// registration problem (a duplicate controller name) instead.
    fn take_groups(&self) -> Result<Groups, Error> {
        let Pending {
            mut groups, errors, ..
        } = std::mem::take(&mut *self.pending());
        if let Some(error) = errors.into_iter().next() {
            return Err(error);
        }
        for server in std::mem::take(&mut *lock(&self.parts.servers)) {
            let name = format!("probe/metrics server on {}", server.local_addr());
            let start: StartFn = Box::new(move |stop| server.run(stop).boxed());
            groups.servers.add(Runnable::new(name, start));
        }
        self.add_webhook_server(&mut groups)?;
        Ok(groups)
    }

    /// Adds the webhook server to the servers group: the one bound at build,
    /// else, when webhooks are registered, one with the defaults (bound as
    /// it starts).
    fn add_webhook_server(&self, groups: &mut Groups) -> Result<(), Error> {
        let parts = &self.parts;
        let bound = lock(&parts.webhook_server).take();
        let start: StartFn = match bound {
            Some(server) => {
                let name = format!("webhook server on {}", server.local_addr());
                let start: StartFn =
                    Box::new(move |stop| async move { Ok(server.run(stop).await?) }.boxed());
                groups.servers.add(Runnable::new(name, start));
                return Ok(());
            }
            None if parts.webhooks.is_empty() => return Ok(()),
            None => {
                add_webhook_check(&parts.probes, &parts.webhook_serving)?;
                let webhooks = parts.webhooks.clone();
                let serving = Arc::clone(&parts.webhook_serving);
                Box::new(move |stop| {
                    async move {
                        let server = WebhookServerOptions::default()
                            .bind(webhooks, serving)
                            .await?;
                        Ok(server.run(stop).await?)
                    }
                    .boxed()
                })
            }
        };
        let name = format!("webhook server on port {DEFAULT_WEBHOOK_PORT}");
        groups.servers.add(Runnable::new(name, start));
        Ok(())
    }

    /// Starts the informers and waits, at most the cache sync timeout, for
    /// every one to sync; `/readyz` passes from then on.
    async fn sync_caches(&self, stop: &CancellationToken) -> Result<(), Ending> {
        let factory = &self.parts.factory;
        tracing::info!(informers = factory.informer_ids().len(), "starting caches");
        factory.start();
        let synced = tokio::select! {
            results = factory.wait_for_cache_sync(self.parts.cache_sync_timeout) => results,
            () = stop.cancelled() => return Err(Ending::Requested),
        };
        let failures: Vec<_> = synced.into_iter().filter_map(|(_, r)| r.err()).collect();
        if !failures.is_empty() {
            for failure in &failures {
                tracing::error!(error = %failure, "cache did not sync");
            }
            return Err(Ending::Failed(Error::CacheSync(failures)));
        }
        self.parts.synced.store(true, Ordering::Release);
        tracing::info!("caches synced");
        Ok(())
    }

    /// Starts the leader election, adding its `/healthz` check; without
    /// leader election, a handle that leads at once.
    fn start_election(&self) -> RunningElection {
        let parts = &self.parts;
        let stop = CancellationToken::new();
        let running = match lock(&parts.election).take() {
            Some(Election {
                elector,
                lease,
                config,
            }) => {
                tracing::info!(%lease, identity = %parts.identity, "starting leader election");
                let handle = elector.run(stop.clone());
                let check = handle.healthz_check(config.lease_duration());
                if let Err(e) = parts.probes.add_healthz_check("leader-election", check) {
                    tracing::warn!(error = %e, "cannot add the leader-election health check");
                }
                RunningElection {
                    handle,
                    stop,
                    lease: Some((lease, config)),
                }
            }
            None => RunningElection {
                handle: LeadershipHandle::always_leading(parts.identity.clone(), stop.clone()),
                stop,
                lease: None,
            },
        };
        let _ = self.leadership.0.set(running.handle.clone());
        running
    }

    /// Waits to be elected, unless told to stop or a running group fails
    /// first.
    async fn wait_until_elected(
        &self,
        election: &RunningElection,
        groups: &mut Groups,
        stop: &CancellationToken,
    ) -> Result<(), Ending> {
        tokio::select! {
            elected = election.handle.elected() => {
                if elected { Ok(()) } else { Err(Ending::LeadershipLost) }
            }
            () = stop.cancelled() => Err(Ending::Requested),
            e = groups.others.first_failure() => Err(Ending::Failed(e)),
            e = groups.servers.first_failure() => Err(Ending::Failed(e)),
        }
    }

    /// Runs while leading: until told to stop, leadership is lost, or a
    /// group fails.
    async fn lead(
        &self,
        election: &RunningElection,
        groups: &mut Groups,
        stop: &CancellationToken,
    ) -> Ending {
        tokio::select! {
            () = stop.cancelled() => Ending::Requested,
            () = election.handle.lost() => Ending::LeadershipLost,
            e = groups.leaders.first_failure() => Ending::Failed(e),
            e = groups.others.first_failure() => Ending::Failed(e),
            e = groups.servers.first_failure() => Ending::Failed(e),
        }
    }

    /// Stops everything in reverse order: the work (at once when
    /// leadership was lost, else within the graceful shutdown timeout),
    /// the caches, the election (releasing the lease if configured), the
    /// recorders' open series, the servers.
    async fn shut_down(
        &self,
        mut groups: Groups,
        election: Option<RunningElection>,
        ending: Ending,
    ) -> Result<(), Error> {
        let timeout = self.parts.graceful_shutdown_timeout;
        let work_grace = groups
            .leaders
            .grace(timeout)
            .max(groups.others.grace(timeout));
        let deadline = Instant::now() + work_grace + ABANDON_MARGIN;
        let lease = election
            .as_ref()
            .map(RunningElection::lease_name)
            .unwrap_or_default();

        if matches!(ending, Ending::LeadershipLost) {
            // Another process may lead already: stop at once, no grace.
            tracing::error!(%lease, "leader election lost: stopping controllers now");
            groups.leaders.abort();
        } else {
            tracing::info!("stopping: waiting for in-flight reconciles");
        }
        groups.leaders.stop_and_wait(deadline).await;
        groups.others.stop_and_wait(deadline).await;

        self.parts.factory.shutdown();

        if let Some(election) = election {
            stop_election(election).await;
        }

        self.flush_recorders().await;

        groups
            .servers
            .stop_and_wait(Instant::now() + timeout + ABANDON_MARGIN)
            .await;
        tracing::info!("manager stopped");

        match ending {
            Ending::Requested => Ok(()),
            Ending::LeadershipLost => Err(Error::LeadershipLost { lease }),
            Ending::Failed(e) => Err(e),
        }
    }

    /// Writes the open event series of every recorder handed out, bounded.
    async fn flush_recorders(&self) {
        let recorders: Vec<Recorder> = lock(&self.parts.recorders).values().cloned().collect();
        let flush = futures::future::join_all(recorders.iter().map(Recorder::flush));
        if tokio::time::timeout(RECORDER_FLUSH_TIMEOUT, flush)
            .await
            .is_err()
        {
            tracing::warn!("event recorders did not flush in time");
        }
    }
}

/// Leaves the election; a release on cancel happens now, bounded by the
/// renew deadline.
async fn stop_election(election: RunningElection) {
    election.stop.cancel();
    if let Some((_, config)) = &election.lease {
        let bound = config.renew_deadline() + config.retry_period();
        match tokio::time::timeout(bound, election.handle.ended()).await {
            Ok(Phase::Stopped) => tracing::info!("left leader election"),
            Ok(_) => {}
            Err(_) => tracing::warn!("leader election did not stop in time"),
        }
    }
}
