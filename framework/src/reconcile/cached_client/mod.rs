//! [`CachedClient`]: the client reconcilers use (controller-runtime's
//! delegating client), not to be confused with the plain
//! [`Client`](crate::Client) it wraps. Reads come from the shared informer
//! cache, writes go to the API server, and a cached read never returns an
//! object older than what this process last wrote.
//!
//! The details are on [`CachedClient`]; its writes are in `write`.

mod write;

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use kube_core::{NamespaceScope, PartialObjectMeta, Resource, Selector, SelectorExt as _};
use serde::de::DeserializeOwned;

use super::error::Error;
use crate::cache::{
    strip_managed_fields, InformerOptions, ObjectKey, SharedInformer, SharedInformerFactory,
};
use crate::client::{Api, Client};

/// How long waiting for informers to sync may take, unless configured: a
/// cached read of a new type, a controller starting
/// (controller-runtime's `CacheSyncTimeout`), a manager starting.
pub const DEFAULT_CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a cached read waits for the informer to catch up with this
/// process's last write of the type, unless configured.
pub const DEFAULT_READ_YOUR_WRITES_TIMEOUT: Duration = Duration::from_secs(10);

/// The field manager of server-side applies unless configured.
pub const DEFAULT_FIELD_MANAGER: &str = "kubeforge";

/// The prefix of the store index behind a field index (controller-runtime
/// names them `field:<name>` too).
const FIELD_INDEX_PREFIX: &str = "field:";

/// The bounds of a type the cached client reads and writes: any
/// `k8s-openapi` type or `#[derive(CustomResource)]` type.
pub trait CachedObject:
    Resource<DynamicType = (), Scope: 'static>
    + Clone
    + DeserializeOwned
    + fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> CachedObject for K where
    K: Resource<DynamicType = (), Scope: 'static>
        + Clone
        + DeserializeOwned
        + fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// What a cached [`list`](CachedClient::list) selects: labels and indexed
/// fields.
///
/// ```
/// use kubeforge::reconcile::ListOptions;
///
/// let options = ListOptions::default()
///     .matching_labels([("app", "web")])
///     .matching_field("spec.nodeName", "node-1");
/// # let _ = options;
/// ```
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Only objects whose labels match.
    pub labels: Selector,
    /// Only objects every named field index files under the given value
    /// (each name must have been registered with
    /// [`index_field`](CachedClient::index_field)).
    pub fields: Vec<(String, String)>,
}

impl ListOptions {
    /// Only objects matching `selector`.
    pub fn labels(mut self, selector: impl Into<Selector>) -> Self {
        self.labels = selector.into();
        self
    }

    /// Only objects carrying every one of these labels with these values.
    pub fn matching_labels<I, K, V>(mut self, labels: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.labels = labels
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self
    }

    /// Only objects the field index `field` files under `value`.
    pub fn matching_field(mut self, field: impl Into<String>, value: impl Into<String>) -> Self {
        self.fields.push((field.into(), value.into()));
        self
    }
}

/// Reads from the shared cache, writes to the API server, and reads its own
/// writes. Cheap to clone; clones share everything.
///
/// - **Reads** ([`get`](CachedClient::get), [`get_opt`](CachedClient::get_opt),
///   [`list`](CachedClient::list) and their metadata-only forms) use the
///   factory's informer for the type, creating it on first use. A new
///   informer is waited for, at most the sync timeout, and a failure names
///   the informer and why (`forbidden: cannot list ...`). Lists filter by
///   label selector and by field indexes ([`index_field`](CachedClient::index_field),
///   controller-runtime's `IndexField` + `MatchingFields`).
/// - **Writes** ([`create`](CachedClient::create), [`replace`](CachedClient::replace),
///   [`patch`](CachedClient::patch), [`apply`](CachedClient::apply),
///   [`delete`](CachedClient::delete), [`patch_status`](CachedClient::patch_status),
///   [`apply_status`](CachedClient::apply_status),
///   [`add_finalizer`](CachedClient::add_finalizer),
///   [`remove_finalizer`](CachedClient::remove_finalizer), and the
///   [`finalizer`](CachedClient::finalizer) and
///   [`create_or_update`](CachedClient::create_or_update) flows) are sent to
///   the API server. They are the reconcile layer's one set of write
///   helpers; the same writes over a plain `Api`, which skip the next
///   point, are in [`uncached`](super::uncached).
/// - **Read your own writes**: each write remembers the resourceVersion the
///   server answered with, per resource type. A later cached read of that
///   type waits, at most the read-your-writes timeout, until the informer has seen
///   that resourceVersion ([`SharedInformer::wait_for_resource_version`]),
///   so it never returns an older state than the write produced. Writes
///   outside the cached namespace are not waited for (they cannot be read
///   from the cache anyway); a delete answered with a `Status` carries no
///   resourceVersion and is not either.
/// - **Uncached reads**: [`live`](CachedClient::live) is the plain
///   [`Client`]; [`live_api`](CachedClient::live_api) an [`Api`] over it.
///   Writes through either bypass the bookkeeping above.
///
/// Informers created here, and those of the controllers built on this
/// client, strip `managedFields` before caching (20-25% of a typical
/// object) unless the client was built with
/// [`keep_managed_fields`](CachedClientBuilder::keep_managed_fields) or the
/// informer's options set a transform of their own; read them live when
/// you need them.
///
/// ```no_run
/// # async fn demo(client: kubeforge::Client) -> Result<(), kubeforge::reconcile::Error> {
/// use kubeforge::cache::SharedInformerFactory;
/// use kubeforge::reconcile::CachedClient;
/// use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
///
/// let factory = SharedInformerFactory::new(client.clone());
/// factory.start();
/// let cached = CachedClient::new(client, factory);
/// let mut cm: ConfigMap = (*cached.get::<ConfigMap>("default", "settings").await?).clone();
/// cm.data.get_or_insert_with(Default::default).insert("mode".into(), "fast".into());
/// let written = cached.replace(&cm).await?;
/// // Never older than `written`, even though it comes from the cache:
/// let read = cached.get::<ConfigMap>("default", "settings").await?;
/// assert_eq!(read.metadata.resource_version, written.metadata.resource_version);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct CachedClient {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    factory: SharedInformerFactory,
    sync_timeout: Duration,
    read_your_writes_timeout: Duration,
    strip_managed_fields: bool,
    field_manager: String,
    /// The informers reads use, by the `TypeId` of what they hold.
    informers: Mutex<HashMap<TypeId, Box<dyn Any + Send + Sync>>>,
    /// The newest resourceVersion this client wrote, per resource.
    written: Mutex<HashMap<ResourceKey, String>>,
}

impl fmt::Debug for CachedClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedClient")
            .field("namespace", &self.inner.factory.namespace())
            .field("sync_timeout", &self.inner.sync_timeout)
            .field(
                "read_your_writes_timeout",
                &self.inner.read_your_writes_timeout,
            )
            .field("field_manager", &self.inner.field_manager)
            .finish_non_exhaustive()
    }
}

/// Configures a [`CachedClient`].
#[derive(Debug)]
pub struct CachedClientBuilder {
    client: Client,
    factory: SharedInformerFactory,
    sync_timeout: Duration,
    read_your_writes_timeout: Duration,
    strip_managed_fields: bool,
    field_manager: String,
}

impl CachedClientBuilder {
    /// How long a read waits for a new informer to sync (default
    /// [`DEFAULT_CACHE_SYNC_TIMEOUT`]).
    pub fn sync_timeout(mut self, timeout: Duration) -> Self {
        self.sync_timeout = timeout;
        self
    }

    /// How long a read waits for the cache to catch up with this process's
    /// writes (default [`DEFAULT_READ_YOUR_WRITES_TIMEOUT`]); past it the
    /// read fails with [`Error::StaleCache`] rather than return an older
    /// object.
    pub fn read_your_writes_timeout(mut self, timeout: Duration) -> Self {
        self.read_your_writes_timeout = timeout;
        self
    }

    /// The field manager of [`apply`](CachedClient::apply) and
    /// [`apply_status`](CachedClient::apply_status) (default
    /// [`DEFAULT_FIELD_MANAGER`]).
    pub fn field_manager(mut self, manager: impl Into<String>) -> Self {
        self.field_manager = manager.into();
        self
    }

    /// Cache objects with their `managedFields` (stripped by default).
    pub fn keep_managed_fields(mut self) -> Self {
        self.strip_managed_fields = false;
        self
    }

    /// The client.
    pub fn build(self) -> CachedClient {
        CachedClient {
            inner: Arc::new(Inner {
                client: self.client,
                factory: self.factory,
                sync_timeout: self.sync_timeout,
                read_your_writes_timeout: self.read_your_writes_timeout,
                strip_managed_fields: self.strip_managed_fields,
                field_manager: self.field_manager,
                informers: Mutex::new(HashMap::new()),
                written: Mutex::new(HashMap::new()),
            }),
        }
    }
}

/// A resource type, as the read-your-own-writes bookkeeping names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ResourceKey {
    group: Cow<'static, str>,
    plural: Cow<'static, str>,
}

impl ResourceKey {
    fn of<K: Resource<DynamicType = ()>>() -> Self {
        Self {
            group: K::group(&()),
            plural: K::plural(&()),
        }
    }
}

/// Says (at debug level) that `K` now has two informers, one of each form:
/// two watches and, for the full one, a copy of every object — usually an
/// `owns::<K>()` watch (metadata-only) next to cached reads of whole `K`s.
fn second_informer<K: CachedObject>(starting: &str, existing: &str) {
    let kind = K::kind(&());
    tracing::debug!(
        kind = %kind,
        "starting a {starting} informer of {kind}, which already has a {existing} one: a second \
         watch of {kind}; a controller that watches {kind} with owns() and reads whole {kind} \
         objects from the cache keeps one informer with owns_objects::<{kind}>() instead \
         (or reads only metadata with get_metadata_opt)"
    );
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section is a map insert or look-up: a panic cannot
    // leave the map half-changed.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `candidate` is a later resourceVersion than `current`: as
/// numbers when both parse (kube-apiserver's are etcd revisions), else the
/// newest write wins.
fn newer(candidate: &str, current: &str) -> bool {
    match (candidate.parse::<u64>(), current.parse::<u64>()) {
        (Ok(a), Ok(b)) => a > b,
        _ => candidate != current,
    }
}

impl CachedClient {
    /// A client reading from `factory`'s informers and writing through
    /// `client`, with the default timeouts and field manager.
    pub fn new(client: Client, factory: SharedInformerFactory) -> Self {
        Self::builder(client, factory).build()
    }

    /// A builder for other timeouts, field manager or caching options.
    pub fn builder(client: Client, factory: SharedInformerFactory) -> CachedClientBuilder {
        CachedClientBuilder {
            client,
            factory,
            sync_timeout: DEFAULT_CACHE_SYNC_TIMEOUT,
            read_your_writes_timeout: DEFAULT_READ_YOUR_WRITES_TIMEOUT,
            strip_managed_fields: true,
            field_manager: DEFAULT_FIELD_MANAGER.to_owned(),
        }
    }

    /// The plain client, for uncached reads and anything else (controller-
    /// runtime's `APIReader`). Writes made through it are not tracked for
    /// read-your-own-writes unless passed to
    /// [`observe_write`](Self::observe_write).
    pub fn live(&self) -> &Client {
        &self.inner.client
    }

    /// An [`Api`] over the plain client for objects of `K` in `namespace`,
    /// for uncached reads. Its writes bypass read-your-own-writes: a cached
    /// read right after one may return the object as it was before (write
    /// through this client's methods instead, or pass the answer to
    /// [`observe_write`](Self::observe_write)).
    pub fn live_api<K>(&self, namespace: &str) -> Api<K>
    where
        K: Resource<DynamicType = ()>,
        K::Scope: NamespaceScope,
    {
        Api::namespaced(self.inner.client.clone(), namespace)
    }

    /// [`live_api`](Self::live_api) for every object of `K`.
    pub fn live_api_all<K: Resource<DynamicType = ()>>(&self) -> Api<K> {
        Api::all(self.inner.client.clone())
    }

    /// The informer factory reads come from.
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.inner.factory
    }

    /// The field manager of [`apply`](Self::apply).
    pub fn field_manager(&self) -> &str {
        &self.inner.field_manager
    }

    /// How long reads wait for a new informer to sync.
    pub fn sync_timeout(&self) -> Duration {
        self.inner.sync_timeout
    }

    /// `options` caching as this client does: without `managedFields`
    /// (unless it keeps them), when `options` sets no transform of its own.
    /// Every informer a controller watches through is made with it.
    pub(crate) fn caching<C: Resource + 'static>(
        &self,
        mut options: InformerOptions<C>,
    ) -> InformerOptions<C> {
        if options.transform.is_none() && self.inner.strip_managed_fields {
            options.transform = Some(strip_managed_fields());
        }
        options
    }

    /// The informer of `K` that reads use (and controllers watching `K`
    /// share), created on first use. It starts once the factory is started.
    pub fn informer<K: CachedObject>(&self) -> SharedInformer<K> {
        self.cached_informer(
            TypeId::of::<PartialObjectMeta<K>>(),
            |metadata_only_exists| {
                if metadata_only_exists {
                    second_informer::<K>("full", "metadata-only");
                }
                self.inner
                    .factory
                    .informer_with(self.caching(InformerOptions::default()))
            },
        )
    }

    /// The informer of `K` for `options` (namespace, selectors), caching
    /// as this client does (without `managedFields`) unless `options` sets
    /// its own transform.
    pub fn informer_with<K: CachedObject>(&self, options: InformerOptions<K>) -> SharedInformer<K> {
        self.inner.factory.informer_with(self.caching(options))
    }

    /// The metadata-only informer of `K` that metadata reads use (and
    /// `owns()` watches share).
    pub fn metadata_informer<K: CachedObject>(&self) -> SharedInformer<PartialObjectMeta<K>> {
        self.cached_informer(TypeId::of::<K>(), |full_exists| {
            if full_exists {
                second_informer::<K>("metadata-only", "full");
            }
            self.inner
                .factory
                .metadata_informer::<K>(self.caching(InformerOptions::default()))
        })
    }

    /// The informer of `C` this client reads through, created by `create`
    /// on first use; `create` is told whether the informer of the same
    /// resource in its other form (`other`: full or metadata-only) exists.
    fn cached_informer<C: Send + Sync + 'static>(
        &self,
        other: TypeId,
        create: impl FnOnce(bool) -> SharedInformer<C>,
    ) -> SharedInformer<C> {
        let mut informers = lock(&self.inner.informers);
        if let Some(found) = informers
            .get(&TypeId::of::<C>())
            .and_then(|i| i.downcast_ref::<SharedInformer<C>>())
        {
            return found.clone();
        }
        let informer = create(informers.contains_key(&other));
        informers.insert(TypeId::of::<C>(), Box::new(informer.clone()));
        informer
    }

    /// Adds a field index on `K`'s cached objects (controller-runtime's
    /// `IndexField`): `extract` gives the values an object is filed under
    /// for `field`, and [`ListOptions::matching_field`] looks them up.
    /// Creates the informer of `K` if needed. A field indexed twice is
    /// [`Error::Cache`] (`index ... already exists`).
    pub fn index_field<K, F>(&self, field: &str, extract: F) -> Result<(), Error>
    where
        K: CachedObject,
        F: Fn(&K) -> Vec<String> + Send + Sync + 'static,
    {
        self.informer::<K>()
            .add_index(format!("{FIELD_INDEX_PREFIX}{field}"), extract)
            .map_err(Error::Cache)
    }

    /// Records a write made outside this client (the object the server
    /// answered with), so later cached reads of its type wait for it.
    pub fn observe_write<K: Resource<DynamicType = ()>>(&self, written: &K) {
        let meta = written.meta();
        let Some(rv) = meta.resource_version.as_deref().filter(|rv| !rv.is_empty()) else {
            return;
        };
        // A write outside the cached namespace is never seen by the
        // informer except through a bookmark: do not make reads wait for it.
        if let (Some(cached), Some(ns)) =
            (self.inner.factory.namespace(), meta.namespace.as_deref())
        {
            if cached != ns {
                return;
            }
        }
        let mut written = lock(&self.inner.written);
        match written.get_mut(&ResourceKey::of::<K>()) {
            Some(current) => {
                if newer(rv, current) {
                    rv.clone_into(current);
                }
            }
            None => {
                written.insert(ResourceKey::of::<K>(), rv.to_owned());
            }
        }
    }

    fn written_version(&self, key: &ResourceKey) -> Option<String> {
        lock(&self.inner.written).get(key).cloned()
    }

    /// Makes `informer` ready for a read of `K`: started, synced (bounded)
    /// and at least as fresh as this client's last write of `K` (bounded).
    pub(crate) async fn ready<K, C>(&self, informer: &SharedInformer<C>) -> Result<(), Error>
    where
        K: Resource<DynamicType = ()>,
    {
        if !informer.has_synced() {
            if !self.inner.factory.is_started() {
                return Err(Error::CacheNotStarted {
                    informer: informer.id().to_string(),
                });
            }
            informer
                .wait_for_cache_sync(self.inner.sync_timeout)
                .await
                .map_err(|e| Error::CacheSync(Box::new(e)))?;
        }
        if let Some(rv) = self.written_version(&ResourceKey::of::<K>()) {
            // The informer announces a resourceVersion only once its store
            // holds the change, so the store is at least this fresh now.
            informer
                .wait_for_resource_version(&rv, self.inner.read_your_writes_timeout)
                .await
                .map_err(Error::StaleCache)?;
        }
        Ok(())
    }

    /// Refuses a namespace the cache does not hold.
    fn cached_namespace<'a>(&self, namespace: &'a str) -> Result<Option<&'a str>, Error> {
        if namespace.is_empty() {
            return Ok(None);
        }
        match self.inner.factory.namespace() {
            Some(cached) if cached != namespace => Err(Error::NamespaceNotCached {
                namespace: namespace.to_owned(),
                cached: cached.to_owned(),
            }),
            _ => Ok(Some(namespace)),
        }
    }

    /// The cached object `name` in `namespace` (`""` for cluster-scoped
    /// objects); a missing object is [`Error::NotFound`] (see
    /// [`Error::is_not_found`]).
    pub async fn get<K: CachedObject>(&self, namespace: &str, name: &str) -> Result<Arc<K>, Error> {
        self.get_opt::<K>(namespace, name)
            .await?
            .ok_or_else(|| Error::NotFound {
                resource: K::plural(&()).into_owned(),
                key: ObjectKey::new(Some(namespace.to_owned()), name).to_string(),
            })
    }

    /// The cached object `name` in `namespace`, `None` when there is none.
    pub async fn get_opt<K: CachedObject>(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<K>>, Error> {
        let namespace = self.cached_namespace(namespace)?;
        let informer = self.informer::<K>();
        self.ready::<K, K>(&informer).await?;
        Ok(informer.store().get_by(namespace, name))
    }

    /// The cached metadata of object `name` in `namespace`, `None` when
    /// there is none. Uses the metadata-only informer, so reading owned
    /// objects this way costs no second copy of their bodies.
    pub async fn get_metadata_opt<K: CachedObject>(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<PartialObjectMeta<K>>>, Error> {
        let namespace = self.cached_namespace(namespace)?;
        let informer = self.metadata_informer::<K>();
        self.ready::<K, _>(&informer).await?;
        Ok(informer.store().get_by(namespace, name))
    }

    /// The cached objects of `K` in `namespace` (`""`: every cached
    /// namespace) that match `options`, in no particular order.
    pub async fn list<K: CachedObject>(
        &self,
        namespace: &str,
        options: &ListOptions,
    ) -> Result<Vec<Arc<K>>, Error> {
        let namespace = self.cached_namespace(namespace)?;
        let informer = self.informer::<K>();
        self.ready::<K, K>(&informer).await?;
        select(&informer, namespace, options, &K::plural(&()))
    }

    /// The cached metadata of the objects of `K` in `namespace` that match
    /// `options` (field indexes are not available on metadata informers).
    pub async fn list_metadata<K: CachedObject>(
        &self,
        namespace: &str,
        options: &ListOptions,
    ) -> Result<Vec<Arc<PartialObjectMeta<K>>>, Error> {
        let namespace = self.cached_namespace(namespace)?;
        let informer = self.metadata_informer::<K>();
        self.ready::<K, _>(&informer).await?;
        select(&informer, namespace, options, &K::plural(&()))
    }
}

/// The objects of `informer` in `namespace` matching `options`.
fn select<C: Resource>(
    informer: &SharedInformer<C>,
    namespace: Option<&str>,
    options: &ListOptions,
    resource: &str,
) -> Result<Vec<Arc<C>>, Error> {
    let store = informer.store();
    let mut objects = match options.fields.split_first() {
        None => match namespace {
            Some(ns) => store.list_namespace(ns),
            None => store.list(),
        },
        Some(((field, value), rest)) => {
            let by_field = |field: &str, value: &str| {
                store
                    .by_index(&format!("{FIELD_INDEX_PREFIX}{field}"), value)
                    .map_err(|_| Error::FieldNotIndexed {
                        field: field.to_owned(),
                        resource: resource.to_owned(),
                    })
            };
            let mut objects = by_field(field, value)?;
            for (field, value) in rest {
                let keep: HashSet<ObjectKey> = by_field(field, value)?
                    .iter()
                    .map(|o| ObjectKey::of(o.as_ref()))
                    .collect();
                objects.retain(|o| keep.contains(&ObjectKey::of(o.as_ref())));
            }
            if let Some(ns) = namespace {
                objects.retain(|o| o.meta().namespace.as_deref() == Some(ns));
            }
            objects
        }
    };
    if !options.labels.selects_all() {
        let empty = Default::default();
        objects.retain(|o| {
            options
                .labels
                .matches(o.meta().labels.as_ref().unwrap_or(&empty))
        });
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_versions_compare_as_numbers() {
        assert!(newer("10", "9"));
        assert!(!newer("9", "10"));
        assert!(!newer("10", "10"));
        assert!(newer("abc", "10"));
        assert!(!newer("abc", "abc"));
    }

    #[test]
    fn list_options_collect_labels_and_fields() {
        let options = ListOptions::default()
            .matching_labels([("app", "web")])
            .matching_field("spec.nodeName", "n1");
        assert!(!options.labels.selects_all());
        assert_eq!(
            options.fields,
            [("spec.nodeName".to_owned(), "n1".to_owned())]
        );
    }

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            lock(&self.0).extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Capture {
        fn second_informer_notes(&self) -> Vec<String> {
            String::from_utf8_lossy(&lock(&self.0))
                .lines()
                .filter(|l| l.contains("which already has"))
                .map(str::to_owned)
                .collect()
        }
    }

    /// A client for an address nothing listens on: informers are created
    /// but never started, so nothing is sent.
    fn offline_client() -> CachedClient {
        let config = crate::Config::new(http::Uri::from_static("https://127.0.0.1:9"));
        let client = Client::try_from(config).expect("client");
        CachedClient::new(client.clone(), SharedInformerFactory::new(client))
    }

    /// `owns()` watches metadata only; a full read of the same kind starts
    /// a second informer, and the debug log says so (once) and what to use
    /// instead. Each form alone, or asked for again, says nothing.
    #[test]
    fn a_second_informer_of_a_kind_in_the_other_form_is_logged() {
        use k8s_openapi::api::apps::v1::Deployment;
        use k8s_openapi::api::core::v1::ConfigMap;

        let capture = Capture::default();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer({
                let c = capture.clone();
                move || c.clone()
            })
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let cached = offline_client();
            let metadata = cached.metadata_informer::<Deployment>();
            assert!(capture.second_informer_notes().is_empty());
            let full = cached.informer::<Deployment>();
            let notes = capture.second_informer_notes();
            assert_eq!(notes.len(), 1, "{notes:?}");
            assert!(
                notes[0].contains("starting a full informer of Deployment")
                    && notes[0].contains("owns_objects::<Deployment>()"),
                "{}",
                notes[0]
            );
            // Two informers in the factory, one of each form.
            let forms: Vec<_> = cached
                .factory()
                .informer_ids()
                .into_iter()
                .filter(|id| id.kind == "Deployment")
                .map(|id| id.form)
                .collect();
            assert_eq!(forms.len(), 2, "{forms:?}");
            assert_ne!(forms[0], forms[1]);
            // Asked for again: the same informers, nothing new logged.
            let _ = (
                cached.informer::<Deployment>(),
                cached.metadata_informer::<Deployment>(),
            );
            assert_eq!(capture.second_informer_notes().len(), 1);
            drop((metadata, full));

            // The other order says so too.
            let _ = cached.informer::<ConfigMap>();
            let _ = cached.metadata_informer::<ConfigMap>();
            let notes = capture.second_informer_notes();
            assert_eq!(notes.len(), 2, "{notes:?}");
            assert!(notes[1].contains("starting a metadata-only informer of ConfigMap"));
        });
    }
}
