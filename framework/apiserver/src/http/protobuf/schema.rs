//! The shape of the generated schema table (`table.rs`): messages, their
//! fields, and for each field how Go's `encoding/json` writes it.
//!
//! The JSON rules come from the Go struct behind each message: a pointer
//! field is sent only when set and then always written, a plain value is
//! always sent by gogo-protobuf and dropped from JSON by `omitempty` when it
//! is the zero value, a struct value is always written, and an embedded
//! struct with an empty JSON name is flattened into its parent.

/// The element type of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ty {
    /// `string` (wire type 2), UTF-8; invalid bytes become U+FFFD as in Go.
    String,
    /// `bytes` (wire type 2), base64 in JSON.
    Bytes,
    /// `bool` (varint).
    Bool,
    /// `int32` (varint, sign-extended to 64 bits on the wire).
    Int32,
    /// `int64` (varint).
    Int64,
    /// `uint32` (varint).
    Uint32,
    /// `uint64` (varint).
    Uint64,
    /// `double` (fixed 64-bit).
    Double,
    /// `float` (fixed 32-bit).
    Float,
    /// A nested message: index into `table::MESSAGES`.
    Message(u16),
}

/// How many values a field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// One value; the last occurrence wins (messages merge).
    Single,
    /// `repeated`; numeric elements may be packed.
    Repeated,
    /// `map<key, value>`: repeated entry messages `{key = 1, value = 2}`.
    Map(Ty),
}

/// When the field appears in the JSON object (Go `encoding/json` rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Emit {
    /// A Go pointer: written when present on the wire, zero values included.
    Pointer,
    /// A Go value with `omitempty`: written unless it is the zero value.
    OmitEmpty,
    /// A Go value without `omitempty`, or any struct value: always written,
    /// as its zero value when absent.
    Always,
    /// An embedded struct with an empty JSON name: its fields are written
    /// into the parent object.
    Inline,
    /// `json:"-"`: on the wire, never in JSON.
    Never,
}

/// Messages whose JSON form is not an object of their fields (Go types with
/// their own `MarshalJSON`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Special {
    /// An ordinary message.
    None,
    /// `meta/v1.Time`: seconds only, RFC 3339, `null` when zero.
    Time,
    /// `meta/v1.MicroTime`: RFC 3339 with microseconds, `null` when zero.
    MicroTime,
    /// `meta/v1.Duration`: Go's `time.Duration.String()`.
    Duration,
    /// `meta/v1.FieldsV1`: raw JSON bytes.
    FieldsV1,
    /// `resource.Quantity`: its string form.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `runtime.RawExtension`: raw JSON bytes.
    RawExtension,
    /// apiextensions `JSON`: raw JSON bytes.
    Json,
    /// apiextensions `JSONSchemaPropsOrArray`; the index is `JSONSchemaProps`.
    SchemaOrArray(u16),
    /// apiextensions `JSONSchemaPropsOrBool`.
    SchemaOrBool(u16),
    /// apiextensions `JSONSchemaPropsOrStringArray`.
    SchemaOrStringArray(u16),
    /// A named Go slice sent as `message { repeated T items = 1; }`
    /// (`metav1.Verbs`, `authentication/v1.ExtraValue`): a JSON array.
    Items(Ty),
}

/// One protobuf message and the Go struct behind it.
#[derive(Debug)]
pub(super) struct Message {
    /// The Go type, `package/path.Name`, for diagnostics.
    pub name: &'static str,
    /// How the message turns into JSON when it is not an object.
    pub special: Special,
    /// Fields in Go declaration order (the order Go writes JSON in).
    pub fields: &'static [Field],
}

/// One field of a message.
#[derive(Debug)]
pub(super) struct Field {
    /// The protobuf field number.
    pub number: u32,
    /// The JSON property name (empty for inline fields).
    pub json: &'static str,
    /// The element type.
    pub ty: Ty,
    /// Single, repeated or map.
    pub shape: Shape,
    /// When it is written.
    pub emit: Emit,
}

/// A kind a request body may carry.
#[derive(Debug)]
pub(super) struct Root {
    /// `apiVersion` as in the envelope, e.g. `apps/v1`.
    pub api_version: &'static str,
    /// `kind` as in the envelope, e.g. `Deployment`.
    pub kind: &'static str,
    /// Index into `table::MESSAGES`.
    pub message: u16,
}

// Short names the generated table is written with.
pub(super) const STR: Ty = Ty::String;
pub(super) const BYTES: Ty = Ty::Bytes;
pub(super) const BOOL: Ty = Ty::Bool;
pub(super) const I32: Ty = Ty::Int32;
pub(super) const I64: Ty = Ty::Int64;
#[allow(dead_code)]
pub(super) const U32: Ty = Ty::Uint32;
#[allow(dead_code)]
pub(super) const U64: Ty = Ty::Uint64;
pub(super) const F64: Ty = Ty::Double;
#[allow(dead_code)]
pub(super) const F32: Ty = Ty::Float;
pub(super) const ONE: Shape = Shape::Single;
pub(super) const REP: Shape = Shape::Repeated;
pub(super) const PTR: Emit = Emit::Pointer;
pub(super) const OMIT: Emit = Emit::OmitEmpty;
pub(super) const ALWAYS: Emit = Emit::Always;
pub(super) const INLINE: Emit = Emit::Inline;
#[allow(dead_code)]
pub(super) const NEVER: Emit = Emit::Never;

/// A nested message type.
pub(super) const fn msg(index: u16) -> Ty {
    Ty::Message(index)
}

/// A map with keys of type `key`.
pub(super) const fn map(key: Ty) -> Shape {
    Shape::Map(key)
}

/// A field.
pub(super) const fn f(number: u32, json: &'static str, ty: Ty, shape: Shape, emit: Emit) -> Field {
    Field {
        number,
        json,
        ty,
        shape,
        emit,
    }
}
