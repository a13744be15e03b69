//! Request attributes as kube-apiserver's `RequestInfoFactory` derives
//! them: verb from the method, list vs watch vs get, deletecollection, a
//! single-object list or watch named by a `metadata.name` field selector,
//! subresources, non-resource paths.

use http::Method;

pub(crate) use crate::auth::attributes::Attributes;
use crate::http::routing::{self, Route};
use crate::http::wire::Query;

/// The name a field selector pins exactly (`metadata.name=X` or `==X` in a
/// conjunction), as `RequiresExactMatch` finds it.
fn name_from_field_selector(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        let rest = term.trim().strip_prefix("metadata.name")?;
        let value = rest.strip_prefix("==").or_else(|| rest.strip_prefix('='))?;
        (!value.is_empty() && !value.contains('/') && value != "." && value != "..")
            .then(|| value.to_owned())
    })
}

/// The attributes of a request.
pub(crate) fn from_request(method: &Method, path: &str, query: &Query) -> Attributes {
    let Route::Resource(p) = routing::route(path) else {
        return Attributes::non_resource(&method.as_str().to_ascii_lowercase(), path);
    };
    let mut name = p.name.clone().unwrap_or_default();
    let watch_query = query
        .get("watch")
        .is_some_and(|w| !w.eq_ignore_ascii_case("false") && w != "0");
    let verb = match method.as_str() {
        "POST" => "create".to_owned(),
        "GET" | "HEAD" if p.watch_prefix => "watch".to_owned(),
        "GET" | "HEAD" if name.is_empty() => {
            if let Some(n) = query
                .get("fieldSelector")
                .and_then(name_from_field_selector)
            {
                name = n;
            }
            if watch_query { "watch" } else { "list" }.to_owned()
        }
        "GET" | "HEAD" => "get".to_owned(),
        "PUT" => "update".to_owned(),
        "PATCH" => "patch".to_owned(),
        "DELETE" if name.is_empty() => "deletecollection".to_owned(),
        "DELETE" => "delete".to_owned(),
        other => other.to_ascii_lowercase(),
    };
    // `/api/v1/namespaces/foo` is in the namespace `foo`.
    let namespace = match (&p.namespace, p.resource.as_str()) {
        (Some(ns), _) => ns.clone(),
        (None, "namespaces") => p.name.clone().unwrap_or_default(),
        (None, _) => String::new(),
    };
    Attributes {
        verb,
        resource_request: true,
        namespace,
        api_group: p.group,
        api_version: p.version,
        resource: p.resource,
        subresource: p.subresource.unwrap_or_default(),
        name,
        path: path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::attributes::forbidden;
    use crate::auth::user::UserInfo;

    fn attrs(method: &str, path: &str, query: &str) -> Attributes {
        let m = Method::from_bytes(method.as_bytes()).unwrap();
        from_request(&m, path, &Query::parse(Some(query)))
    }

    #[test]
    fn verbs_follow_the_request_info_factory() {
        let cases = [
            ("GET", "/api/v1/namespaces/ns/pods", "", "list", ""),
            (
                "GET",
                "/api/v1/namespaces/ns/pods",
                "watch=true",
                "watch",
                "",
            ),
            ("GET", "/api/v1/namespaces/ns/pods", "watch=0", "list", ""),
            (
                "GET",
                "/api/v1/namespaces/ns/pods",
                "watch=1&fieldSelector=metadata.name%3Dweb",
                "watch",
                "web",
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/pods",
                "fieldSelector=metadata.name%3D%3Dweb",
                "list",
                "web",
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/pods",
                "fieldSelector=spec.nodeName%3Dn1",
                "list",
                "",
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/ns/pods/web",
                "",
                "watch",
                "web",
            ),
            ("GET", "/api/v1/namespaces/ns/pods/web", "", "get", "web"),
            ("POST", "/api/v1/namespaces/ns/pods", "", "create", ""),
            ("PUT", "/api/v1/namespaces/ns/pods/web", "", "update", "web"),
            (
                "PATCH",
                "/api/v1/namespaces/ns/pods/web",
                "",
                "patch",
                "web",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/ns/pods/web",
                "",
                "delete",
                "web",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/ns/pods",
                "",
                "deletecollection",
                "",
            ),
        ];
        for (method, path, query, verb, name) in cases {
            let a = attrs(method, path, query);
            assert_eq!(
                (a.verb.as_str(), a.name.as_str()),
                (verb, name),
                "{method} {path}?{query}"
            );
            assert_eq!(a.namespace, "ns");
        }
        let a = attrs("GET", "/api/v1/namespaces/foo", "");
        assert_eq!(
            (a.resource.as_str(), a.namespace.as_str(), a.name.as_str()),
            ("namespaces", "foo", "foo")
        );
        let a = attrs(
            "PUT",
            "/apis/apps/v1/namespaces/ns/deployments/web/scale",
            "",
        );
        assert_eq!(
            (a.api_group.as_str(), a.subresource.as_str()),
            ("apps", "scale")
        );
        let a = attrs("GET", "/apis/apps/v1", "");
        assert!(!a.resource_request);
        assert_eq!((a.verb.as_str(), a.path.as_str()), ("get", "/apis/apps/v1"));
    }

    #[test]
    fn forbidden_messages_match_kube_apiserver() {
        let alice = UserInfo {
            name: "alice".into(),
            ..UserInfo::default()
        };
        let e = forbidden(
            &alice,
            &Attributes::resource("list", "", "configmaps", "default"),
            "",
        );
        assert_eq!(
            e.message,
            r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#
        );
        let a = Attributes::resource("create", "", "pods", "ns")
            .named("web-0")
            .sub("exec");
        assert_eq!(
            forbidden(&alice, &a, "").message,
            r#"pods "web-0" is forbidden: User "alice" cannot create resource "pods/exec" in API group "" in the namespace "ns""#
        );
        let a = Attributes::resource(
            "list",
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "",
        );
        assert_eq!(
            forbidden(&alice, &a, "").message,
            r#"customresourcedefinitions.apiextensions.k8s.io is forbidden: User "alice" cannot list resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope"#
        );
        let s = forbidden(&alice, &a, "").to_status();
        assert_eq!(
            s["details"],
            serde_json::json!({"group": "apiextensions.k8s.io", "kind": "customresourcedefinitions"})
        );
        assert_eq!(
            forbidden(&alice, &Attributes::non_resource("get", "/metrics<x>"), "").message,
            r#"forbidden: User "alice" cannot get path "/metrics&lt;x&gt;""#
        );
    }
}
