//! Properties over generated Deployments: applying a configuration twice is
//! a no-op, an apply leaves the configuration's values in the object and
//! makes the applier own exactly its fields, and a strategic merge patch of
//! an object with itself changes nothing.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::super::typed::item_key;
use super::super::{
    apply, decode_managed_fields, field_set, strategic_merge, track_update, values_equal, ListType,
    MergeSchema, Operation, Path, PathElement,
};
use crate::registry::builtin_merge_schema;

fn schema() -> &'static dyn MergeSchema {
    builtin_merge_schema("apps", "Deployment")
}

fn container() -> impl Strategy<Value = Value> {
    (
        "[a-z]{1,3}",
        prop::collection::btree_map("[A-C]", "[a-z]{0,2}", 0..3),
        prop::collection::btree_set(80u16..84, 0..3),
        prop::option::of(prop::collection::vec("[a-z]", 0..3)),
    )
        .prop_map(|(image, env, ports, args)| {
            let mut c = Map::new();
            c.insert("image".into(), json!(image));
            if !env.is_empty() {
                let env: Vec<Value> = env
                    .into_iter()
                    .map(|(name, value)| json!({"name": name, "value": value}))
                    .collect();
                c.insert("env".into(), Value::Array(env));
            }
            if !ports.is_empty() {
                let ports: Vec<Value> = ports
                    .into_iter()
                    .map(|p| json!({"containerPort": p}))
                    .collect();
                c.insert("ports".into(), Value::Array(ports));
            }
            if let Some(args) = args {
                c.insert("args".into(), json!(args));
            }
            Value::Object(c)
        })
}

/// A Deployment configuration with a random subset of fields.
fn config() -> impl Strategy<Value = Value> {
    (
        prop::collection::btree_map("[a-c]", "[a-z]{1,2}", 0..3),
        prop::option::of(0i64..4),
        prop::option::of(any::<bool>()),
        prop::collection::btree_set("[x-z]", 0..3),
        prop::collection::btree_map("[a-d]", container(), 0..3),
        prop::option::of(prop::collection::btree_map("[a-b]", "[a-z]", 1..3)),
    )
        .prop_map(
            |(labels, replicas, paused, finalizers, containers, selector)| {
                let mut meta = Map::new();
                meta.insert("name".into(), json!("web"));
                meta.insert("namespace".into(), json!("default"));
                if !labels.is_empty() {
                    meta.insert("labels".into(), json!(labels));
                }
                if !finalizers.is_empty() {
                    meta.insert("finalizers".into(), json!(finalizers));
                }
                let mut spec = Map::new();
                if let Some(r) = replicas {
                    spec.insert("replicas".into(), json!(r));
                }
                if let Some(p) = paused {
                    spec.insert("paused".into(), json!(p));
                }
                if let Some(s) = selector {
                    spec.insert("selector".into(), json!({"matchLabels": s}));
                }
                if !containers.is_empty() {
                    let containers: Vec<Value> = containers
                        .into_iter()
                        .map(|(name, mut c)| {
                            c["name"] = json!(name);
                            c
                        })
                        .collect();
                    spec.insert(
                        "template".into(),
                        json!({"spec": {"containers": containers}}),
                    );
                }
                let mut obj = Map::new();
                obj.insert("apiVersion".into(), json!("apps/v1"));
                obj.insert("kind".into(), json!("Deployment"));
                obj.insert("metadata".into(), Value::Object(meta));
                if !spec.is_empty() {
                    obj.insert("spec".into(), Value::Object(spec));
                }
                Value::Object(obj)
            },
        )
}

/// Whether every value `config` sets is in `obj`, lists matched per the schema.
fn contains(
    schema: &dyn MergeSchema,
    config: &Value,
    obj: &Value,
    spath: &mut Vec<String>,
) -> bool {
    let owned = spath.clone();
    let path: Vec<&str> = owned.iter().map(String::as_str).collect();
    match config {
        Value::Null => true,
        Value::Object(map) if spath.is_empty() || !schema.map_is_atomic(&path) => {
            map.iter().all(|(k, v)| {
                if v.is_null() {
                    return true;
                }
                let Some(o) = obj.get(k) else {
                    return false;
                };
                spath.push(k.clone());
                let ok = contains(schema, v, o, spath);
                spath.pop();
                ok
            })
        }
        Value::Array(items) => {
            let list = schema.list_type(&path);
            if list == ListType::Atomic {
                return values_equal(config, obj);
            }
            let Some(obj_items) = obj.as_array() else {
                return false;
            };
            let keyed: BTreeMap<_, &Value> = obj_items
                .iter()
                .enumerate()
                .filter_map(|(i, v)| item_key(schema, &path, &list, i, v).ok().map(|k| (k, v)))
                .collect();
            items.iter().enumerate().all(|(i, item)| {
                let Ok(key) = item_key(schema, &path, &list, i, item) else {
                    return false;
                };
                keyed
                    .get(&key)
                    .is_some_and(|o| contains(schema, item, o, spath))
            })
        }
        _ => values_equal(config, obj),
    }
}

/// Whether `path` names something `obj` has, list items found by key.
fn exists(schema: &dyn MergeSchema, obj: &Value, path: &Path) -> bool {
    let mut spath: Vec<&str> = Vec::new();
    let mut cur = obj;
    for pe in &path.0 {
        let next = match pe {
            PathElement::Field(name) => {
                spath.push(name);
                cur.get(name)
            }
            PathElement::Index(i) => cur.get(*i),
            PathElement::Value(v) => cur
                .as_array()
                .and_then(|items| items.iter().find(|i| *i == v)),
            PathElement::Key(_) => {
                let list = schema.list_type(&spath);
                cur.as_array().and_then(|items| {
                    items.iter().enumerate().find_map(|(i, item)| {
                        (item_key(schema, &spath, &list, i, item).ok().as_ref() == Some(pe))
                            .then_some(item)
                    })
                })
            }
        };
        match next {
            Some(v) if !v.is_null() => cur = v,
            _ => return false,
        }
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn applying_a_configuration_twice_is_a_no_op(
        base in config(), created in any::<bool>(), first in prop::option::of(config()), cfg in config()
    ) {
        // The object exists, made by another applier or by a plain create.
        let live = if created {
            let mut obj = base.clone();
            obj["metadata"]["uid"] = json!("u-1");
            track_update(None, &mut obj, "creator", None, "2024-01-01T00:00:00Z", schema());
            obj
        } else {
            apply(None, &base, "other", true, None, "2024-01-01T00:00:00Z", schema()).unwrap()
        };
        // `m` may have applied something else before, which it now prunes.
        let live = match &first {
            Some(first) => apply(Some(&live), first, "m", true, None, "2024-01-01T00:00:30Z", schema()).unwrap(),
            None => live,
        };
        let once = apply(Some(&live), &cfg, "m", true, None, "2024-01-01T00:01:00Z", schema()).unwrap();
        let twice = apply(Some(&once), &cfg, "m", false, None, "2024-01-01T00:02:00Z", schema());
        prop_assert_eq!(twice.as_ref(), Ok(&once));
    }

    #[test]
    fn every_owned_field_exists_in_the_object(
        base in config(), cfg in config(), edit in config()
    ) {
        let mut live = apply(None, &base, "a", true, None, "2024-01-01T00:00:00Z", schema()).unwrap();
        live["metadata"]["uid"] = json!("u-1");
        let live = apply(Some(&live), &cfg, "b", true, None, "2024-01-01T00:01:00Z", schema()).unwrap();
        // An update replacing the whole spec and labels with `edit`'s.
        let mut edited = live.clone();
        edited["spec"] = edit.get("spec").cloned().unwrap_or(json!({}));
        edited["metadata"]["labels"] = edit["metadata"].get("labels").cloned().unwrap_or(json!({}));
        track_update(Some(&live), &mut edited, "editor", None, "2024-01-01T00:02:00Z", schema());
        for entry in decode_managed_fields(&edited).unwrap() {
            for path in entry.fields.paths() {
                prop_assert!(
                    exists(schema(), &edited, &path),
                    "{} owns {} which {} does not have", entry.manager, path, edited
                );
            }
        }
    }

    #[test]
    fn an_apply_lands_the_configuration_and_owns_exactly_it(
        base in config(), first in config(), cfg in config()
    ) {
        let live = apply(None, &base, "other", true, None, "2024-01-01T00:00:00Z", schema()).unwrap();
        let live = apply(Some(&live), &first, "m", true, None, "2024-01-01T00:01:00Z", schema()).unwrap();
        let out = apply(Some(&live), &cfg, "m", true, None, "2024-01-01T00:02:00Z", schema()).unwrap();
        prop_assert!(contains(schema(), &cfg, &out, &mut Vec::new()), "config {} not in {}", cfg, out);
        let entries = decode_managed_fields(&out).unwrap();
        let mine = entries
            .iter()
            .find(|e| e.manager == "m" && e.operation == Operation::Apply)
            .map(|e| e.fields.clone())
            .unwrap_or_default();
        prop_assert_eq!(mine, field_set(&cfg, schema()));
    }

    #[test]
    fn a_strategic_merge_patch_of_an_object_with_itself_changes_nothing(obj in config()) {
        prop_assert_eq!(strategic_merge(&obj, &obj, schema()), Ok(obj.clone()));
    }

    #[test]
    fn strategic_merge_with_an_empty_patch_changes_nothing(obj in config()) {
        prop_assert_eq!(strategic_merge(&obj, &json!({}), schema()), Ok(obj.clone()));
    }
}
