//! Controllers: the reconcile loop fed by informers through a workqueue, the
//! cached client reconcilers use, and the helpers a reconcile needs
//! (predicates, finalizers, owner references, conditions, writes, events).
//!
//! The loop (controller-runtime's builder, controller and delegating client):
//!
//! - [`ControllerBuilder`]: the primary type, owned and mapped watches,
//!   predicates, concurrency, rate limiter, timeouts; ends with
//!   `.reconcile(fn, data)`.
//! - [`Controller`]: runs the workers; level-triggered, one worker per key
//!   at a time, results handled as controller-runtime does ([`Action`],
//!   [`TerminalError`]), panics caught, metrics under controller-runtime's
//!   names ([`ControllerMetrics`]).
//! - [`Context`]: what each reconcile gets besides the object: the user's
//!   data, the [`CachedClient`], a [`Recorder`], the controller's name.
//! - [`CachedClient`]: reads from the shared cache, writes to the API
//!   server, reads its own writes.
//! - [`filter`]: controller-wide event filters.
//!
//! ```no_run
//! use std::sync::Arc;
//! use kubeforge::cache::SharedInformerFactory;
//! use kubeforge::controller::{Action, CachedClient, Context, Controller};
//! use kubeforge::controller::predicate::GenerationChanged;
//! use kubeforge::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//! use kubeforge::manager::CancellationToken;
//!
//! async fn reconcile(d: Arc<Deployment>, ctx: Arc<Context<()>>) -> Result<Action, kubeforge::controller::Error> {
//!     let ns = d.metadata.namespace.as_deref().unwrap_or_default();
//!     let owned = ctx.client().list::<ReplicaSet>(ns, &Default::default()).await?;
//!     tracing::info!(replica_sets = owned.len(), "reconciled");
//!     Ok(Action::done())
//! }
//!
//! # async fn demo(client: kubeforge::Client) -> Result<(), kubeforge::controller::Error> {
//! let factory = SharedInformerFactory::new(client.clone());
//! let controller = Controller::<Deployment>::builder(CachedClient::new(client, factory))
//!     .for_predicate(GenerationChanged)
//!     .owns::<ReplicaSet>()
//!     .reconcile(reconcile, ());
//! controller.run(CancellationToken::new()).await
//! # }
//! ```
//!
//! The helpers:
//!
//! - [`predicate`]: which watch events enqueue a reconcile.
//! - [`finalizer`](mod@finalizer): add a finalizer before the first apply,
//!   run cleanup on deletion, then release the object.
//! - [`owner`]: controller and plain owner references.
//! - [`conditions`]: status conditions with correct transition times.
//! - [`apply`](mod@apply): create-or-update, server-side apply and status writes.
//! - [`Recorder`]: an events.k8s.io/v1 recorder with client-go's series
//!   aggregation (in [`crate::events`]).
//!
//! Every helper and the runtime return this layer's [`Error`]; the
//! finalizer flow wraps it together with the reconciler's own error in
//! [`FinalizerError`].

mod action;
mod builder;
mod client;
mod context;
pub mod filter;
mod handler;
mod metrics;
mod runner;

pub mod apply;
pub mod conditions;

/// Moved to [`crate::events`].
#[deprecated(since = "0.1.0", note = "moved to kubeforge::events")]
pub mod events {
    pub use crate::events::*;
}
pub mod finalizer;
pub mod owner;
pub mod predicate;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

pub use crate::events::{object_reference, EventType, Recorder};
pub use apply::{
    apply, apply_status, create_or_update, create_or_update_with, patch_status, OperationResult,
};
pub use conditions::{
    find_condition, is_condition_false, is_condition_true, new_condition, remove_condition,
    set_condition, ConditionExt, ConditionStatus,
};
pub use finalizer::{
    add_finalizer, finalizer, has_finalizer, remove_finalizer, Event as FinalizerEvent,
    FinalizerError, Outcome as FinalizerOutcome,
};
pub use owner::{
    controller_owner_ref, get_controller_of, has_owner_reference, set_controller_reference,
    set_owner_reference,
};
pub use predicate::{Predicate, PredicateExt};

pub use action::{is_terminal, Action, TerminalError};
pub use builder::{
    ControllerBuilder, Owns, Standalone, Watch, DEFAULT_CACHE_SYNC_TIMEOUT,
    DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
};
pub use client::{
    CachedClient, CachedClientBuilder, CachedObject, ListOptions, DEFAULT_FIELD_MANAGER,
    DEFAULT_FRESHNESS_TIMEOUT,
};
pub use context::Context;
pub use metrics::{ControllerLabels, ControllerMetrics, ResultLabels};
pub use runner::Controller;

pub(crate) use builder::{default_error_policy, ControllerDefaults};

use crate::cache::SyncError;

/// Errors of the controller helpers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the API server failed.
    #[error("{context}: {source}")]
    Api {
        /// What was being done, e.g. `add finalizer "x" to ns/name`.
        context: String,
        /// The client error, with the server's `Status` when it answered.
        #[source]
        source: crate::Error,
    },

    /// Another object already controls the dependent (controller-runtime's
    /// `AlreadyOwnedError`).
    #[error("object {object} is already owned by another {} controller {}", .owner.kind, .owner.name)]
    AlreadyOwned {
        /// `namespace/name` of the dependent.
        object: String,
        /// The existing controller reference.
        owner: Box<OwnerReference>,
    },

    /// A namespaced owner was given to a cluster-scoped object (or to one
    /// whose namespace is not set).
    #[error("cluster-scoped resource must not have a namespace-scoped owner, owner's namespace {owner_namespace}")]
    ClusterScopedDependent {
        /// The owner's namespace.
        owner_namespace: String,
    },

    /// Owner and dependent are in different namespaces.
    #[error("cross-namespace owner references are disallowed, owner's namespace {owner_namespace}, obj's namespace {object_namespace}")]
    CrossNamespaceOwner {
        /// The owner's namespace.
        owner_namespace: String,
        /// The dependent's namespace.
        object_namespace: String,
    },

    /// An object lacks metadata the helper needs (a name, a UID).
    #[error("{object} has no {field}")]
    MissingMetadata {
        /// Which object.
        object: String,
        /// The missing field, e.g. `metadata.uid`.
        field: &'static str,
    },

    /// A create-or-update mutation changed the object's name or namespace.
    #[error("the mutate function must not change the object's name or namespace ({before} became {after})")]
    MutatedKey {
        /// `namespace/name` before the mutation.
        before: String,
        /// `namespace/name` after it.
        after: String,
    },

    /// The object is being deleted, so no finalizer may be added.
    #[error("{object} is being deleted; refusing to add finalizer {finalizer:?}")]
    BeingDeleted {
        /// `namespace/name` of the object.
        object: String,
        /// The finalizer that was to be added.
        finalizer: String,
    },

    /// An object could not be turned into JSON.
    #[error("cannot serialize {what}: {source}")]
    Serialize {
        /// What was being serialized.
        what: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },

    /// A server-side apply body has no `apiVersion` or `kind` and the type
    /// does not know its own.
    #[error("cannot apply {object}: the body needs apiVersion and kind")]
    MissingTypeMeta {
        /// Which object.
        object: String,
    },

    /// A cached read found no such object.
    #[error("{resource} {key:?} not found in the cache")]
    NotFound {
        /// The resource (plural), e.g. `deployments`.
        resource: String,
        /// `namespace/name` of the object.
        key: String,
    },

    /// An informer did not sync: the message names it and why (e.g.
    /// `forbidden: cannot list deployments.apps in namespace "shop": ...`).
    #[error(transparent)]
    CacheSync(Box<SyncError>),

    /// A cached read was made before the informer factory was started.
    #[error("cannot read {informer} from the cache: the informer factory was not started")]
    CacheNotStarted {
        /// The informer.
        informer: String,
    },

    /// The cache did not catch up with this process's last write in time,
    /// so a read would have returned an older state.
    #[error("the cache is behind this process's last write: {0}")]
    StaleCache(#[source] crate::cache::Error),

    /// A cache operation failed (an index added twice, a handler added to
    /// a stopped informer).
    #[error("cache: {0}")]
    Cache(#[source] crate::cache::Error),

    /// A cached read named a namespace the cache does not hold.
    #[error("namespace {namespace:?} is not cached: the cache holds namespace {cached:?} only")]
    NamespaceNotCached {
        /// The namespace asked for.
        namespace: String,
        /// The namespace the cache is restricted to.
        cached: String,
    },

    /// A cached list selected by a field no index was registered for.
    #[error(
        "field {field:?} of {resource} is not indexed: register it with CachedClient::index_field"
    )]
    FieldNotIndexed {
        /// The field.
        field: String,
        /// The resource (plural).
        resource: String,
    },

    /// A reconcile panicked and the controller does not recover panics.
    #[error("controller {controller}: reconcile of {key} panicked: {message}")]
    ReconcilerPanicked {
        /// The controller.
        controller: String,
        /// `namespace/name` of the object.
        key: String,
        /// The panic message.
        message: String,
    },

    /// An error retrying will not fix: the controller does not requeue
    /// the object (see [`TerminalError`]).
    // Not `transparent`: the marker must stay in the source chain.
    #[error("{0}")]
    Terminal(#[from] TerminalError),

    /// The finalizer flow failed (adding or removing the finalizer, or the
    /// apply or cleanup it ran).
    #[error(transparent)]
    Finalizer(Box<FinalizerError<Error>>),

    /// Anything else a reconciler wants to report (retried with the rate
    /// limiter); see [`Error::other`].
    #[error("{0}")]
    Other(#[source] crate::client::BoxError),

    /// A worker task of the controller failed outside a reconcile.
    #[error("controller {controller}: worker failed: {message}")]
    WorkerFailed {
        /// The controller.
        controller: String,
        /// What happened.
        message: String,
    },
}

/// Lets `?` turn the finalizer flow's error into this one, so a reconciler
/// can use [`Error`] as its error type throughout.
impl From<FinalizerError<Error>> for Error {
    fn from(e: FinalizerError<Error>) -> Self {
        Error::Finalizer(Box::new(e))
    }
}

/// Lets `?` pass on errors of direct [`Api`](crate::Api) calls.
impl From<crate::Error> for Error {
    fn from(source: crate::Error) -> Self {
        Error::Api {
            context: "API request".to_owned(),
            source,
        }
    }
}

impl Error {
    /// Wraps any error or message as [`Error::Other`].
    pub fn other(error: impl Into<crate::client::BoxError>) -> Self {
        Error::Other(error.into())
    }

    /// The client error, for API failures (also inside a failed finalizer
    /// flow).
    pub fn api_error(&self) -> Option<&crate::Error> {
        match self {
            Error::Api { source, .. } => Some(source),
            Error::Finalizer(f) => match f.as_ref() {
                FinalizerError::Apply(e)
                | FinalizerError::Cleanup(e)
                | FinalizerError::AddFinalizer(e)
                | FinalizerError::RemoveFinalizer(e) => e.api_error(),
                FinalizerError::Unnamed => None,
            },
            _ => None,
        }
    }

    /// 409 Conflict: the object changed since it was read (a stale
    /// `resourceVersion`); read it again and retry.
    pub fn is_conflict(&self) -> bool {
        self.api_error().is_some_and(crate::Error::is_conflict)
    }

    /// 404 NotFound from the API server, or an object missing from the
    /// cache.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
            || self.api_error().is_some_and(crate::Error::is_not_found)
    }

    /// The write was refused because the object no longer matched what it
    /// was based on: a 409 Conflict, or the 422 a JSON patch `test`
    /// operation fails with (apiserver `patch.go` answers a failed patch
    /// application with 422). The finalizer helpers guard their patches with
    /// `test` operations, so for them this means "re-read and retry".
    pub fn is_stale(&self) -> bool {
        self.api_error()
            .is_some_and(|e| e.is_conflict() || e.is_invalid())
    }

    pub(crate) fn api(context: impl Into<String>, source: crate::Error) -> Self {
        Error::Api {
            context: context.into(),
            source,
        }
    }
}
