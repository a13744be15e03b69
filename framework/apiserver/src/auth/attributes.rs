//! What a request asks to do, as the authorizer sees it
//! (`authorizer.Attributes`), and the 403 kube-apiserver answers when it
//! is not allowed (`responsewriters.Forbidden`, `NewForbidden`).

use crate::auth::user::UserInfo;
use crate::machinery::status::{qualified, ApiError, Details};

/// What a request asks to do (`authorizer.Attributes`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Attributes {
    pub verb: String,
    pub resource_request: bool,
    pub namespace: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// The request path (what non-resource rules match).
    pub path: String,
}

impl Attributes {
    /// A resource request.
    #[cfg(test)]
    pub fn resource(verb: &str, group: &str, resource: &str, namespace: &str) -> Self {
        Self {
            verb: verb.to_owned(),
            resource_request: true,
            api_group: group.to_owned(),
            resource: resource.to_owned(),
            namespace: namespace.to_owned(),
            ..Self::default()
        }
    }

    /// A non-resource request.
    pub fn non_resource(verb: &str, path: &str) -> Self {
        Self {
            verb: verb.to_owned(),
            path: path.to_owned(),
            ..Self::default()
        }
    }

    /// With a name.
    #[cfg(test)]
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// With a subresource.
    #[cfg(test)]
    pub fn sub(mut self, subresource: &str) -> Self {
        self.subresource = subresource.to_owned();
        self
    }
}

/// `&`, `<` and `>` escaped, as kube-apiserver writes forbidden messages.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// kube-apiserver's 403 for `user` not being allowed `attrs`, with the
/// authorizer's `reason` (if any) appended.
pub(crate) fn forbidden(user: &UserInfo, attrs: &Attributes, reason: &str) -> ApiError {
    let mut inner = if attrs.resource_request {
        let resource = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        let scope = if attrs.namespace.is_empty() {
            "at the cluster scope".to_owned()
        } else {
            format!("in the namespace \"{}\"", attrs.namespace)
        };
        format!(
            "User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
            user.name, attrs.verb, attrs.api_group
        )
    } else {
        format!(
            "User \"{}\" cannot {} path \"{}\"",
            user.name, attrs.verb, attrs.path
        )
    };
    if !reason.is_empty() {
        inner.push_str(": ");
        inner.push_str(reason);
    }
    let inner = escape(&inner);
    if !attrs.resource_request {
        return ApiError::forbidden(format!("forbidden: {inner}")).with_details(Details::default());
    }
    let what = qualified(&attrs.resource, &attrs.api_group);
    let message = if attrs.name.is_empty() {
        format!("{what} is forbidden: {inner}")
    } else {
        format!("{what} \"{}\" is forbidden: {inner}", attrs.name)
    };
    ApiError::forbidden(message).with_details(Details {
        name: (!attrs.name.is_empty()).then(|| attrs.name.clone()),
        group: Some(attrs.api_group.clone()),
        kind: Some(attrs.resource.clone()),
        ..Details::default()
    })
}
