//! The `AdmissionReview` wire format (`admission.k8s.io/v1`, and `v1beta1`
//! which has the same shape): decoding a request, with a clear error for
//! every way a body can be wrong, and encoding a response with the patch
//! base64-encoded, as kube-apiserver requires of JSON.

use base64::Engine as _;
use k8s_openapi::api::authentication::v1::UserInfo;
use kube_core::gvk::{GroupVersionKind, GroupVersionResource};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Verdict;

/// The review versions answered (controller-runtime serves both).
const REVIEW_VERSIONS: [&str; 2] = ["admission.k8s.io/v1", "admission.k8s.io/v1beta1"];

/// What kube-apiserver asks a webhook, without the objects: who does what
/// to which resource.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AdmissionRequest {
    /// Identifies this call; the response must carry it back.
    pub uid: String,
    /// The kind of the object as sent to the webhook.
    pub kind: GroupVersionKind,
    /// The resource being changed.
    pub resource: GroupVersionResource,
    /// The subresource, e.g. `status` (empty for the main resource).
    #[serde(default)]
    pub sub_resource: Option<String>,
    /// The kind of the original request, when a conversion matched.
    #[serde(default)]
    pub request_kind: Option<GroupVersionKind>,
    /// The resource of the original request, when a conversion matched.
    #[serde(default)]
    pub request_resource: Option<GroupVersionResource>,
    /// The object's name; empty on a create with `generateName`.
    #[serde(default)]
    pub name: String,
    /// The object's namespace; empty for cluster-scoped objects.
    #[serde(default)]
    pub namespace: String,
    /// What is done: CREATE, UPDATE, DELETE or CONNECT.
    pub operation: Operation,
    /// Who does it.
    #[serde(default)]
    pub user_info: UserInfo,
    /// Whether the change will not be persisted.
    #[serde(default)]
    pub dry_run: bool,
    /// The Create/Update/DeleteOptions of the operation.
    #[serde(default)]
    pub options: Option<Value>,
}

/// The operation an admission request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// A create.
    Create,
    /// An update or patch of an existing object.
    Update,
    /// A delete.
    Delete,
    /// A connect (exec, attach, port-forward, proxy).
    Connect,
}

impl Operation {
    /// The name kube-apiserver and webhook rules use, e.g. `CREATE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// One admission call: the request and its objects as JSON.
#[derive(Clone, Debug)]
pub struct Admission {
    /// Who does what to which resource.
    pub request: AdmissionRequest,
    /// The object after the operation (none on DELETE and CONNECT).
    pub object: Option<Value>,
    /// The object before it (UPDATE and DELETE only).
    pub old_object: Option<Value>,
}

/// Why a body is not an admission request; answered with `allowed: false`
/// and a 400 result, as controller-runtime answers.
#[derive(Debug)]
pub(crate) struct BadReview {
    /// The request's uid, when it could be read.
    pub uid: String,
    /// The review version to answer in.
    pub api_version: &'static str,
    pub message: String,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default, rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    request: Option<Value>,
}

/// Decodes a review body into the call and the review version to answer
/// in.
pub(crate) fn decode(body: &[u8]) -> Result<(Admission, &'static str), BadReview> {
    let bad = |uid: String, api_version, message: String| BadReview {
        uid,
        api_version,
        message,
    };
    let envelope: Envelope = serde_json::from_slice(body).map_err(|e| {
        bad(
            String::new(),
            REVIEW_VERSIONS[0],
            format!("the body is not an AdmissionReview: {e}"),
        )
    })?;
    let api_version = match envelope.api_version.as_deref() {
        Some(v) => REVIEW_VERSIONS.iter().find(|known| **known == v).copied(),
        None => None,
    };
    let Some(api_version) = api_version else {
        return Err(bad(
            String::new(),
            REVIEW_VERSIONS[0],
            format!(
                "unsupported AdmissionReview apiVersion {:?}: expected admission.k8s.io/v1 or admission.k8s.io/v1beta1",
                envelope.api_version.unwrap_or_default()
            ),
        ));
    };
    if envelope.kind.as_deref() != Some("AdmissionReview") {
        return Err(bad(
            String::new(),
            api_version,
            format!(
                "expected kind AdmissionReview, got {:?}",
                envelope.kind.unwrap_or_default()
            ),
        ));
    }
    let Some(Value::Object(mut raw)) = envelope.request else {
        return Err(bad(
            String::new(),
            api_version,
            "the AdmissionReview has no request".into(),
        ));
    };
    let uid = raw
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let object = raw.remove("object").filter(|v| !v.is_null());
    let old_object = raw.remove("oldObject").filter(|v| !v.is_null());
    let request: AdmissionRequest = serde_json::from_value(Value::Object(raw))
        .map_err(|e| bad(uid.clone(), api_version, format!("invalid request: {e}")))?;
    if request.uid.is_empty() {
        return Err(bad(uid, api_version, "the request has no uid".into()));
    }
    Ok((
        Admission {
            request,
            object,
            old_object,
        },
        api_version,
    ))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewOut<'a> {
    api_version: &'a str,
    kind: &'static str,
    response: ResponseOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResponseOut<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

/// The review answering `uid` with `verdict`, in `api_version`.
pub(crate) fn encode(api_version: &str, uid: &str, verdict: &Verdict) -> Vec<u8> {
    let patch = verdict.patch.as_ref().filter(|p| !p.0.is_empty()).map(|p| {
        // A Patch always serializes.
        let bytes = serde_json::to_vec(p).unwrap_or_default();
        base64::engine::general_purpose::STANDARD.encode(bytes)
    });
    let review = ReviewOut {
        api_version,
        kind: "AdmissionReview",
        response: ResponseOut {
            uid,
            allowed: verdict.denial.is_none(),
            status: verdict.denial.as_ref().map(|d| &*d.status),
            patch_type: patch.as_ref().map(|_| "JSONPatch"),
            patch,
            warnings: &verdict.warnings,
        },
    };
    // Strings, bools and a Status always serialize.
    serde_json::to_vec(&review).unwrap_or_default()
}

/// The answer to a body that is not a usable review.
pub(crate) fn encode_bad(bad: &BadReview) -> Vec<u8> {
    let verdict = Verdict::denied(super::Denial::new(400, "BadRequest", bad.message.clone()));
    encode(bad.api_version, &bad.uid, &verdict)
}
