//! Strategic merge patch, table-driven with the cases of apimachinery's
//! `strategicpatch/patch_test.go` (`customStrategicMergePatchTestCaseData`,
//! `createStrategicMergePatchTestCaseData` two-way cases and the raw cases),
//! against the same `MergeItem` type.

use serde_json::{json, Value};

use super::super::{strategic_merge, ListType, MergeSchema, PatchError};
use super::yaml;
use crate::registry::builtin_merge_schema;

/// apimachinery's test `MergeItem`: `mergingList` merges by `name`,
/// `mergingIntList` merges scalars, the `nonMerging*` lists are replaced.
struct MergeItem;

impl MergeSchema for MergeItem {
    fn list_type(&self, path: &[&str]) -> ListType {
        match path.last() {
            Some(&"mergingList") | Some(&"retainKeysMergingList") => {
                ListType::Map(vec!["name".into()])
            }
            Some(&"mergingIntList") => ListType::Set,
            _ => ListType::Atomic,
        }
    }
}

const CASES: &str = r#"
- description: unique scalars when merging lists
  original: {mergingIntList: [1, 2]}
  patch: {mergingIntList: [2, 3]}
  result: {mergingIntList: [1, 2, 3]}
- description: delete map from nested map
  original: {simpleMap: {key1: 1, key2: 1}}
  patch: {simpleMap: {$patch: delete}}
  result: {simpleMap: {}}
- description: delete all items from merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{$patch: replace}]}
  result: {mergingList: []}
- description: merge empty merging lists
  original: {mergingList: []}
  patch: {mergingList: []}
  result: {mergingList: []}
- description: delete all keys from map
  original: {name: 1, value: 1}
  patch: {$patch: replace}
  result: {}
- description: add key and delete all keys from map
  original: {name: 1, value: 1}
  patch: {other: a, $patch: replace}
  result: {other: a}
- description: delete all duplicate entries in a merging list
  original:
    mergingList: [{name: 1}, {name: 1}, {name: 2, value: a}, {name: 3}, {name: 3}]
  patch:
    mergingList: [{name: 1, $patch: delete}, {name: 3, $patch: delete}]
  result:
    mergingList: [{name: 2, value: a}]
- description: retainKeys map can add a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo}}
  patch: {retainKeysMap: {value: bar}}
  result: {retainKeysMap: {name: foo, value: bar}}
- description: retainKeys map can delete a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {value: null}}
  result: {retainKeysMap: {name: foo}}
- description: retainKeys map merge an empty map
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {}}
  result: {retainKeysMap: {name: foo, value: a}}
- description: retainKeys list can change a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  patch: {retainKeysMergingList: [{name: foo, value: b}]}
  result: {retainKeysMergingList: [{name: bar}, {name: foo, value: b}]}
- description: preserve the order from the patch in a merging list
  original: {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  patch: {mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, other: x}]}
  result: {mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, value: b, other: x}]}
- description: preserve the order from the patch in a merging list 2
  original: {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  patch: {mergingList: [{name: 3, value: c}, {name: 1, value: a}]}
  result: {mergingList: [{name: 2, value: b}, {name: 3, value: c}, {name: 1, value: a}]}
- description: preserve the order from the patch in a merging int list
  original: {mergingIntList: [1, 2, 3]}
  patch: {mergingIntList: [3, 1, 2]}
  result: {mergingIntList: [3, 1, 2]}
- description: preserve the order from the patch in a merging int list 2
  original: {mergingIntList: [1, 2, 3]}
  patch: {mergingIntList: [3, 1]}
  result: {mergingIntList: [2, 3, 1]}
- description: setElementOrder contains item that is not present in the list to be merged
  original: {mergingList: [{name: 1}, {name: 3}]}
  patch:
    $setElementOrder/mergingList: [{name: 3}, {name: 2}, {name: 1}]
    mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]
  result: {mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}
- description: setElementOrder contains item that is not present in the int list to be merged
  original: {mergingIntList: [1, 3]}
  patch: {$setElementOrder/mergingIntList: [3, 2, 1]}
  result: {mergingIntList: [3, 1]}
- description: should check if order in setElementOrder and patch list match
  original: {mergingList: [{name: 1}, {name: 3}, {name: 2}]}
  patch:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]
  error: "doesn't match"
- description: should check if order in setElementOrder and patch int list match
  original: {mergingIntList: [1, 3, 2]}
  patch:
    $setElementOrder/mergingIntList: [1, 2, 3]
    mergingIntList: [3, 1]
  error: "doesn't match"
- description: missing merge key should error out
  original: {mergingList: [{name: 1, value: a}]}
  patch: {mergingList: [{value: b}]}
  error: does not contain declared merge key
- description: deleteFromPrimitiveList of nonexistent item should not add the item to the list
  original: {mergingIntList: [1, 2]}
  patch: {$deleteFromPrimitiveList/mergingIntList: [3]}
  result: {mergingIntList: [1, 2]}
- description: deleteFromPrimitiveList on empty primitive list should not add the item to the list
  original: {mergingIntList: null}
  patch: {$deleteFromPrimitiveList/mergingIntList: [3]}
  result: {mergingIntList: null}
- description: deleteFromPrimitiveList on nonexistent primitive list should not add the primitive list
  original: {foo: [bar]}
  patch: {$deleteFromPrimitiveList/mergingIntList: [3]}
  result: {foo: [bar]}
- description: deleteFromPrimitiveList should delete item from a list with merge patch strategy
  original: {mergingIntList: [1, 2, 3]}
  patch: {$deleteFromPrimitiveList/mergingIntList: [2]}
  result: {mergingIntList: [1, 3]}
- description: deleteFromPrimitiveList should delete item from a list without merge patch strategy
  original: {nonMergingIntList: [1, 2, 3]}
  patch: {$deleteFromPrimitiveList/nonMergingIntList: [2]}
  result: {nonMergingIntList: [1, 3]}
- description: nil patch
  original: {name: 1}
  patch: {}
  result: {name: 1}
- description: add field to map
  original: {name: 1, other: a}
  patch: {value: 1}
  result: {name: 1, value: 1, other: a}
- description: add field and delete field from map
  original: {name: 1, other: a}
  patch: {name: null, value: 1}
  result: {value: 1, other: a}
- description: delete field from nested map
  original: {simpleMap: {key1: 1, key2: 1, other: a}}
  patch: {simpleMap: {key2: null}}
  result: {simpleMap: {key1: 1, other: a}}
- description: delete all fields from map
  original: {name: 1, value: 1, other: a}
  patch: {name: null, value: null}
  result: {other: a}
- description: replace list of scalars
  original: {nonMergingIntList: [1, 2]}
  patch: {nonMergingIntList: [2, 3]}
  result: {nonMergingIntList: [2, 3]}
- description: delete all maps from merging list with conflict
  original: {mergingList: [{name: 1, other: a}, {name: 2, other: b}]}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  result: {mergingList: []}
- description: delete all maps from empty merging list
  original: {mergingList: []}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  result: {mergingList: []}
- description: defined null values should propagate overwrite current fields
  original: {name: a, other: a}
  patch: {name: 1, value: 1, other: null}
  result: {name: 1, value: 1}
- description: nested patch merge with empty list drops the delete directive
  original: {name: hi}
  patch: {mergingList: [{name: hello}, {$patch: delete, name: doesntexist}]}
  result: {name: hi, mergingList: [{name: hello}]}
- description: nested patch merge with empty list and setElementOrder
  original: {name: hi, mergingList: [{name: hello2}]}
  patch:
    $setElementOrder/mergingList: [{name: hello}, {name: doesntexist}]
    mergingList: [{name: hello}, {$patch: delete, name: doesntexist}]
  result: {name: hi, mergingList: [{name: hello}, {name: hello2}]}
- description: delete items in lists of scalars
  original: {mergingIntList: [1, 2, 3, 4]}
  patch:
    $setElementOrder/mergingIntList: [1, 2]
    $deleteFromPrimitiveList/mergingIntList: [3]
  result: {mergingIntList: [1, 2, 4]}
- description: delete all duplicate items in lists of scalars
  original: {mergingIntList: [1, 2, 3, 3, 4]}
  patch:
    $setElementOrder/mergingIntList: [1, 2]
    $deleteFromPrimitiveList/mergingIntList: [3]
  result: {mergingIntList: [1, 2, 4]}
- description: add and delete items in lists of scalars
  original: {mergingIntList: [1, 2, 3]}
  patch:
    $setElementOrder/mergingIntList: [1, 2, 4]
    $deleteFromPrimitiveList/mergingIntList: [3]
    mergingIntList: [4]
  result: {mergingIntList: [1, 2, 4]}
- description: merge lists of maps
  original: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
  patch:
    $setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  result:
    mergingList:
    - {name: 4, value: 4}
    - {name: 1, other: a}
    - {name: 2, value: 2, other: b}
    - {name: 3, value: 3}
- description: merge lists of maps without setElementOrder puts new items first
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{name: 3, value: 3}]}
  result: {mergingList: [{name: 3, value: 3}, {name: 1}, {name: 2}]}
- description: nested merging lists merge recursively
  original:
    mergingList:
    - name: 1
      mergingList: [{name: a, value: x}]
  patch:
    mergingList:
    - name: 1
      mergingList: [{name: a, other: y}, {name: b}]
  result:
    mergingList:
    - name: 1
      mergingList: [{name: a, value: x, other: y}, {name: b}]
- description: nonmerging list of maps is replaced
  original: {nonMergingList: [{name: 1, value: a}, {name: 2}]}
  patch: {nonMergingList: [{name: 1}]}
  result: {nonMergingList: [{name: 1}]}
- description: retainKeys directive clears unlisted fields
  original: {retainKeysMap: {name: foo, value: a, other: b}}
  patch: {retainKeysMap: {$retainKeys: [name, value], value: c}}
  result: {retainKeysMap: {name: foo, value: c}}
- description: retainKeys directive must list every patched field
  original: {retainKeysMap: {name: foo}}
  patch: {retainKeysMap: {$retainKeys: [name], value: c}}
  error: invalid patch format of retainKeys
- description: retainKeys must be a list
  original: {retainKeysMap: {name: foo}}
  patch: {retainKeysMap: {$retainKeys: name}}
  error: invalid patch format of retainKeys
- description: merge directive on a list item is refused
  original: {mergingList: [{name: 1}]}
  patch: {mergingList: [{name: 1, $patch: merge}]}
  error: merging lists cannot yet be specified in the patch
- description: unknown directive on a map is refused
  original: {simpleMap: {a: b}}
  patch: {simpleMap: {$patch: bogus}}
  error: "unknown patch type: bogus"
- description: malformed deleteFromPrimitiveList key
  original: {mergingIntList: [1]}
  patch: {$deleteFromPrimitiveList: [1]}
  error: invalid patch format of primitive list
- description: malformed setElementOrder key
  original: {mergingIntList: [1]}
  patch: {$setElementOrder: [1]}
  error: invalid patch format of setElementOrder list
- description: lists of lists are refused
  original: {mergingIntList: [[1]]}
  patch: {mergingIntList: [[2]]}
  error: lists of lists are not supported
- description: replacing a map with a scalar
  original: {simpleMap: {a: b}}
  patch: {simpleMap: x}
  result: {simpleMap: x}
- description: new content is stored without nulls or directives
  original: {name: 1}
  patch: {simpleMap: {a: b, c: null}, mergingList: [{name: x, $setElementOrder/mergingList: []}]}
  result: {name: 1, simpleMap: {a: b}, mergingList: [{name: x}]}
"#;

#[test]
fn strategic_merge_patch_table_from_apimachinery() {
    let cases = yaml(CASES);
    let cases = cases.as_array().expect("cases");
    assert!(cases.len() > 40);
    for case in cases {
        let name = case["description"].as_str().unwrap_or("?");
        let got = strategic_merge(&case["original"], &case["patch"], &MergeItem);
        match (case.get("result"), case.get("error")) {
            (Some(expected), _) => match got {
                Ok(v) => assert_eq!(&v, expected, "{name}"),
                Err(e) => panic!("{name}: unexpected error {e}"),
            },
            (None, Some(err)) => {
                let err = err.as_str().unwrap_or("");
                match got {
                    Ok(v) => panic!("{name}: expected error {err:?}, got {v}"),
                    Err(e) => assert!(e.to_string().contains(err), "{name}: {e}"),
                }
            }
            _ => panic!("{name}: case without result or error"),
        }
    }
}

#[test]
fn patch_errors_map_to_kube_apiserver_status_codes() {
    assert_eq!(PatchError::BadJsonDoc.http_status(), 400);
    assert_eq!(PatchError::BadPatchFormatForRetainKeys.http_status(), 400);
    assert_eq!(PatchError::NoListOfLists.http_status(), 422);
    let no_key = strategic_merge(
        &json!({"mergingList": [{"name": 1}]}),
        &json!({"mergingList": [{"value": 2}]}),
        &MergeItem,
    )
    .unwrap_err();
    assert_eq!(
        no_key.to_string(),
        r#"map: {"value":2} does not contain declared merge key: name"#
    );
    assert_eq!(no_key.http_status(), 500);
    assert_eq!(
        strategic_merge(&json!([]), &json!({}), &MergeItem),
        Err(PatchError::BadJsonDoc)
    );
}

#[test]
fn strategic_merge_leaves_inputs_alone() {
    let original = json!({"mergingList": [{"name": 1}], "a": 1});
    let patch = json!({"mergingList": [{"name": 2}], "a": null});
    let before = (original.clone(), patch.clone());
    strategic_merge(&original, &patch, &MergeItem).unwrap();
    assert_eq!((original, patch), before);
}

fn deployment() -> Value {
    yaml(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  finalizers: [a]
spec:
  template:
    spec:
      containers:
      - name: app
        image: app:1
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        ports: [{containerPort: 80, protocol: TCP}, {containerPort: 53, protocol: UDP}]
      tolerations: [{key: x, operator: Exists}]
"#,
    )
}

#[test]
fn builtin_deployment_containers_merge_by_name_and_env_by_name() {
    let schema = builtin_merge_schema("apps", "Deployment");
    let patch = yaml(
        r#"
spec:
  template:
    spec:
      containers:
      - name: app
        image: app:2
        env: [{name: B, value: "3"}, {name: C, value: "4"}]
"#,
    );
    let got = strategic_merge(&deployment(), &patch, schema).unwrap();
    let c = &got["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "app:2");
    // B is updated in place; A, known to the server before B, stays first.
    assert_eq!(
        c["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}])
    );
    assert_eq!(c["ports"].as_array().map(Vec::len), Some(2));
}

#[test]
fn builtin_container_ports_merge_by_container_port_only() {
    // `patchMergeKey:"containerPort"`: a patch item with the same port but
    // another protocol merges into the existing item.
    let schema = builtin_merge_schema("apps", "Deployment");
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "ports": [{"containerPort": 53, "name": "dns"}]}
    ]}}}});
    let got = strategic_merge(&deployment(), &patch, schema).unwrap();
    assert_eq!(
        got["spec"]["template"]["spec"]["containers"][0]["ports"],
        json!([
            {"containerPort": 80, "protocol": "TCP"},
            {"containerPort": 53, "protocol": "UDP", "name": "dns"}
        ])
    );
}

#[test]
fn builtin_tolerations_are_replaced_and_finalizers_merged() {
    let schema = builtin_merge_schema("apps", "Deployment");
    let patch = json!({
        "metadata": {"finalizers": ["b"]},
        "spec": {"template": {"spec": {"tolerations": [{"key": "y", "operator": "Exists"}]}}}
    });
    let got = strategic_merge(&deployment(), &patch, schema).unwrap();
    // A new item of a merging list lands before the server's items
    // (`mergeSortedSlice` only orders items the server knows).
    assert_eq!(got["metadata"]["finalizers"], json!(["b", "a"]));
    assert_eq!(
        got["spec"]["template"]["spec"]["tolerations"],
        json!([{"key": "y", "operator": "Exists"}])
    );
}

#[test]
fn kubectl_style_patch_with_set_element_order_and_delete() {
    // What kubectl apply (client-side) sends to remove container B and
    // reorder: a delete directive plus `$setElementOrder`.
    let schema = builtin_merge_schema("", "Pod");
    let live = json!({"spec": {"containers": [
        {"name": "a", "image": "a"}, {"name": "b", "image": "b"}, {"name": "c", "image": "c"}
    ]}});
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
        "containers": [{"name": "b", "$patch": "delete"}]
    }});
    let got = strategic_merge(&live, &patch, schema).unwrap();
    assert_eq!(
        got["spec"]["containers"],
        json!([{"name": "c", "image": "c"}, {"name": "a", "image": "a"}])
    );
}
