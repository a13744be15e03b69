//! Why a protobuf body was rejected. Every variant is the client's fault
//! and reads well as the message of a 400 `Status` (the envelope errors use
//! kube-apiserver's own wording, from apimachinery's
//! `runtime/serializer/protobuf/protobuf.go`).

use std::fmt;

/// The envelope magic, `k8s\0`, as kube-apiserver prints it.
const MAGIC_TEXT: &str = "[107 56 115 0]";

/// A protobuf request body that cannot be decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProtobufError {
    /// The body has no bytes at all.
    #[error("empty data")]
    NoData,
    /// The body holds only the magic prefix.
    #[error("empty body")]
    Empty,
    /// The body does not start with `k8s\0`.
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix {MAGIC_TEXT}"
    )]
    MissingMagic,
    /// The envelope names no kind.
    #[error("Object 'Kind' is missing in protobuf envelope (apiVersion {api_version:?})")]
    MissingKind {
        /// The envelope's apiVersion.
        api_version: String,
    },
    /// The envelope names no apiVersion.
    #[error("Object 'apiVersion' is missing in protobuf envelope (kind {kind:?})")]
    MissingApiVersion {
        /// The envelope's kind.
        kind: String,
    },
    /// The kind has no protobuf schema here (custom resources never do:
    /// kube-apiserver serves them as JSON only).
    #[error("no protobuf decoding for kind {kind:?} in {api_version:?}; send the object as application/json")]
    UnsupportedKind {
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
    /// The bytes break the wire format or a field's type.
    #[error("malformed protobuf body at {path}: {reason}")]
    Malformed {
        /// Where in the object, e.g. `spec.template.spec.containers[0].ports`.
        path: Path,
        /// What is wrong there.
        reason: Malformed,
    },
}

/// What is wrong with the bytes of a message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Malformed {
    /// The body ends inside a varint.
    #[error("truncated varint")]
    TruncatedVarint,
    /// A varint runs past 64 bits.
    #[error("varint overflows 64 bits")]
    VarintTooLong,
    /// The body ends inside a fixed-width value.
    #[error("truncated fixed-width value")]
    TruncatedFixed,
    /// A length prefix points past the end of its message.
    #[error("length {length} exceeds the {remaining} bytes left")]
    LengthOutOfBounds {
        /// The declared length.
        length: u64,
        /// Bytes left in the enclosing message.
        remaining: usize,
    },
    /// A field key with number 0 or above 2^29-1.
    #[error("invalid field number {0}")]
    FieldNumber(u64),
    /// Wire types 3, 4 (groups), 6 and 7.
    #[error("unsupported wire type {0}")]
    WireType(u8),
    /// A known field with the wrong wire type for its declared type.
    #[error("field {field} has wire type {found}, expected {expected}")]
    WrongWireType {
        /// The field number.
        field: u32,
        /// The wire type in the body.
        found: u8,
        /// The wire type the schema requires.
        expected: u8,
    },
    /// Messages nested deeper than the limit.
    #[error("messages nested deeper than {0} levels")]
    TooDeep(usize),
    /// An `IntOrString` whose type is neither 0 (int) nor 1 (string).
    #[error("invalid IntOrString type {0}")]
    IntOrStringType(i64),
    /// A `RawExtension`, `FieldsV1` or apiextensions `JSON` field whose
    /// bytes are not JSON.
    #[error("embedded JSON is invalid: {0}")]
    EmbeddedJson(String),
    /// A NaN or infinite floating-point value, which JSON cannot carry.
    #[error("{0} is not a JSON number")]
    NonFinite(f64),
}

/// Where in the decoded object an error happened, as a JSON-path-like
/// string (`spec.containers[0].image`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Path(Vec<Segment>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Field(&'static str),
    Number(u32),
    Index(usize),
    Key(String),
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("<root>");
        }
        // Segments are pushed innermost first, while the error unwinds.
        for (i, segment) in self.0.iter().rev().enumerate() {
            match segment {
                Segment::Field(name) if i == 0 => f.write_str(name)?,
                Segment::Field(name) => write!(f, ".{name}")?,
                Segment::Number(n) if i == 0 => write!(f, "#{n}")?,
                Segment::Number(n) => write!(f, ".#{n}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
                Segment::Key(key) => write!(f, "[{key:?}]")?,
            }
        }
        Ok(())
    }
}

/// A decoding failure on its way up: the reason, and the path collected so
/// far (innermost segment first).
#[derive(Debug)]
pub(super) struct Failure {
    reason: Malformed,
    path: Path,
}

impl Failure {
    /// Adds the field the failure happened in; an empty name (an inline
    /// field) adds the field number.
    pub(super) fn in_field(mut self, json: &'static str, number: u32) -> Self {
        if json.is_empty() {
            self.path.0.push(Segment::Number(number));
        } else {
            self.path.0.push(Segment::Field(json));
        }
        self
    }

    /// Adds the array index the failure happened at.
    pub(super) fn at_index(mut self, index: usize) -> Self {
        self.path.0.push(Segment::Index(index));
        self
    }

    /// Adds the map key the failure happened under.
    pub(super) fn at_key(mut self, key: &str) -> Self {
        self.path.0.push(Segment::Key(key.to_owned()));
        self
    }
}

impl From<Malformed> for Failure {
    fn from(reason: Malformed) -> Self {
        Failure {
            reason,
            path: Path::default(),
        }
    }
}

impl From<Failure> for ProtobufError {
    fn from(failure: Failure) -> Self {
        ProtobufError::Malformed {
            path: failure.path,
            reason: failure.reason,
        }
    }
}
