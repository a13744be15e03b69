//! The aggregation state machine behind the [`Recorder`](super::Recorder):
//! client-go's event cache (`tools/events` `eventBroadcasterImpl`), as a
//! pure function of the events seen and the clock. The recorder adds the
//! HTTP calls.

use std::collections::HashMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

/// How long a series stays open without repeats, and a singleton is kept
/// for a repeat (client-go `finishTime`); the default series window.
pub(crate) const FINISH_TIME: Duration = Duration::from_secs(6 * 60);

/// The fields of an `ObjectReference`, with absent strings as `""` (Go's
/// zero value), so references compare as client-go's struct equality does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct RefKey {
    api_version: String,
    field_path: String,
    kind: String,
    name: String,
    namespace: String,
    resource_version: String,
    uid: String,
}

impl RefKey {
    fn of(r: Option<&ObjectReference>) -> Self {
        let Some(r) = r else {
            return Self::default();
        };
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        Self {
            api_version: s(&r.api_version),
            field_path: s(&r.field_path),
            kind: s(&r.kind),
            name: s(&r.name),
            namespace: s(&r.namespace),
            resource_version: s(&r.resource_version),
            uid: s(&r.uid),
        }
    }
}

/// client-go's `eventKey`: what makes two events the same.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct EventKey {
    type_: String,
    action: String,
    reason: String,
    reporting_controller: String,
    reporting_instance: String,
    regarding: RefKey,
    related: RefKey,
}

impl EventKey {
    /// The key of `event` (client-go's `getKey`).
    pub(crate) fn of(event: &Event) -> Self {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        Self {
            type_: s(&event.type_),
            action: s(&event.action),
            reason: s(&event.reason),
            reporting_controller: s(&event.reporting_controller),
            reporting_instance: s(&event.reporting_instance),
            regarding: RefKey::of(event.regarding.as_ref()),
            related: RefKey::of(event.related.as_ref()),
        }
    }
}

/// A write the recorder must send.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Write {
    /// Create this event (a first occurrence).
    Create(Event),
    /// Write this event's `series` (patch; create it if it is gone).
    Series(Event),
}

impl Write {
    /// The event to write.
    pub(crate) fn event(&self) -> &Event {
        match self {
            Write::Create(e) | Write::Series(e) => e,
        }
    }
}

/// What is due when the clock says `now` ([`SeriesCache::due`]).
#[derive(Debug, Default)]
pub(crate) struct Due {
    /// Series with no repeat for the window: write the final count,
    /// then [`SeriesCache::remove_if_unchanged`].
    pub(crate) finished: Vec<(EventKey, Event)>,
    /// Singletons older than the window, already forgotten.
    pub(crate) forgotten: usize,
}

/// client-go's event cache: the events seen within the series window
/// ([`FINISH_TIME`] by default), keyed by [`EventKey`], each holding the
/// first occurrence and its series.
///
/// Keys and events are boxed so that the table's slots are two pointers:
/// inline, a slot held both (about 1.5 KB), and a table whose entries come
/// and go doubles once the removed slots run out even at half its live
/// size, so a few hundred events held 1.5 MB of mostly empty slots.
#[derive(Debug)]
pub(crate) struct SeriesCache {
    entries: HashMap<Box<EventKey>, Box<Event>>,
    window: Duration,
}

pub(crate) fn micro(t: Timestamp) -> MicroTime {
    MicroTime(t)
}

fn older_than(t: &MicroTime, now: Timestamp, age: Duration) -> bool {
    // A time that cannot be subtracted is far in the past: expired.
    match now.checked_sub(age) {
        Ok(cutoff) => t.0 < cutoff,
        Err(_) => false,
    }
}

impl SeriesCache {
    /// An empty cache with client-go's six-minute window.
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::with_window(FINISH_TIME)
    }

    /// An empty cache that ends series, and forgets singletons, `window`
    /// after their last occurrence.
    pub(crate) fn with_window(window: Duration) -> Self {
        Self {
            entries: HashMap::new(),
            window,
        }
    }

    /// Records one occurrence of `event` at `now` and says what to write:
    /// a create for a first occurrence, a series write for the second, and
    /// nothing for later ones (client-go's `recordToSink`).
    pub(crate) fn observe(&mut self, event: Event, now: Timestamp) -> Option<Write> {
        let key = EventKey::of(&event);
        match self.entries.get_mut(&key) {
            None => {
                self.entries.insert(Box::new(key), Box::new(event.clone()));
                Some(Write::Create(event))
            }
            Some(cached) => match cached.series.as_mut() {
                Some(series) => {
                    series.count = series.count.saturating_add(1);
                    series.last_observed_time = micro(now);
                    None
                }
                None => {
                    cached.series = Some(EventSeries {
                        count: 2,
                        last_observed_time: micro(now),
                    });
                    Some(Write::Series(Event::clone(cached)))
                }
            },
        }
    }

    /// Ends what is over at `now` (client-go's `finishSeries`): forgets
    /// singletons older than the window and returns the series without a
    /// repeat for that long, which stay cached until their final write.
    pub(crate) fn due(&mut self, now: Timestamp) -> Due {
        let mut due = Due::default();
        let window = self.window;
        self.entries.retain(|key, event| match &event.series {
            Some(series) => {
                if older_than(&series.last_observed_time, now, window) {
                    due.finished
                        .push((EventKey::clone(key), Event::clone(event)));
                }
                true
            }
            None => {
                let expired = event
                    .event_time
                    .as_ref()
                    .is_none_or(|t| older_than(t, now, window));
                if expired {
                    due.forgotten += 1;
                }
                !expired
            }
        });
        due
    }

    /// Every open series, for the periodic rewrite (client-go's
    /// `refreshExistingEventSeries`).
    pub(crate) fn open_series(&self) -> Vec<Event> {
        self.entries
            .values()
            .filter(|e| e.series.is_some())
            .map(|e| Event::clone(e))
            .collect()
    }

    /// Removes `key` if its series has not moved since `written` was taken
    /// from it; a repeat that arrived during the write keeps it open.
    pub(crate) fn remove_if_unchanged(&mut self, key: &EventKey, written: &Event) -> bool {
        let unchanged = self
            .entries
            .get(key)
            .is_some_and(|cached| cached.series == written.series);
        if unchanged {
            self.entries.remove(key);
        }
        unchanged
    }

    /// Removes everything, returning the open series (for a final flush).
    pub(crate) fn drain_series(&mut self) -> Vec<Event> {
        self.entries
            .drain()
            .filter_map(|(_, e)| e.series.is_some().then_some(*e))
            .collect()
    }

    /// How many events are cached.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
