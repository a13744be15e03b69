//! The CRD YAML writer (key order, documents, description limits) and the
//! structural-schema checker on schemas the apiserver would refuse.

use kubeforge::crd::yaml::{shorten_descriptions, to_yaml, to_yaml_documents, YamlOptions};
use kubeforge::crd::{check_schema, combine, CustomResource};
use kubeforge::prelude::*;
use kubeforge::serde_json::{json, Value};

/// A document store.
///
/// Keeps documents. They are stored forever. Nothing is ever deleted.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(group = "docs.example.com", version = "v1", kind = "Store")]
pub struct StoreSpec {
    /// The description of the store: a field called description.
    pub description: String,
}

#[test]
fn manifests_start_with_api_version_kind_metadata_spec() {
    let yaml = to_yaml(&Store::crd(), &YamlOptions::default()).unwrap();
    let top: Vec<&str> = yaml
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.is_empty())
        .collect();
    assert_eq!(
        top,
        [
            "apiVersion: apiextensions.k8s.io/v1",
            "kind: CustomResourceDefinition",
            "metadata:",
            "spec:"
        ]
    );
    assert_eq!(
        to_yaml(&Store::crd(), &YamlOptions::default()).unwrap(),
        yaml,
        "stable"
    );
    let parsed = kubeforge::crd::yaml::from_yaml(&yaml).unwrap();
    assert_eq!(
        parsed.metadata.name.as_deref(),
        Some("stores.docs.example.com")
    );
}

#[test]
fn several_crds_are_several_documents() {
    let crds = vec![Store::crd(), Store::crd()];
    let yaml = to_yaml_documents(&crds, &YamlOptions::default()).unwrap();
    assert_eq!(yaml.matches("---\n").count(), 2);
    assert!(yaml.starts_with("---\napiVersion: apiextensions.k8s.io/v1\n"));
}

fn spec_schema(yaml: &str) -> Value {
    let crd = kubeforge::crd::yaml::from_yaml(yaml).unwrap();
    let schema = crd.spec.versions[0]
        .schema
        .clone()
        .unwrap()
        .open_api_v3_schema
        .unwrap();
    kubeforge::serde_json::to_value(schema).unwrap()["properties"]["spec"].clone()
}

#[test]
fn descriptions_can_be_dropped_or_cut_at_a_full_stop() {
    let none = to_yaml(
        &Store::crd(),
        &YamlOptions {
            max_description_len: Some(0),
        },
    )
    .unwrap();
    assert!(!none.contains("description: "), "{none}");
    // A property named "description" is a field, not a description.
    assert!(spec_schema(&none)["properties"]
        .get("description")
        .is_some());

    let cut = to_yaml(
        &Store::crd(),
        &YamlOptions {
            max_description_len: Some(40),
        },
    )
    .unwrap();
    let spec = spec_schema(&cut);
    assert_eq!(spec["description"], "A document store.\n\nKeeps documents.");
    let full = spec_schema(&to_yaml(&Store::crd(), &YamlOptions::default()).unwrap());
    assert!(full["description"]
        .as_str()
        .unwrap()
        .ends_with("Nothing is ever deleted."));

    let mut no_stop = json!({"description": "abcdefghij"});
    shorten_descriptions(&mut no_stop, 4);
    assert_eq!(no_stop["description"], "abcd");
}

fn errors(schema: Value) -> Vec<String> {
    check_schema(&schema)
        .into_iter()
        .map(|e| e.to_string())
        .collect()
}

fn object(spec: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec}})
}

#[test]
fn the_checker_names_fields_that_break_structural_rules() {
    assert!(errors(object(
        json!({"type": "object", "properties": {"a": {"type": "string"}}})
    ))
    .is_empty());
    let cases = [
        (
            object(json!({"properties": {"a": {"type": "string"}}})),
            ".spec: type is missing",
        ),
        (
            object(
                json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}),
            ),
            ".spec.a: type is missing",
        ),
        (
            object(
                json!({"type": "object", "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}}}),
            ),
            ".spec.a(anyOf[0]): type is not allowed inside anyOf",
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            "<root>: additionalProperties is not allowed at the root",
        ),
        (
            object(
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}),
            ),
            ".spec: properties and additionalProperties are mutually exclusive",
        ),
        (
            object(json!({"type": "array"})),
            ".spec: an array needs items",
        ),
        (
            object(json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true})),
            ".spec: uniqueItems cannot be true",
        ),
        (
            object(
                json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "properties": {"name": {"type": "string"}}}}),
            ),
            ".spec: list-map key \"name\" must be required or have a default",
        ),
        (
            object(
                json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}),
            ),
            ".spec: x-kubernetes-list-type: set needs scalar items",
        ),
        (
            object(json!({"type": "integer", "default": "three"})),
            ".spec: default \"three\" is not of type integer",
        ),
        (
            object(json!({"type": "object", "properties": {"a": {"$ref": "#/definitions/A"}}})),
            ".spec.a: references ($ref) are not allowed",
        ),
        (
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
            ".metadata.labels: only metadata.name and metadata.generateName may be specified",
        ),
        (
            object(json!({"type": "string", "x-kubernetes-int-or-string": true})),
            ".spec: x-kubernetes-int-or-string must not have a type",
        ),
    ];
    for (schema, expected) in cases {
        let found = errors(schema);
        assert!(
            found.iter().any(|e| e.starts_with(expected)),
            "expected {expected:?} in {found:?}"
        );
    }
}

mod two {
    use kubeforge::prelude::*;

    /// Version one.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "docs.example.com", version = "v1", kind = "Note", storage)]
    pub struct NoteSpec {
        pub text: String,
    }

    /// Version two, with a different scope by mistake.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(
        group = "docs.example.com",
        version = "v2",
        kind = "Note",
        cluster,
        root = "NoteV2"
    )]
    pub struct NoteV2Spec {
        pub text: String,
    }

    /// Also marked as storage.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(
        group = "docs.example.com",
        version = "v3",
        kind = "Note",
        storage,
        root = "NoteV3"
    )]
    pub struct NoteV3Spec {
        pub text: String,
    }
}

#[test]
fn combining_versions_checks_what_they_share() {
    let err = combine(&[two::Note::DESCRIPTOR, two::NoteV2::DESCRIPTOR]).unwrap_err();
    assert!(err.to_string().contains("scope"), "{err}");
    let err = combine(&[two::Note::DESCRIPTOR, two::NoteV3::DESCRIPTOR]).unwrap_err();
    assert!(err.to_string().contains("exactly one version"), "{err}");
    let err = combine(&[two::Note::DESCRIPTOR, two::Note::DESCRIPTOR]).unwrap_err();
    assert!(err.to_string().contains("more than once"), "{err}");
    assert!(combine(&[]).is_err());
}
