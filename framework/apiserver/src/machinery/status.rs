//! `ApiError`: every failure the server answers with, rendered as the
//! `meta/v1` `Status` object kube-apiserver sends (reasons and codes from
//! apimachinery's `pkg/api/errors`), plus the plain-text 404 that
//! kube-apiserver's not-found handler gives for unknown paths.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

/// One `details.causes[]` entry of a `Status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// The cause type, e.g. `FieldValueInvalid`.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// The field path, e.g. `metadata.name`.
    pub field: String,
}

/// A failed request, as kube-apiserver reports it.
#[derive(Clone, Debug)]
pub(crate) struct ApiError {
    pub code: u16,
    /// The `Status.reason`: one of apimachinery's, or what an admission
    /// webhook's denial carried.
    pub reason: Cow<'static, str>,
    pub message: String,
    pub details: Option<Box<Details>>,
    /// `Retry-After` seconds (429/503 faults), mirrored in `details`.
    pub retry_after: Option<u32>,
    /// Answer with the plain-text `404 page not found` instead of a Status.
    pub plain_not_found: bool,
}

/// `Status.details`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Details {
    pub name: Option<String>,
    pub group: Option<String>,
    pub kind: Option<String>,
    pub uid: Option<String>,
    pub causes: Vec<Cause>,
}

/// The `group` part of `widgets.ex.com` style qualified resource names.
pub(crate) fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: Cow::Borrowed(reason),
            message: message.into(),
            details: None,
            retry_after: None,
            plain_not_found: false,
        }
    }

    pub fn with_details(mut self, details: Details) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// Unknown path: plain text, like kube-apiserver's `notfoundhandler`.
    pub fn page_not_found() -> Self {
        let mut e = Self::new(404, "NotFound", "404 page not found");
        e.plain_not_found = true;
        e
    }

    /// A known group-version without this resource.
    pub fn resource_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(Details::default())
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn not_found(resource: &str, group: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(resource, group)),
        )
        .with_details(Details {
            name: Some(name.to_owned()),
            group: Some(group.to_owned()),
            kind: Some(resource.to_owned()),
            ..Details::default()
        })
    }

    pub fn already_exists(resource: &str, group: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(resource, group)),
        )
        .with_details(Details {
            name: Some(name.to_owned()),
            group: Some(group.to_owned()),
            kind: Some(resource.to_owned()),
            ..Details::default()
        })
    }

    /// The optimistic-concurrency conflict (apimachinery `NewConflict` with
    /// the registry's `OptimisticLockErrorMsg`).
    pub fn conflict(resource: &str, group: &str, name: &str) -> Self {
        Self::conflict_msg(
            resource,
            group,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    pub fn conflict_msg(resource: &str, group: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(resource, group)
            ),
        )
        .with_details(Details {
            name: Some(name.to_owned()),
            group: Some(group.to_owned()),
            kind: Some(resource.to_owned()),
            ..Details::default()
        })
    }

    /// 422 Invalid: `Kind.group "name" is invalid: [causes]`.
    pub fn invalid(kind: &str, group: &str, name: &str, causes: Vec<Cause>) -> Self {
        // `ErrorList.ToAggregate()` drops messages it has already seen.
        let mut list: Vec<String> = Vec::with_capacity(causes.len());
        for c in &causes {
            let text = if c.field.is_empty() {
                c.message.clone()
            } else {
                format!("{}: {}", c.field, c.message)
            };
            if !list.contains(&text) {
                list.push(text);
            }
        }
        let joined = if list.len() == 1 {
            list.join("")
        } else {
            format!("[{}]", list.join(", "))
        };
        Self::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {joined}", qualified(kind, group)),
        )
        .with_details(Details {
            name: Some(name.to_owned()),
            group: Some(group.to_owned()),
            kind: Some(kind.to_owned()),
            causes,
            ..Details::default()
        })
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details(Details::default())
    }

    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    pub fn not_acceptable() -> Self {
        Self::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml",
        )
    }

    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn too_large() -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        )
    }

    /// What kube-apiserver's panic filter answers (`WithPanicRecovery`),
    /// as a `Status`.
    pub fn panicked() -> Self {
        Self::internal("This request caused apiserver to panic. Look in the logs for details.")
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.message));
        // `reason` is omitted when empty (StatusReasonUnknown).
        if !self.reason.is_empty() {
            status.insert("reason".into(), json!(&*self.reason));
        }
        if let Some(d) = &self.details {
            let mut details = Map::new();
            if let Some(n) = &d.name {
                details.insert("name".into(), json!(n));
            }
            if let Some(g) = &d.group {
                if !g.is_empty() {
                    details.insert("group".into(), json!(g));
                }
            }
            if let Some(k) = &d.kind {
                details.insert("kind".into(), json!(k));
            }
            if let Some(u) = &d.uid {
                details.insert("uid".into(), json!(u));
            }
            if !d.causes.is_empty() {
                let causes: Vec<Value> = d
                    .causes
                    .iter()
                    .map(|c| {
                        // StatusCause's fields are all `omitempty`.
                        let mut m = Map::new();
                        for (k, v) in [
                            ("reason", &c.reason),
                            ("message", &c.message),
                            ("field", &c.field),
                        ] {
                            if !v.is_empty() {
                                m.insert(k.into(), json!(v));
                            }
                        }
                        Value::Object(m)
                    })
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
            if let Some(r) = self.retry_after {
                details.insert("retryAfterSeconds".into(), json!(r));
            }
            status.insert("details".into(), Value::Object(details));
        } else if let Some(r) = self.retry_after {
            status.insert("details".into(), json!({"retryAfterSeconds": r}));
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }
}

/// A `Status` with `status: Success`, as returned by a delete without
/// finalizers (`details.kind` is the resource plural).
pub(crate) fn success_status(name: &str, group: &str, resource: &str, uid: &str) -> Value {
    let mut details = Map::new();
    details.insert("name".into(), json!(name));
    if !group.is_empty() {
        details.insert("group".into(), json!(group));
    }
    details.insert("kind".into(), json!(resource));
    details.insert("uid".into(), json!(uid));
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": Value::Object(details),
    })
}

impl Cause {
    /// A `FieldValueInvalid` cause.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            reason: "FieldValueInvalid".into(),
            message: message.into(),
            field: field.into(),
        }
    }

    /// A `FieldValueRequired` cause (`Required value`).
    pub fn required(field: impl Into<String>) -> Self {
        Self {
            reason: "FieldValueRequired".into(),
            message: "Required value".into(),
            field: field.into(),
        }
    }

    /// A `FieldValueForbidden` cause.
    pub fn forbidden(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            reason: "FieldValueForbidden".into(),
            message: format!("Forbidden: {}", message.into()),
            field: field.into(),
        }
    }
}
