//! The reconcile layer's errors: [`Error`], which every helper, the cached
//! client and the controller loop return (and a reconcile function can use
//! as its own); [`FinalizerError`], a failure of the finalizer flow carrying
//! the reconciler's own error; and [`TerminalError`], the marker of errors
//! retrying cannot fix. They refer to each other, so they live together.

use std::error::Error as StdError;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::cache::SyncError;

/// The error of the reconcile helpers, the cached client and the
/// controller loop; a reconcile function can use it as its own.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the API server failed.
    #[error("{context}: {source}")]
    Api {
        /// What was being done, e.g. `add finalizer "x" to ns/name`.
        context: String,
        /// The client error, with the server's `Status` when it answered.
        #[source]
        source: crate::client::Error,
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

    /// A sharded controller's settings break a rule.
    #[error("invalid sharding of controller {controller:?}: {problem}")]
    InvalidSharding {
        /// The controller's name.
        controller: String,
        /// The rule broken, with a valid example.
        problem: String,
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
impl From<crate::client::Error> for Error {
    fn from(source: crate::client::Error) -> Self {
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
    pub fn api_error(&self) -> Option<&crate::client::Error> {
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
        self.api_error()
            .is_some_and(crate::client::Error::is_conflict)
    }

    /// 404 NotFound from the API server, or an object missing from the
    /// cache.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
            || self
                .api_error()
                .is_some_and(crate::client::Error::is_not_found)
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

    pub(crate) fn api(context: impl Into<String>, source: crate::client::Error) -> Self {
        Error::Api {
            context: context.into(),
            source,
        }
    }
}

/// A failure of the finalizer flow ([`CachedClient::finalizer`](super::CachedClient::finalizer)).
#[derive(Debug, thiserror::Error)]
pub enum FinalizerError<E: StdError + 'static> {
    /// [`Event::Apply`](super::finalizer::Event::Apply) failed.
    #[error("apply failed: {0}")]
    Apply(#[source] E),
    /// [`Event::Cleanup`](super::finalizer::Event::Cleanup) failed; the
    /// finalizer stays.
    #[error("cleanup failed: {0}")]
    Cleanup(#[source] E),
    /// Adding the finalizer failed; apply did not run.
    #[error("cannot add finalizer: {0}")]
    AddFinalizer(#[source] Error),
    /// Cleanup succeeded but removing the finalizer failed; the next
    /// reconcile runs cleanup again.
    #[error("cannot remove finalizer: {0}")]
    RemoveFinalizer(#[source] Error),
    /// The object has no name, so it cannot be patched.
    #[error("object has no name")]
    Unnamed,
}

/// An error that retrying will not fix (an invalid spec, a missing
/// permission): the controller logs and counts it but does not requeue the
/// object (controller-runtime's `reconcile.TerminalError`). The object is
/// reconciled again at its next change.
///
/// Return it directly, or carry it in your error type as a source:
///
/// ```
/// use kubeforge::reconcile::{is_terminal, TerminalError};
///
/// #[derive(Debug, thiserror::Error)]
/// enum Error {
///     #[error("spec is invalid: {0}")]
///     Invalid(#[from] TerminalError),
///     #[error("api: {0}")]
///     Api(#[from] kubeforge::Error),
/// }
///
/// let err = Error::from(TerminalError::new("size must be positive"));
/// assert!(is_terminal(&err));
/// ```
///
/// The controller finds the marker by walking the error's
/// [`source`](StdError::source) chain, so a variant must keep it as a
/// source: `#[from]` or `#[source]`, not `#[error(transparent)]` (which
/// forwards `source()` past it).
#[derive(Debug)]
pub struct TerminalError(Box<dyn StdError + Send + Sync>);

impl TerminalError {
    /// Marks `err` (any error, or a message) as terminal.
    pub fn new(err: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self(err.into())
    }

    /// The wrapped error.
    pub fn into_inner(self) -> Box<dyn StdError + Send + Sync> {
        self.0
    }
}

impl fmt::Display for TerminalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "terminal error: {}", self.0)
    }
}

impl StdError for TerminalError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.0)
    }
}

/// Whether `err` or any error in its source chain is a [`TerminalError`].
pub fn is_terminal(err: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if e.is::<TerminalError>() {
            return true;
        }
        next = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    enum AppError {
        #[error("invalid: {0}")]
        Invalid(#[from] TerminalError),
        #[error("wrapped")]
        Wrapped(#[source] Box<AppError>),
        #[error("transient")]
        Transient,
    }

    #[test]
    fn terminal_errors_are_found_anywhere_in_the_chain() {
        assert!(is_terminal(&TerminalError::new("bad")));
        let direct = AppError::from(TerminalError::new("bad"));
        assert!(is_terminal(&direct));
        let nested = AppError::Wrapped(Box::new(direct));
        assert!(is_terminal(&nested));
        assert!(!is_terminal(&AppError::Transient));
        assert_eq!(
            TerminalError::new("size must be positive").to_string(),
            "terminal error: size must be positive"
        );
    }

    #[test]
    fn the_controller_error_carries_terminal_markers_through_finalizers() {
        let terminal = Error::from(TerminalError::new("bad spec"));
        assert!(is_terminal(&terminal));
        assert_eq!(terminal.to_string(), "terminal error: bad spec");
        let wrapped = Error::from(FinalizerError::Apply(terminal));
        assert!(is_terminal(&wrapped));
        assert_eq!(
            wrapped.to_string(),
            "apply failed: terminal error: bad spec"
        );
        assert!(!is_terminal(&Error::other("flaky")));
        assert_eq!(Error::other("flaky").to_string(), "flaky");
    }
}
