//! Server-side apply scenarios after structured-merge-diff's
//! `merge/{multiple_appliers,conflict,set,leaf,nested,key}_test.go` and
//! kube-apiserver's `fieldmanager` tests (`TestApplyStripsFields`,
//! `TestNoUpdateBeforeFirstApply`, `lastappliedmanager_test.go`), on the
//! built-in Deployment, Pod and Service schemas.

use serde_json::{json, Value};

use super::super::{
    apply, apply_ignoring, decode_managed_fields, field_set, track_update, ApplyError, Conflict,
    FieldSet, MergeSchema, Operation, PathElement, LAST_APPLIED_ANNOTATION,
};
use super::{content, fields_of, managers, yaml};
use crate::registry::builtin_merge_schema;

const T1: &str = "2024-05-01T10:00:00Z";
const T2: &str = "2024-05-01T11:00:00Z";
const T3: &str = "2024-05-01T12:00:00Z";

fn deploy_schema() -> &'static dyn MergeSchema {
    builtin_merge_schema("apps", "Deployment")
}

fn deployment() -> Value {
    yaml(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels: {app: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: nginx:1
        ports: [{containerPort: 80}]
"#,
    )
}

/// A minimal configuration for `web` with the given spec.
fn partial(spec: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
    })
}

fn apply_ok(live: Option<&Value>, config: &Value, manager: &str, now: &str) -> Value {
    match apply(live, config, manager, false, None, now, deploy_schema()) {
        Ok(v) => v,
        Err(e) => panic!("apply by {manager} failed: {e}"),
    }
}

fn conflicts(err: ApplyError) -> Vec<Conflict> {
    match err {
        ApplyError::Conflicts(c) => c,
        other => panic!("expected conflicts, got {other:?}"),
    }
}

#[test]
fn create_via_apply_records_the_configuration_as_the_appliers_fields() {
    let obj = apply_ok(None, &deployment(), "mgr", T1);
    assert_eq!(content(&obj), deployment());
    assert_eq!(
        obj["metadata"]["managedFields"],
        json!([{
            "manager": "mgr",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {
                        "f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {
                            ".": {},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                                ".": {},
                                "f:containerPort": {}
                            }}
                        }}}
                    }
                }
            }
        }])
    );
}

#[test]
fn applying_the_same_configuration_twice_changes_nothing() {
    let first = apply_ok(None, &deployment(), "mgr", T1);
    let second = apply_ok(Some(&first), &deployment(), "mgr", T2);
    // A no-op apply keeps the entry's time, so the object is identical.
    assert_eq!(second, first);
}

#[test]
fn two_appliers_of_the_same_value_share_it() {
    let a = apply_ok(None, &deployment(), "a", T1);
    let b = apply_ok(Some(&a), &partial(json!({"replicas": 1})), "b", T2);
    assert_eq!(content(&b), content(&a));
    assert_eq!(
        fields_of(&b, "b", "Apply"),
        Some(json!({"f:spec": {"f:replicas": {}}}))
    );
    assert!(fields_of(&b, "a", "Apply").is_some_and(|f| f["f:spec"]["f:replicas"] == json!({})));
    // kube-apiserver stamps `time` only when the object changed; entries
    // without a time sort first.
    let entries = b["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries[0]["manager"], "b");
    assert!(entries[0].get("time").is_none());
}

#[test]
fn a_different_value_conflicts_and_force_takes_ownership() {
    let a = apply_ok(None, &deployment(), "a", T1);
    let config = partial(json!({"replicas": 3}));
    let err = apply(Some(&a), &config, "b", false, None, T2, deploy_schema()).unwrap_err();
    assert_eq!(
        err.status_message(),
        r#"Apply failed with 1 conflict: conflict with "a": .spec.replicas"#
    );
    assert_eq!((err.http_status(), err.reason()), (409, "Conflict"));
    let cs = conflicts(err);
    assert_eq!(
        cs,
        vec![Conflict {
            manager: "a".into(),
            field: ".spec.replicas".into(),
            using: None,
            subresource: None,
        }]
    );
    assert_eq!(cs[0].message(), r#"conflict with "a""#);

    let forced = apply(Some(&a), &config, "b", true, None, T2, deploy_schema()).unwrap();
    assert_eq!(forced["spec"]["replicas"], 3);
    let a_fields = fields_of(&forced, "a", "Apply").unwrap();
    assert!(a_fields["f:spec"].get("f:replicas").is_none());
    assert!(a_fields["f:spec"].get("f:selector").is_some());
    assert_eq!(
        fields_of(&forced, "b", "Apply"),
        Some(json!({"f:spec": {"f:replicas": {}}}))
    );
    let b_entry = decode_managed_fields(&forced)
        .unwrap()
        .into_iter()
        .find(|e| e.manager == "b")
        .unwrap();
    assert_eq!(b_entry.time.as_deref(), Some(T2));
}

#[test]
fn an_applier_drops_fields_it_no_longer_applies() {
    let first = apply_ok(None, &deployment(), "a", T1);
    let mut config = deployment();
    config["metadata"].as_object_mut().unwrap().remove("labels");
    let second = apply_ok(Some(&first), &config, "a", T2);
    assert_eq!(content(&second), config);
    assert!(fields_of(&second, "a", "Apply").unwrap()["f:metadata"].is_null());
}

#[test]
fn a_field_another_applier_owns_survives_removal() {
    let first = apply_ok(None, &deployment(), "a", T1);
    let mut labels_only = partial(json!({}));
    labels_only["metadata"]["labels"] = json!({"app": "web"});
    labels_only.as_object_mut().unwrap().remove("spec");
    let shared = apply_ok(Some(&first), &labels_only, "b", T2);

    let mut config = deployment();
    config["metadata"].as_object_mut().unwrap().remove("labels");
    let after = apply_ok(Some(&shared), &config, "a", T3);
    assert_eq!(after["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(
        fields_of(&after, "b", "Apply"),
        Some(json!({"f:metadata": {"f:labels": {"f:app": {}}}}))
    );
}

#[test]
fn a_field_an_updater_took_over_survives_removal() {
    let mut config = deployment();
    config["metadata"]["labels"]["team"] = json!("x");
    let first = apply_ok(None, &config, "a", T1);
    let mut edited = first.clone();
    edited["metadata"]["labels"]["team"] = json!("y");
    track_update(
        Some(&first),
        &mut edited,
        "kubectl-edit",
        None,
        T2,
        deploy_schema(),
    );
    assert_eq!(
        fields_of(&edited, "kubectl-edit", "Update"),
        Some(json!({"f:metadata": {"f:labels": {"f:team": {}}}}))
    );

    let after = apply_ok(Some(&edited), &deployment(), "a", T3);
    assert_eq!(
        after["metadata"]["labels"],
        json!({"app": "web", "team": "y"})
    );
}

#[test]
fn list_map_items_of_different_appliers_merge_and_leave_independently() {
    let a = apply_ok(None, &deployment(), "a", T1);
    let b_config =
        partial(json!({"template": {"spec": {"containers": [{"name": "b", "image": "b:1"}]}}}));
    let both = apply_ok(Some(&a), &b_config, "b", T2);
    let names: Vec<&str> = both["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, vec!["c", "b"]);

    // `a` stops applying its container: it goes, `b`'s stays.
    let mut config = deployment();
    config["spec"]["template"]["spec"]
        .as_object_mut()
        .unwrap()
        .remove("containers");
    let after = apply_ok(Some(&both), &config, "a", T3);
    assert_eq!(
        after["spec"]["template"]["spec"]["containers"],
        json!([{"name": "b", "image": "b:1"}])
    );
}

#[test]
fn a_list_map_item_field_conflicts_by_key() {
    let a = apply_ok(None, &deployment(), "a", T1);
    let config =
        partial(json!({"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}));
    let cs =
        conflicts(apply(Some(&a), &config, "b", false, None, T2, deploy_schema()).unwrap_err());
    assert_eq!(cs.len(), 1);
    assert_eq!(
        cs[0].field,
        r#".spec.template.spec.containers[name="c"].image"#
    );
}

#[test]
fn set_items_are_owned_one_by_one() {
    let mut a_config = partial(json!({"replicas": 1}));
    a_config["metadata"]["finalizers"] = json!(["x"]);
    let a = apply_ok(None, &a_config, "a", T1);
    let mut b_config = partial(json!({}));
    b_config["metadata"]["finalizers"] = json!(["y"]);
    let both = apply_ok(Some(&a), &b_config, "b", T2);
    assert_eq!(both["metadata"]["finalizers"], json!(["x", "y"]));
    assert_eq!(
        fields_of(&both, "b", "Apply"),
        Some(json!({"f:metadata": {"f:finalizers": {"v:\"y\"": {}}}}))
    );
    let after = apply_ok(Some(&both), &partial(json!({"replicas": 1})), "a", T3);
    assert_eq!(after["metadata"]["finalizers"], json!(["y"]));
}

#[test]
fn atomic_lists_conflict_as_a_whole() {
    let schema = builtin_merge_schema("", "Pod");
    let pod = |args: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "i", "args": args}]}})
    };
    let a = apply(None, &pod(json!(["1", "2"])), "a", false, None, T1, schema).unwrap();
    let err = apply(
        Some(&a),
        &pod(json!(["1", "2", "3"])),
        "b",
        false,
        None,
        T2,
        schema,
    )
    .unwrap_err();
    let cs = conflicts(err);
    assert_eq!(
        cs.iter().map(|c| c.field.as_str()).collect::<Vec<_>>(),
        vec![r#".spec.containers[name="c"].args"#]
    );
    let forced = apply(
        Some(&a),
        &pod(json!(["1", "2", "3"])),
        "b",
        true,
        None,
        T2,
        schema,
    )
    .unwrap();
    assert_eq!(
        forced["spec"]["containers"][0]["args"],
        json!(["1", "2", "3"])
    );
    let a_fields = fields_of(&forced, "a", "Apply").unwrap();
    assert!(a_fields["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]
        .get("f:args")
        .is_none());
}

#[test]
fn a_nested_struct_no_longer_applied_is_removed_whole() {
    let mut config = deployment();
    config["spec"]["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}});
    let first = apply_ok(None, &config, "a", T1);
    let second = apply_ok(Some(&first), &deployment(), "a", T2);
    assert!(second["spec"].get("strategy").is_none());
    assert_eq!(content(&second), deployment());
}

#[test]
fn fields_set_by_create_conflict_with_a_later_apply() {
    // kubectl create, then kubectl apply --server-side with another value.
    let mut created = deployment();
    created["metadata"]["uid"] = json!("u1");
    track_update(
        None,
        &mut created,
        "kubectl-create",
        None,
        T1,
        deploy_schema(),
    );
    let mut config = deployment();
    config["spec"]["replicas"] = json!(2);
    let err = apply(
        Some(&created),
        &config,
        "kubectl",
        false,
        None,
        T2,
        deploy_schema(),
    )
    .unwrap_err();
    assert_eq!(
        err.status_message(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-create" using apps/v1: .spec.replicas"#
    );
    let cs = conflicts(err);
    assert_eq!(
        cs[0].message(),
        r#"conflict with "kubectl-create" using apps/v1"#
    );

    // The same values: no conflict, shared ownership.
    let shared = apply_ok(Some(&created), &deployment(), "kubectl", T2);
    assert_eq!(content(&shared), content(&created));
    assert_eq!(
        managers(&shared),
        vec![
            ("kubectl".to_string(), "Apply".to_string()),
            ("kubectl-create".to_string(), "Update".to_string())
        ]
    );
}

#[test]
fn several_conflicts_are_grouped_by_manager() {
    let a = apply_ok(None, &deployment(), "a", T1);
    let mut updated = a.clone();
    updated["metadata"]["labels"]["team"] = json!("x");
    updated["spec"]["paused"] = json!(false);
    track_update(Some(&a), &mut updated, "b", None, T2, deploy_schema());
    let mut config = deployment();
    config["spec"]["replicas"] = json!(5);
    config["spec"]["paused"] = json!(true);
    config["metadata"]["labels"]["team"] = json!("z");
    let err = apply(
        Some(&updated),
        &config,
        "c",
        false,
        None,
        T3,
        deploy_schema(),
    )
    .unwrap_err();
    assert_eq!(
        err.status_message(),
        "Apply failed with 3 conflicts: conflicts with \"a\":\n- .spec.replicas\n\
         conflicts with \"b\" using apps/v1:\n- .metadata.labels.team\n- .spec.paused"
    );
}

fn client_side_applied(replicas: i64) -> Value {
    let mut config = deployment();
    config["spec"]["replicas"] = json!(replicas);
    let mut obj = config.clone();
    obj["metadata"]["uid"] = json!("u1");
    obj["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: format!("{config}\n")});
    track_update(
        None,
        &mut obj,
        "kubectl-client-side-apply",
        None,
        T1,
        deploy_schema(),
    );
    obj
}

#[test]
fn kubectl_server_side_apply_takes_over_from_client_side_apply() {
    let live = client_side_applied(1);
    let mut config = deployment();
    config["spec"]["replicas"] = json!(2);

    // Another manager conflicts with kubectl-client-side-apply...
    let err = apply(
        Some(&live),
        &config,
        "other",
        false,
        None,
        T2,
        deploy_schema(),
    )
    .unwrap_err();
    assert_eq!(conflicts(err)[0].manager, "kubectl-client-side-apply");

    // ...but `kubectl` may take over what the last-applied annotation says
    // it applied, and the annotation follows the new configuration.
    let obj = apply(
        Some(&live),
        &config,
        "kubectl",
        false,
        None,
        T2,
        deploy_schema(),
    )
    .unwrap();
    assert_eq!(obj["spec"]["replicas"], 2);
    let csa = fields_of(&obj, "kubectl-client-side-apply", "Update").unwrap();
    assert!(csa["f:spec"].get("f:replicas").is_none());
    let annotation = obj["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
        .as_str()
        .unwrap();
    assert_eq!(annotation, format!("{config}\n"));
}

#[test]
fn client_side_fields_changed_since_are_still_conflicts() {
    let live = client_side_applied(1);
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = json!(3);
    track_update(
        Some(&live),
        &mut scaled,
        "kubectl-client-side-apply",
        None,
        T2,
        deploy_schema(),
    );
    let mut config = deployment();
    config["spec"]["replicas"] = json!(2);
    let cs = conflicts(
        apply(
            Some(&scaled),
            &config,
            "kubectl",
            false,
            None,
            T3,
            deploy_schema(),
        )
        .unwrap_err(),
    );
    assert_eq!(cs.len(), 1);
    assert_eq!(cs[0].field, ".spec.replicas");
}

#[test]
fn an_object_without_managed_fields_belongs_to_before_first_apply() {
    let mut live = deployment();
    live["metadata"]["uid"] = json!("u1");
    let mut config = deployment();
    config["spec"]["replicas"] = json!(2);
    let err = apply(Some(&live), &config, "a", false, None, T1, deploy_schema()).unwrap_err();
    assert_eq!(
        err.status_message(),
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.replicas"#
    );
    let forced = apply(Some(&live), &config, "a", true, None, T1, deploy_schema()).unwrap();
    assert_eq!(
        managers(&forced),
        vec![
            ("a".to_string(), "Apply".to_string()),
            ("before-first-apply".to_string(), "Update".to_string())
        ]
    );
    let bfa = fields_of(&forced, "before-first-apply", "Update").unwrap();
    assert!(bfa["f:spec"].get("f:replicas").is_none());
    assert!(bfa["f:spec"].get("f:selector").is_some());
}

#[test]
fn invalid_configurations_are_refused_with_kube_apiserver_messages() {
    let schema = deploy_schema();
    let bad_request = |config: &Value, live: Option<&Value>| match apply(
        live, config, "m", false, None, T1, schema,
    ) {
        Err(ApplyError::BadRequest(msg)) => msg,
        other => panic!("expected BadRequest, got {other:?}"),
    };
    let mut no_version = deployment();
    no_version.as_object_mut().unwrap().remove("apiVersion");
    assert_eq!(
        bad_request(&no_version, None),
        "invalid object type: /, Kind=Deployment"
    );
    let mut no_kind = deployment();
    no_kind.as_object_mut().unwrap().remove("kind");
    assert_eq!(
        bad_request(&no_kind, None),
        "invalid object type: apps/v1, Kind="
    );
    let live = apply_ok(None, &deployment(), "m", T1);
    let mut other_kind = deployment();
    other_kind["kind"] = json!("StatefulSet");
    assert_eq!(
        bad_request(&other_kind, Some(&live)),
        "invalid object type: apps/v1, Kind=StatefulSet"
    );
    let mut with_fields = deployment();
    with_fields["metadata"]["managedFields"] = json!([]);
    assert_eq!(
        bad_request(&with_fields, None),
        "metadata.managedFields must be nil"
    );
    assert!(bad_request(&json!([1]), None).starts_with("error decoding YAML"));

    let mut dup = deployment();
    dup["spec"]["template"]["spec"]["containers"] = json!([{"name": "c"}, {"name": "c"}]);
    let err = apply(None, &dup, "m", false, None, T1, schema).unwrap_err();
    assert_eq!(
        err.status_message(),
        r#"failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: duplicate entries for key [name="c"]"#
    );
    assert_eq!((err.http_status(), err.reason()), (500, ""));

    let mut not_a_list = deployment();
    not_a_list["spec"]["template"]["spec"]["containers"] = json!({"name": "c"});
    let err = apply(None, &not_a_list, "m", false, None, T1, schema).unwrap_err();
    assert!(
        err.status_message()
            .ends_with(r#".spec.template.spec.containers: expected list, got {"name":"c"}"#),
        "{err}"
    );
    let mut bad_meta = deployment();
    bad_meta["metadata"] = json!("web");
    let err = apply(None, &bad_meta, "m", false, None, T1, schema).unwrap_err();
    assert!(
        err.status_message()
            .ends_with(r#".metadata: expected map, got "web""#),
        "{err}"
    );

    let mut two = deployment();
    two["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "c", "env": [{"value": "x"}]}, {"name": "c"}]);
    let err = apply(None, &two, "m", false, None, T1, schema).unwrap_err();
    assert_eq!(
        err.status_message(),
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): errors:\n  \
         .spec.template.spec.containers[name=\"c\"].env: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)\n  \
         .spec.template.spec.containers: duplicate entries for key [name=\"c\"]"
    );
}

#[test]
fn list_map_keys_take_their_defaults() {
    let schema = builtin_merge_schema("", "Service");
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                     "spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}});
    let obj = apply(None, &svc, "m", false, None, T1, schema).unwrap();
    assert_eq!(
        fields_of(&obj, "m", "Apply"),
        Some(json!({"f:spec": {"f:ports": {
            "k:{\"port\":53,\"protocol\":\"UDP\"}": {".": {}, "f:port": {}, "f:protocol": {}},
            "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}
        }}}))
    );
}

#[test]
fn owner_references_are_atomic_items_keyed_by_uid() {
    let mut config = partial(json!({"replicas": 1}));
    config["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-1"}]);
    let obj = apply_ok(None, &config, "m", T1);
    assert_eq!(
        fields_of(&obj, "m", "Apply").unwrap()["f:metadata"],
        json!({"f:ownerReferences": {"k:{\"uid\":\"u-1\"}": {}}})
    );
}

#[test]
fn apply_through_a_subresource_is_its_own_entry() {
    let obj = apply_ok(None, &deployment(), "m", T1);
    let status = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "web", "namespace": "default"},
                        "status": {"replicas": 1}});
    let after = apply(
        Some(&obj),
        &status,
        "m",
        false,
        Some("status"),
        T2,
        deploy_schema(),
    )
    .unwrap();
    let entries = decode_managed_fields(&after).unwrap();
    assert_eq!(entries.len(), 2);
    let sub = entries.iter().find(|e| e.subresource.is_some()).unwrap();
    assert_eq!(
        (sub.operation, sub.subresource.as_deref()),
        (Operation::Apply, Some("status"))
    );
    assert_eq!(
        after["metadata"]["managedFields"][1]["subresource"],
        "status"
    );
    // The main-resource entry was not pruned by the status apply.
    assert_eq!(content(&after)["spec"], deployment()["spec"]);
}

#[test]
fn nulls_in_a_configuration_set_nothing() {
    let mut config = deployment();
    config["spec"]["paused"] = Value::Null;
    let obj = apply_ok(None, &config, "m", T1);
    assert!(obj["spec"].get("paused").is_none());
    assert!(fields_of(&obj, "m", "Apply").unwrap()["f:spec"]
        .get("f:paused")
        .is_none());
}

#[test]
fn ignored_fields_are_merged_but_not_owned() {
    let mut config = deployment();
    config["status"] = json!({"replicas": 9});
    let mut status = FieldSet::new();
    status.insert(&[PathElement::field("status")]);
    let obj = apply_ignoring(
        None,
        &config,
        "m",
        false,
        None,
        T1,
        deploy_schema(),
        &status,
    )
    .unwrap();
    assert!(fields_of(&obj, "m", "Apply")
        .unwrap()
        .get("f:status")
        .is_none());
    assert!(field_set(&content(&obj), deploy_schema())
        .has(&[PathElement::field("status"), PathElement::field("replicas")]));
}

#[test]
fn unreadable_managed_fields_on_the_live_object_are_an_error() {
    let mut live = deployment();
    live["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Bogus", "apiVersion": "v1", "fieldsType": "FieldsV1"}]);
    let err = apply(
        Some(&live),
        &deployment(),
        "m",
        false,
        None,
        T1,
        deploy_schema(),
    )
    .unwrap_err();
    assert_eq!(
        err.status_message(),
        "failed to decode managed fields: operation must be `Apply` or `Update`"
    );
    assert_eq!(err.http_status(), 500);
}
