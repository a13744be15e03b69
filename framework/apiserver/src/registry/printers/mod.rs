//! What the built-in kinds' Table printers share: [`Printer`], a kind's
//! columns as data and its row function, the default printer (Name,
//! Created At), and the cell helpers each kind's row is made of. Each
//! kind's own columns and cells live in its `registry/<group>/<kind>.rs`,
//! as kube-apiserver's `pkg/printers/internalversion` defines them.

mod columns;

use serde_json::{json, Value};

pub(crate) use columns::{col, name_col};

use crate::machinery::util::Pointer;
use crate::machinery::util::{age_secs, human_duration};
use columns::age_col;

/// One column of a built-in printer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Col {
    /// `NAME`, with the object meta description.
    Name,
    /// `AGE`.
    Age,
    /// The default printer's `Created At` (a date).
    CreatedAt,
    /// A string column and its priority (1: `-o wide` only).
    Str(&'static str, i64),
    /// An integer column and its priority.
    Int(&'static str, i64),
}

/// A built-in kind's Table printer: its columns and its row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Printer {
    pub columns: &'static [Col],
    pub cells: fn(&Value) -> Vec<Value>,
}

impl Printer {
    /// The default printer: name and creation time.
    pub const DEFAULT: Self = Self {
        columns: &[Col::Name, Col::CreatedAt],
        cells: default_row,
    };
}

/// The `TableColumnDefinition`s of a built-in printer.
pub(crate) fn columns(printer: Printer) -> Vec<Value> {
    printer
        .columns
        .iter()
        .map(|c| match *c {
            Col::Name => name_col(),
            Col::Age => age_col(),
            Col::CreatedAt => col("Created At", "date", "", "", 0),
            Col::Str(name, priority) => col(name, "string", "", "", priority),
            Col::Int(name, priority) => col(name, "integer", "", "", priority),
        })
        .collect()
}

/// The cells of a built-in printer's row.
pub(crate) fn cells(printer: Printer, o: &Value) -> Vec<Value> {
    (printer.cells)(o)
}

pub(crate) fn str_at<'a>(o: &'a Value, ptr: &str) -> &'a str {
    o.at(ptr).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn int_at(o: &Value, ptr: &str) -> i64 {
    o.at(ptr).and_then(Value::as_i64).unwrap_or(0)
}

pub(crate) fn len_at(o: &Value, ptr: &str) -> i64 {
    match o.at(ptr) {
        Some(Value::Object(m)) => m.len() as i64,
        Some(Value::Array(a)) => a.len() as i64,
        _ => 0,
    }
}

pub(crate) fn none_if_empty(s: String) -> String {
    if s.is_empty() {
        "<none>".into()
    } else {
        s
    }
}

pub(crate) fn or_none(s: &str) -> Value {
    json!(if s.is_empty() { "<none>" } else { s })
}

pub(crate) fn age(o: &Value) -> Value {
    json!(human_duration(age_secs(
        o.at("/metadata/creationTimestamp")
    )))
}

pub(crate) fn parse(ts: &str) -> Option<jiff::Timestamp> {
    ts.parse().ok()
}

pub(crate) fn condition_true(o: &Value, ty: &str) -> bool {
    o.at("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| str_at(c, "/type") == ty && str_at(c, "/status") == "True")
        })
}

pub(crate) fn containers(o: &Value, ptr: &str, field: &str) -> String {
    o.at(ptr)
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| str_at(c, &format!("/{field}")).to_owned())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

pub(crate) fn selector(o: &Value, ptr: &str) -> String {
    let labels = o
        .at(&format!("{ptr}/matchLabels"))
        .or_else(|| o.at(ptr).filter(|v| v.get("matchExpressions").is_none()))
        .and_then(Value::as_object);
    none_if_empty(
        labels
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
    )
}

pub(crate) fn name(o: &Value) -> Value {
    json!(str_at(o, "/metadata/name"))
}

/// The cells of the default printer: name and creation time.
fn default_row(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        o.at("/metadata/creationTimestamp")
            .cloned()
            .unwrap_or(Value::Null),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_built_from_the_printers_data() {
        const P: Printer = Printer {
            columns: &[
                Col::Name,
                Col::Int("Data", 0),
                Col::Str("Selector", 1),
                Col::Age,
            ],
            cells: default_row,
        };
        let cols = columns(P);
        let names: Vec<_> = cols.iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["Name", "Data", "Selector", "Age"]);
        assert_eq!(cols[1]["type"], "integer");
        assert_eq!(cols[2]["priority"], 1);
        assert_eq!(cols[0]["format"], "name");
        let default: Vec<_> = columns(Printer::DEFAULT)
            .iter()
            .map(|c| c["type"].clone())
            .collect();
        assert_eq!(default, [json!("string"), json!("date")]);
    }
}
