//! `as=Table` output (`meta.k8s.io/v1` Table): column definitions and cells
//! for the common built-ins (the columns kubectl users know from
//! kube-apiserver's printers), the default Name / Created At table, and CRD
//! `additionalPrinterColumns` evaluated with a small JSONPath subset.

mod jsonpath;

use serde_json::{json, Map, Value};

use crate::machinery::util::Pointer;
use crate::machinery::util::{age_secs, human_duration};
use crate::registry::{Printer, ResourceDef};

use crate::registry::printers::{self, col, name_col};
pub(crate) use jsonpath::json_path;

/// What a row's `object` holds (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(v: Option<&str>) -> Result<Self, String> {
        match v {
            None | Some("") | Some("Metadata") => Ok(Self::Metadata),
            Some("None") => Ok(Self::None),
            Some("Object") => Ok(Self::Object),
            Some(other) => Err(format!(
                "includeObject: Unsupported value: \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
            )),
        }
    }
}

/// Column definitions for `def` at `version`.
pub(crate) fn columns(def: &ResourceDef, version: &str) -> Vec<Value> {
    if let Some(custom) = def.custom() {
        let mut cols = vec![name_col()];
        match custom.columns.get(version) {
            Some(extra) if !extra.is_empty() => {
                for c in extra {
                    cols.push(col(
                        &c.name,
                        &c.type_,
                        &c.format,
                        &c.description,
                        c.priority,
                    ));
                }
            }
            _ => cols.push(col("Age", "date", "", "", 0)),
        }
        return cols;
    }
    printers::columns(def.builtin().map_or(Printer::DEFAULT, |b| b.printer))
}

pub(crate) fn cells(def: &ResourceDef, version: &str, o: &Value) -> Vec<Value> {
    if let Some(custom) = def.custom() {
        let mut cells = vec![json!(o
            .at("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or(""))];
        match custom.columns.get(version) {
            Some(extra) if !extra.is_empty() => {
                for c in extra {
                    cells.push(column_cell(o, &c.json_path, &c.type_));
                }
            }
            _ => cells.push(date_cell(o.at("/metadata/creationTimestamp"))),
        }
        return cells;
    }
    printers::cells(def.builtin().map_or(Printer::DEFAULT, |b| b.printer), o)
}

/// Evaluates a printer-column JSONPath and types the result.
fn column_cell(o: &Value, path: &str, ty: &str) -> Value {
    let found = json_path(o, path);
    let v = match found.as_slice() {
        [] => return Value::Null,
        [one] => (*one).clone(),
        many => Value::String(
            many.iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(","),
        ),
    };
    match (ty, &v) {
        ("date", Value::String(_)) => date_cell(Some(&v)),
        ("integer", Value::Number(_))
        | ("number", Value::Number(_))
        | ("boolean", Value::Bool(_)) => v,
        ("string", Value::String(_)) => v,
        ("string", other) => Value::String(other.to_string()),
        _ => v,
    }
}

/// A date column as the CRD table convertor renders it: the age of a
/// timestamp (`5m`), the text itself when it is not one.
fn date_cell(v: Option<&Value>) -> Value {
    match v.and_then(Value::as_str) {
        Some(s) if s.parse::<jiff::Timestamp>().is_ok() => json!(human_duration(age_secs(v))),
        Some(s) => json!(s),
        None => Value::Null,
    }
}

/// `PartialObjectMetadata` for an object.
pub(crate) fn partial_metadata(o: &Value, version: &str) -> Value {
    let mut m = Map::new();
    m.insert("kind".into(), json!("PartialObjectMetadata"));
    m.insert("apiVersion".into(), json!(format!("meta.k8s.io/{version}")));
    m.insert(
        "metadata".into(),
        o.get("metadata").cloned().unwrap_or_else(|| json!({})),
    );
    Value::Object(m)
}

/// One row.
pub(crate) fn row(
    def: &ResourceDef,
    version: &str,
    table_version: &str,
    o: &Value,
    include: IncludeObject,
) -> Value {
    let mut r = json!({"cells": cells(def, version, o)});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => r["object"] = partial_metadata(o, table_version),
        IncludeObject::Object => r["object"] = o.clone(),
    }
    r
}

/// A Table of `rows`.
pub(crate) fn table(
    table_version: &str,
    columns: Option<Vec<Value>>,
    rows: Vec<Value>,
    rv: &str,
    cont: Option<&str>,
) -> Value {
    let mut meta = json!({"resourceVersion": rv});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{table_version}"),
        "metadata": meta,
        "columnDefinitions": columns.map_or(Value::Null, Value::Array),
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_path_subset() {
        let o = json!({"spec": {"size": 3, "items": [{"n": "a"}, {"n": "b"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Other", "status": "False"}]}});
        assert_eq!(json_path(&o, ".spec.size"), vec![&json!(3)]);
        assert_eq!(
            json_path(&o, ".status.conditions[?(@.type==\"Ready\")].status"),
            vec![&json!("True")]
        );
        assert_eq!(json_path(&o, ".spec.items[*].n").len(), 2);
        assert_eq!(json_path(&o, ".spec.items[1].n"), vec![&json!("b")]);
        assert!(json_path(&o, ".spec.missing").is_empty());
        assert_eq!(column_cell(&o, ".spec.items[*].n", "string"), json!("a,b"));
    }
}
