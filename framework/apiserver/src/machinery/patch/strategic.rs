//! Strategic merge patch (`application/strategic-merge-patch+json`) as
//! kube-apiserver applies it (k8s.io/apimachinery
//! `pkg/util/strategicpatch/patch.go`, `StrategicMergeMapPatch` with
//! `MergeParallelList` and `IgnoreUnmatchedNulls`): objects merge, `null`
//! deletes, lists with a merge strategy merge by their `patchMergeKey` (or by
//! value for scalars), other lists are replaced; and the directives
//! `$patch: replace|delete`, `$retainKeys`, `$deleteFromPrimitiveList/<f>`
//! and `$setElementOrder/<f>`.

use serde_json::{Map, Value};

use super::schema::{ListType, MergeSchema};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// Why a strategic merge patch could not be applied. The messages are
/// apimachinery's (`mergepatch/errors.go`, `strategicpatch/patch.go`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The original or the patch is not a JSON object.
    #[error("invalid JSON document")]
    BadJsonDoc,
    /// A list whose items are lists.
    #[error("lists of lists are not supported")]
    NoListOfLists,
    /// A malformed `$deleteFromPrimitiveList` key.
    #[error("invalid patch format of primitive list")]
    BadPatchFormatForPrimitiveList,
    /// A malformed `$retainKeys` list, or a patched field missing from it.
    #[error("invalid patch format of retainKeys")]
    BadPatchFormatForRetainKeys,
    /// A malformed `$setElementOrder` key.
    #[error("invalid patch format of setElementOrder list")]
    BadPatchFormatForSetElementOrderList,
    /// A value of the wrong type where an object or list was needed.
    #[error("expected a {expected}, but received a {actual}")]
    BadArgType {
        /// The Go kind expected (`map`, `slice`).
        expected: &'static str,
        /// The Go kind received.
        actual: &'static str,
    },
    /// A list item without the list's merge key.
    #[error("map: {map} does not contain declared merge key: {key}")]
    NoMergeKey {
        /// The item, as JSON.
        map: String,
        /// The merge key.
        key: String,
    },
    /// A `$patch` directive other than `replace`/`delete` (or `merge` on a
    /// list item).
    #[error("unknown patch type: {patch_type} in map: {map}")]
    BadPatchType {
        /// The directive's value.
        patch_type: String,
        /// The map it was found in, as JSON.
        map: String,
    },
    /// `$patch: merge` on a list item.
    #[error("merging lists cannot yet be specified in the patch")]
    MergeListDirective,
    /// A merging list of objects without a merge key.
    #[error("cannot merge lists without merge key for {0}")]
    NoMergeKeyDeclared(String),
    /// Patch list items out of the `$setElementOrder` order.
    #[error("the order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}")]
    SetElementOrderMismatch {
        /// The patch list, as JSON.
        patch: String,
        /// The `$setElementOrder` list, as JSON.
        order: String,
    },
    /// A list mixing items of different types (or with `null` items).
    #[error("list element types are not identical: {0}")]
    MixedElementTypes(String),
    /// A merging list with an item that is not an object.
    #[error("value for key {0} is not a map")]
    ItemNotAMap(usize),
}

impl PatchError {
    /// The HTTP status kube-apiserver answers with
    /// (`interpretStrategicMergePatchError`): 400 for malformed directives,
    /// 422 for lists of lists, 500 for everything it passes through.
    pub fn http_status(&self) -> u16 {
        match self {
            PatchError::BadJsonDoc
            | PatchError::BadPatchFormatForPrimitiveList
            | PatchError::BadPatchFormatForRetainKeys
            | PatchError::BadPatchFormatForSetElementOrderList => 400,
            PatchError::NoListOfLists => 422,
            _ => 500,
        }
    }
}

/// The Go kind name of a JSON value, for error messages.
fn go_kind(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "map",
        Value::Array(_) => "slice",
        Value::String(_) => "string",
        Value::Number(_) => "float64",
        Value::Bool(_) => "bool",
        Value::Null => "invalid",
    }
}

/// Applies a strategic merge patch to `original`. `schema` gives each list's
/// patch strategy ([`MergeSchema::strategic_list_type`]).
pub fn strategic_merge(
    original: &Value,
    patch: &Value,
    schema: &dyn MergeSchema,
) -> Result<Value, PatchError> {
    let (Value::Object(original), Value::Object(patch)) = (original, patch) else {
        return Err(PatchError::BadJsonDoc);
    };
    let mut spath = Vec::new();
    merge_map(original.clone(), patch.clone(), &mut spath, schema).map(Value::Object)
}

/// How a list at a path merges: `Some(key)` merges (by `key`, or by value
/// when empty), `None` replaces.
fn list_strategy(schema: &dyn MergeSchema, spath: &[String]) -> Option<String> {
    let path: Vec<&str> = spath.iter().map(String::as_str).collect();
    match schema.strategic_list_type(&path) {
        ListType::Atomic => None,
        ListType::Set => Some(String::new()),
        ListType::Map(keys) => Some(keys.into_iter().next().unwrap_or_default()),
    }
}

fn is_directive_key(k: &str) -> bool {
    k == RETAIN_KEYS
        || k.starts_with(&format!("{SET_ELEMENT_ORDER}/"))
        || k.starts_with(&format!("{DELETE_FROM_PRIMITIVE_LIST}/"))
}

/// Patch content that lands without merging: `null` fields and directive
/// keys are dropped, and an object carrying `$patch` is dropped entirely
/// (`discardNullValuesFromPatch`, `removeDirectives`).
fn clean(v: Value) -> Option<Value> {
    match v {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE) {
                return None;
            }
            let mut out = Map::new();
            for (k, v) in map {
                if v.is_null() || is_directive_key(&k) {
                    continue;
                }
                if let Some(v) = clean(v) {
                    out.insert(k, v);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => Some(Value::Array(items.into_iter().filter_map(clean).collect())),
        other => Some(other),
    }
}

fn clean_list(items: Vec<Value>) -> Vec<Value> {
    items.into_iter().filter_map(clean).collect()
}

fn same_kind(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

fn extract_key(key: &str, prefix: &str) -> Result<String, PatchError> {
    match key.split_once('/') {
        Some((p, rest)) if p == prefix => Ok(rest.to_string()),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST => {
            Err(PatchError::BadPatchFormatForPrimitiveList)
        }
        _ => Err(PatchError::BadPatchFormatForSetElementOrderList),
    }
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    spath: &mut Vec<String>,
    schema: &dyn MergeSchema,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                match clean(Value::Object(patch)) {
                    Some(Value::Object(m)) => Ok(m),
                    _ => Ok(Map::new()),
                }
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(PatchError::BadPatchType {
                patch_type: directive
                    .as_str()
                    .map_or_else(|| directive.to_string(), str::to_string),
                map: Value::Object(patch.clone()).to_string(),
            }),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_order(&mut original, &mut patch, spath, schema)?;

    for (k, patch_value) in patch {
        let (key, is_delete_list) = if k.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            (extract_key(&k, DELETE_FROM_PRIMITIVE_LIST)?, true)
        } else {
            (k, false)
        };
        if patch_value.is_null() {
            original.remove(&key);
            continue;
        }
        let Some(current) = original.get_mut(&key) else {
            if !is_delete_list {
                if let Some(v) = clean(patch_value) {
                    original.insert(key, v);
                }
            }
            continue;
        };
        match (current, patch_value) {
            (Value::Object(cur), Value::Object(p)) => {
                let cur = std::mem::take(cur);
                spath.push(key.clone());
                let merged = merge_map(cur, p, spath, schema);
                spath.pop();
                original.insert(key, Value::Object(merged?));
            }
            (Value::Array(cur), Value::Array(p)) => {
                let cur = std::mem::take(cur);
                spath.push(key.clone());
                let strategy = list_strategy(schema, spath);
                let merged = merge_slice_handler(cur, p, strategy, is_delete_list, spath, schema);
                spath.pop();
                original.insert(key, Value::Array(merged?));
            }
            (current, patch_value) => {
                if is_delete_list && !same_kind(current, &patch_value) {
                    continue;
                }
                match clean(patch_value) {
                    Some(v) => *current = v,
                    None => {
                        original.remove(&key);
                    }
                }
            }
        }
    }
    Ok(original)
}

/// `$retainKeys`: fields of the original missing from the list are cleared;
/// every field the patch sets must be in the list.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(PatchError::BadPatchFormatForRetainKeys);
    };
    let retained = |k: &str| retain.iter().any(|v| v.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !retained(k) {
            return Err(PatchError::BadPatchFormatForRetainKeys);
        }
    }
    original.retain(|k, _| retained(k));
    Ok(())
}

/// `$setElementOrder/<f>`: merges list `f` and orders it: the directive's
/// order first, then the patch's, then the original's (`mergePatchIntoOriginal`).
fn merge_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    spath: &mut Vec<String>,
    schema: &dyn MergeSchema,
) -> Result<(), PatchError> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in keys {
        let Some(order) = patch.remove(&key) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(PatchError::BadArgType {
                expected: "slice",
                actual: go_kind(&order),
            });
        };
        let list_key = extract_key(&key, SET_ELEMENT_ORDER)?;
        let original_list = match original.get(&list_key) {
            None => None,
            Some(Value::Array(items)) => Some(items.clone()),
            Some(other) => {
                return Err(PatchError::BadArgType {
                    expected: "slice",
                    actual: go_kind(other),
                })
            }
        };
        let patch_list = match patch.get(&list_key) {
            None => None,
            Some(Value::Array(items)) => Some(items.clone()),
            Some(other) => {
                return Err(PatchError::BadArgType {
                    expected: "slice",
                    actual: go_kind(other),
                })
            }
        };
        spath.push(list_key.clone());
        let strategy = list_strategy(schema, spath);
        let merge_key = strategy.clone().unwrap_or_default();
        validate_patch_with_set_order_list(
            patch_list.as_deref().unwrap_or(&[]),
            &order,
            &merge_key,
        )?;
        let merged = match (&original_list, patch_list.clone()) {
            (Some(o), None) => Ok(o.clone()),
            (None, Some(p)) => Ok(clean_list(p)),
            (Some(o), Some(p)) => merge_slice_handler(o.clone(), p, strategy, false, spath, schema),
            (None, None) => {
                spath.pop();
                continue;
            }
        };
        spath.pop();
        let merged = merged?;
        let kind = slice_element_kind(&[
            original_list.as_deref().unwrap_or(&[]),
            patch_list.as_deref().unwrap_or(&[]),
        ])?;
        let ordered = match kind {
            None => merged,
            Some(kind) => {
                let (patch_items, server_only) = partition(merged, &order, &merge_key)?;
                normalize_element_order(
                    patch_items,
                    server_only,
                    &order,
                    original_list.as_deref().unwrap_or(&[]),
                    &merge_key,
                    kind,
                )?
            }
        };
        original.insert(list_key.clone(), Value::Array(ordered));
        patch.remove(&list_key);
    }
    Ok(())
}

/// The patch list's items must appear in the `$setElementOrder` list, in
/// its order (`validatePatchWithSetOrderList`).
fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    order: &[Value],
    merge_key: &str,
) -> Result<(), PatchError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if merge_key.is_empty() {
        patch_list.iter().collect()
    } else {
        let mut out = Vec::new();
        for v in patch_list {
            let Value::Object(m) = v else {
                return Err(PatchError::BadArgType {
                    expected: "map",
                    actual: go_kind(v),
                });
            };
            if m.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") {
                out.push(v);
            }
        }
        out
    };
    let (mut pi, mut oi) = (0, 0);
    while let (Some(item), Some(ordered)) = (non_delete.get(pi), order.get(oi)) {
        if item.as_object().is_some_and(|m| m.contains_key(DIRECTIVE)) {
            pi += 1;
            continue;
        }
        if merge_key_value_equal(item, ordered, merge_key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < non_delete.len() && oi >= order.len() {
        return Err(PatchError::SetElementOrderMismatch {
            patch: Value::Array(patch_list.to_vec()).to_string(),
            order: Value::Array(order.to_vec()).to_string(),
        });
    }
    Ok(())
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool, PatchError> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let l = merge_key_value(left, merge_key)?;
    let r = merge_key_value(right, merge_key)?;
    Ok(l == r)
}

fn merge_key_value<'a>(item: &'a Value, merge_key: &str) -> Result<&'a Value, PatchError> {
    let Value::Object(m) = item else {
        return Err(PatchError::BadArgType {
            expected: "map",
            actual: go_kind(item),
        });
    };
    m.get(merge_key).ok_or_else(|| PatchError::NoMergeKey {
        map: item.to_string(),
        key: merge_key.to_string(),
    })
}

fn merge_slice_handler(
    original: Vec<Value>,
    patch: Vec<Value>,
    strategy: Option<String>,
    is_delete_list: bool,
    spath: &mut Vec<String>,
    schema: &dyn MergeSchema,
) -> Result<Vec<Value>, PatchError> {
    // A deletion list applies whatever the field's strategy.
    match strategy {
        Some(key) => merge_slice(original, patch, &key, is_delete_list, spath, schema),
        None if is_delete_list => merge_slice(original, patch, "", true, spath, schema),
        None => Ok(clean_list(patch)),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ElemKind {
    Map,
    Scalar(u8),
}

/// The common kind of the items of some lists (`sliceElementType`); `None`
/// when they have no items.
fn slice_element_kind(slices: &[&[Value]]) -> Result<Option<ElemKind>, PatchError> {
    let mut kind = None;
    for item in slices.iter().flat_map(|s| s.iter()) {
        let k = match item {
            Value::Object(_) => ElemKind::Map,
            Value::Array(_) => return Err(PatchError::NoListOfLists),
            Value::String(_) => ElemKind::Scalar(0),
            Value::Number(_) => ElemKind::Scalar(1),
            Value::Bool(_) => ElemKind::Scalar(2),
            Value::Null => {
                return Err(PatchError::MixedElementTypes(describe_slices(slices)));
            }
        };
        match kind {
            None => kind = Some(k),
            Some(prev) if prev != k => {
                return Err(PatchError::MixedElementTypes(describe_slices(slices)))
            }
            _ => {}
        }
    }
    Ok(kind)
}

fn describe_slices(slices: &[&[Value]]) -> String {
    slices
        .iter()
        .map(|s| Value::Array(s.to_vec()).to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    is_delete_list: bool,
    spath: &mut Vec<String>,
    schema: &dyn MergeSchema,
) -> Result<Vec<Value>, PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let Some(kind) = slice_element_kind(&[&original, &patch])? else {
        return Ok(original);
    };
    let (merged, patch, server_order) = if kind != ElemKind::Map {
        if is_delete_list {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.contains(v))
                .collect());
        }
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for v in original.iter().chain(patch.iter()) {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        (merged, patch, original)
    } else {
        if merge_key.is_empty() {
            return Err(PatchError::NoMergeKeyDeclared(spath.join(".")));
        }
        let (original, patch) = merge_slice_with_special_elements(original, patch, merge_key)?;
        let merged = merge_slice_without_special_elements(
            original.clone(),
            &patch,
            merge_key,
            spath,
            schema,
        )?;
        (merged, patch, original)
    };
    let (patch_items, server_only) = partition(merged, &patch, merge_key)?;
    normalize_element_order(
        patch_items,
        server_only,
        &patch,
        &server_order,
        merge_key,
        kind,
    )
}

/// Handles list items carrying `$patch`: `delete` removes every item with
/// that key, `replace` makes the patch's other items the whole list.
fn merge_slice_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let directive = match &item {
            Value::Object(m) => m.get(DIRECTIVE).cloned(),
            other => {
                return Err(PatchError::BadArgType {
                    expected: "map",
                    actual: go_kind(other),
                })
            }
        };
        match directive {
            None => plain.push(item),
            Some(d) => match d.as_str() {
                Some("delete") => {
                    let key_value = merge_key_value(&item, merge_key)?.clone();
                    let mut kept = Vec::with_capacity(original.len());
                    for (i, v) in original.into_iter().enumerate() {
                        let Value::Object(m) = &v else {
                            return Err(PatchError::ItemNotAMap(i));
                        };
                        if m.get(merge_key) != Some(&key_value) {
                            kept.push(v);
                        }
                    }
                    original = kept;
                }
                Some("replace") => replace = true,
                Some("merge") => return Err(PatchError::MergeListDirective),
                _ => {
                    return Err(PatchError::BadPatchType {
                        patch_type: d.as_str().map_or_else(|| d.to_string(), str::to_string),
                        map: item.to_string(),
                    })
                }
            },
        }
    }
    if replace {
        return Ok((clean_list(plain), Vec::new()));
    }
    Ok((original, plain))
}

/// Merges each patch item into the original item with the same merge key,
/// or appends it.
fn merge_slice_without_special_elements(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    spath: &mut Vec<String>,
    schema: &dyn MergeSchema,
) -> Result<Vec<Value>, PatchError> {
    for item in patch {
        let key_value = merge_key_value(item, merge_key)?;
        let Value::Object(patch_map) = item else {
            continue;
        };
        let mut found = None;
        for (i, v) in original.iter().enumerate() {
            let Value::Object(m) = v else {
                return Err(PatchError::ItemNotAMap(i));
            };
            if m.get(merge_key) == Some(key_value) {
                found = Some(i);
                break;
            }
        }
        match found.and_then(|i| original.get_mut(i)) {
            Some(Value::Object(target)) => {
                let current = std::mem::take(target);
                let merged = merge_map(current, patch_map.clone(), spath, schema)?;
                *target = merged;
            }
            _ => {
                if let Some(v) = clean(item.clone()) {
                    original.push(v);
                }
            }
        }
    }
    Ok(original)
}

/// Splits `merged` into the items present in `by` and the others.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut present = Vec::new();
    let mut others = Vec::new();
    for item in merged {
        let found = if merge_key.is_empty() {
            by.contains(&item)
        } else {
            let key_value = merge_key_value(&item, merge_key)?;
            let mut found = false;
            for (i, v) in by.iter().enumerate() {
                let Value::Object(m) = v else {
                    return Err(PatchError::ItemNotAMap(i));
                };
                if m.get(merge_key) == Some(key_value) {
                    found = true;
                    break;
                }
            }
            found
        };
        if found {
            present.push(item);
        } else {
            others.push(item);
        }
    }
    Ok((present, others))
}

/// Position of `item` in `list`, by merge key for objects and by value
/// otherwise.
fn index_of(list: &[Value], item: &Value, merge_key: &str, kind: ElemKind) -> Option<usize> {
    match kind {
        ElemKind::Map => {
            let wanted = item.get(merge_key);
            list.iter().position(|v| v.get(merge_key) == wanted)
        }
        ElemKind::Scalar(_) => list.iter().position(|v| v == item),
    }
}

/// Orders the patch's items by `patch_order` and the server-only items by
/// `server_order`, then interleaves them (`normalizeElementOrder`).
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> Result<Vec<Value>, PatchError> {
    let patch_items = normalize_slice_order(patch_items, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    Ok(merge_sorted_slice(
        server_only,
        patch_items,
        server_order,
        merge_key,
        kind,
    ))
}

fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> Result<Vec<Value>, PatchError> {
    let mut to_delete = Vec::new();
    let mut to_sort = to_sort;
    if kind == ElemKind::Map {
        for v in to_sort.iter().chain(order.iter()) {
            merge_key_value(v, merge_key)?;
        }
        let (keep, delete): (Vec<Value>, Vec<Value>) = to_sort
            .into_iter()
            .partition(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"));
        to_sort = keep;
        to_delete = delete;
    }
    let mut indexed: Vec<(usize, Value)> = to_sort
        .into_iter()
        .map(|v| {
            (
                index_of(order, &v, merge_key, kind).unwrap_or(usize::MAX),
                v,
            )
        })
        .collect();
    indexed.sort_by_key(|(i, _)| *i);
    let mut out: Vec<Value> = indexed.into_iter().map(|(_, v)| v).collect();
    out.extend(to_delete);
    Ok(out)
}

/// Interleaves two sorted lists: a server-only item goes before a patch item
/// only when both are in the server's list and it came first there
/// (`mergeSortedSlice`). New patch items therefore come before the
/// server-only items they are compared with.
fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                match (
                    index_of(server_order, l, merge_key, kind),
                    index_of(server_order, r, merge_key, kind),
                ) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                }
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}
