//! [`Controller`]: the reconcile loop (controller-runtime's internal
//! `Controller.Start` and `reconcileHandler`).
//!
//! Running a controller adds its handlers to its informers, starts the
//! factory, waits (bounded) for every informer to sync, then starts
//! `concurrency` workers. Each worker takes a key from the queue, reads the
//! object's current state from the primary informer's store (level
//! triggered: a burst of events for one key is one reconcile of the latest
//! state), runs the reconcile in a tracing span and a panic guard, and
//! turns the result into queue calls (see [`Action`]), at the priority the
//! key was handed out at unless the action names another
//! (controller-runtime's `reconcileHandler`).
//!
//! A key whose object is no longer in the cache is skipped: the object was
//! deleted, and there is nothing to reconcile. Work that must happen on
//! deletion belongs in a finalizer (see
//! [`finalizer`](mod@crate::reconcile::finalizer)),
//! which keeps the object, marked as deleting, until the reconcile has
//! done it (kube-rs works the same way).
//!
//! Stopping stops taking keys, lets the reconciles in flight finish within
//! the graceful shutdown timeout (then abandons them, with a log naming
//! their keys), shuts the queue down and removes the handlers.

use std::any::Any;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use futures::FutureExt as _;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::action::Action;
use super::action::ErrorChain;
use super::metrics::Handles;
use super::reconciler::ErasedReconciler;
use super::source::{LabelTask, Source};
use crate::cache::{ObjectKey, SharedInformer};
use crate::ids::random_uuid;
use crate::reconcile::{CachedClient, CachedObject, Error};
use crate::sharding::labeller::{slot_of_uid, Labeller};
use crate::sharding::membership::Membership;
use crate::sharding::{serves_shard_selector, Mechanism, ShardGate, ShardMetrics, Sharding};
use crate::workqueue::{Priority, WorkQueue};

/// What a builder hands over.
pub(crate) struct ControllerParts<K> {
    pub(crate) name: Arc<str>,
    pub(crate) queue: WorkQueue<ObjectKey>,
    pub(crate) client: CachedClient,
    pub(crate) primary: SharedInformer<K>,
    pub(crate) sources: Vec<Box<dyn Source>>,
    pub(crate) reconciler: Arc<dyn ErasedReconciler<K>>,
    pub(crate) concurrency: usize,
    pub(crate) cache_sync_timeout: Duration,
    pub(crate) shutdown_timeout: Duration,
    pub(crate) recover_panic: bool,
    pub(crate) metrics: Handles,
    /// The ring and this replica's gate, for a sharded controller.
    pub(crate) sharding: Option<Sharded>,
}

/// What a sharded controller runs with.
pub(crate) struct Sharded {
    pub(crate) settings: Sharding,
    pub(crate) gate: ShardGate,
    pub(crate) metrics: ShardMetrics,
    /// The owned kinds' labellers, run with the membership.
    pub(crate) labellers: Vec<LabelTask>,
}

/// A controller ready to [`run`](Self::run): built by
/// [`ControllerBuilder::reconcile`](super::ControllerBuilder::reconcile).
///
/// ```no_run
/// use std::sync::Arc;
/// use kubeforge::cache::SharedInformerFactory;
/// use kubeforge::controller::{Action, Context, Controller};
/// use kubeforge::reconcile::CachedClient;
/// use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
/// use kubeforge::manager::CancellationToken;
///
/// async fn reconcile(cm: Arc<ConfigMap>, _ctx: Arc<Context<()>>) -> Result<Action, kubeforge::controller::Error> {
///     tracing::info!(name = ?cm.metadata.name, "seen");
///     Ok(Action::done())
/// }
///
/// # async fn demo(client: kubeforge::Client) -> Result<(), kubeforge::controller::Error> {
/// let factory = SharedInformerFactory::new(client.clone());
/// let controller = Controller::<ConfigMap>::builder(CachedClient::new(client, factory))
///     .concurrency(2)
///     .reconcile(reconcile, ());
/// let stop = CancellationToken::new();
/// controller.run(stop).await?;
/// # Ok(())
/// # }
/// ```
pub struct Controller<K> {
    parts: ControllerParts<K>,
}

impl<K> fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.parts.name)
            .field("concurrency", &self.parts.concurrency)
            .field(
                "sources",
                &self
                    .parts
                    .sources
                    .iter()
                    .map(|s| s.describe())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// What the workers share.
struct Runtime<K> {
    name: Arc<str>,
    queue: WorkQueue<ObjectKey>,
    client: CachedClient,
    primary: SharedInformer<K>,
    reconciler: Arc<dyn ErasedReconciler<K>>,
    recover_panic: bool,
    metrics: Handles,
    /// For a sharded controller: admits only the slots held.
    gate: Option<ShardGate>,
}

impl<K: CachedObject> Controller<K> {
    pub(crate) fn from_parts(parts: ControllerParts<K>) -> Self {
        Self { parts }
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.parts.name
    }

    /// How long stopping lets in-flight reconciles finish.
    pub(crate) fn shutdown_timeout(&self) -> Duration {
        self.parts.shutdown_timeout
    }

    /// Whether the controller is sharded (it then runs on every replica,
    /// with no leader).
    pub fn is_sharded(&self) -> bool {
        self.parts.sharding.is_some()
    }

    /// For a sharded controller, the gate saying which slots this replica
    /// holds.
    pub fn shard_gate(&self) -> Option<&ShardGate> {
        self.parts.sharding.as_ref().map(|s| &s.gate)
    }

    /// The controller's workqueue (for inspection; the controller owns it).
    pub fn queue(&self) -> &WorkQueue<ObjectKey> {
        &self.parts.queue
    }

    /// Runs the controller until `stop` is cancelled, then stops gracefully.
    ///
    /// Fails if an informer does not sync within the cache-sync timeout
    /// ([`Error::CacheSync`], naming it and why), or, with
    /// [`recover_panic`](super::ControllerBuilder::recover_panic) off, when a
    /// reconcile panics.
    pub async fn run(self, stop: CancellationToken) -> Result<(), Error> {
        let ControllerParts {
            name,
            queue,
            client,
            primary,
            sources,
            reconciler,
            concurrency,
            cache_sync_timeout,
            shutdown_timeout,
            recover_panic,
            metrics,
            mut sharding,
        } = self.parts;
        if let Some(sharded) = &sharding {
            if let Err(problem) = sharded.settings.validate() {
                queue.shutdown();
                return Err(Error::InvalidSharding {
                    controller: name.to_string(),
                    problem,
                });
            }
        }
        let span = tracing::info_span!("controller", controller = %name);
        async move {
            // Handlers first, so no event between the sync and the workers
            // is missed; the queue collapses the replayed cache.
            let mut registrations = Vec::with_capacity(sources.len());
            for source in &sources {
                match source.start() {
                    Ok(registration) => registrations.push(registration),
                    Err(e) => {
                        registrations.iter().for_each(|r| r.remove());
                        queue.shutdown();
                        return Err(Error::Cache(e));
                    }
                }
            }
            let remove_handlers = || registrations.iter().for_each(|r| r.remove());
            client.factory().start();
            tracing::info!(sources = sources.len(), "starting event sources");
            let synced = tokio::select! {
                results = join_all(sources.iter().map(|s| s.wait_for_sync(cache_sync_timeout))) => results,
                () = stop.cancelled() => {
                    remove_handlers();
                    queue.shutdown();
                    return Ok(());
                }
            };
            if let Some(failed) = synced.into_iter().find_map(Result::err) {
                remove_handlers();
                queue.shutdown();
                tracing::error!(error = %failed, "informer did not sync");
                return Err(Error::CacheSync(Box::new(failed)));
            }

            // A sharded replica joins its ring once its cache synced (empty:
            // it holds nothing yet); slots it takes arrive by relists.
            // In a JoinSet, so a controller future dropped mid-run (a
            // crash, as far as the ring is concerned) takes it along.
            let membership_stop = CancellationToken::new();
            let mut membership = JoinSet::new();
            if let Some(sharded) = sharding.as_mut() {
                let by_label = tokio::select! {
                    by_label = labels_needed::<K>(&client, &sharded.settings) => by_label,
                    () = stop.cancelled() => {
                        remove_handlers();
                        queue.shutdown();
                        return Ok(());
                    }
                };
                if by_label {
                    let key = sharded.settings.slot_label();
                    tracing::info!(label = %key, "sharding the primary kind by label");
                    sharded.gate.select_by_label(&key);
                    let labeller = Labeller::<K>::new(
                        client.factory(),
                        client.live().clone(),
                        &key,
                        sharded.gate.clone(),
                        slot_of_uid(),
                    );
                    membership.spawn(labeller.run(membership_stop.clone()).in_current_span());
                    client.factory().start();
                }
                for labeller in sharded.labellers.drain(..) {
                    membership.spawn(labeller(membership_stop.clone()).in_current_span());
                }
                let store = primary.store();
                let member = Membership::new(
                    client.live().clone(),
                    sharded.settings.clone(),
                    sharded.gate.clone(),
                    sharded.metrics.clone(),
                    Box::new(move || store.len()),
                );
                membership.spawn(member.run(membership_stop.clone()).in_current_span());
            }
            tracing::info!(workers = concurrency, "starting workers");
            let runtime = Arc::new(Runtime {
                gate: sharding.map(|s| s.gate),
                name: Arc::clone(&name),
                queue: queue.clone(),
                client,
                primary,
                reconciler,
                recover_panic,
                metrics,
            });
            let halt = stop.child_token();
            let mut workers = JoinSet::new();
            for _ in 0..concurrency {
                workers.spawn(worker(Arc::clone(&runtime), halt.clone()).in_current_span());
            }

            let mut result = Ok(());
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    joined = workers.join_next() => match joined {
                        Some(Ok(Ok(()))) => {}
                        Some(Ok(Err(e))) => {
                            result = Err(e);
                            break;
                        }
                        Some(Err(e)) => {
                            result = Err(Error::WorkerFailed {
                                controller: name.to_string(),
                                message: e.to_string(),
                            });
                            break;
                        }
                        None => break,
                    },
                }
            }

            tracing::info!("stopping: no new reconciles; waiting for the ones in flight");
            halt.cancel();
            let drained = tokio::time::timeout(shutdown_timeout, async {
                while workers.join_next().await.is_some() {}
            })
            .await;
            if drained.is_err() {
                // The keys the workers still hold are the queue's in flight.
                let mut abandoned: Vec<String> = runtime
                    .queue
                    .processing_items()
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                abandoned.sort_unstable();
                tracing::warn!(
                    timeout = ?shutdown_timeout,
                    ?abandoned,
                    "reconciles still running after the graceful shutdown timeout: abandoning them"
                );
                workers.abort_all();
            }
            // Every reconcile has ended: give the slots up for the others.
            membership_stop.cancel();
            while membership.join_next().await.is_some() {}
            queue.shutdown();
            remove_handlers();
            tracing::info!("stopped");
            result
        }
        .instrument(span)
        .await
    }
}

/// One worker: takes keys until told to stop (or the queue shuts down).
async fn worker<K: CachedObject>(
    runtime: Arc<Runtime<K>>,
    halt: CancellationToken,
) -> Result<(), Error> {
    loop {
        let key = tokio::select! {
            biased;
            () = halt.cancelled() => return Ok(()),
            key = runtime.queue.get_with_priority() => match key {
                Some(key) => key,
                None => return Ok(()),
            },
        };
        let (key, priority) = key;
        let outcome = runtime.process(&key, priority).await;
        runtime.queue.done(&key);
        outcome?;
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}

impl<K: CachedObject> Runtime<K> {
    /// The object's current state: from the primary informer, once it has
    /// seen this process's last write of the type.
    async fn read(&self, key: &ObjectKey) -> Result<Option<Arc<K>>, Error> {
        self.client.ready::<K, K>(&self.primary).await?;
        Ok(self.primary.store().get(key))
    }

    /// Reconciles one key, handed out at `priority`, and requeues it as the
    /// result says.
    async fn process(&self, key: &ObjectKey, priority: Priority) -> Result<(), Error> {
        let obj = match self.read(key).await {
            Ok(Some(obj)) => obj,
            Ok(None) => {
                tracing::debug!(%key, "object is no longer in the cache (deleted): nothing to reconcile");
                self.queue.forget(key);
                return Ok(());
            }
            Err(e) => {
                tracing::error!(%key, error = %ErrorChain(&e), "cannot read the object from the cache; retrying");
                self.queue
                    .add_rate_limited_with_priority(key.clone(), priority);
                return Ok(());
            }
        };

        let mut permit = match &self.gate {
            None => None,
            Some(gate) => match gate.admit(obj.as_ref()) {
                Some(permit) => Some(permit),
                None => {
                    tracing::debug!(%key, "not in a slot this replica holds: skipped");
                    self.queue.forget(key);
                    return Ok(());
                }
            },
        };
        let span = tracing::info_span!(
            "reconcile",
            controller = %self.name,
            namespace = key.namespace_or_empty(),
            name = %key.name,
            reconcile_id = %random_uuid(),
        );
        self.metrics.active_workers.inc();
        let started = Instant::now();
        let reconcile = AssertUnwindSafe(self.reconciler.reconcile(obj).instrument(span.clone()))
            .catch_unwind();
        let result = match permit.as_mut() {
            None => reconcile.await,
            Some(permit) => tokio::select! {
                result = reconcile => result,
                () = permit.revoked() => {
                    self.metrics.active_workers.dec();
                    tracing::warn!(%key, "the shard Lease lapsed: reconcile abandoned, as another replica may take its slot");
                    self.queue.forget(key);
                    return Ok(());
                }
            },
        };
        drop(permit);
        self.metrics.time.observe(started.elapsed().as_secs_f64());
        self.metrics.active_workers.dec();

        span.in_scope(|| match result {
            Ok(Ok(action)) => {
                tracing::debug!(%action, "reconciled");
                self.metrics.result(action.result_label()).inc();
                self.requeue(key, action, true, priority);
                Ok(())
            }
            Ok(Err(failure)) => {
                self.metrics.errors.inc();
                self.metrics.error.inc();
                let error = ErrorChain(&*failure.error);
                if failure.terminal {
                    self.metrics.terminal_errors.inc();
                    tracing::error!(%key, %error, "reconciler error (terminal: not retried)");
                } else {
                    tracing::error!(%key, %error, then = %failure.then, "reconciler error");
                    self.requeue(key, failure.then, false, priority);
                }
                Ok(())
            }
            Err(payload) => {
                let message = panic_message(&*payload);
                self.metrics.panics.inc();
                self.metrics.errors.inc();
                self.metrics.error.inc();
                tracing::error!(%key, panic = %message, "reconciler panicked");
                if self.recover_panic {
                    self.queue
                        .add_rate_limited_with_priority(key.clone(), priority);
                    Ok(())
                } else {
                    Err(Error::ReconcilerPanicked {
                        controller: self.name.to_string(),
                        key: key.to_string(),
                        message,
                    })
                }
            }
        })
    }

    /// controller-runtime's result handling. After a success,
    /// `requeue_after` forgets the failures first; after an error the
    /// failure history is kept, so the backoff keeps growing. The re-add
    /// is at the action's priority, or else at `priority`, the one the key
    /// was handed out at (controller-runtime's `Result.Priority`).
    fn requeue(&self, key: &ObjectKey, action: Action, succeeded: bool, priority: Priority) {
        let priority = action.priority().unwrap_or(priority);
        if let Some(delay) = action.requeue_after_duration() {
            if succeeded {
                self.queue.forget(key);
            }
            self.queue
                .add_after_with_priority(key.clone(), delay, priority);
        } else if action.is_rate_limited_requeue() {
            self.queue
                .add_rate_limited_with_priority(key.clone(), priority);
        } else {
            self.queue.forget(key);
        }
    }
}

/// Whether a sharded controller's ring shards the primary kind by label:
/// as its settings say, or ([`Mechanism::Auto`]) when the server does not
/// serve `shardSelector`, asked until it answers.
async fn labels_needed<K: CachedObject>(client: &CachedClient, settings: &Sharding) -> bool {
    match settings.mechanism {
        Mechanism::ShardSelector => false,
        Mechanism::Labels => true,
        Mechanism::Auto => {
            let namespace = if crate::cache::is_cluster_scoped::<K>() {
                None
            } else {
                client.factory().namespace()
            };
            loop {
                match serves_shard_selector::<K>(client.live(), namespace).await {
                    Ok(served) => return !served,
                    Err(e) => {
                        tracing::warn!(error = %ErrorChain(&e), "cannot ask the server whether it serves shardSelector; asking again");
                        tokio::time::sleep(settings.retry_period).await;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_are_read_from_str_and_string_payloads() {
        assert_eq!(panic_message(&"boom"), "boom");
        assert_eq!(panic_message(&String::from("bang")), "bang");
        assert_eq!(panic_message(&42_u8), "non-string panic payload");
    }
}
