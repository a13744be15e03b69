//! The cache layer's error type.

/// What can go wrong in the cache layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A look-up named an index that was never added.
    #[error("index {0:?} does not exist")]
    IndexNotFound(String),
    /// An index was added under a name that is already taken
    /// (client-go's "indexer conflict").
    #[error("index {0:?} already exists")]
    IndexExists(String),
    /// A string was not a `name` or `namespace/name` key.
    #[error("invalid object key {0:?}: expected \"name\" or \"namespace/name\"")]
    InvalidKey(String),
    /// A handler was added to an informer that has been shut down.
    #[error("informer {0:?} has been shut down; handler not added")]
    InformerStopped(String),
    /// An informer did not see a resourceVersion in time.
    #[error("informer {informer:?} did not see resourceVersion {wanted} within {waited:?} (newest seen: {})", seen.as_deref().unwrap_or("none"))]
    ResourceVersionTimeout {
        /// The informer's name.
        informer: String,
        /// The resourceVersion waited for.
        wanted: String,
        /// The newest resourceVersion the informer had seen.
        seen: Option<String>,
        /// How long was waited.
        waited: std::time::Duration,
    },
    /// A handler was added outside a tokio runtime, so it has nowhere to run.
    #[error("event handlers run on tokio tasks: add them from within a tokio runtime")]
    NoRuntime,
}
