//! The access reviews, answered and never stored: SelfSubjectAccessReview,
//! SubjectAccessReview, LocalSubjectAccessReview (`kubectl auth can-i`),
//! SelfSubjectRulesReview (`can-i --list`) and SelfSubjectReview (`kubectl
//! auth whoami`), with kube-apiserver's validation.

use std::sync::Arc;

use http::request::Parts;
use http::Response;
use hyper::body::Incoming;
use serde_json::{json, Value};

use crate::auth::rbac::{self, Decision, Rule};
use crate::auth::UserInfo;
use crate::http::attributes::Attributes;
use crate::http::routing::ResourcePath;
use crate::http::wire::{self as h, Body};
use crate::machinery::status::{ApiError, Cause};
use crate::registry::state::Shared;
use crate::registry::{BuiltinKind, ResourceDef};

/// Whether `def` is one of the review kinds.
pub(crate) fn is_review(def: &ResourceDef) -> bool {
    matches!(
        def.builtin_kind(),
        Some(
            BuiltinKind::SelfSubjectReview
                | BuiltinKind::SelfSubjectAccessReview
                | BuiltinKind::SubjectAccessReview
                | BuiltinKind::LocalSubjectAccessReview
                | BuiltinKind::SelfSubjectRulesReview
        )
    )
}

fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    v.pointer(path).and_then(Value::as_str).unwrap_or("")
}

/// The attributes a review's spec asks about.
fn spec_attributes(spec: &Value) -> Option<Attributes> {
    if let Some(r) = spec.get("resourceAttributes").filter(|r| r.is_object()) {
        return Some(Attributes {
            verb: str_at(r, "/verb").to_owned(),
            resource_request: true,
            namespace: str_at(r, "/namespace").to_owned(),
            api_group: str_at(r, "/group").to_owned(),
            api_version: str_at(r, "/version").to_owned(),
            resource: str_at(r, "/resource").to_owned(),
            subresource: str_at(r, "/subresource").to_owned(),
            name: str_at(r, "/name").to_owned(),
            path: String::new(),
        });
    }
    let n = spec
        .get("nonResourceAttributes")
        .filter(|n| n.is_object())?;
    Some(Attributes::non_resource(
        str_at(n, "/verb"),
        str_at(n, "/path"),
    ))
}

fn invalid(kind: &str, group: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(kind, group, "", causes)
}

fn status_of(decision: &Decision) -> Value {
    match decision {
        Decision::Allow(reason) => {
            let mut s = json!({"allowed": true});
            if !reason.is_empty() {
                s["reason"] = json!(reason);
            }
            s
        }
        Decision::Deny(reason) => {
            let mut s = json!({"allowed": false});
            if !reason.is_empty() {
                s["reason"] = json!(reason);
            }
            s
        }
    }
}

/// Answers `POST` of a review.
pub(crate) async fn create(
    shared: &Arc<Shared>,
    parts: &Parts,
    def: &ResourceDef,
    path: &ResourcePath,
    body: Incoming,
) -> Result<Response<Body>, ApiError> {
    let bytes = h::read_body(body).await?;
    let media = h::content_type(&parts.headers);
    let media = if media.is_empty() {
        "application/json".to_owned()
    } else {
        media
    };
    let mut review = h::decode_object(&bytes, &media)?;
    let caller = parts
        .extensions
        .get::<Arc<UserInfo>>()
        .cloned()
        .unwrap_or_else(|| Arc::new(UserInfo::anonymous()));
    let group = def.group.as_str();
    let kind = def.kind.as_str();
    let meta_empty = review
        .get("metadata")
        .and_then(Value::as_object)
        .is_none_or(|m| {
            m.keys()
                .all(|k| k == "creationTimestamp" || k == "name" && m[k] == "")
        });
    let kind_of = def.builtin_kind();
    if !meta_empty && kind_of != Some(BuiltinKind::SelfSubjectReview) {
        return Err(invalid(
            kind,
            group,
            vec![Cause::invalid("metadata", "must be empty")],
        ));
    }
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = match kind_of {
        Some(BuiltinKind::SelfSubjectReview) => json!({"userInfo": UserInfo::to_json(&caller)}),
        Some(BuiltinKind::SelfSubjectRulesReview) => {
            let namespace = str_at(&spec, "/namespace");
            if namespace.is_empty() {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            rules_status(shared, &caller, namespace)
        }
        review_kind => {
            let attrs = spec_attributes(&spec);
            let both = spec.get("resourceAttributes").is_some_and(Value::is_object)
                && spec
                    .get("nonResourceAttributes")
                    .is_some_and(Value::is_object);
            let Some(attrs) = attrs.filter(|_| !both) else {
                return Err(invalid(
                    kind,
                    group,
                    vec![Cause::invalid(
                    "spec.resourceAttributes",
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                )],
                ));
            };
            let subject = match review_kind {
                Some(BuiltinKind::SelfSubjectAccessReview) => (*caller).clone(),
                _ => {
                    if review_kind == Some(BuiltinKind::LocalSubjectAccessReview) {
                        let ns = path.namespace.as_deref().unwrap_or("");
                        if !attrs.resource_request {
                            return Err(invalid(
                                kind,
                                group,
                                vec![Cause::invalid(
                                    "spec.nonResourceAttributes",
                                    "disallowed on this kind of request",
                                )],
                            ));
                        }
                        if attrs.namespace != ns {
                            return Err(invalid(
                                kind,
                                group,
                                vec![Cause::invalid(
                                    "spec.resourceAttributes.namespace",
                                    "must match metadata.namespace",
                                )],
                            ));
                        }
                    }
                    let user = str_at(&spec, "/user").to_owned();
                    let groups = crate::machinery::util::strings_at(&spec, "/groups");
                    if user.is_empty() && groups.is_empty() {
                        return Err(invalid(
                            kind,
                            group,
                            vec![Cause::invalid(
                                "spec.user",
                                "at least one of user or group must be specified",
                            )],
                        ));
                    }
                    // Groups are taken as given: no implicit ones.
                    UserInfo {
                        name: user,
                        uid: str_at(&spec, "/uid").to_owned(),
                        groups,
                        ..UserInfo::default()
                    }
                }
            };
            status_of(&crate::auth::authz::authorize(&**shared, &subject, &attrs))
        }
    };
    review["apiVersion"] = json!(format!("{group}/v1"));
    review["kind"] = json!(kind);
    if !review.get("metadata").is_some_and(Value::is_object) {
        review["metadata"] = json!({});
    }
    review["metadata"]["creationTimestamp"] = Value::Null;
    if !review.get("spec").is_some_and(Value::is_object) {
        review["spec"] = json!({});
    }
    review["status"] = status;
    Ok(respond(parts, &review))
}

/// The review as protobuf when the client lists protobuf first (client-go
/// and kubectl send `application/vnd.kubernetes.protobuf,application/json`),
/// as kube-apiserver answers; JSON otherwise.
fn respond(parts: &Parts, review: &Value) -> Response<Body> {
    let wants_protobuf = parts
        .headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .and_then(|accept| accept.split(',').next())
        .is_some_and(crate::http::protobuf::is_protobuf);
    if wants_protobuf {
        match crate::http::protobuf::encode(review) {
            Ok(bytes) => {
                let mut resp = Response::new(h::full(bytes));
                *resp.status_mut() = http::StatusCode::CREATED;
                resp.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static(crate::http::protobuf::MEDIA_TYPE),
                );
                return resp;
            }
            Err(e) => tracing::debug!(reason = %e.0, "review answered as JSON"),
        }
    }
    h::json(201, review)
}

/// `SelfSubjectRulesReview.status`: the caller's rules in `namespace`
/// (`system:masters` contributes `*` as kube-apiserver's allow-all
/// authorizer does not: it lists no rules, so the review reports the RBAC
/// ones and marks nothing incomplete).
fn rules_status(shared: &Shared, user: &UserInfo, namespace: &str) -> Value {
    let index = shared.rbac.index(&shared.storage);
    let rules = rbac::rules_for(&index, user, namespace);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for r in &rules {
        if r.non_resource_urls.is_empty() {
            resource_rules.push(resource_rule(r));
        } else {
            non_resource_rules
                .push(json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}));
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": false,
    });
    // Bindings to missing roles: kube-apiserver still answers with the
    // rules it could resolve and says what it could not.
    let errors = rbac::resolution_errors(&index, user, namespace);
    if !errors.is_empty() {
        status["evaluationError"] = json!(rbac::aggregate(&errors));
    }
    status
}

fn resource_rule(r: &Rule) -> Value {
    let mut v = json!({"verbs": r.verbs});
    if !r.api_groups.is_empty() {
        v["apiGroups"] = json!(r.api_groups);
    }
    if !r.resources.is_empty() {
        v["resources"] = json!(r.resources);
    }
    if !r.resource_names.is_empty() {
        v["resourceNames"] = json!(r.resource_names);
    }
    v
}
