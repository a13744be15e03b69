//! `admission.k8s.io/v1` AdmissionReview: the request kube-apiserver
//! sends (`CreateV1AdmissionReview`) and the checks it makes of the
//! response (`VerifyAdmissionResponse`), including both encodings of
//! `patch` (base64 as the API defines it, and the number array some
//! Rust webhooks send); and the Forbidden error admission refuses a
//! request with.

use base64::Engine;
use serde_json::{json, Value};

use crate::admission::attributes::Attributes;
use crate::auth::UserInfo;
use crate::machinery::status::{qualified, ApiError, Cause, Details};
use crate::machinery::util;

/// The requesting user; a server without authentication names its admin
/// as kubeconfigs of such clusters do.
fn user_info(user: Option<&UserInfo>) -> Value {
    match user {
        Some(user) => user.to_json(),
        None => json!({
            "username": "kubernetes-admin",
            "groups": ["system:masters", "system:authenticated"],
        }),
    }
}

/// The review sent for one call to a webhook that sees the object at
/// `version` (the request's, or an equivalent one); returns it with its
/// fresh uid.
pub(crate) fn request(
    attrs: &Attributes<'_>,
    version: &str,
    object: Option<&Value>,
    old: Option<&Value>,
    user: Option<&UserInfo>,
) -> (String, Value) {
    let def = attrs.def;
    let uid = util::uid();
    let kind_at = |v: &str| match attrs.sub_kind {
        Some(sub) => json!({"group": sub.group, "version": sub.version, "kind": sub.kind}),
        None => json!({"group": def.group, "version": v, "kind": def.kind}),
    };
    let resource_at = |v: &str| json!({"group": def.group, "version": v, "resource": def.plural});
    let mut request = json!({
        "uid": uid,
        "kind": kind_at(version),
        "resource": resource_at(version),
        "requestKind": kind_at(attrs.version),
        "requestResource": resource_at(attrs.version),
        "name": attrs.name,
        "namespace": attrs.namespace,
        "operation": attrs.operation.as_str(),
        "userInfo": user_info(user),
        "object": object,
        "oldObject": old,
        "dryRun": attrs.dry_run,
        "options": attrs.options,
    });
    if let Some(sub) = attrs.subresource {
        request["subResource"] = json!(sub);
        request["requestSubResource"] = json!(sub);
    }
    if attrs.namespace.is_empty() {
        if let Some(map) = request.as_object_mut() {
            map.remove("namespace");
        }
    }
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    });
    (uid, review)
}

/// A verified response.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    pub allowed: bool,
    /// The `status` of a denial.
    pub status: Value,
    /// The decoded JSONPatch, when one came.
    pub patch: Option<json_patch::Patch>,
    pub warnings: Vec<String>,
}

/// Reads a response body; an error is the reason for
/// "received invalid webhook response".
pub(crate) fn verdict(body: &[u8], uid: &str, mutating: bool) -> Result<Verdict, String> {
    let review: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let api_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    let got_uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if got_uid != uid {
        return Err(format!(
            "expected response.uid=\"{uid}\", got \"{got_uid}\""
        ));
    }
    let patch_type = response
        .get("patchType")
        .and_then(Value::as_str)
        .unwrap_or("");
    let patch_bytes = match response.get("patch") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(b64)) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("response.patch: {e}"))?,
        Some(Value::Array(numbers)) => numbers
            .iter()
            .map(|n| n.as_u64().and_then(|n| u8::try_from(n).ok()))
            .collect::<Option<Vec<u8>>>()
            .ok_or("response.patch: not a byte array")?,
        Some(_) => return Err("response.patch: expected a base64 string".into()),
    };
    if !mutating && !patch_bytes.is_empty() {
        return Err("validating webhook may not return response.patch".into());
    }
    if !mutating && !patch_type.is_empty() {
        return Err("validating webhook may not return response.patchType".into());
    }
    if !patch_bytes.is_empty() && patch_type.is_empty() {
        return Err("webhook returned response.patch but not response.patchType".into());
    }
    if patch_bytes.is_empty() && !patch_type.is_empty() {
        return Err("webhook returned response.patchType but not response.patch".into());
    }
    if !patch_type.is_empty() && patch_type != "JSONPatch" {
        return Err(format!(
            "webhook returned invalid response.patchType of \"{patch_type}\""
        ));
    }
    let patch = if patch_bytes.is_empty() {
        None
    } else {
        Some(
            serde_json::from_slice::<json_patch::Patch>(&patch_bytes)
                .map_err(|e| format!("response.patch: {e}"))?,
        )
    };
    let warnings = crate::machinery::util::strings_at(response, "/warnings");
    Ok(Verdict {
        allowed: response.get("allowed").and_then(Value::as_bool) == Some(true),
        status: response.get("status").cloned().unwrap_or(Value::Null),
        patch,
        warnings,
    })
}

/// The client's error for a denial (`webhookerrors.ToStatusErr`): the
/// webhook's code (at least 400), its reason and causes, and its message
/// after `admission webhook "NAME" denied the request`.
pub(crate) fn denial(name: &str, status: &Value) -> ApiError {
    let str_of = |f: &str| status.get(f).and_then(Value::as_str).unwrap_or("");
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(400);
    let denied = format!("admission webhook \"{name}\" denied the request");
    let message = match (str_of("message"), str_of("reason")) {
        (m, _) if !m.is_empty() => format!("{denied}: {m}"),
        (_, r) if !r.is_empty() => format!("{denied}: {r}"),
        _ => format!("{denied} without explanation"),
    };
    let mut err = ApiError::new(code, "", message);
    err.reason = str_of("reason").to_owned().into();
    if let Some(details) = status.get("details").filter(|d| d.is_object()) {
        let field = |f: &str| details.get(f).and_then(Value::as_str).map(str::to_owned);
        let causes = details
            .get("causes")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .map(|c| Cause {
                        reason: c.get("reason").and_then(Value::as_str).unwrap_or("").into(),
                        message: c
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .into(),
                        field: c.get("field").and_then(Value::as_str).unwrap_or("").into(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        err = err.with_details(Details {
            name: field("name"),
            group: field("group"),
            kind: field("kind"),
            uid: field("uid"),
            causes,
        });
    }
    err
}

/// `apierrors.NewForbidden` for the request's resource and name, as
/// admission answers a refusal (`admission.NewForbidden`).
pub(crate) fn forbidden(attrs: &Attributes<'_>, text: &str) -> ApiError {
    let resource = qualified(&attrs.def.plural, &attrs.def.group);
    let message = if attrs.name.is_empty() {
        format!("{resource} is forbidden: {text}")
    } else {
        format!("{resource} \"{}\" is forbidden: {text}", attrs.name)
    };
    ApiError::forbidden(message).with_details(Details {
        name: Some(attrs.name.to_owned()),
        group: Some(attrs.def.group.clone()),
        kind: Some(attrs.def.plural.clone()),
        ..Details::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(extra: Value) -> Vec<u8> {
        let mut response = json!({"uid": "u1", "allowed": true});
        if let (Some(r), Some(e)) = (response.as_object_mut(), extra.as_object()) {
            r.extend(e.clone());
        }
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        }))
        .expect("serializes")
    }

    #[test]
    fn a_patch_is_read_from_base64_and_from_a_number_array() {
        let ops = br#"[{"op":"add","path":"/x","value":1}]"#;
        let b64 = base64::engine::general_purpose::STANDARD.encode(ops);
        let as_string = verdict(
            &response(json!({"patch": b64, "patchType": "JSONPatch"})),
            "u1",
            true,
        )
        .expect("base64 patch");
        let as_array = verdict(
            &response(json!({"patch": ops.to_vec(), "patchType": "JSONPatch"})),
            "u1",
            true,
        )
        .expect("array patch");
        assert_eq!(as_string.patch, as_array.patch);
        assert_eq!(as_string.patch.map(|p| p.0.len()), Some(1));
    }

    #[test]
    fn responses_are_checked_as_kube_apiserver_checks_them() {
        let err = verdict(&response(json!({})), "other", false).unwrap_err();
        assert_eq!(err, "expected response.uid=\"other\", got \"u1\"");
        let err = verdict(br#"{"response":{"uid":"u1"}}"#, "u1", false).unwrap_err();
        assert_eq!(
            err,
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got , Kind="
        );
        let err = verdict(
            &response(json!({"patch": "W10=", "patchType": "JSONPatch"})),
            "u1",
            false,
        )
        .unwrap_err();
        assert_eq!(err, "validating webhook may not return response.patch");
        let err = verdict(&response(json!({"patch": "W10="})), "u1", true).unwrap_err();
        assert_eq!(
            err,
            "webhook returned response.patch but not response.patchType"
        );
    }

    #[test]
    fn denials_keep_the_code_reason_and_message() {
        let err = denial(
            "deny.example.com",
            &json!({"code": 403, "reason": "Forbidden", "message": "no"}),
        );
        assert_eq!(err.code, 403);
        assert_eq!(err.reason, "Forbidden");
        assert_eq!(
            err.message,
            "admission webhook \"deny.example.com\" denied the request: no"
        );
        let err = denial("d", &json!({"code": 200}));
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "admission webhook \"d\" denied the request without explanation"
        );
    }
}
