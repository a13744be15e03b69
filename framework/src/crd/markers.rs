//! Schema markers: the kubebuilder validation markers, in Rust.
//!
//! `#[derive(JsonSchema)]` (kubeforge's, which wraps schemars') turns each
//! `#[crd(...)]` field or type marker into a [`Marker`] and applies it to the
//! schema schemars generated, with [`apply_field_markers`] and
//! [`apply_type_markers`]. The marker traits ([`NumericMarker`],
//! [`StringMarker`], ...) let the derive reject a marker on the wrong Rust type
//! at compile time, pointing at the marker.

use schemars::Schema;
use serde_json::{json, Map, Value};

use super::ValidationRule;

/// Sentinel key a field marker leaves on a property so that the enclosing
/// object can add it to (true) or drop it from (false) `required`.
pub(crate) const REQUIRED_SENTINEL: &str = "x-kubeforge-required";

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListType {
    /// The list is replaced as a whole on merge.
    Atomic,
    /// Items are unique scalars.
    Set,
    /// Items are objects identified by the list-map keys.
    Map,
}

impl ListType {
    fn as_str(self) -> &'static str {
        match self {
            ListType::Atomic => "atomic",
            ListType::Set => "set",
            ListType::Map => "map",
        }
    }
}

/// `x-kubernetes-map-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapType {
    /// Replaced as a whole on merge.
    Atomic,
    /// Merged key by key.
    Granular,
}

/// One schema marker.
#[derive(Debug, Clone, PartialEq)]
pub enum Marker {
    /// `minimum`.
    Minimum(f64),
    /// `maximum`.
    Maximum(f64),
    /// `minimum` with `exclusiveMinimum: true`.
    ExclusiveMinimum(f64),
    /// `maximum` with `exclusiveMaximum: true`.
    ExclusiveMaximum(f64),
    /// `multipleOf`.
    MultipleOf(f64),
    /// `minLength`.
    MinLength(u64),
    /// `maxLength`.
    MaxLength(u64),
    /// `pattern` (an RE2 regular expression).
    Pattern(&'static str),
    /// `minItems`.
    MinItems(u64),
    /// `maxItems`.
    MaxItems(u64),
    /// `minProperties`.
    MinProperties(u64),
    /// `maxProperties`.
    MaxProperties(u64),
    /// `format`.
    Format(&'static str),
    /// `enum`: the allowed values.
    Enum(Vec<Value>),
    /// `default`: applied by the apiserver when the field is absent.
    Default(Value),
    /// `example`.
    Example(Value),
    /// `title`.
    Title(&'static str),
    /// `nullable: true`.
    Nullable,
    /// Put the field in its object's `required` list.
    Required,
    /// Drop the field from its object's `required` list.
    Optional,
    /// `x-kubernetes-preserve-unknown-fields: true`.
    PreserveUnknownFields,
    /// `x-kubernetes-embedded-resource: true` (an object with apiVersion, kind, metadata).
    EmbeddedResource,
    /// `x-kubernetes-int-or-string: true`.
    IntOrString,
    /// No schema: anything is accepted and kept.
    Schemaless,
    /// `x-kubernetes-list-type`.
    ListType(ListType),
    /// `x-kubernetes-list-map-keys`.
    ListMapKeys(&'static [&'static str]),
    /// `x-kubernetes-map-type`.
    MapType(MapType),
    /// The field cannot change once set (CEL `self == oldSelf`).
    Immutable,
    /// A CEL rule.
    Validation(ValidationRule),
    /// Exactly one of these JSON fields must be set.
    ExactlyOneOf(&'static [&'static str]),
    /// At most one of these JSON fields may be set.
    AtMostOneOf(&'static [&'static str]),
    /// At least one of these JSON fields must be set.
    AtLeastOneOf(&'static [&'static str]),
}

/// Apply field markers to a property's schema. Called by derived
/// `JsonSchema` impls through schemars' `transform` hook.
pub fn apply_field_markers(schema: &mut Schema, markers: &[Marker]) {
    let obj = schema.ensure_object();
    for marker in markers {
        apply(obj, marker);
    }
}

/// Takes out of an `Option<T>` field's schema the `null` schemars' impl for
/// `Option` added: a `null` in `type` or `enum`, an `anyOf` whose second
/// branch is `{"type": "null"}` (the first branch is merged back, the
/// field's own description and other keys winning), and a `default: null`
/// (what a serde default of `None` becomes). The field then says what
/// controller-gen says of an optional pointer: it may be absent, not that
/// it may be `null`. Called by derived `JsonSchema` impls, before the
/// field's markers.
pub fn strip_option_null(schema: &mut Schema) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    let null_branch = match obj.get("anyOf") {
        Some(Value::Array(branches)) => {
            branches.len() == 2 && branches[1] == json!({"type": "null"}) && branches[0].is_object()
        }
        _ => false,
    };
    if null_branch {
        if let Some(Value::Array(mut branches)) = obj.remove("anyOf") {
            if let Some(Value::Object(mut inner)) = branches.drain(..1).next() {
                inner.extend(std::mem::take(obj));
                *obj = inner;
            }
        }
    }
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        if types.iter().any(|t| t != "null") {
            types.retain(|t| t != "null");
            if let [only] = types.as_slice() {
                let only = only.clone();
                obj.insert("type".into(), only);
            }
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        if values.iter().any(|v| !v.is_null()) {
            values.retain(|v| !v.is_null());
        }
    }
    if obj.get("default") == Some(&Value::Null) {
        obj.remove("default");
    }
}

/// Apply type-level markers to a type's schema, and resolve the
/// required/optional overrides its fields left behind.
pub fn apply_type_markers(schema: &mut Schema, markers: &[Marker]) {
    let obj = schema.ensure_object();
    for marker in markers {
        apply(obj, marker);
    }
    finish_object(schema);
}

/// Resolve `required`/`optional` field overrides on an object schema.
pub fn finish_object(schema: &mut Schema) {
    let obj = schema.ensure_object();
    let mut add = Vec::new();
    let mut remove = Vec::new();
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if let Some(flag) = prop
                .as_object_mut()
                .and_then(|p| p.remove(REQUIRED_SENTINEL))
            {
                if flag == Value::Bool(true) {
                    add.push(name.clone());
                } else {
                    remove.push(name.clone());
                }
            }
        }
    }
    if add.is_empty() && remove.is_empty() {
        return;
    }
    let mut required: Vec<String> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    required.retain(|r| !remove.contains(r));
    for name in add {
        if !required.contains(&name) {
            required.push(name);
        }
    }
    if required.is_empty() {
        obj.remove("required");
    } else {
        obj.insert("required".into(), json!(required));
    }
}

fn number(value: f64) -> Value {
    // Integral bounds are written as integers, as controller-gen does.
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

fn push_rule(obj: &mut Map<String, Value>, rule: Value) {
    let rules = obj
        .entry("x-kubernetes-validations")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(rules) = rules {
        rules.push(rule);
    }
}

fn one_of_rule(obj: &mut Map<String, Value>, fields: &[&str], op: &str, what: &str) {
    // The same CEL controller-gen writes for ExactlyOneOf/AtMostOneOf/AtLeastOneOf.
    let has: Vec<String> = fields.iter().map(|f| format!("has(self.{f})")).collect();
    push_rule(
        obj,
        json!({
            "rule": format!("[{}].filter(x, x == true).size() {op}", has.join(", ")),
            "message": format!("{what} of the fields in [{}] must be set", fields.join(" ")),
        }),
    );
}

/// Keys that describe a value rather than constrain its shape; kept when a
/// marker replaces a schema wholesale.
const ANNOTATION_KEYS: [&str; 5] = ["description", "title", "default", "example", "nullable"];

fn keep_annotations(obj: &mut Map<String, Value>) {
    obj.retain(|k, _| ANNOTATION_KEYS.contains(&k.as_str()) || k == REQUIRED_SENTINEL);
}

fn apply(obj: &mut Map<String, Value>, marker: &Marker) {
    match marker {
        Marker::Minimum(v) => {
            obj.insert("minimum".into(), number(*v));
        }
        Marker::Maximum(v) => {
            obj.insert("maximum".into(), number(*v));
        }
        Marker::ExclusiveMinimum(v) => {
            obj.insert("minimum".into(), number(*v));
            obj.insert("exclusiveMinimum".into(), true.into());
        }
        Marker::ExclusiveMaximum(v) => {
            obj.insert("maximum".into(), number(*v));
            obj.insert("exclusiveMaximum".into(), true.into());
        }
        Marker::MultipleOf(v) => {
            obj.insert("multipleOf".into(), number(*v));
        }
        Marker::MinLength(v) => {
            obj.insert("minLength".into(), json!(v));
        }
        Marker::MaxLength(v) => {
            obj.insert("maxLength".into(), json!(v));
        }
        Marker::Pattern(p) => {
            obj.insert("pattern".into(), json!(p));
        }
        Marker::MinItems(v) => {
            obj.insert("minItems".into(), json!(v));
        }
        Marker::MaxItems(v) => {
            obj.insert("maxItems".into(), json!(v));
        }
        Marker::MinProperties(v) => {
            obj.insert("minProperties".into(), json!(v));
        }
        Marker::MaxProperties(v) => {
            obj.insert("maxProperties".into(), json!(v));
        }
        Marker::Format(f) => {
            obj.insert("format".into(), json!(f));
        }
        Marker::Enum(values) => {
            obj.insert("enum".into(), Value::Array(values.clone()));
        }
        Marker::Default(v) => {
            obj.insert("default".into(), v.clone());
        }
        Marker::Example(v) => {
            obj.remove("examples");
            obj.insert("example".into(), v.clone());
        }
        Marker::Title(t) => {
            obj.insert("title".into(), json!(t));
        }
        Marker::Nullable => {
            obj.insert("nullable".into(), true.into());
        }
        Marker::Required => {
            obj.insert(REQUIRED_SENTINEL.into(), true.into());
        }
        Marker::Optional => {
            obj.insert(REQUIRED_SENTINEL.into(), false.into());
        }
        Marker::PreserveUnknownFields => {
            obj.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
        }
        Marker::EmbeddedResource => {
            obj.insert("x-kubernetes-embedded-resource".into(), true.into());
            obj.insert("type".into(), "object".into());
            // An embedded object whose fields are not described keeps them
            // rather than pruning them.
            let described = obj
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty());
            if !described {
                obj.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
            }
        }
        Marker::IntOrString => {
            keep_annotations(obj);
            // The extension alone makes the apiserver accept integers and
            // strings; an anyOf would be stripped by the structural rewrite.
            obj.insert("x-kubernetes-int-or-string".into(), true.into());
        }
        Marker::Schemaless => {
            keep_annotations(obj);
            obj.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
        }
        Marker::ListType(t) => {
            obj.insert("x-kubernetes-list-type".into(), json!(t.as_str()));
        }
        Marker::ListMapKeys(keys) => {
            obj.insert("x-kubernetes-list-map-keys".into(), json!(keys));
        }
        Marker::MapType(t) => {
            let t = match t {
                MapType::Atomic => "atomic",
                MapType::Granular => "granular",
            };
            obj.insert("x-kubernetes-map-type".into(), json!(t));
        }
        Marker::Immutable => push_rule(
            obj,
            json!({"rule": "self == oldSelf", "message": "Value is immutable"}),
        ),
        Marker::Validation(rule) => push_rule(obj, rule.to_json()),
        Marker::ExactlyOneOf(fields) => one_of_rule(obj, fields, "== 1", "exactly one"),
        Marker::AtMostOneOf(fields) => one_of_rule(obj, fields, "<= 1", "at most one"),
        Marker::AtLeastOneOf(fields) => one_of_rule(obj, fields, ">= 1", "at least one"),
    }
}

/// Implemented by every type whose `JsonSchema` impl comes from kubeforge's
/// derive, so that `#[derive(CustomResource)]` can refuse markers that a
/// plain schemars derive would silently drop.
#[diagnostic::on_unimplemented(
    message = "`{Self}` carries #[crd(...)] schema markers but its JsonSchema impl does not come from kubeforge",
    note = "derive `kubeforge::JsonSchema` (from `kubeforge::prelude`), not `schemars::JsonSchema`: only kubeforge's derive applies #[crd(...)] markers"
)]
pub trait KubeforgeSchema {}

/// Types that numeric markers (`minimum`, `maximum`, `multiple_of`, ...) apply to.
#[diagnostic::on_unimplemented(
    message = "this marker applies to numbers, but the field's type `{Self}` is not a number",
    label = "marker on a non-numeric field"
)]
pub trait NumericMarker {}

/// Types that string markers (`pattern`, `min_length`, `max_length`) apply to.
#[diagnostic::on_unimplemented(
    message = "this marker applies to strings, but the field's type `{Self}` is not a string",
    label = "marker on a non-string field"
)]
pub trait StringMarker {}

/// Types that list markers (`min_items`, `max_items`, `list_type`, ...) apply to.
#[diagnostic::on_unimplemented(
    message = "this marker applies to lists, but the field's type `{Self}` is not a list",
    label = "marker on a non-list field"
)]
pub trait ArrayMarker {}

/// Types that object markers (`min_properties`, `max_properties`, `map_type`) apply to.
#[diagnostic::on_unimplemented(
    message = "this marker applies to maps and objects, but the field's type `{Self}` is neither",
    label = "marker on a field that is not a map or object"
)]
pub trait ObjectMarker {}

macro_rules! impl_marker {
    ($trait:ident: $($ty:ty),* $(,)?) => { $(impl $trait for $ty {})* };
}

impl_marker!(NumericMarker: i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64);
impl_marker!(NumericMarker:
    std::num::NonZeroI8, std::num::NonZeroI16, std::num::NonZeroI32, std::num::NonZeroI64,
    std::num::NonZeroU8, std::num::NonZeroU16, std::num::NonZeroU32, std::num::NonZeroU64,
);
impl_marker!(StringMarker: String, str, std::sync::Arc<str>, std::rc::Rc<str>, Box<str>, char);
impl<'a> StringMarker for std::borrow::Cow<'a, str> {}
impl_marker!(ObjectMarker: serde_json::Value, serde_json::Map<String, Value>);

impl<T: ArrayMarker + ?Sized> ArrayMarker for Box<T> {}
impl<T> ArrayMarker for Vec<T> {}
impl<T> ArrayMarker for [T] {}
impl<T, const N: usize> ArrayMarker for [T; N] {}
impl<T> ArrayMarker for std::collections::VecDeque<T> {}
impl<T> ArrayMarker for std::collections::BTreeSet<T> {}
impl<T, S> ArrayMarker for std::collections::HashSet<T, S> {}
impl<K, V> ObjectMarker for std::collections::BTreeMap<K, V> {}
impl<K, V, S> ObjectMarker for std::collections::HashMap<K, V, S> {}

macro_rules! impl_wrappers {
    ($($trait:ident),*) => {$(
        impl<T: $trait> $trait for Option<T> {}
        impl<T: $trait + ?Sized> $trait for Box<T> {}
        impl<T: $trait + ?Sized> $trait for std::sync::Arc<T> {}
        impl<T: $trait + ?Sized> $trait for &T {}
    )*};
}
impl_wrappers!(NumericMarker, ObjectMarker);

impl<T: StringMarker> StringMarker for Option<T> {}
impl<T: StringMarker + ?Sized> StringMarker for &T {}
impl<T: ArrayMarker> ArrayMarker for Option<T> {}
impl<T: ArrayMarker + ?Sized> ArrayMarker for std::sync::Arc<T> {}

/// Compile-time check that a numeric marker sits on a number.
pub const fn assert_numeric<T: NumericMarker + ?Sized>() {}
/// Compile-time check that a string marker sits on a string.
pub const fn assert_string<T: StringMarker + ?Sized>() {}
/// Compile-time check that a list marker sits on a list.
pub const fn assert_array<T: ArrayMarker + ?Sized>() {}
/// Compile-time check that an object marker sits on a map or object.
pub const fn assert_object<T: ObjectMarker + ?Sized>() {}
