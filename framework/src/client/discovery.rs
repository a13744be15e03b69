//! [`Discovery`]: which groups, versions and resources the API server
//! serves, and the REST mapping from a kind (or a name a user types) to a
//! resource: plural, scope, verbs, subresources.
//!
//! Follows client-go's discovery client (discovery/discovery_client.go):
//! `/api` and `/apis` are requested with the aggregated-discovery `Accept`
//! header; the answer is read as aggregated (apidiscovery.k8s.io v2 or
//! v2beta1) only when its **Content-Type** says so, and used only when both
//! answers are aggregated. Otherwise legacy discovery fetches every
//! `/api/{v}` and `/apis/{g}/{v}` concurrently; a group-version that fails
//! (or is reported `Stale`) is recorded in [`Discovery::failures`] rather
//! than failing the whole discovery. A 404 or 403 on `/api` or `/apis` is
//! tolerated as client-go tolerates it.

use bytes::Bytes;
use kube_core::discovery::v2::{APIGroupDiscoveryList, ACCEPT_AGGREGATED_DISCOVERY_V2};
use kube_core::discovery::{ApiResource, Scope};
use kube_core::GroupVersionKind;
use serde::Deserialize;

use super::error::{api_error, Error};
use super::transport::Client;

/// One resource the server serves in one group-version.
#[derive(Clone, Debug)]
pub struct DiscoveredResource {
    /// Group, version, kind and plural: enough for `Api::all_with` and
    /// `Api::namespaced_with` on `DynamicObject`.
    pub resource: ApiResource,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// The singular name (`deployment`).
    pub singular: String,
    /// The verbs the server allows (`get`, `list`, `watch`, ...).
    pub verbs: Vec<String>,
    /// Short names (`deploy`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Subresources such as `status` and `scale`.
    pub subresources: Vec<DiscoveredSubresource>,
}

impl DiscoveredResource {
    /// Whether the server allows `verb` on this resource.
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// Whether objects live in namespaces.
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    /// The subresource named `name`, if served.
    pub fn subresource(&self, name: &str) -> Option<&DiscoveredSubresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// The group-version-kind of the objects.
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::gvk(
            &self.resource.group,
            &self.resource.version,
            &self.resource.kind,
        )
    }
}

/// A subresource of a [`DiscoveredResource`].
#[derive(Clone, Debug)]
pub struct DiscoveredSubresource {
    /// `status`, `scale`, ...
    pub name: String,
    /// What the subresource answers with (`autoscaling/v1 Scale` for scale).
    pub kind: GroupVersionKind,
    /// The verbs it allows.
    pub verbs: Vec<String>,
}

/// One served version of a group.
#[derive(Clone, Debug)]
pub struct GroupVersionResources {
    /// The version (`v1`).
    pub version: String,
    /// Its resources.
    pub resources: Vec<DiscoveredResource>,
}

/// One API group (`""` for the core group).
#[derive(Clone, Debug)]
pub struct ApiGroup {
    /// The group name.
    pub name: String,
    /// Served versions with their resources, preferred first.
    pub versions: Vec<GroupVersionResources>,
    /// The server's preferred version.
    pub preferred_version: Option<String>,
}

impl ApiGroup {
    /// The preferred version (or the first one served).
    pub fn preferred_version_or_first(&self) -> Option<&str> {
        self.preferred_version
            .as_deref()
            .or_else(|| self.versions.first().map(|v| v.version.as_str()))
    }

    /// Versions ordered with the preferred one first.
    fn versions_preferred_first(&self) -> impl Iterator<Item = &GroupVersionResources> {
        let preferred = self.preferred_version_or_first();
        let first = self
            .versions
            .iter()
            .filter(move |v| Some(v.version.as_str()) == preferred);
        let rest = self
            .versions
            .iter()
            .filter(move |v| Some(v.version.as_str()) != preferred);
        first.chain(rest)
    }

    /// The resources of the preferred version.
    pub fn recommended_resources(&self) -> &[DiscoveredResource] {
        let preferred = self.preferred_version_or_first();
        self.versions
            .iter()
            .find(|v| Some(v.version.as_str()) == preferred)
            .map_or(&[], |v| v.resources.as_slice())
    }
}

/// A group-version that could not be discovered.
#[derive(Debug)]
pub struct DiscoveryFailure {
    /// `apps/v1`, or `v1` for the core group.
    pub group_version: String,
    /// Why.
    pub error: Error,
}

/// What the API server serves, with lookups by kind and by name.
#[derive(Debug, Default)]
pub struct Discovery {
    groups: Vec<ApiGroup>,
    failures: Vec<DiscoveryFailure>,
    aggregated: bool,
}

// Legacy discovery documents, with every field defaulted so a terse server
// (or an older one) still decodes.
#[derive(Deserialize, Default)]
struct ApiVersionsDoc {
    #[serde(default)]
    versions: Vec<String>,
}

#[derive(Deserialize, Default)]
struct ApiGroupListDoc {
    #[serde(default)]
    groups: Vec<ApiGroupDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiGroupDoc {
    name: String,
    #[serde(default)]
    versions: Vec<GroupVersionDoc>,
    #[serde(default)]
    preferred_version: Option<GroupVersionDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupVersionDoc {
    #[serde(default)]
    group_version: String,
    version: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiResourceListDoc {
    #[serde(default)]
    resources: Vec<ApiResourceDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiResourceDoc {
    name: String,
    #[serde(default)]
    singular_name: String,
    #[serde(default)]
    namespaced: bool,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    group: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    short_names: Option<Vec<String>>,
    #[serde(default)]
    categories: Option<Vec<String>>,
}

fn get_request(path: &str, accept: &str) -> Result<http::Request<Vec<u8>>, Error> {
    http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())
        .map_err(|e| Error::Request(kube_core::request::Error::BuildRequest(e)))
}

/// True when the Content-Type names an aggregated discovery list.
fn is_aggregated(headers: &http::HeaderMap) -> bool {
    let Some(ct) = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mut parts = ct.split(';').map(str::trim);
    if !parts
        .next()
        .is_some_and(|m| m.eq_ignore_ascii_case("application/json"))
    {
        return false;
    }
    let (mut g, mut v, mut r#as) = (false, false, false);
    for param in parts {
        match param.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
            Some(("g", "apidiscovery.k8s.io")) => g = true,
            Some(("v", "v2" | "v2beta1")) => v = true,
            Some(("as", "APIGroupDiscoveryList")) => r#as = true,
            _ => {}
        }
    }
    g && v && r#as
}

fn decode<T: for<'de> Deserialize<'de>>(body: &[u8], what: &str) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|source| Error::Decode {
        what: what.to_owned(),
        source,
    })
}

/// 404 and 403 on `/api` or `/apis` mean "nothing here" (client-go ServerGroups).
fn tolerated(status: http::StatusCode) -> bool {
    status == http::StatusCode::NOT_FOUND || status == http::StatusCode::FORBIDDEN
}

impl Discovery {
    /// Discovers everything the server serves, aggregated when offered.
    pub async fn run(client: &Client) -> Result<Self, Error> {
        let (core, apis) = futures::join!(
            client.send(get_request("/api", ACCEPT_AGGREGATED_DISCOVERY_V2)?),
            client.send(get_request("/apis", ACCEPT_AGGREGATED_DISCOVERY_V2)?),
        );
        let (core, apis) = (core?, apis?);
        let agg = |r: &http::Response<Bytes>| r.status().is_success() && is_aggregated(r.headers());
        if agg(&core) && agg(&apis) {
            let core_list: APIGroupDiscoveryList =
                decode(core.body(), "aggregated discovery from /api")?;
            let apis_list: APIGroupDiscoveryList =
                decode(apis.body(), "aggregated discovery from /apis")?;
            let mut discovery = Discovery {
                aggregated: true,
                ..Default::default()
            };
            discovery.add_aggregated(core_list);
            discovery.add_aggregated(apis_list);
            return Ok(discovery);
        }
        // Reuse legacy answers; ask again for any that came back aggregated.
        let core = if agg(&core) { None } else { Some(core) };
        let apis = if agg(&apis) { None } else { Some(apis) };
        Self::legacy_from(client, core, apis).await
    }

    /// Legacy discovery only (`/api`, `/apis`, then every group-version).
    pub async fn run_legacy(client: &Client) -> Result<Self, Error> {
        Self::legacy_from(client, None, None).await
    }

    async fn legacy_from(
        client: &Client,
        core: Option<http::Response<Bytes>>,
        apis: Option<http::Response<Bytes>>,
    ) -> Result<Self, Error> {
        let core = match core {
            Some(r) => r,
            None => {
                client
                    .send(get_request("/api", "application/json")?)
                    .await?
            }
        };
        let apis = match apis {
            Some(r) => r,
            None => {
                client
                    .send(get_request("/apis", "application/json")?)
                    .await?
            }
        };
        let versions: ApiVersionsDoc = if core.status().is_success() {
            decode(core.body(), "/api")?
        } else if tolerated(core.status()) {
            ApiVersionsDoc::default()
        } else {
            return Err(api_error(
                core.status(),
                &http::Method::GET,
                core.headers(),
                core.body(),
            ));
        };
        let groups: ApiGroupListDoc = if apis.status().is_success() {
            decode(apis.body(), "/apis")?
        } else if tolerated(apis.status()) {
            ApiGroupListDoc::default()
        } else {
            return Err(api_error(
                apis.status(),
                &http::Method::GET,
                apis.headers(),
                apis.body(),
            ));
        };

        // (group, version, path) for every group-version, core first.
        let mut targets: Vec<(String, String, String)> = versions
            .versions
            .iter()
            .map(|v| (String::new(), v.clone(), format!("/api/{v}")))
            .collect();
        let mut groups_out: Vec<ApiGroup> = Vec::new();
        if !versions.versions.is_empty() {
            groups_out.push(ApiGroup {
                name: String::new(),
                versions: Vec::new(),
                preferred_version: versions.versions.first().cloned(),
            });
        }
        for g in &groups.groups {
            for v in &g.versions {
                let gv = if v.group_version.is_empty() {
                    format!("{}/{}", g.name, v.version)
                } else {
                    v.group_version.clone()
                };
                targets.push((g.name.clone(), v.version.clone(), format!("/apis/{gv}")));
            }
            groups_out.push(ApiGroup {
                name: g.name.clone(),
                versions: Vec::new(),
                preferred_version: g.preferred_version.as_ref().map(|p| p.version.clone()),
            });
        }

        let fetched = futures::future::join_all(targets.into_iter().map(
            |(group, version, path)| async move {
                let result = async {
                    let req = get_request(&path, "application/json")?;
                    let body = client.request_bytes(req).await?;
                    decode::<ApiResourceListDoc>(&body, &path)
                }
                .await;
                (group, version, result)
            },
        ))
        .await;

        let mut discovery = Discovery::default();
        for (group, version, result) in fetched {
            let group_version = if group.is_empty() {
                version.clone()
            } else {
                format!("{group}/{version}")
            };
            match result {
                Ok(list) => {
                    let resources = legacy_resources(&group, &version, list);
                    if let Some(g) = groups_out.iter_mut().find(|g| g.name == group) {
                        g.versions
                            .push(GroupVersionResources { version, resources });
                    }
                }
                Err(error) => {
                    tracing::warn!(%group_version, %error, "discovery of a group-version failed; continuing without it");
                    discovery.failures.push(DiscoveryFailure {
                        group_version,
                        error,
                    });
                }
            }
        }
        groups_out.retain(|g| !g.versions.is_empty());
        discovery.groups = groups_out;
        Ok(discovery)
    }

    fn add_aggregated(&mut self, list: APIGroupDiscoveryList) {
        for item in list.items {
            let name = item.metadata.and_then(|m| m.name).unwrap_or_default();
            let mut group = ApiGroup {
                name: name.clone(),
                versions: Vec::new(),
                preferred_version: None,
            };
            for v in item.versions {
                let Some(version) = v.version.filter(|s| !s.is_empty()) else {
                    continue;
                };
                let group_version = if name.is_empty() {
                    version.clone()
                } else {
                    format!("{name}/{version}")
                };
                if v.freshness.as_deref() == Some("Stale") {
                    tracing::warn!(%group_version, "aggregated discovery reports a stale group-version");
                    self.failures.push(DiscoveryFailure {
                        group_version,
                        error: Error::Protocol(
                            "the server reports this group-version as Stale".to_owned(),
                        ),
                    });
                    continue;
                }
                let mut resources = Vec::new();
                for r in v.resources {
                    let Some(plural) = r.resource.filter(|s| !s.is_empty()) else {
                        continue;
                    };
                    let Some(kind) = r.response_kind.as_ref().and_then(|k| k.kind.clone()) else {
                        continue;
                    };
                    let subresources = r
                        .subresources
                        .into_iter()
                        .filter_map(|s| {
                            let sub_name = s.subresource.filter(|n| !n.is_empty())?;
                            let rk = s.response_kind.unwrap_or_default();
                            Some(DiscoveredSubresource {
                                name: sub_name,
                                kind: GroupVersionKind::gvk(
                                    rk.group.as_deref().unwrap_or(&name),
                                    rk.version.as_deref().unwrap_or(&version),
                                    rk.kind.as_deref().unwrap_or(&kind),
                                ),
                                verbs: s.verbs,
                            })
                        })
                        .collect();
                    resources.push(DiscoveredResource {
                        resource: ApiResource::from_gvk_with_plural(
                            &GroupVersionKind::gvk(&name, &version, &kind),
                            &plural,
                        ),
                        scope: if r.scope.as_deref() == Some("Cluster") {
                            Scope::Cluster
                        } else {
                            Scope::Namespaced
                        },
                        singular: r
                            .singular_resource
                            .filter(|s| !s.is_empty())
                            .unwrap_or_else(|| kind.to_lowercase()),
                        verbs: r.verbs,
                        short_names: r.short_names,
                        categories: r.categories,
                        subresources,
                    });
                }
                if group.preferred_version.is_none() {
                    // Aggregated versions come in preference order.
                    group.preferred_version = Some(version.clone());
                }
                group
                    .versions
                    .push(GroupVersionResources { version, resources });
            }
            if !group.versions.is_empty() {
                self.groups.push(group);
            }
        }
    }

    /// Whether the server answered with aggregated discovery.
    pub fn is_aggregated(&self) -> bool {
        self.aggregated
    }

    /// Group-versions that could not be discovered.
    pub fn failures(&self) -> &[DiscoveryFailure] {
        &self.failures
    }

    /// Every discovered group, core group first.
    pub fn groups(&self) -> &[ApiGroup] {
        &self.groups
    }

    /// One group by name (`""` for core).
    pub fn group(&self, name: &str) -> Option<&ApiGroup> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// Every resource in every served version.
    pub fn resources(&self) -> impl Iterator<Item = &DiscoveredResource> {
        self.groups
            .iter()
            .flat_map(|g| g.versions.iter())
            .flat_map(|v| v.resources.iter())
    }

    /// The resource serving `gvk`.
    pub fn resolve_gvk(&self, gvk: &GroupVersionKind) -> Option<&DiscoveredResource> {
        self.group(&gvk.group)?
            .versions
            .iter()
            .find(|v| v.version == gvk.version)?
            .resources
            .iter()
            .find(|r| r.resource.kind == gvk.kind)
    }

    /// Finds a resource the way a user names it: by kind (any case),
    /// plural, singular or short name, optionally qualified as
    /// `name.group` or `name.version.group` (`deployments.apps`,
    /// `deploy.v1.apps`). The preferred version of a group wins; groups are
    /// searched in server order (core first).
    pub fn find(&self, name: &str) -> Option<&DiscoveredResource> {
        self.find_all(name).into_iter().next()
    }

    /// Every match for [`Discovery::find`], best first.
    pub fn find_all(&self, name: &str) -> Vec<&DiscoveredResource> {
        let mut out = Vec::new();
        for (base, version, group) in candidate_splits(name) {
            for g in &self.groups {
                if group.is_some_and(|want| want != g.name) {
                    continue;
                }
                for v in g.versions_preferred_first() {
                    if version.is_some_and(|want| want != v.version) {
                        continue;
                    }
                    for r in &v.resources {
                        if matches_name(r, base)
                            && !out
                                .iter()
                                .any(|o: &&DiscoveredResource| std::ptr::eq(*o, r))
                        {
                            out.push(r);
                        }
                    }
                }
            }
        }
        out
    }
}

/// `a.b.c` can mean resource `a.b.c`, resource `a` in group `b.c`, or
/// resource `a`, version `b`, group `c`.
fn candidate_splits(name: &str) -> Vec<(&str, Option<&str>, Option<&str>)> {
    let mut out = vec![(name, None, None)];
    if let Some((base, rest)) = name.split_once('.') {
        if let Some((version, group)) = rest.split_once('.') {
            out.push((base, Some(version), Some(group)));
        }
        out.push((base, None, Some(rest)));
    }
    out
}

fn matches_name(r: &DiscoveredResource, name: &str) -> bool {
    let lower = name.to_lowercase();
    r.resource.plural == lower
        || r.singular == lower
        || r.resource.kind.eq_ignore_ascii_case(name)
        || r.short_names.contains(&lower)
}

fn legacy_resources(
    group: &str,
    version: &str,
    list: ApiResourceListDoc,
) -> Vec<DiscoveredResource> {
    let (mains, subs): (Vec<_>, Vec<_>) = list
        .resources
        .into_iter()
        .partition(|r| !r.name.contains('/'));
    let mut resources: Vec<DiscoveredResource> = mains
        .into_iter()
        .filter(|r| !r.kind.is_empty())
        .map(|r| DiscoveredResource {
            resource: ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk(group, version, &r.kind),
                &r.name,
            ),
            scope: if r.namespaced {
                Scope::Namespaced
            } else {
                Scope::Cluster
            },
            singular: if r.singular_name.is_empty() {
                // Older servers leave it empty; kubectl uses the lowercased kind.
                r.kind.to_lowercase()
            } else {
                r.singular_name
            },
            verbs: r.verbs,
            short_names: r.short_names.unwrap_or_default(),
            categories: r.categories.unwrap_or_default(),
            subresources: Vec::new(),
        })
        .collect();
    for s in subs {
        let Some((parent, sub)) = s.name.split_once('/') else {
            continue;
        };
        if let Some(p) = resources.iter_mut().find(|r| r.resource.plural == parent) {
            let kind = if s.kind.is_empty() {
                p.resource.kind.clone()
            } else {
                s.kind
            };
            p.subresources.push(DiscoveredSubresource {
                name: sub.to_owned(),
                kind: GroupVersionKind::gvk(
                    s.group.as_deref().unwrap_or(group),
                    s.version.as_deref().unwrap_or(version),
                    &kind,
                ),
                verbs: s.verbs,
            });
        }
    }
    resources
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_content_type_rule() {
        let h = |ct: &str| {
            let mut m = http::HeaderMap::new();
            m.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_str(ct).unwrap(),
            );
            m
        };
        assert!(is_aggregated(&h(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        )));
        assert!(is_aggregated(&h(
            "application/json; g=apidiscovery.k8s.io; v=v2beta1; as=APIGroupDiscoveryList"
        )));
        assert!(!is_aggregated(&h("application/json")));
        assert!(!is_aggregated(&h(
            "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList"
        )));
        assert!(!is_aggregated(&h(
            "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        )));
        assert!(!is_aggregated(&http::HeaderMap::new()));
    }

    fn apps_v1() -> ApiResourceListDoc {
        serde_json::from_str(
            r#"{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
              {"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment",
               "verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["deploy"],"categories":["all"]},
              {"name":"deployments/status","singularName":"","namespaced":true,"kind":"Deployment","verbs":["get","patch","update"]},
              {"name":"deployments/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]},
              {"name":"controllerrevisions","singularName":"","namespaced":true,"kind":"ControllerRevision","verbs":["get"]}
            ]}"#,
        )
        .unwrap()
    }

    #[test]
    fn legacy_resource_lists_attach_subresources_and_fill_singulars() {
        let rs = legacy_resources("apps", "v1", apps_v1());
        assert_eq!(rs.len(), 2);
        let d = &rs[0];
        assert_eq!(d.resource.api_version, "apps/v1");
        assert_eq!(d.resource.plural, "deployments");
        assert!(d.namespaced());
        assert!(d.supports("watch") && !d.supports("deletecollection"));
        let scale = d.subresource("scale").unwrap();
        assert_eq!(
            scale.kind,
            GroupVersionKind::gvk("autoscaling", "v1", "Scale")
        );
        assert_eq!(d.subresource("status").unwrap().kind.kind, "Deployment");
        assert_eq!(rs[1].singular, "controllerrevision");
    }

    fn sample() -> Discovery {
        let mut d = Discovery::default();
        let core: ApiResourceListDoc = serde_json::from_str(
            r#"{"resources":[
              {"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list"],"shortNames":["po"]},
              {"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get"],"shortNames":["ns"]}
            ]}"#,
        )
        .unwrap();
        d.groups.push(ApiGroup {
            name: String::new(),
            versions: vec![GroupVersionResources {
                version: "v1".into(),
                resources: legacy_resources("", "v1", core),
            }],
            preferred_version: Some("v1".into()),
        });
        let beta: ApiResourceListDoc = serde_json::from_str(
            r#"{"resources":[{"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["get"]}]}"#,
        )
        .unwrap();
        d.groups.push(ApiGroup {
            name: "apps".into(),
            // A non-preferred version listed first must not win.
            versions: vec![
                GroupVersionResources {
                    version: "v1beta1".into(),
                    resources: legacy_resources("apps", "v1beta1", beta),
                },
                GroupVersionResources {
                    version: "v1".into(),
                    resources: legacy_resources("apps", "v1", apps_v1()),
                },
            ],
            preferred_version: Some("v1".into()),
        });
        d
    }

    #[test]
    fn find_by_kind_plural_singular_short_and_qualified() {
        let d = sample();
        for name in [
            "Deployment",
            "deployment",
            "deployments",
            "deploy",
            "deployments.apps",
            "deploy.v1.apps",
        ] {
            let r = d.find(name).unwrap_or_else(|| panic!("{name} not found"));
            assert_eq!(r.resource.api_version, "apps/v1", "{name}");
        }
        assert_eq!(
            d.find("deployments.v1beta1.apps").unwrap().resource.version,
            "v1beta1"
        );
        assert_eq!(d.find("po").unwrap().resource.kind, "Pod");
        assert_eq!(d.find("ns").unwrap().scope, Scope::Cluster);
        assert!(d.find("widgets").is_none());
        assert!(d.find("pods.apps").is_none());
        assert_eq!(d.find_all("deployment").len(), 2);
    }

    #[test]
    fn resolve_gvk_to_plural_scope_and_verbs() {
        let d = sample();
        let r = d
            .resolve_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"))
            .unwrap();
        assert_eq!(r.resource.plural, "deployments");
        assert!(r.namespaced());
        let ns = d
            .resolve_gvk(&GroupVersionKind::gvk("", "v1", "Namespace"))
            .unwrap();
        assert_eq!(ns.scope, Scope::Cluster);
        assert!(d
            .resolve_gvk(&GroupVersionKind::gvk("apps", "v2", "Deployment"))
            .is_none());
        assert_eq!(d.group("apps").unwrap().recommended_resources().len(), 2);
    }

    #[test]
    fn aggregated_lists_become_groups_with_stale_versions_reported() {
        let list: APIGroupDiscoveryList = serde_json::from_str(
            r#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[
              {"metadata":{"name":"ex.com"},"versions":[
                {"version":"v2","freshness":"Current","resources":[
                  {"resource":"widgets","responseKind":{"group":"ex.com","version":"v2","kind":"Widget"},
                   "scope":"Cluster","singularResource":"widget","verbs":["get","list"],"shortNames":["wd"],
                   "subresources":[{"subresource":"status","responseKind":{"group":"ex.com","version":"v2","kind":"Widget"},"verbs":["get"]}]}]},
                {"version":"v1","freshness":"Stale","resources":[]}
              ]}]}"#,
        )
        .unwrap();
        let mut d = Discovery::default();
        d.add_aggregated(list);
        let g = d.group("ex.com").unwrap();
        assert_eq!(g.preferred_version.as_deref(), Some("v2"));
        let w = d.find("wd").unwrap();
        assert_eq!(w.scope, Scope::Cluster);
        assert_eq!(w.resource.api_version, "ex.com/v2");
        assert!(w.subresource("status").is_some());
        assert_eq!(d.failures().len(), 1);
        assert_eq!(d.failures()[0].group_version, "ex.com/v1");
    }
}
