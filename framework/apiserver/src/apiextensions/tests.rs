//! Table tests of the schema module against apiextensions-apiserver
//! behaviour: CRD validation (validation_test.go cases), structural-schema
//! rules (schema/validation_test.go), pruning (pruning/algorithm_test.go),
//! defaulting (defaulting/algorithm_test.go) and custom-resource validation.

use serde_json::{json, Value};

use super::*;

/// A namespaced `widgets.example.com` CRD at `v1`, with a status and scale
/// subresource, a printer column and a selectable field; other modules' tests
/// use it too.
pub(crate) fn base_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                      "shortNames": ["wd"], "categories": ["all"]},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "color": {"type": "string"}}},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                }}},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "selectableFields": [{"jsonPath": ".spec.color"}]
            }]
        }
    })
}

/// `base` with the value at JSON pointer `ptr` replaced (or removed for `Value::Null`
/// when `remove` is set).
fn set(mut base: Value, ptr: &str, v: Value) -> Value {
    let (parent, key) = ptr.rsplit_once('/').unwrap_or(("", ptr));
    let target = base.pointer_mut(parent).expect("parent exists in fixture");
    match target {
        Value::Object(m) => {
            m.insert(key.to_string(), v);
        }
        Value::Array(a) => {
            let i: usize = key.parse().expect("index");
            a[i] = v;
        }
        _ => panic!("not a container: {parent}"),
    }
    base
}

fn remove(mut base: Value, ptr: &str) -> Value {
    let (parent, key) = ptr.rsplit_once('/').unwrap_or(("", ptr));
    if let Some(Value::Object(m)) = base.pointer_mut(parent) {
        m.remove(key);
    }
    base
}

/// A single-version CRD without subresources, columns or selectable fields,
/// with the given schema: its schema errors are under
/// `spec.validation.openAPIV3Schema`.
fn crd_with_schema(schema: Value) -> Value {
    let crd = base_crd();
    let crd = remove(crd, "/spec/versions/0/subresources");
    let crd = remove(crd, "/spec/versions/0/additionalPrinterColumns");
    let crd = remove(crd, "/spec/versions/0/selectableFields");
    set(crd, "/spec/versions/0/schema/openAPIV3Schema", schema)
}

fn errs(crd: &Value) -> Vec<String> {
    validate_crd(crd, None)
        .iter()
        .map(ToString::to_string)
        .collect()
}

const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const P: &str = "spec.validation.openAPIV3Schema";

#[test]
fn valid_crds_pass() {
    assert_eq!(errs(&base_crd()), Vec::<String>::new());
    // singular and listKind are defaulted from the kind.
    let crd = remove(
        remove(base_crd(), "/spec/names/singular"),
        "/spec/names/listKind",
    );
    assert_eq!(errs(&crd), Vec::<String>::new());
    // Cluster scope, no subresources.
    let crd = set(
        crd_with_schema(json!({"type": "object"})),
        "/spec/scope",
        json!("Cluster"),
    );
    assert_eq!(errs(&crd), Vec::<String>::new());
}

/// Each case's CRD gets exactly the errors listed (kube-apiserver's
/// `ValidateCustomResourceDefinition` messages).
fn assert_exact_errors(cases: Vec<(&str, Value, Vec<String>)>) {
    for (name, crd, want) in cases {
        assert_eq!(errs(&crd), want, "{name}");
    }
}

/// metadata.name, spec.group, spec.scope and spec.names.
#[test]
fn crd_names_exact_errors() {
    assert_exact_errors(vec![
        (
            "name must be plural.group",
            set(base_crd(), "/metadata/name", json!("gadgets.example.com")),
            vec!["metadata.name: Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group".into()],
        ),
        (
            "group needs a dot",
            set(set(base_crd(), "/spec/group", json!("example")), "/metadata/name", json!("widgets.example")),
            vec!["spec.group: Invalid value: \"example\": should be a domain with at least one dot".into()],
        ),
        (
            "scope required",
            remove(base_crd(), "/spec/scope"),
            vec!["spec.scope: Required value".into()],
        ),
        (
            "scope enum",
            set(base_crd(), "/spec/scope", json!("Global")),
            vec!["spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"".into()],
        ),
        (
            "kind and listKind differ",
            set(base_crd(), "/spec/names/listKind", json!("Widget")),
            vec!["spec.names.listKind: Invalid value: \"Widget\": kind and listKind may not be the same".into()],
        ),
        (
            "short names are DNS-1035 labels",
            set(base_crd(), "/spec/names/shortNames", json!(["wd", "W_D"])),
            vec![format!("spec.names.shortNames[1]: Invalid value: \"W_D\": {DNS1035}")],
        ),
        (
            "categories are DNS-1035 labels",
            set(base_crd(), "/spec/names/categories", json!(["All"])),
            vec![format!("spec.names.categories[0]: Invalid value: \"All\": {DNS1035}")],
        ),
        (
            "kind may have mixed case only",
            set(set(base_crd(), "/spec/names/kind", json!("Wid_get")), "/spec/names/listKind", json!("WidgetList")),
            vec![format!("spec.names.kind: Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: {DNS1035}")],
        ),
        (
            "kind required (singular and listKind then too)",
            remove(remove(remove(base_crd(), "/spec/names/kind"), "/spec/names/singular"), "/spec/names/listKind"),
            vec![
                "spec.names.singular: Required value".into(),
                "spec.names.kind: Required value".into(),
                "spec.names.listKind: Required value".into(),
            ],
        ),
    ]);
}

/// Version names, schemas and preserveUnknownFields.
#[test]
fn crd_versions_and_schema_exact_errors() {
    assert_exact_errors(vec![
        (
            "version name is a DNS-1035 label (also reported as spec.version)",
            set(base_crd(), "/spec/versions/0/name", json!("V1")),
            vec![
                format!("spec.versions[0].name: Invalid value: \"V1\": {DNS1035}"),
                format!("spec.version: Invalid value: \"V1\": {DNS1035}"),
            ],
        ),
        (
            "schema required",
            remove(base_crd(), "/spec/versions/0/schema"),
            vec![
                "spec.versions[0].schema.openAPIV3Schema: Required value".into(),
                "spec.selectableFields: Invalid value: \"\": may only be set when validations.schema is included".into(),
            ],
        ),
        (
            "preserveUnknownFields must stay false",
            set(base_crd(), "/spec/preserveUnknownFields", json!(true)),
            vec!["spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead".into()],
        ),
    ]);
}

/// The scale subresource and printer columns.
#[test]
fn crd_subresources_and_columns_exact_errors() {
    assert_exact_errors(vec![
        (
            "scale spec path must be a simple json path",
            set(base_crd(), "/spec/versions/0/subresources/scale/specReplicasPath", json!("spec.size")),
            vec!["spec.subresources.scale.specReplicasPath: Invalid value: \"spec.size\": must be a simple json path starting with .".into()],
        ),
        (
            "scale spec path under .spec",
            set(base_crd(), "/spec/versions/0/subresources/scale/specReplicasPath", json!(".status.size")),
            vec!["spec.subresources.scale.specReplicasPath: Invalid value: \".status.size\": should be a json path under .spec".into()],
        ),
        (
            "scale status path required",
            remove(base_crd(), "/spec/versions/0/subresources/scale/statusReplicasPath"),
            vec!["spec.subresources.scale.statusReplicasPath: Required value".into()],
        ),
        (
            "scale label selector path",
            set(base_crd(), "/spec/versions/0/subresources/scale/labelSelectorPath", json!(".metadata.labels")),
            vec!["spec.subresources.scale.labelSelectorPath: Invalid value: \".metadata.labels\": should be a json path under either .spec or .status".into()],
        ),
        (
            "printer column type",
            set(base_crd(), "/spec/versions/0/additionalPrinterColumns/0/type", json!("int")),
            vec!["spec.additionalPrinterColumns[0].type: Invalid value: \"int\": must be one of boolean,date,integer,number,string".into()],
        ),
        (
            "printer column format",
            set(base_crd(), "/spec/versions/0/additionalPrinterColumns/0/format", json!("percent")),
            vec!["spec.additionalPrinterColumns[0].format: Invalid value: \"percent\": must be one of byte,date,date-time,double,float,int32,int64,password".into()],
        ),
        (
            "printer column json path",
            set(base_crd(), "/spec/versions/0/additionalPrinterColumns/0/jsonPath", json!("spec.size")),
            vec!["spec.additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.size\": must be a simple json path starting with .".into()],
        ),
        (
            "printer column name and json path required",
            set(base_crd(), "/spec/versions/0/additionalPrinterColumns/0", json!({"type": "string"})),
            vec![
                "spec.additionalPrinterColumns[0].name: Required value".into(),
                "spec.additionalPrinterColumns[0].JSONPath: Required value".into(),
            ],
        ),
    ]);
}

/// Selectable fields, conversion, deprecation warnings and API approval.
#[test]
fn crd_selectable_fields_and_conversion_exact_errors() {
    assert_exact_errors(vec![
        (
            "selectable field must resolve",
            set(base_crd(), "/spec/versions/0/selectableFields/0/jsonPath", json!(".spec.missing")),
            vec!["spec.selectableFields[0].jsonPath: Invalid value: \".spec.missing\": is an invalid path: does not refer to a valid field: \"missing\"".into()],
        ),
        (
            "selectable field must be a scalar",
            set(base_crd(), "/spec/versions/0/selectableFields/0/jsonPath", json!(".spec")),
            vec!["spec.selectableFields[0].jsonPath: Invalid value: \".spec\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.".into()],
        ),
        (
            "selectable fields unique",
            set(base_crd(), "/spec/versions/0/selectableFields", json!([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.color"}])),
            vec!["spec.selectableFields[1].jsonPath: Duplicate value: \".spec.color\"".into()],
        ),
        (
            "conversion strategy enum",
            set(base_crd(), "/spec/conversion", json!({"strategy": "Magic"})),
            vec!["spec.conversion.strategy: Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\"".into()],
        ),
        (
            "webhook conversion needs a client config and review versions",
            set(base_crd(), "/spec/conversion", json!({"strategy": "Webhook"})),
            vec![
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook".into(),
                "spec.conversion.conversionReviewVersions: Required value".into(),
            ],
        ),
        (
            "webhook conversion url must be https",
            set(base_crd(), "/spec/conversion", json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://x.example.com/convert"}, "conversionReviewVersions": ["v1"]}})),
            vec!["spec.conversion.webhookClientConfig.url: Invalid value: \"http://x.example.com/convert\": 'https' is the only allowed URL scheme".into()],
        ),
        (
            "None conversion forbids a webhook",
            set(base_crd(), "/spec/conversion", json!({"strategy": "None", "webhook": {"clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v1"]}})),
            vec![
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook".into(),
                "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook".into(),
            ],
        ),
        (
            "deprecation warning only on deprecated versions",
            set(base_crd(), "/spec/versions/0/deprecationWarning", json!("old")),
            vec!["spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for deprecated versions".into()],
        ),
        (
            "protected groups need API approval",
            set(set(base_crd(), "/spec/group", json!("widgets.k8s.io")), "/metadata/name", json!("widgets.widgets.k8s.io")),
            vec!["metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111".into()],
        ),
    ]);
}

#[test]
fn version_count_rules() {
    let mut two = base_crd();
    let v = two["spec"]["versions"][0].clone();
    let mut v2 = v.clone();
    v2["name"] = json!("v2");
    two["spec"]["versions"] = json!([v, v2]);
    // Both storage.
    let got = validate_crd(&two, None);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].field, "spec.versions");
    assert_eq!(got[0].cause, CauseType::Invalid);
    assert!(got[0]
        .message
        .ends_with(": must have exactly one version marked as storage version"));
    // The value is the internal versions as Go marshals them (folded fields null).
    assert!(got[0].message.starts_with("Invalid value: [{\"AdditionalPrinterColumns\":null,\"Deprecated\":false,\"DeprecationWarning\":null,\"Name\":\"v1\","), "{}", got[0].message);

    let none = set(base_crd(), "/spec/versions/0/storage", json!(false));
    let got = errs(&none);
    assert_eq!(got.len(), 1);
    assert!(got[0].starts_with("spec.versions: Invalid value: ["));

    let mut dup = two.clone();
    dup["spec"]["versions"][1]["name"] = json!("v1");
    dup["spec"]["versions"][1]["storage"] = json!(false);
    let got = errs(&dup);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].ends_with("must contain unique version names"));

    let empty = set(base_crd(), "/spec/versions", json!([]));
    let got = errs(&empty);
    assert_eq!(got, vec!["spec.versions: Invalid value: []: must have exactly one version marked as storage version".to_string()]);
}

#[test]
fn per_version_schema_errors_name_the_version() {
    let mut crd = base_crd();
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"] =
        json!({"description": "no type"});
    crd["spec"]["versions"] = json!([crd["spec"]["versions"][0].clone(), v2]);
    assert_eq!(
        errs(&crd),
        vec!["spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields".to_string()]
    );
}

#[test]
fn status_subresource_restricts_the_root_schema() {
    let crd = set(
        base_crd(),
        "/spec/versions/0/schema/openAPIV3Schema/minProperties",
        json!(1),
    );
    let got = errs(&crd);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].starts_with("spec.validation.openAPIV3Schema: Invalid value: {"));
    assert!(got[0].ends_with("only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"));
}

#[test]
fn structural_schema_rules_exact_errors() {
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        ("root type required", json!({"properties": {"spec": {"type": "object"}}}),
            vec![format!("{P}.type: Required value: must not be empty at the root")]),
        ("root must be an object", json!({"type": "string"}),
            vec![format!("{P}.type: Invalid value: \"string\": must be object at the root")]),
        ("field type required", json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}),
            vec![format!("{P}.properties[spec].type: Required value: must not be empty for specified object fields")]),
        ("arrays need items", json!({"type": "object", "properties": {"list": {"type": "array"}}}),
            vec![format!("{P}.properties[list].items: Required value: must be specified")]),
        ("items need a type", json!({"type": "object", "properties": {"list": {"type": "array", "items": {"description": "x"}}}}),
            vec![format!("{P}.properties[list].items.type: Required value: must not be empty for specified array items")]),
        ("no additionalProperties at the root", json!({"type": "object", "additionalProperties": {"type": "string"}}),
            vec![format!("{P}.additionalProperties: Forbidden: must not be used at the root")]),
        ("properties xor additionalProperties", json!({"type": "object", "properties": {"m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}),
            vec![format!("{P}.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive")]),
        ("no uniqueItems", json!({"type": "object", "properties": {"l": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}}),
            vec![format!("{P}.properties[l].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")]),
        ("preserve-unknown-fields only true", json!({"type": "object", "properties": {"x": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}}}),
            vec![format!("{P}.properties[x].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined")]),
        ("embedded resources are objects", json!({"type": "object", "properties": {"e": {"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}),
            vec![format!("{P}.properties[e].type: Required value: must be object if x-kubernetes-embedded-resource is true")]),
        ("embedded resources need properties", json!({"type": "object", "properties": {"e": {"type": "object", "x-kubernetes-embedded-resource": true}}}),
            vec![format!("{P}.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields")]),
        ("int-or-string patterns are structural", json!({"type": "object", "properties": {
                "a": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "b": {"x-kubernetes-int-or-string": true, "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"maxLength": 3}]},
                "c": {"x-kubernetes-int-or-string": true}}}),
            vec![]),
        ("no type inside junctors", json!({"type": "object", "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}}}),
            vec![format!("{P}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural")]),
        ("no generics inside junctors (sorted)", json!({"type": "object", "properties": {"a": {"type": "string", "allOf": [{"description": "d", "nullable": true, "default": "x", "title": "t"}]}}}),
            vec![
                format!("{P}.properties[a].allOf[0].default: Forbidden: must be undefined to be structural"),
                format!("{P}.properties[a].allOf[0].description: Forbidden: must be empty to be structural"),
                format!("{P}.properties[a].allOf[0].nullable: Forbidden: must be false to be structural"),
                format!("{P}.properties[a].allOf[0].title: Forbidden: must be empty to be structural"),
            ]),
        ("no extensions inside junctors", json!({"type": "object", "properties": {"a": {"type": "object", "oneOf": [{"x-kubernetes-preserve-unknown-fields": true}, {"x-kubernetes-map-type": "atomic"}]}}}),
            vec![
                format!("{P}.properties[a].oneOf[0].x-kubernetes-preserve-unknown-fields: Forbidden: must be false to be structural"),
                format!("{P}.properties[a].oneOf[1].x-kubernetes-map-type: Forbidden: must be undefined to be structural"),
                // The OpenAPI checks walk into junctors too.
                format!("{P}.properties[a].oneOf[1].type: Required value: must be object if x-kubernetes-map-type is specified"),
            ]),
        ("junctor fields must be specified outside", json!({"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"properties": {"b": {"maxLength": 2}}}]}),
            vec![format!("{P}.properties[b]: Required value: because it is defined in {P}.anyOf[0].properties[b]")]),
        ("metadata may only restrict name and generateName", json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
            vec![format!("{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified")]),
        ("metadata name restrictions are allowed", json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}}}),
            vec![]),
        ("kind must be a string", json!({"type": "object", "properties": {"kind": {"type": "integer"}}}),
            vec![format!("{P}.properties[kind].type: Invalid value: \"integer\": must be string")]),
        ("list-type needs an array", json!({"type": "object", "properties": {"s": {"type": "object", "x-kubernetes-list-type": "set"}}}),
            vec![format!("{P}.properties[s].type: Invalid value: \"object\": must be array if x-kubernetes-list-type is specified")]),
        ("list-type values", json!({"type": "object", "properties": {"s": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"}}}),
            vec![format!("{P}.properties[s].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\"")]),
        ("map-type values", json!({"type": "object", "properties": {"m": {"type": "object", "x-kubernetes-map-type": "loose"}}}),
            vec![format!("{P}.properties[m].x-kubernetes-map-type: Unsupported value: \"loose\": supported values: \"atomic\", \"granular\"")]),
        ("set items must be atomic", json!({"type": "object", "properties": {"s": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}}}),
            vec![format!("{P}.properties[s].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set")]),
        ("map lists need keys", json!({"type": "object", "properties": {"m": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}),
            vec![format!("{P}.properties[m].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map")]),
        ("map keys required or defaulted", json!({"type": "object", "properties": {"m": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}),
            vec![format!("{P}.properties[m].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property")]),
        ("map keys scalar", json!({"type": "object", "properties": {"m": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["meta"], "items": {"type": "object", "required": ["meta"], "properties": {"meta": {"type": "object"}}}}}}),
            vec![format!("{P}.properties[m].items.properties[meta].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map")]),
        ("map keys are item properties", json!({"type": "object", "properties": {"m": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["nope"], "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}),
            vec![format!("{P}.properties[m].x-kubernetes-list-map-keys: Invalid value: [\"nope\"]: entries must all be names of item properties")]),
        ("map keys need list-type map", json!({"type": "object", "properties": {"m": {"type": "array", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}}),
            vec![format!("{P}.properties[m].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty")]),
        ("valid map list", json!({"type": "object", "properties": {"m": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer", "default": 80}}}}}}),
            vec![]),
        ("defaults must validate", json!({"type": "object", "properties": {"replicas": {"type": "integer", "default": "three"}}}),
            vec![format!("{P}.properties[replicas].default: Invalid value: \"string\":  in body must be of type integer: \"string\"")]),
        ("nested defaults must validate", json!({"type": "object", "properties": {"spec": {"type": "object", "default": {"size": 20}, "properties": {"size": {"type": "integer", "maximum": 10}}}}}),
            vec![format!("{P}.properties[spec].default.size: Invalid value: 20: size in body should be less than or equal to 10")]),
        ("defaults must be pruned", json!({"type": "object", "properties": {"spec": {"type": "object", "default": {"a": 1, "extra": 2}, "properties": {"a": {"type": "integer"}}}}}),
            vec![format!("{P}.properties[spec].default: Invalid value: {{\"a\":1,\"extra\":2}}: must not have unknown fields")]),
        ("no defaults in top-level metadata", json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {"name": "x"}}}}),
            vec![format!("{P}.properties[metadata].default: Forbidden: must not be set in top-level metadata")]),
        ("unsupported keywords", json!({"type": "object", "properties": {"a": {"$ref": "#/x"}, "b": {"type": "null"}, "c": {"type": "int"}}}),
            vec![
                format!("{P}.properties[a].type: Required value: must not be empty for specified object fields"),
                format!("{P}.properties[a].$ref: Forbidden: $ref is not supported"),
                format!("{P}.properties[b].type: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""),
                format!("{P}.properties[b].type: Forbidden: type cannot be set to null, use nullable as an alternative"),
                format!("{P}.properties[c].type: Unsupported value: \"int\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""),
            ]),
        ("nullable root", json!({"type": "object", "nullable": true}),
            vec![format!("{P}.nullable: Forbidden: nullable cannot be true at the root")]),
        ("validation rules are checked statically", json!({"type": "object", "x-kubernetes-validations": [{"rule": " "}, {"rule": "self.a > 0", "reason": "FieldValueBad"}]}),
            vec![
                format!("{P}.x-kubernetes-validations[0].rule: Required value: rule is not specified"),
                format!("{P}.x-kubernetes-validations[1].reason: Unsupported value: \"FieldValueBad\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""),
            ]),
    ];
    for (name, schema, want) in cases {
        assert_eq!(errs(&crd_with_schema(schema)), want, "{name}");
    }
}

#[test]
fn invalid_patterns_are_rejected() {
    let got = errs(&crd_with_schema(
        json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(["}}}),
    ));
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].starts_with(&format!("{P}.properties[a].pattern: Invalid value: \"([\": must be a valid regular expression, but isn't: ")));
}

#[test]
fn cause_types_of_crd_errors() {
    let got = validate_crd(&remove(base_crd(), "/spec/scope"), None);
    assert_eq!(got[0].cause.as_str(), "FieldValueRequired");
    assert_eq!(got[0].field, "spec.scope");
    assert_eq!(got[0].message, "Required value");
    let got = validate_crd(&set(base_crd(), "/spec/scope", json!("x")), None);
    assert_eq!(got[0].cause.as_str(), "FieldValueNotSupported");
}

fn established(mut crd: Value) -> Value {
    crd["status"] = json!({"conditions": [{"type": "Established", "status": "True"}]});
    crd
}

#[test]
fn updates_keep_names_and_scope() {
    let old = established(base_crd());
    let new = set(old.clone(), "/spec/scope", json!("Cluster"));
    assert_eq!(
        validate_crd(&new, Some(&old))
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        vec!["spec.scope: Invalid value: \"Cluster\": field is immutable".to_string()]
    );
    // Not established yet: the scope may still change.
    let old = base_crd();
    let new = set(old.clone(), "/spec/scope", json!("Cluster"));
    assert!(validate_crd(&new, Some(&old)).is_empty());
    // Plural and group never change.
    let new = set(
        set(old.clone(), "/spec/names/plural", json!("gizmos")),
        "/metadata/name",
        json!("gizmos.example.com"),
    );
    assert_eq!(
        validate_crd(&new, Some(&old))
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        vec!["spec.names.plural: Invalid value: \"gizmos\": field is immutable".to_string()]
    );
}

#[test]
fn updates_do_not_tighten_rules_on_persisted_schemas() {
    // A set of granular objects was accepted by old servers; keep accepting it.
    let schema = json!({"type": "object", "properties": {"s": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}}});
    let old = crd_with_schema(schema.clone());
    assert_eq!(validate_crd(&old, None).len(), 1);
    let new = set(old.clone(), "/metadata/labels", json!({"x": "y"}));
    assert!(validate_crd(&new, Some(&old)).is_empty());
}

// ---------------------------------------------------------------------
// StructuralSchema
// ---------------------------------------------------------------------

fn schema(v: Value) -> StructuralSchema {
    match StructuralSchema::parse(&v) {
        Ok(s) => s,
        Err(e) => panic!("schema rejected: {e:?}"),
    }
}

#[test]
fn parse_rejects_non_structural_schemas() {
    let err =
        StructuralSchema::parse(&json!({"type": "object", "properties": {"a": {}}})).unwrap_err();
    assert_eq!(err[0].to_string(), "openAPIV3Schema.properties[a].type: Required value: must not be empty for specified object fields");
}

#[test]
fn pruning_cases() {
    let s = schema(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "size": {"type": "integer"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
            "any": {"type": "object", "additionalProperties": true},
            "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}}
        }}
    }}));
    let cases: Vec<(Value, Value, Vec<&str>)> = vec![
        (
            json!({"apiVersion": "ex.com/v1", "kind": "W", "metadata": {"name": "a", "labels": {"x": "y"}, "whatever": 1}, "foo": 1}),
            json!({"apiVersion": "ex.com/v1", "kind": "W", "metadata": {"name": "a", "labels": {"x": "y"}}}),
            vec!["foo", "metadata.whatever"],
        ),
        (
            json!({"spec": {"size": 1, "bogus": true, "items": [{"name": "a", "x": 1}, {"y": 2}]}}),
            json!({"spec": {"size": 1, "items": [{"name": "a"}, {}]}}),
            vec!["spec.bogus", "spec.items[0].x", "spec.items[1].y"],
        ),
        (
            json!({"spec": {"labels": {"k": {"a": "1", "b": "2"}}}}),
            json!({"spec": {"labels": {"k": {"a": "1"}}}}),
            vec!["spec.labels.k.b"],
        ),
        (
            json!({"spec": {"raw": {"anything": {"deep": 1}, "known": {"a": "x", "b": "y"}}}}),
            json!({"spec": {"raw": {"anything": {"deep": 1}, "known": {"a": "x"}}}}),
            vec!["spec.raw.known.b"],
        ),
        (
            json!({"spec": {"any": {"k": {"x": 1}, "s": "v"}}}),
            json!({"spec": {"any": {"k": {}, "s": "v"}}}),
            vec!["spec.any.k.x"],
        ),
        (
            json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1}, "spec": {"x": "a", "y": "b"}, "extra": 1}}}),
            json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "a"}}}}),
            vec![
                "spec.template.extra",
                "spec.template.metadata.bogus",
                "spec.template.spec.y",
            ],
        ),
    ];
    for (mut input, want, pruned) in cases {
        let got = s.prune(&mut input);
        assert_eq!(input, want);
        assert_eq!(got, pruned);
    }
}

#[test]
fn pruning_keeps_everything_under_a_preserving_root() {
    let s = schema(
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}),
    );
    let mut obj = json!({"anything": 1, "spec": {"a": "x", "b": 2}});
    assert_eq!(s.prune(&mut obj), vec!["spec.b"]);
    assert_eq!(obj, json!({"anything": 1, "spec": {"a": "x"}}));
}

#[test]
fn defaulting_cases() {
    let s = schema(json!({"type": "object", "properties": {
        "spec": {"type": "object", "default": {}, "properties": {
            "replicas": {"type": "integer", "default": 1},
            "mode": {"type": "string", "default": "fast"},
            "note": {"type": "string"},
            "opt": {"type": "string", "nullable": true},
            "ports": {"type": "array", "items": {"type": "object", "default": {"port": 80}, "properties": {"port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}},
            "env": {"type": "object", "additionalProperties": {"type": "string", "default": "unset"}}
        }}
    }}));
    let cases: Vec<(Value, Value)> = vec![
        // A missing object is defaulted, then its own defaults apply.
        (json!({}), json!({"spec": {"replicas": 1, "mode": "fast"}})),
        // Existing values win.
        (
            json!({"spec": {"replicas": 3}}),
            json!({"spec": {"replicas": 3, "mode": "fast"}}),
        ),
        // null on a non-nullable field with a default gets the default; without one it is dropped;
        // nullable nulls stay.
        (
            json!({"spec": {"mode": null, "note": null, "opt": null}}),
            json!({"spec": {"replicas": 1, "mode": "fast", "opt": null}}),
        ),
        // Items: null items get the item default, then nested defaults.
        (
            json!({"spec": {"ports": [null, {"port": 8080}]}}),
            json!({"spec": {"replicas": 1, "mode": "fast", "ports": [{"port": 80, "protocol": "TCP"}, {"port": 8080, "protocol": "TCP"}]}}),
        ),
        // Map values.
        (
            json!({"spec": {"env": {"A": null, "B": "b"}}}),
            json!({"spec": {"replicas": 1, "mode": "fast", "env": {"A": "unset", "B": "b"}}}),
        ),
    ];
    for (mut input, want) in cases {
        s.default(&mut input);
        assert_eq!(input, want);
    }
}

fn texts(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn custom_resource_validation_end_to_end() {
    let s = schema(json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                      "items": {"type": "object", "required": ["port"], "properties": {"port": {"type": "integer"}, "name": {"type": "string"}}}},
            "routes": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["host", "path"],
                      "items": {"type": "object", "required": ["host", "path"], "properties": {"host": {"type": "string"}, "path": {"type": "string"}}}},
            "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
        }}
    }}));
    let ok = json!({"apiVersion": "ex.com/v1", "kind": "W", "metadata": {"name": "w"}, "spec": {"size": 3, "tags": ["a", "b"],
        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}}});
    assert!(s.validate(&ok, None).is_empty());

    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"spec": {"size": 11}}), vec!["spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"]),
        (json!({"spec": {}}), vec!["spec.size: Required value"]),
        (json!({"spec": {"size": 1, "tags": ["a", "b", "a", "a"]}}), vec!["spec.tags[2]: Duplicate value: \"a\""]),
        (json!({"spec": {"size": 1, "ports": [{"port": 80}, {"port": 443}, {"port": 80, "name": "x"}]}}),
            vec!["spec.ports[2]: Duplicate value: {\"port\":80}"]),
        (json!({"spec": {"size": 1, "routes": [{"host": "a", "path": "/"}, {"host": "a", "path": "/"}]}}),
            vec!["spec.routes[1]: Duplicate value: {\"host\":\"a\",\"path\":\"/\"}"]),
        (json!({"spec": {"size": 1, "template": {"metadata": {"name": "a/b"}}}}),
            vec![
                "spec.template.apiVersion: Required value",
                "spec.template.kind: Required value",
                "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'",
            ]),
    ];
    for (obj, want) in cases {
        assert_eq!(texts(&s.validate(&obj, None)), want, "{obj}");
    }
}

#[test]
fn ratcheting_drops_errors_on_unchanged_values() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "integer", "maximum": 5}, "b": {"type": "integer", "maximum": 5}}}}}),
    );
    let old = json!({"spec": {"a": 10, "b": 1}});
    let new = json!({"spec": {"a": 10, "b": 9}});
    assert_eq!(
        texts(&s.validate(&new, Some(&old))),
        vec!["spec.b: Invalid value: 9: spec.b in body should be less than or equal to 5"]
    );
    assert_eq!(s.validate(&new, None).len(), 2);
}

#[test]
fn list_and_map_topology_for_server_side_apply() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "containers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                        "items": {"type": "object", "required": ["containerPort", "protocol"], "properties": {"containerPort": {"type": "integer"}, "protocol": {"type": "string"}}}},
                    "args": {"type": "array", "items": {"type": "string"}}
                }}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
        }}}}),
    );
    assert_eq!(
        s.list_type_at(&["spec", "containers"]),
        Some(("map".into(), vec!["name".into()]))
    );
    assert_eq!(
        s.list_type_at(&["spec", "containers", "ports"]),
        Some((
            "map".into(),
            vec!["containerPort".into(), "protocol".into()]
        ))
    );
    assert_eq!(
        s.list_type_at(&["spec", "containers", "args"]),
        Some(("atomic".into(), vec![]))
    );
    assert_eq!(
        s.list_type_at(&["spec", "tags"]),
        Some(("set".into(), vec![]))
    );
    assert_eq!(s.list_type_at(&["spec", "selector"]), None);
    assert_eq!(s.list_type_at(&["spec", "nope"]), None);
    assert!(s.map_is_atomic(&["spec", "selector"]));
    assert!(!s.map_is_atomic(&["spec"]));
}

#[test]
fn status_message_aggregate() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["a", "b"]}}}),
    );
    let e = s.validate(&json!({"spec": {}}), None);
    assert_eq!(
        aggregate(&e),
        "[spec.a: Required value, spec.b: Required value]"
    );
}

// ---------------------------------------------------------------------
// x-kubernetes-validations (CEL)
// ---------------------------------------------------------------------

fn cel_schema() -> StructuralSchema {
    schema(json!({"type": "object", "properties": {
        "spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
                {"rule": "!has(self.mode) || self.mode != 'off' || self.maxReplicas == 0", "reason": "FieldValueForbidden", "message": "off means no replicas"}
            ],
            "properties": {
                "minReplicas": {"type": "integer"},
                "maxReplicas": {"type": "integer"},
                "mode": {"type": "string", "enum": ["on", "off"]},
                "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]},
                "items": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('x-')"}]}}
            }}
    }}))
}

#[test]
fn cel_rules_are_evaluated_like_kube_apiserver() {
    let s = cel_schema();
    assert!(s
        .validate(
            &json!({"spec": {"minReplicas": 1, "maxReplicas": 3, "items": ["x-a"]}}),
            None
        )
        .is_empty());
    let cases: Vec<(Value, Option<Value>, Vec<&str>)> = vec![
        (json!({"spec": {"minReplicas": 5, "maxReplicas": 3}}), None,
            vec!["spec: Invalid value: \"object\": minReplicas must not exceed maxReplicas"]),
        (json!({"spec": {"minReplicas": 0, "maxReplicas": 3, "mode": "off"}}), None,
            vec!["spec: Forbidden: off means no replicas"]),
        (json!({"spec": {"minReplicas": 0, "maxReplicas": 1, "items": ["x-a", "b"]}}), None,
            vec!["spec.items[1]: Invalid value: \"string\": failed rule: self.startsWith('x-')"]),
        // Transition rules run on updates only.
        (json!({"spec": {"minReplicas": 0, "maxReplicas": 1, "name": "b"}}), None, vec![]),
        (json!({"spec": {"minReplicas": 0, "maxReplicas": 1, "name": "b"}}), Some(json!({"spec": {"minReplicas": 0, "maxReplicas": 1, "name": "a"}})),
            vec!["spec.name: Invalid value: \"string\": name is immutable"]),
        // Blocking OpenAPI errors skip the rules, with kube-apiserver's notice.
        (json!({"spec": {"minReplicas": 5, "maxReplicas": 3, "mode": "sideways"}}), None,
            vec![
                "spec.mode: Unsupported value: \"sideways\": supported values: \"on\", \"off\"",
                "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ]),
    ];
    for (obj, old, want) in cases {
        assert_eq!(texts(&s.validate(&obj, old.as_ref())), want, "{obj}");
    }
}

#[test]
fn root_level_rules_report_nil_like_kube_apiserver() {
    let s = schema(
        json!({"type": "object", "x-kubernetes-validations": [{"rule": "has(self.spec)", "message": "spec is required"}],
        "properties": {"spec": {"type": "object"}}}),
    );
    assert_eq!(
        texts(&s.validate(&json!({}), None)),
        vec!["<nil>: Invalid value: \"object\": spec is required"]
    );
}

#[test]
fn crd_rules_must_compile() {
    let crd = crd_with_schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": "self.a >"}, {"rule": "true", "messageExpression": "'x' +"}]}}}),
    );
    let got = validate_crd(&crd, None);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        got[0].field,
        format!("{P}.properties[spec].x-kubernetes-validations[0].rule")
    );
    assert!(
        got[0]
            .message
            .starts_with("Invalid value: {\"rule\":\"self.a \\u003e\"}: compilation failed: "),
        "{}",
        got[0].message
    );
    assert_eq!(
        got[1].field,
        format!("{P}.properties[spec].x-kubernetes-validations[1].messageExpression")
    );
    // Valid rules pass.
    let crd = crd_with_schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": "self.size() >= 0"}]}}}),
    );
    assert!(validate_crd(&crd, None).is_empty());
}

/// The cases of apiextensions-apiserver's defaulting/algorithm_test.go
/// (`TestDefault`), with the structural schemas written as JSON.
#[test]
fn default_algorithm_cases() {
    let d = |v: &str| json!({"default": v});
    let cases: Vec<(&str, &str, Value, &str)> = vec![
        ("scalar", "4", d("foo"), "4"),
        ("scalar array", "[1,2]", json!({"items": d("foo")}), "[1,2]"),
        (
            "object array",
            r#"[{"a":1},{"b":1},{"c":1}]"#,
            json!({"items": {"properties": {"a": d("A"), "b": d("B"), "c": d("C")}}}),
            r#"[{"a":1,"b":"B","c":"C"},{"a":"A","b":1,"c":"C"},{"a":"A","b":"B","c":1}]"#,
        ),
        (
            "object array object",
            r#"{"array":[{"a":1},{"b":2}],"object":{"a":1},"additionalProperties":{"x":{"a":1},"y":{"b":2}}}"#,
            json!({"properties": {
                "array": {"items": {"properties": {"a": d("A"), "b": d("B")}}},
                "object": {"properties": {"a": d("N"), "b": d("O")}},
                "additionalProperties": {"additionalProperties": {"properties": {"a": d("alpha"), "b": d("beta")}}},
                "foo": d("bar")
            }}),
            r#"{"array":[{"a":1,"b":"B"},{"a":"A","b":2}],"object":{"a":1,"b":"O"},"additionalProperties":{"x":{"a":1,"b":"beta"},"y":{"a":"alpha","b":2}},"foo":"bar"}"#,
        ),
        (
            "empty and null",
            r#"[{},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":null},{"a":[]},{"a":{}}]"#,
            json!({"items": {"properties": {"a": d("A")}}}),
            r#"[{"a":"A"},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":"A"},{"a":[]},{"a":{}}]"#,
        ),
        (
            "null in nullable list",
            "[null]",
            json!({"nullable": true, "items": {"properties": {"a": d("A")}}}),
            "[null]",
        ),
        (
            "null in non-nullable list",
            "[null]",
            json!({"items": d("A")}),
            r#"["A"]"#,
        ),
        (
            "null in nullable object",
            r#"{"a": null}"#,
            json!({"properties": {"a": {"nullable": true, "default": "A"}}}),
            r#"{"a": null}"#,
        ),
        (
            "null in non-nullable object",
            r#"{"a": null}"#,
            json!({"properties": {"a": d("A")}}),
            r#"{"a": "A"}"#,
        ),
        (
            "null in nullable object with additionalProperties",
            r#"{"a": null}"#,
            json!({"additionalProperties": {"nullable": true, "default": "A"}}),
            r#"{"a": null}"#,
        ),
        (
            "null in non-nullable object with additionalProperties",
            r#"{"a": null}"#,
            json!({"additionalProperties": d("A")}),
            r#"{"a": "A"}"#,
        ),
        (
            "null unknown field",
            r#"{"a": null}"#,
            json!({"additionalProperties": true}),
            r#"{"a": null}"#,
        ),
    ];
    for (name, input, schema, want) in cases {
        let mut v: Value = serde_json::from_str(input).expect("input");
        default::apply_defaults(&mut v, &node::Node::parse(&schema));
        let want: Value = serde_json::from_str(want).expect("want");
        assert_eq!(v, want, "{name}");
    }
}

/// A CRD as controller-gen writes it (memcached-operator), which
/// kube-apiserver accepts: it must pass, and its objects must validate.
#[test]
fn controller_gen_style_crd_is_valid() {
    let condition = json!({
        "type": "object",
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "properties": {
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "message": {"type": "string", "maxLength": 32768},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "reason": {"type": "string", "maxLength": 1024, "minLength": 1, "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "type": {"type": "string", "maxLength": 316, "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"}
        }
    });
    let schema = json!({
        "description": "Memcached is the Schema for the memcacheds API",
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10},
                "port": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true},
                "resources": {"type": "object", "properties": {"limits": {"type": "object", "additionalProperties": {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
                    "x-kubernetes-int-or-string": true}}}}
            }},
            "status": {"type": "object", "properties": {
                "conditions": {"type": "array", "items": condition, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}
            }}
        }
    });
    let mut crd = set(
        base_crd(),
        "/spec/versions/0/schema/openAPIV3Schema",
        schema.clone(),
    );
    crd = remove(crd, "/spec/versions/0/selectableFields");
    crd = set(
        crd,
        "/spec/versions/0/subresources/scale/statusReplicasPath",
        json!(".status.replicas"),
    );
    assert_eq!(errs(&crd), Vec::<String>::new());

    let s = StructuralSchema::parse(&schema).expect("structural");
    let obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "m"},
        "spec": {"size": 3, "port": "http", "resources": {"limits": {"cpu": "500m", "memory": 128}}},
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Ready", "message": "",
            "lastTransitionTime": "2024-05-01T10:00:00Z"}]}});
    assert_eq!(texts(&s.validate(&obj, None)), Vec::<String>::new());
    let bad = json!({"spec": {"size": 3, "resources": {"limits": {"cpu": "lots"}}},
        "status": {"conditions": [{"type": "Available", "status": "Maybe", "reason": "Ready", "message": "", "lastTransitionTime": "2024-05-01T10:00:00Z"}]}});
    let got = texts(&s.validate(&bad, None));
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0].starts_with("spec.resources.limits.cpu: Invalid value: \"lots\": spec.resources.limits.cpu in body should match '^(\\+|-)?"), "{}", got[0]);
    assert_eq!(got[1], "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\"");
}
