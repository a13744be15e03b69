//! Path routing with kube-apiserver's exact layout:
//! `/api/v1/[namespaces/{ns}/]{resource}[/{name}[/{subresource}]]` and the
//! same under `/apis/{group}/{version}/`, the deprecated `/watch/` prefix,
//! and the non-resource paths (version, health, discovery, OpenAPI).

use percent_encoding::percent_decode_str;

/// Where a request goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// `/`: the list of served paths.
    Root,
    Version,
    Health,
    /// `/api`
    CoreDiscovery,
    /// `/apis`
    GroupsDiscovery,
    /// `/apis/{group}`
    Group(String),
    /// `/api/v1`, `/apis/{group}/{version}`
    GroupVersion {
        group: String,
        version: String,
    },
    Resource(ResourcePath),
    /// `/openapi/v3` (the index of group-version documents).
    OpenApiV3Index,
    /// `/openapi/v3/{api/v1 | apis/{group}/{version}}`.
    OpenApiV3Doc(String),
    /// `/openapi/v2`, which kubectl only reads as protobuf.
    OpenApiV2,
    NotFound,
}

/// A resource request path.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct ResourcePath {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// The deprecated `/watch/` path prefix.
    pub watch_prefix: bool,
}

fn decode(seg: &str) -> String {
    percent_decode_str(seg).decode_utf8_lossy().into_owned()
}

/// Routes a request path.
pub(crate) fn route(path: &str) -> Route {
    let trimmed = path.trim_end_matches('/');
    match trimmed {
        "" => return Route::Root,
        "/version" => return Route::Version,
        "/healthz" | "/livez" | "/readyz" => return Route::Health,
        "/api" => return Route::CoreDiscovery,
        "/apis" => return Route::GroupsDiscovery,
        "/openapi/v3" => return Route::OpenApiV3Index,
        "/openapi/v2" => return Route::OpenApiV2,
        _ => {}
    }
    if let Some(doc) = trimmed.strip_prefix("/openapi/v3/") {
        return Route::OpenApiV3Doc(doc.to_owned());
    }
    if let Some(rest) = trimmed
        .strip_prefix("/healthz/")
        .or_else(|| trimmed.strip_prefix("/livez/"))
        .or_else(|| trimmed.strip_prefix("/readyz/"))
    {
        return if rest == "ping" || rest == "etcd" || rest == "log" {
            Route::Health
        } else {
            Route::NotFound
        };
    }
    let segs: Vec<String> = trimmed.split('/').skip(1).map(decode).collect();
    let (group, version, rest) = match segs.as_slice() {
        [api, v, rest @ ..] if api == "api" => (String::new(), v.clone(), rest),
        [apis, g] if apis == "apis" => return Route::Group(g.clone()),
        [apis, g, v, rest @ ..] if apis == "apis" => (g.clone(), v.clone(), rest),
        _ => return Route::NotFound,
    };
    if rest.is_empty() {
        return Route::GroupVersion { group, version };
    }
    let (watch_prefix, rest) = match rest {
        [w, rest @ ..] if w == "watch" => (true, rest),
        _ => (false, rest),
    };
    let mut p = ResourcePath {
        group,
        version,
        watch_prefix,
        ..Default::default()
    };
    let any_empty = rest.iter().any(String::is_empty);
    if any_empty {
        return Route::NotFound;
    }
    match rest {
        [r] => p.resource = r.clone(),
        [r, n] => {
            p.resource = r.clone();
            p.name = Some(n.clone());
        }
        // The namespace object's own subresources.
        [ns, n, sub] if ns == "namespaces" && (sub == "status" || sub == "finalize") => {
            p.resource = ns.clone();
            p.name = Some(n.clone());
            p.subresource = Some(sub.clone());
        }
        [ns, n, r] if ns == "namespaces" => {
            p.namespace = Some(n.clone());
            p.resource = r.clone();
        }
        [r, n, sub] => {
            p.resource = r.clone();
            p.name = Some(n.clone());
            p.subresource = Some(sub.clone());
        }
        [ns, n, r, name] if ns == "namespaces" => {
            p.namespace = Some(n.clone());
            p.resource = r.clone();
            p.name = Some(name.clone());
        }
        [ns, n, r, name, sub] if ns == "namespaces" => {
            p.namespace = Some(n.clone());
            p.resource = r.clone();
            p.name = Some(name.clone());
            p.subresource = Some(sub.clone());
        }
        _ => return Route::NotFound,
    }
    Route::Resource(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_paths() {
        let Route::Resource(p) = route("/apis/apps/v1/namespaces/ns/deployments/web/scale") else {
            panic!("not a resource")
        };
        assert_eq!(
            (
                p.group.as_str(),
                p.namespace.as_deref(),
                p.resource.as_str(),
                p.name.as_deref(),
                p.subresource.as_deref()
            ),
            (
                "apps",
                Some("ns"),
                "deployments",
                Some("web"),
                Some("scale")
            )
        );
        let Route::Resource(p) = route("/api/v1/namespaces/ns/status") else {
            panic!()
        };
        assert_eq!(
            (
                p.resource.as_str(),
                p.name.as_deref(),
                p.subresource.as_deref()
            ),
            ("namespaces", Some("ns"), Some("status"))
        );
        let Route::Resource(p) = route("/api/v1/namespaces/ns/configmaps") else {
            panic!()
        };
        assert_eq!((p.namespace.as_deref(), p.name), (Some("ns"), None));
        let Route::Resource(p) = route("/api/v1/pods") else {
            panic!()
        };
        assert_eq!((p.namespace, p.resource.as_str()), (None, "pods"));
        let Route::Resource(p) = route("/api/v1/watch/namespaces/a/pods") else {
            panic!()
        };
        assert!(p.watch_prefix);
        assert_eq!(
            route("/apis/apps/v1"),
            Route::GroupVersion {
                group: "apps".into(),
                version: "v1".into()
            }
        );
        assert_eq!(route("/foo"), Route::NotFound);
        assert_eq!(route("/"), Route::Root);
        assert_eq!(route("/api/v1/a/b/c/d/e/f/g"), Route::NotFound);
    }
}
