//! [`Api<K>`]: the operations on one resource type, typed (any
//! `kube_core::Resource`) or dynamic (`DynamicObject` + `ApiResource`),
//! scoped to a namespace or to the whole cluster. Every URL, query string
//! and body comes from `kube_core::Request`; params, patches, watch events,
//! lists and `Status` are kube-core's types.
//!
//! When `K` is `PartialObjectMeta<T>` (whose `metadata_api()` is true) the
//! reads, watches and patches ask the server for metadata only, so a
//! metadata-only informer uses the same code as a full one.
//!
//! Subresources live in [`subresource`], explicit metadata-only calls in
//! [`metadata`].

pub mod metadata;
pub mod subresource;

use std::fmt;
use std::marker::PhantomData;

use either::Either;
use futures::{stream, Stream, TryStreamExt as _};
use kube_core::params::{
    DeleteParams, GetParams, ListParams, Patch, PatchParams, PostParams, WatchParams,
};
use kube_core::{NamespaceScope, ObjectList, Request, Resource, Status, WatchEvent};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::{decode_status, Error};
use super::transport::Client;

/// The page size [`Api::list_pages`] asks for when the params set none
/// (kubectl's and client-go's reflector's default).
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// Operations on resources of type `K` in one namespace or the whole
/// cluster. Cheap to clone.
pub struct Api<K> {
    request: Request,
    client: Client,
    namespace: Option<String>,
    _k: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Self {
            request: self.request.clone(),
            client: self.client.clone(),
            namespace: self.namespace.clone(),
            _k: PhantomData,
        }
    }
}

impl<K> fmt::Debug for Api<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("url_path", &self.request.url_path)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl<K: Resource<DynamicType = ()>> Api<K> {
    /// All objects of a cluster-scoped type, or of a namespaced type across
    /// every namespace.
    pub fn all(client: Client) -> Self {
        Self::all_with(client, &())
    }

    /// Objects of a namespaced type in `namespace`.
    pub fn namespaced(client: Client, namespace: &str) -> Self
    where
        K::Scope: NamespaceScope,
    {
        Self::namespaced_with(client, namespace, &())
    }

    /// Objects of a namespaced type in the client's default namespace.
    pub fn default_namespaced(client: Client) -> Self
    where
        K::Scope: NamespaceScope,
    {
        Self::default_namespaced_with(client, &())
    }
}

impl<K: Resource> Api<K> {
    /// Like [`Api::all`], for types described at run time (e.g.
    /// `DynamicObject` with an `ApiResource`).
    pub fn all_with(client: Client, dyntype: &K::DynamicType) -> Self {
        Self {
            request: Request::new(K::url_path(dyntype, None)),
            client,
            namespace: None,
            _k: PhantomData,
        }
    }

    /// Like [`Api::namespaced`], for types described at run time.
    pub fn namespaced_with(client: Client, namespace: &str, dyntype: &K::DynamicType) -> Self
    where
        K::Scope: NamespaceScope,
    {
        Self {
            request: Request::new(K::url_path(dyntype, Some(namespace))),
            client,
            namespace: Some(namespace.to_owned()),
            _k: PhantomData,
        }
    }

    /// Like [`Api::default_namespaced`], for types described at run time.
    pub fn default_namespaced_with(client: Client, dyntype: &K::DynamicType) -> Self
    where
        K::Scope: NamespaceScope,
    {
        let namespace = client.default_namespace().to_owned();
        Self::namespaced_with(client, &namespace, dyntype)
    }

    /// The namespace this `Api` is scoped to, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The collection URL path, e.g. `/apis/apps/v1/namespaces/ns/deployments`.
    pub fn resource_url(&self) -> &str {
        &self.request.url_path
    }

    /// The client this `Api` sends through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The kube-core request builder for this collection.
    pub fn request_builder(&self) -> &Request {
        &self.request
    }
}

pub(crate) fn serialize_body<T: Serialize>(data: &T) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(data)
        .map_err(|e| Error::Request(kube_core::request::Error::SerializeBody(e)))
}

/// Decodes an answer that is either the object or a `Status` (delete).
pub(crate) fn object_or_status<T: DeserializeOwned>(
    body: &[u8],
    what: &str,
) -> Result<Either<T, Status>, Error> {
    if let Some(status) = decode_status(body) {
        return Ok(Either::Right(status));
    }
    serde_json::from_slice(body)
        .map(Either::Left)
        .map_err(|source| Error::Decode {
            what: format!("response to {what}"),
            source,
        })
}

impl<K> Api<K>
where
    K: Resource + Clone + DeserializeOwned,
{
    /// Gets one object.
    pub async fn get(&self, name: &str) -> Result<K, Error> {
        self.get_with(name, &GetParams::default()).await
    }

    /// Gets one object with explicit params (e.g. `resourceVersion=0` to
    /// allow a cached answer).
    pub async fn get_with(&self, name: &str, gp: &GetParams) -> Result<K, Error> {
        let req = if K::metadata_api() {
            self.request.get_metadata(name, gp)?
        } else {
            self.request.get(name, gp)?
        };
        self.client.request(req).await
    }

    /// Gets one object, `None` when it does not exist.
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>, Error> {
        match self.get(name).await {
            Ok(obj) => Ok(Some(obj)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Lists objects (one page when `lp.limit` is set).
    pub async fn list(&self, lp: &ListParams) -> Result<ObjectList<K>, Error> {
        let req = if K::metadata_api() {
            self.request.list_metadata(lp)?
        } else {
            self.request.list(lp)?
        };
        self.client.request(req).await
    }

    /// Lists page by page, following `metadata.continue` until the server
    /// has no more. Pages hold [`DEFAULT_PAGE_SIZE`] items unless `lp.limit`
    /// says otherwise. An expired continue token ends the stream with an
    /// error for which `is_gone()` is true; the caller relists.
    pub fn list_pages(
        &self,
        lp: &ListParams,
    ) -> impl Stream<Item = Result<ObjectList<K>, Error>> + Send + use<K>
    where
        K: Send + 'static,
    {
        let api = self.clone();
        let mut first = lp.clone();
        if first.limit.is_none() {
            first.limit = Some(DEFAULT_PAGE_SIZE);
        }
        stream::try_unfold(Some(first), move |next| {
            let api = api.clone();
            async move {
                let Some(lp) = next else {
                    return Ok(None);
                };
                let page = api.list(&lp).await?;
                let next = page
                    .metadata
                    .continue_
                    .clone()
                    .filter(|token| !token.is_empty())
                    .map(|token| ListParams {
                        continue_token: Some(token),
                        ..lp
                    });
                Ok(Some((page, next)))
            }
        })
    }

    /// Every object, fetched page by page (see [`Api::list_pages`]).
    pub fn list_stream(
        &self,
        lp: &ListParams,
    ) -> impl Stream<Item = Result<K, Error>> + Send + use<K>
    where
        K: Send + 'static,
    {
        self.list_pages(lp)
            .map_ok(|page| stream::iter(page.items.into_iter().map(Ok)))
            .try_flatten()
    }

    /// Creates an object.
    pub async fn create(&self, pp: &PostParams, data: &K) -> Result<K, Error>
    where
        K: Serialize,
    {
        let req = self.request.create(pp, serialize_body(data)?)?;
        self.client.request(req).await
    }

    /// Replaces an object (`metadata.resourceVersion` makes it conditional).
    pub async fn replace(&self, name: &str, pp: &PostParams, data: &K) -> Result<K, Error>
    where
        K: Serialize,
    {
        let req = self.request.replace(name, pp, serialize_body(data)?)?;
        self.client.request(req).await
    }

    /// Patches an object: JSON merge, JSON patch, strategic merge, or
    /// server-side apply (`PatchParams::apply("manager")`, `.force()`).
    pub async fn patch<P: Serialize + fmt::Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K, Error> {
        let req = if K::metadata_api() {
            self.request.patch_metadata(name, pp, patch)?
        } else {
            self.request.patch(name, pp, patch)?
        };
        self.client.request(req).await
    }

    /// Deletes an object. The server answers with the object while
    /// finalizers hold it (or for kinds such as Pods), else with a success
    /// `Status`.
    pub async fn delete(&self, name: &str, dp: &DeleteParams) -> Result<Either<K, Status>, Error> {
        let req = self.request.delete(name, dp)?;
        let what = format!("DELETE {}/{name}", self.request.url_path);
        let body = self.client.request_bytes(req).await?;
        object_or_status(&body, &what)
    }

    /// Deletes every object matching the list params' selectors.
    pub async fn delete_collection(
        &self,
        dp: &DeleteParams,
        lp: &ListParams,
    ) -> Result<Either<ObjectList<K>, Status>, Error> {
        let req = self.request.delete_collection(dp, lp)?;
        let what = format!("DELETE {}", self.request.url_path);
        let body = self.client.request_bytes(req).await?;
        object_or_status(&body, &what)
    }

    /// Watches for changes after `version` (`"0"` or `""` start with
    /// synthetic ADDED events for the current state). Events are decoded one
    /// at a time as they arrive; an `ERROR` event becomes an `Err` carrying
    /// the server's `Status`.
    pub async fn watch(
        &self,
        wp: &WatchParams,
        version: &str,
    ) -> Result<impl Stream<Item = Result<WatchEvent<K>, Error>> + Send + use<K>, Error> {
        let req = if K::metadata_api() {
            self.request.watch_metadata(wp, version)?
        } else {
            self.request.watch(wp, version)?
        };
        self.client.request_events::<K>(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Config;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use kube_core::discovery::ApiResource;
    use kube_core::{DynamicObject, GroupVersionKind};

    fn client() -> Client {
        let mut config = Config::new("https://127.0.0.1:6443".parse().unwrap());
        config.root_certs = Some(Vec::new());
        config.accept_invalid_certs = true;
        config.default_namespace = "team".into();
        Client::new(config).unwrap()
    }

    fn uri(req: http::Request<Vec<u8>>) -> String {
        crate::client::transport::canonical_path_and_query(req.uri())
    }

    #[test]
    fn handles_are_send_sync_and_cheap_to_clone() {
        fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}
        assert_send_sync::<Client>();
        assert_send_sync::<Api<Pod>>();
        assert_send_sync::<Api<DynamicObject>>();
    }

    #[tokio::test]
    async fn constructors_build_namespaced_cluster_and_dynamic_paths() {
        let c = client();
        assert_eq!(
            Api::<Pod>::namespaced(c.clone(), "ns").resource_url(),
            "/api/v1/namespaces/ns/pods"
        );
        assert_eq!(Api::<Pod>::all(c.clone()).resource_url(), "/api/v1/pods");
        assert_eq!(
            Api::<Deployment>::default_namespaced(c.clone()).resource_url(),
            "/apis/apps/v1/namespaces/team/deployments"
        );
        assert_eq!(
            Api::<Namespace>::all(c.clone()).resource_url(),
            "/api/v1/namespaces"
        );
        assert_eq!(
            Api::<ClusterRole>::all(c.clone()).resource_url(),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles"
        );
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("ex.com", "v1", "Widget"),
            "widgets",
        );
        let dynamic = Api::<DynamicObject>::namespaced_with(c.clone(), "ns", &ar);
        assert_eq!(
            dynamic.resource_url(),
            "/apis/ex.com/v1/namespaces/ns/widgets"
        );
        assert_eq!(dynamic.namespace(), Some("ns"));
        let dynamic = Api::<DynamicObject>::default_namespaced_with(c.clone(), &ar);
        assert_eq!(dynamic.namespace(), Some("team"));
        assert_eq!(
            Api::<DynamicObject>::all_with(c, &ar).resource_url(),
            "/apis/ex.com/v1/widgets"
        );
    }

    #[tokio::test]
    async fn request_builders_carry_subresources_and_every_query_parameter() {
        let api = Api::<Deployment>::namespaced(client(), "ns");
        let r = api.request_builder();
        assert_eq!(
            uri(r.get_subresource("status", "web").unwrap()),
            "/apis/apps/v1/namespaces/ns/deployments/web/status"
        );
        assert_eq!(
            uri(r.get_subresource("scale", "web").unwrap()),
            "/apis/apps/v1/namespaces/ns/deployments/web/scale"
        );
        assert_eq!(
            uri(r.get("web", &GetParams::at("5")).unwrap()),
            "/apis/apps/v1/namespaces/ns/deployments/web?resourceVersion=5"
        );
        let lp = ListParams::default()
            .labels("a=b")
            .fields("metadata.name=web")
            .limit(10)
            .continue_token("tok");
        assert_eq!(
            uri(r.list(&lp).unwrap()),
            "/apis/apps/v1/namespaces/ns/deployments?fieldSelector=metadata.name%3Dweb&labelSelector=a%3Db&limit=10&continue=tok"
        );
        let wp = WatchParams::default().timeout(300);
        assert_eq!(
            uri(r.watch(&wp, "42").unwrap()),
            "/apis/apps/v1/namespaces/ns/deployments?watch=true&timeoutSeconds=300&allowWatchBookmarks=true&resourceVersion=42"
        );
        let pp = PatchParams::apply("mgr").force();
        let patch: Patch<serde_json::Value> = Patch::Apply(serde_json::json!({}));
        assert_eq!(
            uri(r.patch("web", &pp, &patch).unwrap()),
            "/apis/apps/v1/namespaces/ns/deployments/web?force=true&fieldManager=mgr"
        );
        // Invalid combinations are refused before anything is sent.
        let bad = PatchParams::default().force();
        let merge: Patch<serde_json::Value> = Patch::Merge(serde_json::json!({}));
        assert!(r.patch("web", &bad, &merge).is_err());
        assert!(r
            .list(&ListParams::default().matching(kube_core::params::VersionMatch::Exact))
            .is_err());
    }

    #[test]
    fn delete_answers_decode_as_object_or_status() {
        let status =
            br#"{"kind":"Status","apiVersion":"v1","status":"Success","details":{"name":"a"}}"#;
        let got: Either<Pod, Status> = object_or_status(status, "DELETE x").unwrap();
        assert!(got.right().unwrap().is_success());
        let pod = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}"#;
        let got: Either<Pod, Status> = object_or_status(pod, "DELETE x").unwrap();
        assert_eq!(got.left().unwrap().metadata.name.as_deref(), Some("a"));
        let err = object_or_status::<Pod>(b"<html>", "DELETE x").unwrap_err();
        assert!(matches!(err, Error::Decode { .. }));
    }
}
