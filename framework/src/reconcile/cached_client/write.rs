//! The cached client's writes: each goes straight to the API server, and
//! the object it answers with is recorded so later cached reads of its type
//! wait for the informer to catch up (see the parent module).
//!
//! Requests are built with `kube_core::Request` from the object's own
//! namespace and name, so one generic method serves namespaced and
//! cluster-scoped types alike.

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use either::Either;
use json_patch::Patch as JsonPatch;
use kube_core::params::{DeleteParams, Patch, PatchParams, PostParams};
use kube_core::{Request, Resource};
use serde::Serialize;

use super::{CachedClient, CachedObject};
use crate::cache::ObjectKey;
use crate::client::api::object_or_status;
use crate::reconcile::error::Error;
use crate::reconcile::finalizer::{
    self, add_finalizer_patch, remove_finalizer_patch, Event, FinalizerError, Outcome,
};
use crate::reconcile::write::{
    apply_body, apply_params, mutate_keeping_key, to_json, OperationResult,
};

fn request<K: Resource<DynamicType = ()>>(namespace: Option<&str>) -> Request {
    Request::new(K::url_path(&(), namespace.filter(|ns| !ns.is_empty())))
}

fn name_of<K: Resource<DynamicType = ()>>(obj: &K) -> Result<&str, Error> {
    obj.meta()
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::MissingMetadata {
            object: format!("{} {}", K::kind(&()), ObjectKey::of(obj)),
            field: "metadata.name",
        })
}

fn serialize<K: Serialize>(obj: &K, what: impl FnOnce() -> String) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(obj).map_err(|source| Error::Serialize {
        what: what(),
        source,
    })
}

fn describe<K: Resource<DynamicType = ()>>(namespace: Option<&str>, name: &str) -> String {
    match namespace.filter(|ns| !ns.is_empty()) {
        Some(ns) => format!("{} {ns}/{name}", K::kind(&())),
        None => format!("{} {name}", K::kind(&())),
    }
}

impl CachedClient {
    /// Sends `req` and records the object the server answered with.
    async fn send<K>(
        &self,
        req: http::Request<Vec<u8>>,
        what: impl FnOnce() -> String,
    ) -> Result<K, Error>
    where
        K: CachedObject,
    {
        let written: K = self
            .inner
            .client
            .request(req)
            .await
            .map_err(|e| Error::api(what(), e))?;
        self.observe_write(&written);
        Ok(written)
    }

    /// Creates `obj` in its namespace.
    pub async fn create<K: CachedObject + Serialize>(&self, obj: &K) -> Result<K, Error> {
        let ns = obj.meta().namespace.as_deref();
        let what = || {
            format!(
                "create {}",
                describe::<K>(ns, obj.meta().name.as_deref().unwrap_or(""))
            )
        };
        let req = request::<K>(ns)
            .create(&PostParams::default(), serialize(obj, what)?)
            .map_err(|e| Error::api(what(), e.into()))?;
        self.send(req, what).await
    }

    /// Replaces `obj` (PUT); its `resourceVersion`, when set, makes the
    /// write conditional (409 Conflict if the object changed since).
    pub async fn replace<K: CachedObject + Serialize>(&self, obj: &K) -> Result<K, Error> {
        let ns = obj.meta().namespace.as_deref();
        let name = name_of(obj)?;
        let what = || format!("update {}", describe::<K>(ns, name));
        let req = request::<K>(ns)
            .replace(name, &PostParams::default(), serialize(obj, what)?)
            .map_err(|e| Error::api(what(), e.into()))?;
        self.send(req, what).await
    }

    /// Patches object `name` in `namespace` (`""` for cluster-scoped
    /// objects): merge, JSON, strategic merge or server-side apply.
    pub async fn patch<K, P>(
        &self,
        namespace: &str,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K, Error>
    where
        K: CachedObject,
        P: Serialize + fmt::Debug,
    {
        let what = || format!("patch {}", describe::<K>(Some(namespace), name));
        let req = if K::metadata_api() {
            request::<K>(Some(namespace)).patch_metadata(name, pp, patch)
        } else {
            request::<K>(Some(namespace)).patch(name, pp, patch)
        }
        .map_err(|e| Error::api(what(), e.into()))?;
        self.send(req, what).await
    }

    /// Server-side applies `obj` as this client's
    /// [field manager](Self::field_manager), taking over conflicting fields
    /// (`force`), as controllers usually do. Creates the object when it does
    /// not exist. Send only the fields the controller owns.
    pub async fn apply<K: CachedObject + Serialize>(&self, obj: &K) -> Result<K, Error> {
        let manager = self.inner.field_manager.clone();
        self.apply_as(obj, &manager, true).await
    }

    /// [`apply`](Self::apply) with an explicit field manager and `force`.
    pub async fn apply_as<K: CachedObject + Serialize>(
        &self,
        obj: &K,
        field_manager: &str,
        force: bool,
    ) -> Result<K, Error> {
        let ns = obj.meta().namespace.as_deref();
        let name = name_of(obj)?;
        let what = || format!("apply {}", describe::<K>(ns, name));
        let body = apply_body(
            to_json(obj, what)?,
            &K::api_version(&()),
            &K::kind(&()),
            name,
            what,
        )?;
        let req = request::<K>(ns)
            .patch(
                name,
                &apply_params(field_manager, force),
                &Patch::Apply(body),
            )
            .map_err(|e| Error::api(what(), e.into()))?;
        self.send(req, what).await
    }

    /// Deletes object `name` in `namespace`. Returns the object while
    /// finalizers hold it (with `deletionTimestamp` set), `None` once it is
    /// gone. A missing object is an error for which
    /// [`is_not_found`](Error::is_not_found) is true.
    pub async fn delete<K: CachedObject>(
        &self,
        namespace: &str,
        name: &str,
        dp: &DeleteParams,
    ) -> Result<Option<K>, Error> {
        let what = || format!("delete {}", describe::<K>(Some(namespace), name));
        let req = request::<K>(Some(namespace))
            .delete(name, dp)
            .map_err(|e| Error::api(what(), e.into()))?;
        let body = self
            .inner
            .client
            .request_bytes(req)
            .await
            .map_err(|e| Error::api(what(), e))?;
        match object_or_status::<K>(&body, &what()).map_err(|e| Error::api(what(), e))? {
            Either::Left(held) => {
                self.observe_write(&held);
                Ok(Some(held))
            }
            Either::Right(_) => Ok(None),
        }
    }

    /// Merge-patches the `status` subresource of `obj` with
    /// `{"status": status}` (lists inside are replaced whole).
    pub async fn patch_status<K, S>(&self, obj: &K, status: &S) -> Result<K, Error>
    where
        K: CachedObject,
        S: Serialize,
    {
        let ns = obj.meta().namespace.as_deref();
        let name = name_of(obj)?;
        let what = || format!("patch status of {}", describe::<K>(ns, name));
        let body = serde_json::json!({ "status": to_json(status, what)? });
        let req = request::<K>(ns)
            .patch_subresource("status", name, &PatchParams::default(), &Patch::Merge(body))
            .map_err(|e| Error::api(what(), e.into()))?;
        self.send(req, what).await
    }

    /// Replaces the `status` subresource of `obj` (PUT to `/status`, as
    /// controller-runtime's `Status().Update`): the server keeps `obj`'s
    /// status whole and ignores the rest, so a field left out is cleared,
    /// which a merge patch cannot do. `obj`'s `resourceVersion`, when set,
    /// makes the write conditional (409 Conflict if the object changed
    /// since it was read).
    pub async fn replace_status<K: CachedObject + Serialize>(&self, obj: &K) -> Result<K, Error> {
        let ns = obj.meta().namespace.as_deref();
        let name = name_of(obj)?;
        let what = || format!("update status of {}", describe::<K>(ns, name));
        let req = request::<K>(ns)
            .replace_subresource(
                "status",
                name,
                &PostParams::default(),
                serialize(obj, what)?,
            )
            .map_err(|e| Error::api(what(), e.into()))?;
        self.send(req, what).await
    }

    /// Server-side applies `status` to the `status` subresource of `obj` as
    /// this client's field manager, with `force`.
    pub async fn apply_status<K, S>(&self, obj: &K, status: &S) -> Result<K, Error>
    where
        K: CachedObject,
        S: Serialize,
    {
        let ns = obj.meta().namespace.as_deref();
        let name = name_of(obj)?;
        let what = || format!("apply status of {}", describe::<K>(ns, name));
        let body = serde_json::json!({ "status": to_json(status, what)? });
        let body = apply_body(body, &K::api_version(&()), &K::kind(&()), name, what)?;
        let req = request::<K>(ns)
            .patch_subresource(
                "status",
                name,
                &apply_params(&self.inner.field_manager, true),
                &Patch::Apply(body),
            )
            .map_err(|e| Error::api(what(), e.into()))?;
        self.send(req, what).await
    }

    /// controller-runtime's `CreateOrUpdate`, reading through the cache:
    /// `mutate` receives the cached object (or `K::default()` named `name`
    /// in `namespace`) and brings it to the desired state; the object is
    /// created, replaced (conditionally, on the resourceVersion read) or
    /// left alone when `mutate` changed nothing. A stale cache answers 409
    /// Conflict (or 409 AlreadyExists), and the reconcile is retried.
    pub async fn create_or_update<K, F>(
        &self,
        namespace: &str,
        name: &str,
        mutate: F,
    ) -> Result<(OperationResult, K), Error>
    where
        K: CachedObject + Serialize + Default,
        F: FnOnce(&mut K),
    {
        let what = || describe::<K>(Some(namespace), name);
        match self.get_opt::<K>(namespace, name).await? {
            None => {
                let mut obj = K::default();
                obj.meta_mut().name = Some(name.to_owned());
                if !namespace.is_empty() {
                    obj.meta_mut().namespace = Some(namespace.to_owned());
                }
                mutate_keeping_key(&mut obj, mutate)?;
                Ok((OperationResult::Created, self.create(&obj).await?))
            }
            Some(cached) => {
                let mut obj = K::clone(&cached);
                let before = to_json(&obj, what)?;
                mutate_keeping_key(&mut obj, mutate)?;
                if to_json(&obj, what)? == before {
                    return Ok((OperationResult::Unchanged, obj));
                }
                Ok((OperationResult::Updated, self.replace(&obj).await?))
            }
        }
    }

    /// The finalizer flow (see [`finalizer`](mod@crate::reconcile::finalizer)
    /// for the cases) with this client's writes, so the finalizer edits are
    /// read back by later cached reads: adds finalizer `name` before the
    /// first [`Event::Apply`], runs [`Event::Cleanup`] once `obj` is being
    /// deleted, and removes the finalizer when cleanup succeeded.
    ///
    /// `name` must be unique among the controllers touching the object
    /// (e.g. `memcached.cache.example.com/cleanup`). The reconciler should
    /// use the object inside the event: after adding the finalizer it is
    /// the newer one the server returned. In a reconcile,
    /// [`Context::finalizer`](crate::controller::Context::finalizer) hands
    /// the closure the context as well.
    pub async fn finalizer<K, F, Fut, T, E>(
        &self,
        name: &str,
        obj: Arc<K>,
        reconcile: F,
    ) -> Result<Outcome<T>, FinalizerError<E>>
    where
        K: CachedObject,
        F: FnOnce(Event<K>) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: StdError + 'static,
    {
        finalizer::flow(
            name,
            obj,
            reconcile,
            |obj: Arc<K>| async move { self.add_finalizer(&*obj, name).await },
            |obj: Arc<K>| async move { self.remove_finalizer(&*obj, name).await },
        )
        .await
    }

    /// Adds finalizer `name` to the stored object `obj` (a JSON patch
    /// guarded by a `test` of what was read, see
    /// [`add_finalizer_patch`]). Returns the updated object, or `None` when
    /// `obj` already had it and nothing was sent. Refuses objects being
    /// deleted ([`Error::BeingDeleted`]).
    pub async fn add_finalizer<K: CachedObject>(
        &self,
        obj: &K,
        name: &str,
    ) -> Result<Option<K>, Error> {
        let patch = add_finalizer_patch(obj, name);
        if patch.is_some() && obj.meta().deletion_timestamp.is_some() {
            return Err(Error::BeingDeleted {
                object: ObjectKey::of(obj).to_string(),
                finalizer: name.to_owned(),
            });
        }
        self.patch_finalizers(obj, patch).await
    }

    /// Removes finalizer `name` from the stored object `obj`, testing it is
    /// still where it was read (see [`remove_finalizer_patch`]). Returns the
    /// updated object (which the server may already have deleted, if it was
    /// the last finalizer of a deleting object), or `None` when `obj` did
    /// not have it.
    pub async fn remove_finalizer<K: CachedObject>(
        &self,
        obj: &K,
        name: &str,
    ) -> Result<Option<K>, Error> {
        self.patch_finalizers(obj, remove_finalizer_patch(obj, name))
            .await
    }

    /// Sends a finalizer edit of `obj` (a JSON patch guarded by its `test`
    /// operations); `None` when there is nothing to send.
    async fn patch_finalizers<K: CachedObject>(
        &self,
        obj: &K,
        patch: Option<JsonPatch>,
    ) -> Result<Option<K>, Error> {
        let Some(patch) = patch else {
            return Ok(None);
        };
        let meta = obj.meta();
        let patch: Patch<()> = Patch::Json(patch);
        self.patch(
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
            &PatchParams::default(),
            &patch,
        )
        .await
        .map(Some)
    }
}
