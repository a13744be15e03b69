//! Where a controller's events come from (controller-runtime's `source`
//! package), each ending in the controller's queue through an enqueue
//! handler that applies the watch's predicates and the controller-wide
//! filters:
//!
//! - an informer of the primary, an owned or a watched type, whose adds,
//!   updates and deletes are create, update and delete events;
//! - a [`Channel`] of objects from outside the cluster (a webhook, a timer,
//!   another system), each a *generic* event, the kind
//!   [`Predicate::generic`] decides on
//!   (controller-runtime's `source.Channel`).
//!
//! The builder describes each watch as a `WatchSpec`, which becomes a
//! `Source` once the controller's queue exists; running the controller
//! starts every source, waits for them to sync, and removes them when it
//! stops.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt as _, Stream, StreamExt as _};
use kube_core::Resource;
use tokio_util::sync::CancellationToken;

use super::filter::SharedMetaPredicate;
use super::handler::{EnqueueHandler, KeysFn, OwnerMatch};
use super::predicate::{BoxPredicate, Predicate};
use crate::cache::{
    EventHandler, HandlerRegistration, Holdings, ObjectKey, SharedInformer, SyncError,
};
use crate::reconcile::{CachedClient, CachedObject};
use crate::sharding::labeller::{Labeller, SlotOf};
use crate::sharding::ShardGate;
use crate::workqueue::{Priority, WorkQueue, DEFAULT_PRIORITY};

/// Objects from outside the cluster that reconcile a controller's keys:
/// each object received is a generic event, passed through the channel's
/// predicates ([`Predicate::generic`]) and the
/// controller-wide filters, then mapped to the keys to reconcile (by
/// default the object's own key). Give it to
/// [`ControllerBuilder::watches_channel`](super::ControllerBuilder::watches_channel).
///
/// The controller reads each key's object from its cache as always, so an
/// event for an object that does not exist reconciles nothing; the channel
/// says *when* to look, not *what* is there. The source ends when every
/// sender is dropped.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use kubeforge::controller::{Action, Context};
/// # use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
/// # async fn reconcile(_: Arc<ConfigMap>, _: Arc<Context<()>>) -> Result<Action, kubeforge::controller::Error> { Ok(Action::done()) }
/// # fn demo(mgr: &kubeforge::Manager) {
/// use kubeforge::controller::predicate;
/// use kubeforge::controller::source::Channel;
///
/// let (nudge, nudges) = tokio::sync::mpsc::channel::<ConfigMap>(16);
/// mgr.controller::<ConfigMap>()
///     .watches_channel(
///         Channel::new(nudges)
///             .predicate(predicate::from_generic(|cm: &ConfigMap| cm.metadata.name.is_some())),
///     )
///     .reconcile(reconcile, ());
/// // Elsewhere, e.g. when an external system reports a change:
/// // nudge.send(config_map).await
/// # let _ = nudge;
/// # }
/// ```
pub struct Channel<W> {
    events: BoxStream<'static, W>,
    keys: KeysFn<W>,
    predicates: Vec<BoxPredicate<W>>,
}

impl<W> fmt::Debug for Channel<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("predicates", &self.predicates.len())
            .finish_non_exhaustive()
    }
}

impl<W: Resource + Send + 'static> Channel<W> {
    /// The objects `receiver` delivers, each reconciling its own key.
    pub fn new(receiver: tokio::sync::mpsc::Receiver<W>) -> Self {
        Self::from_stream(futures::stream::unfold(receiver, |mut receiver| async {
            receiver.recv().await.map(|object| (object, receiver))
        }))
    }

    /// The objects `events` yields, each reconciling its own key.
    pub fn from_stream(events: impl Stream<Item = W> + Send + 'static) -> Self {
        Self {
            events: events.boxed(),
            keys: Arc::new(|object: &W| vec![ObjectKey::of(object)]),
            predicates: Vec::new(),
        }
    }

    /// Reconciles the keys `mapper` returns for each object instead of its
    /// own (controller-runtime's `EnqueueRequestsFromMapFunc`).
    pub fn map(mut self, mapper: impl Fn(&W) -> Vec<ObjectKey> + Send + Sync + 'static) -> Self {
        self.keys = Arc::new(mapper);
        self
    }

    /// Only objects `predicate`'s [`generic`](Predicate::generic) passes
    /// are mapped.
    pub fn predicate(mut self, predicate: impl Predicate<W> + 'static) -> Self {
        self.predicates.push(Box::new(predicate));
        self
    }
}

/// A watch being started: its informer and the handler that feeds the
/// controller's queue.
pub(crate) trait Source: Send + Sync {
    /// The informer's name, for errors and logs.
    fn describe(&self) -> String;
    /// Waits for the informer to sync, at most `timeout`.
    fn wait_for_sync(&self, timeout: Duration) -> BoxFuture<'_, Result<(), SyncError>>;
    /// Adds the handler to the informer (once).
    fn start(&self) -> Result<Box<dyn Registered>, crate::cache::Error>;
}

/// A started watch, to be removed when the controller stops.
pub(crate) trait Registered: Send + Sync {
    fn remove(&self);
}

impl<O: Send + Sync + 'static> Registered for HandlerRegistration<O> {
    fn remove(&self) {
        HandlerRegistration::remove(self);
    }
}

struct InformerSource<O> {
    informer: SharedInformer<O>,
    handler: Mutex<Option<EnqueueHandler<O>>>,
}

impl<O> Source for InformerSource<O>
where
    O: Resource + Send + Sync + 'static,
    EnqueueHandler<O>: EventHandler<O>,
{
    fn describe(&self) -> String {
        self.informer.id().to_string()
    }

    fn wait_for_sync(&self, timeout: Duration) -> BoxFuture<'_, Result<(), SyncError>> {
        self.informer.wait_for_cache_sync(timeout).boxed()
    }

    fn start(&self) -> Result<Box<dyn Registered>, crate::cache::Error> {
        let handler = self
            .handler
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match handler {
            Some(handler) => Ok(Box::new(self.informer.add_handler(handler, None)?)),
            // Started before: nothing more to remove.
            None => Ok(Box::new(NoRegistration)),
        }
    }
}

struct NoRegistration;

impl Registered for NoRegistration {
    fn remove(&self) {}
}

/// What a watch needs to become a [`Source`] once the controller's queue
/// and filters are known.
pub(crate) struct WatchEnv<'a> {
    pub(crate) client: &'a CachedClient,
    pub(crate) queue: &'a WorkQueue<ObjectKey>,
    pub(crate) filters: &'a [SharedMetaPredicate],
    /// The ring, for a sharded controller.
    pub(crate) shard: Option<&'a ShardEnv>,
}

/// A labeller to run beside a sharded controller until its token fires.
pub(crate) type LabelTask = Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, ()> + Send>;

/// What the watches of a sharded controller share: the gate whose slots
/// the owned kinds' informers follow by label, and the labellers that
/// give owned objects their owner's slot.
pub(crate) struct ShardEnv {
    pub(crate) gate: ShardGate,
    pub(crate) ring: String,
    pub(crate) label: String,
    pub(crate) labellers: Mutex<Vec<LabelTask>>,
}

impl WatchEnv<'_> {
    /// For a sharded controller, the holdings an informer of the owned
    /// kind `O` follows (its owners' slots, by label), and a labeller of
    /// `O` to run with the controller. `None` (every object cached)
    /// unsharded, or when every owner is enqueued: owners in several slots
    /// would each need the child.
    pub(crate) fn owned_holdings<O: CachedObject>(&self, owners: &OwnerMatch) -> Option<Holdings> {
        let shard = self.shard.filter(|_| !owners.every_owner)?;
        let owners = owners.clone();
        let slot_of: SlotOf = Arc::new(move |meta| owners.owner_slot(meta));
        let labeller = Labeller::<O>::new(
            self.client.factory(),
            self.client.live().clone(),
            &shard.label,
            shard.gate.clone(),
            slot_of,
        );
        shard
            .labellers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Box::new(move |stop| labeller.run(stop).boxed()));
        Some(shard.gate.holdings_by_label(&shard.ring, &shard.label))
    }
}

impl WatchEnv<'_> {
    /// The source of an informer's events, filtered and mapped to keys.
    pub(crate) fn source<O>(
        &self,
        informer: SharedInformer<O>,
        predicates: Vec<BoxPredicate<O>>,
        keys: KeysFn<O>,
        keys_of_old_too: bool,
    ) -> Box<dyn Source>
    where
        O: Resource + Send + Sync + 'static,
    {
        self.source_at(
            informer,
            predicates,
            keys,
            keys_of_old_too,
            DEFAULT_PRIORITY,
        )
    }

    /// [`source`](Self::source) whose events that carry news enqueue at
    /// `priority` (those that do not stay low).
    pub(crate) fn source_at<O>(
        &self,
        informer: SharedInformer<O>,
        predicates: Vec<BoxPredicate<O>>,
        keys: KeysFn<O>,
        keys_of_old_too: bool,
        priority: Priority,
    ) -> Box<dyn Source>
    where
        O: Resource + Send + Sync + 'static,
    {
        let handler = self.handler(predicates, keys, keys_of_old_too, priority);
        Box::new(InformerSource {
            informer,
            handler: Mutex::new(Some(handler)),
        })
    }

    /// The source of a channel's generic events.
    pub(crate) fn channel<W>(&self, channel: Channel<W>) -> Box<dyn Source>
    where
        W: Resource<DynamicType = ()> + Send + Sync + 'static,
    {
        Box::new(ChannelSource {
            kind: W::kind(&()).into_owned(),
            events: Mutex::new(Some(channel.events)),
            handler: Arc::new(self.handler(
                channel.predicates,
                channel.keys,
                false,
                DEFAULT_PRIORITY,
            )),
        })
    }

    fn handler<O>(
        &self,
        predicates: Vec<BoxPredicate<O>>,
        keys: KeysFn<O>,
        keys_of_old_too: bool,
        priority: Priority,
    ) -> EnqueueHandler<O> {
        EnqueueHandler {
            queue: self.queue.clone(),
            predicates,
            filters: self.filters.to_vec(),
            keys,
            keys_of_old_too,
            priority,
        }
    }
}

/// A watch as the builder holds it until the controller is built.
pub(crate) type WatchSpec = Box<dyn FnOnce(&WatchEnv<'_>) -> Box<dyn Source> + Send>;

/// A channel being started: its events, taken once, and its handler.
struct ChannelSource<W> {
    kind: String,
    events: Mutex<Option<BoxStream<'static, W>>>,
    handler: Arc<EnqueueHandler<W>>,
}

impl<W> Source for ChannelSource<W>
where
    W: Resource + Send + Sync + 'static,
{
    fn describe(&self) -> String {
        format!("channel of {}", self.kind)
    }

    fn wait_for_sync(&self, _timeout: Duration) -> BoxFuture<'_, Result<(), SyncError>> {
        // Nothing to list: a channel is ready at once.
        futures::future::ready(Ok(())).boxed()
    }

    fn start(&self) -> Result<Box<dyn Registered>, crate::cache::Error> {
        let events = self
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut events) = events else {
            // Started before: nothing more to remove.
            return Ok(Box::new(NoRegistration));
        };
        let stop = CancellationToken::new();
        let handler = Arc::clone(&self.handler);
        let stopped = stop.clone();
        tokio::spawn(async move {
            loop {
                let object = tokio::select! {
                    () = stopped.cancelled() => return,
                    next = events.next() => match next {
                        Some(object) => object,
                        None => return,
                    },
                };
                handler.on_generic(&object);
            }
        });
        Ok(Box::new(ChannelRegistration(stop)))
    }
}

/// Stops forwarding a channel's events.
struct ChannelRegistration(CancellationToken);

impl Registered for ChannelRegistration {
    fn remove(&self) {
        self.0.cancel();
    }
}
