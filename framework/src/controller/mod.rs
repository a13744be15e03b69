//! Controllers: the reconcile loop fed by informers through a workqueue, with
//! predicates, finalizers, owner references and an event recorder.
//!
//! The reconcile-side helpers live here:
//!
//! - [`predicate`]: which watch events enqueue a reconcile.
//! - [`finalizer`](mod@finalizer): add a finalizer before the first apply,
//!   run cleanup on deletion, then release the object.
//! - [`owner`]: controller and plain owner references.
//! - [`conditions`]: status conditions with correct transition times.
//! - [`apply`](mod@apply): create-or-update, server-side apply and status writes.
//! - [`events`]: an events.k8s.io/v1 recorder with client-go's series
//!   aggregation.
//!
//! Every helper that can fail returns this layer's [`Error`]; the finalizer
//! flow wraps it together with the reconciler's own error in
//! [`FinalizerError`].

pub mod apply;
pub mod conditions;
pub mod events;
pub mod finalizer;
pub mod owner;
pub mod predicate;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

pub use apply::{
    apply, apply_status, create_or_update, create_or_update_with, patch_status, OperationResult,
};
pub use conditions::{
    find_condition, is_condition_false, is_condition_true, new_condition, remove_condition,
    set_condition, ConditionExt, ConditionStatus,
};
pub use events::{object_reference, EventType, Recorder};
pub use finalizer::{
    add_finalizer, finalizer, has_finalizer, remove_finalizer, Event as FinalizerEvent,
    FinalizerError, Outcome as FinalizerOutcome,
};
pub use owner::{
    controller_owner_ref, get_controller_of, has_owner_reference, set_controller_reference,
    set_owner_reference,
};
pub use predicate::{Predicate, PredicateExt};

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
}

impl Error {
    /// The client error, for API failures.
    pub fn api_error(&self) -> Option<&crate::Error> {
        match self {
            Error::Api { source, .. } => Some(source),
            _ => None,
        }
    }

    /// 409 Conflict: the object changed since it was read (a stale
    /// `resourceVersion`); read it again and retry.
    pub fn is_conflict(&self) -> bool {
        self.api_error().is_some_and(crate::Error::is_conflict)
    }

    /// 404 NotFound.
    pub fn is_not_found(&self) -> bool {
        self.api_error().is_some_and(crate::Error::is_not_found)
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

/// `namespace/name` of an object, for messages and logs.
pub(crate) fn object_key<K: kube_core::Resource>(obj: &K) -> String {
    let meta = obj.meta();
    match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{}", meta.name.as_deref().unwrap_or("")),
        _ => meta.name.clone().unwrap_or_default(),
    }
}
