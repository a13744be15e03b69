//! A [`MergeSchema`] read from an OpenAPI v3 (structural) schema, such as a
//! CustomResourceDefinition version's `schema.openAPIV3Schema`: list types
//! from `x-kubernetes-list-type`/`x-kubernetes-list-map-keys`, atomic
//! objects from `x-kubernetes-map-type: atomic`, open maps from
//! `additionalProperties` (and `x-kubernetes-preserve-unknown-fields`
//! without properties), list-map key defaults from `default`, as
//! kube-openapi's `schemaconv` turns them into structured-merge-diff types.
//! Lists without a list type are atomic. `metadata` follows ObjectMeta.

use serde_json::Value;

use super::builtin::object_meta_schema;
use super::schema::{ListType, MergeSchema};

/// The merge schema of one OpenAPI v3 schema.
#[derive(Clone, Debug)]
pub struct OpenApiMergeSchema {
    root: Value,
}

impl OpenApiMergeSchema {
    /// Wraps an `openAPIV3Schema` document (the schema of the whole object).
    pub fn new(open_api_v3_schema: Value) -> Self {
        Self {
            root: open_api_v3_schema,
        }
    }

    /// The schema node at `path`; list items are skipped, as in paths.
    fn node(&self, path: &[&str]) -> Option<&Value> {
        let mut node = &self.root;
        for name in path {
            node = items_of(node);
            node = node
                .get("properties")
                .and_then(|p| p.get(*name))
                .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()))?;
        }
        Some(node)
    }
}

/// The item schema of an array schema (of nested arrays, the innermost).
fn items_of(mut node: &Value) -> &Value {
    while let Some(items) = node.get("items").filter(|i| i.is_object()) {
        node = items;
    }
    node
}

fn is_metadata(path: &[&str]) -> bool {
    path.first() == Some(&"metadata")
}

impl MergeSchema for OpenApiMergeSchema {
    fn list_type(&self, path: &[&str]) -> ListType {
        if is_metadata(path) {
            return object_meta_schema().list_type(path);
        }
        let Some(node) = self.node(path) else {
            return ListType::Atomic;
        };
        match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => ListType::Set,
            Some("map") => {
                let keys: Vec<String> = node
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|keys| {
                        keys.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                if keys.is_empty() {
                    ListType::Atomic
                } else {
                    ListType::Map(keys)
                }
            }
            _ => ListType::Atomic,
        }
    }

    fn map_is_atomic(&self, path: &[&str]) -> bool {
        if is_metadata(path) {
            return object_meta_schema().map_is_atomic(path);
        }
        self.node(path)
            .map(items_of)
            .and_then(|n| n.get("x-kubernetes-map-type"))
            .and_then(Value::as_str)
            == Some("atomic")
    }

    fn is_open_map(&self, path: &[&str]) -> bool {
        if is_metadata(path) {
            return object_meta_schema().is_open_map(path);
        }
        let Some(node) = self.node(path).map(items_of) else {
            return false;
        };
        let has_properties = node
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        let additional = node
            .get("additionalProperties")
            .is_some_and(|a| a.is_object() || a.as_bool() == Some(true));
        let preserve = node
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true);
        !has_properties && (additional || preserve)
    }

    fn list_key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        if is_metadata(path) {
            return object_meta_schema().list_key_default(path, key);
        }
        let node = items_of(self.node(path)?);
        node.get("properties")?.get(key)?.get("default").cloned()
    }
}
