//! `Shared`: the state every request handler and every in-server controller
//! sees: the storage, the registry of served resources, the fault rules,
//! the OpenAPI document cache and the work queued for the controllers.
//! It sits below everything that takes it, so handlers, the write path and
//! the controllers all reach down to it and it reaches down only to the
//! engine modules it holds.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU32;
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use tokio::sync::{watch, Notify};

use crate::auth::audit::AuditLog;
use crate::auth::identities::AuthnState;
use crate::auth::rbac::RbacCache;
use crate::auth::AuthState;
use crate::machinery::faults::FaultRules;
use crate::registry::openapi_docs::OpenApiDocs;
use crate::registry::pod_logs::PodLogs;
use crate::registry::{Registry, ResKey, ResourceDef};
use crate::storage::{ObjKey, Storage, StoredObject};

/// Tunables of a server.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// Interval between watch bookmarks (kube-apiserver: about a minute).
    pub bookmark_interval: Duration,
    /// DefaultTolerationSeconds' seconds: on, as the simulated nodes'
    /// taint manager needs it, when the nodes are simulated.
    pub default_toleration_seconds: Option<i64>,
    /// Whether simulated kubelets run the pods (graceful pod deletion
    /// waits for them).
    pub kubelets: bool,
    /// kube-apiserver's `OwnerReferencesPermissionEnforcement` admission.
    pub owner_references_permission_enforcement: bool,
    /// How long an Event lives after its last write; forever when `None`.
    pub event_ttl: Option<Duration>,
    /// The `ShardedListAndWatch` feature gate: `shardSelector` on list and
    /// watch (KEP-5866); off, the parameter is ignored, as by a server
    /// without it.
    pub sharded_list_and_watch: bool,
}

/// State shared by requests and the controllers.
pub(crate) struct Shared {
    pub storage: Storage,
    pub(crate) registry: RwLock<Registry>,
    pub faults: FaultRules,
    /// The admin bearer token.
    pub(crate) token: String,
    /// `host:port` clients reach the server at.
    pub server_address: String,
    /// Bumped to end every open watch stream.
    pub close_watches: watch::Sender<u64>,
    /// Work for the in-server controllers, queued by the write path.
    pub controllers: ControllerQueue,
    pub options: Options,
    /// The next Service cluster IP.
    pub next_cluster_ip: AtomicU32,
    /// The `/openapi/v3` documents.
    pub openapi: OpenApiDocs,
    /// Users, the service-account signer and the client CA.
    pub authn: AuthnState,
    /// The RBAC authorizer's index.
    pub rbac: RbacCache,
    /// What each identity asked for and was allowed or denied.
    pub audit: AuditLog,
    /// The output of the containers the kubelet runs as processes.
    pub pod_logs: PodLogs,
}

impl Shared {
    pub fn registry(&self) -> RwLockReadGuard<'_, Registry> {
        self.registry.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn registry_mut(&self) -> RwLockWriteGuard<'_, Registry> {
        self.registry.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Constant-time comparison of a presented bearer token.
    pub fn token_matches(&self, presented: &str) -> bool {
        let want = self.token.as_bytes();
        let got = presented.as_bytes();
        if want.len() != got.len() {
            return false;
        }
        want.iter().zip(got).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

#[derive(Default)]
struct Pending {
    owners_gone: Vec<String>,
    /// Dependents given a reference to an object in another namespace:
    /// `(resource, key, owner uid)`.
    misplaced_owners: Vec<(ResKey, ObjKey, String)>,
    deleting: BTreeSet<(ResKey, ObjKey)>,
    new_namespaces: Vec<String>,
}

/// Work the write path queues for the in-server controllers (the garbage
/// collector, the namespace and CRD finalizers, the service-account
/// controller), and the signal that wakes them.
#[derive(Default)]
pub(crate) struct ControllerQueue {
    pending: Mutex<Pending>,
    wake: Notify,
}

impl ControllerQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the controllers (after any write).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Resolves at the next [`wake`](Self::wake) (or at once if one came
    /// since the last wait).
    pub async fn woken(&self) {
        self.wake.notified().await;
    }

    /// A namespace was created; it needs its `default` ServiceAccount.
    pub fn namespace_created(&self, name: &str) {
        self.lock().new_namespaces.push(name.to_owned());
    }

    /// The namespaces created since the last call.
    pub fn take_new_namespaces(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().new_namespaces)
    }

    /// An object got or kept a deletionTimestamp.
    pub fn mark_deleting(&self, def: &ResourceDef, obj: &StoredObject) {
        let key = (obj.namespace().to_owned(), obj.name().to_owned());
        self.lock().deleting.insert((def.key(), key));
    }

    /// An object was removed; its dependents need looking at.
    pub fn owner_gone(&self, uid: &str) {
        if !uid.is_empty() {
            self.lock().owners_gone.push(uid.to_owned());
        }
    }

    /// `key` was given a reference to `uid`, an object in another
    /// namespace: the collector records it on the dependent.
    pub fn owner_misplaced(&self, res: ResKey, key: ObjKey, uid: &str) {
        self.lock()
            .misplaced_owners
            .push((res, key, uid.to_owned()));
    }

    /// The dependents with misplaced owners queued since the last call.
    pub fn take_misplaced_owners(&self) -> Vec<(ResKey, ObjKey, String)> {
        std::mem::take(&mut self.lock().misplaced_owners)
    }

    /// The uids of removed owners queued since the last call.
    pub fn take_owners_gone(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().owners_gone)
    }

    /// The objects waiting for their finalizers.
    pub fn deleting(&self) -> Vec<(ResKey, ObjKey)> {
        self.lock().deleting.iter().cloned().collect()
    }

    /// `key` was finalized (or is gone).
    pub fn done_deleting(&self, res: ResKey, key: ObjKey) {
        self.lock().deleting.remove(&(res, key));
    }
}

impl AuthState for Shared {
    fn storage(&self) -> &Storage {
        &self.storage
    }

    fn authn(&self) -> &AuthnState {
        &self.authn
    }

    fn rbac(&self) -> &RbacCache {
        &self.rbac
    }

    fn audit(&self) -> &AuditLog {
        &self.audit
    }

    fn token_matches(&self, presented: &str) -> bool {
        Shared::token_matches(self, presented)
    }
}
