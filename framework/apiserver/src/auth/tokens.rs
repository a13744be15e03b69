//! The TokenRequest subresource (`POST
//! /api/v1/namespaces/NS/serviceaccounts/NAME/token`, what `kubectl create
//! token` sends) and the token issuing it shares with the Rust API:
//! kube-apiserver's defaults (one hour, the API audiences) and checks (at
//! least ten minutes; a bound object must be a Pod or Secret that exists).

use serde_json::{json, Value};

use super::jwt::{TokenSpec, TokenSubject, ISSUER};
use crate::auth::AuthState;
use crate::machinery::status::{ApiError, Cause};
use crate::storage::ResKey;

/// kube-apiserver's default token lifetime.
pub(crate) const DEFAULT_EXPIRATION_SECS: i64 = 3600;
/// The shortest lifetime a TokenRequest may ask for.
const MIN_EXPIRATION_SECS: i64 = 600;

/// A token for the service account `namespace/name` valid for
/// `expiration_secs`, and its expiry (seconds since the epoch).
pub(crate) fn issue(
    shared: &dyn AuthState,
    namespace: &str,
    name: &str,
    audiences: Vec<String>,
    expiration_secs: i64,
) -> Result<(String, i64), ApiError> {
    let res = ResKey::new("", "serviceaccounts");
    let sa = shared
        .storage()
        .lock()
        .get(&res, &(namespace.to_owned(), name.to_owned()))
        .ok_or_else(|| ApiError::not_found("serviceaccounts", "", name))?;
    let now = jiff::Timestamp::now().as_second();
    let spec = TokenSpec {
        audiences: if audiences.is_empty() {
            vec![ISSUER.to_owned()]
        } else {
            audiences
        },
        issued_at: now,
        expires_at: now.saturating_add(expiration_secs),
    };
    let subject = TokenSubject::new(namespace.to_owned(), name.to_owned(), sa.uid().to_owned());
    let token = shared
        .authn()
        .signer
        .issue(&subject, &spec)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok((token, spec.expires_at))
}

fn rfc3339(secs: i64) -> String {
    jiff::Timestamp::from_second(secs)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// Answers a TokenRequest `request` for `namespace/name`: the request
/// echoed with its defaults and `status{token, expirationTimestamp}`.
pub(crate) fn token_request(
    shared: &dyn AuthState,
    namespace: &str,
    name: &str,
    mut request: Value,
) -> Result<Value, ApiError> {
    let invalid = |field: &str, message: &str| {
        ApiError::invalid(
            "TokenRequest",
            "authentication.k8s.io",
            name,
            vec![Cause::invalid(field, message)],
        )
    };
    let spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECS,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| invalid("spec.expirationSeconds", "must be an integer"))?,
    };
    if expiration < MIN_EXPIRATION_SECS {
        return Err(invalid(
            "spec.expirationSeconds",
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > 1 << 32 {
        return Err(invalid(
            "spec.expirationSeconds",
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    if let Some(bound) = spec.get("boundObjectRef").filter(|b| !b.is_null()) {
        let kind = bound.get("kind").and_then(Value::as_str).unwrap_or("");
        let plural = match kind {
            "Pod" => "pods",
            "Secret" => "secrets",
            other => {
                return Err(invalid(
                    "spec.boundObjectRef.kind",
                    &format!(
                        "Unsupported value: \"{other}\": supported values: \"Pod\", \"Secret\""
                    ),
                ))
            }
        };
        let bound_name = bound.get("name").and_then(Value::as_str).unwrap_or("");
        let key = (namespace.to_owned(), bound_name.to_owned());
        if shared
            .storage()
            .lock()
            .get(&ResKey::new("", plural), &key)
            .is_none()
        {
            return Err(ApiError::not_found(plural, "", bound_name));
        }
    }
    let audiences = crate::machinery::util::strings_at(&spec, "/audiences");
    let (token, expires) = issue(shared, namespace, name, audiences.clone(), expiration)?;
    let echoed_audiences = if audiences.is_empty() {
        vec![ISSUER.to_owned()]
    } else {
        audiences
    };
    request["kind"] = json!("TokenRequest");
    request["apiVersion"] = json!("authentication.k8s.io/v1");
    let meta = request
        .get("metadata")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    request["metadata"] = meta;
    request["metadata"]["name"] = json!(name);
    request["metadata"]["namespace"] = json!(namespace);
    request["metadata"]["creationTimestamp"] = Value::Null;
    request["spec"]["audiences"] = json!(echoed_audiences);
    request["spec"]["expirationSeconds"] = json!(expiration);
    if request["spec"].get("boundObjectRef").is_none() {
        request["spec"]["boundObjectRef"] = Value::Null;
    }
    request["status"] = json!({"token": token, "expirationTimestamp": rfc3339(expires)});
    Ok(request)
}
