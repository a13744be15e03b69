//! [`Reflector`]: keeps a [`DeltaSink`] (an informer, or a bare store) in
//! step with one collection on the API server by listing, then watching
//! (client-go's `tools/cache/reflector.go`).
//!
//! - **List** page by page (`limit=500` and `continue`), decoding items as
//!   they stream in: resourceVersion `"0"` the first time (served
//!   from the watch cache), the last seen resourceVersion on a relist
//!   (unpaged, so the watch cache serves it "not older than"), and `""` (a
//!   consistent read from etcd) after the server said that version is gone
//!   (410) or too new (504). The list replaces the sink's contents: objects
//!   that vanished in the gap reach handlers as deletions with their last
//!   known state.
//! - **Watch** from the last resourceVersion with `allowWatchBookmarks` and
//!   a random `timeoutSeconds` in [300, 600], so clients do not reconnect in
//!   lockstep. A clean end re-watches from the last resourceVersion without
//!   relisting; a 410 `Expired` (HTTP or an `ERROR` event) relists.
//! - **Streaming list** (optional): one watch with `sendInitialEvents=true`
//!   replaces the list; its initial events end at the bookmark annotated
//!   `k8s.io/initial-events-end`. A server that refuses it (4xx) gets plain
//!   lists from then on.
//! - **Failures**: 429 waits for the server's Retry-After; anything else
//!   backs off ([`Backoff`], 800 ms doubling with jitter to 30 s, reset
//!   after 2 minutes without failures). Each failure and recovery is
//!   reported to the sink ([`ReflectorStatus`]), so a 403 during the
//!   initial sync is known at once.
//!
//! Every object goes through the transform before it is wrapped in an
//! `Arc`. Typed, dynamic (`DynamicObject`) and metadata-only
//! (`PartialObjectMeta<K>`) objects all work: the request builder asks for
//! metadata only when `K::metadata_api()` says so.

mod backoff;
pub(crate) mod list;

use std::collections::HashMap;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt as _};
use kube_core::params::{ListParams, WatchParams};
use kube_core::{Resource, WatchEvent};
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

pub use backoff::Backoff;
use backoff::BackoffState;

use super::{Delta, DeltaSink, Holdings, ObjectKey, ReflectorStatus, Shard, Slots, Transform};
use crate::client::{self, Api, Client};

/// The page size of paginated lists (client-go's pager default), the one
/// [`Api::list_pages`] uses.
pub use crate::client::api::DEFAULT_PAGE_SIZE;

/// The annotation on the bookmark that ends a streaming list's initial
/// events.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// client-go's `minWatchTimeout`: watches ask for a timeout in
/// `[MIN_WATCH_TIMEOUT, 2 * MIN_WATCH_TIMEOUT]`.
const MIN_WATCH_TIMEOUT_SECS: u32 = 300;

/// A watch that ends this fast without an event is treated as a failure, so
/// a server that closes every watch at once is not hammered (client-go's
/// "very short watch").
const SHORT_WATCH: Duration = Duration::from_secs(1);

/// Beyond the timeout the server was asked for, how long a watch may stay
/// silent before the reflector gives up on the connection and re-watches.
const WATCH_GRACE: Duration = Duration::from_secs(60);

/// Streaming-list attempts in a row that may end before their initial
/// events do before the reflector falls back to lists for good.
const STREAMING_ATTEMPTS: u32 = 3;

/// How a [`Reflector`] lists and watches.
pub struct ReflectorConfig<K> {
    /// Only objects whose labels match (`labelSelector`).
    pub label_selector: Option<String>,
    /// Only objects whose fields match (`fieldSelector`).
    pub field_selector: Option<String>,
    /// Only the objects of one shard: sent as `shardSelector`, and checked
    /// on every object, for servers that ignore the parameter.
    pub shard: Option<Shard>,
    /// Only the objects of the slots a sharded controller's replica holds:
    /// sent as `shardSelector` (in place of `shard`) and checked on every
    /// object; each change of the holdings ends the watch and lists again
    /// with the new selector, so objects of slots given up leave the cache
    /// as deletions and those of slots taken arrive as additions.
    pub holdings: Option<Holdings>,
    /// Runs on every object before it is wrapped in an `Arc` and stored.
    pub transform: Option<Transform<K>>,
    /// Use a streaming list (`sendInitialEvents`) instead of list requests,
    /// falling back to lists if the server refuses it.
    pub streaming_list: bool,
    /// Items per page of paginated lists.
    pub page_size: u32,
    /// The wait after failures.
    pub backoff: Backoff,
}

impl<K> Default for ReflectorConfig<K> {
    fn default() -> Self {
        Self {
            label_selector: None,
            field_selector: None,
            shard: None,
            holdings: None,
            transform: None,
            streaming_list: false,
            page_size: DEFAULT_PAGE_SIZE,
            backoff: Backoff::default(),
        }
    }
}

impl<K> Clone for ReflectorConfig<K> {
    fn clone(&self) -> Self {
        Self {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            shard: self.shard,
            holdings: self.holdings.clone(),
            transform: self.transform.clone(),
            streaming_list: self.streaming_list,
            page_size: self.page_size,
            backoff: self.backoff.clone(),
        }
    }
}

impl<K> fmt::Debug for ReflectorConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorConfig")
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("shard", &self.shard)
            .field("holdings", &self.holdings)
            .field("transform", &self.transform.is_some())
            .field("streaming_list", &self.streaming_list)
            .field("page_size", &self.page_size)
            .field("backoff", &self.backoff)
            .finish()
    }
}

/// Lists and watches one collection and feeds a [`DeltaSink`].
///
/// ```no_run
/// use kubeforge::cache::{Reflector, ReflectorConfig, SharedInformer, strip_managed_fields};
/// use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
/// use kubeforge::cache::CancellationToken;
/// use kubeforge::{Api, Client};
///
/// # async fn demo(client: Client) {
/// let (informer, writer) = SharedInformer::<ConfigMap>::new("configmaps");
/// let config = ReflectorConfig {
///     transform: Some(strip_managed_fields()),
///     ..ReflectorConfig::default()
/// };
/// let reflector = Reflector::new(&Api::<ConfigMap>::all(client), config);
/// let stop = CancellationToken::new();
/// tokio::spawn(reflector.run(writer, stop.clone()));
/// informer.wait_for_sync().await;
/// stop.cancel();
/// # }
/// ```
pub struct Reflector<K> {
    client: Client,
    request: kube_core::Request,
    name: String,
    config: ReflectorConfig<K>,
}

impl<K> fmt::Debug for Reflector<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("name", &self.name)
            .field("url_path", &self.request.url_path)
            .field("config", &self.config)
            .finish()
    }
}

type Events<K> = Pin<Box<dyn Stream<Item = Result<WatchEvent<K>, client::Error>> + Send>>;

/// Why a step of the loop did not go on.
enum Stop {
    Cancelled,
    Failed(client::Error),
}

impl From<client::Error> for Stop {
    fn from(e: client::Error) -> Self {
        Stop::Failed(e)
    }
}

/// How a watch ended.
enum WatchEnd {
    /// A clean end of stream (the server's timeout, or it dropped us).
    Closed,
    /// The server reported an error, or the stream broke.
    Failed(client::Error),
    Cancelled,
    /// The holdings changed: list again with their new selector.
    Resharded,
}

impl<K> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    /// A reflector for the collection `api` names (its namespace, or the
    /// whole cluster).
    pub fn new(api: &Api<K>, config: ReflectorConfig<K>) -> Self {
        let request = api.request_builder().clone();
        let name = request.url_path.clone();
        Self::from_parts(api.client().clone(), request, name, config)
    }

    /// A reflector from its parts; `name` labels its logs.
    pub(crate) fn from_parts(
        client: Client,
        request: kube_core::Request,
        name: String,
        config: ReflectorConfig<K>,
    ) -> Self {
        Self {
            client,
            request,
            name,
            config,
        }
    }

    /// Lists and watches until `cancel` fires, feeding `sink`. Never returns
    /// early on failure: it retries, and reports every failure and recovery
    /// to the sink.
    pub async fn run<S: DeltaSink<K>>(self, sink: S, cancel: CancellationToken) {
        let span = tracing::info_span!("reflector", resource = %self.name);
        let streaming = self.config.streaming_list;
        let backoff = BackoffState::new(self.config.backoff.clone());
        let holdings = self.config.holdings.as_ref().map(Holdings::receiver);
        let mut run = Run {
            slots: holdings
                .as_ref()
                .map(|h| *h.borrow())
                .unwrap_or(Slots::NONE),
            holdings,
            slot_label: None,
            reflector: self,
            sink,
            cancel,
            last_rv: String::new(),
            rv_unavailable: false,
            paginated: false,
            streaming,
            streaming_attempts: 0,
            backoff,
            status: ReflectorStatus {
                running: true,
                ..ReflectorStatus::default()
            },
            rng: fastrand::Rng::new(),
        };
        run.main().instrument(span).await;
    }
}

struct Run<K, S> {
    reflector: Reflector<K>,
    sink: S,
    cancel: CancellationToken,
    /// The resourceVersion to resume from; empty before the first list.
    last_rv: String,
    /// The server said `last_rv` is gone or too new: relist with `""`.
    rv_unavailable: bool,
    /// The first list came in pages, so the watch cache is off: keep paging.
    paginated: bool,
    streaming: bool,
    streaming_attempts: u32,
    backoff: BackoffState,
    status: ReflectorStatus,
    rng: fastrand::Rng,
    /// The holdings followed, if any, and the slots the current list and
    /// watch ask for.
    holdings: Option<tokio::sync::watch::Receiver<Slots>>,
    slots: Slots,
    /// The label the slots are selected by, taken with them; `None`: by
    /// the uid's `shardSelector`.
    slot_label: Option<Arc<str>>,
}

impl<K, S> Run<K, S>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    S: DeltaSink<K>,
{
    async fn main(&mut self) {
        self.sink.report_status(self.status.clone());
        tracing::debug!("reflector started");
        let mut need_list = true;
        let mut pending: Option<Events<K>> = None;
        while !self.cancel.is_cancelled() {
            if need_list {
                let listed = if self.streaming {
                    self.streaming_list().await
                } else {
                    self.list().await.map(|()| None)
                };
                match listed {
                    Ok(events) => {
                        need_list = false;
                        pending = events;
                        self.recovered();
                    }
                    Err(Stop::Cancelled) => break,
                    Err(Stop::Failed(e)) => {
                        if self.list_failed(e).await.is_err() {
                            break;
                        }
                        continue;
                    }
                }
            }
            let events = match pending.take() {
                Some(events) => events,
                None => match self.open_watch(false, &self.last_rv.clone()).await {
                    Ok(events) => {
                        self.recovered();
                        events
                    }
                    Err(e) => {
                        if e.is_gone() {
                            tracing::debug!(error = %e, "watch refused: resourceVersion expired; relisting");
                            need_list = true;
                            continue;
                        }
                        if self.failed(e).await.is_err() {
                            break;
                        }
                        continue;
                    }
                },
            };
            let started = Instant::now();
            let (end, seen) = self.consume(events).await;
            match end {
                WatchEnd::Cancelled => break,
                WatchEnd::Resharded => {
                    tracing::debug!(slots = %self.slots, "holdings changed; listing again");
                    need_list = true;
                }
                WatchEnd::Closed if seen == 0 && started.elapsed() < SHORT_WATCH => {
                    let e = client::Error::Protocol(
                        "very short watch: the server closed it within a second, sending nothing"
                            .into(),
                    );
                    if self.failed(e).await.is_err() {
                        break;
                    }
                }
                WatchEnd::Closed => {
                    tracing::trace!(events = seen, "watch closed; resuming");
                }
                WatchEnd::Failed(e) if e.is_gone() => {
                    // client-go relists at the last resourceVersion: a list
                    // "not older than" it is served from the watch cache.
                    tracing::debug!(error = %e, "watch expired; relisting");
                    need_list = true;
                }
                WatchEnd::Failed(e) => {
                    if self.failed(e).await.is_err() {
                        break;
                    }
                }
            }
        }
        self.status.running = false;
        self.sink.report_status(self.status.clone());
        tracing::debug!("reflector stopped");
    }

    /// The resourceVersion a (re)list asks for.
    fn list_rv(&self) -> String {
        if self.rv_unavailable {
            String::new()
        } else if self.last_rv.is_empty() {
            "0".to_owned()
        } else {
            self.last_rv.clone()
        }
    }

    /// Lists every page and replaces the sink's contents with the result.
    async fn list(&mut self) -> Result<(), Stop> {
        self.take_slots();
        let rv = self.list_rv();
        // As client-go's reflector: at "0" the watch cache ignores limit
        // (and etcd pages if the cache is off); at a specific version an
        // unpaged list is served "not older than" from the watch cache,
        // while a paged one would be an exact read from etcd — unless the
        // first list showed the cache is off.
        let limit = match rv.as_str() {
            "" | "0" => Some(self.reflector.config.page_size),
            _ if self.paginated => Some(self.reflector.config.page_size),
            _ => None,
        };
        let started = Instant::now();
        let mut items = Vec::new();
        let mut continue_token: Option<String> = None;
        let mut pages = 0u32;
        let list_rv = loop {
            let request = self.list_request(&rv, limit, continue_token.as_deref())?;
            let fetch = list::fetch_page(
                &self.reflector.client,
                request,
                self.reflector.config.transform.as_ref(),
                &mut items,
            );
            let meta = tokio::select! {
                () = self.cancel.cancelled() => return Err(Stop::Cancelled),
                meta = fetch => meta?,
            };
            pages += 1;
            match meta.continue_.filter(|c| !c.is_empty()) {
                Some(token) if limit.is_some() => continue_token = Some(token),
                _ => break meta.resource_version.unwrap_or_default(),
            }
        };
        if rv == "0" && pages > 1 {
            self.paginated = true;
        }
        tracing::debug!(
            resource_version = %list_rv,
            requested = %rv,
            items = items.len(),
            pages,
            elapsed = ?started.elapsed(),
            "listed"
        );
        self.rv_unavailable = false;
        self.last_rv.clone_from(&list_rv);
        items.retain(|o| self.in_shard(o));
        self.sink.replace(items, list_rv);
        Ok(())
    }

    fn list_request(
        &self,
        rv: &str,
        limit: Option<u32>,
        continue_token: Option<&str>,
    ) -> Result<http::Request<Vec<u8>>, client::Error> {
        let config = &self.reflector.config;
        let lp = ListParams {
            label_selector: self.label_selector(),
            field_selector: config.field_selector.clone(),
            limit,
            continue_token: continue_token.map(str::to_owned),
            resource_version: (!rv.is_empty()).then(|| rv.to_owned()),
            ..ListParams::default()
        };
        let request = &self.reflector.request;
        let mut req = if K::metadata_api() {
            request.list_metadata(&lp)?
        } else {
            request.list(&lp)?
        };
        // kube-core leaves resourceVersion=0 out when a limit is set;
        // client-go sends both (see `list`).
        if rv == "0" && limit.is_some() && continue_token.is_none() {
            append_query(&mut req, "resourceVersion", "0")?;
        }
        if let Some(selector) = self.shard_selector() {
            append_query(&mut req, "shardSelector", &selector)?;
        }
        Ok(req)
    }

    async fn open_watch(
        &mut self,
        initial_events: bool,
        rv: &str,
    ) -> Result<Events<K>, client::Error> {
        let config = &self.reflector.config;
        let timeout = self
            .rng
            .u32(MIN_WATCH_TIMEOUT_SECS..=2 * MIN_WATCH_TIMEOUT_SECS);
        let wp = WatchParams {
            label_selector: self.label_selector(),
            field_selector: config.field_selector.clone(),
            timeout: Some(timeout),
            bookmarks: true,
            send_initial_events: initial_events,
        };
        let request = &self.reflector.request;
        let mut req = if K::metadata_api() {
            request.watch_metadata(&wp, rv)?
        } else {
            request.watch(&wp, rv)?
        };
        if let Some(selector) = self.shard_selector() {
            append_query(&mut req, "shardSelector", &selector)?;
        }
        let opened = tokio::select! {
            () = self.cancel.cancelled() => Err(client::Error::Protocol("cancelled".into())),
            opened = self.reflector.client.request_events::<K>(req) => opened,
        };
        let events = opened?;
        let deadline = Instant::now() + Duration::from_secs(u64::from(timeout)) + WATCH_GRACE;
        // A connection that goes silent past the server's own deadline is
        // given up on, so a vanished server cannot stall the reflector.
        let events = events.take_until(tokio::time::sleep_until(deadline));
        Ok(Box::pin(events))
    }

    fn transform(&self, mut obj: K) -> Arc<K> {
        list::trim_spare_capacity(&mut obj);
        Arc::new(match &self.reflector.config.transform {
            Some(t) => t.apply(obj),
            None => obj,
        })
    }

    /// Whether `obj` belongs in this cache: always, unless a shard is set
    /// and a server that ignores `shardSelector` sent another shard's.
    fn in_shard(&self, obj: &K) -> bool {
        if self.holdings.is_some() {
            return match &self.slot_label {
                Some(key) => Slots::slot_labelled(obj, key).is_some_and(|s| self.slots.has(s)),
                None => self.slots.contains(obj),
            };
        }
        self.reflector
            .config
            .shard
            .as_ref()
            .is_none_or(|shard| shard.contains(obj))
    }

    /// The `shardSelector` to send: the holdings' slots, or the shard.
    fn shard_selector(&self) -> Option<String> {
        if self.holdings.is_some() {
            return self.slot_label.is_none().then(|| self.slots.selector());
        }
        self.reflector.config.shard.as_ref().map(Shard::selector)
    }

    /// The `labelSelector` to send: the configured one, and the slots'
    /// when they are selected by label.
    fn label_selector(&self) -> Option<String> {
        let configured = self.reflector.config.label_selector.clone();
        let Some(key) = &self.slot_label else {
            return configured;
        };
        let slots = self.slots.label_selector(key);
        Some(match configured.filter(|s| !s.trim().is_empty()) {
            Some(configured) => format!("{configured},{slots}"),
            None => slots,
        })
    }

    /// Takes the holdings' latest slots (and how they are selected) for
    /// the next list and watch.
    fn take_slots(&mut self) {
        if let Some(holdings) = &mut self.holdings {
            self.slots = *holdings.borrow_and_update();
            self.slot_label = self
                .reflector
                .config
                .holdings
                .as_ref()
                .and_then(Holdings::label_key);
        }
    }

    /// Resolves when the holdings change (never, without holdings).
    async fn resharded(holdings: Option<&mut tokio::sync::watch::Receiver<Slots>>) {
        match holdings {
            // A closed sender never changes them again.
            Some(holdings) => {
                if holdings.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending().await,
        }
    }

    fn note_rv(&mut self, rv: Option<&str>) {
        if let Some(rv) = rv.filter(|rv| !rv.is_empty()) {
            self.last_rv.clear();
            self.last_rv.push_str(rv);
        }
    }

    /// Applies watch events until the stream ends; returns how it ended
    /// and how many events it carried.
    async fn consume(&mut self, mut events: Events<K>) -> (WatchEnd, usize) {
        let mut seen = 0usize;
        loop {
            let next = tokio::select! {
                () = self.cancel.cancelled() => return (WatchEnd::Cancelled, seen),
                () = Self::resharded(self.holdings.as_mut()) => return (WatchEnd::Resharded, seen),
                next = events.next() => next,
            };
            let event = match next {
                None => return (WatchEnd::Closed, seen),
                Some(Err(e)) => return (WatchEnd::Failed(e), seen),
                Some(Ok(event)) => event,
            };
            seen += 1;
            let event = match event {
                WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj)
                    if !self.in_shard(&obj) =>
                {
                    // Another shard's change: nothing to store, but the
                    // cache is as fresh as its resourceVersion.
                    if let Some(rv) = obj.meta().resource_version.clone() {
                        self.note_rv(Some(&rv));
                        self.sink.bookmark(rv);
                    }
                    continue;
                }
                other => other,
            };
            match event {
                WatchEvent::Added(obj) => {
                    let obj = self.transform(obj);
                    self.note_rv(obj.meta().resource_version.as_deref());
                    self.sink.apply(Delta::Added(obj));
                }
                WatchEvent::Modified(obj) => {
                    let obj = self.transform(obj);
                    self.note_rv(obj.meta().resource_version.as_deref());
                    self.sink.apply(Delta::Updated(obj));
                }
                WatchEvent::Deleted(obj) => {
                    let obj = self.transform(obj);
                    self.note_rv(obj.meta().resource_version.as_deref());
                    self.sink.apply(Delta::Deleted(obj));
                }
                WatchEvent::Bookmark(bookmark) => {
                    let rv = bookmark.metadata.resource_version;
                    if !rv.is_empty() {
                        self.note_rv(Some(&rv));
                        self.sink.bookmark(rv);
                    }
                }
                // The client turns ERROR events into errors; keep the loop
                // total all the same.
                WatchEvent::Error(status) => {
                    return (WatchEnd::Failed(client::Error::Api(status)), seen)
                }
            }
        }
    }

    /// A streaming list: one watch whose initial events are the list. On
    /// success the sink holds the snapshot and the same watch goes on.
    async fn streaming_list(&mut self) -> Result<Option<Events<K>>, Stop> {
        self.take_slots();
        let rv = if self.rv_unavailable {
            String::new()
        } else {
            self.last_rv.clone()
        };
        let started = Instant::now();
        let mut events = match self.open_watch(true, &rv).await {
            Ok(events) => events,
            Err(_) if self.cancel.is_cancelled() => return Err(Stop::Cancelled),
            Err(e) if refuses_streaming(&e) => {
                tracing::info!(error = %e, "the server refused a streaming list; using list requests");
                self.streaming = false;
                return self.list().await.map(|()| None);
            }
            Err(e) => return Err(Stop::Failed(e)),
        };
        let mut snapshot: HashMap<ObjectKey, Arc<K>> = HashMap::new();
        loop {
            let next = tokio::select! {
                () = self.cancel.cancelled() => return Err(Stop::Cancelled),
                next = events.next() => next,
            };
            match next {
                None => {
                    self.streaming_attempts += 1;
                    if self.streaming_attempts >= STREAMING_ATTEMPTS {
                        tracing::info!(
                            attempts = self.streaming_attempts,
                            "streaming lists keep ending before their initial events do; using list requests"
                        );
                        self.streaming = false;
                        return self.list().await.map(|()| None);
                    }
                    return Err(Stop::Failed(client::Error::Protocol(
                        "the streaming list ended before the initial-events-end bookmark".into(),
                    )));
                }
                Some(Err(e)) => return Err(Stop::Failed(e)),
                Some(Ok(WatchEvent::Added(obj) | WatchEvent::Modified(obj))) => {
                    if self.in_shard(&obj) {
                        let obj = self.transform(obj);
                        snapshot.insert(ObjectKey::of(obj.as_ref()), obj);
                    }
                }
                Some(Ok(WatchEvent::Deleted(obj))) => {
                    snapshot.remove(&ObjectKey::of(&obj));
                }
                Some(Ok(WatchEvent::Bookmark(bookmark))) => {
                    let end = bookmark
                        .metadata
                        .annotations
                        .get(INITIAL_EVENTS_END_ANNOTATION)
                        .is_some_and(|v| v == "true");
                    if end {
                        let rv = bookmark.metadata.resource_version;
                        tracing::debug!(
                            resource_version = %rv,
                            items = snapshot.len(),
                            elapsed = ?started.elapsed(),
                            "streamed the initial list"
                        );
                        self.streaming_attempts = 0;
                        self.rv_unavailable = false;
                        self.last_rv.clone_from(&rv);
                        self.sink.replace(snapshot.into_values().collect(), rv);
                        return Ok(Some(events));
                    }
                }
                Some(Ok(WatchEvent::Error(status))) => {
                    return Err(Stop::Failed(client::Error::Api(status)))
                }
            }
        }
    }

    /// A list failed: a gone or too-new resourceVersion relists from etcd
    /// at once (client-go's `isLastSyncResourceVersionUnavailable`);
    /// anything else waits.
    async fn list_failed(&mut self, e: client::Error) -> Result<(), ()> {
        if (e.is_gone() || is_too_large_resource_version(&e)) && !self.rv_unavailable {
            tracing::debug!(error = %e, "list at resourceVersion {:?} refused; listing the latest", self.last_rv);
            self.rv_unavailable = true;
            self.report_failure(e);
            return Ok(());
        }
        self.failed(e).await
    }

    /// Reports a failure and waits before the next attempt: the server's
    /// Retry-After for a 429, the backoff otherwise. `Err` if cancelled
    /// while waiting.
    async fn failed(&mut self, e: client::Error) -> Result<(), ()> {
        let delay = match e.retry_after().filter(|_| e.is_too_many_requests()) {
            Some(retry_after) => retry_after,
            None => self.backoff.next_delay(),
        };
        if e.is_forbidden() || e.is_unauthorized() {
            tracing::warn!(error = %e, retry_in = ?delay, "access denied to list/watch");
        } else if self.status.consecutive_failures >= 2 {
            tracing::warn!(error = %e, retry_in = ?delay, failures = self.status.consecutive_failures + 1, "list/watch failing");
        } else {
            tracing::debug!(error = %e, retry_in = ?delay, "list/watch failed");
        }
        self.report_failure(e);
        tokio::select! {
            () = self.cancel.cancelled() => Err(()),
            () = tokio::time::sleep(delay) => Ok(()),
        }
    }

    fn report_failure(&mut self, e: client::Error) {
        self.status.last_error = Some(Arc::new(e));
        self.status.consecutive_failures = self.status.consecutive_failures.saturating_add(1);
        self.sink.report_status(self.status.clone());
    }

    fn recovered(&mut self) {
        if self.status.last_error.is_some() || self.status.consecutive_failures > 0 {
            tracing::debug!(
                after = self.status.consecutive_failures,
                "list/watch recovered"
            );
            self.status.last_error = None;
            self.status.consecutive_failures = 0;
            self.sink.report_status(self.status.clone());
        }
    }
}

/// Whether a failed streaming-list request means the server does not do
/// streaming lists (an old server validating the parameters: 400, 422, or
/// no such verb: 405, 501), rather than a failure a list would meet too.
fn refuses_streaming(e: &client::Error) -> bool {
    matches!(e.code(), Some(400 | 405 | 415 | 422 | 501))
}

/// kube-apiserver's answer to a resourceVersion newer than it has: 504
/// with cause `ResourceVersionTooLarge` (apimachinery's
/// `IsTooLargeResourceVersion`).
fn is_too_large_resource_version(e: &client::Error) -> bool {
    e.status().is_some_and(|s| {
        s.code == 504
            && s.details.as_ref().is_some_and(|d| {
                d.causes
                    .iter()
                    .any(|c| c.reason == "ResourceVersionTooLarge")
            })
    })
}

/// Appends one query parameter to a request's URI.
fn append_query(
    req: &mut http::Request<Vec<u8>>,
    key: &str,
    value: &str,
) -> Result<(), client::Error> {
    let current = req
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |pq| pq.as_str().to_owned());
    let pair = form_urlencoded::Serializer::new(String::new())
        .append_pair(key, value)
        .finish();
    let sep = if current.contains('?') { "&" } else { "?" };
    let uri: http::Uri =
        format!("{current}{sep}{pair}")
            .parse()
            .map_err(|e: http::uri::InvalidUri| {
                client::Error::Request(kube_core::request::Error::BuildRequest(e.into()))
            })?;
    *req.uri_mut() = uri;
    Ok(())
}
