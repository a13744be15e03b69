//! CRD manifests (and other manifest objects) as YAML: one document per CRD, keys in a stable order
//! (`apiVersion`, `kind`, `metadata`, `spec`, then alphabetical, as
//! controller-gen writes them), descriptions optionally shortened like
//! kubebuilder's `crd:maxDescLen` for CRDs too large for client-side apply.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::CrdError;

/// How manifests are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct YamlOptions {
    /// Maximum length of schema descriptions, in characters. `Some(0)` drops
    /// them all; a longer description is cut to this length, at its last
    /// full stop when it has one (as controller-gen does). `None` keeps them.
    pub max_description_len: Option<usize>,
}

/// One CRD as a YAML document (no leading `---`).
pub fn to_yaml(crd: &CustomResourceDefinition, options: &YamlOptions) -> Result<String, CrdError> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let mut value = serde_json::to_value(crd).map_err(|e| CrdError::Yaml {
        name: name.clone(),
        message: e.to_string(),
    })?;
    if let Some(max) = options.max_description_len {
        if let Some(versions) = value
            .pointer_mut("/spec/versions")
            .and_then(Value::as_array_mut)
        {
            for version in versions {
                if let Some(schema) = version.pointer_mut("/schema/openAPIV3Schema") {
                    shorten_descriptions(schema, max);
                }
            }
        }
    }
    serde_saphyr::to_string(&Ordered {
        value: &value,
        top: true,
    })
    .map_err(|e| CrdError::Yaml {
        name,
        message: e.to_string(),
    })
}

/// Several CRDs as one multi-document YAML stream, each document starting with `---`.
pub fn to_yaml_documents(
    crds: &[CustomResourceDefinition],
    options: &YamlOptions,
) -> Result<String, CrdError> {
    let mut out = String::new();
    for crd in crds {
        out.push_str("---\n");
        out.push_str(&to_yaml(crd, options)?);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// Any manifest object (a Role, a binding, a sample) as one YAML document
/// (no leading `---`), its keys ordered as [`to_yaml`] orders a CRD's:
/// `apiVersion`, `kind`, `metadata`, `spec`, then alphabetically.
pub fn object_to_yaml(object: &impl Serialize) -> Result<String, CrdError> {
    let value = serde_json::to_value(object).map_err(|e| CrdError::Yaml {
        name: String::new(),
        message: e.to_string(),
    })?;
    let name = value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    serde_saphyr::to_string(&Ordered {
        value: &value,
        top: true,
    })
    .map_err(|e| CrdError::Yaml {
        name,
        message: e.to_string(),
    })
}

/// Shorten every `description` in a schema (and drop them for `max == 0`).
pub fn shorten_descriptions(schema: &mut Value, max: usize) {
    let Value::Object(obj) = schema else {
        return;
    };
    if max == 0 {
        obj.remove("description");
    } else if let Some(Value::String(desc)) = obj.get_mut("description") {
        if desc.chars().count() > max {
            let cut: String = desc.chars().take(max).collect();
            *desc = match cut.rfind('.') {
                Some(end) => cut[..=end].to_string(),
                None => cut,
            };
        }
    }
    // Walk schemas only: `properties` maps names (which may be "description") to schemas.
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        props
            .values_mut()
            .for_each(|p| shorten_descriptions(p, max));
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = obj.get_mut(key) {
            shorten_descriptions(child, max);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = obj.get_mut(key) {
            branches
                .iter_mut()
                .for_each(|b| shorten_descriptions(b, max));
        }
    }
}

/// Serializes a JSON value with object keys in the manifest order.
struct Ordered<'a> {
    value: &'a Value,
    top: bool,
}

fn key_rank(key: &str) -> usize {
    match key {
        "apiVersion" => 0,
        "kind" => 1,
        "metadata" => 2,
        "spec" => 3,
        _ => 4,
    }
}

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Value::Object(obj) => {
                let mut keys: Vec<&String> = obj.keys().collect();
                if self.top {
                    keys.sort_by(|a, b| key_rank(a).cmp(&key_rank(b)).then(a.cmp(b)));
                } else {
                    keys.sort();
                }
                let mut map = serializer.serialize_map(Some(keys.len()))?;
                for key in keys {
                    if let Some(v) = obj.get(key) {
                        map.serialize_entry(
                            key,
                            &Ordered {
                                value: v,
                                top: false,
                            },
                        )?;
                    }
                }
                map.end()
            }
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Ordered {
                        value: item,
                        top: false,
                    })?;
                }
                seq.end()
            }
            // JSONSchemaProps holds bounds as f64; write whole numbers as
            // integers, as controller-gen does (`maximum: 10`, not `10.0`).
            Value::Number(n) => match n.as_f64() {
                Some(f) if !n.is_i64() && !n.is_u64() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
                    serializer.serialize_i64(f as i64)
                }
                _ => n.serialize(serializer),
            },
            other => other.serialize(serializer),
        }
    }
}

/// Read one CRD from YAML (a manifest this module wrote, or any other).
pub fn from_yaml(yaml: &str) -> Result<CustomResourceDefinition, CrdError> {
    serde_saphyr::from_str(yaml).map_err(|e| CrdError::Yaml {
        name: String::new(),
        message: e.to_string(),
    })
}
