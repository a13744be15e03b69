//! [`LeaseLock`]: the three operations leader election needs from the place
//! the record is kept (get, create, update with optimistic concurrency), and
//! [`ApiLeaseLock`], which keeps it in a `coordination.k8s.io/v1` Lease
//! through the client layer, as client-go's `resourcelock.LeaseLock` does.
//!
//! A lock may also follow the record as it changes ([`LeaseLock::watch`]);
//! [`ApiLeaseLock`] does, with a watch on its one Lease, so that a waiting
//! candidate sees a renewal or a release when it happens rather than on its
//! next poll.

use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::StreamExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::params::{ListParams, PostParams, WatchParams};
use kube_core::watch::WatchEvent;
use tokio::sync::watch;

use super::record::LeaderElectionRecord;
use crate::client::{Api, Client};

/// The record each time it changes (`None`: the lease was deleted), as a
/// lock that can follow it reports it. Intermediate changes may be
/// skipped; the stream ends when the lock can no longer follow.
pub type RecordChanges = BoxStream<'static, Option<LeaderElectionRecord>>;

/// How long following a Lease waits before watching again after a failure.
const REWATCH_DELAY: Duration = Duration::from_secs(1);

/// Why a lock operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The lease changed since this lock last read or wrote it (409
    /// Conflict on a stale `resourceVersion`): another candidate won this
    /// round.
    #[error("the lease was modified by someone else (conflict)")]
    Conflict,

    /// A create found the lease already there (another candidate created it
    /// first).
    #[error("the lease already exists")]
    AlreadyExists,

    /// `update` was called before `get` or `create` gave the lock an object
    /// to update.
    #[error("the lease has not been read or created yet")]
    NotInitialized,

    /// The API server refused or could not be reached.
    #[error(transparent)]
    Api(crate::Error),

    /// Any other failure of a custom lock.
    #[error("{0}")]
    Other(String),
}

impl From<crate::Error> for LockError {
    fn from(e: crate::Error) -> Self {
        if e.is_already_exists() {
            LockError::AlreadyExists
        } else if e.is_conflict() {
            LockError::Conflict
        } else {
            LockError::Api(e)
        }
    }
}

/// Where a leader-election record lives.
///
/// A lock caches the object it last read or wrote, so that
/// [`update`](LeaseLock::update) is conditional on it (by `resourceVersion`)
/// and fails with [`LockError::Conflict`] if someone else wrote in between.
/// The trait is object safe: the manager can hold a `Box<dyn LeaseLock>`.
pub trait LeaseLock: Send + 'static {
    /// Reads the record: `Ok(None)` when the lease does not exist.
    fn get(&mut self) -> BoxFuture<'_, Result<Option<LeaderElectionRecord>, LockError>>;

    /// Creates the lease holding `record`.
    fn create<'a>(
        &'a mut self,
        record: &'a LeaderElectionRecord,
    ) -> BoxFuture<'a, Result<(), LockError>>;

    /// Replaces the record in the lease last read or written, failing with
    /// [`LockError::Conflict`] if it changed since.
    fn update<'a>(
        &'a mut self,
        record: &'a LeaderElectionRecord,
    ) -> BoxFuture<'a, Result<(), LockError>>;

    /// A short description for logs, e.g. `namespace/name`.
    fn describe(&self) -> String;

    /// Follows the record as it changes, when this lock can. A candidate
    /// waiting for the lease then notes each change when it happens (its
    /// wait for expiry counts from there) and tries at once when the
    /// lease is released; without it (`None`, the default) changes are
    /// seen only on the next poll, up to 2.2 retry periods later.
    fn watch(&self) -> Option<RecordChanges> {
        None
    }
}

impl LeaseLock for Box<dyn LeaseLock> {
    fn get(&mut self) -> BoxFuture<'_, Result<Option<LeaderElectionRecord>, LockError>> {
        (**self).get()
    }

    fn create<'a>(
        &'a mut self,
        record: &'a LeaderElectionRecord,
    ) -> BoxFuture<'a, Result<(), LockError>> {
        (**self).create(record)
    }

    fn update<'a>(
        &'a mut self,
        record: &'a LeaderElectionRecord,
    ) -> BoxFuture<'a, Result<(), LockError>> {
        (**self).update(record)
    }

    fn describe(&self) -> String {
        (**self).describe()
    }

    fn watch(&self) -> Option<RecordChanges> {
        (**self).watch()
    }
}

/// A [`LeaseLock`] on a `coordination.k8s.io/v1` Lease
/// (`/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}`).
///
/// Needs RBAC `get`, `create` and `update` on `leases` in the namespace,
/// and `list` and `watch` on its Lease to follow it (a watch pinned by a
/// `metadata.name` field selector; without them a candidate polls only).
pub struct ApiLeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
    /// The Lease last read or written; its `resourceVersion` makes the next
    /// update conditional.
    cached: Option<Lease>,
}

impl std::fmt::Debug for ApiLeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiLeaseLock")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ApiLeaseLock {
    /// A lock on the Lease `name` in `namespace`.
    pub fn new(client: Client, namespace: &str, name: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            cached: None,
        }
    }

    /// The Lease's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The Lease's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    async fn get_record(&mut self) -> Result<Option<LeaderElectionRecord>, LockError> {
        let Some(lease) = self.api.get_opt(&self.name).await? else {
            return Ok(None);
        };
        let record = lease
            .spec
            .as_ref()
            .map(LeaderElectionRecord::from_spec)
            .unwrap_or_default();
        self.cached = Some(lease);
        Ok(Some(record))
    }

    async fn create_record(&mut self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(record.to_spec()),
        };
        let created = self.api.create(&PostParams::default(), &lease).await?;
        self.cached = Some(created);
        Ok(())
    }

    async fn update_record(&mut self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        let Some(cached) = &self.cached else {
            return Err(LockError::NotInitialized);
        };
        // The cached object's resourceVersion makes this PUT conditional: a
        // write by anyone else since our read answers 409.
        let mut lease = cached.clone();
        lease.spec = Some(record.to_spec());
        let updated = self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await?;
        self.cached = Some(updated);
        Ok(())
    }
}

impl LeaseLock for ApiLeaseLock {
    fn get(&mut self) -> BoxFuture<'_, Result<Option<LeaderElectionRecord>, LockError>> {
        Box::pin(self.get_record())
    }

    fn create<'a>(
        &'a mut self,
        record: &'a LeaderElectionRecord,
    ) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(self.create_record(record))
    }

    fn update<'a>(
        &'a mut self,
        record: &'a LeaderElectionRecord,
    ) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(self.update_record(record))
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn watch(&self) -> Option<RecordChanges> {
        let (changes, follower) = watch::channel(None);
        let api = self.api.clone();
        let name = self.name.clone();
        tokio::spawn(async move {
            // Ends when the candidate drops the stream.
            tokio::select! {
                () = changes.closed() => {}
                () = follow_lease(&api, &name, &changes) => {}
            }
        });
        Some(changes_of(follower))
    }
}

/// A stream of the values a watch channel takes after the first; ends when
/// the sender goes.
pub(crate) fn changes_of(receiver: watch::Receiver<Option<LeaderElectionRecord>>) -> RecordChanges {
    futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.changed().await.ok()?;
        let record = receiver.borrow_and_update().clone();
        Some((record, receiver))
    })
    .boxed()
}

fn record_of(lease: &Lease) -> LeaderElectionRecord {
    lease
        .spec
        .as_ref()
        .map(LeaderElectionRecord::from_spec)
        .unwrap_or_default()
}

/// Lists the Lease `name`, then watches it from the list's
/// resourceVersion, sending every change; starts over after a failure or
/// an expired resourceVersion. Never returns.
async fn follow_lease(
    api: &Api<Lease>,
    name: &str,
    changes: &watch::Sender<Option<LeaderElectionRecord>>,
) {
    let selector = format!("metadata.name={name}");
    let list = ListParams::default().fields(&selector);
    let params = WatchParams::default().fields(&selector);
    loop {
        let leases = match api.list(&list).await {
            Ok(leases) => leases,
            Err(e) => {
                tracing::debug!(error = %e, "cannot list the lease to follow it");
                tokio::time::sleep(REWATCH_DELAY).await;
                continue;
            }
        };
        let now = leases.items.first().map(record_of);
        if *changes.borrow() != now {
            changes.send_replace(now);
        }
        let mut from = leases.metadata.resource_version.unwrap_or_default();
        // Watch again from the last resourceVersion seen after a closed
        // watch; list again after an error event (410 Expired) or when
        // the watch cannot be opened.
        while let Ok(stream) = api.watch(&params, &from).await {
            let mut stream = std::pin::pin!(stream);
            let mut relist = false;
            while let Some(Ok(event)) = stream.next().await {
                match event {
                    WatchEvent::Added(lease) | WatchEvent::Modified(lease) => {
                        from = lease.metadata.resource_version.clone().unwrap_or_default();
                        changes.send_replace(Some(record_of(&lease)));
                    }
                    WatchEvent::Deleted(lease) => {
                        from = lease.metadata.resource_version.clone().unwrap_or_default();
                        changes.send_replace(None);
                    }
                    WatchEvent::Bookmark(mark) => from = mark.metadata.resource_version,
                    WatchEvent::Error(_) => {
                        relist = true;
                        break;
                    }
                }
            }
            if relist {
                break;
            }
            tokio::time::sleep(REWATCH_DELAY).await;
        }
        tokio::time::sleep(REWATCH_DELAY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_core::response::StatusSummary;
    use kube_core::Status;

    fn api_error(code: u16, reason: &str) -> crate::Error {
        crate::Error::Api(Box::new(Status {
            status: Some(StatusSummary::Failure),
            code,
            message: String::new(),
            metadata: None,
            reason: reason.to_owned(),
            details: None,
        }))
    }

    #[test]
    fn api_errors_map_to_lock_errors() {
        assert!(matches!(
            LockError::from(api_error(409, "Conflict")),
            LockError::Conflict
        ));
        assert!(matches!(
            LockError::from(api_error(409, "AlreadyExists")),
            LockError::AlreadyExists
        ));
        assert!(matches!(
            LockError::from(api_error(403, "Forbidden")),
            LockError::Api(_)
        ));
    }

    #[tokio::test]
    async fn update_before_get_is_refused_without_a_request() {
        let mut config = crate::Config::new("https://127.0.0.1:1".parse().unwrap());
        config.accept_invalid_certs = true;
        let client = Client::new(config).unwrap();
        let mut lock = ApiLeaseLock::new(client, "ns", "lease");
        assert_eq!(lock.describe(), "ns/lease");
        let err = lock
            .update(&LeaderElectionRecord::default())
            .await
            .unwrap_err();
        assert!(matches!(err, LockError::NotInitialized));
    }
}
