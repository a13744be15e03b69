//! The contract every answer of the API server keeps: a non-2xx answer
//! carries a JSON `Status` (`kind: Status`, `status: Failure`) whose code
//! is the answer's, except where kube-apiserver itself answers in plain
//! text (a `404 page not found` outside the API paths, and Go's HTTP
//! layer's `400`/`414`/`431` for a request it cannot read) or nothing at
//! all (kube-openapi's `/openapi/v3/...` document handler: a 406 for an
//! `Accept` it cannot serve, checked before the document is looked up, a
//! 301 to the current hash and a 304 when the ETag matches); a 500 from
//! the panic filter is a panic; a 2xx JSON answer that is not a stream is
//! JSON.

use http::{header, StatusCode};
use serde_json::Value;

use crate::FindingKind;

/// What kube-apiserver's panic filter answers.
const PANIC_MESSAGE: &str = "This request caused apiserver to panic";

/// An answer as read: code, content type and body.
pub(crate) struct Answer {
    pub code: StatusCode,
    pub content_type: String,
    pub body: bytes::Bytes,
}

impl Answer {
    pub(crate) fn from_parts(parts: &http::response::Parts, body: bytes::Bytes) -> Self {
        Answer {
            code: parts.status,
            content_type: parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned(),
            body,
        }
    }
}

/// Checks `answer` to a request for `path` (`restful`: a path where
/// kube-apiserver answers a JSON 404; `openapi_document`: a path under
/// `/openapi/v3/`).
pub(crate) fn check(
    answer: &Answer,
    restful: bool,
    openapi_document: bool,
    streamed: bool,
) -> Result<(), (FindingKind, String)> {
    let code = answer.code.as_u16();
    let bodiless = answer.body.is_empty() && answer.content_type.is_empty();
    if openapi_document && bodiless && (answer.code.is_redirection() || code == 406) {
        return Ok(());
    }
    let text = || String::from_utf8_lossy(&answer.body[..answer.body.len().min(600)]).into_owned();
    if answer.code.is_success() {
        if !streamed
            && answer.content_type.starts_with("application/json")
            && !answer.body.is_empty()
        {
            serde_json::from_slice::<Value>(&answer.body).map_err(|e| {
                (
                    FindingKind::Contract,
                    format!("a {code} JSON answer is not JSON ({e}): {}", text()),
                )
            })?;
        }
        return Ok(());
    }
    let plain = answer.content_type.starts_with("text/plain");
    if plain && code == 404 && !restful && &answer.body[..] == b"404 page not found\n" {
        return Ok(());
    }
    if plain && matches!(code, 400 | 414 | 431) {
        let expected = format!(
            "{code} {}",
            answer.code.canonical_reason().unwrap_or_default()
        );
        if answer.body == expected.as_bytes() {
            return Ok(());
        }
    }
    if !answer.content_type.starts_with("application/json") {
        return Err((
            FindingKind::Contract,
            format!(
                "a {code} answer of type {:?}: {}",
                answer.content_type,
                text()
            ),
        ));
    }
    let status: Value = serde_json::from_slice(&answer.body).map_err(|e| {
        (
            FindingKind::Contract,
            format!("a {code} answer is not JSON ({e}): {}", text()),
        )
    })?;
    let field = |k: &str| status.get(k).cloned().unwrap_or(Value::Null);
    if field("kind") != "Status" || field("apiVersion") != "v1" || field("status") != "Failure" {
        return Err((
            FindingKind::Contract,
            format!("a {code} answer is not a failure Status: {}", text()),
        ));
    }
    if field("code") != code {
        return Err((
            FindingKind::Contract,
            format!("a {code} answer's Status has code {}", field("code")),
        ));
    }
    if code == 500
        && field("message")
            .as_str()
            .is_some_and(|m| m.contains(PANIC_MESSAGE))
    {
        return Err((
            FindingKind::Panic,
            "the server answered its panic 500".to_owned(),
        ));
    }
    Ok(())
}

/// Whether kube-apiserver answers a JSON 404 under `path`: the core API,
/// and the groups it serves itself (`builtin`).
pub(crate) fn restful(path: &str, builtin: &[String]) -> bool {
    if path == "/api" || path.starts_with("/api/") {
        return true;
    }
    path.strip_prefix("/apis/")
        .and_then(|rest| rest.split('/').next())
        .is_some_and(|group| !group.is_empty() && builtin.iter().any(|g| g == group))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(code: u16, content_type: &str, body: &str) -> Answer {
        Answer {
            code: StatusCode::from_u16(code).unwrap(),
            content_type: content_type.to_owned(),
            body: bytes::Bytes::copy_from_slice(body.as_bytes()),
        }
    }

    fn status(code: u16, message: &str) -> String {
        serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "code": code}).to_string()
    }

    #[test]
    fn statuses_with_their_code_keep_the_contract() {
        let ok = |a: Answer, restful, streamed| check(&a, restful, false, streamed).is_ok();
        assert!(ok(
            answer(404, "application/json", &status(404, "nope")),
            true,
            false
        ));
        assert!(ok(answer(200, "application/json", "{}"), true, false));
        assert!(ok(
            answer(200, "application/json", "{\"type\":\"ADDED\"}\n{"),
            true,
            true
        ));
        assert!(ok(
            answer(404, "text/plain; charset=utf-8", "404 page not found\n"),
            false,
            false
        ));
        assert!(ok(
            answer(
                431,
                "text/plain; charset=utf-8",
                "431 Request Header Fields Too Large"
            ),
            true,
            false
        ));
    }

    #[test]
    fn openapi_documents_may_answer_without_a_body() {
        for code in [301, 304, 406] {
            assert!(
                check(&answer(code, "", ""), false, true, false).is_ok(),
                "{code}"
            );
        }
        assert!(check(&answer(500, "", ""), false, true, false).is_err());
        assert!(check(&answer(406, "text/plain", "no"), false, true, false).is_err());
    }

    #[test]
    fn what_breaks_the_contract_is_a_finding() {
        let kind = |a: Answer, restful| check(&a, restful, false, false).unwrap_err().0;
        assert_eq!(kind(answer(406, "", ""), true), FindingKind::Contract);
        assert_eq!(
            kind(
                answer(404, "text/plain; charset=utf-8", "404 page not found\n"),
                true
            ),
            FindingKind::Contract
        );
        assert_eq!(
            kind(answer(422, "application/json", &status(400, "x")), true),
            FindingKind::Contract
        );
        assert_eq!(
            kind(answer(500, "application/json", "{\"kind\":\"Pod\"}"), true),
            FindingKind::Contract
        );
        assert_eq!(kind(answer(413, "", ""), true), FindingKind::Contract);
        assert_eq!(
            kind(answer(200, "application/json", "{"), true),
            FindingKind::Contract
        );
        let panic = status(
            500,
            "This request caused apiserver to panic. Look in the logs for details.",
        );
        assert_eq!(
            kind(answer(500, "application/json", &panic), true),
            FindingKind::Panic
        );
    }

    #[test]
    fn json_404s_are_owed_under_the_core_api_and_builtin_groups() {
        let builtin = vec!["apps".to_owned()];
        assert!(restful("/api", &builtin));
        assert!(restful("/api/v9/x", &builtin));
        assert!(restful("/apis/apps/v1/nope", &builtin));
        assert!(!restful("/apis/widgets.example.com/v1", &builtin));
        assert!(!restful("/metrics", &builtin));
    }
}
