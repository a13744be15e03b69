//! Entry points for the fuzz targets under `tests/fuzz` (feature
//! `fuzzing`, hidden from the docs): the decoders that read what an API
//! server or a credential plugin sends, called on bytes directly so a
//! fuzzer runs them without a connection or a process. Each calls the very
//! function the client uses; none adds behaviour of its own.

use std::sync::Arc;

use either::Either;
use kube_core::Status;

use crate::client::auth::exec::ExecAuth;
use crate::client::config::{Config, ExecConfig};
use crate::client::error::api_error;
use crate::client::tls::{provider, ClientCertStore};
use crate::client::Error;

/// The error the client makes of a non-2xx answer: `code` (100 to 999),
/// `method`, the `Retry-After` header's value, and the body as received.
pub fn decode_error_answer(
    code: u16,
    method: &http::Method,
    retry_after: Option<&[u8]>,
    body: &[u8],
) -> Option<Error> {
    let code = http::StatusCode::from_u16(code).ok()?;
    let mut headers = http::HeaderMap::new();
    if let Some(v) = retry_after.and_then(|v| http::HeaderValue::from_bytes(v).ok()) {
        headers.insert(http::header::RETRY_AFTER, v);
    }
    Some(api_error(code, method, &headers, body))
}

/// What the client makes of a delete's answer: the object or a `Status`.
pub fn decode_object_or_status(body: &[u8]) -> Result<Either<serde_json::Value, Status>, Error> {
    crate::client::api::object_or_status(body, "DELETE")
}

/// Reads what an exec credential plugin configured for `api_version`
/// printed, as the client does after running it; `Ok` holds whether the
/// credential carries a bearer token.
pub fn decode_exec_credential(api_version: &str, stdout: &[u8]) -> Result<bool, Error> {
    let mut exec = ExecConfig::new("credential-plugin");
    exec.api_version = api_version.to_owned();
    let config = Config::new(http::Uri::from_static("https://127.0.0.1:6443"));
    let certs = Arc::new(ClientCertStore::new(provider()));
    let auth = ExecAuth::new(exec, &config, certs);
    auth.parse(stdout).map(|cached| cached.has_token())
}
