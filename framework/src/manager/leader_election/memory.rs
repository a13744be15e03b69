//! An in-memory [`LeaseLock`] that behaves like a Lease on an API server —
//! `resourceVersion` bumps on every write, a stale update is a conflict, a
//! second create finds the lease there — with fault injection (outages,
//! failures, latency), for tests and single-process demos.
//!
//! A lock made with [`MemoryLeaseLock::following`] also follows the record
//! ([`LeaseLock::watch`]), as [`ApiLeaseLock`](super::ApiLeaseLock) does
//! with a watch.
//!
//! Latency is split around the write: half before the store changes, half
//! after. A caller that gives up during the second half has changed the
//! lease without knowing it, as happens with a real server.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::watch;

use super::lock::{changes_of, LeaseLock, LockError, RecordChanges};
use super::record::LeaderElectionRecord;

/// Counts of the operations a [`MemoryLeaseStore`] served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryLeaseStats {
    /// Successful reads.
    pub gets: u64,
    /// Successful creates.
    pub creates: u64,
    /// Successful updates.
    pub updates: u64,
    /// Updates refused as conflicts.
    pub conflicts: u64,
    /// Operations failed by injected faults.
    pub injected_failures: u64,
}

#[derive(Debug, Default)]
struct State {
    /// The record and its resourceVersion.
    object: Option<(LeaderElectionRecord, u64)>,
    last_rv: u64,
    unavailable: bool,
    fail_next: u32,
    latency: Duration,
    stats: MemoryLeaseStats,
    /// Where changes go once a lock follows them.
    changes: Option<watch::Sender<Option<LeaderElectionRecord>>>,
}

impl State {
    /// Consumes an injected fault, if one applies.
    fn fault(&mut self) -> Result<(), LockError> {
        if self.unavailable {
            self.stats.injected_failures += 1;
            return Err(LockError::Other("lease store unavailable".into()));
        }
        if self.fail_next > 0 {
            self.fail_next -= 1;
            self.stats.injected_failures += 1;
            return Err(LockError::Other("injected failure".into()));
        }
        Ok(())
    }

    fn bump(&mut self) -> u64 {
        self.last_rv += 1;
        self.last_rv
    }

    /// Stores `object` and tells the locks that follow the record.
    fn set_object(&mut self, object: Option<(LeaderElectionRecord, u64)>) {
        if let Some(changes) = &self.changes {
            changes.send_replace(object.as_ref().map(|(r, _)| r.clone()));
        }
        self.object = object;
    }
}

/// One lease held in memory, shared by every [`MemoryLeaseLock`] made from
/// it. Cheap to clone; clones share the lease.
#[derive(Clone, Debug, Default)]
pub struct MemoryLeaseStore {
    state: Arc<Mutex<State>>,
}

impl MemoryLeaseStore {
    /// An empty store (the lease does not exist yet).
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A lock on this store's lease, with its own cached resourceVersion, as
    /// one candidate process would have. `name` appears in logs.
    pub fn lock(&self, name: &str) -> MemoryLeaseLock {
        MemoryLeaseLock {
            store: self.clone(),
            name: name.to_owned(),
            cached_rv: None,
            follows: false,
        }
    }

    /// The current record, if the lease exists.
    pub fn record(&self) -> Option<LeaderElectionRecord> {
        self.state().object.as_ref().map(|(r, _)| r.clone())
    }

    /// The current resourceVersion, if the lease exists.
    pub fn resource_version(&self) -> Option<String> {
        self.state().object.as_ref().map(|(_, rv)| rv.to_string())
    }

    /// Writes `record` as some other client would (bumps the
    /// resourceVersion, so cached copies become stale).
    pub fn set_record(&self, record: LeaderElectionRecord) {
        let mut state = self.state();
        let rv = state.bump();
        state.set_object(Some((record, rv)));
    }

    /// Deletes the lease.
    pub fn delete(&self) {
        self.state().set_object(None);
    }

    /// Makes every operation fail (`false`) or work again (`true`).
    pub fn set_available(&self, available: bool) {
        self.state().unavailable = !available;
    }

    /// Makes the next `n` operations fail.
    pub fn fail_next(&self, n: u32) {
        self.state().fail_next = n;
    }

    /// How long each operation takes (on tokio's clock).
    pub fn set_latency(&self, latency: Duration) {
        self.state().latency = latency;
    }

    /// What the store has served so far.
    pub fn stats(&self) -> MemoryLeaseStats {
        self.state().stats
    }

    fn half_latency(&self) -> Duration {
        self.state().latency / 2
    }
}

/// A [`LeaseLock`] on a [`MemoryLeaseStore`].
#[derive(Debug)]
pub struct MemoryLeaseLock {
    store: MemoryLeaseStore,
    name: String,
    cached_rv: Option<u64>,
    follows: bool,
}

impl MemoryLeaseLock {
    /// This lock, following the record as it changes
    /// ([`LeaseLock::watch`]); without it a candidate only polls.
    pub fn following(mut self) -> Self {
        self.follows = true;
        self
    }

    async fn delay(&self) {
        let d = self.store.half_latency();
        if !d.is_zero() {
            tokio::time::sleep(d).await;
        }
    }

    async fn do_get(&mut self) -> Result<Option<LeaderElectionRecord>, LockError> {
        self.delay().await;
        let result = {
            let mut state = self.store.state();
            state.fault()?;
            state.stats.gets += 1;
            match &state.object {
                Some((record, rv)) => {
                    self.cached_rv = Some(*rv);
                    Some(record.clone())
                }
                None => None,
            }
        };
        self.delay().await;
        Ok(result)
    }

    async fn do_create(&mut self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        self.delay().await;
        {
            let mut state = self.store.state();
            state.fault()?;
            if state.object.is_some() {
                return Err(LockError::AlreadyExists);
            }
            let rv = state.bump();
            state.set_object(Some((record.clone(), rv)));
            state.stats.creates += 1;
            self.cached_rv = Some(rv);
        }
        self.delay().await;
        Ok(())
    }

    async fn do_update(&mut self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        let Some(cached) = self.cached_rv else {
            return Err(LockError::NotInitialized);
        };
        self.delay().await;
        {
            let mut state = self.store.state();
            state.fault()?;
            match &state.object {
                None => return Err(LockError::Other("the lease does not exist".into())),
                Some((_, rv)) if *rv != cached => {
                    state.stats.conflicts += 1;
                    return Err(LockError::Conflict);
                }
                Some(_) => {}
            }
            let rv = state.bump();
            state.set_object(Some((record.clone(), rv)));
            state.stats.updates += 1;
            self.cached_rv = Some(rv);
        }
        self.delay().await;
        Ok(())
    }
}

impl LeaseLock for MemoryLeaseLock {
    fn get(&mut self) -> BoxFuture<'_, Result<Option<LeaderElectionRecord>, LockError>> {
        Box::pin(self.do_get())
    }

    fn create<'a>(
        &'a mut self,
        record: &'a LeaderElectionRecord,
    ) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(self.do_create(record))
    }

    fn update<'a>(
        &'a mut self,
        record: &'a LeaderElectionRecord,
    ) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(self.do_update(record))
    }

    fn describe(&self) -> String {
        format!("memory/{}", self.name)
    }

    fn watch(&self) -> Option<RecordChanges> {
        if !self.follows {
            return None;
        }
        let mut state = self.store.state();
        let current = state.object.as_ref().map(|(r, _)| r.clone());
        let receiver = match &state.changes {
            Some(changes) => changes.subscribe(),
            None => {
                let (changes, receiver) = watch::channel(current);
                state.changes = Some(changes);
                receiver
            }
        };
        Some(changes_of(receiver))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(id: &str) -> LeaderElectionRecord {
        LeaderElectionRecord {
            holder_identity: id.into(),
            lease_duration_seconds: 15,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn behaves_like_a_lease_on_an_api_server() {
        let store = MemoryLeaseStore::new();
        let mut a = store.lock("a");
        let mut b = store.lock("b");
        assert_eq!(a.get().await.unwrap(), None);
        assert!(matches!(
            a.update(&holder("a")).await,
            Err(LockError::NotInitialized)
        ));
        a.create(&holder("a")).await.unwrap();
        assert!(matches!(
            b.create(&holder("b")).await,
            Err(LockError::AlreadyExists)
        ));
        assert_eq!(b.get().await.unwrap(), Some(holder("a")));
        // a writes; b's cached resourceVersion is now stale.
        a.update(&holder("a")).await.unwrap();
        assert!(matches!(
            b.update(&holder("b")).await,
            Err(LockError::Conflict)
        ));
        b.get().await.unwrap();
        b.update(&holder("b")).await.unwrap();
        assert_eq!(store.record(), Some(holder("b")));
        assert_eq!(store.resource_version().as_deref(), Some("3"));
        let stats = store.stats();
        assert_eq!((stats.creates, stats.updates, stats.conflicts), (1, 2, 1));
    }

    #[tokio::test]
    async fn injected_faults_fail_operations() {
        let store = MemoryLeaseStore::new();
        let mut a = store.lock("a");
        store.fail_next(2);
        assert!(a.get().await.is_err());
        assert!(a.create(&holder("a")).await.is_err());
        a.create(&holder("a")).await.unwrap();
        store.set_available(false);
        assert!(a.get().await.is_err());
        store.set_available(true);
        assert!(a.get().await.is_ok());
        assert_eq!(store.stats().injected_failures, 3);
    }
}
