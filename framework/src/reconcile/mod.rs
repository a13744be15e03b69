//! What a reconcile function uses, apart from the loop that calls it
//! (controller-runtime's `client` and `controllerutil`, kube-rs's
//! `finalizer`): the cached client and its writes, finalizers, owner
//! references, status conditions, and the errors they share.
//!
//! - [`CachedClient`]: reads from the shared cache, writes to the API
//!   server, reads its own writes. Its methods are the one set of write
//!   helpers: `create`, `replace`, `patch`, `delete`, server-side `apply`,
//!   `patch_status`, `replace_status` and `apply_status`,
//!   `create_or_update`, `add_finalizer` and `remove_finalizer`, and the
//!   `finalizer` flow. Every one records the object the server answered
//!   with, so a cached read right after it never returns an older state. (Not to be confused with the plain
//!   [`Client`](crate::Client) it wraps.)
//! - [`finalizer`](mod@finalizer): the finalizer flow's decision
//!   ([`finalizer::plan`]), its guarded JSON patches and in-memory edits.
//! - [`owner`]: controller and plain owner references.
//! - [`conditions`]: status conditions with correct transition times.
//! - [`uncached`]: the same writes over a plain [`Api`](crate::Api),
//!   bypassing the cache, for code without one.
//! - [`Error`], [`FinalizerError`](finalizer::FinalizerError) and
//!   [`TerminalError`]: what all of them, and the controller loop, return.
//!
//! ```no_run
//! use std::sync::Arc;
//! use kubeforge::controller::{Action, Context};
//! use kubeforge::reconcile::{owner, Error};
//! use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
//!
//! async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Context<()>>) -> Result<Action, Error> {
//!     let mut copy = ConfigMap::default();
//!     copy.metadata.name = Some(format!("{}-copy", cm.metadata.name.as_deref().unwrap_or_default()));
//!     copy.metadata.namespace = cm.metadata.namespace.clone();
//!     copy.data = cm.data.clone();
//!     owner::set_controller_reference(&*cm, &mut copy)?;
//!     ctx.client().apply(&copy).await?; // recorded: the next cached read sees it
//!     Ok(Action::done())
//! }
//! ```

mod cached_client;
pub mod conditions;
mod error;
pub mod finalizer;
pub mod owner;
pub mod uncached;
mod write;

pub use cached_client::{
    CachedClient, CachedClientBuilder, CachedObject, ListOptions, DEFAULT_CACHE_SYNC_TIMEOUT,
    DEFAULT_FIELD_MANAGER, DEFAULT_READ_YOUR_WRITES_TIMEOUT,
};
pub use error::{is_terminal, Error, TerminalError};
pub use write::OperationResult;
