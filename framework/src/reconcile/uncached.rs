//! The write helpers over a plain [`Api`], **bypassing the cache**: nothing
//! here records its writes, so a cached read right after one (through a
//! [`CachedClient`](super::CachedClient), or the controller reading the
//! object it reconciles) may return the object as it was before the write.
//!
//! In a reconcile use the [`CachedClient`](super::CachedClient) methods of
//! the same names (`ctx.client().apply(..)`, `create_or_update`,
//! `patch_status`, `replace_status`, `apply_status`, `ctx.finalizer(..)`,
//! `add_finalizer`, `remove_finalizer`): they send the same requests and
//! record the answer.
//! These functions are for code that has no cache (a command-line tool, a
//! one-off migration), for types described at run time (the `_with`
//! variants take a `DynamicObject`'s `ApiResource`), or for a write that
//! should not be waited for; pass a written object to
//! [`CachedClient::observe_write`](super::CachedClient::observe_write) to
//! have later cached reads wait for it after all.
//!
//! - [`create_or_update`] reads the object, lets a closure mutate it (or a
//!   default when it does not exist), and writes only if the mutation
//!   changed something: a create, a conditional replace (the
//!   `resourceVersion` read is sent back, so a concurrent write answers 409
//!   Conflict), or nothing. It does not retry conflicts; the reconcile that
//!   called it is retried.
//! - [`apply`] and [`apply_status`] send server-side apply patches
//!   (`application/apply-patch+yaml`) with a field manager; `force` takes
//!   over fields other managers own. [`patch_status`] sends a JSON merge
//!   patch of `{"status": ...}` to `/status`; [`replace_status`] PUTs the
//!   whole object there, conditional on its `resourceVersion`, so omitted
//!   status fields are cleared.
//! - [`finalizer`] runs the finalizer flow (see
//!   [`finalizer`](mod@super::finalizer) for the cases), adding and removing
//!   the finalizer with [`add_finalizer`] and [`remove_finalizer`].

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use json_patch::Patch as JsonPatch;
use kube_core::params::{Patch, PatchParams, PostParams};
use kube_core::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::Error;
use super::finalizer::{
    add_finalizer_patch, flow, remove_finalizer_patch, Event, FinalizerError, Outcome,
};
use super::write::{apply_body, apply_params, mutate_keeping_key, to_json, OperationResult};
use crate::cache::ObjectKey;
use crate::client::Api;

/// Creates or updates object `name`: `mutate` receives the stored object,
/// or `K::default()` named `name` in the `Api`'s namespace when there is
/// none, and brings it to the desired state. Returns what was done and the
/// object as the server (or, when unchanged, the read) left it.
///
/// Equality is judged on the JSON of the object before and after `mutate`.
/// `mutate` must not change the name or namespace ([`Error::MutatedKey`]).
/// Changes to `status` are dropped by the server for types with a status
/// subresource; write status with [`patch_status`] or [`apply_status`].
///
/// ```no_run
/// # use kubeforge::reconcile::uncached::create_or_update;
/// # use kubeforge::reconcile::OperationResult;
/// # use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
/// # async fn demo(api: kubeforge::Api<ConfigMap>) -> Result<(), kubeforge::reconcile::Error> {
/// let (result, cm) = create_or_update(&api, "settings", |cm: &mut ConfigMap| {
///     cm.data.get_or_insert_with(Default::default).insert("mode".into(), "fast".into());
/// })
/// .await?;
/// if result != OperationResult::Unchanged {
///     tracing::info!(%result, "settings written");
/// }
/// # Ok(()) }
/// ```
pub async fn create_or_update<K, F>(
    api: &Api<K>,
    name: &str,
    mutate: F,
) -> Result<(OperationResult, K), Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Default,
    F: FnOnce(&mut K),
{
    create_or_update_with(api, name, K::default, mutate).await
}

/// [`create_or_update`] with `init` building the object to mutate when none
/// is stored (for types without `Default`, such as `DynamicObject`); the
/// name and the `Api`'s namespace are set on it before `mutate` runs.
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
    let describe = || qualified(api, name);
    let existing = api
        .get_opt(name)
        .await
        .map_err(|e| Error::api(format!("get {}", describe()), e))?;

    let Some(mut obj) = existing else {
        let mut obj = init();
        obj.meta_mut().name = Some(name.to_owned());
        if let Some(ns) = api.namespace() {
            obj.meta_mut().namespace = Some(ns.to_owned());
        }
        mutate_keeping_key(&mut obj, mutate)?;
        let created = api
            .create(&PostParams::default(), &obj)
            .await
            .map_err(|e| Error::api(format!("create {}", describe()), e))?;
        return Ok((OperationResult::Created, created));
    };

    let before = to_json(&obj, describe)?;
    mutate_keeping_key(&mut obj, mutate)?;
    if to_json(&obj, describe)? == before {
        return Ok((OperationResult::Unchanged, obj));
    }
    let updated = api
        .replace(name, &PostParams::default(), &obj)
        .await
        .map_err(|e| Error::api(format!("update {}", describe()), e))?;
    Ok((OperationResult::Updated, updated))
}

/// Server-side applies `obj` as object `name`, owned by `field_manager`;
/// `force` takes fields over from other managers instead of failing with
/// 409 Conflict. Creates the object when it does not exist. `apiVersion` and
/// `kind` are filled from the type when the serialized object lacks them,
/// `metadata.name` is set to `name`, and `managedFields` is dropped. A
/// `resourceVersion` left in `obj` acts as a precondition.
///
/// Send only the fields this manager owns: every field in the body is
/// claimed, and fields it claimed before and omits now are removed.
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
    apply_with(
        api,
        name,
        obj,
        &K::DynamicType::default(),
        field_manager,
        force,
    )
    .await
}

/// [`apply`] for types described at run time (`DynamicObject` with its
/// `ApiResource`).
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
    let describe = || format!("{} {}", K::kind(dt), qualified(api, name));
    let body = apply_body(
        to_json(obj, describe)?,
        &K::api_version(dt),
        &K::kind(dt),
        name,
        describe,
    )?;
    api.patch(
        name,
        &apply_params(field_manager, force),
        &Patch::Apply(body),
    )
    .await
    .map_err(|e| Error::api(format!("apply {}", describe()), e))
}

/// Merge-patches the `status` subresource of `name` with `{"status": status}`.
/// Lists inside (such as `conditions`) are replaced whole, as JSON merge
/// patch does.
pub async fn patch_status<K, S>(api: &Api<K>, name: &str, status: &S) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned,
    S: Serialize,
{
    let body = serde_json::json!({ "status": to_json(status, || format!("status of {}", qualified(api, name)))? });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .map_err(|e| Error::api(format!("patch status of {}", qualified(api, name)), e))
}

/// Replaces the `status` subresource of `obj` (PUT to `/status`): the
/// server keeps `obj`'s status whole, so a field left out is cleared, which
/// [`patch_status`] cannot do. `obj`'s `resourceVersion`, when set, makes
/// the write conditional (409 Conflict if the object changed since).
pub async fn replace_status<K>(api: &Api<K>, obj: &K) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize,
{
    let name = require_name(obj)?;
    api.replace_status(name, &PostParams::default(), obj)
        .await
        .map_err(|e| Error::api(format!("update status of {}", qualified(api, name)), e))
}

/// Server-side applies `status` to the `status` subresource of `name`,
/// owned by `field_manager` (a status manager usually differs from the one
/// applying the spec).
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
    apply_status_with(
        api,
        name,
        status,
        &K::DynamicType::default(),
        field_manager,
        force,
    )
    .await
}

/// [`apply_status`] for types described at run time.
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
    let describe = || format!("status of {} {}", K::kind(dt), qualified(api, name));
    let body = serde_json::json!({ "status": to_json(status, describe)? });
    let body = apply_body(body, &K::api_version(dt), &K::kind(dt), name, describe)?;
    api.patch_status(
        name,
        &apply_params(field_manager, force),
        &Patch::Apply(body),
    )
    .await
    .map_err(|e| Error::api(format!("apply {}", describe()), e))
}

fn qualified<K: Resource>(api: &Api<K>, name: &str) -> String {
    match api.namespace() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    }
}

fn require_name<K: Resource>(obj: &K) -> Result<&str, Error> {
    obj.meta()
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::MissingMetadata {
            object: "the object".to_owned(),
            field: "metadata.name",
        })
}

/// Adds finalizer `name` to the stored object. Returns the updated object,
/// or `None` when `obj` already had it and nothing was sent. Refuses
/// objects being deleted ([`Error::BeingDeleted`]).
pub async fn add_finalizer<K>(api: &Api<K>, obj: &K, name: &str) -> Result<Option<K>, Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug,
{
    let Some(patch) = add_finalizer_patch(obj, name) else {
        return Ok(None);
    };
    if obj.meta().deletion_timestamp.is_some() {
        return Err(Error::BeingDeleted {
            object: ObjectKey::of(obj).to_string(),
            finalizer: name.to_owned(),
        });
    }
    send(api, obj, patch, || {
        format!("add finalizer {name:?} to {}", ObjectKey::of(obj))
    })
    .await
    .map(Some)
}

/// Removes finalizer `name` from the stored object. Returns the updated
/// object (which the server may already have deleted, if it was the last
/// finalizer of a deleting object), or `None` when `obj` did not have it.
pub async fn remove_finalizer<K>(api: &Api<K>, obj: &K, name: &str) -> Result<Option<K>, Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug,
{
    let Some(patch) = remove_finalizer_patch(obj, name) else {
        return Ok(None);
    };
    send(api, obj, patch, || {
        format!("remove finalizer {name:?} from {}", ObjectKey::of(obj))
    })
    .await
    .map(Some)
}

async fn send<K>(
    api: &Api<K>,
    obj: &K,
    patch: JsonPatch,
    context: impl FnOnce() -> String,
) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug,
{
    let name = require_name(obj)?;
    let patch: Patch<()> = Patch::Json(patch);
    api.patch(name, &PatchParams::default(), &patch)
        .await
        .map_err(|e| Error::api(context(), e))
}

/// Runs `reconcile` for `obj` under finalizer `name`: adds the finalizer
/// before the first [`Event::Apply`], runs [`Event::Cleanup`] once the
/// object is being deleted and removes the finalizer when cleanup
/// succeeded. See [`finalizer`](mod@super::finalizer) for the table of
/// cases.
///
/// `name` must be unique among the controllers touching the object
/// (e.g. `memcached.cache.example.com/cleanup`). The reconciler should use
/// the object inside the event: after adding the finalizer it is the newer
/// one the server returned.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use kubeforge::reconcile::finalizer::Event;
/// # use kubeforge::reconcile::uncached::finalizer;
/// # use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
/// # #[derive(Debug, thiserror::Error)] #[error("x")] struct MyError;
/// # async fn demo(api: kubeforge::Api<ConfigMap>, cm: Arc<ConfigMap>) {
/// let outcome = finalizer(&api, "example.com/cleanup", cm, |event| async move {
///     match event {
///         Event::Apply(cm) => { /* create what `cm` describes */ Ok::<_, MyError>(()) }
///         Event::Cleanup(cm) => { /* delete what was created */ Ok(()) }
///     }
/// })
/// .await;
/// # }
/// ```
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
    flow(
        name,
        obj,
        reconcile,
        |obj: Arc<K>| async move { add_finalizer(api, &obj, name).await },
        |obj: Arc<K>| async move { remove_finalizer(api, &obj, name).await },
    )
    .await
}
