//! [`LeaseLock`]: the three operations leader election needs from the place
//! the record is kept (get, create, update with optimistic concurrency), and
//! [`ApiLeaseLock`], which keeps it in a `coordination.k8s.io/v1` Lease
//! through the client layer, as client-go's `resourcelock.LeaseLock` does.

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::params::PostParams;

use super::record::LeaderElectionRecord;
use crate::client::{Api, Client};

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
}

/// A [`LeaseLock`] on a `coordination.k8s.io/v1` Lease
/// (`/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}`).
///
/// Needs RBAC `get`, `create` and `update` on `leases` in the namespace.
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
