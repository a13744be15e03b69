//! The names that lived under `kubeforge::controller` before the reconcile
//! helpers moved to [`crate::reconcile`] and the recorder to
//! [`crate::events`], kept so existing code compiles.
//!
//! The `Api`-based write functions are deprecated wrappers, so the compiler
//! points at every call: their writes bypass the cache, and a cached read
//! right after one can return the object as it was before (use the
//! [`CachedClient`](crate::reconcile::CachedClient) methods of the same
//! names). Everything else is a re-export marked `#[deprecated]` for the
//! documentation; rustc does not warn about re-exports (rust-lang/rust#30827).
#![allow(deprecated)]

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use kube_core::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::client::Api;
use crate::reconcile::finalizer::{Event, Outcome};
use crate::reconcile::{uncached, Error};

/// Moved to [`crate::reconcile::conditions`].
#[deprecated(since = "0.1.0", note = "moved to kubeforge::reconcile::conditions")]
pub mod conditions {
    pub use crate::reconcile::conditions::*;
}

/// Moved to [`crate::reconcile::owner`].
#[deprecated(since = "0.1.0", note = "moved to kubeforge::reconcile::owner")]
pub mod owner {
    pub use crate::reconcile::owner::*;
}

/// Moved to [`crate::events`].
#[deprecated(since = "0.1.0", note = "moved to kubeforge::events")]
pub mod events {
    pub use crate::events::*;
}

/// Moved: the flow's parts to [`crate::reconcile::finalizer`], the flow
/// itself to [`CachedClient::finalizer`](crate::reconcile::CachedClient::finalizer).
#[deprecated(
    since = "0.1.0",
    note = "moved to kubeforge::reconcile::finalizer; run the flow with ctx.finalizer(..) or CachedClient::finalizer"
)]
pub mod finalizer {
    pub use crate::controller::moved::{add_finalizer, finalizer, remove_finalizer};
    pub use crate::reconcile::finalizer::*;
}

/// Moved: [`OperationResult`] to [`crate::reconcile`], the writes to the
/// [`CachedClient`](crate::reconcile::CachedClient) methods.
#[deprecated(
    since = "0.1.0",
    note = "write with the CachedClient methods (ctx.client().apply(..)); OperationResult is in kubeforge::reconcile"
)]
pub mod apply {
    pub use crate::controller::moved::{
        apply, apply_status, apply_status_with, apply_with, create_or_update,
        create_or_update_with, patch_status,
    };
    pub use crate::reconcile::OperationResult;
}

#[deprecated(since = "0.1.0", note = "moved to kubeforge::reconcile")]
pub use crate::reconcile::{
    CachedClient, CachedClientBuilder, CachedObject, ListOptions, OperationResult,
    DEFAULT_FIELD_MANAGER, DEFAULT_FRESHNESS_TIMEOUT,
};

#[deprecated(since = "0.1.0", note = "moved to kubeforge::reconcile::conditions")]
pub use crate::reconcile::conditions::{
    find_condition, is_condition_false, is_condition_true, new_condition, remove_condition,
    set_condition, ConditionExt, ConditionStatus,
};

#[deprecated(since = "0.1.0", note = "moved to kubeforge::reconcile::finalizer")]
pub use crate::reconcile::finalizer::{
    has_finalizer, Event as FinalizerEvent, FinalizerError, Outcome as FinalizerOutcome,
};

#[deprecated(since = "0.1.0", note = "moved to kubeforge::reconcile::owner")]
pub use crate::reconcile::owner::{
    controller_owner_ref, get_controller_of, has_owner_reference, set_controller_reference,
    set_owner_reference,
};

#[deprecated(since = "0.1.0", note = "moved to kubeforge::events")]
pub use crate::events::{object_reference, EventType, Recorder};

/// Writes through a plain `Api`, bypassing the cache; see
/// [`uncached::create_or_update`].
#[deprecated(
    since = "0.1.0",
    note = "bypasses the cache: use CachedClient::create_or_update (ctx.client().create_or_update(..)), or kubeforge::reconcile::uncached::create_or_update"
)]
pub async fn create_or_update<K, F>(
    api: &Api<K>,
    name: &str,
    mutate: F,
) -> Result<(OperationResult, K), Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Default,
    F: FnOnce(&mut K),
{
    uncached::create_or_update(api, name, mutate).await
}

/// Writes through a plain `Api`, bypassing the cache; see
/// [`uncached::create_or_update_with`].
#[deprecated(
    since = "0.1.0",
    note = "bypasses the cache: use CachedClient::create_or_update, or kubeforge::reconcile::uncached::create_or_update_with"
)]
pub async fn create_or_update_with<K, I, F>(
    api: &Api<K>,
    name: &str,
    init: I,
    mutate: F,
) -> Result<(OperationResult, K), Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize,
    I: FnOnce() -> K,
    F: FnOnce(&mut K),
{
    uncached::create_or_update_with(api, name, init, mutate).await
}

/// Writes through a plain `Api`, bypassing the cache; see
/// [`uncached::apply`].
#[deprecated(
    since = "0.1.0",
    note = "bypasses the cache: use CachedClient::apply (ctx.client().apply(..)), or kubeforge::reconcile::uncached::apply"
)]
pub async fn apply<K>(
    api: &Api<K>,
    name: &str,
    obj: &K,
    field_manager: &str,
    force: bool,
) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize,
    K::DynamicType: Default,
{
    uncached::apply(api, name, obj, field_manager, force).await
}

/// Writes through a plain `Api`, bypassing the cache; see
/// [`uncached::apply_with`].
#[deprecated(
    since = "0.1.0",
    note = "bypasses the cache: kubeforge::reconcile::uncached::apply_with"
)]
pub async fn apply_with<K>(
    api: &Api<K>,
    name: &str,
    obj: &K,
    dt: &K::DynamicType,
    field_manager: &str,
    force: bool,
) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize,
{
    uncached::apply_with(api, name, obj, dt, field_manager, force).await
}

/// Writes through a plain `Api`, bypassing the cache; see
/// [`uncached::patch_status`].
#[deprecated(
    since = "0.1.0",
    note = "bypasses the cache: use CachedClient::patch_status (ctx.client().patch_status(..)), or kubeforge::reconcile::uncached::patch_status"
)]
pub async fn patch_status<K, S>(api: &Api<K>, name: &str, status: &S) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned,
    S: Serialize,
{
    uncached::patch_status(api, name, status).await
}

/// Writes through a plain `Api`, bypassing the cache; see
/// [`uncached::apply_status`].
#[deprecated(
    since = "0.1.0",
    note = "bypasses the cache: use CachedClient::apply_status, or kubeforge::reconcile::uncached::apply_status"
)]
pub async fn apply_status<K, S>(
    api: &Api<K>,
    name: &str,
    status: &S,
    field_manager: &str,
    force: bool,
) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned,
    K::DynamicType: Default,
    S: Serialize,
{
    uncached::apply_status(api, name, status, field_manager, force).await
}

/// Writes through a plain `Api`, bypassing the cache; see
/// [`uncached::apply_status_with`].
#[deprecated(
    since = "0.1.0",
    note = "bypasses the cache: kubeforge::reconcile::uncached::apply_status_with"
)]
pub async fn apply_status_with<K, S>(
    api: &Api<K>,
    name: &str,
    status: &S,
    dt: &K::DynamicType,
    field_manager: &str,
    force: bool,
) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned,
    S: Serialize,
{
    uncached::apply_status_with(api, name, status, dt, field_manager, force).await
}

/// Writes through a plain `Api`, bypassing the cache; see
/// [`uncached::add_finalizer`].
#[deprecated(
    since = "0.1.0",
    note = "bypasses the cache: use CachedClient::add_finalizer, or kubeforge::reconcile::uncached::add_finalizer"
)]
pub async fn add_finalizer<K>(api: &Api<K>, obj: &K, name: &str) -> Result<Option<K>, Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug,
{
    uncached::add_finalizer(api, obj, name).await
}

/// Writes through a plain `Api`, bypassing the cache; see
/// [`uncached::remove_finalizer`].
#[deprecated(
    since = "0.1.0",
    note = "bypasses the cache: use CachedClient::remove_finalizer, or kubeforge::reconcile::uncached::remove_finalizer"
)]
pub async fn remove_finalizer<K>(api: &Api<K>, obj: &K, name: &str) -> Result<Option<K>, Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug,
{
    uncached::remove_finalizer(api, obj, name).await
}

/// Runs the finalizer flow writing through a plain `Api`, bypassing the
/// cache; see [`uncached::finalizer`].
#[deprecated(
    since = "0.1.0",
    note = "bypasses the cache: use ctx.finalizer(..) or CachedClient::finalizer, or kubeforge::reconcile::uncached::finalizer"
)]
pub async fn finalizer<K, F, Fut, T, E>(
    api: &Api<K>,
    name: &str,
    obj: Arc<K>,
    reconcile: F,
) -> Result<Outcome<T>, FinalizerError<E>>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: StdError + 'static,
{
    uncached::finalizer(api, name, obj, reconcile).await
}
