//! `CustomResourceDefinition` (apiextensions.k8s.io/v1) validation, as
//! apiextensions-apiserver runs it on create and update
//! (pkg/apis/apiextensions/validation/validation.go), plus the v1 defaults
//! (pkg/apis/apiextensions/v1/defaults.go).
//!
//! kube-apiserver validates the internal version of a CRD, into which v1 is
//! converted by folding per-version `schema`, `subresources`,
//! `additionalPrinterColumns` and `selectableFields` to the top level when
//! every version has the same value (v1/conversion.go). Error paths follow
//! that: a single-version CRD's schema errors are reported under
//! `spec.validation.openAPIV3Schema`, a multi-version CRD with differing
//! schemas under `spec.versions[i].schema.openAPIV3Schema`.

use serde_json::{json, Map, Value};

use super::embedded::validate_embedded;
use super::field::{FieldError, Path};
use super::node::Node;
use super::prune::prune;
use super::structural::{
    is_go_zero, map_list_keys_map_set, schema_has, validate_openapi_schema, validate_structural,
    SchemaOptions,
};
use super::validate::Validator;
use crate::machinery::names;

const PRINTER_COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const PRINTER_COLUMN_TYPE_LIST: [&str; 5] = ["boolean", "date", "integer", "number", "string"];
const PRINTER_COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
const PRINTER_COLUMN_FORMAT_LIST: [&str; 8] = [
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];
const MAX_SELECTABLE_FIELDS: i64 = 8;
const ALLOWED_AT_ROOT_WITH_STATUS: &str = "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations]";
const API_APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// `JSONSchemaProps` fields in Go declaration order, with whether they may
/// appear at the root of a schema whose CRD enables the status subresource.
const ROOT_FIELDS: &[(&str, bool)] = &[
    ("id", false),
    ("$schema", false),
    ("$ref", false),
    ("description", true),
    ("type", true),
    ("format", true),
    ("title", true),
    ("default", false),
    ("maximum", true),
    ("exclusiveMaximum", true),
    ("minimum", true),
    ("exclusiveMinimum", true),
    ("maxLength", true),
    ("minLength", true),
    ("pattern", true),
    ("maxItems", true),
    ("minItems", true),
    ("uniqueItems", true),
    ("multipleOf", true),
    ("enum", false),
    ("maxProperties", false),
    ("minProperties", false),
    ("required", true),
    ("items", true),
    ("allOf", false),
    ("oneOf", false),
    ("anyOf", false),
    ("not", false),
    ("properties", true),
    ("additionalProperties", false),
    ("patternProperties", false),
    ("dependencies", false),
    ("additionalItems", false),
    ("definitions", false),
    ("externalDocs", true),
    ("example", true),
    ("nullable", false),
    ("x-kubernetes-preserve-unknown-fields", true),
    ("x-kubernetes-embedded-resource", false),
    ("x-kubernetes-int-or-string", false),
    ("x-kubernetes-list-map-keys", false),
    ("x-kubernetes-list-type", false),
    ("x-kubernetes-map-type", false),
    ("x-kubernetes-validations", true),
];

fn st(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
}

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    Some(cur)
}

/// Applies the apiextensions.k8s.io/v1 defaults kube-apiserver sets on a
/// CRD when decoding it: `names.singular` (lowercased kind),
/// `names.listKind` (`<Kind>List`), `conversion.strategy: None`, and port
/// 443 for a conversion webhook service.
pub fn default_crd(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = st(names.get("kind")).to_string();
        if st(names.get("singular")).is_empty() {
            names.insert("singular".into(), Value::String(kind.to_lowercase()));
        }
        if st(names.get("listKind")).is_empty() && !kind.is_empty() {
            names.insert("listKind".into(), Value::String(format!("{kind}List")));
        }
    }
    let conversion = spec
        .entry("conversion")
        .or_insert_with(|| json!({"strategy": "None"}));
    if let Some(svc) = conversion
        .pointer_mut("/webhook/clientConfig/service")
        .and_then(Value::as_object_mut)
    {
        svc.entry("port").or_insert(json!(443));
    }
}

/// The v1 CRD, converted to the shape apiextensions validates.
struct View<'a> {
    crd: &'a Value,
    spec: &'a Value,
    versions: Vec<&'a Value>,
    /// The top-level (folded) schema, when all versions share one.
    validation: Option<Option<&'a Value>>,
    subresources: Option<Option<&'a Value>>,
    columns: Option<Option<&'a Value>>,
    selectable: Option<Option<&'a Value>>,
}

fn identical<'a>(versions: &[&'a Value], key: &str) -> Option<Option<&'a Value>> {
    let first = versions.first()?.get(key);
    let non_empty = |v: Option<&'a Value>| v.filter(|x| !x.is_null());
    versions
        .iter()
        .all(|v| non_empty(v.get(key)) == non_empty(first))
        .then(|| non_empty(first))
}

impl<'a> View<'a> {
    fn new(crd: &'a Value) -> View<'a> {
        static EMPTY: Value = Value::Null;
        let spec = crd.get("spec").unwrap_or(&EMPTY);
        let versions: Vec<&Value> = spec
            .get("versions")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let validation = identical(&versions, "schema");
        let subresources = identical(&versions, "subresources");
        let columns = identical(&versions, "additionalPrinterColumns");
        let selectable = if validation.is_some() {
            identical(&versions, "selectableFields")
        } else {
            None
        };
        View {
            crd,
            spec,
            versions,
            validation,
            subresources,
            columns,
            selectable,
        }
    }

    fn top_schema(&self) -> Option<&'a Value> {
        self.validation
            .flatten()
            .and_then(|s| s.get("openAPIV3Schema"))
    }

    fn version_schema(&self, v: &'a Value) -> Option<&'a Value> {
        match self.validation {
            Some(folded) => folded.and_then(|s| s.get("openAPIV3Schema")),
            None => v.get("schema").and_then(|s| s.get("openAPIV3Schema")),
        }
    }

    fn all_schemas(&self) -> Vec<&'a Value> {
        self.versions
            .iter()
            .filter_map(|v| self.version_schema(v))
            .filter(|s| !s.is_null())
            .collect()
    }

    fn version_subresources(&self, v: &'a Value) -> Option<&'a Value> {
        match self.subresources {
            Some(folded) => folded,
            None => v.get("subresources").filter(|s| !s.is_null()),
        }
    }

    /// The internal `[]CustomResourceDefinitionVersion` as Go's
    /// `json.Marshal` renders it in an `Invalid value` (no JSON tags).
    fn internal_versions(&self) -> Value {
        Value::Array(
            self.versions
                .iter()
                .map(|v| {
                    let per = |folded: Option<Option<&Value>>, key: &str| -> Value {
                        match folded {
                            Some(_) => Value::Null,
                            None => v.get(key).cloned().unwrap_or(Value::Null),
                        }
                    };
                    json!({
                        "Name": st(v.get("name")),
                        "Served": v.get("served").and_then(Value::as_bool).unwrap_or(false),
                        "Storage": v.get("storage").and_then(Value::as_bool).unwrap_or(false),
                        "Deprecated": v.get("deprecated").and_then(Value::as_bool).unwrap_or(false),
                        "DeprecationWarning": v.get("deprecationWarning").cloned().unwrap_or(Value::Null),
                        "Schema": per(self.validation, "schema"),
                        "Subresources": per(self.subresources, "subresources"),
                        "AdditionalPrinterColumns": per(self.columns, "additionalPrinterColumns"),
                        "SelectableFields": per(self.selectable, "selectableFields"),
                    })
                })
                .collect(),
        )
    }
}

/// The options apiextensions derives from the old object on update
/// (validation is never tightened on data that is already persisted).
struct Options {
    schema: SchemaOptions,
    require_open_api_schema: bool,
    require_structural: bool,
    require_pruned_defaults: bool,
    require_immutable_names: bool,
    require_recognized_conversion_review_version: bool,
}

/// Validates a CRD (`apiextensions.k8s.io/v1`, as JSON) the way
/// kube-apiserver does on create (`old == None`) and update.
///
/// The v1 defaults ([`default_crd`]) are applied to a copy first, as the
/// decoder would. `status.storedVersions` is the server's business and is
/// not checked here; `metadata` is checked for the name rule only.
pub fn validate_crd(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut new = new.clone();
    default_crd(&mut new);
    let old = old.map(|o| {
        let mut o = o.clone();
        default_crd(&mut o);
        o
    });
    let view = View::new(&new);
    let old_view = old.as_ref().map(View::new);
    let opts = options(&view, old_view.as_ref());

    let mut errs = Vec::new();
    validate_name(&view, &mut errs);
    validate_spec(&view, &opts, &mut errs);
    if let Some(accepted) = at(&new, &["status", "acceptedNames"]) {
        validate_names(
            accepted,
            &Path::new("status").child("acceptedNames"),
            &mut errs,
        );
    }
    if let Some(ov) = &old_view {
        validate_spec_update(&view, ov, &opts, &mut errs);
    }
    validate_api_approval(&view, old_view.as_ref(), &mut errs);
    validate_preserve_unknown_fields(&view, old_view.as_ref(), &mut errs);
    errs
}

fn options(view: &View<'_>, old: Option<&View<'_>>) -> Options {
    let mut o = Options {
        schema: SchemaOptions::default(),
        require_open_api_schema: true,
        require_structural: true,
        require_pruned_defaults: true,
        require_immutable_names: false,
        require_recognized_conversion_review_version: true,
    };
    let Some(old) = old else { return o };
    let old_schemas = old.all_schemas();
    o.require_open_api_schema = old.versions.iter().all(|v| old.version_schema(v).is_some());
    o.schema.require_valid_property_type = !old_schemas.iter().any(|s| {
        schema_has(s, &|m| {
            let t = m.get("type").and_then(Value::as_str).unwrap_or("");
            !t.is_empty()
                && !["array", "boolean", "integer", "number", "object", "string"].contains(&t)
        })
    });
    o.schema.require_atomic_set_type = !old_schemas
        .iter()
        .any(|s| schema_has(s, &has_non_atomic_set_type));
    o.schema.require_map_list_keys_map_set_validation = !old_schemas
        .iter()
        .any(|s| schema_has(s, &|m| !map_list_keys_map_set(m, &Path::root()).is_empty()));
    o.require_structural = !old_schemas
        .iter()
        .any(|s| !validate_structural(s, &Path::root()).is_empty());
    o.require_pruned_defaults = !old_schemas.iter().any(|s| has_unpruned_defaults(s));
    o.require_immutable_names = is_established(old.crd);
    o.require_recognized_conversion_review_version = match at(
        old.spec,
        &["conversion", "webhook", "conversionReviewVersions"],
    )
    .and_then(Value::as_array)
    {
        None => true,
        Some(a) if a.is_empty() => true,
        Some(a) => a
            .iter()
            .any(|v| matches!(v.as_str(), Some("v1") | Some("v1beta1"))),
    };
    let _ = view;
    o
}

fn has_non_atomic_set_type(m: &Map<String, Value>) -> bool {
    if m.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("set") {
        return false;
    }
    let Some(is) = m.get("items").and_then(Value::as_object) else {
        return false;
    };
    match is.get("type").and_then(Value::as_str) {
        Some("array") => is
            .get("x-kubernetes-list-type")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "atomic"),
        Some("object") => is.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic"),
        _ => false,
    }
}

fn has_unpruned_defaults(schema: &Value) -> bool {
    if !schema_has(schema, &|m| m.get("default").is_some_and(|d| !d.is_null())) {
        return false;
    }
    if !validate_structural(schema, &Path::root()).is_empty() {
        return false;
    }
    let errs = validate_defaults(schema, &Path::root(), true);
    errs.iter()
        .any(|e| e.message.ends_with("must not have unknown fields"))
}

fn is_established(crd: &Value) -> bool {
    at(crd, &["status", "conditions"])
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| st(c.get("type")) == "Established" && st(c.get("status")) == "True")
        })
}

fn validate_name(view: &View<'_>, errs: &mut Vec<FieldError>) {
    let name = st(at(view.crd, &["metadata", "name"]));
    let path = Path::new("metadata").child("name");
    if name.is_empty() {
        errs.push(FieldError::required(
            path.as_str(),
            "name or generateName is required",
        ));
        return;
    }
    let mut msgs = names::is_dns1123_subdomain(name);
    let required = format!(
        "{}.{}",
        st(at(view.spec, &["names", "plural"])),
        st(view.spec.get("group"))
    );
    if name != required {
        msgs.push("must be spec.names.plural+\".\"+spec.group".to_string());
    }
    for m in msgs {
        errs.push(FieldError::invalid_str(path.as_str(), name, &m));
    }
}

/// `ValidateCustomResourceDefinitionSpec`: the group and scope, which
/// schemas must be structural and present, the versions, the names, the
/// per-version parts (validation, subresources, columns, selectable
/// fields) and conversion.
fn validate_spec(view: &View<'_>, opts: &Options, errs: &mut Vec<FieldError>) {
    let spec = view.spec;
    let p = Path::new("spec");
    validate_group(st(spec.get("group")), &p, errs);
    enum_strings(
        &p.child("scope"),
        st(spec.get("scope")),
        &["Cluster", "Namespaced"],
        errs,
    );

    let preserve_unknown = spec
        .get("preserveUnknownFields")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let has_defaults = view
        .all_schemas()
        .iter()
        .any(|s| schema_has(s, &|m| m.get("default").is_some_and(|d| !d.is_null())));
    let require_structural =
        opts.require_structural || !preserve_unknown || has_defaults || uses_extensions(view);
    if view.top_schema().is_none() {
        validate_schemas_present(view, opts, preserve_unknown, &p, errs);
    }
    if has_defaults && preserve_unknown {
        errs.push(FieldError::invalid(
            p.child("preserveUnknownFields").as_str(),
            &Value::Bool(true),
            "must be false in order to use defaults in the schema",
        ));
    }
    validate_versions(view, opts, require_structural, &p, errs);
    let names_path = p.child("names");
    for k in ["plural", "singular", "kind", "listKind"] {
        if st(at(spec, &["names", k])).is_empty() {
            errs.push(FieldError::required(names_path.child(k).as_str(), ""));
        }
    }
    static EMPTY_NAMES: Value = Value::Null;
    validate_names(spec.get("names").unwrap_or(&EMPTY_NAMES), &names_path, errs);
    validate_version_parts(view, opts, require_structural, &p, errs);
    let strategy = st(at(spec, &["conversion", "strategy"]));
    if !strategy.is_empty() && strategy != "None" && preserve_unknown {
        errs.push(FieldError::invalid_str(
            p.child("conversion").child("strategy").as_str(),
            strategy,
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    if let Some(conv) = spec.get("conversion").filter(|c| !c.is_null()) {
        validate_conversion(
            conv,
            opts.require_recognized_conversion_review_version,
            &p.child("conversion"),
            errs,
        );
    }
}

/// `spec.group`: a DNS subdomain with at least one dot.
fn validate_group(group: &str, p: &Path, errs: &mut Vec<FieldError>) {
    if group.is_empty() {
        errs.push(FieldError::required(p.child("group").as_str(), ""));
    } else {
        let e = names::is_dns1123_subdomain(group);
        if !e.is_empty() {
            errs.push(FieldError::invalid_str(
                p.child("group").as_str(),
                group,
                &e.join(","),
            ));
        } else if group.split('.').count() < 2 {
            errs.push(FieldError::invalid_str(
                p.child("group").as_str(),
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
}

/// Whether any schema uses a Kubernetes extension (`x-kubernetes-*`),
/// which requires structural schemas.
fn uses_extensions(view: &View<'_>) -> bool {
    view.all_schemas().iter().any(|s| {
        schema_has(s, &|m| {
            m.get("x-kubernetes-embedded-resource")
                .and_then(Value::as_bool)
                == Some(true)
                || m.contains_key("x-kubernetes-preserve-unknown-fields")
                || m.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true)
                || m.get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty())
                || m.contains_key("x-kubernetes-list-type")
                || m.get("x-kubernetes-validations")
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty())
        })
    })
}

/// With no top-level schema, each version's schema is required (or, for
/// a served version, needed since otherwise every field is pruned).
fn validate_schemas_present(
    view: &View<'_>,
    opts: &Options,
    preserve_unknown: bool,
    p: &Path,
    errs: &mut Vec<FieldError>,
) {
    for (i, v) in view.versions.iter().enumerate() {
        let has_schema = v
            .get("schema")
            .and_then(|s| s.get("openAPIV3Schema"))
            .is_some_and(|s| !s.is_null());
        let sp = p
            .child("versions")
            .index(i)
            .child("schema")
            .child("openAPIV3Schema");
        if opts.require_open_api_schema {
            if !has_schema {
                errs.push(FieldError::required(sp.as_str(), ""));
            }
        } else if !preserve_unknown
            && v.get("served").and_then(Value::as_bool) == Some(true)
            && !has_schema
        {
            errs.push(FieldError::required(
                sp.as_str(),
                "because otherwise all fields are pruned",
            ));
        }
    }
}

/// `spec.versions`: names unique DNS labels, exactly one storage version,
/// each version valid; the internal `spec.version` a DNS label.
fn validate_versions(
    view: &View<'_>,
    opts: &Options,
    require_structural: bool,
    p: &Path,
    errs: &mut Vec<FieldError>,
) {
    let mut storage = 0;
    let mut seen = std::collections::HashSet::new();
    let mut unique = true;
    for (i, v) in view.versions.iter().enumerate() {
        let vp = p.child("versions").index(i);
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage += 1;
        }
        let name = st(v.get("name"));
        if !seen.insert(name) {
            unique = false;
        }
        let e = names::is_dns1035_label(name);
        if !e.is_empty() {
            errs.push(FieldError::invalid_str(
                vp.child("name").as_str(),
                name,
                &e.join(","),
            ));
        }
        validate_version(view, v, &vp, opts, require_structural, errs);
    }
    if !unique {
        errs.push(FieldError::invalid(
            p.child("versions").as_str(),
            &view.internal_versions(),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            p.child("versions").as_str(),
            &view.internal_versions(),
            "must have exactly one version marked as storage version",
        ));
    }
    // The internal `spec.version` is `versions[0].name`.
    if let Some(first) = view.versions.first() {
        let version = st(first.get("name"));
        if !version.is_empty() {
            let e = names::is_dns1035_label(version);
            if !e.is_empty() {
                errs.push(FieldError::invalid_str(
                    p.child("version").as_str(),
                    version,
                    &e.join(","),
                ));
            }
        }
    }
}

/// The top-level validation, subresources, printer columns and selectable
/// fields.
fn validate_version_parts(
    view: &View<'_>,
    opts: &Options,
    require_structural: bool,
    p: &Path,
    errs: &mut Vec<FieldError>,
) {
    let any_status = view.versions.iter().any(|v| {
        view.version_subresources(v)
            .and_then(|s| s.get("status"))
            .is_some_and(|s| !s.is_null())
    });
    if let Some(Some(validation)) = view.validation {
        validate_validation(
            validation,
            any_status,
            opts,
            require_structural,
            &p.child("validation"),
            errs,
        );
    }
    if let Some(Some(sub)) = view.subresources {
        validate_subresources(sub, &p.child("subresources"), errs);
    }
    if let Some(Some(cols)) = view.columns {
        validate_columns(cols, &p.child("additionalPrinterColumns"), errs);
    }
    if let Some(Some(sel)) = view.selectable {
        match view.top_schema() {
            None => errs.push(FieldError::invalid_str(
                p.child("selectableFields").as_str(),
                "",
                "may only be set when validations.schema is included",
            )),
            Some(schema) => {
                validate_selectable_fields(sel, schema, &p.child("selectableFields"), errs)
            }
        }
    }
}

fn enum_strings(path: &Path, value: &str, accepted: &[&str], errs: &mut Vec<FieldError>) {
    if value.is_empty() {
        errs.push(FieldError::required(path.as_str(), ""));
    } else if !accepted.contains(&value) {
        errs.push(FieldError::not_supported_str(
            path.as_str(),
            value,
            accepted,
        ));
    }
}

/// `ValidateCustomResourceDefinitionNames`.
fn validate_names(names_v: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let get = |k: &str| st(names_v.get(k));
    for k in ["plural", "singular"] {
        let v = get(k);
        let e = names::is_dns1035_label(v);
        if !v.is_empty() && !e.is_empty() {
            errs.push(FieldError::invalid_str(
                path.child(k).as_str(),
                v,
                &e.join(","),
            ));
        }
    }
    for k in ["kind", "listKind"] {
        let v = get(k);
        let e = names::is_dns1035_label(&v.to_lowercase());
        if !v.is_empty() && !e.is_empty() {
            errs.push(FieldError::invalid_str(
                path.child(k).as_str(),
                v,
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    e.join(",")
                ),
            ));
        }
    }
    if let Some(shorts) = names_v.get("shortNames").and_then(Value::as_array) {
        for (i, s) in shorts.iter().enumerate() {
            let v = st(Some(s));
            let e = names::is_dns1035_label(v);
            if !e.is_empty() {
                errs.push(FieldError::invalid_str(
                    path.child("shortNames").index(i).as_str(),
                    v,
                    &e.join(","),
                ));
            }
        }
    }
    let kind = get("kind");
    if !kind.is_empty() && kind == get("listKind") {
        errs.push(FieldError::invalid_str(
            path.child("listKind").as_str(),
            kind,
            "kind and listKind may not be the same",
        ));
    }
    if let Some(cats) = names_v.get("categories").and_then(Value::as_array) {
        for (i, c) in cats.iter().enumerate() {
            let v = st(Some(c));
            let e = names::is_dns1035_label(v);
            if !e.is_empty() {
                errs.push(FieldError::invalid_str(
                    path.child("categories").index(i).as_str(),
                    v,
                    &e.join(","),
                ));
            }
        }
    }
}

fn validate_version(
    view: &View<'_>,
    v: &Value,
    path: &Path,
    opts: &Options,
    require_structural: bool,
    errs: &mut Vec<FieldError>,
) {
    let deprecated = v
        .get("deprecated")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Some(w) = v.get("deprecationWarning").filter(|w| !w.is_null()) {
        let ws = st(Some(w));
        let wp = path.child("deprecationWarning");
        if !deprecated {
            errs.push(FieldError::invalid_str(
                wp.as_str(),
                ws,
                "can only be set for deprecated versions",
            ));
        } else {
            if ws.len() > 256 {
                errs.push(FieldError::invalid_str(
                    wp.as_str(),
                    ws,
                    "must be <= 256 characters long",
                ));
            }
            if ws.is_empty() {
                errs.push(FieldError::invalid_str(
                    wp.as_str(),
                    ws,
                    "must not be an empty string",
                ));
            }
            if let Some((i, _)) = ws.char_indices().find(|(_, c)| c.is_control()) {
                errs.push(FieldError::invalid_str(
                    wp.as_str(),
                    ws,
                    &format!("must only contain printable UTF-8 characters; non-printable character found at index {i}"),
                ));
            }
        }
    }
    let status_enabled = view
        .version_subresources(v)
        .and_then(|s| s.get("status"))
        .is_some_and(|s| !s.is_null());
    if view.validation.is_none() {
        if let Some(schema) = v.get("schema").filter(|s| !s.is_null()) {
            validate_validation(
                schema,
                status_enabled,
                opts,
                require_structural,
                &path.child("schema"),
                errs,
            );
        }
    }
    if view.subresources.is_none() {
        if let Some(sub) = v.get("subresources").filter(|s| !s.is_null()) {
            validate_subresources(sub, &path.child("subresources"), errs);
        }
    }
    if view.columns.is_none() {
        if let Some(cols) = v.get("additionalPrinterColumns") {
            validate_columns(cols, &path.child("additionalPrinterColumns"), errs);
        }
    }
    if view.selectable.is_none() {
        if let Some(sel) = v
            .get("selectableFields")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
        {
            match v
                .get("schema")
                .and_then(|s| s.get("openAPIV3Schema"))
                .filter(|s| !s.is_null())
            {
                None => errs.push(FieldError::invalid_str(
                    path.child("selectableFields").as_str(),
                    "",
                    "may only be set when `version.schema.openAPIV3Schema` is not included",
                )),
                Some(schema) => validate_selectable_fields(
                    &Value::Array(sel.clone()),
                    schema,
                    &path.child("selectableFields"),
                    errs,
                ),
            }
        }
    }
}

/// `validateCustomResourceDefinitionValidation` for a `CustomResourceValidation`
/// (`{openAPIV3Schema: ...}`) at `path`.
fn validate_validation(
    validation: &Value,
    status_enabled: bool,
    opts: &Options,
    require_structural: bool,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let Some(schema) = validation.get("openAPIV3Schema").filter(|s| !s.is_null()) else {
        return;
    };
    let before = errs.len();
    let sp = path.child("openAPIV3Schema");
    let m = schema.as_object().cloned().unwrap_or_default();
    if status_enabled {
        for (k, allowed) in ROOT_FIELDS {
            let Some(val) = m.get(*k) else { continue };
            if is_go_zero(val) {
                continue;
            }
            if *k == "type" {
                let t = st(Some(val));
                if t != "object" {
                    errs.push(FieldError::invalid_str(
                        path.child("openAPIV3Schema.type").as_str(),
                        t,
                        "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                    ));
                    break;
                }
                continue;
            }
            if !allowed {
                errs.push(FieldError::invalid(
                    sp.as_str(),
                    schema,
                    &format!(
                        "only {ALLOWED_AT_ROOT_WITH_STATUS} fields are allowed at the root of the schema if the status subresource is enabled"
                    ),
                ));
                break;
            }
        }
    }
    if m.get("nullable").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::forbidden(
            path.child("openAPIV3Schema.nullable").as_str(),
            "nullable cannot be true at the root",
        ));
    }
    if require_structural {
        let structural = validate_structural(schema, &sp);
        if !structural.is_empty() {
            errs.extend(structural);
        } else {
            errs.extend(validate_defaults(schema, &sp, opts.require_pruned_defaults));
        }
    }
    let schema_errs = validate_openapi_schema(schema, &sp, &opts.schema);
    // Rules are only compiled once the schema itself is sound.
    let compile = errs.len() == before && schema_errs.is_empty();
    errs.extend(schema_errs);
    if compile {
        errs.extend(super::cel::compile_errors(schema, &sp));
    }
}

/// `structuraldefaulting.ValidateDefaults`: every default must validate
/// against its schema and (when required) be pruned already.
pub(crate) fn validate_defaults(
    schema: &Value,
    path: &Path,
    require_pruned: bool,
) -> Vec<FieldError> {
    let mut root = Node::parse(schema);
    root.embedded_resource = true;
    let mut errs = Vec::new();
    defaults_at(&root, path, false, require_pruned, &mut errs);
    errs
}

fn defaults_at(
    s: &Node,
    path: &Path,
    inside_meta: bool,
    require_pruned: bool,
    errs: &mut Vec<FieldError>,
) {
    let inside_meta = inside_meta && !s.embedded_resource;
    if let Some(d) = &s.default {
        let dp = path.child("default");
        let validator = Validator::new(Some(&dp));
        let mut value_errs = Vec::new();
        if inside_meta {
            validator.validate(s, d, "", &mut value_errs);
            errs.extend(value_errs);
        } else {
            if require_pruned {
                let mut pruned = d.clone();
                prune(&mut pruned, s, s.embedded_resource, false);
                if &pruned != d {
                    errs.push(FieldError::invalid(
                        dp.as_str(),
                        d,
                        "must not have unknown fields",
                    ));
                }
            }
            let mut meta_errs = Vec::new();
            validate_embedded(&dp, d, s, &mut meta_errs);
            if !meta_errs.is_empty() {
                errs.extend(meta_errs);
            } else {
                validator.validate(s, d, "", &mut value_errs);
                errs.extend(value_errs);
            }
        }
    }
    if let Some(items) = &s.items {
        defaults_at(
            items,
            &path.child("items"),
            inside_meta,
            require_pruned,
            errs,
        );
    }
    for (k, prop) in &s.properties {
        let sub_meta = inside_meta
            || (s.embedded_resource && ["metadata", "apiVersion", "kind"].contains(&k.as_str()));
        defaults_at(
            prop,
            &path.child("properties").key(k),
            sub_meta,
            require_pruned,
            errs,
        );
    }
}

fn simple_json_path(s: &str, path: &Path) -> Option<FieldError> {
    if s.is_empty() {
        Some(FieldError::invalid_str(
            path.as_str(),
            s,
            "must not be empty",
        ))
    } else if !s.starts_with('.') {
        Some(FieldError::invalid_str(
            path.as_str(),
            s,
            "must be a simple json path starting with .",
        ))
    } else {
        None
    }
}

fn validate_subresources(sub: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(scale) = sub.get("scale").filter(|s| !s.is_null()) else {
        return;
    };
    for (key, prefix, under) in [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let v = st(scale.get(key));
        let fp = path.child(&format!("scale.{key}"));
        if v.is_empty() {
            errs.push(FieldError::required(fp.as_str(), ""));
        } else if let Some(e) = simple_json_path(v, &fp) {
            errs.push(e);
        } else if !v.starts_with(prefix) {
            errs.push(FieldError::invalid_str(fp.as_str(), v, under));
        }
    }
    let sel = st(scale.get("labelSelectorPath"));
    if !sel.is_empty() {
        let fp = path.child("scale.labelSelectorPath");
        if let Some(e) = simple_json_path(sel, &fp) {
            errs.push(e);
        } else if !sel.starts_with(".spec.") && !sel.starts_with(".status.") {
            errs.push(FieldError::invalid_str(
                fp.as_str(),
                sel,
                "should be a json path under either .spec or .status",
            ));
        }
    }
}

fn validate_columns(cols: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(list) = cols.as_array() else { return };
    for (i, col) in list.iter().enumerate() {
        let cp = path.index(i);
        if st(col.get("name")).is_empty() {
            errs.push(FieldError::required(cp.child("name").as_str(), ""));
        }
        let t = st(col.get("type"));
        let types_msg = format!("must be one of {PRINTER_COLUMN_TYPES}");
        if t.is_empty() {
            errs.push(FieldError::required(cp.child("type").as_str(), &types_msg));
        } else if !PRINTER_COLUMN_TYPE_LIST.contains(&t) {
            errs.push(FieldError::invalid_str(
                cp.child("type").as_str(),
                t,
                &types_msg,
            ));
        }
        let f = st(col.get("format"));
        if !f.is_empty() && !PRINTER_COLUMN_FORMAT_LIST.contains(&f) {
            errs.push(FieldError::invalid_str(
                cp.child("format").as_str(),
                f,
                &format!("must be one of {PRINTER_COLUMN_FORMATS}"),
            ));
        }
        let jp = st(col.get("jsonPath"));
        let jpp = cp.child("JSONPath");
        if jp.is_empty() {
            errs.push(FieldError::required(jpp.as_str(), ""));
        } else if let Some(e) = simple_json_path(jp, &jpp) {
            errs.push(e);
        }
    }
}

/// Resolves a selectable field path (`.spec.color`, no array notation) in a
/// schema; the error text stands in for cel.ValidFieldPath's.
fn resolve_field_path<'a>(
    jsonpath: &str,
    schema: &'a Value,
) -> Result<(Vec<String>, &'a Value), String> {
    let Some(rest) = jsonpath.strip_prefix('.') else {
        return Err(format!("expected [ or . at index 0 of {jsonpath:?}"));
    };
    let mut cur = schema;
    let mut segs = Vec::new();
    for seg in rest.split('.') {
        if seg.is_empty() || seg.contains('[') || seg.contains(']') {
            return Err(format!("invalid field path segment {seg:?}"));
        }
        let next = cur
            .get("properties")
            .and_then(|p| p.get(seg))
            .or_else(|| cur.get("additionalProperties").filter(|a| a.is_object()));
        match next {
            Some(n) => cur = n,
            None => return Err(format!("does not refer to a valid field: {seg:?}")),
        }
        segs.push(seg.to_string());
    }
    Ok((segs, cur))
}

fn validate_selectable_fields(
    sel: &Value,
    schema: &Value,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let Some(list) = sel.as_array() else { return };
    let mut unique = std::collections::BTreeSet::new();
    for (i, f) in list.iter().enumerate() {
        let ip = path.index(i).child("jsonPath");
        let jp = st(f.get("jsonPath"));
        if jp.is_empty() {
            errs.push(FieldError::required(ip.as_str(), ""));
            continue;
        }
        match resolve_field_path(jp, schema) {
            Err(e) => {
                errs.push(FieldError::invalid_str(
                    ip.as_str(),
                    jp,
                    &format!("is an invalid path: {e}"),
                ));
                continue;
            }
            Ok((segs, found)) => {
                if segs.first().map(String::as_str) == Some("metadata") {
                    errs.push(FieldError::invalid_str(
                        ip.as_str(),
                        jp,
                        "must not point to fields in metadata",
                    ));
                }
                if !matches!(st(found.get("type")), "string" | "boolean" | "integer") {
                    errs.push(FieldError::invalid_str(
                        ip.as_str(),
                        jp,
                        "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
                    ));
                }
                let key = segs.join(".");
                if !unique.insert(key) {
                    errs.push(FieldError::duplicate(
                        ip.as_str(),
                        &Value::String(jp.to_string()),
                    ));
                }
            }
        }
    }
    let n = unique.len() as i64;
    if n > MAX_SELECTABLE_FIELDS {
        errs.push(FieldError::too_many(
            path.as_str(),
            n,
            MAX_SELECTABLE_FIELDS,
        ));
    }
}

fn validate_conversion(
    conv: &Value,
    require_recognized: bool,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let strategy = st(conv.get("strategy"));
    enum_strings(
        &path.child("strategy"),
        strategy,
        &["None", "Webhook"],
        errs,
    );
    let webhook = conv.get("webhook").filter(|w| !w.is_null());
    let client_config = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|c| !c.is_null());
    let review_versions = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array);
    let cc_path = path.child("webhookClientConfig");
    if strategy == "Webhook" {
        match client_config {
            None => errs.push(FieldError::required(
                cc_path.as_str(),
                "required when strategy is set to Webhook",
            )),
            Some(cc) => {
                let url = cc.get("url").and_then(Value::as_str);
                let service = cc.get("service").filter(|s| !s.is_null());
                match (url, service) {
                    (Some(u), None) => validate_webhook_url(u, &cc_path.child("url"), errs),
                    (None, Some(s)) => validate_webhook_service(s, &cc_path.child("service"), errs),
                    _ => errs.push(FieldError::required(
                        cc_path.as_str(),
                        "exactly one of url or service is required",
                    )),
                }
            }
        }
        let rp = path.child("conversionReviewVersions");
        match review_versions {
            None => errs.push(FieldError::required(rp.as_str(), "")),
            Some(a) if a.is_empty() => errs.push(FieldError::required(rp.as_str(), "")),
            Some(a) => {
                let mut seen = std::collections::HashSet::new();
                let mut accepted = false;
                for (i, v) in a.iter().enumerate() {
                    let s = st(Some(v));
                    if !seen.insert(s) {
                        errs.push(FieldError::invalid_str(
                            rp.index(i).as_str(),
                            s,
                            "duplicate version",
                        ));
                        continue;
                    }
                    for e in names::is_dns1035_label(s) {
                        errs.push(FieldError::invalid_str(rp.index(i).as_str(), s, &e));
                    }
                    if s == "v1" || s == "v1beta1" {
                        accepted = true;
                    }
                }
                if require_recognized && !accepted {
                    errs.push(FieldError::invalid(
                        rp.as_str(),
                        &Value::Array(a.clone()),
                        "must include at least one of v1, v1beta1",
                    ));
                }
            }
        }
    } else {
        if client_config.is_some() {
            errs.push(FieldError::forbidden(
                cc_path.as_str(),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if review_versions.is_some_and(|a| !a.is_empty()) {
            errs.push(FieldError::forbidden(
                path.child("conversionReviewVersions").as_str(),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
}

/// `webhook.ValidateWebhookURL(path, url, forceHttps=true)`.
fn validate_webhook_url(u: &str, path: &Path, errs: &mut Vec<FieldError>) {
    let Some((scheme, rest)) = u.split_once("://") else {
        errs.push(FieldError::invalid_str(
            path.as_str(),
            u,
            "'https' is the only allowed URL scheme",
        ));
        return;
    };
    if scheme != "https" {
        errs.push(FieldError::invalid_str(
            path.as_str(),
            u,
            "'https' is the only allowed URL scheme",
        ));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() {
        errs.push(FieldError::invalid_str(
            path.as_str(),
            u,
            "host must be specified",
        ));
    }
    if authority.contains('@') {
        errs.push(FieldError::invalid_str(
            path.as_str(),
            u,
            "user information is not permitted in the URL",
        ));
    }
    if rest.contains('#') {
        errs.push(FieldError::invalid_str(
            path.as_str(),
            u,
            "fragments are not permitted in the URL",
        ));
    }
    if rest.contains('?') {
        errs.push(FieldError::invalid_str(
            path.as_str(),
            u,
            "query parameters are not permitted in the URL",
        ));
    }
}

/// `webhook.ValidateWebhookService`.
fn validate_webhook_service(s: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    if st(s.get("name")).is_empty() {
        errs.push(FieldError::required(
            path.child("name").as_str(),
            "service name is required",
        ));
    }
    if st(s.get("namespace")).is_empty() {
        errs.push(FieldError::required(
            path.child("namespace").as_str(),
            "service namespace is required",
        ));
    }
    if let Some(port) = s.get("port").and_then(Value::as_i64) {
        if !(1..=65535).contains(&port) {
            errs.push(FieldError::invalid(
                path.child("port").as_str(),
                &Value::from(port),
                "port is not valid: must be between 1 and 65535, inclusive",
            ));
        }
    }
    let p = st(s.get("path"));
    if !p.is_empty() && !p.starts_with('/') {
        errs.push(FieldError::invalid_str(
            path.child("path").as_str(),
            p,
            "must start with a '/'",
        ));
    }
}

fn validate_spec_update(
    view: &View<'_>,
    old: &View<'_>,
    opts: &Options,
    errs: &mut Vec<FieldError>,
) {
    let p = Path::new("spec");
    let mut immutable = |path: Path, new: &str, old: &str| {
        if new != old {
            errs.push(FieldError::invalid_str(
                path.as_str(),
                new,
                "field is immutable",
            ));
        }
    };
    if opts.require_immutable_names {
        immutable(
            p.child("scope"),
            st(view.spec.get("scope")),
            st(old.spec.get("scope")),
        );
        immutable(
            p.child("names").child("kind"),
            st(at(view.spec, &["names", "kind"])),
            st(at(old.spec, &["names", "kind"])),
        );
    }
    immutable(
        p.child("group"),
        st(view.spec.get("group")),
        st(old.spec.get("group")),
    );
    immutable(
        p.child("names").child("plural"),
        st(at(view.spec, &["names", "plural"])),
        st(at(old.spec, &["names", "plural"])),
    );
}

fn validate_api_approval(view: &View<'_>, old: Option<&View<'_>>, errs: &mut Vec<FieldError>) {
    let group = st(view.spec.get("group"));
    let protected = group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io");
    if !protected {
        return;
    }
    #[derive(PartialEq)]
    enum State {
        Missing,
        Invalid,
        Approved,
    }
    let state = |crd: &Value| -> (State, Option<String>) {
        match at(crd, &["metadata", "annotations", API_APPROVAL_ANNOTATION]).and_then(Value::as_str)
        {
            None => (State::Missing, None),
            Some(a) if a.starts_with("unapproved") => (State::Approved, Some(a.to_string())),
            Some(a) => {
                let is_uri = a.starts_with('/')
                    || a.split_once(':').is_some_and(|(s, _)| {
                        !s.is_empty()
                            && s.chars()
                                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                    });
                if is_uri && !a.contains(' ') {
                    (State::Approved, Some(a.to_string()))
                } else {
                    (State::Invalid, Some(a.to_string()))
                }
            }
        }
    };
    let (new_state, value) = state(view.crd);
    if let Some(o) = old {
        let (old_state, _) = state(o.crd);
        if old_state == new_state {
            return;
        }
    }
    let path = Path::new("metadata")
        .child("annotations")
        .key(API_APPROVAL_ANNOTATION);
    match new_state {
        State::Approved => {}
        State::Missing => errs.push(FieldError::required(
            path.as_str(),
            &format!("protected groups must have approval annotation \"{API_APPROVAL_ANNOTATION}\", see https://github.com/kubernetes/enhancements/pull/1111"),
        )),
        State::Invalid => errs.push(FieldError::invalid_str(
            path.as_str(),
            value.as_deref().unwrap_or(""),
            &format!("protected groups must have approval annotation \"{API_APPROVAL_ANNOTATION}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
        )),
    }
}

fn validate_preserve_unknown_fields(
    view: &View<'_>,
    old: Option<&View<'_>>,
    errs: &mut Vec<FieldError>,
) {
    if old
        .is_some_and(|o| o.spec.get("preserveUnknownFields").and_then(Value::as_bool) == Some(true))
    {
        return;
    }
    if view
        .spec
        .get("preserveUnknownFields")
        .and_then(Value::as_bool)
        == Some(true)
    {
        errs.push(FieldError::invalid(
            Path::new("spec").child("preserveUnknownFields").as_str(),
            &Value::Bool(true),
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
}
