//! HTTP plumbing shared by the handlers: the response body type, JSON/YAML
//! responses, `Accept` negotiation (plain JSON, YAML, `as=Table`,
//! `as=PartialObjectMetadata`, aggregated discovery), request bodies with
//! kube-apiserver's 3 MiB limit (decoded by [`decode`]), and the query
//! string.

use std::collections::HashMap;
use std::convert::Infallible;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, Limited};
use serde_json::Value;

use crate::http::decode::{self, Decoded};
use crate::machinery::status::ApiError;

/// The body of every response.
pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

/// kube-apiserver's limit for request bodies (`MaxRequestBodyBytes`).
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;

pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

/// A response with a JSON body.
pub(crate) fn json_bytes(code: u16, body: Bytes) -> Response<Body> {
    json_response(code, full(body))
}

/// A response with a JSON body that may still be being written.
pub(crate) fn json_response(code: u16, body: Body) -> Response<Body> {
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A response with `value` as JSON.
pub(crate) fn json(code: u16, value: &Value) -> Response<Body> {
    json_bytes(
        code,
        Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
    )
}

/// Renders an object in the negotiated format (JSON bytes as they are, or
/// YAML).
pub(crate) fn respond(code: u16, format: Format, bytes: Bytes) -> Response<Body> {
    match format {
        Format::Yaml => match serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| serde_saphyr::to_string(&v).ok())
        {
            Some(yaml) => {
                let mut resp = json_bytes(code, Bytes::from(yaml));
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/yaml"),
                );
                resp
            }
            None => json_bytes(code, bytes),
        },
        Format::Json => json_bytes(code, bytes),
    }
}

/// The error as a response.
pub(crate) fn error(err: &ApiError) -> Response<Body> {
    if err.plain_not_found {
        let mut resp = Response::new(full("404 page not found\n"));
        *resp.status_mut() = StatusCode::NOT_FOUND;
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        resp.headers_mut().insert(
            "x-content-type-options",
            HeaderValue::from_static("nosniff"),
        );
        return resp;
    }
    let mut resp = json(err.code, &err.to_status());
    if let Some(secs) = err.retry_after {
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    resp
}

/// Serialization format of a response body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Yaml,
}

/// What the client asked for in `Accept`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// The object itself.
    Object(Format),
    /// A `meta.k8s.io` Table (`v1` or `v1beta1`).
    Table { version: &'static str },
    /// `PartialObjectMetadata` / `PartialObjectMetadataList`.
    Metadata { version: &'static str },
}

struct MediaType<'a> {
    essence: &'a str,
    params: Vec<(&'a str, &'a str)>,
}

fn media_types(accept: &str) -> Vec<MediaType<'_>> {
    accept
        .split(',')
        .map(|part| {
            let mut it = part.split(';');
            let essence = it.next().unwrap_or("").trim();
            let params = it
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| (k.trim(), v.trim()))
                .collect();
            MediaType { essence, params }
        })
        .collect()
}

impl MediaType<'_> {
    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }
}

/// Negotiates a resource response (kube-apiserver's
/// `negotiation.NegotiateOutputMediaType` with the Table and metadata
/// conversions).
pub(crate) fn negotiate(headers: &HeaderMap) -> Result<Output, ApiError> {
    let Some(accept) = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.trim().is_empty())
    else {
        return Ok(Output::Object(Format::Json));
    };
    for mt in media_types(accept) {
        let format = match mt.essence {
            "application/json" | "application/*" | "*/*" => Format::Json,
            "application/yaml" => Format::Yaml,
            _ => continue,
        };
        match mt.param("as") {
            None => return Ok(Output::Object(format)),
            Some(as_) if format == Format::Json && mt.param("g") == Some("meta.k8s.io") => {
                let version = match mt.param("v") {
                    Some("v1") => "v1",
                    Some("v1beta1") => "v1beta1",
                    _ => continue,
                };
                match as_ {
                    "Table" => return Ok(Output::Table { version }),
                    "PartialObjectMetadata" | "PartialObjectMetadataList" => {
                        return Ok(Output::Metadata { version })
                    }
                    _ => continue,
                }
            }
            Some(_) => continue,
        }
    }
    Err(ApiError::not_acceptable())
}

/// Whether `/api` or `/apis` should answer aggregated discovery, and which
/// version (`v2` or `v2beta1`); `Ok(None)` for legacy.
pub(crate) fn negotiate_discovery(headers: &HeaderMap) -> Result<Option<&'static str>, ApiError> {
    let Some(accept) = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.trim().is_empty())
    else {
        return Ok(None);
    };
    for mt in media_types(accept) {
        match mt.essence {
            "application/json" | "application/*" | "*/*" => {}
            _ => continue,
        }
        match mt.param("as") {
            None => return Ok(None),
            Some("APIGroupDiscoveryList") if mt.param("g") == Some("apidiscovery.k8s.io") => {
                match mt.param("v") {
                    Some("v2") => return Ok(Some("v2")),
                    Some("v2beta1") => return Ok(Some("v2beta1")),
                    _ => continue,
                }
            }
            Some(_) => continue,
        }
    }
    Err(ApiError::not_acceptable())
}

/// Whether a JSON response is acceptable (no `Accept`, or one naming
/// `application/json` or a wildcard).
pub(crate) fn accepts_json(headers: &HeaderMap) -> bool {
    let Some(accept) = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.trim().is_empty())
    else {
        return true;
    };
    media_types(accept).iter().any(|mt| {
        matches!(
            mt.essence.to_ascii_lowercase().as_str(),
            "application/json" | "application/*" | "*/*"
        )
    })
}

/// The media type of the request body, without parameters.
pub(crate) fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.split(';').next())
        .map(|s| s.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Reads a request body, answering 413 past [`MAX_BODY`].
pub(crate) async fn read_body<B>(body: B) -> Result<Bytes, ApiError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match Limited::new(body, MAX_BODY).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Err(ApiError::too_large())
            } else {
                Err(ApiError::bad_request(format!(
                    "error reading request body: {e}"
                )))
            }
        }
    }
}

/// Parses a JSON or YAML body into an object.
pub(crate) fn decode_object(bytes: &[u8], media: &str) -> Result<Value, ApiError> {
    decode_body(bytes, media).map(|d| d.value)
}

/// Parses a JSON, YAML or protobuf body, noting duplicate keys.
pub(crate) fn decode_body(bytes: &[u8], media: &str) -> Result<Decoded, ApiError> {
    let decoded = match media {
        "application/json" | "" => decode::json(bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}")))?,
        "application/yaml" | "application/apply-patch+yaml" => {
            let text = std::str::from_utf8(bytes)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML body: {e}")))?;
            decode::yaml(text)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML body: {e}")))?
        }
        "application/vnd.kubernetes.protobuf" => match crate::http::protobuf::decode(bytes) {
            Ok(value) => Decoded {
                value,
                duplicates: Vec::new(),
            },
            Err(e @ crate::http::protobuf::ProtobufError::UnsupportedKind { .. }) => {
                tracing::debug!(error = %e, "protobuf body refused");
                return Err(ApiError::unsupported_media_type(&[
                    "application/json",
                    "application/yaml",
                ]));
            }
            Err(e) => {
                return Err(ApiError::bad_request(format!(
                    "error decoding protobuf body: {e}"
                )))
            }
        },
        _ => {
            return Err(ApiError::unsupported_media_type(&[
                "application/json",
                "application/yaml",
                "application/vnd.kubernetes.protobuf",
            ]))
        }
    };
    Ok(decoded)
}

/// The query string as a map (last value wins).
#[derive(Debug, Default)]
pub(crate) struct Query(HashMap<String, String>);

impl Query {
    pub fn parse(q: Option<&str>) -> Self {
        Self(
            q.map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
                .unwrap_or_default(),
        )
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }

    /// A non-empty value.
    pub fn non_empty(&self, k: &str) -> Option<&str> {
        self.get(k).filter(|s| !s.is_empty())
    }

    /// A boolean flag (`true`, `1`).
    pub fn flag(&self, k: &str) -> Result<Option<bool>, ApiError> {
        match self.get(k) {
            None | Some("") => Ok(None),
            Some("true" | "1" | "True" | "TRUE" | "t" | "T") => Ok(Some(true)),
            Some("false" | "0" | "False" | "FALSE" | "f" | "F") => Ok(Some(false)),
            Some(v) => Err(ApiError::bad_request(format!(
                "invalid boolean value for {k}: {v}"
            ))),
        }
    }

    pub fn int(&self, k: &str) -> Result<Option<i64>, ApiError> {
        match self.non_empty(k) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| ApiError::bad_request(format!("invalid value for {k}: {v}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(accept: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
        h
    }

    #[test]
    fn kubectl_get_negotiates_table() {
        let h = headers("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json");
        assert_eq!(negotiate(&h).unwrap(), Output::Table { version: "v1" });
    }

    #[test]
    fn protobuf_only_is_not_acceptable() {
        let h = headers("application/vnd.kubernetes.protobuf");
        assert_eq!(negotiate(&h).unwrap_err().code, 406);
        let h = headers("application/vnd.kubernetes.protobuf, */*");
        assert_eq!(negotiate(&h).unwrap(), Output::Object(Format::Json));
    }

    #[test]
    fn client_go_discovery_accept_gets_v2() {
        let h = headers("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json");
        assert_eq!(negotiate_discovery(&h).unwrap(), Some("v2"));
        assert_eq!(
            negotiate_discovery(&headers("application/json")).unwrap(),
            None
        );
    }
}
