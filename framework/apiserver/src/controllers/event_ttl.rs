//! Events expire (kube-apiserver's `--event-ttl`, one hour by default): an
//! Event not written for the TTL is deleted, as etcd drops the key whose
//! lease kube-apiserver attached at the Event's last write. Without it
//! every Event a long-running operator records stays forever.
//!
//! The time of an Event's last write is the server's: a sweep notes when
//! it first sees each Event at its current resourceVersion (the times in
//! the Event come from its reporter's clock and are not trusted), so an
//! Event goes between one TTL and one TTL plus a sweep period after its
//! last write. The delete is conditional on that resourceVersion, so an
//! Event written again meanwhile stays. Core and `events.k8s.io` Events
//! share one storage; both expire.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::write::MANAGER;
use crate::objects::{self, DeleteOpts};
use crate::registry::state::Shared;
use crate::storage::{Filter, ObjKey};

/// kube-apiserver's default `--event-ttl`.
pub(crate) const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(3600);

/// How often Events are swept for a given TTL: a tenth of it, between
/// 50 ms and a minute.
pub(crate) fn sweep_period(ttl: Duration) -> Duration {
    (ttl / 10).clamp(Duration::from_millis(50), Duration::from_secs(60))
}

/// When each Event was first seen at its current resourceVersion.
#[derive(Debug, Default)]
struct LastWrites {
    seen: HashMap<ObjKey, (u64, Instant)>,
}

impl LastWrites {
    /// Notes the Events stored now (`(key, resourceVersion)`), forgets
    /// those gone, and returns the ones unchanged for `ttl` at `now`.
    fn sweep(
        &mut self,
        stored: impl IntoIterator<Item = (ObjKey, u64)>,
        now: Instant,
        ttl: Duration,
    ) -> Vec<(ObjKey, u64)> {
        let mut next = HashMap::new();
        let mut expired = Vec::new();
        for (key, rv) in stored {
            let since = match self.seen.get(&key) {
                Some(&(seen_rv, at)) if seen_rv == rv => at,
                _ => now,
            };
            if now.saturating_duration_since(since) >= ttl {
                expired.push((key.clone(), rv));
            }
            next.insert(key, (rv, since));
        }
        self.seen = next;
        expired
    }
}

/// Deletes expired Events every sweep period until `cancel`.
pub(crate) async fn run(shared: Arc<Shared>, ttl: Duration, cancel: CancellationToken) {
    let mut writes = LastWrites::default();
    let mut tick = tokio::time::interval(sweep_period(ttl));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        sweep(&shared, &mut writes, ttl);
    }
}

fn sweep(shared: &Shared, writes: &mut LastWrites, ttl: Duration) {
    let Some(def) = shared.registry().get("", "v1", "events") else {
        return;
    };
    let stored: Vec<(ObjKey, u64)> = {
        let store = shared.storage.lock();
        match store.list(&def.key(), &Filter::default(), None, None, None) {
            Ok(page) => page
                .items
                .iter()
                .map(|obj| ((obj.namespace().to_owned(), obj.name().to_owned()), obj.rv))
                .collect(),
            Err(_) => return,
        }
    };
    for (key, rv) in writes.sweep(stored, Instant::now(), ttl) {
        let opts = DeleteOpts {
            rv: Some(rv),
            ..DeleteOpts::default()
        };
        // A 409 (written again since) or 404 (deleted) leaves it to the
        // next sweep.
        if let Err(e) = objects::delete(shared, &def, &key, &opts) {
            if e.code != 404 && e.code != 409 {
                tracing::debug!(manager = MANAGER, name = %key.1, error = %e.message, "could not expire an Event");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjKey {
        ("default".to_owned(), name.to_owned())
    }

    #[test]
    fn an_event_expires_a_ttl_after_the_sweep_that_first_saw_its_last_write() {
        let ttl = Duration::from_secs(60);
        let t0 = Instant::now();
        let mut writes = LastWrites::default();
        assert!(writes.sweep([(key("a"), 5)], t0, ttl).is_empty());
        let t = |s| t0 + Duration::from_secs(s);
        assert!(writes.sweep([(key("a"), 5)], t(59), ttl).is_empty());
        // Written again at 59 s: the wait starts over.
        assert!(writes.sweep([(key("a"), 9)], t(60), ttl).is_empty());
        assert!(writes.sweep([(key("a"), 9)], t(119), ttl).is_empty());
        assert_eq!(writes.sweep([(key("a"), 9)], t(120), ttl), [(key("a"), 9)]);
    }

    #[test]
    fn events_that_went_are_forgotten() {
        let ttl = Duration::from_secs(60);
        let t0 = Instant::now();
        let mut writes = LastWrites::default();
        writes.sweep([(key("a"), 1), (key("b"), 2)], t0, ttl);
        writes.sweep([(key("b"), 2)], t0 + Duration::from_secs(1), ttl);
        assert_eq!(writes.seen.len(), 1);
        // "a" back under the same name counts from now, not from t0.
        let later = t0 + Duration::from_secs(61);
        assert_eq!(
            writes.sweep([(key("a"), 7), (key("b"), 2)], later, ttl),
            [(key("b"), 2)]
        );
    }

    #[test]
    fn the_sweep_period_is_a_tenth_of_the_ttl_within_bounds() {
        assert_eq!(sweep_period(DEFAULT_EVENT_TTL), Duration::from_secs(60));
        assert_eq!(
            sweep_period(Duration::from_secs(10)),
            Duration::from_secs(1)
        );
        assert_eq!(
            sweep_period(Duration::from_millis(100)),
            Duration::from_millis(50)
        );
    }
}
