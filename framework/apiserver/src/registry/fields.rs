//! The pieces every kind's defaulting is made of: a default value as data
//! ([`D`]), tables of them applied by [`fill`], and paths into an object.

use serde_json::{json, Map, Value};

/// One default value, as data. Go's non-pointer fields count their zero
/// value (`""`, `0`) as unset, so [`D::Str`] and [`D::Int`] also replace an
/// explicit zero; pointer fields ([`D::PtrStr`], [`D::PtrInt`], [`D::Bool`])
/// are only set when absent or null.
#[derive(Clone, Copy, Debug)]
pub(crate) enum D {
    /// A non-pointer string: `""` counts as unset.
    Str(&'static str),
    /// A `*string`: only absent or null counts as unset.
    PtrStr(&'static str),
    /// A non-pointer integer: `0` counts as unset.
    Int(i64),
    /// A `*int32`/`*int64`: only absent or null counts as unset.
    PtrInt(i64),
    /// A `*bool`.
    Bool(bool),
    /// An empty object (`{}`), for pointer-to-struct defaults.
    Obj,
}

impl D {
    fn value(self) -> Value {
        match self {
            D::Str(s) | D::PtrStr(s) => json!(s),
            D::Int(i) | D::PtrInt(i) => json!(i),
            D::Bool(b) => json!(b),
            D::Obj => Value::Object(Map::new()),
        }
    }

    fn unset(self, current: Option<&Value>) -> bool {
        match current {
            None | Some(Value::Null) => true,
            Some(v) => match self {
                D::Str(_) => v.as_str() == Some(""),
                D::Int(_) => v.as_i64() == Some(0),
                _ => false,
            },
        }
    }
}

/// A struct's defaults: (JSON field, default).
pub(crate) type Table = &'static [(&'static str, D)];

/// Sets every field of `table` that `map` leaves unset.
pub(crate) fn fill(map: &mut Map<String, Value>, table: &[(&str, D)]) {
    for (key, d) in table {
        if d.unset(map.get(*key)) {
            map.insert((*key).into(), d.value());
        }
    }
}

/// The object at `key` of `map`, if it is one.
pub(crate) fn obj_mut<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// The objects in the array at `key` of `map`.
pub(crate) fn items_mut<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// The object at `path` in `obj`, if every step is an object (nothing is
/// created).
pub(crate) fn at_mut<'a>(obj: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let mut cur = obj.as_object_mut()?;
    for seg in path {
        cur = obj_mut(cur, seg)?;
    }
    Some(cur)
}

/// `obj`'s `spec`, if it is an object.
pub(crate) fn spec_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    at_mut(obj, &["spec"])
}

pub(crate) fn set_if_absent(map: &mut Map<String, Value>, key: &str, v: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.into(), v);
    }
}

/// `map[key]` as an object, created (as `{}`) when absent or null; `None`
/// when it holds something else.
pub(crate) fn object_in<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let slot = map
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
}

/// The object at `path`, created (as `{}`) where missing or null.
pub(crate) fn ensure_object<'a>(
    obj: &'a mut Value,
    path: &[&str],
) -> Option<&'a mut Map<String, Value>> {
    let mut cur = obj.as_object_mut()?;
    for seg in path {
        cur = object_in(cur, seg)?;
    }
    Some(cur)
}

pub(crate) fn obj_name(obj: &Value) -> String {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_sets_unset_fields_and_keeps_set_ones() {
        const T: Table = &[
            ("a", D::Str("x")),
            ("b", D::PtrStr("y")),
            ("c", D::Int(3)),
            ("d", D::PtrInt(4)),
            ("e", D::Bool(true)),
            ("f", D::Obj),
        ];
        let mut m = json!({"a": "", "b": "", "c": 0, "d": 0, "e": false, "f": null});
        fill(m.as_object_mut().unwrap(), T);
        assert_eq!(
            m,
            json!({"a": "x", "b": "", "c": 3, "d": 0, "e": false, "f": {}})
        );
        let mut m = json!({});
        fill(m.as_object_mut().unwrap(), T);
        assert_eq!(
            m,
            json!({"a": "x", "b": "y", "c": 3, "d": 4, "e": true, "f": {}})
        );
    }
}
