//! Decoding of Kubernetes protobuf request bodies
//! (`application/vnd.kubernetes.protobuf`) into the JSON object
//! kube-apiserver would have seen.
//!
//! client-go, and so kubectl's imperative commands (`kubectl create
//! deployment|configmap|secret|...`, `kubectl autoscale`, `kubectl create
//! token`), send built-in objects as protobuf. A body is the magic `k8s\0`
//! followed by a `runtime.Unknown` message (apimachinery
//! `runtime/serializer/protobuf/protobuf.go`, `runtime/generated.proto`):
//! `typeMeta {apiVersion = 1, kind = 2} = 1`, `raw = 2` (the object's own
//! message), `contentEncoding = 3`, `contentType = 4`.
//!
//! The object's message is decoded with a schema table generated from the
//! Go type descriptors inside kubectl (`gen/`), so field names, numbers and
//! types are k8s.io/api's own, and the JSON follows Go's `encoding/json`
//! rules for the Go struct: gogo-protobuf always sends non-pointer fields,
//! zero ones included, and kube-apiserver drops those zeros again through
//! `omitempty`; pointers keep an explicit zero (`replicas: 0`); struct
//! values are always written (`"resources": {}`, `"creationTimestamp":
//! null`). The result equals `kubectl create ... --dry-run=client -o json`
//! for the same command (see the fixtures).
//!
//! Responses go the other way for the kinds the server answers without
//! storing (the access reviews): [`encode`] writes the protobuf body
//! kube-apiserver would send when the client prefers protobuf.
//!
//! Layout: `wire` (varints, keys), `schema` (table types), `table`
//! (generated), `decode` (message to JSON), `encode` (JSON to message),
//! `golang` (Go's time, duration and number text), `error`.

mod decode;
mod encode;
mod error;
mod golang;
mod schema;
#[rustfmt::skip]
mod table;
mod wire;

#[cfg(test)]
mod tests;

pub use encode::encode;
pub use error::{Malformed, ProtobufError};

use serde_json::Value;

use decode::Decoder;
use wire::Fields;

/// The media type of Kubernetes protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The four bytes every Kubernetes protobuf body starts with.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// Kinds registered in every group version (apimachinery's
/// `metav1.AddToGroupVersion`), accepted whatever the envelope's apiVersion.
const META_KINDS: [&str; 1] = ["DeleteOptions"];

/// Whether a `Content-Type` header names Kubernetes protobuf (parameters and
/// case ignored).
pub fn is_protobuf(content_type: &str) -> bool {
    let media_type = content_type.split(';').next().unwrap_or_default().trim();
    media_type.eq_ignore_ascii_case(MEDIA_TYPE)
}

/// A decoded body and what was skipped on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The object as JSON, with `apiVersion` and `kind` from the envelope.
    pub object: Value,
    /// Unknown fields that were skipped (kube-apiserver ignores them too;
    /// strict field validation does not apply to protobuf), one line each.
    pub warnings: Vec<String>,
}

/// Decodes a protobuf request body into the JSON object it carries, with
/// `apiVersion` and `kind` set from the envelope. Unknown fields are skipped
/// and logged at debug level; see [`decode_with_warnings`] to get them.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    decode_with_warnings(body).map(|decoded| decoded.object)
}

/// [`decode`], also returning the unknown fields that were skipped.
pub fn decode_with_warnings(body: &[u8]) -> Result<Decoded, ProtobufError> {
    decode_inner(body, None)
}

/// [`decode_with_warnings`] for a body sent to an endpoint that serves
/// `api_version`/`kind`: an envelope without a kind or apiVersion takes the
/// endpoint's, as kube-apiserver's `copyKindDefaults` does.
#[cfg(test)]
pub fn decode_with_defaults(
    body: &[u8],
    api_version: &str,
    kind: &str,
) -> Result<Decoded, ProtobufError> {
    decode_inner(body, Some((api_version, kind)))
}

fn decode_inner(body: &[u8], defaults: Option<(&str, &str)>) -> Result<Decoded, ProtobufError> {
    // The checks and messages of apimachinery's protobuf Serializer.Decode.
    if body.is_empty() {
        return Err(ProtobufError::NoData);
    }
    let rest = body
        .strip_prefix(&MAGIC[..])
        .ok_or(ProtobufError::MissingMagic)?;
    if rest.is_empty() {
        return Err(ProtobufError::Empty);
    }
    let mut decoder = Decoder {
        warnings: Vec::new(),
    };
    let mut envelope = Envelope::read(rest, &mut decoder)?;
    if let Some((api_version, kind)) = defaults {
        if envelope.kind.is_empty() {
            envelope.kind = kind.to_owned();
        }
        if envelope.api_version.is_empty() {
            envelope.api_version = api_version.to_owned();
        }
    }
    if envelope.kind.is_empty() {
        return Err(ProtobufError::MissingKind {
            api_version: envelope.api_version,
        });
    }
    if envelope.api_version.is_empty() {
        return Err(ProtobufError::MissingApiVersion {
            kind: envelope.kind,
        });
    }
    let Some(index) = root(&envelope.api_version, &envelope.kind) else {
        return Err(ProtobufError::UnsupportedKind {
            api_version: envelope.api_version,
            kind: envelope.kind,
        });
    };
    let mut object = decoder.message(index, envelope.raw, 1)?;
    if let Value::Object(map) = &mut object {
        map.insert("apiVersion".to_owned(), Value::String(envelope.api_version));
        map.insert("kind".to_owned(), Value::String(envelope.kind));
    }
    Ok(Decoded {
        object,
        warnings: decoder.warnings,
    })
}

/// The `(apiVersion, kind)` pairs [`decode`] accepts (`DeleteOptions` is
/// also accepted under any apiVersion).
#[cfg(test)]
pub fn supported_kinds() -> impl Iterator<Item = (&'static str, &'static str)> {
    table::ROOTS
        .iter()
        .map(|root| (root.api_version, root.kind))
}

fn root(api_version: &str, kind: &str) -> Option<u16> {
    let exact = table::ROOTS
        .iter()
        .find(|root| root.api_version == api_version && root.kind == kind);
    let meta = || {
        META_KINDS
            .contains(&kind)
            .then(|| table::ROOTS.iter().find(|root| root.kind == kind))
            .flatten()
    };
    exact.or_else(meta).map(|root| root.message)
}

/// The `runtime.Unknown` envelope.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

impl<'a> Envelope<'a> {
    fn read(bytes: &'a [u8], decoder: &mut Decoder) -> Result<Self, ProtobufError> {
        let mut envelope = Envelope {
            api_version: String::new(),
            kind: String::new(),
            raw: &[],
        };
        for item in Fields::new(bytes) {
            let (number, value) = item.map_err(|reason| malformed_at(None, reason))?;
            let at = Some(("envelope", number));
            match number {
                1 => {
                    let type_meta =
                        decode::expect_len(number, value).map_err(|r| malformed_at(at, r))?;
                    for item in Fields::new(type_meta) {
                        let (number, value) = item.map_err(|r| malformed_at(at, r))?;
                        let text = || {
                            decode::expect_len(number, value)
                                .map(|v| String::from_utf8_lossy(v).into_owned())
                                .map_err(|r| malformed_at(Some(("typeMeta", number)), r))
                        };
                        match number {
                            1 => envelope.api_version = text()?,
                            2 => envelope.kind = text()?,
                            _ => decoder
                                .warn(format!("runtime.TypeMeta: unknown field {number} skipped")),
                        }
                    }
                }
                2 => {
                    envelope.raw =
                        decode::expect_len(number, value).map_err(|r| malformed_at(at, r))?
                }
                // contentEncoding and contentType: kube-apiserver reads
                // neither, the raw bytes are always the protobuf object.
                3 | 4 => {
                    decode::expect_len(number, value).map_err(|r| malformed_at(at, r))?;
                }
                _ => decoder.warn(format!("runtime.Unknown: unknown field {number} skipped")),
            }
        }
        Ok(envelope)
    }
}

fn malformed_at(at: Option<(&'static str, u32)>, reason: Malformed) -> ProtobufError {
    let failure = error::Failure::from(reason);
    match at {
        Some((name, number)) => failure.in_field(name, number).into(),
        None => failure.into(),
    }
}
