//! Derive macros for kubeforge. Generated code names only `::kubeforge::...`
//! paths, so a user's crate depends on `kubeforge` and `serde` alone.
//!
//! - [`macro@CustomResource`] turns a `FooSpec` into the `Foo` custom resource.
//! - [`macro@JsonSchema`] is schemars' derive plus `#[crd(...)]` schema markers.

mod crd_opts;
mod markers;
mod schema;
mod util;

use proc_macro::TokenStream;

/// Derives a custom resource from its spec type.
///
/// On `FooSpec` with `#[crd(group = "...", version = "...", kind = "Foo")]`
/// it generates:
///
/// - `struct Foo { metadata: ObjectMeta, spec: FooSpec, status: Option<FooStatus> }`
///   (`status` only with `status = "..."`), serialized with `apiVersion` and
///   `kind`, `status` left out when `None`;
/// - `Foo::new(name, spec)`;
/// - `kube_core::Resource` (scope type `NamespaceResourceScope` or
///   `ClusterResourceScope`), `HasSpec`, `HasStatus`;
/// - `kube_core::CustomResourceExt` (`crd()`, `crd_name()`, `api_resource()`,
///   `shortnames()`) and `kubeforge::crd::CustomResource` (`DESCRIPTOR`,
///   `try_crd()`, which reports a schema the apiserver would refuse as an
///   error naming the field);
/// - `kubeforge::scheme::Registrable`, for `Scheme::register::<Foo>()`;
/// - `JsonSchema` for `Foo` (the whole object's schema).
///
/// The spec (and status) types also derive [`macro@JsonSchema`] — kubeforge's,
/// from `kubeforge::prelude`, which applies the `#[crd(...)]` field markers.
///
/// ```
/// use kubeforge::prelude::*;
///
/// /// A memcached cluster.
/// #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
/// #[crd(group = "cache.example.com", version = "v1alpha1", kind = "Memcached",
///       status = "MemcachedStatus", shortname = "mc",
///       scale(spec = ".spec.size", status = ".status.replicas"),
///       printcolumn(name = "Size", type = integer, json_path = ".spec.size"))]
/// pub struct MemcachedSpec {
///     /// Number of memcached pods.
///     #[crd(minimum = 1, maximum = 10)]
///     pub size: i32,
/// }
///
/// #[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
/// pub struct MemcachedStatus {
///     pub replicas: i32,
/// }
///
/// let mc = Memcached::new("cache", MemcachedSpec { size: 3 });
/// assert_eq!(serde_json::to_value(&mc).unwrap()["apiVersion"], "cache.example.com/v1alpha1");
/// let crd = Memcached::try_crd().unwrap();
/// assert_eq!(crd.metadata.name.as_deref(), Some("memcacheds.cache.example.com"));
/// ```
///
/// # Container options: `#[crd(...)]` on the spec type
///
/// | option | meaning | example |
/// |---|---|---|
/// | `group` (required) | API group, a DNS subdomain with a dot | `group = "cache.example.com"` |
/// | `version` (required) | version, a DNS label | `version = "v1alpha1"` |
/// | `kind` (required) | kind, UpperCamelCase; also the root type's name | `kind = "Memcached"` |
/// | `scope` / `namespaced` / `cluster` | namespaced by default (as kubebuilder) | `scope = "Cluster"` or `cluster` |
/// | `plural`, `singular` | resource names (default: lowercase kind, +s/es/ies) | `plural = "memcachedes"` |
/// | `shortname` / `shortnames` | kubectl short names (repeatable) | `shortname = "mc"`, `shortnames = ["mc", "mcd"]` |
/// | `category` / `categories` | kubectl categories (repeatable) | `category = "all"` |
/// | `status` | the status type; adds the status subresource | `status = "MemcachedStatus"` |
/// | `scale(spec, status, selector)` | the scale subresource (needs `status`) | `scale(spec = ".spec.size", status = ".status.replicas", selector = ".status.selector")` |
/// | `printcolumn(name, type, json_path, description, format, priority)` | a `kubectl get` column (repeatable; see [Printer columns](#printer-columns)); type is integer, number, string, boolean or date | `printcolumn(name = "Age", type = date, json_path = ".metadata.creationTimestamp")` |
/// | `selectable` | a field selector the apiserver accepts (repeatable) | `selectable = ".spec.color"` |
/// | `root_validation` | a CEL rule on the whole object (repeatable) | `root_validation(rule = "self.metadata.name.size() < 20", message = "short names only")` |
/// | `validation` | a CEL rule on the spec (repeatable; see the type markers) | `validation = "self.min <= self.max"` |
/// | `served`, `storage` | version flags (served by default; storage when alone) | `served = false`, `storage` |
/// | `deprecated` | deprecated version, optionally with the warning clients get | `deprecated = "use v1"` |
/// | `label`, `annotation` | labels and annotations on the CRD object (repeatable) | `label("app.kubernetes.io/part-of", "memcached")` |
/// | `root` | the generated type's name (default: the kind) | `root = "MemcachedResource"` |
/// | `derive` | extra derives on the root type | `derive(PartialEq, Default)` or `derive = "PartialEq"` |
/// | `attr` | extra attributes on the root type (repeatable) | `attr(allow(dead_code))` |
/// | `schema` | `"derived"` (default), `"manual"` (with `schema_fn`) or `"disabled"` (no validation, unknown fields kept) | `schema = "manual", schema_fn = "my_schema"` |
/// | `crate` | where generated code finds kubeforge | `crate = "::my_facade::kubeforge"` |
///
/// ```
/// use kubeforge::prelude::*;
///
/// #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
/// #[crd(group = "example.com", version = "v1", kind = "Widget", cluster,
///       plural = "widgets", singular = "widget", shortnames = ["wd"], category = "all",
///       status = "WidgetStatus",
///       scale(spec = ".spec.replicas", status = ".status.replicas", selector = ".status.selector"),
///       printcolumn(name = "Replicas", type = integer, json_path = ".spec.replicas",
///                   description = "desired pods", format = int32, priority = 0),
///       selectable = ".spec.color",
///       root_validation(rule = "self.metadata.name.size() <= 30", message = "name too long"),
///       validation(rule = "self.replicas <= 100", message = "at most 100 replicas"),
///       served = true, storage, deprecated = "example.com/v1 Widget is deprecated",
///       label("app.kubernetes.io/part-of", "widgets"), annotation("example.com/owner", "team-a"),
///       root = "Widget", derive(PartialEq), attr(allow(dead_code)))]
/// pub struct WidgetSpec {
///     pub replicas: i32,
///     pub color: String,
/// }
///
/// #[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
/// pub struct WidgetStatus {
///     pub replicas: i32,
///     pub selector: String,
/// }
///
/// let crd = Widget::try_crd().unwrap();
/// assert_eq!(crd.spec.scope, "Cluster");
/// assert_eq!(crd.spec.versions[0].deprecated, Some(true));
/// ```
///
/// # Printer columns
///
/// Write a column's `type` and `format` as words, the way kubebuilder's
/// `+kubebuilder:printcolumn` marker does:
///
/// ```
/// use kubeforge::prelude::*;
///
/// #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
/// #[crd(group = "cache.example.com", version = "v1alpha1", kind = "Memcached",
///       status = "MemcachedStatus",
///       printcolumn(name = "Size", type = integer, json_path = ".spec.size"),
///       printcolumn(name = "Ready", type = integer, json_path = ".status.readyReplicas"),
///       printcolumn(name = "Seen", type = date, format = date-time, json_path = ".status.seen",
///                   priority = 1))]
/// pub struct MemcachedSpec {
///     pub size: i32,
/// }
///
/// #[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
/// #[serde(rename_all = "camelCase")]
/// pub struct MemcachedStatus {
///     pub ready_replicas: i32,
///     pub seen: Option<String>,
/// }
///
/// let crd = Memcached::try_crd().unwrap();
/// let columns = crd.spec.versions[0].additional_printer_columns.as_ref().unwrap();
/// assert_eq!(columns[1].type_, "integer");
/// assert_eq!(columns[2].format.as_deref(), Some("date-time"));
/// ```
///
/// Strings (`type = "integer"`, `format = "int32"`) are accepted too, but
/// two columns of one type in a string form trip clippy's
/// `duplicated_attributes` lint (rust-clippy#12537), which compares every
/// `key = "literal"` pair of an attribute — and every `key = <number>` pair
/// whatever its value, so two `priority`s as well — and fails a build with
/// `-D warnings`. Clippy reads no attribute that holds a word as a value,
/// so the word form needs no `#[allow(clippy::duplicated_attributes)]`.
///
/// A hand-written schema, or none at all:
///
/// ```
/// use kubeforge::prelude::*;
/// use kubeforge::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
///
/// fn gadget_schema() -> JSONSchemaProps {
///     serde_json::from_value(serde_json::json!({
///         "type": "object",
///         "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
///     })).unwrap()
/// }
///
/// #[derive(CustomResource, Serialize, Deserialize, Clone, Debug)]
/// #[crd(group = "example.com", version = "v1", kind = "Gadget",
///       schema = "manual", schema_fn = "gadget_schema")]
/// pub struct GadgetSpec { pub anything: serde_json::Value }
///
/// #[derive(CustomResource, Serialize, Deserialize, Clone, Debug)]
/// #[crd(group = "example.com", version = "v1", kind = "Blob", schema = "disabled")]
/// pub struct BlobSpec { pub anything: serde_json::Value }
///
/// assert!(Gadget::try_crd().is_ok());
/// let blob = Blob::try_crd().unwrap();
/// let schema = blob.spec.versions[0].schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap();
/// assert_eq!(schema.x_kubernetes_preserve_unknown_fields, Some(true));
/// ```
///
/// # Field markers
///
/// See [`macro@JsonSchema`]: they work on the spec's fields and on the
/// fields of every type it contains.
///
/// # Several versions
///
/// Derive each version in its own module, mark one `storage`, and combine
/// them with `kubeforge::crd::combine` (or register them all in a `Scheme`,
/// whose `crds()` combines them). Conversion between versions goes through
/// `kubeforge::crd::conversion::{Hub, Convertible, Converter}`.
///
/// ```
/// mod v1 {
///     use kubeforge::prelude::*;
///     #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
///     #[crd(group = "example.com", version = "v1", kind = "Cat", storage)]
///     pub struct CatSpec { pub name: String, pub lives: u8 }
/// }
/// mod v1beta1 {
///     use kubeforge::prelude::*;
///     #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
///     #[crd(group = "example.com", version = "v1beta1", kind = "Cat", deprecated)]
///     pub struct CatSpec { pub name: String }
/// }
/// use kubeforge::crd::CustomResource;
/// let crd = kubeforge::crd::combine(&[v1::Cat::DESCRIPTOR, v1beta1::Cat::DESCRIPTOR]).unwrap();
/// assert_eq!(crd.spec.versions.iter().filter(|v| v.storage).count(), 1);
/// ```
#[proc_macro_derive(CustomResource, attributes(crd))]
pub fn derive_custom_resource(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    crd_opts::derive(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `schemars::JsonSchema`, applying `#[crd(...)]` schema markers.
///
/// Everything schemars' own derive understands keeps working — `serde`
/// attributes (`rename`, `rename_all`, `default`, `skip`, `flatten`, `tag`,
/// `untagged`) and `#[schemars(...)]` (`range`, `length`, `regex`, `default`,
/// `rename`, `with`, ...) — and the generated code names schemars through
/// `::kubeforge::schemars`, so the crate needs no schemars dependency.
///
/// # Field markers: `#[crd(...)]` on a field
///
/// | marker | schema | example |
/// |---|---|---|
/// | `minimum`, `maximum` | bounds (numbers only) | `#[crd(minimum = 1, maximum = 10)]` |
/// | `exclusive_minimum`, `exclusive_maximum` | strict bounds | `#[crd(exclusive_minimum = 0)]` |
/// | `multiple_of` | `multipleOf` | `#[crd(multiple_of = 2)]` |
/// | `min_length`, `max_length` | string length (strings only) | `#[crd(min_length = 1, max_length = 63)]` |
/// | `pattern` | a regular expression (strings only, checked at compile time) | `#[crd(pattern = "^[a-z]+$")]` |
/// | `min_items`, `max_items` | list length (lists only) | `#[crd(max_items = 5)]` |
/// | `min_properties`, `max_properties` | map size (maps only) | `#[crd(min_properties = 1)]` |
/// | `format` | `format` | `#[crd(format = "email")]` |
/// | `enum_values` | allowed values | `#[crd(enum_values = ["a", "b"])]` |
/// | `default` | default (any JSON: literal, list, `json!({...})`) | `#[crd(default = 3)]`, `#[crd(default = json!({"a": 1}))]` |
/// | `example` | example (any JSON) | `#[crd(example = "nginx")]` |
/// | `title` | title | `#[crd(title = "Size")]` |
/// | `nullable` | accepts `null` (an `Option` alone does not: see below) | `#[crd(nullable)]` |
/// | `required` / `optional` | override whether the field is required | `#[crd(required)]` |
/// | `preserve_unknown_fields` | keep fields the schema does not name | `#[crd(preserve_unknown_fields)]` |
/// | `embedded_resource` | an embedded object with apiVersion/kind/metadata | `#[crd(embedded_resource)]` |
/// | `int_or_string` | `x-kubernetes-int-or-string` | `#[crd(int_or_string)]` |
/// | `schemaless` | any value, kept as is | `#[crd(schemaless)]` |
/// | `list_type`, `list_map_keys` | `atomic`, `set` or `map` (with keys) | `#[crd(list_type = "map", list_map_keys = ["name"])]` |
/// | `map_type` | `atomic` or `granular` | `#[crd(map_type = "atomic")]` |
/// | `immutable` | CEL `self == oldSelf` | `#[crd(immutable)]` |
/// | `validation` | a CEL rule (repeatable) | `#[crd(validation(rule = "self != 'admin'", message = "reserved", reason = "FieldValueForbidden"))]` |
///
/// # Optional fields and defaults
///
/// An `Option<T>` field is optional — left out of `required` — and not
/// `nullable`, as controller-gen writes an optional pointer field.
/// kube-apiserver drops a `null` sent for a non-nullable field before it
/// applies defaults, so a `None` serialized as `null` reads back as `None`
/// (or as the field's `default`). A field that must keep a `null` says so
/// with `#[crd(nullable)]`; an `Option` marked `#[crd(required)]` (the key
/// must be sent, `None` as `null`) and an `Option<Option<T>>` (absent,
/// `null` and a value are three states) stay nullable. Items of a
/// `Vec<Option<T>>` and values of a map of `Option`s stay nullable too.
///
/// A serde default — `#[serde(default)]`, `#[serde(default = "path")]` or
/// `#[serde(default)]` on the struct — becomes the field's schema
/// `default`, as schemars makes it, so the API server stores the value and
/// kubectl, CEL rules, printer columns and clients in other languages see
/// it. controller-gen writes a default only for `+kubebuilder:default`;
/// kubeforge keeps schemars' behaviour on purpose, because CRDs built on it
/// rely on the server filling those fields in (a CEL rule such as
/// `self.min <= self.max` over defaulted fields fails on an absent one),
/// and dropping it would change what the server stores. `#[crd(default =
/// ...)]` sets the schema default, or overrides the serde one. To keep a
/// Rust-side default out of the CRD, skip serializing the default value:
/// schemars writes no `default` that `skip_serializing_if` would skip
/// (`Option::is_none`, `Vec::is_empty`, or a predicate of your own).
///
/// # Type markers: `#[crd(...)]` on a struct or enum
///
/// `validation` (CEL, repeatable), `min_properties`, `max_properties`,
/// `preserve_unknown_fields`, `map_type`, `title`, and the one-of groups
/// `exactly_one_of`, `at_most_one_of`, `at_least_one_of` (JSON field names).
///
/// ```
/// use std::collections::BTreeMap;
/// use kubeforge::prelude::*;
/// use kubeforge::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
///
/// #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
/// #[serde(rename_all = "camelCase")]
/// #[crd(validation(rule = "self.minReplicas <= self.maxReplicas", message = "min above max"),
///       at_most_one_of = ["image", "imageRef"], max_properties = 20)]
/// pub struct Workload {
///     #[crd(minimum = 0, maximum = 100)]
///     pub min_replicas: i32,
///     #[crd(exclusive_minimum = 0, exclusive_maximum = 1000, multiple_of = 1)]
///     pub max_replicas: i32,
///     #[crd(min_length = 1, max_length = 253, pattern = "^[a-z0-9.-]+$", immutable)]
///     #[serde(default, skip_serializing_if = "Option::is_none")]
///     pub image: Option<String>,
///     #[serde(default, skip_serializing_if = "Option::is_none")]
///     pub image_ref: Option<String>,
///     #[crd(format = "email", example = "ops@example.com", title = "Owner")]
///     pub owner: String,
///     #[crd(enum_values = ["Always", "Never"], default = "Always")]
///     #[serde(default)]
///     pub pull_policy: String,
///     #[crd(min_items = 1, max_items = 10, list_type = "map", list_map_keys = ["name"])]
///     pub ports: Vec<Port>,
///     #[crd(list_type = "set")]
///     pub tags: Vec<String>,
///     #[crd(min_properties = 0, max_properties = 10, map_type = "granular")]
///     pub labels: BTreeMap<String, String>,
///     #[crd(int_or_string, default = "25%")]
///     #[serde(default, skip_serializing_if = "Option::is_none")]
///     pub max_surge: Option<IntOrString>,
///     #[crd(schemaless)]
///     pub extra: serde_json::Value,
///     #[crd(preserve_unknown_fields)]
///     pub config: BTreeMap<String, serde_json::Value>,
///     #[crd(embedded_resource)]
///     pub template: serde_json::Value,
///     #[crd(nullable, optional)]
///     pub note: Option<String>,
///     #[crd(required, default = json!({"level": "info"}))]
///     #[serde(default)]
///     pub logging: BTreeMap<String, String>,
///     #[crd(validation = "self.startsWith('x-')")]
///     pub prefix: String,
///     // schemars' own attributes keep working.
///     #[schemars(range(min = 1, max = 65535))]
///     pub admin_port: u16,
/// }
///
/// #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
/// pub struct Port {
///     pub name: String,
///     #[crd(minimum = 1, maximum = 65535)]
///     pub port: i32,
/// }
///
/// let schema = kubeforge::crd::schema::schema_for::<Workload>();
/// assert_eq!(schema.get("properties").unwrap()["minReplicas"]["maximum"], 100);
/// ```
///
/// The other type markers:
///
/// ```
/// use kubeforge::prelude::*;
///
/// /// Exactly one source; at least one of the two checks.
/// #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
/// #[crd(exactly_one_of = ["git", "oci"], at_least_one_of = ["lint", "test"],
///       title = "Build", map_type = "atomic", min_properties = 1)]
/// pub struct Build {
///     pub git: Option<String>,
///     pub oci: Option<String>,
///     pub lint: Option<bool>,
///     pub test: Option<bool>,
/// }
///
/// /// Known fields plus whatever else the user writes.
/// #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
/// #[crd(preserve_unknown_fields)]
/// pub struct Options {
///     pub verbose: bool,
/// }
///
/// let schema = kubeforge::crd::schema::schema_for::<Build>();
/// assert_eq!(schema.get("x-kubernetes-validations").unwrap().as_array().unwrap().len(), 2);
/// let schema = kubeforge::crd::schema::schema_for::<Options>();
/// assert_eq!(schema.get("x-kubernetes-preserve-unknown-fields"), Some(&true.into()));
/// ```
///
/// A marker on a type it does not apply to is a compile error at the marker
/// (e.g. `pattern` on an `i32`); a newtype can opt in with
/// `impl kubeforge::crd::markers::StringMarker for MyString {}` (and
/// `NumericMarker`, `ArrayMarker`, `ObjectMarker`).
#[proc_macro_derive(JsonSchema, attributes(crd, schemars, serde, validate, garde))]
pub fn derive_json_schema(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    match schema::derive(input.clone()) {
        Ok(tokens) => tokens.into(),
        Err(e) => {
            // The error, plus a placeholder impl so that code using the type
            // (e.g. #[derive(CustomResource)]) does not add errors of its own.
            let mut tokens = e.into_compile_error();
            tokens.extend(schema::placeholder(&input));
            tokens.into()
        }
    }
}
