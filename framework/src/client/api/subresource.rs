//! Subresources: `status` (the object, written only through `/status` when
//! the type enables it), `scale` (an `autoscaling/v1` `Scale`), and a
//! generic form for any other subresource.

use std::fmt;

use k8s_openapi::api::autoscaling::v1::Scale;
use kube_core::params::{Patch, PatchParams, PostParams};
use kube_core::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{serialize_body, Api};
use crate::client::error::Error;

impl<K> Api<K>
where
    K: Resource + Clone + DeserializeOwned,
{
    /// Gets any subresource of `name`, decoded as `T`.
    pub async fn get_subresource<T: DeserializeOwned>(
        &self,
        subresource: &str,
        name: &str,
    ) -> Result<T, Error> {
        let req = self.request.get_subresource(subresource, name)?;
        self.client.request(req).await
    }

    /// Patches any subresource of `name`.
    pub async fn patch_subresource<P, T>(
        &self,
        subresource: &str,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<T, Error>
    where
        P: Serialize + fmt::Debug,
        T: DeserializeOwned,
    {
        let req = self
            .request
            .patch_subresource(subresource, name, pp, patch)?;
        self.client.request(req).await
    }

    /// Replaces any subresource of `name`.
    pub async fn replace_subresource<I, T>(
        &self,
        subresource: &str,
        name: &str,
        pp: &PostParams,
        data: &I,
    ) -> Result<T, Error>
    where
        I: Serialize,
        T: DeserializeOwned,
    {
        let req = self
            .request
            .replace_subresource(subresource, name, pp, serialize_body(data)?)?;
        self.client.request(req).await
    }

    /// Gets the object through its `status` subresource.
    pub async fn get_status(&self, name: &str) -> Result<K, Error> {
        self.get_subresource("status", name).await
    }

    /// Patches the `status` subresource (e.g. a merge patch of
    /// `{"status": {...}}`, or server-side apply of the status).
    pub async fn patch_status<P: Serialize + fmt::Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K, Error> {
        self.patch_subresource("status", name, pp, patch).await
    }

    /// Replaces the `status` subresource; only `status` of `data` is kept by
    /// the server, and `metadata.resourceVersion` makes it conditional.
    pub async fn replace_status<I: Serialize>(
        &self,
        name: &str,
        pp: &PostParams,
        data: &I,
    ) -> Result<K, Error> {
        self.replace_subresource("status", name, pp, data).await
    }

    /// Gets the `scale` subresource.
    pub async fn get_scale(&self, name: &str) -> Result<Scale, Error> {
        self.get_subresource("scale", name).await
    }

    /// Patches the `scale` subresource.
    pub async fn patch_scale<P: Serialize + fmt::Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<Scale, Error> {
        self.patch_subresource("scale", name, pp, patch).await
    }

    /// Replaces the `scale` subresource.
    pub async fn replace_scale(
        &self,
        name: &str,
        pp: &PostParams,
        data: &Scale,
    ) -> Result<Scale, Error> {
        self.replace_subresource("scale", name, pp, data).await
    }
}
