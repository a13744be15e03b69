//! The client layer's error type. API errors keep the server's `Status`
//! (reason, code, message, causes, retry-after); transport, TLS, timeout,
//! decode, configuration and authentication failures are separate variants so
//! callers can tell "the server said no" from "we never reached it".
//!
//! Mapping of HTTP answers without a `Status` body follows apimachinery's
//! `NewGenericServerResponse` (pkg/api/errors/errors.go): the HTTP code picks
//! the reason, so a plain-text `404 page not found` is still `is_not_found()`.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use kube_core::response::{reason, StatusCause, StatusDetails, StatusSummary};
use kube_core::Status;

/// A boxed error from a lower layer (hyper, io).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong in the client layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server answered with an error `Status`.
    #[error("{}", DisplayStatus(.0))]
    Api(Box<Status>),

    /// The request never got an answer: connection refused, reset, DNS, ...
    #[error("cannot reach the API server at {url}: {source}")]
    Transport {
        /// The URL the request went to.
        url: String,
        /// What failed underneath.
        #[source]
        source: BoxError,
    },

    /// The TLS handshake failed (unknown CA, wrong server name, bad client
    /// certificate, ...).
    #[error("TLS handshake with the API server at {url} failed: {source}")]
    Tls {
        /// The URL the request went to.
        url: String,
        /// The rustls error.
        #[source]
        source: rustls::Error,
    },

    /// The request did not finish within the configured read timeout.
    #[error("request to {url} timed out after {timeout:?}")]
    Timeout {
        /// The URL the request went to.
        url: String,
        /// The timeout that elapsed.
        timeout: Duration,
    },

    /// A response body (or one watch event) was not what the caller expected.
    #[error("cannot decode {what}: {source}")]
    Decode {
        /// What was being decoded, e.g. `response to GET /api/v1/pods`.
        what: String,
        /// The JSON error, with line and column.
        #[source]
        source: serde_json::Error,
    },

    /// The server broke the wire protocol (e.g. a watch event larger than the
    /// client accepts).
    #[error("protocol error: {0}")]
    Protocol(String),

    /// The configuration could not be loaded or used.
    #[error(transparent)]
    Config(#[from] ConfigError),

    /// Obtaining credentials failed (exec plugin, token file).
    #[error("authentication: {0}")]
    Auth(String),

    /// kube-core refused to build the request (empty name, invalid params).
    #[error("invalid request: {0}")]
    Request(#[from] kube_core::request::Error),
}

/// A `Result` with the client layer's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The server's `Status`, for API errors.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Api(s) => Some(s),
            _ => None,
        }
    }

    /// The HTTP code of an API error.
    pub fn code(&self) -> Option<u16> {
        self.status().map(|s| s.code)
    }

    fn reason_is(&self, wanted: &str, code: u16) -> bool {
        // As apimachinery's reasonForError + code fallback: a known reason
        // decides; an unknown/empty reason falls back to the HTTP code.
        self.status()
            .is_some_and(|s| s.reason == wanted || (!reason::is_known(&s.reason) && s.code == code))
    }

    /// 404 NotFound.
    pub fn is_not_found(&self) -> bool {
        self.reason_is(reason::NOT_FOUND, 404)
    }

    /// 409 Conflict (a stale resourceVersion, an apply conflict).
    pub fn is_conflict(&self) -> bool {
        self.reason_is(reason::CONFLICT, 409)
    }

    /// 409 AlreadyExists (create of an existing name).
    pub fn is_already_exists(&self) -> bool {
        self.status()
            .is_some_and(|s| s.reason == reason::ALREADY_EXISTS)
    }

    /// 410: the requested resourceVersion or continue token is too old.
    /// Reasons `Expired` and `Gone` are treated alike, as client-go's
    /// reflector does.
    pub fn is_gone(&self) -> bool {
        self.status().is_some_and(|s| {
            s.reason == reason::GONE
                || s.reason == reason::EXPIRED
                || (!reason::is_known(&s.reason) && s.code == 410)
        })
    }

    /// Alias of [`Error::is_gone`], named after the `Expired` reason.
    pub fn is_expired(&self) -> bool {
        self.is_gone()
    }

    /// 403 Forbidden.
    pub fn is_forbidden(&self) -> bool {
        self.reason_is(reason::FORBIDDEN, 403)
    }

    /// 401 Unauthorized.
    pub fn is_unauthorized(&self) -> bool {
        self.reason_is(reason::UNAUTHORIZED, 401)
    }

    /// 422 Invalid.
    pub fn is_invalid(&self) -> bool {
        self.reason_is(reason::INVALID, 422)
    }

    /// 429 TooManyRequests.
    pub fn is_too_many_requests(&self) -> bool {
        self.reason_is(reason::TOO_MANY_REQUESTS, 429)
    }

    /// How long the server asked the client to wait before retrying
    /// (`details.retryAfterSeconds`, filled from a `Retry-After` header when
    /// the body has none).
    pub fn retry_after(&self) -> Option<Duration> {
        self.status()
            .and_then(|s| s.details.as_ref())
            .map(|d| d.retry_after_seconds)
            .filter(|secs| *secs > 0)
            .map(|secs| Duration::from_secs(u64::from(secs)))
    }
}

struct DisplayStatus<'a>(&'a Status);

impl fmt::Display for DisplayStatus<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        write!(f, "API error {}", s.code)?;
        if !s.reason.is_empty() {
            write!(f, " {}", s.reason)?;
        }
        if !s.message.is_empty() {
            write!(f, ": {}", s.message)?;
        }
        Ok(())
    }
}

/// A configuration that cannot be used: which file, which entry, what is
/// wrong.
#[derive(Debug, thiserror::Error)]
pub struct ConfigError {
    /// The file the problem is in, when there is one.
    pub file: Option<PathBuf>,
    /// The entry, e.g. `user "alice"` or `context "dev"`.
    pub entry: Option<String>,
    /// What is wrong.
    pub problem: String,
    /// The underlying error, if any.
    #[source]
    pub source: Option<BoxError>,
}

impl ConfigError {
    /// A problem not tied to a file.
    pub fn new(problem: impl Into<String>) -> Self {
        Self {
            file: None,
            entry: None,
            problem: problem.into(),
            source: None,
        }
    }

    /// Names the file.
    pub fn in_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }

    /// Names the entry.
    pub fn at(mut self, entry: impl Into<String>) -> Self {
        self.entry = Some(entry.into());
        self
    }

    /// Attaches the cause.
    pub fn caused_by(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid configuration")?;
        if let Some(file) = &self.file {
            write!(f, " in {}", file.display())?;
        }
        if let Some(entry) = &self.entry {
            write!(f, ", {entry}")?;
        }
        write!(f, ": {}", self.problem)?;
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

/// The reason and generic message apimachinery's `NewGenericServerResponse`
/// gives an HTTP code when the body is not a `Status`.
fn generic_reason(code: u16, method: &http::Method) -> (&'static str, &'static str) {
    match code {
        409 if method == http::Method::POST => {
            (reason::ALREADY_EXISTS, "the server reported a conflict")
        }
        409 => (reason::CONFLICT, "the server reported a conflict"),
        404 => (
            reason::NOT_FOUND,
            "the server could not find the requested resource",
        ),
        400 => (
            reason::BAD_REQUEST,
            "the server rejected our request for an unknown reason",
        ),
        401 => (
            reason::UNAUTHORIZED,
            "the server has asked for the client to provide credentials",
        ),
        403 => (reason::FORBIDDEN, "the server refused the request"),
        405 => (
            reason::METHOD_NOT_ALLOWED,
            "the server does not allow this method on the requested resource",
        ),
        406 => (reason::NOT_ACCEPTABLE, "the server cannot produce the requested media type"),
        410 => (reason::GONE, "the requested resource is no longer available"),
        413 => (reason::REQUEST_ENTITY_TOO_LARGE, "the request entity is too large"),
        415 => (reason::UNSUPPORTED_MEDIA_TYPE, "the server does not accept the request's media type"),
        422 => (
            reason::INVALID,
            "the server rejected our request due to an error in our request",
        ),
        429 => (
            reason::TOO_MANY_REQUESTS,
            "the server has received too many requests and has asked us to try again later",
        ),
        503 => (reason::SERVICE_UNAVAILABLE, "the server is currently unable to handle the request"),
        504 => (
            reason::TIMEOUT,
            "the server was unable to return a response in the time allotted, but may still be processing the request",
        ),
        c if c >= 500 => (reason::INTERNAL_ERROR, "an error on the server has prevented the request from succeeding"),
        _ => (reason::UNKNOWN, "the server responded with an error but did not return more information"),
    }
}

/// The largest slice of a non-Status error body kept in the message.
const MAX_ERROR_TEXT: usize = 1024;

/// Turns a non-2xx answer into [`Error::Api`], whether or not the body is a
/// `Status`.
pub(crate) fn api_error(
    code: http::StatusCode,
    method: &http::Method,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Error {
    let code_u16 = code.as_u16();
    let mut status = match decode_status(body) {
        Some(mut s) => {
            if s.code == 0 {
                s.code = code_u16;
            }
            s
        }
        None => {
            let (reason, generic) = generic_reason(code_u16, method);
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            let text = truncate(text, MAX_ERROR_TEXT);
            let message = if text.is_empty() {
                generic.to_owned()
            } else {
                format!("{generic}: {text}")
            };
            let causes = if text.is_empty() {
                Vec::new()
            } else {
                vec![StatusCause {
                    reason: "UnexpectedServerResponse".to_owned(),
                    message: text.to_owned(),
                    field: String::new(),
                }]
            };
            Status {
                status: Some(StatusSummary::Failure),
                code: code_u16,
                message,
                metadata: None,
                reason: reason.to_owned(),
                details: Some(empty_details(causes)),
            }
        }
    };
    if let Some(secs) = retry_after_header(headers) {
        let details = status
            .details
            .get_or_insert_with(|| empty_details(Vec::new()));
        if details.retry_after_seconds == 0 {
            details.retry_after_seconds = secs;
        }
    }
    Error::Api(Box::new(status))
}

fn empty_details(causes: Vec<StatusCause>) -> StatusDetails {
    StatusDetails {
        name: String::new(),
        group: String::new(),
        kind: String::new(),
        uid: String::new(),
        causes,
        retry_after_seconds: 0,
    }
}

/// A `Status` body, recognised by `kind: Status` (every other JSON object
/// would also deserialize into `Status`, whose fields all default).
pub(crate) fn decode_status(body: &[u8]) -> Option<Status> {
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(default, borrow)]
        kind: Option<std::borrow::Cow<'a, str>>,
    }
    let kind: Kind<'_> = serde_json::from_slice(body).ok()?;
    if kind.kind.as_deref() != Some("Status") {
        return None;
    }
    serde_json::from_slice(body).ok()
}

fn retry_after_header(headers: &http::HeaderMap) -> Option<u32> {
    headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue, Method, StatusCode};

    fn err(code: u16, method: Method, body: &str) -> Error {
        api_error(
            StatusCode::from_u16(code).unwrap(),
            &method,
            &HeaderMap::new(),
            body.as_bytes(),
        )
    }

    #[test]
    fn status_body_is_kept_with_reason_code_and_causes() {
        let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"Widget.ex.com \"x\" is invalid: spec.size: Invalid value","reason":"Invalid",
            "details":{"name":"x","group":"ex.com","kind":"Widget",
              "causes":[{"reason":"FieldValueInvalid","message":"Invalid value","field":"spec.size"}]},
            "code":422}"#;
        let e = err(422, Method::POST, body);
        assert!(e.is_invalid());
        assert!(!e.is_conflict());
        let s = e.status().unwrap();
        assert_eq!(s.code, 422);
        let d = s.details.as_ref().unwrap();
        assert_eq!(d.causes[0].field, "spec.size");
        assert_eq!(d.causes[0].reason, "FieldValueInvalid");
        assert!(e.to_string().contains("422 Invalid"), "{e}");
    }

    #[test]
    fn each_reason_maps_to_its_predicate() {
        type Predicate = fn(&Error) -> bool;
        let cases: &[(&str, u16, Predicate)] = &[
            ("NotFound", 404, Error::is_not_found),
            ("Conflict", 409, Error::is_conflict),
            ("AlreadyExists", 409, Error::is_already_exists),
            ("Gone", 410, Error::is_gone),
            ("Expired", 410, Error::is_gone),
            ("Forbidden", 403, Error::is_forbidden),
            ("Invalid", 422, Error::is_invalid),
            ("Unauthorized", 401, Error::is_unauthorized),
            ("TooManyRequests", 429, Error::is_too_many_requests),
        ];
        for (reason, code, pred) in cases {
            let body = format!(
                r#"{{"kind":"Status","status":"Failure","reason":"{reason}","code":{code}}}"#
            );
            let e = err(*code, Method::GET, &body);
            assert!(pred(&e), "{reason} should satisfy its predicate");
        }
        // AlreadyExists is a 409 but not a Conflict, as in apimachinery.
        let e = err(
            409,
            Method::POST,
            r#"{"kind":"Status","reason":"AlreadyExists","code":409}"#,
        );
        assert!(!e.is_conflict());
    }

    #[test]
    fn watch_expired_status_is_gone() {
        let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}"#;
        let e = err(410, Method::GET, body);
        assert!(e.is_gone());
        assert!(e.is_expired());
        assert!(!e.is_not_found());
    }

    #[test]
    fn plain_text_404_becomes_not_found_api_error() {
        // kube-apiserver's notfoundhandler answers unknown paths in plain text.
        let e = err(404, Method::GET, "404 page not found\n");
        assert!(e.is_not_found());
        assert_eq!(e.code(), Some(404));
        assert!(e.to_string().contains("404 page not found"), "{e}");
    }

    #[test]
    fn generic_409_depends_on_verb() {
        assert!(err(409, Method::POST, "").is_already_exists());
        assert!(err(409, Method::PUT, "").is_conflict());
    }

    #[test]
    fn empty_5xx_bodies_get_internal_error() {
        let e = err(502, Method::GET, "");
        assert_eq!(e.status().unwrap().reason, "InternalError");
        assert_eq!(e.code(), Some(502));
    }

    #[test]
    fn json_that_is_not_a_status_is_not_taken_for_one() {
        let e = err(404, Method::GET, r#"{"kind":"Pod","metadata":{}}"#);
        assert!(e.is_not_found());
        assert_eq!(e.status().unwrap().reason, "NotFound");
    }

    #[test]
    fn retry_after_comes_from_details_or_header() {
        let e = err(
            429,
            Method::GET,
            r#"{"kind":"Status","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":7}}"#,
        );
        assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));

        let mut headers = HeaderMap::new();
        headers.insert(http::header::RETRY_AFTER, HeaderValue::from_static("3"));
        let e = api_error(
            StatusCode::TOO_MANY_REQUESTS,
            &Method::GET,
            &headers,
            b"slow down",
        );
        assert!(e.is_too_many_requests());
        assert_eq!(e.retry_after(), Some(Duration::from_secs(3)));

        assert_eq!(err(500, Method::GET, "").retry_after(), None);
    }

    #[test]
    fn long_bodies_are_truncated_on_a_char_boundary() {
        let body = "é".repeat(2000);
        let e = err(500, Method::GET, &body);
        assert!(e.to_string().len() < 1500);
    }

    #[test]
    fn config_error_names_file_entry_and_problem() {
        let e = ConfigError::new("client-key is missing")
            .in_file("/tmp/kc")
            .at("user \"alice\"");
        assert_eq!(
            e.to_string(),
            "invalid configuration in /tmp/kc, user \"alice\": client-key is missing"
        );
    }
}
