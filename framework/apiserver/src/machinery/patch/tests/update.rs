//! Field ownership recorded by non-apply writes, after kube-apiserver's
//! `fieldmanager_test.go` (`TestUpdateApplyConflict`,
//! `TestResetManagedFieldsEmptyList`, `TestNoTrackManagedFieldsForClient`,
//! capmanagers and managedfields sorting tests).

use serde_json::{json, Value};

use super::super::{apply, decode_managed_fields, track_update, MergeSchema, Operation};
use super::{content, fields_of, managers, yaml};
use crate::registry::builtin_merge_schema;

const T1: &str = "2024-05-01T10:00:00Z";
const T2: &str = "2024-05-01T11:00:00Z";
const T3: &str = "2024-05-01T12:00:00Z";

fn cm_schema() -> &'static dyn MergeSchema {
    builtin_merge_schema("", "ConfigMap")
}

fn config_map() -> Value {
    yaml(
        r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  namespace: default
  uid: u-1
  resourceVersion: "1"
  labels: {a: b}
data: {k: v}
"#,
    )
}

fn created(manager: &str) -> Value {
    let mut obj = config_map();
    track_update(None, &mut obj, manager, None, T1, cm_schema());
    obj
}

#[test]
fn create_gives_every_set_field_to_the_creator() {
    let obj = created("kubectl-create");
    assert_eq!(content(&obj), config_map());
    // What `kubectl create configmap` gets from kube-apiserver: identity
    // metadata is never owned, new maps are owned themselves (".").
    assert_eq!(
        obj["metadata"]["managedFields"],
        json!([{
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "v1",
            "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:data": {".": {}, "f:k": {}},
                "f:metadata": {"f:labels": {".": {}, "f:a": {}}}
            }
        }])
    );
}

#[test]
fn create_of_a_deployment_owns_list_items_with_their_fields() {
    let schema = builtin_merge_schema("apps", "Deployment");
    let mut obj = yaml(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    spec:
      containers: [{name: c, image: nginx, ports: [{containerPort: 80}]}]
"#,
    );
    track_update(None, &mut obj, "kubectl-create", None, T1, schema);
    let fields = fields_of(&obj, "kubectl-create", "Update").unwrap();
    assert!(fields.get("f:apiVersion").is_none() && fields.get("f:metadata").is_none());
    assert_eq!(fields["f:spec"]["f:selector"], json!({}));
    let c = &fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"];
    assert_eq!(c["."], json!({}));
    assert_eq!(c["f:image"], json!({}));
    assert_eq!(
        c["f:ports"]["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"]["f:containerPort"],
        json!({})
    );
}

#[test]
fn an_update_takes_the_fields_it_changes_from_their_owner() {
    let schema = builtin_merge_schema("apps", "Deployment");
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "web", "uid": "u"}, "spec": {"replicas": 1, "paused": false}});
    let applied = apply(None, &config, "a", false, None, T1, schema).unwrap();
    let mut scaled = applied.clone();
    scaled["spec"]["replicas"] = json!(4);
    track_update(Some(&applied), &mut scaled, "hpa", None, T2, schema);
    assert_eq!(
        fields_of(&scaled, "a", "Apply"),
        Some(json!({"f:spec": {"f:paused": {}}}))
    );
    assert_eq!(
        fields_of(&scaled, "hpa", "Update"),
        Some(json!({"f:spec": {"f:replicas": {}}}))
    );

    // The applier now conflicts with the autoscaler.
    let err = apply(Some(&scaled), &config, "a", false, None, T3, schema).unwrap_err();
    assert_eq!(
        err.status_message(),
        r#"Apply failed with 1 conflict: conflict with "hpa" using apps/v1: .spec.replicas"#
    );
}

#[test]
fn a_no_op_update_records_nothing() {
    let obj = created("kubectl-create");
    let mut same = obj.clone();
    track_update(Some(&obj), &mut same, "other", None, T2, cm_schema());
    assert_eq!(same, obj);
    // Changes to fields nobody owns (the resourceVersion) record nothing either.
    let mut bumped = obj.clone();
    bumped["metadata"]["resourceVersion"] = json!("2");
    track_update(Some(&obj), &mut bumped, "other", None, T2, cm_schema());
    assert_eq!(managers(&bumped), managers(&obj));
}

#[test]
fn removing_a_field_takes_it_from_its_owner_and_drops_empty_entries() {
    let obj = created("creator");
    let mut without = obj.clone();
    without["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("labels");
    track_update(Some(&obj), &mut without, "editor", None, T2, cm_schema());
    assert_eq!(
        fields_of(&without, "creator", "Update"),
        Some(json!({"f:data": {".": {}, "f:k": {}}}))
    );
    // The editor only removed: it owns nothing and gets no entry.
    assert_eq!(
        managers(&without),
        vec![("creator".into(), "Update".into())]
    );

    let mut empty = without.clone();
    empty.as_object_mut().unwrap().remove("data");
    track_update(Some(&without), &mut empty, "editor", None, T3, cm_schema());
    assert!(empty["metadata"].get("managedFields").is_none());
}

#[test]
fn a_manager_accumulates_its_updates() {
    let obj = created("m");
    let mut second = obj.clone();
    second["data"]["k2"] = json!("v2");
    track_update(Some(&obj), &mut second, "m", None, T2, cm_schema());
    let entries = decode_managed_fields(&second).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].time.as_deref(), Some(T2));
    assert_eq!(
        fields_of(&second, "m", "Update").unwrap()["f:data"],
        json!({".": {}, "f:k": {}, "f:k2": {}})
    );
}

#[test]
fn an_empty_managed_fields_list_clears_tracking() {
    let obj = created("creator");
    for reset in [json!([]), json!([{}])] {
        let mut cleared = obj.clone();
        cleared["metadata"]["managedFields"] = reset;
        cleared["data"]["k"] = json!("changed");
        track_update(Some(&obj), &mut cleared, "editor", None, T2, cm_schema());
        assert!(cleared["metadata"].get("managedFields").is_none());

        // An existing object without managed fields stays untracked...
        let mut again = cleared.clone();
        again["data"]["k"] = json!("again");
        track_update(Some(&cleared), &mut again, "editor", None, T3, cm_schema());
        assert!(again["metadata"].get("managedFields").is_none());
    }
}

#[test]
fn managed_fields_sent_with_an_update_replace_the_live_ones() {
    let obj = created("creator");
    let mut sent = obj.clone();
    sent["metadata"]["managedFields"] = json!([{
        "manager": "someone", "operation": "Update", "apiVersion": "v1",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}
    }]);
    track_update(Some(&obj), &mut sent, "editor", None, T2, cm_schema());
    assert_eq!(managers(&sent), vec![("someone".into(), "Update".into())]);

    // Unreadable ones are ignored in favour of the live entries.
    let mut garbage = obj.clone();
    garbage["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Nope"}]);
    track_update(Some(&obj), &mut garbage, "editor", None, T2, cm_schema());
    assert_eq!(
        garbage["metadata"]["managedFields"],
        obj["metadata"]["managedFields"]
    );
}

#[test]
fn a_subresource_write_keeps_the_live_entries_and_is_recorded_apart() {
    let schema = builtin_merge_schema("apps", "Deployment");
    let mut obj = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "web", "uid": "u"}, "spec": {"replicas": 1}});
    track_update(None, &mut obj, "creator", None, T1, schema);
    let mut status = obj.clone();
    status["metadata"]["managedFields"] = json!([]);
    status["status"] = json!({"replicas": 1});
    track_update(
        Some(&obj),
        &mut status,
        "controller",
        Some("status"),
        T2,
        schema,
    );
    let entries = decode_managed_fields(&status).unwrap();
    assert_eq!(entries.len(), 2);
    let ctrl = entries.iter().find(|e| e.manager == "controller").unwrap();
    assert_eq!(ctrl.subresource.as_deref(), Some("status"));
    assert_eq!(ctrl.operation, Operation::Update);
    assert_eq!(
        status["metadata"]["managedFields"][1]["fieldsV1"],
        json!({"f:status": {".": {}, "f:replicas": {}}})
    );
}

#[test]
fn update_entries_are_capped_at_ten() {
    let mut obj = created("creator");
    for i in 0..12 {
        let mut next = obj.clone();
        next["data"][format!("key{i}")] = json!("v");
        let now = format!("2024-05-01T10:{:02}:00Z", i + 1);
        track_update(
            Some(&obj),
            &mut next,
            &format!("writer-{i}"),
            None,
            &now,
            cm_schema(),
        );
        obj = next;
    }
    let entries = decode_managed_fields(&obj).unwrap();
    assert_eq!(entries.len(), 10);
    let ancient = entries
        .iter()
        .find(|e| e.manager == "ancient-changes")
        .unwrap();
    // creator, writer-0, writer-1 and writer-2 were folded together; the
    // bucket keeps the time of the newest of them.
    assert_eq!(ancient.time.as_deref(), Some("2024-05-01T10:03:00Z"));
    assert!(!entries
        .iter()
        .any(|e| e.manager == "creator" || e.manager == "writer-2"));
    assert!(entries.iter().any(|e| e.manager == "writer-3"));
    // Every field is still owned by someone.
    let owned = entries
        .iter()
        .fold(super::super::FieldSet::new(), |acc, e| acc.union(&e.fields));
    // data, data.k, metadata.labels, metadata.labels.a, and the twelve keys.
    assert_eq!(owned.len(), 4 + 12);
}

#[test]
fn entries_are_sorted_apply_first_then_by_time_and_name() {
    let obj = created("z-creator");
    let mut later = obj.clone();
    later["data"]["x"] = json!("1");
    track_update(Some(&obj), &mut later, "b-editor", None, T3, cm_schema());
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "cm", "namespace": "default"}, "data": {"y": "2"}});
    let applied = apply(
        Some(&later),
        &config,
        "applier",
        false,
        None,
        T2,
        cm_schema(),
    )
    .unwrap();
    assert_eq!(
        managers(&applied),
        vec![
            ("applier".into(), "Apply".into()),
            ("z-creator".into(), "Update".into()),
            ("b-editor".into(), "Update".into()),
        ]
    );
}
