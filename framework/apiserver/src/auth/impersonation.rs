//! Impersonation as kube-apiserver's `WithImpersonation` filter does it:
//! the `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and
//! `Impersonate-Extra-<key>` headers (`kubectl --as`, `--as-group`,
//! `--as-uid`) each authorized with the verb `impersonate` on `users` (or
//! the named `serviceaccounts`), `groups`, `uids` or `userextras/<key>`,
//! then the request continues as the impersonated identity with the
//! headers removed.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::request::Parts;
use http::HeaderMap;

use super::rbac;
use super::user::{UserInfo, ANONYMOUS, AUTHENTICATED, SERVICE_ACCOUNTS, UNAUTHENTICATED};
use crate::auth::attributes::{self, Attributes};
use crate::auth::AuthState;
use crate::machinery::status::ApiError;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
/// The API group of the `uids` and `userextras` resources.
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// One thing asked to be impersonated (kube-apiserver keeps these as
/// `ObjectReference`s; its error text prints them so).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Request {
    ServiceAccount { namespace: String, name: String },
    User(String),
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Request {
    /// Go's `%v` of the `ObjectReference`: kind, namespace, name, uid,
    /// apiVersion, resourceVersion, fieldPath.
    fn go_value(&self) -> String {
        let (kind, namespace, name, api_version, field_path) = match self {
            Request::ServiceAccount { namespace, name } => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Request::User(name) => ("User", "", name.as_str(), "", ""),
            Request::Group(name) => ("Group", "", name.as_str(), "", ""),
            Request::Extra { key, value } => (
                "UserExtra",
                "",
                value.as_str(),
                "authentication.k8s.io/v1",
                key.as_str(),
            ),
            Request::Uid(uid) => ("UID", "", uid.as_str(), "authentication.k8s.io/v1", ""),
        };
        format!("{{{kind} {namespace} {name}  {api_version}  {field_path}}}")
    }

    /// The attributes authorized for this part of the impersonation.
    fn attributes(&self) -> Attributes {
        let (group, resource, subresource, namespace, name) = match self {
            Request::ServiceAccount { namespace, name } => {
                ("", "serviceaccounts", "", namespace.as_str(), name.as_str())
            }
            Request::User(name) => ("", "users", "", "", name.as_str()),
            Request::Group(name) => ("", "groups", "", "", name.as_str()),
            Request::Extra { key, value } => (
                AUTHENTICATION_GROUP,
                "userextras",
                key.as_str(),
                "",
                value.as_str(),
            ),
            Request::Uid(uid) => (AUTHENTICATION_GROUP, "uids", "", "", uid.as_str()),
        };
        Attributes {
            verb: "impersonate".to_owned(),
            resource_request: true,
            namespace: namespace.to_owned(),
            api_group: group.to_owned(),
            api_version: "v1".to_owned(),
            resource: resource.to_owned(),
            subresource: subresource.to_owned(),
            name: name.to_owned(),
            path: String::new(),
        }
    }
}

/// `system:serviceaccount:NS:NAME` split, as `serviceaccount.SplitUsername`
/// does (both parts present, no further colon).
fn split_service_account(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    let valid = |s: &str| !s.is_empty() && !s.contains(':');
    (valid(namespace) && valid(name)).then(|| (namespace.to_owned(), name.to_owned()))
}

/// The header values of `name`, as text (a value that is not text is
/// skipped, as Go's header map would hold bytes no rule could match).
fn values<'a>(headers: &'a HeaderMap, name: &str) -> impl Iterator<Item = &'a str> + 'a {
    headers.get_all(name).iter().filter_map(|v| v.to_str().ok())
}

/// What the headers ask for, in kube-apiserver's order (user, groups,
/// extras, uid), or its error when something is asked without a user.
fn requests(headers: &HeaderMap, uri: &str) -> Result<Vec<Request>, ApiError> {
    let mut out = Vec::new();
    let user = values(headers, USER).next().unwrap_or("");
    if !user.is_empty() {
        out.push(match split_service_account(user) {
            Some((namespace, name)) => Request::ServiceAccount { namespace, name },
            None => Request::User(user.to_owned()),
        });
    }
    let mut others = false;
    for group in values(headers, GROUP) {
        others = true;
        out.push(Request::Group(group.to_owned()));
    }
    let mut extra_names: Vec<&str> = headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| k.starts_with(EXTRA_PREFIX))
        .collect();
    extra_names.sort_unstable();
    extra_names.dedup();
    for header_name in extra_names {
        others = true;
        // Keys are percent-encoded so they fit in a header name.
        let raw = &header_name[EXTRA_PREFIX.len()..];
        let key = percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .map(|k| k.into_owned())
            .unwrap_or_else(|_| raw.to_owned());
        for value in values(headers, header_name) {
            out.push(Request::Extra {
                key: key.clone(),
                value: value.to_owned(),
            });
        }
    }
    let uid = values(headers, UID).next().unwrap_or("");
    if !uid.is_empty() {
        others = true;
        out.push(Request::Uid(uid.to_owned()));
    }
    if others && user.is_empty() {
        let listed: Vec<String> = out.iter().map(Request::go_value).collect();
        return Err(ApiError::internal(format!(
            "Internal Server Error: \"{uri}\": requested [{}] without impersonating a user",
            listed.join(" ")
        )));
    }
    Ok(out)
}

/// Whether the request asks to impersonate anyone.
fn asks(headers: &HeaderMap) -> bool {
    headers.contains_key(USER)
        || headers.contains_key(GROUP)
        || headers.contains_key(UID)
        || headers.keys().any(|k| k.as_str().starts_with(EXTRA_PREFIX))
}

/// The identity the request acts as: `requestor` itself without
/// impersonation headers, else the impersonated identity once every part
/// of it is authorized for `requestor` (the 403 of the first part that is
/// not). The headers are removed either way.
pub(crate) fn apply(
    shared: &dyn AuthState,
    requestor: Arc<UserInfo>,
    parts: &mut Parts,
) -> Result<Arc<UserInfo>, ApiError> {
    if !asks(&parts.headers) {
        return Ok(requestor);
    }
    let uri = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let asked = requests(&parts.headers, uri)?;
    if asked.is_empty() {
        // Only empty headers: nothing is impersonated.
        return Ok(requestor);
    }
    let groups_given = asked.iter().any(|r| matches!(r, Request::Group(_)));
    let mut name = String::new();
    let mut uid = String::new();
    let mut groups: Vec<String> = Vec::new();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for request in &asked {
        let attrs = request.attributes();
        if let rbac::Decision::Deny(reason) = super::authz::check(shared, &requestor, &attrs) {
            return Err(attributes::forbidden(&requestor, &attrs, &reason));
        }
        match request {
            Request::ServiceAccount {
                namespace,
                name: sa,
            } => {
                name = super::user::service_account_user(namespace, sa);
                if !groups_given {
                    groups = vec![
                        SERVICE_ACCOUNTS.to_owned(),
                        format!("{SERVICE_ACCOUNTS}:{namespace}"),
                    ];
                }
            }
            Request::User(user) => name = user.clone(),
            Request::Group(group) => groups.push(group.clone()),
            Request::Extra { key, value } => {
                extra.entry(key.clone()).or_default().push(value.clone())
            }
            Request::Uid(id) => uid = id.clone(),
        }
    }
    if name == ANONYMOUS {
        if !groups.iter().any(|g| g == UNAUTHENTICATED) {
            groups.push(UNAUTHENTICATED.to_owned());
        }
    } else if !groups
        .iter()
        .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED)
    {
        groups.push(AUTHENTICATED.to_owned());
    }
    for header in [USER, GROUP, UID] {
        parts.headers.remove(header);
    }
    let extra_headers: Vec<_> = parts
        .headers
        .keys()
        .filter(|k| k.as_str().starts_with(EXTRA_PREFIX))
        .cloned()
        .collect();
    for header in extra_headers {
        parts.headers.remove(header);
    }
    Ok(Arc::new(UserInfo {
        name,
        uid,
        groups,
        extra,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn headers_become_requests_in_kube_apiserver_order() {
        let h = headers(&[
            ("Impersonate-Uid", "u-1"),
            ("Impersonate-Extra-Scopes", "view"),
            ("Impersonate-Extra-Acme.com%2Fteam", "a"),
            ("Impersonate-Group", "dev"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-User", "system:serviceaccount:ns:robot"),
        ]);
        let got = requests(&h, "/api").unwrap();
        assert_eq!(
            got,
            [
                Request::ServiceAccount {
                    namespace: "ns".into(),
                    name: "robot".into()
                },
                Request::Group("dev".into()),
                Request::Group("ops".into()),
                Request::Extra {
                    key: "acme.com/team".into(),
                    value: "a".into()
                },
                Request::Extra {
                    key: "scopes".into(),
                    value: "view".into()
                },
                Request::Uid("u-1".into()),
            ]
        );
        let sa = got[0].attributes();
        assert_eq!(
            (
                sa.resource.as_str(),
                sa.namespace.as_str(),
                sa.name.as_str()
            ),
            ("serviceaccounts", "ns", "robot")
        );
        let extra = got[4].attributes();
        assert_eq!(
            (
                extra.api_group.as_str(),
                extra.resource.as_str(),
                extra.subresource.as_str()
            ),
            ("authentication.k8s.io", "userextras", "scopes")
        );
    }

    #[test]
    fn a_group_without_a_user_is_refused_as_kube_apiserver_words_it() {
        let err = requests(&headers(&[("Impersonate-Group", "dev")]), "/api/v1/pods").unwrap_err();
        assert_eq!(err.code, 500);
        assert_eq!(
            err.message,
            "Internal Server Error: \"/api/v1/pods\": requested [{Group  dev    }] without impersonating a user"
        );
    }

    #[test]
    fn service_account_names_split_only_when_whole() {
        assert_eq!(
            split_service_account("system:serviceaccount:ns:sa"),
            Some(("ns".into(), "sa".into()))
        );
        assert_eq!(split_service_account("system:serviceaccount:ns"), None);
        assert_eq!(split_service_account("system:serviceaccount:ns:a:b"), None);
        assert_eq!(split_service_account("alice"), None);
    }
}
