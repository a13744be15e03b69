//! [`ControllerBuilder`]: what a controller watches and how it runs
//! (controller-runtime's `builder` and controller `Options`).
//!
//! The details are on [`ControllerBuilder`].

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube_core::{ApiResource, DynamicObject, PartialObjectMeta, Resource};

use super::action::Action;
use super::context::Context;
use super::filter::{MetaPredicate, SharedMetaPredicate};
use super::handler::{KeysFn, OwnerMatch};
use super::metrics::ControllerMetrics;
use super::predicate::{BoxPredicate, Predicate};
use super::reconciler::{default_error_policy, FnReconciler};
use super::runner::{Controller, ControllerParts, Sharded};
use super::source::{Channel, ShardEnv, WatchEnv, WatchSpec};
use crate::cache::{InformerOptions, ObjectKey};
use crate::events::Recorder;
use crate::rbac::{Rule, Verb, Write};
use crate::reconcile::{CachedClient, CachedObject, DEFAULT_CACHE_SYNC_TIMEOUT};
use crate::sharding::{Mechanism, ShardGate, Sharding};
use std::hash::BuildHasher as _;

use crate::workqueue::{
    default_controller_rate_limiter, Priority, RateLimiter, WorkQueue, WorkQueueBuilder,
    DEFAULT_PRIORITY,
};

/// How long a stopping controller (and a stopping manager, for its
/// controllers and runnables) lets work in flight finish, unless configured
/// (controller-runtime's `GracefulShutdownTimeout`).
pub const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// The target of a builder made by [`Controller::builder`]: `.reconcile()`
/// returns the [`Controller`] to run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Standalone;

/// How an owned type's events enqueue its owner: predicates, and whether
/// every owner or only the controller owner is enqueued. `M` is what is
/// cached: `PartialObjectMeta<O>` for [`owns_with`](ControllerBuilder::owns_with),
/// `O` for [`owns_objects`](ControllerBuilder::owns_objects).
pub struct Owns<M> {
    predicates: Vec<BoxPredicate<M>>,
    every_owner: bool,
    writes: Option<Vec<Write>>,
}

impl<M> Default for Owns<M> {
    fn default() -> Self {
        Self {
            predicates: Vec::new(),
            every_owner: false,
            writes: None,
        }
    }
}

impl<M> fmt::Debug for Owns<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Owns")
            .field("predicates", &self.predicates.len())
            .field("every_owner", &self.every_owner)
            .field("writes", &self.writes)
            .finish()
    }
}

impl<M: 'static> Owns<M> {
    /// The defaults: the controller owner only, no predicates.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only events `predicate` passes enqueue the owner.
    pub fn predicate(mut self, predicate: impl Predicate<M> + 'static) -> Self {
        self.predicates.push(Box::new(predicate));
        self
    }

    /// Enqueue every owner of the controller's type named in the owner
    /// references, not only the controller owner (controller-runtime's
    /// `OnlyControllerOwner()` left out).
    pub fn every_owner(mut self) -> Self {
        self.every_owner = true;
        self
    }

    /// Declares how the reconcile writes the owned objects, so the
    /// derived RBAC grants those verbs only, besides the cache's list and
    /// watch: e.g. `[Write::Apply]` (create and patch) for a reconcile that
    /// server-side applies them, `[Write::Create, Write::Delete]` for one
    /// that creates and prunes them. Undeclared, every write is granted
    /// (create, update, patch, delete), as kubebuilder scaffolds. Several
    /// calls add up.
    pub fn writes(mut self, writes: impl IntoIterator<Item = Write>) -> Self {
        self.writes.get_or_insert_with(Vec::new).extend(writes);
        self
    }
}

/// A mapped watch: which keys an object of type `W` wakes, with predicates
/// and the informer's selectors.
pub struct Watch<W> {
    mapper: KeysFn<W>,
    predicates: Vec<BoxPredicate<W>>,
    options: InformerOptions<W>,
    priority: Priority,
}

impl<W> fmt::Debug for Watch<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("predicates", &self.predicates.len())
            .field("options", &self.options)
            .field("priority", &self.priority)
            .finish_non_exhaustive()
    }
}

impl<W: 'static> Watch<W> {
    /// A watch whose events reconcile the keys `mapper` returns
    /// (controller-runtime's `EnqueueRequestsFromMapFunc`).
    pub fn new(mapper: impl Fn(&W) -> Vec<ObjectKey> + Send + Sync + 'static) -> Self {
        Self {
            mapper: Arc::new(mapper),
            predicates: Vec::new(),
            options: InformerOptions::default(),
            priority: DEFAULT_PRIORITY,
        }
    }

    /// The priority this watch's events enqueue their keys at (default
    /// [`DEFAULT_PRIORITY`]); adds from the informer's initial list and
    /// unchanged updates (resyncs) stay at
    /// [`LOW_PRIORITY`](crate::workqueue::LOW_PRIORITY), as with
    /// controller-runtime's `WithLowPriorityWhenUnchanged`.
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// Only events `predicate` passes are mapped.
    pub fn predicate(mut self, predicate: impl Predicate<W> + 'static) -> Self {
        self.predicates.push(Box::new(predicate));
        self
    }

    /// Watch only objects matching `selector` (a separate informer from
    /// the one the cached client reads).
    pub fn labels(mut self, selector: impl Into<String>) -> Self {
        self.options = self.options.labels(selector);
        self
    }

    /// The informer options (namespace, selectors, transform, and for
    /// dynamic watches the scope). Without a transform, objects are cached
    /// as the cached client caches them (without `managedFields`).
    pub fn options(mut self, options: InformerOptions<W>) -> Self {
        self.options = options;
        self
    }
}

/// Configures a controller for primary type `K`. `T` is [`Standalone`] or
/// the manager it registers with.
///
/// A builder starts from the primary type (`mgr.controller::<K>()` or
/// [`Controller::builder`]) and collects:
///
/// - predicates on the primary type ([`for_predicate`](ControllerBuilder::for_predicate))
///   and filters on every watch ([`with_event_filter`](ControllerBuilder::with_event_filter));
/// - owned types ([`owns`](ControllerBuilder::owns), metadata-only by
///   default; [`owns_objects`](ControllerBuilder::owns_objects) caches whole
///   objects, sharing the informer the cached client reads);
/// - mapped watches ([`watches`](ControllerBuilder::watches) and its
///   metadata-only and dynamic forms) and channels of events from outside
///   the cluster ([`watches_channel`](ControllerBuilder::watches_channel));
/// - options: [`concurrency`](ControllerBuilder::concurrency) (1, or the
///   manager's `max_concurrent_reconciles`),
///   [`rate_limiter`](ControllerBuilder::rate_limiter) (client-go's default
///   controller limiter), [`named`](ControllerBuilder::named) (the kind in
///   lower case), [`cache_sync_timeout`](ControllerBuilder::cache_sync_timeout)
///   (2 minutes), [`recover_panic`](ControllerBuilder::recover_panic) (on),
///   [`graceful_shutdown_timeout`](ControllerBuilder::graceful_shutdown_timeout)
///   (30 seconds), [`priority_queue`](ControllerBuilder::priority_queue)
///   (on: live changes before the initial list and resyncs) and
///   [`fairness`](ControllerBuilder::fairness) (namespaces take turns).
///
/// It ends with [`.reconcile(fn, data)`](ControllerBuilder::reconcile) (or
/// `.reconcile_with(fn, policy, data)`): a standalone builder returns a
/// runnable [`Controller`]; one made by a manager registers the controller
/// with it.
pub struct ControllerBuilder<K, T = Standalone> {
    target: T,
    parts: BuilderParts<K>,
}

/// Everything a builder collects, whatever its target.
pub(crate) struct BuilderParts<K> {
    client: CachedClient,
    name: Option<String>,
    for_predicates: Vec<BoxPredicate<K>>,
    filters: Vec<SharedMetaPredicate>,
    watches: Vec<WatchSpec>,
    concurrency: Option<usize>,
    rate_limiter: Option<Box<dyn RateLimiter<ObjectKey>>>,
    cache_sync_timeout: Option<Duration>,
    shutdown_timeout: Option<Duration>,
    recover_panic: bool,
    priority_queue: bool,
    fairness: Fairness,
    metrics: Option<ControllerMetrics>,
    recorder: Option<Recorder>,
    /// What the watches need, and the extra rules declared with
    /// [`ControllerBuilder::rule`] (the primary's own come at the end,
    /// from the two declarations below).
    rules: Vec<Rule>,
    /// Whether the reconcile adds and removes finalizers on the primary.
    finalizers: bool,
    /// How it writes the primary's status, when declared.
    status_writes: Option<Vec<Write>>,
    /// The ring its replicas split the primary's objects in, if sharded.
    sharding: Option<Sharding>,
    /// The patch of each owned kind's slot label, granted if sharded (not
    /// for kinds watched with every owner: those are never labelled).
    owned_labels: Vec<Rule>,
}

impl<K, T: fmt::Debug> fmt::Debug for ControllerBuilder<K, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.parts;
        f.debug_struct("ControllerBuilder")
            .field("target", &self.target)
            .field("name", &p.name)
            .field("for_predicates", &p.for_predicates.len())
            .field("filters", &p.filters.len())
            .field("watches", &p.watches.len())
            .field("concurrency", &p.concurrency)
            .field("cache_sync_timeout", &p.cache_sync_timeout)
            .field("recover_panic", &p.recover_panic)
            .field("priority_queue", &p.priority_queue)
            .finish_non_exhaustive()
    }
}

impl<K: CachedObject> Controller<K> {
    /// A builder for a controller of `K` that reads through `client` and
    /// watches through its factory. Finish it with
    /// [`reconcile`](ControllerBuilder::reconcile) and
    /// [`run`](Controller::run) the result.
    pub fn builder(client: CachedClient) -> ControllerBuilder<K, Standalone> {
        ControllerBuilder::new(Standalone, client)
    }
}

impl<K: CachedObject, T> ControllerBuilder<K, T> {
    pub(crate) fn new(target: T, client: CachedClient) -> Self {
        Self {
            target,
            parts: BuilderParts {
                client,
                name: None,
                for_predicates: Vec::new(),
                filters: Vec::new(),
                watches: Vec::new(),
                concurrency: None,
                rate_limiter: None,
                cache_sync_timeout: None,
                shutdown_timeout: None,
                recover_panic: true,
                priority_queue: true,
                fairness: Fairness::Namespace,
                metrics: None,
                recorder: None,
                rules: Vec::new(),
                finalizers: false,
                status_writes: None,
                sharding: None,
                owned_labels: Vec::new(),
            },
        }
    }

    /// Shards the controller: its replicas (processes running the same
    /// controller with the same ring) split the primary's objects by slots
    /// of their uid hash, each reconciling only the slots it holds, and
    /// hand slots over as replicas come and go, the old holder stopping
    /// before the new one starts (see [`crate::sharding`]). Each replica's
    /// primary informer caches only its slots' objects. A sharded
    /// controller needs no leader: a manager runs it on every replica.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use kubeforge::prelude::*;
    /// # use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
    /// use kubeforge::sharding::Sharding;
    /// # async fn reconcile(_: Arc<ConfigMap>, _: Arc<Context<()>>) -> Result<Action, kubeforge::controller::Error> { Ok(Action::done()) }
    /// # fn demo(mgr: &Manager) {
    /// mgr.controller::<ConfigMap>()
    ///     .sharded(Sharding::ring("configmap-shards"))
    ///     .reconcile(reconcile, ());
    /// # }
    /// ```
    pub fn sharded(mut self, sharding: Sharding) -> Self {
        self.parts.sharding = Some(sharding);
        self
    }

    /// A rule the reconcile needs beyond what the builder already knows
    /// (what it watches, the primary's status and finalizers, owned
    /// objects' writes, events): e.g. `Rule::on::<Secret>().caches()` for
    /// cached reads of Secrets, `.verbs([Verb::Get])` for live ones. The
    /// operator's `manifests` renders it into the manager role (see
    /// [`rbac`](crate::rbac)).
    pub fn rule(mut self, rule: Rule) -> Self {
        self.parts.rules.push(rule);
        self
    }

    /// Declares that the reconcile adds and removes finalizers on its
    /// primary objects (with [`Context::finalizer`] or the client's
    /// finalizer helpers, which write a JSON patch), so the derived RBAC
    /// grants `patch` on the primary type. Without it the controller is
    /// granted no write of its primary objects themselves (their status
    /// and `/finalizers` aside), and a finalizer write is a 403 naming
    /// the verb. Another write of the primary is declared with
    /// [`rule`](Self::rule).
    pub fn uses_finalizers(mut self) -> Self {
        self.parts.finalizers = true;
        self
    }

    /// Declares how the reconcile writes its primary objects' status, so
    /// the derived RBAC grants only those verbs on `/status`:
    /// `[Write::Apply]` or `[Write::Patch]` (`apply_status`,
    /// `patch_status`) grant patch, `[Write::Update]` (`replace_status`)
    /// update. Undeclared, get, update and patch are granted, as
    /// kubebuilder scaffolds. Several calls add up.
    pub fn writes_status(mut self, writes: impl IntoIterator<Item = Write>) -> Self {
        self.parts
            .status_writes
            .get_or_insert_with(Vec::new)
            .extend(writes);
        self
    }

    /// The controller's name: its metrics label, workqueue name, event
    /// reporter and log field. Defaults to the kind in lower case; must be
    /// unique within a manager.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.parts.name = Some(name.into());
        self
    }

    /// Only events of the primary type that `predicate` passes enqueue a
    /// reconcile (controller-runtime's `For(obj, WithPredicates(...))`).
    /// Several predicates must all pass.
    pub fn for_predicate(mut self, predicate: impl Predicate<K> + 'static) -> Self {
        self.parts.for_predicates.push(Box::new(predicate));
        self
    }

    /// A filter on the events of every watch: primary, owned and mapped
    /// (controller-runtime's `WithEventFilter`). Any predicate generic over
    /// the object type works, e.g. `GenerationChanged`, or
    /// [`meta_fn`](super::filter::meta_fn).
    pub fn with_event_filter(mut self, filter: impl MetaPredicate + 'static) -> Self {
        self.parts.filters.push(Arc::new(filter));
        self
    }

    /// Reconcile the controller owner of every `O` that changes (created,
    /// updated, deleted), watching `O`'s metadata only.
    ///
    /// The watch is a metadata-only informer: names, labels, annotations,
    /// owner references and resourceVersions, no bodies, so owning many
    /// large objects costs little memory. A reconciler that then reads
    /// whole `O`s from the cache (`ctx.client().get::<O>(..)` or `list`)
    /// starts a second, full informer of `O` — a second watch and a copy
    /// of every `O` (logged at debug level). If the reconciler reads its
    /// owned objects, use [`owns_objects`](Self::owns_objects), which
    /// watches through the full informer the cached client reads; if it
    /// needs only their metadata, read it with
    /// [`get_metadata_opt`](CachedClient::get_metadata_opt). A
    /// reconciler that writes owned objects with server-side apply reads
    /// them from the apply's answer and needs neither.
    pub fn owns<O: CachedObject>(self) -> Self {
        self.owns_with::<O>(Owns::new())
    }

    /// [`owns`](Self::owns) with predicates, or enqueueing every owner.
    pub fn owns_with<O: CachedObject>(mut self, owns: Owns<PartialObjectMeta<O>>) -> Self {
        self.parts
            .rules
            .push(Rule::for_owned::<O>(owns.writes.as_deref()));
        self.parts.rules.push(Rule::for_owner::<K>());
        if !owns.every_owner {
            self.parts
                .owned_labels
                .push(Rule::on::<O>().verbs([Verb::Patch]));
        }
        let matcher = owner_match::<K>(owns.every_owner);
        self.parts.watches.push(Box::new(move |env: &WatchEnv<'_>| {
            let informer = match env.owned_holdings::<O>(&matcher) {
                Some(holdings) => env.client.factory().metadata_informer::<O>(
                    env.client
                        .caching(InformerOptions::default().holdings(holdings)),
                ),
                None => env.client.metadata_informer::<O>(),
            };
            let keys: KeysFn<PartialObjectMeta<O>> = Arc::new(move |o| matcher.owners(o));
            env.source(informer, owns.predicates, keys, true)
        }));
        self
    }

    /// [`owns`](Self::owns) caching whole `O` objects: the same informer
    /// the cached client reads `O` from, so a reconciler that reads its
    /// owned objects keeps one copy and one watch (where `owns` plus cached
    /// reads would run a metadata-only and a full informer of `O`).
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use kubeforge::controller::{Action, Context, Error, Owns};
    /// # use kubeforge::k8s_openapi::api::apps::v1::Deployment;
    /// # use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
    /// # async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Context<()>>) -> Result<Action, Error> {
    /// #     Ok(Action::done())
    /// # }
    /// # fn demo(mgr: &kubeforge::Manager) {
    /// mgr.controller::<ConfigMap>()
    ///     .owns_objects::<Deployment>(Owns::new())
    ///     .reconcile(reconcile, ());
    /// # }
    /// ```
    pub fn owns_objects<O: CachedObject>(mut self, owns: Owns<O>) -> Self {
        self.parts
            .rules
            .push(Rule::for_owned::<O>(owns.writes.as_deref()));
        self.parts.rules.push(Rule::for_owner::<K>());
        if !owns.every_owner {
            self.parts
                .owned_labels
                .push(Rule::on::<O>().verbs([Verb::Patch]));
        }
        let matcher = owner_match::<K>(owns.every_owner);
        self.parts.watches.push(Box::new(move |env: &WatchEnv<'_>| {
            let informer = match env.owned_holdings::<O>(&matcher) {
                Some(holdings) => env
                    .client
                    .informer_with::<O>(InformerOptions::default().holdings(holdings)),
                None => env.client.informer::<O>(),
            };
            let keys: KeysFn<O> = Arc::new(move |o| matcher.owners(o));
            env.source(informer, owns.predicates, keys, true)
        }));
        self
    }

    /// Reconcile the keys `mapper` returns for every `W` that changes
    /// (controller-runtime's `Watches(obj, EnqueueRequestsFromMapFunc)`).
    pub fn watches<W: CachedObject>(
        self,
        mapper: impl Fn(&W) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        self.watches_with(Watch::new(mapper))
    }

    /// [`watches`](Self::watches) with predicates or informer options.
    pub fn watches_with<W: CachedObject>(mut self, watch: Watch<W>) -> Self {
        self.parts.rules.push(Rule::for_watched::<W>());
        self.parts.watches.push(Box::new(move |env: &WatchEnv<'_>| {
            let informer = if is_default(&watch.options) {
                env.client.informer::<W>()
            } else {
                env.client.informer_with::<W>(watch.options)
            };
            env.source_at(
                informer,
                watch.predicates,
                watch.mapper,
                true,
                watch.priority,
            )
        }));
        self
    }

    /// [`watches`](Self::watches) on `W`'s metadata only.
    pub fn watches_metadata<W: CachedObject>(mut self, watch: Watch<PartialObjectMeta<W>>) -> Self {
        self.parts.rules.push(Rule::for_watched::<W>());
        self.parts.watches.push(Box::new(move |env: &WatchEnv<'_>| {
            let informer = if is_default(&watch.options) {
                env.client.metadata_informer::<W>()
            } else {
                env.client
                    .factory()
                    .metadata_informer::<W>(env.client.caching(watch.options))
            };
            env.source_at(
                informer,
                watch.predicates,
                watch.mapper,
                true,
                watch.priority,
            )
        }));
        self
    }

    /// [`watches`](Self::watches) on a resource known at run time, as
    /// [`DynamicObject`]s (set [`InformerOptions::cluster_scoped`] in the
    /// watch's options for a cluster-scoped resource).
    pub fn watches_dynamic(mut self, resource: ApiResource, watch: Watch<DynamicObject>) -> Self {
        let rule = if watch.options.cluster_scoped {
            Rule::cluster_resource(&resource.group, &resource.plural)
        } else {
            Rule::resource(&resource.group, &resource.plural)
        };
        self.parts.rules.push(rule.caches());
        self.parts.watches.push(Box::new(move |env: &WatchEnv<'_>| {
            let informer = env
                .client
                .factory()
                .dynamic_informer(&resource, env.client.caching(watch.options));
            env.source_at(
                informer,
                watch.predicates,
                watch.mapper,
                true,
                watch.priority,
            )
        }));
        self
    }

    /// Reconciles the keys of the objects `channel` delivers from outside
    /// the cluster, as generic events (controller-runtime's
    /// `WatchesRawSource(source.Channel(..))`): the channel's predicates
    /// and the controller-wide filters decide with
    /// [`Predicate::generic`](super::Predicate::generic).
    pub fn watches_channel<W>(mut self, channel: Channel<W>) -> Self
    where
        W: Resource<DynamicType = ()> + Send + Sync + 'static,
    {
        self.parts
            .watches
            .push(Box::new(move |env: &WatchEnv<'_>| env.channel(channel)));
        self
    }

    /// How many reconciles may run at once (controller-runtime's
    /// `MaxConcurrentReconciles`; default 1, or what the manager's
    /// [`max_concurrent_reconciles`](crate::manager::ManagerBuilder::max_concurrent_reconciles)
    /// says). The workqueue never hands one key to two workers, whatever
    /// this is. Zero counts as one.
    pub fn concurrency(mut self, workers: usize) -> Self {
        self.parts.concurrency = Some(workers.max(1));
        self
    }

    /// The limiter spacing retries after errors and [`Action::requeue`]
    /// (default: client-go's default controller limiter, per-item
    /// exponential 5 ms to 1000 s combined with a 10 qps, burst 100
    /// bucket).
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<ObjectKey> + 'static) -> Self {
        self.parts.rate_limiter = Some(Box::new(limiter));
        self
    }

    /// How long starting the controller waits for its informers to sync
    /// before failing with an error naming the one that did not (default
    /// 2 minutes).
    pub fn cache_sync_timeout(mut self, timeout: Duration) -> Self {
        self.parts.cache_sync_timeout = Some(timeout);
        self
    }

    /// How long a stopping controller lets in-flight reconciles finish
    /// before abandoning them (default 30 seconds, or the manager's
    /// graceful shutdown timeout for a controller it runs).
    pub fn graceful_shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.parts.shutdown_timeout = Some(timeout);
        self
    }

    /// Whether a panicking reconcile is caught, logged and retried with the
    /// rate limiter (the default) or stops the controller with an error.
    pub fn recover_panic(mut self, recover: bool) -> Self {
        self.parts.recover_panic = recover;
        self
    }

    /// Whether the workqueue orders keys by priority (default: on, as in
    /// controller-runtime since v0.23): keys from the informers' initial
    /// lists and from resyncs are enqueued at
    /// [`LOW_PRIORITY`](crate::workqueue::LOW_PRIORITY), live changes at
    /// [`DEFAULT_PRIORITY`], and [`Action::with_priority`] or
    /// [`Watch::priority`] say more, so a change made while a restarted
    /// controller works through its initial list does not wait behind it.
    ///
    /// `false` is the opt-out: client-go's FIFO, every key at one priority
    /// and no [`fairness`](Self::fairness) either.
    pub fn priority_queue(mut self, on: bool) -> Self {
        self.parts.priority_queue = on;
        self
    }

    /// Whether keys of one priority are taken in turns across namespaces
    /// (default: on), so a namespace that floods the queue delays another
    /// namespace's key by one key per namespace with keys queued, not by
    /// the whole flood (controller-runtime PR #3261's fairness, with the
    /// namespace as its dimension). Cluster-scoped keys are one group.
    /// `false`: first in, first out within a priority.
    pub fn fairness(mut self, on: bool) -> Self {
        self.parts.fairness = if on {
            Fairness::Namespace
        } else {
            Fairness::Off
        };
        self
    }

    /// Takes keys in turns across the groups `group` puts them in instead
    /// of namespaces: any stable id (a hash of a tenant label carried in
    /// the key's namespace, or of the cluster and namespace in a
    /// multi-cluster controller); equal ids share their turns.
    pub fn fairness_by(
        mut self,
        group: impl Fn(&ObjectKey) -> u64 + Send + Sync + 'static,
    ) -> Self {
        self.parts.fairness = Fairness::By(Arc::new(group));
        self
    }

    /// Reports reconcile and workqueue metrics into `metrics` (default: a
    /// set of its own, or the manager's for a controller it runs).
    pub fn metrics(mut self, metrics: ControllerMetrics) -> Self {
        self.parts.metrics = Some(metrics);
        self
    }

    /// The recorder handed to reconciles through [`Context::recorder`]
    /// (default: one reporting as the controller's name).
    pub fn recorder(mut self, recorder: Recorder) -> Self {
        self.parts.recorder = Some(recorder);
        self
    }
}

/// Which keys share turns in the workqueue.
#[derive(Clone)]
enum Fairness {
    Off,
    Namespace,
    By(Arc<dyn Fn(&ObjectKey) -> u64 + Send + Sync>),
}

impl Fairness {
    /// Configures `queue` with this choice.
    fn apply(self, queue: WorkQueueBuilder<ObjectKey>) -> WorkQueueBuilder<ObjectKey> {
        match self {
            Self::Off => queue,
            Self::Namespace => {
                let hasher = hashbrown::DefaultHashBuilder::default();
                queue.fairness(move |key: &ObjectKey| hasher.hash_one(key.namespace_or_empty()))
            }
            Self::By(group) => queue.fairness(move |key: &ObjectKey| group(key)),
        }
    }
}

fn is_default<W>(options: &InformerOptions<W>) -> bool {
    options.namespace.is_none()
        && options.label_selector.is_none()
        && options.field_selector.is_none()
        && options.shard.is_none()
        && options.holdings.is_none()
        && options.transform.is_none()
        && options.resync.is_none()
}

fn owner_match<K: CachedObject>(every_owner: bool) -> OwnerMatch {
    OwnerMatch {
        group: K::group(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        cluster_scoped: crate::cache::is_cluster_scoped::<K>(),
        every_owner,
    }
}

/// What `.reconcile(..)` does with the controller it builds, decided by
/// the builder's target.
pub(crate) mod target {
    use std::time::Duration;

    use crate::controller::metrics::ControllerMetrics;
    use crate::controller::runner::Controller;
    use crate::events::Recorder;
    use crate::rbac::Rule;

    /// What a manager gives the controllers it runs, for the settings each
    /// controller leaves unset (controller-runtime's `DefaultFromConfig`).
    /// Public in a private module: reachable through [`Target`], nameable
    /// only in this crate.
    pub struct ControllerDefaults<'a> {
        /// The manager's graceful shutdown timeout.
        pub graceful_shutdown_timeout: Duration,
        /// The manager's cache sync timeout.
        pub cache_sync_timeout: Duration,
        /// The manager's default number of workers per controller.
        pub max_concurrent_reconciles: usize,
        /// The metrics `/metrics` serves.
        pub metrics: &'a ControllerMetrics,
        /// The manager's recorder for a controller name.
        pub recorder: Box<dyn Fn(&str) -> Recorder + 'a>,
    }

    /// A builder's target: [`Standalone`](super::Standalone) returns the
    /// controller, a manager registers it.
    pub trait Target<K> {
        /// What `.reconcile(..)` returns.
        type Output;

        /// The settings this target gives controllers that leave them
        /// unset, if any.
        fn defaults(&self) -> Option<ControllerDefaults<'_>>;

        /// Takes note of what the controller named `controller` needs
        /// from the API server (a manager renders it as RBAC); nothing by
        /// default.
        fn record_rules(&self, controller: &str, rules: Vec<Rule>) {
            let _ = (controller, rules);
        }

        /// Takes note that a controller is sharded (its Leases are
        /// rendered in the namespaced Lease role); nothing by default.
        fn record_sharding(&self) {}

        /// Takes the built controller.
        fn finish(self, controller: Controller<K>) -> Self::Output;
    }
}

use target::{ControllerDefaults, Target};

impl<K: CachedObject> Target<K> for Standalone {
    type Output = Controller<K>;

    fn defaults(&self) -> Option<ControllerDefaults<'_>> {
        None
    }

    fn finish(self, controller: Controller<K>) -> Controller<K> {
        controller
    }
}

impl<K: CachedObject, T: Target<K>> ControllerBuilder<K, T> {
    /// Finishes the controller: `reconcile(object, context)` runs for every
    /// key the watches enqueue, with `data` reachable through the
    /// [`Context`]. Errors are retried with the rate limiter (terminal ones
    /// are not).
    ///
    /// A builder from [`Controller::builder`] returns the [`Controller`];
    /// [`run`](Controller::run) it. One from
    /// [`Manager::controller`](crate::Manager::controller) registers the
    /// controller with the manager, which runs it once it runs and leads,
    /// filling the settings left unset here (graceful shutdown and cache
    /// sync timeouts, metrics, recorder) with its own; problems such as a
    /// duplicate name are reported by [`Manager::run`](crate::Manager::run).
    pub fn reconcile<F, Fut, E, D>(self, reconcile: F, data: D) -> T::Output
    where
        F: Fn(Arc<K>, Arc<Context<D>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: StdError + Send + Sync + 'static,
        D: Send + Sync + 'static,
    {
        self.reconcile_with(reconcile, default_error_policy::<K, E, D>, data)
    }

    /// [`reconcile`](Self::reconcile) with an error policy:
    /// `error_policy(object, &error, context)` decides what follows a
    /// (non-terminal) error: [`Action::requeue`] (rate-limited, the
    /// default), [`Action::requeue_after`] or [`Action::done`] (give up
    /// until the next change).
    pub fn reconcile_with<F, Fut, E, P, D>(
        self,
        reconcile: F,
        error_policy: P,
        data: D,
    ) -> T::Output
    where
        F: Fn(Arc<K>, Arc<Context<D>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: StdError + Send + Sync + 'static,
        P: Fn(Arc<K>, &E, Arc<Context<D>>) -> Action + Send + Sync + 'static,
        D: Send + Sync + 'static,
    {
        let Self { target, mut parts } = self;
        if let Some(defaults) = target.defaults() {
            parts.default_from(defaults);
        }
        let mut rules = Rule::for_primary::<K>(parts.finalizers, parts.status_writes.as_deref());
        rules.append(&mut parts.rules);
        if let Some(sharding) = &parts.sharding {
            // The slot labels: the owned kinds', and the primary's unless
            // the ring never shards it by label.
            rules.append(&mut parts.owned_labels);
            if sharding.mechanism != Mechanism::ShardSelector {
                rules.push(Rule::on::<K>().verbs([Verb::Patch]));
            }
        }
        target.record_rules(&parts.name(), rules);
        if parts.sharding.is_some() {
            target.record_sharding();
        }
        let controller = parts.build(reconcile, error_policy, data);
        target.finish(controller)
    }
}

impl<K: CachedObject> BuilderParts<K> {
    /// Fills what the builder left unset from `defaults`; what was set on
    /// the builder wins.
    pub(crate) fn default_from(&mut self, defaults: ControllerDefaults<'_>) {
        self.shutdown_timeout
            .get_or_insert(defaults.graceful_shutdown_timeout);
        self.cache_sync_timeout
            .get_or_insert(defaults.cache_sync_timeout);
        self.concurrency
            .get_or_insert(defaults.max_concurrent_reconciles.max(1));
        if self.metrics.is_none() {
            self.metrics = Some(defaults.metrics.clone());
        }
        if self.recorder.is_none() {
            let name = self.name();
            self.recorder = Some((defaults.recorder)(&name));
        }
    }

    fn name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| K::kind(&()).to_lowercase())
    }

    /// Creates the queue, the informers and their handlers, and wraps the
    /// reconcile function.
    pub(crate) fn build<F, Fut, E, P, D>(
        self,
        reconcile: F,
        error_policy: P,
        data: D,
    ) -> Controller<K>
    where
        F: Fn(Arc<K>, Arc<Context<D>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: StdError + Send + Sync + 'static,
        P: Fn(Arc<K>, &E, Arc<Context<D>>) -> Action + Send + Sync + 'static,
        D: Send + Sync + 'static,
    {
        let name: Arc<str> = self.name().into();
        let mut queue = WorkQueue::builder()
            .name(name.to_string())
            .priorities(self.priority_queue);
        if self.priority_queue {
            queue = self.fairness.apply(queue);
        }
        if let Some(metrics) = &self.metrics {
            queue = queue.metrics(metrics.workqueue_provider());
        }
        let queue = match self.rate_limiter {
            Some(limiter) => queue.rate_limiter(limiter),
            None => queue.rate_limiter(default_controller_rate_limiter()),
        }
        .build();

        let client = self.client;
        let concurrency = self.concurrency.unwrap_or(1);
        let metrics = self.metrics.unwrap_or_default();
        let handles = metrics.for_controller(&name, concurrency);
        let mut sharding = self.sharding.map(|settings| Sharded {
            settings,
            gate: ShardGate::new(),
            metrics: metrics.for_shard(&name),
            labellers: Vec::new(),
        });
        let primary = match &sharding {
            Some(sharded) => client.informer_with::<K>(
                InformerOptions::default().holdings(sharded.gate.holdings(&sharded.settings.ring)),
            ),
            None => client.informer::<K>(),
        };
        let shard_env = sharding.as_ref().map(|sharded| ShardEnv {
            gate: sharded.gate.clone(),
            ring: sharded.settings.ring.clone(),
            label: sharded.settings.slot_label(),
            labellers: Mutex::default(),
        });
        let env = WatchEnv {
            client: &client,
            queue: &queue,
            filters: &self.filters,
            shard: shard_env.as_ref(),
        };
        let mut sources = vec![env.source(
            primary.clone(),
            self.for_predicates,
            Arc::new(|o: &K| vec![ObjectKey::of(o)]),
            false,
        )];
        sources.extend(self.watches.into_iter().map(|spec| spec(&env)));
        if let (Some(sharded), Some(shard_env)) = (sharding.as_mut(), shard_env) {
            sharded.labellers = shard_env
                .labellers
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner);
        }

        let recorder = self.recorder.unwrap_or_else(|| {
            Recorder::new(
                client.live().clone(),
                name.to_string(),
                // client-go's recorders report the host (pod) name.
                crate::ids::hostname(),
            )
        });
        let context = Arc::new(Context::new(
            data,
            client.clone(),
            recorder,
            Arc::clone(&name),
        ));
        Controller::from_parts(ControllerParts {
            name,
            queue,
            client,
            primary,
            sources,
            reconciler: Arc::new(FnReconciler::new(reconcile, error_policy, context)),
            concurrency,
            cache_sync_timeout: self
                .cache_sync_timeout
                .unwrap_or(DEFAULT_CACHE_SYNC_TIMEOUT),
            shutdown_timeout: self
                .shutdown_timeout
                .unwrap_or(DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT),
            recover_panic: self.recover_panic,
            metrics: handles,
            sharding,
        })
    }
}
