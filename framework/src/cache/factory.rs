//! [`SharedInformerFactory`]: one informer per (type, namespace, selectors)
//! per process, shared by every controller that asks for it — one watch
//! connection and one copy of each object (client-go's
//! `SharedInformerFactory`, controller-runtime's informer cache).
//!
//! The factory starts a [`Reflector`] per informer on [`start`]
//! (informers asked for later start at once), reports a sync result per
//! informer ([`wait_for_cache_sync`]) and stops everything on
//! [`shutdown`] or when its last clone is dropped.
//!
//! [`start`]: SharedInformerFactory::start
//! [`wait_for_cache_sync`]: SharedInformerFactory::wait_for_cache_sync
//! [`shutdown`]: SharedInformerFactory::shutdown

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::{join_all, BoxFuture};
use kube_core::{ApiResource, ClusterResourceScope, DynamicObject, PartialObjectMeta, Resource};
use serde::de::DeserializeOwned;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::reflector::{Backoff, Reflector, ReflectorConfig, DEFAULT_PAGE_SIZE};
use super::{
    Holdings, InformerConfig, InformerId, Lister, ObjectForm, Shard, SharedInformer, SyncError,
    Transform,
};
use crate::client::Client;

/// What an informer watches and how it stores objects: the options of
/// [`SharedInformerFactory::informer_with`] and friends.
///
/// Informers are shared by (type, namespace, label selector, field
/// selector, shard): two requests that agree on those get the same informer, and
/// the first one fixes its `transform` and `resync` (later requests'
/// values are ignored, with a debug log).
///
/// ```
/// use kubeforge::cache::{strip_managed_fields, InformerOptions};
/// use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
///
/// let options = InformerOptions::<ConfigMap>::default()
///     .namespace("team-a")
///     .labels("app=web")
///     .transform(strip_managed_fields());
/// ```
pub struct InformerOptions<K> {
    /// Watch this namespace only; `None` uses the factory's namespace (or
    /// every namespace). Ignored for cluster-scoped types.
    pub namespace: Option<String>,
    /// Only objects whose labels match (`labelSelector`).
    pub label_selector: Option<String>,
    /// Only objects whose fields match (`fieldSelector`).
    pub field_selector: Option<String>,
    /// Only the objects of one shard (`shardSelector`, checked again as
    /// objects arrive): see [`Shard`](super::Shard).
    pub shard: Option<Shard>,
    /// Only the objects of the slots a sharded controller's replica holds,
    /// following them as they move: see [`Holdings`](super::Holdings).
    pub holdings: Option<Holdings>,
    /// Runs on every object before it is cached (e.g.
    /// [`strip_managed_fields`](super::strip_managed_fields)). Fixed by the
    /// request that creates the informer.
    pub transform: Option<Transform<K>>,
    /// The resync period of handlers added with
    /// [`SharedInformer::add_event_handler`]; `None` uses the factory's
    /// default. Fixed by the request that creates the informer.
    pub resync: Option<Duration>,
    /// For dynamic informers: the resource is cluster-scoped, so no
    /// namespace applies (typed informers know their scope).
    pub cluster_scoped: bool,
}

impl<K> Default for InformerOptions<K> {
    fn default() -> Self {
        Self {
            namespace: None,
            label_selector: None,
            field_selector: None,
            shard: None,
            holdings: None,
            transform: None,
            resync: None,
            cluster_scoped: false,
        }
    }
}

impl<K> Clone for InformerOptions<K> {
    fn clone(&self) -> Self {
        Self {
            namespace: self.namespace.clone(),
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            shard: self.shard,
            holdings: self.holdings.clone(),
            transform: self.transform.clone(),
            resync: self.resync,
            cluster_scoped: self.cluster_scoped,
        }
    }
}

impl<K> fmt::Debug for InformerOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerOptions")
            .field("namespace", &self.namespace)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("shard", &self.shard)
            .field("holdings", &self.holdings)
            .field("transform", &self.transform.is_some())
            .field("resync", &self.resync)
            .field("cluster_scoped", &self.cluster_scoped)
            .finish()
    }
}

impl<K> InformerOptions<K> {
    /// Watch one namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only objects matching this label selector.
    pub fn labels(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Only objects matching this field selector.
    pub fn fields(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Only the objects of `shard`: a replica holding one of N shards
    /// caches about 1/N of the collection.
    pub fn shard(mut self, shard: Shard) -> Self {
        self.shard = Some(shard);
        self
    }

    /// Only the objects of the slots `holdings` names, as they change.
    pub fn holdings(mut self, holdings: Holdings) -> Self {
        self.holdings = Some(holdings);
        self
    }

    /// Transform objects before caching them.
    pub fn transform(mut self, transform: Transform<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// The default resync period of the informer's handlers.
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// The (dynamic) resource is cluster-scoped.
    pub fn cluster_scoped(mut self) -> Self {
        self.cluster_scoped = true;
        self
    }
}

/// Configures a [`SharedInformerFactory`].
#[derive(Debug, Clone)]
pub struct SharedInformerFactoryBuilder {
    client: Client,
    namespace: Option<String>,
    default_resync: Option<Duration>,
    streaming_list: bool,
    backoff: Backoff,
    page_size: u32,
}

impl SharedInformerFactoryBuilder {
    /// Restrict every informer of a namespaced type to `namespace` (unless
    /// its options name another one).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// The resync period of handlers added with
    /// [`SharedInformer::add_event_handler`] (none by default).
    pub fn default_resync(mut self, period: Duration) -> Self {
        self.default_resync = Some(period);
        self
    }

    /// Fetch initial state with streaming lists (`sendInitialEvents`),
    /// falling back to list requests where the server refuses them. Off by
    /// default, as in client-go.
    pub fn streaming_list(mut self, enabled: bool) -> Self {
        self.streaming_list = enabled;
        self
    }

    /// The reflectors' backoff after failures (client-go's by default).
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Items per page of paginated lists (500 by default).
    pub fn page_size(mut self, items: u32) -> Self {
        self.page_size = items.max(1);
        self
    }

    /// The factory.
    pub fn build(self) -> SharedInformerFactory {
        SharedInformerFactory {
            inner: Arc::new(FactoryInner {
                client: self.client,
                namespace: self.namespace,
                default_resync: self.default_resync,
                streaming_list: self.streaming_list,
                backoff: self.backoff,
                page_size: self.page_size,
                cancel: CancellationToken::new(),
                state: Mutex::new(FactoryState::default()),
            }),
        }
    }
}

/// Shares informers, one per (type, namespace, selectors): every caller
/// asking for the same one gets the same [`SharedInformer`] (same store,
/// same `Arc`s, one watch). Cheap to clone.
///
/// ```no_run
/// use std::time::Duration;
/// use kubeforge::cache::SharedInformerFactory;
/// use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
/// use kubeforge::Client;
///
/// # async fn demo(client: Client) {
/// let factory = SharedInformerFactory::new(client);
/// let configmaps = factory.informer::<ConfigMap>();
/// factory.start();
/// for (id, result) in factory.wait_for_cache_sync(Duration::from_secs(60)).await {
///     if let Err(e) = result {
///         tracing::error!(informer = %id, "{e}");
///     }
/// }
/// let lister = configmaps.lister();
/// # let _ = lister;
/// factory.shutdown();
/// # }
/// ```
#[derive(Clone)]
pub struct SharedInformerFactory {
    inner: Arc<FactoryInner>,
}

struct FactoryInner {
    client: Client,
    namespace: Option<String>,
    default_resync: Option<Duration>,
    streaming_list: bool,
    backoff: Backoff,
    page_size: u32,
    cancel: CancellationToken,
    state: Mutex<FactoryState>,
}

impl Drop for FactoryInner {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

type StartFn = Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, ()> + Send>;

struct Entry {
    id: InformerId,
    /// The `SharedInformer<K>`, for typed look-ups.
    informer: Box<dyn Any + Send + Sync>,
    erased: Arc<dyn ErasedInformer>,
    /// The reflector, until it is started.
    start: Option<StartFn>,
}

#[derive(Default)]
struct FactoryState {
    entries: Vec<Entry>,
    by_key: HashMap<(TypeId, InformerId), usize>,
    /// The runtime `start` was called on; informers created later start on it.
    runtime: Option<Handle>,
    shut_down: bool,
}

impl fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state();
        f.debug_struct("SharedInformerFactory")
            .field("namespace", &self.inner.namespace)
            .field(
                "informers",
                &state
                    .entries
                    .iter()
                    .map(|e| e.id.to_string())
                    .collect::<Vec<_>>(),
            )
            .field("started", &state.runtime.is_some())
            .field("shut_down", &state.shut_down)
            .finish()
    }
}

impl FactoryInner {
    fn state(&self) -> MutexGuard<'_, FactoryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the factory needs of an informer whatever its type.
trait ErasedInformer: Send + Sync {
    fn wait_for_cache_sync(&self, timeout: Duration) -> BoxFuture<'_, Result<(), SyncError>>;
    fn has_synced(&self) -> bool;
    fn shutdown(&self);
}

impl<K: Resource + Send + Sync + 'static> ErasedInformer for SharedInformer<K> {
    fn wait_for_cache_sync(&self, timeout: Duration) -> BoxFuture<'_, Result<(), SyncError>> {
        Box::pin(SharedInformer::wait_for_cache_sync(self, timeout))
    }

    fn has_synced(&self) -> bool {
        SharedInformer::has_synced(self)
    }

    fn shutdown(&self) {
        SharedInformer::shutdown(self);
    }
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

/// Whether `K` is cluster-scoped, known from its type.
pub(crate) fn is_cluster_scoped<K: Resource>() -> bool
where
    K::Scope: 'static,
{
    TypeId::of::<K::Scope>() == TypeId::of::<ClusterResourceScope>()
}

impl SharedInformerFactory {
    /// A factory whose informers watch every namespace, with client-go's
    /// defaults.
    pub fn new(client: Client) -> Self {
        Self::builder(client).build()
    }

    /// A builder for a factory with a namespace, a default resync period,
    /// streaming lists or another backoff.
    pub fn builder(client: Client) -> SharedInformerFactoryBuilder {
        SharedInformerFactoryBuilder {
            client,
            namespace: None,
            default_resync: None,
            streaming_list: false,
            backoff: Backoff::default(),
            page_size: DEFAULT_PAGE_SIZE,
        }
    }

    /// The client the informers list and watch with.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The namespace every informer is restricted to, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.inner.namespace.as_deref()
    }

    /// The informer of `K` for the factory's namespace (or the whole
    /// cluster), with no selector.
    pub fn informer<K>(&self) -> SharedInformer<K>
    where
        K: Resource<DynamicType = ()>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        self.informer_with(InformerOptions::default())
    }

    /// The informer of `K` for `options`' namespace and selectors.
    pub fn informer_with<K>(&self, options: InformerOptions<K>) -> SharedInformer<K>
    where
        K: Resource<DynamicType = ()>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        let cluster_scoped = is_cluster_scoped::<K>();
        let id = self.id_for::<K>(&(), ObjectForm::Typed, &options, cluster_scoped);
        self.get_or_create(id, (), options)
    }

    /// A typed lister of the informer of `K` (see [`informer`](Self::informer)).
    pub fn lister<K>(&self) -> Lister<K>
    where
        K: Resource<DynamicType = ()>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        self.informer::<K>().lister()
    }

    /// The informer of the resource `resource` describes, holding
    /// [`DynamicObject`]s. For a cluster-scoped resource, set
    /// [`InformerOptions::cluster_scoped`].
    pub fn dynamic_informer(
        &self,
        resource: &ApiResource,
        options: InformerOptions<DynamicObject>,
    ) -> SharedInformer<DynamicObject> {
        let cluster_scoped = options.cluster_scoped;
        let id =
            self.id_for::<DynamicObject>(resource, ObjectForm::Dynamic, &options, cluster_scoped);
        self.get_or_create(id, resource.clone(), options)
    }

    /// The informer of `K` holding metadata only ([`PartialObjectMeta`]):
    /// names, labels, annotations, owner references and resourceVersions,
    /// without the objects' bodies.
    pub fn metadata_informer<K>(
        &self,
        options: InformerOptions<PartialObjectMeta<K>>,
    ) -> SharedInformer<PartialObjectMeta<K>>
    where
        K: Resource<DynamicType = ()> + Clone + fmt::Debug + Send + Sync + 'static,
    {
        let cluster_scoped = is_cluster_scoped::<K>();
        let id = self.id_for::<PartialObjectMeta<K>>(
            &(),
            ObjectForm::MetadataOnly,
            &options,
            cluster_scoped,
        );
        self.get_or_create(id, (), options)
    }

    fn id_for<K: Resource>(
        &self,
        dyntype: &K::DynamicType,
        form: ObjectForm,
        options: &InformerOptions<K>,
        cluster_scoped: bool,
    ) -> InformerId {
        let mut id = InformerId::of::<K>(dyntype, form);
        id.namespace = if cluster_scoped {
            None
        } else {
            non_empty(options.namespace.clone()).or_else(|| self.inner.namespace.clone())
        };
        id.label_selector = non_empty(options.label_selector.clone());
        id.field_selector = non_empty(options.field_selector.clone());
        id.shard = options.shard;
        id.ring = options.holdings.as_ref().map(|h| h.identity());
        id
    }

    fn get_or_create<K>(
        &self,
        id: InformerId,
        dyntype: K::DynamicType,
        options: InformerOptions<K>,
    ) -> SharedInformer<K>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    {
        let key = (TypeId::of::<K>(), id.clone());
        let mut state = self.inner.state();
        if let Some(entry) = state.by_key.get(&key).and_then(|&i| state.entries.get(i)) {
            if let Some(informer) = entry.informer.downcast_ref::<SharedInformer<K>>() {
                if options.transform.is_some() || options.resync.is_some() {
                    tracing::debug!(informer = %id, "informer already exists: its transform and resync were fixed by its first creator");
                }
                return informer.clone();
            }
        }

        let config = InformerConfig::for_id(id.clone())
            .default_resync(options.resync.or(self.inner.default_resync));
        let (informer, writer) = SharedInformer::<K>::with_config(config);
        let request = kube_core::Request::new(K::url_path(&dyntype, id.namespace.as_deref()));
        let reflector = Reflector::from_parts(
            self.inner.client.clone(),
            request,
            id.to_string(),
            ReflectorConfig {
                label_selector: id.label_selector.clone(),
                field_selector: id.field_selector.clone(),
                shard: id.shard,
                holdings: options.holdings,
                transform: options.transform,
                streaming_list: self.inner.streaming_list,
                page_size: self.inner.page_size,
                backoff: self.inner.backoff.clone(),
            },
        );
        let start: StartFn = Box::new(move |cancel| Box::pin(reflector.run(writer, cancel)));
        tracing::debug!(informer = %id, "informer created");
        let mut entry = Entry {
            id,
            informer: Box::new(informer.clone()),
            erased: Arc::new(informer.clone()),
            start: Some(start),
        };
        if state.shut_down {
            informer.shutdown();
        } else if let Some(runtime) = &state.runtime {
            spawn(runtime, &mut entry, &self.inner.cancel);
        }
        let index = state.entries.len();
        state.entries.push(entry);
        state.by_key.insert(key, index);
        informer
    }

    /// Starts the reflector of every informer created so far; informers
    /// created afterwards start at once. Reflectors run on the tokio runtime
    /// this is called from (outside one, nothing starts and an error is
    /// logged). Calling it again is harmless.
    pub fn start(&self) {
        let mut state = self.inner.state();
        if state.shut_down {
            tracing::warn!("informer factory was shut down; not starting");
            return;
        }
        let runtime = match (&state.runtime, Handle::try_current()) {
            (Some(runtime), _) => runtime.clone(),
            (None, Ok(runtime)) => runtime,
            (None, Err(_)) => {
                tracing::error!("SharedInformerFactory::start must be called within a tokio runtime; nothing started");
                return;
            }
        };
        state.runtime = Some(runtime.clone());
        for entry in &mut state.entries {
            spawn(&runtime, entry, &self.inner.cancel);
        }
    }

    /// Whether [`start`](Self::start) has been called.
    pub fn is_started(&self) -> bool {
        self.inner.state().runtime.is_some()
    }

    /// The informers created so far, in creation order.
    pub fn informer_ids(&self) -> Vec<InformerId> {
        self.inner
            .state()
            .entries
            .iter()
            .map(|e| e.id.clone())
            .collect()
    }

    /// Whether every informer created so far has synced.
    pub fn has_synced(&self) -> bool {
        self.inner
            .state()
            .entries
            .iter()
            .all(|e| e.erased.has_synced())
    }

    /// Waits, at most `timeout` in all, for every informer created so far
    /// to sync, and returns a result per informer in creation order.
    ///
    /// An informer the server refuses (403 or 401) fails at once with
    /// [`SyncError::Forbidden`] / [`SyncError::Unauthorized`] carrying the
    /// server's message; one that never started fails at once with
    /// [`SyncError::NotStarted`]; one still trying at the deadline fails
    /// with [`SyncError::Timeout`] and the last error it met.
    pub async fn wait_for_cache_sync(
        &self,
        timeout: Duration,
    ) -> Vec<(InformerId, Result<(), SyncError>)> {
        let informers: Vec<_> = self
            .inner
            .state()
            .entries
            .iter()
            .map(|e| (e.id.clone(), Arc::clone(&e.erased), e.start.is_some()))
            .collect();
        let waits = informers
            .iter()
            .map(|(id, informer, unstarted)| async move {
                if *unstarted && !informer.has_synced() {
                    return Err(SyncError::NotStarted {
                        informer: id.clone(),
                    });
                }
                informer.wait_for_cache_sync(timeout).await
            });
        let results = join_all(waits).await;
        informers
            .into_iter()
            .zip(results)
            .map(|((id, _, _), result)| (id, result))
            .collect()
    }

    /// Stops every reflector and every handler. The stores stay readable
    /// (and stop changing); informers asked for afterwards never start.
    pub fn shutdown(&self) {
        let informers: Vec<_> = {
            let mut state = self.inner.state();
            state.shut_down = true;
            state
                .entries
                .iter()
                .map(|e| Arc::clone(&e.erased))
                .collect()
        };
        self.inner.cancel.cancel();
        for informer in informers {
            informer.shutdown();
        }
        tracing::debug!("informer factory shut down");
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.inner.state().shut_down
    }
}

fn spawn(runtime: &Handle, entry: &mut Entry, cancel: &CancellationToken) {
    if let Some(start) = entry.start.take() {
        tracing::debug!(informer = %entry.id, "starting reflector");
        runtime.spawn(start(cancel.child_token()));
    }
}
