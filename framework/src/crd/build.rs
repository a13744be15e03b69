//! Turns a [`CrdDescriptor`] into a `CustomResourceDefinition`: the object
//! schema around the spec and status, names, subresources, printer columns.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::{JsonSchema, Schema};
use serde_json::{json, Map, Value};

use super::{schema, CrdDescriptor, CrdError, SchemaSource};

/// The schema of a whole object of the kind: `apiVersion`, `kind`,
/// `metadata`, `spec` and (when the kind has one) `status`. Generated code
/// calls this from the root type's `JsonSchema` impl.
pub fn object_schema(desc: &CrdDescriptor, spec: Schema, status: Option<Schema>) -> Schema {
    let mut properties = Map::new();
    properties.insert(
        "apiVersion".into(),
        json!({
            "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.",
            "type": "string",
        }),
    );
    properties.insert(
        "kind".into(),
        json!({
            "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. In CamelCase.",
            "type": "string",
        }),
    );
    properties.insert("metadata".into(), json!({"type": "object"}));
    properties.insert("spec".into(), spec.to_value());
    if let Some(status) = status {
        properties.insert("status".into(), status.to_value());
    }
    let mut root = json!({
        "description": format!("{} is the Schema for the {} API.", desc.kind, desc.plural),
        "properties": properties,
        "required": ["spec"],
        "type": "object",
    });
    if !desc.root_validations.is_empty() {
        let rules: Vec<Value> = desc.root_validations.iter().map(|r| r.to_json()).collect();
        root["x-kubernetes-validations"] = Value::Array(rules);
    }
    Schema::try_from(root).unwrap_or_default()
}

/// The schemars root schema of `K` with the settings CRDs need: OpenAPI 3,
/// every subschema inlined, no `$schema`.
pub fn root_schema_for<K: JsonSchema>() -> Schema {
    schemars::generate::SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<K>()
}

/// Build the single-version CRD a descriptor describes.
pub fn build_crd(desc: &CrdDescriptor) -> Result<apiext::CustomResourceDefinition, CrdError> {
    let open_api_v3_schema = match desc.schema {
        SchemaSource::Derived(generate) => schema::structural(desc, generate())?,
        SchemaSource::Manual(manual) => {
            let props = manual();
            schema::check_props(desc, &props)?;
            props
        }
        SchemaSource::Disabled => apiext::JSONSchemaProps {
            type_: Some("object".into()),
            x_kubernetes_preserve_unknown_fields: Some(true),
            ..Default::default()
        },
    };

    let subresources = desc.has_status.then(|| apiext::CustomResourceSubresources {
        status: Some(apiext::CustomResourceSubresourceStatus(json!({}))),
        scale: desc.scale.map(|s| apiext::CustomResourceSubresourceScale {
            spec_replicas_path: s.spec_replicas_path.into(),
            status_replicas_path: s.status_replicas_path.into(),
            label_selector_path: s.label_selector_path.map(Into::into),
        }),
    });

    let printer_columns: Vec<_> = desc
        .printer_columns
        .iter()
        .map(|c| apiext::CustomResourceColumnDefinition {
            name: c.name.into(),
            type_: c.type_.into(),
            json_path: c.json_path.into(),
            description: c.description.map(Into::into),
            format: c.format.map(Into::into),
            priority: c.priority,
        })
        .collect();
    let selectable: Vec<_> = desc
        .selectable_fields
        .iter()
        .map(|p| apiext::SelectableField {
            json_path: (*p).into(),
        })
        .collect();

    let version = apiext::CustomResourceDefinitionVersion {
        name: desc.version.into(),
        served: desc.served,
        storage: desc.storage.unwrap_or(true),
        deprecated: desc.deprecated.then_some(true),
        deprecation_warning: desc.deprecation_warning.map(Into::into),
        additional_printer_columns: non_empty(printer_columns),
        selectable_fields: non_empty(selectable),
        schema: Some(apiext::CustomResourceValidation {
            open_api_v3_schema: Some(open_api_v3_schema),
        }),
        subresources,
    };

    Ok(apiext::CustomResourceDefinition {
        metadata: ObjectMeta {
            name: Some(desc.crd_name()),
            labels: string_map(desc.labels),
            annotations: string_map(desc.annotations),
            ..Default::default()
        },
        spec: apiext::CustomResourceDefinitionSpec {
            group: desc.group.into(),
            names: apiext::CustomResourceDefinitionNames {
                kind: desc.kind.into(),
                list_kind: Some(format!("{}List", desc.kind)),
                plural: desc.plural.into(),
                singular: Some(desc.singular.into()),
                short_names: non_empty(desc.short_names.iter().map(|s| s.to_string()).collect()),
                categories: non_empty(desc.categories.iter().map(|s| s.to_string()).collect()),
            },
            scope: desc.scope.as_str().into(),
            versions: vec![version],
            conversion: None,
            preserve_unknown_fields: None,
        },
        status: None,
    })
}

fn non_empty<T>(items: Vec<T>) -> Option<Vec<T>> {
    (!items.is_empty()).then_some(items)
}

fn string_map(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    (!pairs.is_empty()).then(|| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    })
}
