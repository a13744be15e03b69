//! Field-level validation errors, worded exactly like
//! `k8s.io/apimachinery/pkg/util/validation/field`: the cause type strings a
//! `StatusCause` carries, the `ErrorBody` text (`Invalid value: 11: ...`) and
//! the aggregate (`[a, b]`) kube-apiserver puts in an `Invalid` `Status`.

use std::fmt;

use serde_json::Value;

use crate::machinery::util::go_quote;

/// The machine-readable reason of a [`FieldError`]; `as_str()` is the
/// `StatusCause.type` kube-apiserver sends (apimachinery `field.ErrorType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
// The whole of apimachinery's field.ErrorType, though not every
// variant has a producer here yet.
#[allow(dead_code)]
pub enum CauseType {
    /// `FieldValueNotFound`.
    NotFound,
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueDuplicate`.
    Duplicate,
    /// `FieldValueInvalid`.
    Invalid,
    /// `FieldValueNotSupported`.
    NotSupported,
    /// `FieldValueForbidden`.
    Forbidden,
    /// `FieldValueTooLong`.
    TooLong,
    /// `FieldValueTooMany`.
    TooMany,
    /// `FieldValueTooShort`.
    TooShort,
    /// `InternalError`.
    Internal,
    /// `FieldValueTypeInvalid`.
    TypeInvalid,
}

impl CauseType {
    /// The cause type string (`FieldValueInvalid`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            CauseType::NotFound => "FieldValueNotFound",
            CauseType::Required => "FieldValueRequired",
            CauseType::Duplicate => "FieldValueDuplicate",
            CauseType::Invalid => "FieldValueInvalid",
            CauseType::NotSupported => "FieldValueNotSupported",
            CauseType::Forbidden => "FieldValueForbidden",
            CauseType::TooLong => "FieldValueTooLong",
            CauseType::TooMany => "FieldValueTooMany",
            CauseType::TooShort => "FieldValueTooShort",
            CauseType::Internal => "InternalError",
            CauseType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human label that starts an error body (`ErrorType.String()`).
    pub fn label(&self) -> &'static str {
        match self {
            CauseType::NotFound => "Not found",
            CauseType::Required => "Required value",
            CauseType::Duplicate => "Duplicate value",
            CauseType::Invalid | CauseType::TypeInvalid => "Invalid value",
            CauseType::NotSupported => "Unsupported value",
            CauseType::Forbidden => "Forbidden",
            CauseType::TooLong => "Too long",
            CauseType::TooMany => "Too many",
            CauseType::TooShort => "Too short",
            CauseType::Internal => "Internal error",
        }
    }
}

impl fmt::Display for CauseType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One validation failure: what a `StatusCause` carries.
///
/// `field` is the Kubernetes field path (`spec.versions[0].name`,
/// `properties[spec]`), `message` the error body without the field
/// (`Invalid value: 11: spec.size in body should be less than or equal to
/// 10`), which is `StatusCause.message`. `to_string()` gives
/// `field: message`, the form `Status.message` aggregates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The field path.
    pub field: String,
    /// The cause type.
    pub cause: CauseType,
    /// The error body (label, value and detail), without the field.
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for FieldError {}

/// A bad value as apimachinery prints it in an error body.
#[derive(Clone, Debug)]
pub(crate) enum BadValue<'a> {
    /// A JSON value: strings are quoted, numbers and booleans bare,
    /// anything else JSON-encoded (Go's `%v`/`%q`/`json.Marshal` rules).
    Json(&'a Value),
    /// A string (quoted).
    Str(&'a str),
    /// An integer.
    Int(i64),
    /// No value shown.
    Omit,
}

impl FieldError {
    fn with_value(field: &str, cause: CauseType, value: BadValue<'_>, detail: &str) -> Self {
        let mut message = cause.label().to_string();
        match value {
            BadValue::Omit => {}
            BadValue::Str(s) => {
                message.push_str(": ");
                message.push_str(&go_quote(s));
            }
            BadValue::Int(i) => {
                message.push_str(": ");
                message.push_str(&i.to_string());
            }
            BadValue::Json(v) => {
                message.push_str(": ");
                message.push_str(&format_bad_value(v));
            }
        }
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(detail);
        }
        FieldError {
            field: field.to_string(),
            cause,
            message,
        }
    }

    /// `field.Required(path, detail)`.
    pub fn required(field: &str, detail: &str) -> Self {
        Self::with_value(field, CauseType::Required, BadValue::Omit, detail)
    }

    /// `field.Forbidden(path, detail)`.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self::with_value(field, CauseType::Forbidden, BadValue::Omit, detail)
    }

    /// `field.Invalid(path, value, detail)`.
    pub fn invalid(field: &str, value: &Value, detail: &str) -> Self {
        Self::with_value(field, CauseType::Invalid, BadValue::Json(value), detail)
    }

    /// `field.Invalid` with a string value.
    pub fn invalid_str(field: &str, value: &str, detail: &str) -> Self {
        Self::with_value(field, CauseType::Invalid, BadValue::Str(value), detail)
    }

    /// `field.TypeInvalid(path, value, detail)`.
    pub fn type_invalid(field: &str, value: &Value, detail: &str) -> Self {
        Self::with_value(field, CauseType::TypeInvalid, BadValue::Json(value), detail)
    }

    /// `field.InternalError(path, err)`.
    pub fn internal(field: &str, detail: &str) -> Self {
        Self::with_value(field, CauseType::Internal, BadValue::Omit, detail)
    }

    /// `field.Duplicate(path, value)`.
    pub fn duplicate(field: &str, value: &Value) -> Self {
        Self::with_value(field, CauseType::Duplicate, BadValue::Json(value), "")
    }

    /// `field.NotSupported(path, value, supported)`: the detail lists the
    /// supported values, each Go-quoted.
    pub fn not_supported<S: AsRef<str>>(field: &str, value: &Value, supported: &[S]) -> Self {
        Self::with_value(
            field,
            CauseType::NotSupported,
            BadValue::Json(value),
            &supported_values(supported),
        )
    }

    /// `field.NotSupported` with a string value.
    pub fn not_supported_str<S: AsRef<str>>(field: &str, value: &str, supported: &[S]) -> Self {
        Self::with_value(
            field,
            CauseType::NotSupported,
            BadValue::Str(value),
            &supported_values(supported),
        )
    }

    /// `field.TooLong(path, value, max)`: `may not be more than N bytes`, or
    /// `value is too long` for a negative max.
    pub fn too_long(field: &str, max: i64) -> Self {
        let detail = if max >= 0 {
            format!(
                "may not be more than {max} {}",
                if max == 1 { "byte" } else { "bytes" }
            )
        } else {
            "value is too long".to_string()
        };
        Self::with_value(field, CauseType::TooLong, BadValue::Omit, &detail)
    }

    /// `field.TooMany(path, actual, max)`.
    pub fn too_many(field: &str, actual: i64, max: i64) -> Self {
        let detail = if max >= 0 {
            format!(
                "must have at most {max} {}",
                if max == 1 { "item" } else { "items" }
            )
        } else {
            "has too many items".to_string()
        };
        let value = if actual >= 0 {
            BadValue::Int(actual)
        } else {
            BadValue::Omit
        };
        Self::with_value(field, CauseType::TooMany, value, &detail)
    }
}

fn supported_values<S: AsRef<str>>(supported: &[S]) -> String {
    if supported.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = supported.iter().map(|s| go_quote(s.as_ref())).collect();
    format!("supported values: {}", quoted.join(", "))
}

/// The aggregate of a list of errors as `ErrorList.ToAggregate().Error()`
/// prints it: duplicates (by text) dropped, one error bare, several as
/// `[a, b]`. This is what follows `is invalid: ` in an `Invalid` `Status`.
#[cfg(test)]
pub fn aggregate(errors: &[FieldError]) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut msgs = Vec::new();
    for e in errors {
        let s = e.to_string();
        if seen.insert(s.clone()) {
            msgs.push(s);
        }
    }
    match msgs.len() {
        0 => String::new(),
        1 => msgs.remove(0),
        _ => format!("[{}]", msgs.join(", ")),
    }
}

/// A value as `field.Error.ErrorBody` renders `BadValue` (JSON numbers decode
/// to int64 or float64 in Kubernetes, so they print bare; strings quoted;
/// objects and arrays JSON-encoded).
pub(crate) fn format_bad_value(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format_number(n),
        Value::Null => "null".to_string(),
        Value::Array(_) | Value::Object(_) => go_json(v),
    }
}

/// A JSON number as Go's `%v` prints the int64/float64 it decodes to.
pub(crate) fn format_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        go_float(n.as_f64().unwrap_or(0.0))
    }
}

/// Go's `%v` for a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`): the
/// shortest round-trip digits, with an exponent when it is < -4 or >= 6
/// (Go uses precision 6 for that decision when printing the shortest form).
pub(crate) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // `{:e}` gives the shortest round-trip digits as d.ddde<exp>.
    let e = format!("{f:e}");
    let (mant, exp) = match e.split_once('e') {
        Some((m, x)) => (m.to_string(), x.parse::<i32>().unwrap_or(0)),
        None => return f.to_string(),
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    f.to_string()
}

/// `json.Marshal` of a decoded JSON value: sorted keys, HTML-safe escaping.
pub(crate) fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(v, &mut out);
    out
}

fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else {
                out.push_str(&go_json_float(n.as_f64().unwrap_or(0.0)));
            }
        }
        Value::String(s) => write_go_json_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json_string(k, out);
                out.push(':');
                if let Some(x) = m.get(k) {
                    write_go_json(x, out);
                }
            }
            out.push('}');
        }
    }
}

/// encoding/json float formatting: like %v but the exponent switch is at
/// 1e21 and 1e-6.
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let e = format!("{f:e}");
        if let Some((m, x)) = e.split_once('e') {
            let exp = x.parse::<i32>().unwrap_or(0);
            let sign = if exp < 0 { '-' } else { '+' };
            return format!("{m}e{sign}{:02}", exp.abs());
        }
    }
    f.to_string()
}

fn write_go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Kubernetes field path building (`field.Path`): `child` appends
/// `.name`, `key` appends `[key]`, `index` appends `[i]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Path(String);

impl Path {
    /// A path starting at `name`.
    pub(crate) fn new(name: &str) -> Self {
        Path(name.to_string())
    }

    /// The empty path (the object root, as kube-openapi names it).
    pub(crate) fn root() -> Self {
        Path(String::new())
    }

    /// `fldPath.Child(name)`.
    pub(crate) fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Path(name.to_string())
        } else {
            Path(format!("{}.{}", self.0, name))
        }
    }

    /// `fldPath.Key(key)`.
    pub(crate) fn key(&self, key: &str) -> Self {
        Path(format!("{}[{}]", self.0, key))
    }

    /// `fldPath.Index(i)`.
    pub(crate) fn index(&self, i: usize) -> Self {
        Path(format!("{}[{}]", self.0, i))
    }

    /// The path text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn error_bodies_match_apimachinery_field_errors() {
        let cases: Vec<(FieldError, &str, &str)> = vec![
            (
                FieldError::required("spec.foo", ""),
                "FieldValueRequired",
                "spec.foo: Required value",
            ),
            (
                FieldError::invalid("spec.size", &json!(11), "spec.size in body should be less than or equal to 10"),
                "FieldValueInvalid",
                "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
            ),
            (
                FieldError::not_supported("spec.x", &json!("x"), &["a", "b"]),
                "FieldValueNotSupported",
                "spec.x: Unsupported value: \"x\": supported values: \"a\", \"b\"",
            ),
            (
                FieldError::too_long("spec.name", 5),
                "FieldValueTooLong",
                "spec.name: Too long: may not be more than 5 bytes",
            ),
            (
                FieldError::too_long("spec.name", 1),
                "FieldValueTooLong",
                "spec.name: Too long: may not be more than 1 byte",
            ),
            (
                FieldError::too_many("spec.items", 4, 3),
                "FieldValueTooMany",
                "spec.items: Too many: 4: must have at most 3 items",
            ),
            (
                FieldError::duplicate("spec.ports[1]", &json!({"port": 80})),
                "FieldValueDuplicate",
                "spec.ports[1]: Duplicate value: {\"port\":80}",
            ),
            (
                FieldError::forbidden("spec.a", "must not be set"),
                "FieldValueForbidden",
                "spec.a: Forbidden: must not be set",
            ),
            (
                FieldError::type_invalid("spec.r", &json!("string"), "spec.r in body must be of type integer: \"string\""),
                "FieldValueTypeInvalid",
                "spec.r: Invalid value: \"string\": spec.r in body must be of type integer: \"string\"",
            ),
            (
                FieldError::invalid("spec.f", &json!(0.5), "x"),
                "FieldValueInvalid",
                "spec.f: Invalid value: 0.5: x",
            ),
        ];
        for (err, cause, text) in cases {
            assert_eq!(err.cause.as_str(), cause);
            assert_eq!(err.to_string(), text);
        }
    }

    #[test]
    fn aggregate_dedups_and_brackets() {
        let a = FieldError::required("spec.a", "");
        let b = FieldError::required("spec.b", "");
        assert_eq!(
            aggregate(std::slice::from_ref(&a)),
            "spec.a: Required value"
        );
        assert_eq!(
            aggregate(&[a.clone(), b, a]),
            "[spec.a: Required value, spec.b: Required value]"
        );
        assert_eq!(aggregate(&[]), "");
    }

    #[test]
    fn go_value_formatting() {
        assert_eq!(go_quote("a\"b\n"), "\"a\\\"b\\n\"");
        assert_eq!(go_float(0.5), "0.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1e-5), "1e-05");
        assert_eq!(go_float(12.25), "12.25");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(123456.5), "123456.5");
        assert_eq!(
            go_json(&json!({"b": 1, "a": "<x>"})),
            "{\"a\":\"\\u003cx\\u003e\",\"b\":1}"
        );
    }

    #[test]
    fn paths_use_kubernetes_syntax() {
        let p = Path::new("spec").child("versions").index(0).child("schema");
        assert_eq!(p.as_str(), "spec.versions[0].schema");
        assert_eq!(
            Path::new("x").child("properties").key("spec").as_str(),
            "x.properties[spec]"
        );
        assert_eq!(Path::root().child("spec").as_str(), "spec");
    }
}
