//! The CEL type of `self` at a rule, as kube-apiserver declares it
//! (`SchemaDeclType`, k8s.io/apiserver/pkg/cel/common/schemas.go): object
//! fields under their escaped names, maps for `additionalProperties`,
//! lists for `items`, the formats that become timestamps, durations and
//! bytes, and `x-kubernetes-int-or-string` as `dyn`; with, for the cost
//! estimate, the most elements each list, map and string can hold in one
//! request (`MaxElements`) and the smallest JSON each value serializes to
//! (`MinSerializedSize`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

/// The request size every CEL size estimate is derived from:
/// `celconfig.MaxRequestSizeBytes` (k8s.io/apiserver/pkg/apis/cel/config.go),
/// kube-apiserver's 3 MiB request body limit.
pub(super) const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

// Smallest JSON encodings (k8s.io/apiserver/pkg/cel/limits.go).
const MIN_STRING_SIZE: u64 = 2;
const MIN_BOOL_SIZE: u64 = 4;
const MIN_NUMBER_SIZE: u64 = 1;
const MIN_DURATION_SIZE: u64 = 3;
const MIN_DATETIME_SIZE: u64 = 21;
const JSON_DATE_SIZE: u64 = 12;
const MAX_DURATION_SIZE: u64 = 32;
const MAX_DATETIME_SIZE: u64 = 32;

/// What a declared value is.
#[derive(Debug)]
pub(super) enum Kind {
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    /// `x-kubernetes-int-or-string`: checked at run time only.
    Dyn,
    List(Arc<Decl>),
    /// String keys (`additionalProperties`).
    Map(Arc<Decl>),
    /// Declared properties by their CEL (escaped) names.
    Object(BTreeMap<String, Field>),
}

/// A declared property.
#[derive(Debug)]
pub(super) struct Field {
    /// The property name in the data (`foo-bar` for `foo__dash__bar`).
    pub json_name: String,
    pub decl: Arc<Decl>,
}

/// A declared type with its size bounds.
#[derive(Debug)]
pub(super) struct Decl {
    pub kind: Kind,
    /// Most elements (list items, map entries, string or bytes length) the
    /// value can have in one request.
    pub max_elements: u64,
    /// The smallest JSON the value serializes to.
    pub min_size: u64,
}

impl Decl {
    /// Whether values of this type have elements that vary per object
    /// (lists, maps, strings, bytes, int-or-string).
    pub(super) fn has_elements(&self) -> bool {
        matches!(
            self.kind,
            Kind::String | Kind::Bytes | Kind::Dyn | Kind::List(_) | Kind::Map(_)
        )
    }
}

fn simple(kind: Kind, min_size: u64, max_elements: u64) -> Arc<Decl> {
    Arc::new(Decl {
        kind,
        max_elements,
        min_size,
    })
}

fn int(s: &Value, key: &str) -> Option<u64> {
    let v = s.get(key)?;
    let n = v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))?;
    Some(n.max(0) as u64)
}

/// The declared type of a schema node; `None` when rules cannot see it
/// (untyped nodes, arrays without items, maps whose values are hidden).
/// `resource_root` adds what every resource has (`apiVersion`, `kind`,
/// `metadata.name`, `metadata.generateName`), as at the root of a custom
/// resource and of embedded resources.
pub(super) fn decl(s: &Value, resource_root: bool) -> Option<Arc<Decl>> {
    let flag = |k: &str| s.get(k).and_then(Value::as_bool) == Some(true);
    if flag("x-kubernetes-int-or-string") {
        // The smallest int-or-string is `0`.
        let max = match int(s, "maxLength") {
            Some(n) => n.saturating_mul(4),
            None => MAX_REQUEST_BYTES - 2,
        };
        return Some(simple(Kind::Dyn, 1, max));
    }
    let typ = s.get("type").and_then(Value::as_str).unwrap_or("");
    match typ {
        "array" => {
            let items = s.get("items").filter(|i| i.is_object())?;
            let elem = decl(items, embedded(items))?;
            let max = int(s, "maxItems").unwrap_or((MAX_REQUEST_BYTES - 2) / (elem.min_size + 1));
            Some(simple(Kind::List(elem), 2, max))
        }
        "object" => {
            if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
                let elem = decl(ap, embedded(ap))?;
                // A key, its quotes, a colon and a comma around each value.
                let max = int(s, "maxProperties")
                    .unwrap_or((MAX_REQUEST_BYTES - 2) / (elem.min_size + 6));
                return Some(simple(Kind::Map(elem), 2, max));
            }
            let mut fields = BTreeMap::new();
            let required: Vec<&str> = s
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut min_size = 2u64;
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    let Some(field) = decl(prop, embedded(prop)) else {
                        continue;
                    };
                    // Required fields without a default are always sent.
                    if required.contains(&name.as_str()) && prop.get("default").is_none() {
                        min_size = min_size.saturating_add(name.len() as u64 + field.min_size + 4);
                    }
                    if let Some(escaped) = escape(name) {
                        fields.insert(
                            escaped,
                            Field {
                                json_name: name.clone(),
                                decl: field,
                            },
                        );
                    }
                }
            }
            if resource_root {
                add_type_and_object_meta(&mut fields);
            }
            Some(simple(Kind::Object(fields), min_size, 0))
        }
        "string" => {
            let format = s.get("format").and_then(Value::as_str).unwrap_or("");
            let max_len = int(s, "maxLength");
            Some(match format {
                "byte" => simple(
                    Kind::Bytes,
                    MIN_STRING_SIZE,
                    max_len.unwrap_or(MAX_REQUEST_BYTES - 2),
                ),
                "duration" => simple(Kind::Duration, MIN_DURATION_SIZE, MAX_DURATION_SIZE),
                "date" => simple(Kind::Timestamp, JSON_DATE_SIZE, JSON_DATE_SIZE),
                "date-time" => simple(Kind::Timestamp, MIN_DATETIME_SIZE, MAX_DATETIME_SIZE),
                _ => {
                    let enum_max = s.get("enum").and_then(Value::as_array).map(|e| {
                        e.iter()
                            .filter_map(Value::as_str)
                            .map(|v| v.len() as u64)
                            .max()
                            .unwrap_or(0)
                    });
                    // maxLength counts code points, of up to 4 bytes each.
                    let max = match (max_len, enum_max) {
                        (Some(n), _) => n.saturating_mul(4),
                        (None, Some(e)) => e,
                        (None, None) => MAX_REQUEST_BYTES - 2,
                    };
                    simple(Kind::String, MIN_STRING_SIZE, max)
                }
            })
        }
        "boolean" => Some(simple(Kind::Bool, MIN_BOOL_SIZE, 0)),
        "number" => Some(simple(Kind::Double, MIN_NUMBER_SIZE, 0)),
        "integer" => Some(simple(Kind::Int, MIN_NUMBER_SIZE, 0)),
        _ => None,
    }
}

fn embedded(s: &Value) -> bool {
    s.get("x-kubernetes-embedded-resource")
        .and_then(Value::as_bool)
        == Some(true)
}

/// `WithTypeAndObjectMeta`: `apiVersion` and `kind` strings, and a
/// `metadata` exposing only `name` and `generateName`.
fn add_type_and_object_meta(fields: &mut BTreeMap<String, Field>) {
    let string = |name: &str| Field {
        json_name: name.into(),
        decl: simple(Kind::String, MIN_STRING_SIZE, MAX_REQUEST_BYTES - 2),
    };
    fields.insert("apiVersion".into(), string("apiVersion"));
    fields.insert("kind".into(), string("kind"));
    let meta = BTreeMap::from([
        ("name".into(), string("name")),
        ("generateName".into(), string("generateName")),
    ]);
    fields.insert(
        "metadata".into(),
        Field {
            json_name: "metadata".into(),
            decl: simple(Kind::Object(meta), 2, 0),
        },
    );
}

/// CEL's reserved words, which property names are escaped around
/// (`__if__`) and admission policy variables may not be named.
pub(crate) const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property name as rules spell it (k8s.io/apiserver/pkg/cel/escaping.go
/// `Escape`): reserved words become `__word__`, and `__`, `.`, `-`, `/`
/// become `__underscores__`, `__dot__`, `__dash__`, `__slash__`; names
/// starting with a digit or holding other characters are not exposed.
pub(super) fn escape(name: &str) -> Option<String> {
    if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c == '_' || c.is_ascii_alphanumeric() => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}
