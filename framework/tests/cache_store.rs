//! The indexed store through its public API: index look-ups right after
//! each kind of write, indexes added to a populated store, relists that
//! report vanished keys, dynamic and metadata-only objects, and readers
//! running against a busy writer.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_core::{ApiResource, DynamicObject, ObjectMeta, PartialObjectMeta, Resource};
use kubeforge::cache::{
    strip_managed_fields, Delta, DeltaSink, Error, ObjectKey, Store, StoreWriter, NAMESPACE_INDEX,
};

fn pod(ns: &str, name: &str, rv: u64, owner: Option<&str>, node: &str) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            resource_version: Some(rv.to_string()),
            owner_references: owner.map(|o| {
                vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "ReplicaSet".into(),
                    name: o.into(),
                    uid: format!("uid-{o}"),
                    controller: Some(true),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            node_name: Some(node.into()),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// The index controllers use most: owner UID -> owned objects.
fn by_owner(p: &Pod) -> Vec<String> {
    p.metadata
        .owner_references
        .iter()
        .flatten()
        .map(|o| o.uid.clone())
        .collect()
}

fn by_node(p: &Pod) -> Vec<String> {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect()
}

fn keys<K: Resource>(objs: Vec<Arc<K>>) -> Vec<String> {
    let mut v: Vec<String> = objs
        .iter()
        .map(|o| ObjectKey::of(o.as_ref()).to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn index_lookups_are_right_after_adds_updates_and_deletes() {
    let mut w = StoreWriter::new();
    let s = w.store();
    s.add_index("owner", by_owner).unwrap();
    s.add_index("node", by_node).unwrap();

    w.apply(Delta::Added(pod("a", "p1", 1, Some("rs1"), "n1")));
    w.apply(Delta::Added(pod("a", "p2", 2, Some("rs1"), "n2")));
    w.apply(Delta::Added(pod("b", "p3", 3, None, "n1")));
    assert_eq!(
        keys(s.by_index("owner", "uid-rs1").unwrap()),
        ["a/p1", "a/p2"]
    );
    assert_eq!(keys(s.by_index("node", "n1").unwrap()), ["a/p1", "b/p3"]);
    assert_eq!(keys(s.list_namespace("a")), ["a/p1", "a/p2"]);

    // Re-parented and rescheduled.
    w.apply(Delta::Updated(pod("a", "p2", 4, Some("rs2"), "n1")));
    assert_eq!(keys(s.by_index("owner", "uid-rs1").unwrap()), ["a/p1"]);
    assert_eq!(keys(s.by_index("owner", "uid-rs2").unwrap()), ["a/p2"]);
    assert_eq!(
        keys(s.by_index("node", "n1").unwrap()),
        ["a/p1", "a/p2", "b/p3"]
    );
    assert!(s.by_index("node", "n2").unwrap().is_empty());

    w.apply(Delta::Deleted(pod("a", "p1", 5, Some("rs1"), "n1")));
    assert!(s.by_index("owner", "uid-rs1").unwrap().is_empty());
    let mut values = s.list_index_func_values("owner").unwrap();
    values.sort();
    assert_eq!(values, ["uid-rs2"]);
    assert_eq!(s.index_keys("node", "n1").unwrap().len(), 2);
    assert_eq!(
        s.get_by(Some("a"), "p2")
            .map(|p| p.metadata.resource_version.clone().unwrap())
            .as_deref(),
        Some("4")
    );
    assert!(s.get(&"a/p1".parse().unwrap()).is_none());
}

#[test]
fn index_added_after_items_exist_indexes_them_at_once() {
    let mut w = StoreWriter::new();
    for i in 0..100u64 {
        w.apply(Delta::Added(pod(
            "a",
            &format!("p{i}"),
            i + 1,
            Some(if i % 2 == 0 { "even" } else { "odd" }),
            "n",
        )));
    }
    let s = w.store();
    assert_eq!(
        s.by_index("owner", "uid-even").unwrap_err(),
        Error::IndexNotFound("owner".into())
    );
    s.add_index("owner", by_owner).unwrap();
    assert_eq!(s.by_index("owner", "uid-even").unwrap().len(), 50);
    assert_eq!(s.index_keys("owner", "uid-odd").unwrap().len(), 50);
    // And it keeps up with later writes.
    w.apply(Delta::Deleted(pod("a", "p0", 200, Some("even"), "n")));
    assert_eq!(s.by_index("owner", "uid-even").unwrap().len(), 49);
    assert_eq!(
        s.add_index("owner", by_owner).unwrap_err(),
        Error::IndexExists("owner".into())
    );
}

#[test]
fn replace_reports_vanished_keys_and_updates_indexes() {
    let mut w = StoreWriter::new();
    let s = w.store();
    s.add_index("owner", by_owner).unwrap();
    let p1 = pod("a", "p1", 1, Some("rs1"), "n");
    let p2 = pod("b", "p2", 2, Some("rs1"), "n");
    w.apply(Delta::Added(Arc::clone(&p1)));
    w.apply(Delta::Added(Arc::clone(&p2)));

    let out = w.replace(
        vec![
            pod("a", "p1", 1, Some("rs1"), "n"),
            pod("c", "p9", 9, Some("rs9"), "n"),
        ],
        "10".into(),
    );
    assert_eq!(
        out.vanished
            .iter()
            .map(|(k, _)| k.to_string())
            .collect::<Vec<_>>(),
        ["b/p2"]
    );
    assert!(Arc::ptr_eq(&out.vanished[0].1, &p2));
    assert!(
        Arc::ptr_eq(&s.get_by(Some("a"), "p1").unwrap(), &p1),
        "unchanged RV keeps the stored Arc"
    );
    assert_eq!(keys(s.by_index("owner", "uid-rs1").unwrap()), ["a/p1"]);
    assert_eq!(keys(s.by_index("owner", "uid-rs9").unwrap()), ["c/p9"]);
    assert!(s.list_namespace("b").is_empty());
    assert_eq!(s.last_sync_resource_version().as_deref(), Some("10"));

    // An empty list empties the store.
    let out = w.replace(Vec::new(), "11".into());
    assert_eq!(out.vanished.len(), 2);
    assert!(s.is_empty());
    assert!(s.list_index_func_values("owner").unwrap().is_empty());
    assert!(s
        .list_index_func_values(NAMESPACE_INDEX)
        .unwrap()
        .is_empty());
}

#[test]
fn stores_dynamic_and_metadata_only_objects() {
    let ar = ApiResource::erase::<Deployment>(&());
    let mut w: StoreWriter<DynamicObject> = StoreWriter::new();
    let mut d = DynamicObject::new("web", &ar).within("prod");
    d.metadata.resource_version = Some("3".into());
    d.data = serde_json::json!({ "spec": { "replicas": 2 } });
    w.apply(Delta::Added(Arc::new(d)));
    let s = w.store();
    s.add_index("replicas", |o: &DynamicObject| {
        o.data
            .pointer("/spec/replicas")
            .map(|r| r.to_string())
            .into_iter()
            .collect()
    })
    .unwrap();
    assert_eq!(keys(s.by_index("replicas", "2").unwrap()), ["prod/web"]);

    let mut w: StoreWriter<PartialObjectMeta<Deployment>> = StoreWriter::new();
    let meta = PartialObjectMeta::<Deployment> {
        types: None,
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("prod".into()),
            resource_version: Some("4".into()),
            managed_fields: Some(vec![Default::default()]),
            ..Default::default()
        },
        _phantom: Default::default(),
    };
    // What the reflector does: transform, then wrap in an Arc.
    let transform = strip_managed_fields();
    w.apply(Delta::Added(Arc::new(transform.apply(meta))));
    let stored = w.store().get_by(Some("prod"), "web").unwrap();
    assert_eq!(stored.metadata.managed_fields, None);
}

/// A reflector is generic over what it feeds; a bare store writer works.
#[test]
fn store_writer_is_a_delta_sink() {
    fn feed<S: DeltaSink<ConfigMap>>(sink: &mut S) {
        let cm = |name: &str, rv: &str| {
            Arc::new(ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    namespace: Some("ns".into()),
                    resource_version: Some(rv.into()),
                    ..Default::default()
                },
                ..Default::default()
            })
        };
        sink.replace(vec![cm("a", "1")], "1".into());
        sink.apply(Delta::Added(cm("b", "2")));
        sink.bookmark("5".into());
    }
    let mut w = StoreWriter::new();
    feed(&mut w);
    assert_eq!(keys(w.store().list()), ["ns/a", "ns/b"]);
    assert_eq!(
        DeltaSink::last_sync_resource_version(&w).as_deref(),
        Some("5")
    );
}

/// Readers on other threads never see an index entry whose object does not
/// carry the value (items and indexes change under one lock).
#[test]
fn readers_see_indexes_consistent_with_items_under_a_busy_writer() {
    let mut w = StoreWriter::new();
    let store: Store<Pod> = w.store();
    store.add_index("node", by_node).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let store = store.clone();
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut checks = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for node in ["n0", "n1", "n2"] {
                        for p in store.by_index("node", node).unwrap() {
                            assert_eq!(by_node(&p), [node]);
                            checks += 1;
                        }
                    }
                }
                checks
            })
        })
        .collect();
    for i in 0..20_000u64 {
        let name = format!("p{}", i % 64);
        let node = format!("n{}", i % 3);
        if i % 11 == 0 {
            w.apply(Delta::Deleted(pod("a", &name, i + 1, None, &node)));
        } else {
            w.apply(Delta::Updated(pod("a", &name, i + 1, None, &node)));
        }
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    let labels: BTreeMap<String, usize> = ["n0", "n1", "n2"]
        .iter()
        .map(|n| (n.to_string(), store.by_index("node", n).unwrap().len()))
        .collect();
    assert_eq!(labels.values().sum::<usize>(), store.len());
}
