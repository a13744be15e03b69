//! Table-driven decoding of one message into the JSON value kube-apiserver's
//! Go struct would marshal to: field names from the JSON tags, `omitempty`
//! and pointer rules from the Go types, and the special JSON forms of the
//! apimachinery types (`Time`, `Quantity`, `IntOrString`, raw JSON, ...).
//!
//! Decoding walks the body once, borrowing from it; the only copies are the
//! JSON strings themselves. A singular message field that occurs more than
//! once is decoded from its occurrences joined together, which is protobuf's
//! merge rule.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Value};

use super::error::{Failure, Malformed};
use super::golang;
use super::schema::{Emit, Field, Message, Shape, Special, Ty};
use super::table::MESSAGES;
use super::wire::{self, Fields, WireValue};

/// How deep messages may nest before the body is rejected.
pub(super) const MAX_DEPTH: usize = 64;

/// Decoding state shared across one body.
pub(super) struct Decoder {
    /// Unknown fields skipped so far, for the caller to log or report.
    pub(super) warnings: Vec<String>,
}

/// What a field has collected while its message is read; empty means the
/// field was absent (protobuf cannot tell an empty repeated field or map
/// from a missing one, and Go decodes both to nil).
enum Slot<'a> {
    Scalar(Option<Value>),
    /// Occurrences of a singular message field (of the given message
    /// type), merged on output.
    Spans(u16, Vec<&'a [u8]>),
    Items(Vec<Value>),
    Entries(BTreeMap<String, Value>),
}

impl Slot<'_> {
    fn for_field(field: &Field) -> Self {
        match (field.shape, field.ty) {
            (Shape::Single, Ty::Message(index)) => Slot::Spans(index, Vec::new()),
            (Shape::Single, _) => Slot::Scalar(None),
            (Shape::Repeated, _) => Slot::Items(Vec::new()),
            (Shape::Map(_), _) => Slot::Entries(BTreeMap::new()),
        }
    }
}

impl Decoder {
    /// Decodes `bytes` as message `index` at nesting `depth` (1 = the object).
    pub(super) fn message(
        &mut self,
        index: u16,
        bytes: &[u8],
        depth: usize,
    ) -> Result<Value, Failure> {
        if depth > MAX_DEPTH {
            return Err(Malformed::TooDeep(MAX_DEPTH).into());
        }
        let message = message_at(index);
        match message.special {
            Special::None => self.object(message, bytes, depth),
            special => self.special(message, special, bytes, depth),
        }
    }

    fn object(
        &mut self,
        message: &'static Message,
        bytes: &[u8],
        depth: usize,
    ) -> Result<Value, Failure> {
        let fields = message.fields;
        let mut slots: Vec<Slot<'_>> = fields.iter().map(Slot::for_field).collect();
        for item in Fields::new(bytes) {
            let (number, value) = item?;
            let Some((field, slot)) = fields
                .iter()
                .zip(slots.iter_mut())
                .find(|(f, _)| f.number == number)
            else {
                self.unknown(message, number, &value);
                continue;
            };
            self.collect(field, slot, value, depth)
                .map_err(|e| e.in_field(field.json, field.number))?;
        }

        let mut out = Map::new();
        for (field, slot) in fields.iter().zip(slots) {
            let value = self
                .output(field, slot, depth)
                .map_err(|e| e.in_field(field.json, field.number))?;
            let Some(value) = value else { continue };
            match field.emit {
                Emit::Never => {}
                Emit::Inline => {
                    if let Value::Object(inner) = value {
                        out.extend(inner);
                    }
                }
                Emit::OmitEmpty if is_empty(&value) => {}
                Emit::Pointer | Emit::OmitEmpty | Emit::Always => {
                    out.insert(field.json.to_owned(), value);
                }
            }
        }
        Ok(Value::Object(out))
    }

    /// The JSON of one field from what it collected; `None` when Go writes
    /// nothing for it.
    fn output(
        &mut self,
        field: &'static Field,
        slot: Slot<'_>,
        depth: usize,
    ) -> Result<Option<Value>, Failure> {
        let always = matches!(field.emit, Emit::Always | Emit::Inline);
        Ok(match slot {
            Slot::Scalar(Some(value)) => Some(value),
            // A Go value that is always written: its zero value.
            Slot::Scalar(None) => always.then(|| zero_scalar(field.ty)),
            Slot::Spans(index, spans) => {
                if spans.is_empty() && !always {
                    None
                } else {
                    Some(self.message(index, &join(&spans), depth + 1)?)
                }
            }
            // Go writes a nil slice or map as null.
            Slot::Items(items) if items.is_empty() => always.then_some(Value::Null),
            Slot::Items(items) => Some(Value::Array(items)),
            Slot::Entries(entries) if entries.is_empty() => always.then_some(Value::Null),
            Slot::Entries(entries) => Some(Value::Object(entries.into_iter().collect())),
        })
    }

    /// Adds one occurrence of `field` to its slot.
    fn collect<'a>(
        &mut self,
        field: &'static Field,
        slot: &mut Slot<'a>,
        value: WireValue<'a>,
        depth: usize,
    ) -> Result<(), Failure> {
        match slot {
            Slot::Spans(_, spans) => spans.push(expect_len(field.number, value)?),
            Slot::Scalar(current) => *current = Some(scalar(field.number, field.ty, value)?),
            Slot::Items(items) => match (field.ty, value) {
                (Ty::Message(index), value) => {
                    let bytes = expect_len(field.number, value)?;
                    let at = items.len();
                    let item = self
                        .message(index, bytes, depth + 1)
                        .map_err(|e| e.at_index(at))?;
                    items.push(item);
                }
                (Ty::String | Ty::Bytes, value) => {
                    items.push(scalar(field.number, field.ty, value)?)
                }
                // Packed numeric elements, which proto2 parsers accept
                // whatever the field was declared with.
                (ty, WireValue::Len(bytes)) => packed(field.number, ty, bytes, items)?,
                (ty, value) => items.push(scalar(field.number, ty, value)?),
            },
            Slot::Entries(entries) => {
                let Shape::Map(key_ty) = field.shape else {
                    return Ok(());
                };
                let entry = expect_len(field.number, value)?;
                let (key, value) = self.entry(field, key_ty, entry, depth)?;
                entries.insert(key, value);
            }
        }
        Ok(())
    }

    /// Decodes one map entry `{key = 1, value = 2}`; missing parts take
    /// their zero values, as in Go.
    fn entry(
        &mut self,
        field: &'static Field,
        key_ty: Ty,
        bytes: &[u8],
        depth: usize,
    ) -> Result<(String, Value), Failure> {
        let mut key = None;
        let mut value_bytes: Option<WireValue<'_>> = None;
        let mut spans: Vec<&[u8]> = Vec::new();
        for item in Fields::new(bytes) {
            match item? {
                (1, v) => key = Some(scalar(1, key_ty, v)?),
                (2, v) => {
                    if let Ty::Message(_) = field.ty {
                        spans.push(expect_len(2, v)?);
                    }
                    value_bytes = Some(v);
                }
                (number, _) => self.warn(format!(
                    "map entry of {}: unknown field {number} skipped",
                    field.json
                )),
            }
        }
        let key = match key {
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let value = match (field.ty, value_bytes) {
            (Ty::Message(index), _) => {
                let joined = join(&spans);
                self.message(index, &joined, depth + 1)
            }
            (ty, Some(v)) => scalar(2, ty, v).map_err(Failure::from),
            (ty, None) => Ok(zero_scalar(ty)),
        }
        .map_err(|e| e.at_key(&key))?;
        Ok((key, value))
    }

    fn special(
        &mut self,
        message: &'static Message,
        special: Special,
        bytes: &[u8],
        depth: usize,
    ) -> Result<Value, Failure> {
        match special {
            Special::None => self.object(message, bytes, depth),
            Special::Time | Special::MicroTime => {
                let (mut seconds, mut nanos, mut empty) = (0i64, 0i64, true);
                for item in Fields::new(bytes) {
                    empty = false;
                    match item? {
                        (1, v) => seconds = expect_varint(1, v)? as i64,
                        // Truncated to int32 as Go's Timestamp.Nanos is.
                        (2, v) => nanos = i64::from(expect_varint(2, v)? as i32),
                        (number, v) => self.unknown(message, number, &v),
                    }
                }
                // Both decode as Go's time.Unix(seconds, nanos) (apimachinery
                // meta/v1 time_proto.go, micro_time_proto.go) and write null
                // for Go's zero time, which an empty message decodes to;
                // Time's RFC 3339 form then drops the fraction.
                let (seconds, nanos) = golang::normalize(seconds, nanos);
                if empty || (seconds == golang::GO_ZERO_TIME_UNIX && nanos == 0) {
                    return Ok(Value::Null);
                }
                Ok(Value::String(if special == Special::Time {
                    golang::rfc3339_seconds(seconds)
                } else {
                    golang::rfc3339_micros(seconds, nanos)
                }))
            }
            Special::Duration => {
                let mut nanos = 0i64;
                for item in Fields::new(bytes) {
                    match item? {
                        (1, v) => nanos = expect_varint(1, v)? as i64,
                        (number, v) => self.unknown(message, number, &v),
                    }
                }
                Ok(Value::String(golang::duration(nanos)))
            }
            Special::Quantity => {
                let mut text = String::new();
                for item in Fields::new(bytes) {
                    match item? {
                        (1, v) => text = string(expect_len(1, v)?),
                        (number, v) => self.unknown(message, number, &v),
                    }
                }
                // The zero Quantity marshals as "0".
                Ok(Value::String(if text.is_empty() {
                    "0".to_owned()
                } else {
                    text
                }))
            }
            Special::IntOrString => {
                let (mut kind, mut int, mut text) = (0i64, 0i32, String::new());
                for item in Fields::new(bytes) {
                    match item? {
                        (1, v) => kind = expect_varint(1, v)? as i64,
                        (2, v) => int = expect_varint(2, v)? as i32,
                        (3, v) => text = string(expect_len(3, v)?),
                        (number, v) => self.unknown(message, number, &v),
                    }
                }
                match kind {
                    0 => Ok(Value::from(int)),
                    1 => Ok(Value::String(text)),
                    other => Err(Malformed::IntOrStringType(other).into()),
                }
            }
            Special::RawExtension | Special::FieldsV1 | Special::Json => {
                let mut raw: Option<&[u8]> = None;
                for item in Fields::new(bytes) {
                    match item? {
                        (1, v) => raw = Some(expect_len(1, v)?),
                        (number, v) => self.unknown(message, number, &v),
                    }
                }
                match raw {
                    // A nil (or, for apiextensions JSON, empty) raw value
                    // marshals as null.
                    None => Ok(Value::Null),
                    Some([]) => Ok(Value::Null),
                    Some(raw) => serde_json::from_slice(raw)
                        .map_err(|e| Malformed::EmbeddedJson(e.to_string()).into()),
                }
            }
            Special::SchemaOrArray(schema) => {
                // MarshalJSON: the array when it has elements, else the
                // schema (null when unset).
                let (mut single, mut many) = (Vec::new(), Vec::new());
                for item in Fields::new(bytes) {
                    match item? {
                        (1, v) => single.push(expect_len(1, v)?),
                        (2, v) => {
                            let at = many.len();
                            let item = self
                                .message(schema, expect_len(2, v)?, depth + 1)
                                .map_err(|e| e.at_index(at).in_field("jSONSchemas", 2))?;
                            many.push(item);
                        }
                        (number, v) => self.unknown(message, number, &v),
                    }
                }
                if !many.is_empty() {
                    return Ok(Value::Array(many));
                }
                self.optional_schema(schema, &single, depth)
            }
            Special::SchemaOrBool(schema) => {
                // MarshalJSON: the schema when set, else the boolean.
                let (mut allows, mut single) = (false, Vec::new());
                for item in Fields::new(bytes) {
                    match item? {
                        (1, v) => allows = expect_varint(1, v)? != 0,
                        (2, v) => single.push(expect_len(2, v)?),
                        (number, v) => self.unknown(message, number, &v),
                    }
                }
                if single.is_empty() {
                    return Ok(Value::Bool(allows));
                }
                self.optional_schema(schema, &single, depth)
            }
            Special::SchemaOrStringArray(schema) => {
                // MarshalJSON: the strings when there are any, else the
                // schema (null when unset).
                let (mut single, mut strings) = (Vec::new(), Vec::new());
                for item in Fields::new(bytes) {
                    match item? {
                        (1, v) => single.push(expect_len(1, v)?),
                        (2, v) => strings.push(Value::String(string(expect_len(2, v)?))),
                        (number, v) => self.unknown(message, number, &v),
                    }
                }
                if !strings.is_empty() {
                    return Ok(Value::Array(strings));
                }
                self.optional_schema(schema, &single, depth)
            }
            Special::Items(ty) => {
                let mut items = Vec::new();
                for item in Fields::new(bytes) {
                    match (item?, ty) {
                        ((1, v), Ty::Message(index)) => {
                            let at = items.len();
                            let value = self
                                .message(index, expect_len(1, v)?, depth + 1)
                                .map_err(|e| e.at_index(at))?;
                            items.push(value);
                        }
                        ((1, WireValue::Len(b)), ty) if !matches!(ty, Ty::String | Ty::Bytes) => {
                            packed(1, ty, b, &mut items)?
                        }
                        ((1, v), ty) => items.push(scalar(1, ty, v)?),
                        ((number, v), _) => self.unknown(message, number, &v),
                    }
                }
                Ok(if items.is_empty() {
                    Value::Null
                } else {
                    Value::Array(items)
                })
            }
        }
    }

    /// The schema of a `JSONSchemaPropsOr*` when present, else null.
    fn optional_schema(
        &mut self,
        schema: u16,
        spans: &[&[u8]],
        depth: usize,
    ) -> Result<Value, Failure> {
        if spans.is_empty() {
            return Ok(Value::Null);
        }
        let joined = join(spans);
        self.message(schema, &joined, depth + 1)
            .map_err(|e| e.in_field("schema", 1))
    }

    fn unknown(&mut self, message: &Message, number: u32, value: &WireValue<'_>) {
        self.warn(format!(
            "{}: unknown field {number} (wire type {}) skipped",
            message.name,
            value.wire_type()
        ));
    }

    pub(super) fn warn(&mut self, warning: String) {
        tracing::debug!(%warning, "protobuf body");
        self.warnings.push(warning);
    }
}

fn message_at(index: u16) -> &'static Message {
    // Indices come from the generated table itself, never from input.
    &MESSAGES[usize::from(index)]
}

/// Joins the occurrences of one message field (protobuf merges them by
/// concatenation); borrows when there is just one.
fn join<'a>(spans: &[&'a [u8]]) -> std::borrow::Cow<'a, [u8]> {
    match spans {
        [] => std::borrow::Cow::Borrowed(&[]),
        [one] => std::borrow::Cow::Borrowed(one),
        many => std::borrow::Cow::Owned(many.concat()),
    }
}

pub(super) fn expect_len(field: u32, value: WireValue<'_>) -> Result<&[u8], Malformed> {
    match value {
        WireValue::Len(bytes) => Ok(bytes),
        other => Err(Malformed::WrongWireType {
            field,
            found: other.wire_type(),
            expected: wire::LEN,
        }),
    }
}

fn expect_varint(field: u32, value: WireValue<'_>) -> Result<u64, Malformed> {
    match value {
        WireValue::Varint(v) => Ok(v),
        other => Err(Malformed::WrongWireType {
            field,
            found: other.wire_type(),
            expected: wire::VARINT,
        }),
    }
}

/// A Go string from protobuf bytes; invalid UTF-8 becomes U+FFFD, as Go's
/// `encoding/json` writes it.
fn string(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One scalar value as JSON.
fn scalar(field: u32, ty: Ty, value: WireValue<'_>) -> Result<Value, Malformed> {
    Ok(match ty {
        Ty::String => Value::String(string(expect_len(field, value)?)),
        Ty::Bytes => Value::String(
            base64::engine::general_purpose::STANDARD.encode(expect_len(field, value)?),
        ),
        Ty::Bool => Value::Bool(expect_varint(field, value)? != 0),
        // Casts truncate exactly as Go's generated unmarshalers do.
        Ty::Int32 => Value::from(expect_varint(field, value)? as i32),
        Ty::Int64 => Value::from(expect_varint(field, value)? as i64),
        Ty::Uint32 => Value::from(expect_varint(field, value)? as u32),
        Ty::Uint64 => Value::from(expect_varint(field, value)?),
        Ty::Double => {
            let bits = match value {
                WireValue::Fixed64(bits) => bits,
                other => {
                    return Err(Malformed::WrongWireType {
                        field,
                        found: other.wire_type(),
                        expected: wire::FIXED64,
                    })
                }
            };
            let v = f64::from_bits(bits);
            golang::float_value(v).ok_or(Malformed::NonFinite(v))?
        }
        Ty::Float => {
            let bits = match value {
                WireValue::Fixed32(bits) => bits,
                other => {
                    return Err(Malformed::WrongWireType {
                        field,
                        found: other.wire_type(),
                        expected: wire::FIXED32,
                    })
                }
            };
            let v = f64::from(f32::from_bits(bits));
            golang::float_value(v).ok_or(Malformed::NonFinite(v))?
        }
        // Callers decode messages themselves; a message is never a scalar.
        Ty::Message(_) => Value::Null,
    })
}

/// Packed repeated numeric elements.
fn packed(field: u32, ty: Ty, mut bytes: &[u8], items: &mut Vec<Value>) -> Result<(), Malformed> {
    while !bytes.is_empty() {
        let value = match ty {
            Ty::Double => {
                let (chunk, rest) = bytes
                    .split_first_chunk::<8>()
                    .ok_or(Malformed::TruncatedFixed)?;
                bytes = rest;
                WireValue::Fixed64(u64::from_le_bytes(*chunk))
            }
            Ty::Float => {
                let (chunk, rest) = bytes
                    .split_first_chunk::<4>()
                    .ok_or(Malformed::TruncatedFixed)?;
                bytes = rest;
                WireValue::Fixed32(u32::from_le_bytes(*chunk))
            }
            _ => {
                let (v, rest) = wire::read_varint(bytes)?;
                bytes = rest;
                WireValue::Varint(v)
            }
        };
        items.push(scalar(field, ty, value)?);
    }
    Ok(())
}

/// Go's zero value of a scalar type, as JSON.
fn zero_scalar(ty: Ty) -> Value {
    match ty {
        Ty::String => Value::String(String::new()),
        // A nil []byte marshals as null.
        Ty::Bytes => Value::Null,
        Ty::Bool => Value::Bool(false),
        Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64 | Ty::Double | Ty::Float => Value::from(0),
        Ty::Message(_) => Value::Null,
    }
}

/// Whether `omitempty` drops the value: Go's false, 0, "", and empty (or
/// nil) slices and maps.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}
