//! The apply merge, comparison and removal walks, with the triplets of
//! structured-merge-diff's `typed/merge_test.go` (sets and associative
//! lists keyed by `key`+`id`). Its `null` triplets are left out: here `null`
//! in a configuration sets nothing.

use serde_json::{json, Value};

use super::super::typed::{compare, merge, remove_items, to_field_set};
use super::super::{FieldSet, ListType, MergeSchema, PathElement};

struct MyRoot;

impl MergeSchema for MyRoot {
    fn list_type(&self, path: &[&str]) -> ListType {
        match path.last() {
            Some(&"setStr") | Some(&"setBool") | Some(&"setNumeric") => ListType::Set,
            Some(&"list") => ListType::Map(vec!["key".into(), "id".into()]),
            _ => ListType::Atomic,
        }
    }

    fn is_open_map(&self, path: &[&str]) -> bool {
        path.last() == Some(&"value")
    }
}

const TRIPLETS: &[(&str, &str, &str)] = &[
    (
        r#"{"numeric":1}"#,
        r#"{"numeric":3.14159}"#,
        r#"{"numeric":3.14159}"#,
    ),
    (
        r#"{"string":"aoeu"}"#,
        r#"{"bool":true}"#,
        r#"{"string":"aoeu","bool":true}"#,
    ),
    (
        r#"{"setStr":["a","b","c"]}"#,
        r#"{"setStr":["a","b"]}"#,
        r#"{"setStr":["a","b","c"]}"#,
    ),
    (
        r#"{"setStr":["a","b"]}"#,
        r#"{"setStr":["a","b","c"]}"#,
        r#"{"setStr":["a","b","c"]}"#,
    ),
    (
        r#"{"setStr":["a","b","c"]}"#,
        r#"{"setStr":[]}"#,
        r#"{"setStr":["a","b","c"]}"#,
    ),
    (
        r#"{"setStr":[]}"#,
        r#"{"setStr":["a","b","c"]}"#,
        r#"{"setStr":["a","b","c"]}"#,
    ),
    (
        r#"{"setStr":["a","b"]}"#,
        r#"{"setStr":["b","a"]}"#,
        r#"{"setStr":["b","a"]}"#,
    ),
    (
        r#"{"setStr":["a","b","c"]}"#,
        r#"{"setStr":["d","e","f"]}"#,
        r#"{"setStr":["a","b","c","d","e","f"]}"#,
    ),
    (
        r#"{"setStr":["a","b","c"]}"#,
        r#"{"setStr":["c","d","e","f"]}"#,
        r#"{"setStr":["a","b","c","d","e","f"]}"#,
    ),
    (
        r#"{"setStr":["a","b","c","g","f"]}"#,
        r#"{"setStr":["c","d","e","f"]}"#,
        r#"{"setStr":["a","b","c","g","d","e","f"]}"#,
    ),
    (
        r#"{"setStr":["a","b","c"]}"#,
        r#"{"setStr":["d","e","f","x","y","z"]}"#,
        r#"{"setStr":["a","b","c","d","e","f","x","y","z"]}"#,
    ),
    (
        r#"{"setStr":["c","d","e","f"]}"#,
        r#"{"setStr":["a","c","e"]}"#,
        r#"{"setStr":["a","c","d","e","f"]}"#,
    ),
    (
        r#"{"setStr":["a","b","c","x","y","z"]}"#,
        r#"{"setStr":["d","e","f"]}"#,
        r#"{"setStr":["a","b","c","x","y","z","d","e","f"]}"#,
    ),
    (
        r#"{"setStr":["a","b","c","x","y","z"]}"#,
        r#"{"setStr":["d","e","f","x","y","z"]}"#,
        r#"{"setStr":["a","b","c","d","e","f","x","y","z"]}"#,
    ),
    (
        r#"{"setStr":["c","a","g","f"]}"#,
        r#"{"setStr":["c","f","a","g"]}"#,
        r#"{"setStr":["c","f","a","g"]}"#,
    ),
    (
        r#"{"setStr":["a","b","c","d"]}"#,
        r#"{"setStr":["d","e","f","a"]}"#,
        r#"{"setStr":["b","c","d","e","f","a"]}"#,
    ),
    (
        r#"{"setStr":["c","d","e","f","g","h","i","j"]}"#,
        r#"{"setStr":["2","h","3","e","4","k","l"]}"#,
        r#"{"setStr":["c","d","f","g","2","h","i","j","3","e","4","k","l"]}"#,
    ),
    (
        r#"{"setStr":["a","b","c","d","e","f","g","h","i","j"]}"#,
        r#"{"setStr":["1","b","2","h","3","e","4","k","l"]}"#,
        r#"{"setStr":["a","1","b","c","d","f","g","2","h","i","j","3","e","4","k","l"]}"#,
    ),
    (
        r#"{"setBool":[true]}"#,
        r#"{"setBool":[false]}"#,
        r#"{"setBool":[true,false]}"#,
    ),
    (
        r#"{"setNumeric":[1,2,3.14159]}"#,
        r#"{"setNumeric":[1,2,3]}"#,
        r#"{"setNumeric":[1,2,3.14159,3]}"#,
    ),
    (
        r#"{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}"#,
        r#"{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}"#,
        r#"{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}"#,
    ),
    (
        r#"{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}"#,
        r#"{"list":[{"key":"a","id":2,"value":{"a":"a"}}]}"#,
        r#"{"list":[{"key":"a","id":1,"value":{"a":"a"}},{"key":"a","id":2,"value":{"a":"a"}}]}"#,
    ),
    (
        r#"{"list":[{"key":"a","id":1},{"key":"b","id":1}]}"#,
        r#"{"list":[{"key":"a","id":1},{"key":"a","id":2}]}"#,
        r#"{"list":[{"key":"a","id":1},{"key":"b","id":1},{"key":"a","id":2}]}"#,
    ),
    (
        r#"{"list":[{"key":"b","id":2}]}"#,
        r#"{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}"#,
        r#"{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}"#,
    ),
    (
        r#"{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}"#,
        r#"{"list":[{"key":"c","id":3},{"key":"b","id":2}]}"#,
        r#"{"list":[{"key":"a","id":1},{"key":"c","id":3},{"key":"b","id":2}]}"#,
    ),
    (
        r#"{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}"#,
        r#"{"list":[{"key":"c","id":3},{"key":"a","id":1}]}"#,
        r#"{"list":[{"key":"b","id":2},{"key":"c","id":3},{"key":"a","id":1}]}"#,
    ),
    (
        r#"{"atomicList":["a","b","c"]}"#,
        r#"{"atomicList":[]}"#,
        r#"{"atomicList":[]}"#,
    ),
    (
        r#"{"atomicList":["a","a","a"]}"#,
        r#"{"atomicList":["a","a"]}"#,
        r#"{"atomicList":["a","a"]}"#,
    ),
    (r#"{"inner":{}}"#, r#"{"inner":{}}"#, r#"{"inner":{}}"#),
    (r#"{}"#, r#"{"inner":{}}"#, r#"{"inner":{}}"#),
    (
        r#"{"inner":{"value":1}}"#,
        r#"{"inner":{}}"#,
        r#"{"inner":{"value":1}}"#,
    ),
];

fn parse(s: &str) -> Value {
    match serde_json::from_str(s) {
        Ok(v) => v,
        Err(e) => panic!("bad fixture {s}: {e}"),
    }
}

#[test]
fn merge_triplets_from_structured_merge_diff() {
    for (lhs, rhs, out) in TRIPLETS {
        assert_eq!(
            merge(&MyRoot, &parse(lhs), &parse(rhs)),
            parse(out),
            "{lhs} + {rhs}"
        );
    }
}

fn f(name: &str) -> PathElement {
    PathElement::field(name)
}

fn item(key: &str, id: i64) -> PathElement {
    PathElement::key([
        ("key".to_string(), json!(key)),
        ("id".to_string(), json!(id)),
    ])
}

#[test]
fn to_field_set_owns_leaves_items_and_open_map_entries() {
    let v = json!({
        "numeric": 1,
        "setStr": ["a"],
        "atomicList": [],
        "list": [{"key": "a", "id": 1, "value": {"x": "y"}}],
        "inner": {}
    });
    let set = to_field_set(&MyRoot, &v);
    let expected = FieldSet::from_paths([
        &[f("numeric")][..],
        &[f("setStr"), PathElement::Value(json!("a"))],
        &[f("atomicList")],
        &[f("list"), item("a", 1)],
        &[f("list"), item("a", 1), f("key")],
        &[f("list"), item("a", 1), f("id")],
        &[f("list"), item("a", 1), f("value"), f("x")],
    ]);
    assert_eq!(set, expected);
}

#[test]
fn compare_reports_leaves_and_appearing_containers() {
    let lhs = json!({"numeric": 1, "string": "s", "list": [{"key": "a", "id": 1, "bv": true}]});
    let rhs = json!({"numeric": 2, "bool": true, "list": [{"key": "b", "id": 2}], "inner": {}});
    let c = compare(&MyRoot, &lhs, &rhs);
    assert_eq!(c.modified, FieldSet::from_paths([&[f("numeric")][..]]));
    assert_eq!(
        c.added,
        FieldSet::from_paths([
            &[f("bool")][..],
            &[f("inner")],
            &[f("list"), item("b", 2)],
            &[f("list"), item("b", 2), f("key")],
            &[f("list"), item("b", 2), f("id")],
        ])
    );
    assert_eq!(
        c.removed,
        FieldSet::from_paths([
            &[f("string")][..],
            &[f("list"), item("a", 1)],
            &[f("list"), item("a", 1), f("key")],
            &[f("list"), item("a", 1), f("id")],
            &[f("list"), item("a", 1), f("bv")],
        ])
    );
    assert!(compare(&MyRoot, &lhs, &lhs).is_same());
    // null is absent.
    assert!(compare(&MyRoot, &json!({"a": null}), &json!({})).is_same());
}

#[test]
fn remove_items_drops_members_and_emptied_containers() {
    let v = json!({
        "keep": 1,
        "setStr": ["a", "b"],
        "list": [{"key": "a", "id": 1, "bv": true}, {"key": "b", "id": 2}],
        "inner": {"value": {"x": "y"}}
    });
    let mut set = FieldSet::new();
    set.insert(&[f("setStr"), PathElement::Value(json!("a"))]);
    set.insert(&[f("list"), item("b", 2)]);
    set.insert(&[f("list"), item("a", 1), f("bv")]);
    set.insert(&[f("inner"), f("value"), f("x")]);
    assert_eq!(
        remove_items(&MyRoot, &v, &set),
        json!({"keep": 1, "setStr": ["b"], "list": [{"key": "a", "id": 1}]})
    );
}
