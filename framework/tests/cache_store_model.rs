//! Property test: the indexed store against a plain model (a sorted map of
//! key -> object, with every index recomputed by brute force), under random
//! adds, updates, same-version resends, deletes, relists, bookmarks and
//! indexes added at random points.
//!
//! After every step the store must agree with the model on every key, every
//! namespace, every index value and the last synced resourceVersion, and
//! each write must report what it did (added / updated / unchanged /
//! deleted / absent; replace: which keys vanished, with their last `Arc`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_core::ObjectMeta;
use kubeforge::cache::{Applied, Delta, Error, ObjectKey, StoreWriter, NAMESPACE_INDEX};
use proptest::prelude::*;

/// (namespace: 0 = cluster-scoped, 1 = "a", 2 = "b"; name 0..4)
type Slot = (u8, u8);
/// Label `app` (0 = absent, 1 = web, 2 = db) and a bit set of data keys.
type Shape = (u8, u8);

#[derive(Debug, Clone)]
enum Op {
    Add(Slot, Shape),
    Update(Slot, Shape),
    /// Re-applies the stored object's resourceVersion with another shape.
    Resend(Slot, Shape),
    Delete(Slot),
    Replace(BTreeMap<Slot, Shape>),
    Bookmark,
    AddIndex(u8),
}

fn slot() -> impl Strategy<Value = Slot> {
    (0..3u8, 0..4u8)
}

fn shape() -> impl Strategy<Value = Shape> {
    (0..3u8, 0..8u8)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (slot(), shape()).prop_map(|(k, s)| Op::Add(k, s)),
        6 => (slot(), shape()).prop_map(|(k, s)| Op::Update(k, s)),
        2 => (slot(), shape()).prop_map(|(k, s)| Op::Resend(k, s)),
        4 => slot().prop_map(Op::Delete),
        2 => prop::collection::btree_map(slot(), shape(), 0..8).prop_map(Op::Replace),
        1 => Just(Op::Bookmark),
        1 => (0..3u8).prop_map(Op::AddIndex),
    ]
}

fn key_of(slot: Slot) -> ObjectKey {
    let name = format!("n{}", slot.1);
    match slot.0 {
        0 => ObjectKey::cluster_scoped(name),
        1 => ObjectKey::namespaced("a", name),
        _ => ObjectKey::namespaced("b", name),
    }
}

fn object(slot: Slot, shape: Shape, rv: u64) -> Arc<ConfigMap> {
    let key = key_of(slot);
    let labels = match shape.0 {
        1 => Some(BTreeMap::from([("app".to_owned(), "web".to_owned())])),
        2 => Some(BTreeMap::from([("app".to_owned(), "db".to_owned())])),
        _ => None,
    };
    let data = (0..3)
        .filter(|bit| shape.1 & (1 << bit) != 0)
        .map(|bit| (format!("k{bit}"), String::new()))
        .collect::<BTreeMap<_, _>>();
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(key.name),
            namespace: key.namespace,
            resource_version: Some(rv.to_string()),
            labels,
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    })
}

/// The custom indexes: single-valued, multi-valued, and one that repeats a
/// value and yields nothing for some objects.
const INDEXES: [&str; 3] = ["app", "data-keys", "app-twice"];

fn index_fn(which: u8) -> fn(&ConfigMap) -> Vec<String> {
    match which {
        0 => |cm| {
            cm.metadata
                .labels
                .iter()
                .flatten()
                .filter(|(k, _)| *k == "app")
                .map(|(_, v)| v.clone())
                .collect()
        },
        1 => |cm| cm.data.iter().flatten().map(|(k, _)| k.clone()).collect(),
        _ => |cm| {
            let app = cm
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app"))
                .cloned();
            app.map(|a| vec![a.clone(), a]).unwrap_or_default()
        },
    }
}

fn model_values(name: &str, func: Option<u8>, obj: &ConfigMap) -> Vec<String> {
    match func {
        Some(which) => index_fn(which)(obj),
        None => {
            assert_eq!(name, NAMESPACE_INDEX);
            vec![obj.metadata.namespace.clone().unwrap_or_default()]
        }
    }
}

fn check(
    writer: &StoreWriter<ConfigMap>,
    model: &BTreeMap<ObjectKey, Arc<ConfigMap>>,
    indexes: &BTreeMap<String, Option<u8>>,
    last_rv: &Option<String>,
) -> Result<(), TestCaseError> {
    let store = writer.store();
    prop_assert_eq!(store.len(), model.len());
    let listed: BTreeSet<ObjectKey> = store.list_keys().into_iter().collect();
    prop_assert_eq!(&listed, &model.keys().cloned().collect::<BTreeSet<_>>());
    for ns in [0, 1, 2] {
        for name in 0..4 {
            let key = key_of((ns, name));
            match (store.get(&key), model.get(&key)) {
                (Some(got), Some(want)) => {
                    prop_assert!(Arc::ptr_eq(&got, want), "{key} not the model's Arc")
                }
                (None, None) => {}
                (got, want) => prop_assert!(
                    false,
                    "{key}: store {:?} model {:?}",
                    got.is_some(),
                    want.is_some()
                ),
            }
        }
    }
    for ns in ["", "a", "b", "c"] {
        let got: BTreeSet<ObjectKey> = store
            .list_namespace(ns)
            .iter()
            .map(|o| ObjectKey::of(o.as_ref()))
            .collect();
        let want: BTreeSet<ObjectKey> = model
            .keys()
            .filter(|k| k.namespace_or_empty() == ns)
            .cloned()
            .collect();
        prop_assert_eq!(got, want, "namespace {:?}", ns);
    }

    let mut names: Vec<String> = store.index_names();
    names.sort();
    prop_assert_eq!(names, indexes.keys().cloned().collect::<Vec<_>>());
    for (name, func) in indexes {
        let mut want: BTreeMap<String, BTreeSet<ObjectKey>> = BTreeMap::new();
        for (key, obj) in model {
            for v in model_values(name, *func, obj) {
                want.entry(v).or_default().insert(key.clone());
            }
        }
        let values: BTreeSet<String> = store
            .list_index_func_values(name)
            .unwrap()
            .into_iter()
            .collect();
        prop_assert_eq!(
            &values,
            &want.keys().cloned().collect::<BTreeSet<_>>(),
            "values of {}",
            name
        );
        for probe in want
            .keys()
            .map(String::as_str)
            .chain(["", "a", "web", "db", "k0", "missing"])
        {
            let keys: BTreeSet<ObjectKey> =
                store.index_keys(name, probe).unwrap().into_iter().collect();
            let expected = want.get(probe).cloned().unwrap_or_default();
            prop_assert_eq!(&keys, &expected, "index {} value {:?}", name, probe);
            let objs = store.by_index(name, probe).unwrap();
            prop_assert_eq!(objs.len(), expected.len());
            for o in objs {
                let k = ObjectKey::of(o.as_ref());
                prop_assert!(model.get(&k).is_some_and(|m| Arc::ptr_eq(m, &o)));
            }
        }
    }
    prop_assert_eq!(
        store.by_index("nope", "x").unwrap_err(),
        Error::IndexNotFound("nope".into())
    );
    prop_assert_eq!(&store.last_sync_resource_version(), last_rv);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn store_and_indexes_agree_with_a_model(ops in prop::collection::vec(op(), 1..60)) {
        let mut writer = StoreWriter::<ConfigMap>::new();
        let mut model: BTreeMap<ObjectKey, Arc<ConfigMap>> = BTreeMap::new();
        let mut indexes: BTreeMap<String, Option<u8>> = BTreeMap::from([(NAMESPACE_INDEX.to_owned(), None)]);
        let mut rv = 0u64;
        let mut last_rv: Option<String> = None;

        for op in ops {
            match op {
                Op::Add(slot, shape) | Op::Update(slot, shape) => {
                    rv += 1;
                    let obj = object(slot, shape, rv);
                    let delta = if matches!(op, Op::Add(..)) { Delta::Added(Arc::clone(&obj)) } else { Delta::Updated(Arc::clone(&obj)) };
                    let applied = writer.apply(delta);
                    match model.insert(key_of(slot), Arc::clone(&obj)) {
                        Some(old) => {
                            let ok = matches!(applied, Applied::Updated { old: o, new: n } if Arc::ptr_eq(&o, &old) && Arc::ptr_eq(&n, &obj));
                            prop_assert!(ok, "expected an update");
                        }
                        None => {
                            let ok = matches!(applied, Applied::Added(n) if Arc::ptr_eq(&n, &obj));
                            prop_assert!(ok, "expected an add");
                        }
                    }
                    last_rv = Some(rv.to_string());
                }
                Op::Resend(slot, shape) => {
                    let Some(current) = model.get(&key_of(slot)).cloned() else { continue };
                    let same_rv: u64 = current.metadata.resource_version.as_deref().unwrap_or("0").parse().unwrap();
                    let applied = writer.apply(Delta::Updated(object(slot, shape, same_rv)));
                    let ok = matches!(applied, Applied::Unchanged(kept) if Arc::ptr_eq(&kept, &current));
                    prop_assert!(ok, "expected unchanged");
                    last_rv = Some(same_rv.to_string());
                }
                Op::Delete(slot) => {
                    rv += 1;
                    let applied = writer.apply(Delta::Deleted(object(slot, (0, 0), rv)));
                    match model.remove(&key_of(slot)) {
                        Some(old) => {
                            let ok = matches!(applied, Applied::Deleted(o) if Arc::ptr_eq(&o, &old));
                            prop_assert!(ok, "expected a delete");
                        }
                        None => prop_assert!(matches!(applied, Applied::Absent), "expected absent"),
                    }
                    last_rv = Some(rv.to_string());
                }
                Op::Replace(items) => {
                    rv += 1;
                    let objs: Vec<Arc<ConfigMap>> = items.iter().map(|(slot, shape)| object(*slot, *shape, rv)).collect();
                    let listed: BTreeSet<ObjectKey> = items.keys().map(|s| key_of(*s)).collect();
                    let want_vanished: Vec<(ObjectKey, Arc<ConfigMap>)> =
                        model.iter().filter(|(k, _)| !listed.contains(k)).map(|(k, o)| (k.clone(), Arc::clone(o))).collect();
                    let out = writer.replace(objs.clone(), format!("list-{rv}"));
                    prop_assert_eq!(out.vanished.len(), want_vanished.len());
                    for ((gk, go), (wk, wo)) in out.vanished.iter().zip(&want_vanished) {
                        prop_assert_eq!(gk, wk);
                        prop_assert!(Arc::ptr_eq(go, wo));
                    }
                    prop_assert_eq!(out.applied.len(), objs.len());
                    for (applied, obj) in out.applied.iter().zip(&objs) {
                        let existed = model.contains_key(&ObjectKey::of(obj.as_ref()));
                        let ok = match applied {
                            Applied::Added(n) => !existed && Arc::ptr_eq(n, obj),
                            Applied::Updated { new, .. } => existed && Arc::ptr_eq(new, obj),
                            _ => false,
                        };
                        prop_assert!(ok, "listed item reported wrongly: {:?}", applied);
                    }
                    model = objs.into_iter().map(|o| (ObjectKey::of(o.as_ref()), o)).collect();
                    last_rv = Some(format!("list-{rv}"));
                }
                Op::Bookmark => {
                    rv += 1;
                    writer.set_resource_version(format!("bookmark-{rv}"));
                    last_rv = Some(format!("bookmark-{rv}"));
                }
                Op::AddIndex(which) => {
                    let name = INDEXES[which as usize];
                    let result = writer.store().add_index(name, index_fn(which));
                    if indexes.contains_key(name) {
                        prop_assert_eq!(result, Err(Error::IndexExists(name.to_owned())));
                    } else {
                        prop_assert_eq!(result, Ok(()));
                        indexes.insert(name.to_owned(), Some(which));
                    }
                }
            }
            check(&writer, &model, &indexes, &last_rv)?;
        }
    }
}
