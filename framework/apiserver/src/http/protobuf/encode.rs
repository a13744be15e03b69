//! Table-driven encoding of a JSON object into the protobuf body
//! kube-apiserver would send (`k8s\0` + `runtime.Unknown`), for the kinds
//! the server answers as protobuf when the client prefers it. It covers
//! plain messages, scalars, repeated fields, string-keyed maps, `Time`,
//! `MicroTime` and named slices; a value whose Go type has another special
//! form (`Quantity`, `IntOrString`, raw JSON, ...) is refused, and the
//! caller answers JSON instead.

use base64::Engine as _;
use serde_json::Value;

use super::decode::MAX_DEPTH;
use super::schema::{Emit, Field, Shape, Special, Ty};
use super::table::{MESSAGES, ROOTS};
use super::wire::{FIXED32, FIXED64, LEN, VARINT};
use super::MAGIC;

/// Why a value cannot be encoded (the caller falls back to JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unencodable(pub String);

fn refuse<T>(what: impl Into<String>) -> Result<T, Unencodable> {
    Err(Unencodable(what.into()))
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(number: u32, wire_type: u8, out: &mut Vec<u8>) {
    varint((u64::from(number) << 3) | u64::from(wire_type), out);
}

fn len_field(number: u32, bytes: &[u8], out: &mut Vec<u8>) {
    key(number, LEN, out);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// Encodes `object` (JSON, with `apiVersion` and `kind`) as a Kubernetes
/// protobuf body, when its kind is in the table.
pub fn encode(object: &Value) -> Result<Vec<u8>, Unencodable> {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let Some(root) = ROOTS
        .iter()
        .find(|r| r.api_version == api_version && r.kind == kind)
    else {
        return refuse(format!("{api_version}/{kind} is not in the protobuf table"));
    };
    let mut raw = Vec::new();
    message(root.message, object, &mut raw, 1)?;
    let mut type_meta = Vec::new();
    len_field(1, api_version.as_bytes(), &mut type_meta);
    len_field(2, kind.as_bytes(), &mut type_meta);
    let mut out = MAGIC.to_vec();
    len_field(1, &type_meta, &mut out);
    len_field(2, &raw, &mut out);
    // contentEncoding and contentType: empty, as kube-apiserver sends them.
    len_field(3, b"", &mut out);
    len_field(4, b"", &mut out);
    Ok(out)
}

/// Appends the fields of message `index` taken from `value`.
fn message(index: u16, value: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), Unencodable> {
    if depth > MAX_DEPTH {
        return refuse("nested too deep");
    }
    let Some(message) = MESSAGES.get(usize::from(index)) else {
        return refuse(format!("no message {index}"));
    };
    match message.special {
        Special::None => {
            let Some(object) = value.as_object() else {
                return refuse(format!("{} is not an object", message.name));
            };
            for field in message.fields {
                if field.emit == Emit::Inline {
                    // An embedded struct: its fields are the parent's.
                    if let Ty::Message(inner) = field.ty {
                        let mut bytes = Vec::new();
                        message_field(inner, value, &mut bytes, depth)?;
                        len_field(field.number, &bytes, out);
                    }
                    continue;
                }
                match object.get(field.json) {
                    None | Some(Value::Null) => {}
                    Some(v) => self::field(field, v, out, depth)
                        .map_err(|e| Unencodable(format!("{}: {}", field.json, e.0)))?,
                }
            }
            Ok(())
        }
        Special::Time | Special::MicroTime => {
            let Some(text) = value.as_str() else {
                return refuse("a time that is not a string");
            };
            let Ok(at) = text.parse::<jiff::Timestamp>() else {
                return refuse(format!("{text:?} is not an RFC 3339 time"));
            };
            let (seconds, nanos) = (at.as_second(), at.subsec_nanosecond());
            key(1, VARINT, out);
            varint(seconds as u64, out);
            if nanos != 0 {
                key(2, VARINT, out);
                varint(i64::from(nanos) as u64, out);
            }
            Ok(())
        }
        Special::Items(ty) => {
            let Some(items) = value.as_array() else {
                return refuse("a list that is not an array");
            };
            for item in items {
                one(1, ty, item, out, depth)?;
            }
            Ok(())
        }
        other => refuse(format!("{other:?} values")),
    }
}

/// The bytes of nested message `index` from `value`.
fn message_field(
    index: u16,
    value: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), Unencodable> {
    message(index, value, out, depth + 1)
}

/// Appends one field's occurrences.
fn field(field: &Field, value: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), Unencodable> {
    match field.shape {
        Shape::Single => one(field.number, field.ty, value, out, depth),
        Shape::Repeated => {
            let Some(items) = value.as_array() else {
                return refuse("a repeated field that is not an array");
            };
            for item in items {
                one(field.number, field.ty, item, out, depth)?;
            }
            Ok(())
        }
        Shape::Map(Ty::String) => {
            let Some(entries) = value.as_object() else {
                return refuse("a map that is not an object");
            };
            for (k, v) in entries {
                let mut entry = Vec::new();
                len_field(1, k.as_bytes(), &mut entry);
                if !v.is_null() {
                    one(2, field.ty, v, &mut entry, depth)?;
                }
                len_field(field.number, &entry, out);
            }
            Ok(())
        }
        Shape::Map(key) => refuse(format!("maps keyed by {key:?}")),
    }
}

/// Appends one value of type `ty` as field `number`.
fn one(
    number: u32,
    ty: Ty,
    value: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), Unencodable> {
    let int = || {
        value
            .as_i64()
            .or_else(|| value.as_u64().map(|u| u as i64))
            .ok_or_else(|| Unencodable(format!("{value} is not an integer")))
    };
    match ty {
        Ty::Message(index) => {
            let mut bytes = Vec::new();
            message_field(index, value, &mut bytes, depth)?;
            len_field(number, &bytes, out);
        }
        Ty::String => match value.as_str() {
            Some(s) => len_field(number, s.as_bytes(), out),
            None => return refuse(format!("{value} is not a string")),
        },
        Ty::Bytes => {
            let decoded = value
                .as_str()
                .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok());
            match decoded {
                Some(bytes) => len_field(number, &bytes, out),
                None => return refuse(format!("{value} is not base64")),
            }
        }
        Ty::Bool => match value.as_bool() {
            Some(b) => {
                key(number, VARINT, out);
                varint(u64::from(b), out);
            }
            None => return refuse(format!("{value} is not a boolean")),
        },
        // Negative int32 and int64 are sign-extended to ten bytes.
        Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64 => {
            let v = int()?;
            key(number, VARINT, out);
            varint(v as u64, out);
        }
        Ty::Double => match value.as_f64() {
            Some(f) => {
                key(number, FIXED64, out);
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            None => return refuse(format!("{value} is not a number")),
        },
        Ty::Float => match value.as_f64() {
            Some(f) => {
                key(number, FIXED32, out);
                out.extend_from_slice(&(f as f32).to_bits().to_le_bytes());
            }
            None => return refuse(format!("{value} is not a number")),
        },
    }
    Ok(())
}
