//! The parsed form of an `openAPIV3Schema`: one [`Node`] per schema object,
//! holding exactly what pruning, defaulting and validation read (the
//! structural part, the value validations and the `x-kubernetes-*`
//! extensions), with `pattern`s compiled once.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::{Map, Value};

/// `additionalProperties`: a boolean or a schema.
#[derive(Debug, Clone)]
pub(crate) enum AdditionalProperties {
    /// `additionalProperties: true|false`.
    Bool(bool),
    /// `additionalProperties: {...}`.
    Schema(Box<Node>),
}

/// A compiled `pattern`.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    /// The pattern as written (error messages quote it).
    pub(crate) source: String,
    /// The compiled regex, `None` if it does not compile (CRD validation
    /// rejects such schemas; a node parsed anyway never matches-fails).
    pub(crate) regex: Option<Regex>,
}

/// One schema node.
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    pub(crate) typ: String,
    pub(crate) format: String,
    pub(crate) nullable: bool,
    pub(crate) default: Option<Value>,
    pub(crate) properties: BTreeMap<String, Node>,
    pub(crate) additional_properties: Option<AdditionalProperties>,
    pub(crate) items: Option<Box<Node>>,

    pub(crate) maximum: Option<f64>,
    pub(crate) exclusive_maximum: bool,
    pub(crate) minimum: Option<f64>,
    pub(crate) exclusive_minimum: bool,
    pub(crate) max_length: Option<i64>,
    pub(crate) min_length: Option<i64>,
    pub(crate) pattern: Option<Pattern>,
    pub(crate) max_items: Option<i64>,
    pub(crate) min_items: Option<i64>,
    pub(crate) unique_items: bool,
    pub(crate) multiple_of: Option<f64>,
    pub(crate) enum_values: Option<Vec<Value>>,
    pub(crate) max_properties: Option<i64>,
    pub(crate) min_properties: Option<i64>,
    pub(crate) required: Vec<String>,
    pub(crate) all_of: Vec<Node>,
    pub(crate) any_of: Vec<Node>,
    pub(crate) one_of: Vec<Node>,
    pub(crate) not: Option<Box<Node>>,

    pub(crate) preserve_unknown_fields: bool,
    pub(crate) embedded_resource: bool,
    pub(crate) int_or_string: bool,
    pub(crate) list_type: Option<String>,
    pub(crate) list_map_keys: Vec<String>,
    // Read by the schema introspection the tests use.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) map_type: Option<String>,
}

fn as_i64(v: Option<&Value>) -> Option<i64> {
    let v = v?;
    v.as_i64()
        .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
}

impl Node {
    /// Parses a schema object. Unknown keys and wrongly typed keywords are
    /// ignored here; CRD validation reports them.
    pub(crate) fn parse(v: &Value) -> Node {
        let empty = Map::new();
        let m = v.as_object().unwrap_or(&empty);
        let s = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
        let b = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
        let f = |k: &str| m.get(k).and_then(Value::as_f64);
        let list = |k: &str| -> Vec<Node> {
            m.get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Node::parse).collect())
                .unwrap_or_default()
        };
        let properties = m
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .map(|(k, v)| (k.clone(), Node::parse(v)))
                    .collect::<BTreeMap<_, _>>()
            })
            .unwrap_or_default();
        let additional_properties = match m.get("additionalProperties") {
            Some(Value::Bool(b)) => Some(AdditionalProperties::Bool(*b)),
            Some(o @ Value::Object(_)) => {
                Some(AdditionalProperties::Schema(Box::new(Node::parse(o))))
            }
            _ => None,
        };
        let items = match m.get("items") {
            Some(o @ Value::Object(_)) => Some(Box::new(Node::parse(o))),
            _ => None,
        };
        let pattern = s("pattern").map(|source| Pattern {
            regex: Regex::new(&source).ok(),
            source,
        });
        let strings = |k: &str| -> Vec<String> {
            m.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        Node {
            typ: s("type").unwrap_or_default(),
            format: s("format").unwrap_or_default(),
            nullable: b("nullable"),
            // A `default: null` is dropped on conversion, as `JSON` with
            // literal null is (apiextensions v1 conversion.go).
            default: m.get("default").filter(|d| !d.is_null()).cloned(),
            properties,
            additional_properties,
            items,
            maximum: f("maximum"),
            exclusive_maximum: b("exclusiveMaximum"),
            minimum: f("minimum"),
            exclusive_minimum: b("exclusiveMinimum"),
            max_length: as_i64(m.get("maxLength")),
            min_length: as_i64(m.get("minLength")),
            pattern,
            max_items: as_i64(m.get("maxItems")),
            min_items: as_i64(m.get("minItems")),
            unique_items: b("uniqueItems"),
            multiple_of: f("multipleOf"),
            enum_values: m.get("enum").and_then(Value::as_array).cloned(),
            max_properties: as_i64(m.get("maxProperties")),
            min_properties: as_i64(m.get("minProperties")),
            required: strings("required"),
            all_of: list("allOf"),
            any_of: list("anyOf"),
            one_of: list("oneOf"),
            not: m
                .get("not")
                .filter(|n| n.is_object())
                .map(|n| Box::new(Node::parse(n))),
            preserve_unknown_fields: b("x-kubernetes-preserve-unknown-fields"),
            embedded_resource: b("x-kubernetes-embedded-resource"),
            int_or_string: b("x-kubernetes-int-or-string"),
            list_type: s("x-kubernetes-list-type"),
            list_map_keys: strings("x-kubernetes-list-map-keys"),
            map_type: s("x-kubernetes-map-type"),
        }
    }

    /// The schema applying to the values of a map (`additionalProperties`
    /// with a schema).
    pub(crate) fn additional_schema(&self) -> Option<&Node> {
        match &self.additional_properties {
            Some(AdditionalProperties::Schema(s)) => Some(s),
            _ => None,
        }
    }
}
