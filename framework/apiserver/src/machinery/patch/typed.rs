//! Schema-aware walks over JSON objects, as structured-merge-diff's `typed`
//! package does them: the field set a value sets (`ToFieldSet`), the fields
//! two values differ in (`Compare`), the apply merge (`Merge`), removal of a
//! set of fields (`RemoveItems`), and validation of an applied configuration.
//!
//! `null` counts as absent everywhere: Kubernetes objects omit empty fields,
//! and a `null` in an applied configuration sets nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::fieldpath::{values_equal, FieldSet, Path, PathElement};
use super::schema::{ListType, MergeSchema};

/// Whether `key` under `spath` is `metadata.managedFields` of the object
/// itself, which no walk looks at: it is bookkeeping, not content.
fn skipped(spath: &[&str], key: &str) -> bool {
    key == "managedFields" && spath == ["metadata"]
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// The path element of list item `index`, or why it has none.
pub(crate) fn item_key(
    schema: &dyn MergeSchema,
    spath: &[&str],
    list: &ListType,
    index: usize,
    item: &Value,
) -> Result<PathElement, String> {
    match list {
        ListType::Atomic => Ok(PathElement::Index(index)),
        ListType::Set => match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".into())
            }
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => {
                Err("associative list without keys has an element that's an explicit null".into())
            }
            scalar => Ok(PathElement::Value(scalar.clone())),
        },
        ListType::Map(keys) => {
            let map = match item {
                Value::Object(map) => map,
                Value::Null => {
                    return Err("associative list with keys may not have a null element".into())
                }
                _ => return Err("associative list with keys may not have non-map elements".into()),
            };
            let mut fields = Vec::with_capacity(keys.len());
            for key in keys {
                match present(map.get(key)) {
                    Some(v) => fields.push((key.clone(), v.clone())),
                    None => match schema.list_key_default(spath, key) {
                        Some(default) => fields.push((key.clone(), default)),
                        None => {
                            return Err(format!(
                                "associative list with keys has an element that omits key field {key:?} (and doesn't have default value)"
                            ))
                        }
                    },
                }
            }
            Ok(PathElement::key(fields))
        }
    }
}

/// The keys of every item of a granular list, or `None` when some item has
/// none (the list is then handled as a whole, like an atomic one).
fn keyed_items<'v>(
    schema: &dyn MergeSchema,
    spath: &[&str],
    list: &ListType,
    items: &'v [Value],
) -> Option<Vec<(PathElement, &'v Value)>> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item_key(schema, spath, list, i, item)
                .ok()
                .map(|pe| (pe, item))
        })
        .collect()
}

/// Validation errors of an applied configuration, each with the path of the
/// list it concerns (structured-merge-diff's `ValidationError`).
pub(crate) fn validate_config(schema: &dyn MergeSchema, value: &Value) -> Vec<(Path, String)> {
    let mut errors = Vec::new();
    let mut spath = Vec::new();
    let mut fpath = Vec::new();
    validate_node(schema, value, &mut spath, &mut fpath, &mut errors);
    errors
}

fn validate_node<'a>(
    schema: &dyn MergeSchema,
    value: &'a Value,
    spath: &mut Vec<&'a str>,
    fpath: &mut Vec<PathElement>,
    errors: &mut Vec<(Path, String)>,
) {
    match value {
        Value::Object(map) => {
            if !spath.is_empty() && schema.map_is_atomic(spath) {
                return;
            }
            for (k, child) in map {
                if child.is_null() {
                    continue;
                }
                if spath.is_empty() && k == "metadata" && !child.is_object() {
                    errors.push((
                        Path(vec![PathElement::Field(k.clone())]),
                        format!("expected map, got {child}"),
                    ));
                    continue;
                }
                spath.push(k);
                fpath.push(PathElement::Field(k.clone()));
                if !child.is_array() && schema.list_type(spath) != ListType::Atomic {
                    errors.push((Path(fpath.clone()), format!("expected list, got {child}")));
                } else {
                    validate_node(schema, child, spath, fpath, errors);
                }
                fpath.pop();
                spath.pop();
            }
        }
        Value::Array(items) => {
            let list = schema.list_type(spath);
            if list == ListType::Atomic {
                return;
            }
            let mut seen = BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                match item_key(schema, spath, &list, i, item) {
                    Ok(pe) => {
                        if seen.contains(&pe) {
                            errors.push((
                                Path(fpath.clone()),
                                format!("duplicate entries for key {pe}"),
                            ));
                            continue;
                        }
                        seen.insert(pe.clone());
                        fpath.push(pe);
                        validate_node(schema, item, spath, fpath, errors);
                        fpath.pop();
                    }
                    Err(msg) => errors.push((Path(fpath.clone()), format!("element {i}: {msg}"))),
                }
            }
        }
        _ => {}
    }
}

/// Every field `value` sets: scalar leaves, atomic lists and objects, list
/// items, and the entries of open maps (structured-merge-diff's
/// `ToFieldSet`). Lists whose items cannot all be keyed count as atomic.
pub(crate) fn to_field_set(schema: &dyn MergeSchema, value: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    let mut spath = Vec::new();
    let mut fpath = Vec::new();
    field_set_node(schema, value, &mut spath, &mut fpath, &mut out);
    out
}

fn field_set_node<'a>(
    schema: &dyn MergeSchema,
    value: &'a Value,
    spath: &mut Vec<&'a str>,
    fpath: &mut Vec<PathElement>,
    out: &mut FieldSet,
) {
    match value {
        Value::Null => {}
        Value::Object(map) => {
            if !spath.is_empty() && schema.map_is_atomic(spath) {
                out.insert(fpath);
                return;
            }
            let open = schema.is_open_map(spath);
            for (k, child) in map {
                if child.is_null() || skipped(spath, k) {
                    continue;
                }
                spath.push(k);
                fpath.push(PathElement::Field(k.clone()));
                field_set_node(schema, child, spath, fpath, out);
                if open {
                    out.insert(fpath);
                }
                fpath.pop();
                spath.pop();
            }
        }
        Value::Array(items) => {
            let list = schema.list_type(spath);
            let keyed = match list {
                ListType::Atomic => None,
                _ => keyed_items(schema, spath, &list, items),
            };
            match keyed {
                None => out.insert(fpath),
                Some(items) => {
                    for (pe, item) in items {
                        fpath.push(pe);
                        field_set_node(schema, item, spath, fpath, out);
                        out.insert(fpath);
                        fpath.pop();
                    }
                }
            }
        }
        _ => out.insert(fpath),
    }
}

/// The fields two objects differ in: set only in the right one (`added`),
/// set in both with different values (`modified`), set only in the left one
/// (`removed`). Leaves are compared; a list item or object that appears or
/// disappears is reported together with its fields.
#[derive(Clone, Debug, Default)]
pub(crate) struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// Forgets the fields of `ignored` and everything below them.
    pub fn exclude(&mut self, ignored: &FieldSet) {
        self.added = self.added.recursive_difference(ignored);
        self.modified = self.modified.recursive_difference(ignored);
        self.removed = self.removed.recursive_difference(ignored);
    }
}

/// Compares two objects (structured-merge-diff's `TypedValue.Compare`).
pub(crate) fn compare(schema: &dyn MergeSchema, lhs: &Value, rhs: &Value) -> Comparison {
    let mut c = Comparison::default();
    let mut spath = Vec::new();
    let mut fpath = Vec::new();
    compare_node(schema, Some(lhs), Some(rhs), &mut spath, &mut fpath, &mut c);
    c
}

fn is_empty_container(v: Option<&Value>) -> bool {
    match v {
        None => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

fn compare_leaf(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    fpath: &[PathElement],
    c: &mut Comparison,
) {
    match (lhs, rhs) {
        (None, Some(_)) => c.added.insert(fpath),
        (Some(_), None) => c.removed.insert(fpath),
        (Some(l), Some(r)) if !values_equal(l, r) => c.modified.insert(fpath),
        _ => {}
    }
}

/// Records a container node that appeared or disappeared.
fn compare_post(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    fpath: &[PathElement],
    c: &mut Comparison,
) {
    if lhs.is_none() {
        c.added.insert(fpath);
    } else if rhs.is_none() {
        c.removed.insert(fpath);
    }
}

fn compare_node<'a>(
    schema: &dyn MergeSchema,
    lhs: Option<&'a Value>,
    rhs: Option<&'a Value>,
    spath: &mut Vec<&'a str>,
    fpath: &mut Vec<PathElement>,
    c: &mut Comparison,
) {
    let (lhs, rhs) = (present(lhs), present(rhs));
    let sample = match (lhs, rhs) {
        (None, None) => return,
        (Some(l), None) => l,
        (None, Some(r)) => r,
        (Some(l), Some(r)) => {
            let same_kind = matches!(
                (l, r),
                (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_))
            );
            if !same_kind {
                compare_leaf(lhs, rhs, fpath, c);
                return;
            }
            l
        }
    };
    match sample {
        Value::Object(_) => {
            let atomic = !spath.is_empty() && schema.map_is_atomic(spath);
            if atomic || (is_empty_container(lhs) && is_empty_container(rhs)) {
                compare_leaf(lhs, rhs, fpath, c);
                return;
            }
            let lmap = lhs.and_then(Value::as_object);
            let rmap = rhs.and_then(Value::as_object);
            let keys: BTreeSet<&'a String> = lmap
                .into_iter()
                .flat_map(|m| m.keys())
                .chain(rmap.into_iter().flat_map(|m| m.keys()))
                .collect();
            for k in keys {
                if skipped(spath, k) {
                    continue;
                }
                spath.push(k);
                fpath.push(PathElement::Field(k.clone()));
                let l = lmap.and_then(|m| m.get(k.as_str()));
                let r = rmap.and_then(|m| m.get(k.as_str()));
                compare_node(schema, l, r, spath, fpath, c);
                fpath.pop();
                spath.pop();
            }
            compare_post(lhs, rhs, fpath, c);
        }
        Value::Array(_) => {
            let list = schema.list_type(spath);
            if list == ListType::Atomic || (is_empty_container(lhs) && is_empty_container(rhs)) {
                compare_leaf(lhs, rhs, fpath, c);
                return;
            }
            let litems = lhs
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let ritems = rhs
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let (Some(lkeyed), Some(rkeyed)) = (
                keyed_items(schema, spath, &list, litems),
                keyed_items(schema, spath, &list, ritems),
            ) else {
                compare_leaf(lhs, rhs, fpath, c);
                return;
            };
            // The first occurrence of a key stands for the item.
            let mut lmap: BTreeMap<PathElement, &Value> = BTreeMap::new();
            for (pe, item) in lkeyed {
                lmap.entry(pe).or_insert(item);
            }
            let mut rmap: BTreeMap<PathElement, &Value> = BTreeMap::new();
            for (pe, item) in rkeyed {
                rmap.entry(pe).or_insert(item);
            }
            let keys: BTreeSet<&PathElement> = lmap.keys().chain(rmap.keys()).collect();
            for pe in keys {
                fpath.push(pe.clone());
                compare_node(
                    schema,
                    lmap.get(pe).copied(),
                    rmap.get(pe).copied(),
                    spath,
                    fpath,
                    c,
                );
                fpath.pop();
            }
            compare_post(lhs, rhs, fpath, c);
        }
        _ => compare_leaf(lhs, rhs, fpath, c),
    }
}

/// Merges an applied configuration into an object: the configuration's
/// leaves win, objects and granular lists merge recursively, atomic values
/// are replaced (structured-merge-diff's `TypedValue.Merge`).
pub(crate) fn merge(schema: &dyn MergeSchema, lhs: &Value, rhs: &Value) -> Value {
    let mut spath = Vec::new();
    merge_node(schema, Some(lhs), Some(rhs), &mut spath)
        .unwrap_or_else(|| Value::Object(Map::new()))
}

fn merge_node<'a>(
    schema: &dyn MergeSchema,
    lhs: Option<&'a Value>,
    rhs: Option<&'a Value>,
    spath: &mut Vec<&'a str>,
) -> Option<Value> {
    let (lhs, rhs) = (present(lhs), present(rhs));
    match (lhs, rhs) {
        (l, None) => l.cloned(),
        (None, Some(r)) => Some(drop_nulls(r)),
        (Some(l), Some(r)) => match (l, r) {
            (Value::Object(lmap), Value::Object(rmap))
                if (spath.is_empty() || !schema.map_is_atomic(spath))
                    && !(lmap.is_empty() && rmap.is_empty()) =>
            {
                let mut out = Map::new();
                for (k, lv) in lmap {
                    spath.push(k);
                    if let Some(v) = merge_node(schema, Some(lv), rmap.get(k.as_str()), spath) {
                        out.insert(k.clone(), v);
                    }
                    spath.pop();
                }
                for (k, rv) in rmap {
                    if lmap.contains_key(k) {
                        continue;
                    }
                    spath.push(k);
                    if let Some(v) = merge_node(schema, None, Some(rv), spath) {
                        out.insert(k.clone(), v);
                    }
                    spath.pop();
                }
                Some(Value::Object(out))
            }
            (Value::Array(litems), Value::Array(ritems))
                if !(litems.is_empty() && ritems.is_empty()) =>
            {
                let list = schema.list_type(spath);
                if list == ListType::Atomic {
                    return Some(drop_nulls(r));
                }
                merge_list(schema, &list, litems, ritems, spath).or_else(|| Some(drop_nulls(r)))
            }
            _ => Some(drop_nulls(r)),
        },
    }
}

/// Merges two granular lists item by item. Items keep the configuration's
/// order; items only in the object keep their place relative to the items
/// both have (structured-merge-diff `merge.go` `visitListItems`). Returns
/// `None` when some item has no key, and the configuration then replaces
/// the list.
fn merge_list<'a>(
    schema: &dyn MergeSchema,
    list: &ListType,
    litems: &'a [Value],
    ritems: &'a [Value],
    spath: &mut Vec<&'a str>,
) -> Option<Value> {
    let lkeyed = keyed_items(schema, spath, list, litems)?;
    let rkeyed = keyed_items(schema, spath, list, ritems)?;

    // All occurrences of a key in the object, in order; duplicates the
    // configuration does not touch are kept as they are.
    let mut lorder: Vec<PathElement> = Vec::new();
    let mut lmap: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    for (pe, item) in lkeyed {
        let entry = lmap.entry(pe.clone()).or_default();
        if entry.is_empty() {
            lorder.push(pe);
        }
        entry.push(item);
    }
    let mut rorder: Vec<PathElement> = Vec::new();
    let mut rmap: BTreeMap<PathElement, &Value> = BTreeMap::new();
    for (pe, item) in rkeyed {
        if let std::collections::btree_map::Entry::Vacant(slot) = rmap.entry(pe.clone()) {
            slot.insert(item);
            rorder.push(pe);
        }
    }
    let shared: Vec<&PathElement> = rorder.iter().filter(|pe| lmap.contains_key(*pe)).collect();
    let mut shared = shared.into_iter();
    let mut next_shared = shared.next();

    let mut out = Vec::with_capacity(litems.len().max(ritems.len()));
    let mut emitted: BTreeSet<PathElement> = BTreeSet::new();
    let merged_item = |pe: &PathElement, spath: &mut Vec<&'a str>| {
        let l = lmap.get(pe).and_then(|v| v.first().copied());
        merge_node(schema, l, rmap.get(pe).copied(), spath)
    };
    let (mut li, mut ri) = (0usize, 0usize);
    while li < lorder.len() || ri < rorder.len() {
        let lpe = lorder.get(li);
        let rpe = rorder.get(ri);
        if let Some(l) = lpe {
            if emitted.contains(l) {
                li += 1;
                continue;
            }
        }
        if let (Some(l), Some(r)) = (lpe, rpe) {
            if l == r {
                out.extend(merged_item(l, spath));
                emitted.insert(l.clone());
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if rmap.contains_key(l) && next_shared.is_some_and(|ns| ns != l) {
                // A shared item, but not the next one the configuration
                // places: it is emitted when the configuration reaches it.
                li += 1;
                continue;
            }
        }
        if let Some(l) = lpe {
            if !rmap.contains_key(l) {
                if let Some(items) = lmap.get(l) {
                    out.extend(items.iter().map(|v| (*v).clone()));
                }
                emitted.insert(l.clone());
                li += 1;
                continue;
            }
        }
        if let Some(r) = rpe {
            out.extend(merged_item(r, spath));
            emitted.insert(r.clone());
            if next_shared.is_some_and(|ns| ns == r) {
                next_shared = shared.next();
            }
            ri += 1;
            continue;
        }
        // An object item the configuration also has, after the
        // configuration's items ran out: already emitted.
        li += 1;
    }
    Some(Value::Array(out))
}

/// A copy of `v` without `null` object fields.
pub(crate) fn drop_nulls(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), drop_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(drop_nulls).collect()),
        other => other.clone(),
    }
}

/// Removes the fields of `set` (and everything below them) from an object.
/// A visited object or list left empty disappears, as structured-merge-diff's
/// `RemoveItems` turns it into null.
pub(crate) fn remove_items(schema: &dyn MergeSchema, value: &Value, set: &FieldSet) -> Value {
    let mut spath = Vec::new();
    remove_node(schema, value, set, &mut spath).unwrap_or_else(|| Value::Object(Map::new()))
}

fn remove_node<'a>(
    schema: &dyn MergeSchema,
    value: &'a Value,
    set: &FieldSet,
    spath: &mut Vec<&'a str>,
) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.is_empty() || (!spath.is_empty() && schema.map_is_atomic(spath)) {
                return None;
            }
            let mut out = Map::new();
            for (k, child) in map {
                let pe = PathElement::Field(k.clone());
                if set.has_member(&pe) {
                    continue;
                }
                match set.with_prefix(&pe) {
                    Some(sub) if !sub.is_empty() => {
                        spath.push(k);
                        if let Some(v) = remove_node(schema, child, sub, spath) {
                            out.insert(k.clone(), v);
                        }
                        spath.pop();
                    }
                    _ => {
                        out.insert(k.clone(), child.clone());
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(items) => {
            let list = schema.list_type(spath);
            if items.is_empty() || list == ListType::Atomic {
                return None;
            }
            let Some(keyed) = keyed_items(schema, spath, &list, items) else {
                return Some(value.clone());
            };
            let mut out = Vec::with_capacity(items.len());
            for (pe, item) in keyed {
                if set.has_member(&pe) {
                    continue;
                }
                match set.with_prefix(&pe) {
                    Some(sub) if !sub.is_empty() => {
                        if let Some(v) = remove_node(schema, item, sub, spath) {
                            out.push(v);
                        }
                    }
                    _ => out.push(item.clone()),
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        scalar => Some(scalar.clone()),
    }
}

/// `set` plus the struct fields that have members below them, which a set
/// built by [`to_field_set`] leaves out (structured-merge-diff's
/// `EnsureNamedFieldsAreMembers`). Pruning works on these, so that a struct
/// an applier stopped applying goes away as a whole.
pub(crate) fn ensure_named_fields(schema: &dyn MergeSchema, set: &FieldSet) -> FieldSet {
    let mut spath = Vec::new();
    ensure_node(schema, set, &mut spath)
}

fn ensure_node<'a>(
    schema: &dyn MergeSchema,
    set: &'a FieldSet,
    spath: &mut Vec<&'a str>,
) -> FieldSet {
    let open = schema.is_open_map(spath);
    let mut out = FieldSet::new();
    for pe in set.members() {
        out.insert_member(pe.clone());
    }
    for (pe, child) in set.children() {
        let sub = match pe {
            PathElement::Field(name) => {
                if !open {
                    out.insert_member(pe.clone());
                }
                spath.push(name);
                let sub = ensure_node(schema, child, spath);
                spath.pop();
                sub
            }
            _ => ensure_node(schema, child, spath),
        };
        out.insert_child(pe.clone(), sub);
    }
    out
}
