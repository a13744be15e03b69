//! The corpus's spec types: together they use every `#[crd(...)]` option,
//! every field marker and every Rust-type mapping the derive supports.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kubeforge::k8s_openapi::api::core::v1::{PodTemplateSpec, ResourceRequirements};
use kubeforge::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use kubeforge::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, MicroTime, Time};
use kubeforge::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubeforge::prelude::*;
use kubeforge::serde_json::{self, Value};

// 1. The README's example: bounds, status, scale, short name, printer column.
/// A memcached cluster.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "cache.example.com",
    version = "v1alpha1",
    kind = "Memcached",
    status = "MemcachedStatus",
    shortname = "mc",
    derive = "PartialEq",
    scale(spec = ".spec.size", status = ".status.replicas"),
    printcolumn(name = "Size", type = integer, json_path = ".spec.size")
)]
pub struct MemcachedSpec {
    /// Number of memcached pods.
    #[crd(minimum = 1, maximum = 10)]
    pub size: i32,
}

/// Observed state of a memcached cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
pub struct MemcachedStatus {
    /// Pods running.
    #[serde(default)]
    pub replicas: i32,
}

// 2. Cluster scope, names, categories, labels and annotations on the CRD.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(group = "infra.example.com", version = "v1", kind = "Region", cluster,
      plural = "regions", singular = "region", shortnames = ["rg", "reg"],
      categories = ["infra", "all"], label("app.kubernetes.io/part-of", "infra"),
      annotation("example.com/owner", "team-a"), derive(PartialEq))]
pub struct RegionSpec {
    /// Display name.
    pub display_name: String,
    pub zones: Vec<String>,
}

// 3. scope = "Cluster" spelled out; singular/plural irregular; serde rename_all.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "geo.example.com",
    version = "v1",
    kind = "Index",
    scope = "Cluster",
    plural = "indices",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct IndexSpec {
    pub shard_count: u32,
    pub replica_count: Option<u32>,
}

// 4. Numeric markers: exclusive bounds, multiple_of, floats, negatives; schemars range.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "numbers.example.com",
    version = "v1",
    kind = "Thermostat",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct ThermostatSpec {
    #[crd(minimum = -40.5, maximum = 60)]
    pub target: f64,
    #[crd(exclusive_minimum = 0, exclusive_maximum = 100)]
    pub humidity: u8,
    #[crd(multiple_of = 5)]
    pub step: i64,
    #[schemars(range(min = 1, max = 3600))]
    pub interval_seconds: u32,
}

// 5. String markers: lengths, pattern, format; schemars length and regex.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "strings.example.com",
    version = "v1",
    kind = "Account",
    derive = "PartialEq"
)]
pub struct AccountSpec {
    #[crd(min_length = 3, max_length = 20, pattern = "^[a-z][a-z0-9-]*$")]
    pub username: String,
    #[crd(format = "email")]
    pub email: String,
    #[schemars(length(min = 8, max = 64))]
    pub display: String,
    #[schemars(regex(pattern = r"^\+[0-9]+$"))]
    pub phone: Option<String>,
}

// 6. List markers: min/max items, list types (atomic, set, map with keys).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "lists.example.com",
    version = "v1",
    kind = "Firewall",
    derive = "PartialEq"
)]
pub struct FirewallSpec {
    #[crd(min_items = 1, max_items = 4, list_type = "map", list_map_keys = ["name"])]
    pub rules: Vec<Rule>,
    #[crd(list_type = "set")]
    pub tags: Vec<String>,
    #[crd(list_type = "atomic")]
    pub sources: Vec<String>,
    /// A set type: uniqueItems is dropped (the apiserver refuses it).
    #[serde(default)]
    pub ports: BTreeSet<u16>,
}

/// A firewall rule.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct Rule {
    pub name: String,
    #[crd(minimum = 1, maximum = 65535)]
    pub port: i32,
    #[crd(enum_values = ["TCP", "UDP"], default = "TCP")]
    #[serde(default = "tcp")]
    pub protocol: String,
}

fn tcp() -> String {
    "TCP".into()
}

// 7. Map markers and map types: BTreeMap, HashMap, min/max properties, map_type.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "maps.example.com",
    version = "v1",
    kind = "Inventory",
    derive = "PartialEq"
)]
pub struct InventorySpec {
    #[crd(min_properties = 1, max_properties = 3)]
    pub items: BTreeMap<String, u32>,
    #[crd(map_type = "atomic")]
    #[serde(default)]
    pub labels: HashMap<String, String>,
    #[crd(map_type = "granular")]
    #[serde(default)]
    pub limits: BTreeMap<String, Quantity>,
}

// 8. Defaults: literals, lists, objects (json!), serde default, schemars default.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "defaults.example.com",
    version = "v1",
    kind = "Pipeline",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct PipelineSpec {
    #[crd(default = 3)]
    #[serde(default)]
    pub retries: i32,
    #[crd(default = ["build", "test"])]
    #[serde(default)]
    pub stages: Vec<String>,
    #[crd(default = json!({"level": "info", "json": true}))]
    #[serde(default)]
    pub logging: BTreeMap<String, Value>,
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u32,
    #[serde(default)]
    pub dry_run: bool,
    #[schemars(default = "default_branch")]
    #[serde(default = "default_branch")]
    pub branch: String,
    #[crd(default = -1.5)]
    #[serde(default)]
    pub offset: f64,
}

fn default_timeout() -> u32 {
    600
}

fn default_branch() -> String {
    "main".into()
}

// 9. Example, title, nullable, required/optional overrides.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "docs.example.com",
    version = "v1",
    kind = "Article",
    derive = "PartialEq"
)]
pub struct ArticleSpec {
    #[crd(example = "Hello, world", title = "Headline")]
    pub title: String,
    #[crd(nullable)]
    pub subtitle: Option<String>,
    /// Required although it is an Option.
    #[crd(required)]
    pub author: Option<String>,
    /// Optional although it is not an Option.
    #[crd(optional)]
    #[serde(default)]
    pub words: u32,
    #[crd(example = json!(["a", "b"]))]
    #[serde(default)]
    pub keywords: Vec<String>,
}

// 10. preserve_unknown_fields, schemaless, serde_json::Value, embedded resources.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "blobs.example.com",
    version = "v1",
    kind = "Bundle",
    derive = "PartialEq"
)]
pub struct BundleSpec {
    /// Free-form values.
    pub values: Value,
    #[crd(schemaless)]
    pub raw: Value,
    #[crd(preserve_unknown_fields)]
    pub settings: Settings,
    #[crd(embedded_resource)]
    pub manifest: Value,
    #[serde(default)]
    pub extra: Option<serde_json::Map<String, Value>>,
}

/// Known settings; unknown ones are kept.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct Settings {
    pub mode: String,
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

// 11. int-or-string: IntOrString, Option<IntOrString>, the marker on a String.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "rollout.example.com",
    version = "v1",
    kind = "Rollout",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct RolloutSpec {
    pub max_surge: IntOrString,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    #[crd(int_or_string, default = "25%")]
    #[serde(default = "quarter")]
    pub canary: Value,
}

fn quarter() -> Value {
    Value::String("25%".into())
}

// 12. Quantity, Time, MicroTime, ResourceRequirements.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "batch.example.com",
    version = "v1",
    kind = "Reservation",
    status = "ReservationStatus",
    derive = "PartialEq"
)]
pub struct ReservationSpec {
    pub memory: Quantity,
    pub cpu: Option<Quantity>,
    pub resources: Option<ResourceRequirements>,
    pub starts_at: Time,
}

/// When the reservation was last renewed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct ReservationStatus {
    pub renewed_at: Option<MicroTime>,
}

// 13. PodTemplateSpec and Vec<Condition> as a list map keyed by type.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(
    group = "apps.example.com",
    version = "v1",
    kind = "Worker",
    status = "WorkerStatus",
    printcolumn(
        name = "Ready",
        type = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    )
)]
pub struct WorkerSpec {
    pub replicas: i32,
    pub template: PodTemplateSpec,
}

/// Worker conditions.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerStatus {
    #[crd(list_type = "map", list_map_keys = ["type"])]
    #[serde(default)]
    pub conditions: Vec<Condition>,
    pub observed_generation: Option<i64>,
}

// 14. Unit enums: plain, renamed, Option<enum>, enum with a default.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "enums.example.com",
    version = "v1",
    kind = "Light",
    derive = "PartialEq"
)]
pub struct LightSpec {
    pub color: Color,
    pub blink: Option<Speed>,
    #[serde(default)]
    pub mode: Mode,
}

/// A colour.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub enum Color {
    Red,
    Green,
    Blue,
}

/// Blink speed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Speed {
    Slow,
    Fast,
}

/// Mode, `auto` by default.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
pub enum Mode {
    #[default]
    #[serde(rename = "auto")]
    Auto,
    #[serde(rename = "manual")]
    Manual,
}

// 15. Internally tagged enum.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "storage.example.com",
    version = "v1",
    kind = "Backup",
    derive = "PartialEq"
)]
pub struct BackupSpec {
    pub target: Target,
    pub schedule: String,
}

/// Where backups go.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Target {
    S3 { bucket: String, region: String },
    Disk { path: String },
}

// 16. Externally tagged enum whose variants all carry data.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "auth.example.com",
    version = "v1",
    kind = "Login",
    derive = "PartialEq"
)]
pub struct LoginSpec {
    pub method: Method,
}

/// How to log in.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Method {
    Password { user: String },
    Token { secret_name: String },
}

// 17. Untagged enum whose variants are objects with distinct fields.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "net.example.com",
    version = "v1",
    kind = "Route",
    derive = "PartialEq"
)]
pub struct RouteSpec {
    pub destination: Destination,
}

/// A service or an URL.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(untagged)]
pub enum Destination {
    Service { service: String, port: u16 },
    Url { url: String },
}

// 18. serde: flatten of a struct, skip, rename, skip_serializing_if; schemars rename.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "serde.example.com",
    version = "v1",
    kind = "Profile",
    derive = "PartialEq"
)]
pub struct ProfileSpec {
    #[serde(flatten)]
    pub common: Common,
    #[serde(skip)]
    pub cache: Option<String>,
    #[serde(rename = "e-mail")]
    pub email: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    #[schemars(rename = "nick")]
    #[serde(rename = "nick")]
    pub nickname: Option<String>,
}

/// Fields shared by several kinds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Common {
    #[crd(min_length = 1)]
    pub display_name: String,
    pub owner_ref: Option<String>,
}

// 19. CEL: field rules, immutable, type-level rules, one-of groups, root rules.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(group = "cel.example.com", version = "v1", kind = "Quota", derive = "PartialEq",
      validation(rule = "self.min <= self.max", message = "min must not exceed max",
                 reason = "FieldValueInvalid", field_path = ".min"),
      at_most_one_of = ["hard", "soft"],
      root_validation(rule = "self.metadata.name.size() <= 20", message = "name too long",
                      message_expression = "'name ' + self.metadata.name + ' is too long'"))]
pub struct QuotaSpec {
    pub min: i32,
    pub max: i32,
    #[crd(immutable)]
    pub owner: String,
    #[crd(validation(
        rule = "self.all(x, x != 'admin')",
        message = "admin is reserved",
        reason = "FieldValueForbidden"
    ))]
    #[serde(default)]
    pub users: Vec<String>,
    #[crd(
        validation = "self >= oldSelf",
        validation(rule = "self >= oldSelf.orValue(0)", optional_old_self = true)
    )]
    #[serde(default)]
    pub generation: i64,
    pub hard: Option<bool>,
    pub soft: Option<bool>,
}

// 20. Type-level markers on a nested type: exactly/at-least one of, property counts.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "sources.example.com",
    version = "v1",
    kind = "Source",
    derive = "PartialEq"
)]
pub struct SourceSpec {
    pub origin: Origin,
    pub mirrors: Mirrors,
}

/// Exactly one origin.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(exactly_one_of = ["git", "oci"], title = "Origin")]
pub struct Origin {
    pub git: Option<String>,
    pub oci: Option<String>,
}

/// At least one mirror, at most four.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(at_least_one_of = ["primary", "secondary"], min_properties = 1, max_properties = 4,
      map_type = "atomic")]
pub struct Mirrors {
    pub primary: Option<String>,
    pub secondary: Option<String>,
}

// 21. Printer columns with every field, selectable fields, scale with selector.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "web.example.com",
    version = "v1",
    kind = "Site",
    status = "SiteStatus",
    derive = "PartialEq",
    selectable = ".spec.tier",
    selectable = ".spec.host",
    scale(
        spec = ".spec.replicas",
        status = ".status.replicas",
        selector = ".status.selector"
    ),
    printcolumn(
        name = "Host",
        type = string,
        json_path = ".spec.host",
        description = "served host"
    ),
    printcolumn(
        name = "Replicas",
        type = integer,
        json_path = ".spec.replicas",
        format = int32
    ),
    printcolumn(name = "Tier", type = string, json_path = ".spec.tier", priority = 1),
    printcolumn(name = "Age", type = date, json_path = ".metadata.creationTimestamp")
)]
pub struct SiteSpec {
    pub host: String,
    pub tier: String,
    pub replicas: i32,
}

/// Observed site state.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct SiteStatus {
    pub replicas: i32,
    pub selector: String,
}

// 22. Deprecated, unserved versions, a custom root name, extra attributes.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "legacy.example.com",
    version = "v1beta1",
    kind = "Gizmo",
    root = "OldGizmo",
    deprecated = "legacy.example.com/v1beta1 Gizmo is deprecated; use v1",
    served = false,
    storage = true,
    derive(PartialEq),
    attr(doc = "The old gizmo."),
    attr = "allow(dead_code)"
)]
pub struct GizmoSpec {
    pub size: String,
}

// 23. schema = "manual" with a hand-written schema.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[crd(
    group = "manual.example.com",
    version = "v1",
    kind = "Handmade",
    derive = "PartialEq",
    schema = "manual",
    schema_fn = "handmade_schema"
)]
pub struct HandmadeSpec {
    pub size: i64,
}

/// The object schema written by hand.
pub fn handmade_schema() -> JSONSchemaProps {
    serde_json::from_value(serde_json::json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {"size": {"type": "integer", "minimum": 0}}
            }
        }
    }))
    .unwrap_or_default()
}

// 24. schema = "disabled": no validation, unknown fields kept.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[crd(
    group = "open.example.com",
    version = "v1",
    kind = "Anything",
    derive = "PartialEq",
    schema = "disabled",
    namespaced
)]
pub struct AnythingSpec {
    #[serde(flatten)]
    pub fields: BTreeMap<String, Value>,
}

// 25. Boxes, nested options, integer widths, booleans, tuple-like newtypes.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "misc.example.com",
    version = "v1",
    kind = "Gadget",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct GadgetSpec {
    pub inner: Box<Inner>,
    pub maybe_list: Option<Vec<Inner>>,
    pub small: i8,
    pub big: u64,
    pub ratio: f32,
    pub enabled: bool,
    pub id: GadgetId,
}

/// Nested struct with markers of its own.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct Inner {
    #[crd(max_length = 10)]
    pub name: String,
    #[crd(maximum = 3)]
    pub level: Option<u8>,
}

/// A newtype over a string.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct GadgetId(pub String);

// 26 and 27. Two versions of one kind combined into one CRD, v1 the storage version.
pub mod ship_v1 {
    use super::*;

    /// A ship, current version.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
    #[crd(
        group = "fleet.example.com",
        version = "v1",
        kind = "Ship",
        storage,
        derive = "PartialEq",
        status = "ShipStatus",
        shortname = "sh"
    )]
    pub struct ShipSpec {
        pub name: String,
        #[crd(minimum = 1)]
        pub crew: u32,
    }

    /// Ship status.
    #[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
    pub struct ShipStatus {
        pub docked: bool,
    }
}

pub mod ship_v1beta1 {
    use super::*;

    /// A ship, older version: the crew was a string.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
    #[crd(
        group = "fleet.example.com",
        version = "v1beta1",
        kind = "Ship",
        derive = "PartialEq",
        status = "super::ship_v1::ShipStatus",
        shortname = "sh",
        deprecated
    )]
    pub struct ShipSpec {
        pub name: String,
        pub crew: String,
    }
}

// 28. Generic nested type, doc comments with a title paragraph, deny_unknown_fields.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "generic.example.com",
    version = "v1",
    kind = "Pair",
    derive = "PartialEq",
    crate = "::kubeforge"
)]
pub struct PairSpec {
    pub ints: Both<i32>,
    pub words: Both<String>,
}

/// Two of a kind.
///
/// The left and the right.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Both<T> {
    pub left: T,
    pub right: T,
}
