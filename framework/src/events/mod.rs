//! An event recorder for `events.k8s.io/v1` `Event`s, with client-go's
//! series aggregation (`tools/events`).
//!
//! [`Recorder::event`] starts an event about an object and names its parts
//! (`recorder.event(&obj).normal("Scaled", "Scale").note("...").publish()`,
//! see [`EventBuilder`]); [`Recorder::publish`] takes the `regarding`
//! [`ObjectReference`] (built by [`object_reference`] from any resource)
//! and the parts as positional strings.
//! Repeats are aggregated as client-go's event broadcaster does:
//!
//! - events are *isomorphic* when type, action, reason, reporting
//!   controller, reporting instance, regarding and related references are
//!   equal (client-go's `getKey`; the note is not part of the key, so a
//!   series keeps the first note);
//! - the first occurrence is created as `<regarding name>.<hex nanoseconds>`
//!   in the regarding object's namespace (`default` for cluster-scoped
//!   objects);
//! - the second turns it into a series: a patch sets `series.count = 2` and
//!   `series.lastObservedTime`;
//! - later ones only bump the cached count and time; the count is written
//!   when the series ends (no repeat for six minutes), every thirty minutes
//!   while it lasts, and on [`Recorder::flush`];
//! - a singleton is forgotten six minutes after it happened, so a repeat
//!   after that starts a new event.
//!
//! The six minutes are the series window ([`SERIES_WINDOW`];
//! [`Recorder::with_series_window`] sets another). client-go looks for
//! what is over once per window, so it holds up to two windows of events;
//! the recorder looks six times per window, holding at most 7/6 of one,
//! which bounds the memory of an operator that records an event for each
//! of many objects.
//!
//! Writing events never fails a reconcile: errors are logged. As in
//! client-go, an error the server answered (a `Status`) is not retried,
//! except `AlreadyExists` on a series re-create; transport errors are
//! retried in the background up to 12 times, about ten seconds apart.
//! Notes longer than the API server's 1024-byte limit are cut, on a
//! character boundary, with a `" ..."` marker, as kube-scheduler does.
//!
//! The aggregation is a pure state machine (the private `series` module)
//! driven by the recorder; the recorder only adds the clock and the HTTP
//! calls.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::params::{Patch, PatchParams, PostParams};
use kube_core::Resource;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::client::{Api, Client};

mod builder;
mod series;

pub use builder::{EventBuilder, EventRegarding};

use series::{micro, SeriesCache, Write};

/// How long a series stays open without a repeat, and a singleton is kept
/// for one (client-go's `finishTime`, six minutes).
pub const SERIES_WINDOW: Duration = series::FINISH_TIME;
/// The longest series window a recorder takes (its sweeps are timers, which
/// must stay within the clock's range).
const MAX_SERIES_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// The API server's limit on `note` (events validation `NoteLengthLimit`).
pub const NOTE_LENGTH_LIMIT: usize = 1024;
/// How often open series are rewritten (client-go `refreshTime`).
const REFRESH_TIME: Duration = Duration::from_secs(30 * 60);
/// Attempts per event before giving up (client-go `maxTriesPerEvent`).
const MAX_TRIES: u32 = 12;
/// The pause between attempts, jittered by up to 25% (client-go
/// `defaultSleepDuration`).
pub const RETRY_INTERVAL: Duration = Duration::from_secs(10);
/// Longest event name the API server accepts (a DNS subdomain).
const MAX_NAME_LENGTH: usize = 253;

/// The severity of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something happened as expected.
    Normal,
    /// Something may need attention.
    Warning,
}

impl EventType {
    /// `Normal` or `Warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reference to `obj` for an event's `regarding` or `related`: apiVersion,
/// kind, namespace, name, UID and resourceVersion, as client-go's
/// `reference.GetReference` builds it. Because the resourceVersion is part
/// of it, the same event about two versions of an object is two events.
pub fn object_reference<K: Resource>(obj: &K, dt: &K::DynamicType) -> ObjectReference {
    let meta = obj.meta();
    ObjectReference {
        api_version: Some(K::api_version(dt).into_owned()),
        kind: Some(K::kind(dt).into_owned()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone().filter(|ns| !ns.is_empty()),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

/// Cuts `note` to [`NOTE_LENGTH_LIMIT`] bytes on a character boundary,
/// ending in `" ..."` when something was cut.
fn truncate_note(note: &str) -> String {
    if note.len() <= NOTE_LENGTH_LIMIT {
        return note.to_owned();
    }
    const MARKER: &str = " ...";
    let mut end = NOTE_LENGTH_LIMIT - MARKER.len();
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MARKER}", &note[..end])
}

/// Whether a failed write should be tried again (client-go's
/// `recordEvent`): answers from the server are final, except
/// `AlreadyExists` when re-creating a series whose patch found nothing
/// (the create raced another); transport-level failures are retried, a
/// request that could not be built is not.
fn should_retry(err: &crate::client::Error, series: bool) -> bool {
    match err {
        crate::client::Error::Api(_) => series && err.is_already_exists(),
        crate::client::Error::Request(_) | crate::client::Error::Config(_) => false,
        _ => true,
    }
}

// ----- the recorder ---------------------------------------------------------

struct Inner {
    client: Client,
    reporting_controller: String,
    reporting_instance: String,
    cache: Mutex<SeriesCache>,
    series_window: Duration,
    _stop_maintenance: DropGuard,
}

impl Inner {
    fn cache(&self) -> MutexGuard<'_, SeriesCache> {
        // A panic while holding the lock leaves plain data behind; keep going.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Publishes `events.k8s.io/v1` events with client-go's aggregation. Cheap
/// to clone; clones share the aggregation cache.
///
/// ```no_run
/// # use kubeforge::events::Recorder;
/// # use kubeforge::k8s_openapi::api::apps::v1::Deployment;
/// # async fn demo(client: kubeforge::Client, deploy: Deployment) {
/// let recorder = Recorder::new(client, "memcached-controller", "memcached-controller-pod-0");
/// recorder
///     .event(&deploy)
///     .normal("Scaled", "Scale")
///     .note("scaled to 3 replicas")
///     .publish()
///     .await;
/// # }
/// ```
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Inner>,
    retry_interval: Duration,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("reporting_controller", &self.inner.reporting_controller)
            .field("reporting_instance", &self.inner.reporting_instance)
            .field("cached_events", &self.inner.cache().len())
            .finish()
    }
}

impl Recorder {
    /// A recorder reporting as `reporting_controller` (e.g.
    /// `example.com/memcached-controller`) from `reporting_instance` (e.g.
    /// the pod name). Inside a tokio runtime it starts a background task
    /// that ends series and rewrites open ones; the task stops when the
    /// last clone is dropped.
    pub fn new(
        client: Client,
        reporting_controller: impl Into<String>,
        reporting_instance: impl Into<String>,
    ) -> Self {
        Self::with_series_window(
            client,
            reporting_controller,
            reporting_instance,
            SERIES_WINDOW,
        )
    }

    /// [`Recorder::new`] with another series window than client-go's six
    /// minutes: repeats further apart than `window` are separate events,
    /// and the recorder holds at most about `window` of them. A window
    /// under a second is taken as one second, and one over a day as a day.
    pub fn with_series_window(
        client: Client,
        reporting_controller: impl Into<String>,
        reporting_instance: impl Into<String>,
        window: Duration,
    ) -> Self {
        let window = window.clamp(Duration::from_secs(1), MAX_SERIES_WINDOW);
        let stop = CancellationToken::new();
        let inner = Arc::new(Inner {
            client,
            reporting_controller: reporting_controller.into(),
            reporting_instance: reporting_instance.into(),
            cache: Mutex::new(SeriesCache::with_window(window)),
            series_window: window,
            _stop_maintenance: stop.clone().drop_guard(),
        });
        let recorder = Self {
            inner,
            retry_interval: RETRY_INTERVAL,
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(maintain(
                Arc::downgrade(&recorder.inner),
                stop,
                recorder.retry_interval,
                window,
            ));
        }
        recorder
    }

    /// Sets the pause between retries of transport failures (default
    /// [`RETRY_INTERVAL`]).
    pub fn with_retry_interval(mut self, interval: Duration) -> Self {
        self.retry_interval = interval;
        self
    }

    /// The reporting controller.
    pub fn reporting_controller(&self) -> &str {
        &self.inner.reporting_controller
    }

    /// The reporting instance.
    pub fn reporting_instance(&self) -> &str {
        &self.inner.reporting_instance
    }

    /// The series window (see [`Recorder::with_series_window`]).
    pub fn series_window(&self) -> Duration {
        self.inner.series_window
    }

    /// How many events the recorder holds for aggregation now.
    pub fn cached_events(&self) -> usize {
        self.inner.cache().len()
    }

    /// Publishes an event about `regarding`: its `type`, a CamelCase
    /// `reason` (why), an `action` (what was done or failed) and a
    /// human-readable `note` (cut to 1024 bytes; empty for none). Repeats
    /// are aggregated into a series. Never fails: problems are logged.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: &str,
    ) {
        self.publish_related(regarding, None, type_, reason, action, note)
            .await;
    }

    /// [`Recorder::publish`] with a secondary object the event also
    /// concerns (its `related` reference).
    pub async fn publish_related(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        type_: EventType,
        reason: &str,
        action: &str,
        note: &str,
    ) {
        let now = Timestamp::now();
        let Some(event) = self.make_event(regarding, related, type_, reason, action, note, now)
        else {
            return;
        };
        let write = self.inner.cache().observe(event, now);
        if let Some(write) = write {
            self.record(write).await;
        }
    }

    /// Writes the count of every open series now and empties the cache, so
    /// nothing is lost at shutdown.
    pub async fn flush(&self) {
        let series = self.inner.cache().drain_series();
        for event in series {
            self.record(Write::Series(event)).await;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn make_event(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        type_: EventType,
        reason: &str,
        action: &str,
        note: &str,
        now: Timestamp,
    ) -> Option<Event> {
        let Some(name) = regarding.name.as_deref().filter(|n| !n.is_empty()) else {
            tracing::error!(
                ?regarding,
                reason,
                "cannot record an event about an object without a name"
            );
            return None;
        };
        let namespace = regarding
            .namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .unwrap_or("default");
        Some(Event {
            metadata: ObjectMeta {
                name: Some(event_name(name, now)),
                namespace: Some(namespace.to_owned()),
                ..Default::default()
            },
            event_time: Some(micro(now)),
            series: None,
            reporting_controller: Some(self.inner.reporting_controller.clone()),
            reporting_instance: Some(self.inner.reporting_instance.clone()),
            action: Some(action.to_owned()),
            reason: Some(reason.to_owned()),
            regarding: Some(regarding.clone()),
            related: related.cloned(),
            note: (!note.is_empty()).then(|| truncate_note(note)),
            type_: Some(type_.as_str().to_owned()),
            ..Default::default()
        })
    }

    /// Sends `write` once; on a retryable failure keeps trying in the
    /// background so the caller is not held up.
    async fn record(&self, write: Write) {
        if let Err(retry) = attempt(&self.inner.client, &write).await {
            if retry {
                let client = self.inner.client.clone();
                let interval = self.retry_interval;
                tokio::spawn(async move {
                    for _ in 1..MAX_TRIES {
                        tokio::time::sleep(jitter(interval)).await;
                        match attempt(&client, &write).await {
                            Ok(()) | Err(false) => return,
                            Err(true) => {}
                        }
                    }
                    tracing::error!(
                        event = write.event().metadata.name.as_deref().unwrap_or(""),
                        "unable to write event (retry limit exceeded)"
                    );
                });
            }
        }
    }
}

/// `<name>.<hex nanoseconds>`, the object name cut so the result stays a
/// valid object name length.
fn event_name(regarding: &str, now: Timestamp) -> String {
    let suffix = format!(".{:x}", now.as_nanosecond().max(0));
    let mut end = regarding
        .len()
        .min(MAX_NAME_LENGTH.saturating_sub(suffix.len()));
    while !regarding.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{suffix}", &regarding[..end])
}

/// `d` plus up to 25% (client-go's `wait.Jitter(d, 0.25)`).
fn jitter(d: Duration) -> Duration {
    d + d.mul_f64(0.25 * fastrand::f64())
}

/// One write. `Err(true)` means try again later, `Err(false)` give up.
async fn attempt(client: &Client, write: &Write) -> Result<(), bool> {
    let event = write.event();
    let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
    let name = event.metadata.name.as_deref().unwrap_or("");
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let is_series = matches!(write, Write::Series(_));

    let result = match write {
        Write::Create(event) => api.create(&PostParams::default(), event).await,
        Write::Series(event) => {
            let patch = serde_json::json!({ "series": event.series });
            match api
                .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                // The first occurrence is gone (expired or never written):
                // create the event with its series.
                Err(e) if e.is_not_found() => {
                    let mut fresh = event.clone();
                    fresh.metadata.resource_version = None;
                    api.create(&PostParams::default(), &fresh).await
                }
                other => other,
            }
        }
    };
    match result {
        Ok(_) => Ok(()),
        Err(err) => {
            let retry = should_retry(&err, is_series);
            if retry {
                tracing::warn!(event = name, namespace, error = %err, "unable to write event (will retry)");
            } else if err.is_already_exists() {
                tracing::debug!(event = name, namespace, error = %err, "server rejected event (will not retry)");
            } else {
                tracing::error!(event = name, namespace, error = %err, "server rejected event (will not retry)");
            }
            Err(retry)
        }
    }
}

/// Ends series, six times per window, and rewrites open ones on client-go's
/// schedule until the recorder is dropped.
async fn maintain(
    inner: std::sync::Weak<Inner>,
    stop: CancellationToken,
    retry: Duration,
    window: Duration,
) {
    let sweep_every = window / 6;
    let start = tokio::time::Instant::now();
    let mut finish = tokio::time::interval_at(start + sweep_every, sweep_every);
    let mut refresh = tokio::time::interval_at(start + REFRESH_TIME, REFRESH_TIME);
    loop {
        let finishing = tokio::select! {
            _ = stop.cancelled() => return,
            _ = finish.tick() => true,
            _ = refresh.tick() => false,
        };
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let recorder = Recorder {
            inner,
            retry_interval: retry,
        };
        if finishing {
            let due = recorder.inner.cache().due(Timestamp::now());
            for (key, event) in due.finished {
                recorder.record(Write::Series(event.clone())).await;
                recorder.inner.cache().remove_if_unchanged(&key, &event);
            }
        } else {
            let open = recorder.inner.cache().open_series();
            for event in open {
                recorder.record(Write::Series(event)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::series::EventKey;
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn reference(name: &str, rv: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("apps/v1".into()),
            kind: Some("Deployment".into()),
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some("u1".into()),
            resource_version: Some(rv.into()),
            field_path: None,
        }
    }

    fn event(reason: &str, regarding: ObjectReference, at: Timestamp) -> Event {
        Event {
            metadata: ObjectMeta {
                name: Some(event_name(regarding.name.as_deref().unwrap(), at)),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            event_time: Some(MicroTime(at)),
            reporting_controller: Some("ctrl".into()),
            reporting_instance: Some("ctrl-0".into()),
            action: Some("Reconcile".into()),
            reason: Some(reason.into()),
            regarding: Some(regarding),
            note: Some("n".into()),
            type_: Some("Normal".into()),
            ..Default::default()
        }
    }

    #[test]
    fn first_occurrence_is_created_second_starts_a_series_later_ones_are_cached() {
        // client-go eventseries_test.go: the second isomorphic event patches
        // a series of count 2; further ones only update the cache.
        let mut cache = SeriesCache::new();
        let first = event("Scaled", reference("web", "1"), t(0));
        assert_eq!(
            cache.observe(first.clone(), t(0)),
            Some(Write::Create(first.clone()))
        );

        let Some(Write::Series(series)) =
            cache.observe(event("Scaled", reference("web", "1"), t(5)), t(5))
        else {
            panic!("expected a series write");
        };
        // The series is written onto the first event (same name, same note).
        assert_eq!(series.metadata.name, first.metadata.name);
        let s = series.series.as_ref().unwrap();
        assert_eq!((s.count, &s.last_observed_time), (2, &MicroTime(t(5))));

        for (i, at) in [(3, 9), (4, 12)] {
            assert_eq!(
                cache.observe(event("Scaled", reference("web", "1"), t(at)), t(at)),
                None
            );
            let open = cache.open_series();
            let s = open[0].series.as_ref().unwrap();
            assert_eq!((s.count, &s.last_observed_time), (i, &MicroTime(t(at))));
        }
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn the_note_is_not_part_of_the_key() {
        let mut cache = SeriesCache::new();
        let mut a = event("Failed", reference("web", "1"), t(0));
        a.note = Some("first".into());
        let mut b = event("Failed", reference("web", "1"), t(1));
        b.note = Some("second".into());
        assert_eq!(EventKey::of(&a), EventKey::of(&b));
        cache.observe(a, t(0));
        let Some(Write::Series(s)) = cache.observe(b, t(1)) else {
            panic!("expected a series");
        };
        assert_eq!(s.note.as_deref(), Some("first"));
    }

    #[test]
    fn every_key_field_separates_events() {
        let base = event("Scaled", reference("web", "1"), t(0));
        type Change = Box<dyn Fn(&mut Event)>;
        let variants: Vec<Change> = vec![
            Box::new(|e| e.type_ = Some("Warning".into())),
            Box::new(|e| e.action = Some("Other".into())),
            Box::new(|e| e.reason = Some("Other".into())),
            Box::new(|e| e.reporting_controller = Some("other".into())),
            Box::new(|e| e.reporting_instance = Some("other".into())),
            Box::new(|e| e.regarding = Some(reference("db", "1"))),
            // A new resourceVersion of the same object is another event,
            // as with client-go's GetReference.
            Box::new(|e| e.regarding = Some(reference("web", "2"))),
            Box::new(|e| {
                if let Some(r) = e.regarding.as_mut() {
                    r.field_path = Some("spec.containers{a}".into())
                }
            }),
            Box::new(|e| e.related = Some(reference("rs", "1"))),
        ];
        for (i, change) in variants.iter().enumerate() {
            let mut other = base.clone();
            change(&mut other);
            assert_ne!(EventKey::of(&base), EventKey::of(&other), "variant {i}");
            let mut cache = SeriesCache::new();
            cache.observe(base.clone(), t(0));
            assert!(
                matches!(cache.observe(other, t(1)), Some(Write::Create(_))),
                "variant {i}"
            );
            assert_eq!(cache.len(), 2);
        }
        // Absent and empty strings are the same key, as Go's zero values.
        let mut empty_related = base.clone();
        empty_related.related = Some(ObjectReference::default());
        assert_eq!(EventKey::of(&base), EventKey::of(&empty_related));
    }

    #[test]
    fn singletons_are_forgotten_after_the_finish_time() {
        let mut cache = SeriesCache::new();
        cache.observe(event("A", reference("web", "1"), t(0)), t(0));
        let due = cache.due(t(6 * 60));
        assert_eq!((due.finished.len(), due.forgotten), (0, 0));
        let due = cache.due(t(6 * 60 + 1));
        assert_eq!((due.finished.len(), due.forgotten), (0, 1));
        assert!(cache.is_empty());
        // A repeat now starts over with a new event.
        assert!(matches!(
            cache.observe(event("A", reference("web", "1"), t(400)), t(400)),
            Some(Write::Create(_))
        ));
    }

    #[test]
    fn quiet_series_finish_with_a_final_write() {
        let mut cache = SeriesCache::new();
        for at in [0, 10, 20, 30] {
            cache.observe(event("A", reference("web", "1"), t(at)), t(at));
        }
        // Still active 6 minutes after the first, but not after the last.
        assert!(cache.due(t(6 * 60 + 5)).finished.is_empty());
        let due = cache.due(t(30 + 6 * 60 + 1));
        assert_eq!(due.finished.len(), 1);
        let (key, final_write) = &due.finished[0];
        assert_eq!(final_write.series.as_ref().unwrap().count, 4);
        // Kept until written, then removed.
        assert_eq!(cache.len(), 1);
        assert!(cache.remove_if_unchanged(key, final_write));
        assert!(cache.is_empty());
    }

    #[test]
    fn a_repeat_during_the_final_write_keeps_the_series_open() {
        let mut cache = SeriesCache::new();
        for at in [0, 1] {
            cache.observe(event("A", reference("web", "1"), t(at)), t(at));
        }
        let due = cache.due(t(1000));
        let (key, written) = &due.finished[0];
        cache.observe(event("A", reference("web", "1"), t(1001)), t(1001));
        assert!(!cache.remove_if_unchanged(key, written));
        assert_eq!(cache.open_series()[0].series.as_ref().unwrap().count, 3);
    }

    #[test]
    fn drain_returns_only_series() {
        let mut cache = SeriesCache::new();
        cache.observe(event("A", reference("web", "1"), t(0)), t(0));
        cache.observe(event("B", reference("web", "1"), t(0)), t(0));
        cache.observe(event("B", reference("web", "1"), t(1)), t(1));
        let drained = cache.drain_series();
        assert_eq!(drained.len(), 1);
        assert_eq!(drained[0].reason.as_deref(), Some("B"));
        assert!(cache.is_empty());
    }

    #[test]
    fn names_are_the_object_name_and_hex_nanoseconds() {
        let at = Timestamp::from_nanosecond(1_700_000_000_123_456_789).unwrap();
        assert_eq!(event_name("web", at), "web.17979cfe3d85cd15");
        let long = "a".repeat(253);
        let name = event_name(&long, at);
        assert_eq!(name.len(), 253);
        assert!(name.ends_with(".17979cfe3d85cd15"));
    }

    #[test]
    fn notes_are_cut_to_1024_bytes_on_a_char_boundary() {
        assert_eq!(truncate_note("short"), "short");
        let exact = "x".repeat(1024);
        assert_eq!(truncate_note(&exact), exact);
        let cut = truncate_note(&"x".repeat(5000));
        assert_eq!(cut.len(), 1024);
        assert!(cut.ends_with(" ..."));
        let multibyte = truncate_note(&"é".repeat(1000));
        assert!(multibyte.len() <= 1024);
        assert!(multibyte.ends_with(" ..."));
    }

    #[test]
    fn references_carry_the_resource_version_like_get_reference() {
        let mut d = Deployment::default();
        d.metadata.name = Some("web".into());
        d.metadata.namespace = Some("ns".into());
        d.metadata.uid = Some("u".into());
        d.metadata.resource_version = Some("42".into());
        let r = object_reference(&d, &());
        assert_eq!(r.api_version.as_deref(), Some("apps/v1"));
        assert_eq!(r.kind.as_deref(), Some("Deployment"));
        assert_eq!(r.resource_version.as_deref(), Some("42"));
        assert_eq!(r.namespace.as_deref(), Some("ns"));
        let mut role = ClusterRole::default();
        role.metadata.name = Some("r".into());
        let r = object_reference(&role, &());
        assert_eq!(r.namespace, None);
        assert_eq!(
            r.api_version.as_deref(),
            Some("rbac.authorization.k8s.io/v1")
        );
    }

    #[test]
    fn retry_classification_follows_record_event() {
        let api = |reason: &str, code: u16| {
            crate::Error::Api(Box::new(kube_core::Status {
                status: Some(kube_core::response::StatusSummary::Failure),
                code,
                message: String::new(),
                metadata: None,
                reason: reason.into(),
                details: None,
            }))
        };
        assert!(!should_retry(&api("Invalid", 422), false));
        assert!(!should_retry(&api("InternalError", 500), true));
        assert!(!should_retry(&api("AlreadyExists", 409), false));
        assert!(should_retry(&api("AlreadyExists", 409), true));
        let transport = crate::Error::Transport {
            url: "https://x".into(),
            source: "connection refused".into(),
        };
        assert!(should_retry(&transport, false));
        let timeout = crate::Error::Timeout {
            url: "https://x".into(),
            timeout: Duration::from_secs(1),
        };
        assert!(should_retry(&timeout, true));
        let request = crate::Error::Request(kube_core::request::Error::Validation("bad".into()));
        assert!(!should_retry(&request, false));
    }

    #[test]
    fn jitter_stays_within_a_quarter() {
        for _ in 0..100 {
            let j = jitter(Duration::from_secs(10));
            assert!(j >= Duration::from_secs(10) && j <= Duration::from_millis(12_500));
        }
    }
}
