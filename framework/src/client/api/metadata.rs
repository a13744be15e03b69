//! Metadata-only reads, watches and patches: the server answers with
//! `PartialObjectMetadata` (`Accept: application/json;as=PartialObjectMetadata;
//! g=meta.k8s.io;v=v1`), so a cache of owned objects keeps names, labels,
//! owner references and resourceVersions without the objects' bodies.

use std::fmt;

use futures::Stream;
use kube_core::params::{GetParams, ListParams, Patch, PatchParams, WatchParams};
use kube_core::{ObjectList, PartialObjectMeta, Resource, WatchEvent};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::Api;
use crate::client::error::Error;

impl<K> Api<K>
where
    K: Resource + Clone + DeserializeOwned,
{
    /// Gets one object's metadata.
    pub async fn get_metadata(&self, name: &str) -> Result<PartialObjectMeta<K>, Error> {
        let req = self.request.get_metadata(name, &GetParams::default())?;
        self.client.request(req).await
    }

    /// Gets one object's metadata, `None` when it does not exist.
    pub async fn get_metadata_opt(
        &self,
        name: &str,
    ) -> Result<Option<PartialObjectMeta<K>>, Error> {
        match self.get_metadata(name).await {
            Ok(meta) => Ok(Some(meta)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Lists objects' metadata.
    pub async fn list_metadata(
        &self,
        lp: &ListParams,
    ) -> Result<ObjectList<PartialObjectMeta<K>>, Error> {
        let req = self.request.list_metadata(lp)?;
        self.client.request(req).await
    }

    /// Watches objects' metadata.
    pub async fn watch_metadata(
        &self,
        wp: &WatchParams,
        version: &str,
    ) -> Result<
        impl Stream<Item = Result<WatchEvent<PartialObjectMeta<K>>, Error>> + Send + use<K>,
        Error,
    > {
        let req = self.request.watch_metadata(wp, version)?;
        self.client
            .request_events::<PartialObjectMeta<K>>(req)
            .await
    }

    /// Patches an object and returns only its metadata.
    pub async fn patch_metadata<P: Serialize + fmt::Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<PartialObjectMeta<K>, Error> {
        let req = self.request.patch_metadata(name, pp, patch)?;
        self.client.request(req).await
    }
}
