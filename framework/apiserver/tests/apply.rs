//! Server-side apply, managed fields and strategic merge patch, on the
//! wire: the 409 `Status` of an apply conflict (apimachinery
//! `NewApplyConflict`), `force`, create-on-apply, the `managedFields`
//! every write records, and the strategic merge patch directives kubectl
//! relies on.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod common;

use common::Kube;
use serde_json::{json, Value};

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const CMS: &str = "/api/v1/namespaces/default/configmaps";
const APPLY: &str = "application/apply-patch+yaml";
const SMP: &str = "application/strategic-merge-patch+json";

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1"}]}}}})
}

async fn apply(k: &Kube, path: &str, manager: &str, force: bool, config: &Value) -> common::Resp {
    let force = if force { "&force=true" } else { "" };
    k.patch(
        &format!("{path}?fieldManager={manager}{force}"),
        APPLY,
        config,
    )
    .await
}

/// `(manager, operation, subresource)` of every managedFields entry.
fn managers(obj: &Value) -> Vec<(String, String, Option<String>)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or("").to_owned(),
                        e["operation"].as_str().unwrap_or("").to_owned(),
                        e["subresource"].as_str().map(str::to_owned),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The `fieldsV1` of one manager's entry.
fn fields_of<'a>(obj: &'a Value, manager: &str, operation: &str) -> &'a Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|entries| {
            entries
                .iter()
                .find(|e| e["manager"] == manager && e["operation"] == operation)
        })
        .map(|e| &e["fieldsV1"])
        .unwrap_or_else(|| panic!("no {operation} entry for {manager} in {obj}"))
}

#[tokio::test]
async fn apply_conflict_is_a_409_status_with_field_manager_conflict_causes() {
    let k = Kube::start().await;
    let path = format!("{DEPLOYS}/web");
    let created = apply(&k, &path, "alice", false, &deployment("web", 1)).await;
    assert_eq!(
        created.code(),
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    assert_eq!(
        managers(&created.json()),
        [("alice".into(), "Apply".into(), None)]
    );

    // bob applies a different replica count: alice owns it.
    let bob = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 3}});
    let r = apply(&k, &path, "bob", false, &bob).await;
    assert_eq!(r.code(), 409);
    assert_eq!(
        r.json(),
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas",
            "reason": "Conflict",
            "details": {"causes": [{"reason": "FieldManagerConflict",
                "message": "conflict with \"alice\"", "field": ".spec.replicas"}]},
            "code": 409
        })
    );

    // Applying the value alice already has is shared ownership, not a conflict.
    let same = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1}});
    assert_eq!(apply(&k, &path, "carol", false, &same).await.code(), 200);

    // force takes the field over.
    let forced = apply(&k, &path, "bob", true, &bob).await;
    assert_eq!(forced.code(), 200);
    let obj = forced.json();
    assert_eq!(obj["spec"]["replicas"], 3);
    assert_eq!(
        fields_of(&obj, "bob", "Apply"),
        &json!({"f:spec": {"f:replicas": {}}})
    );
    assert!(fields_of(&obj, "alice", "Apply")["f:spec"]
        .get("f:replicas")
        .is_none());
    assert!(
        !managers(&obj).iter().any(|(m, _, _)| m == "carol"),
        "carol owned only replicas: {obj}"
    );

    // An updater is named with its apiVersion; two fields, one owner.
    let put = {
        let mut d = obj.clone();
        d["spec"]["replicas"] = json!(4);
        d["spec"]["minReadySeconds"] = json!(5);
        d
    };
    let r = k.put(&format!("{path}?fieldManager=editor"), &put).await;
    assert_eq!(r.code(), 200);
    let both = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "minReadySeconds": 1}});
    let r = apply(&k, &path, "bob", false, &both).await;
    assert_eq!(r.code(), 409);
    let s = r.json();
    assert_eq!(
        s["message"],
        "Apply failed with 2 conflicts: conflicts with \"editor\" using apps/v1:\n- .spec.minReadySeconds\n- .spec.replicas"
    );
    let causes: Vec<(&str, &str)> = s["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["message"].as_str().unwrap(), c["field"].as_str().unwrap()))
        .collect();
    assert_eq!(
        causes,
        [
            (
                "conflict with \"editor\" using apps/v1",
                ".spec.minReadySeconds"
            ),
            ("conflict with \"editor\" using apps/v1", ".spec.replicas")
        ]
    );
}

#[tokio::test]
async fn a_scale_owner_is_named_with_its_subresource() {
    let k = Kube::start().await;
    let path = format!("{DEPLOYS}/web");
    apply(&k, &path, "alice", false, &deployment("web", 1)).await;
    let r = k
        .merge(
            &format!("{path}/scale?fieldManager=hpa"),
            &json!({"spec": {"replicas": 5}}),
        )
        .await;
    assert_eq!(r.code(), 200);
    let obj = k.get(&path).await.json();
    assert!(managers(&obj).contains(&("hpa".into(), "Update".into(), Some("scale".into()))));
    let r = apply(&k, &path, "alice", false, &deployment("web", 1)).await;
    assert_eq!(r.code(), 409);
    assert_eq!(
        r.json()["message"],
        "Apply failed with 1 conflict: conflict with \"hpa\" with subresource \"scale\" using apps/v1: .spec.replicas"
    );
}

#[tokio::test]
async fn apply_creates_needs_a_field_manager_and_force_is_apply_only() {
    let k = Kube::start().await;
    let path = format!("{CMS}/cfg");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}});
    let missing = k.patch(&path, APPLY, &cm).await;
    assert_eq!(missing.code(), 422);
    let s = missing.json();
    assert_eq!(s["details"]["kind"], "PatchOptions");
    assert_eq!(s["details"]["causes"][0]["field"], "fieldManager");
    let created = apply(&k, &path, "tool", false, &cm).await;
    assert_eq!(created.code(), 201);
    let obj = created.json();
    assert!(obj["metadata"]["uid"].is_string());
    assert!(obj["metadata"]["resourceVersion"].is_string());
    assert_eq!(
        fields_of(&obj, "tool", "Apply"),
        &json!({"f:data": {"f:a": {}}})
    );
    let force = k
        .merge(&format!("{path}?force=true"), &json!({"data": {"b": "2"}}))
        .await;
    assert_eq!(force.code(), 422);
    assert_eq!(force.json()["details"]["causes"][0]["field"], "force");
    // Fields the applier stops applying are removed, unless someone else owns them.
    let r = apply(
        &k,
        &path,
        "tool",
        false,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"c": "3"}}),
    )
    .await;
    assert_eq!(r.json()["data"], json!({"c": "3"}));
    // A name in the body that is not the URL's is a 400.
    let r = apply(
        &k,
        &format!("{CMS}/other"),
        "tool",
        false,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}}),
    )
    .await;
    assert_eq!(r.code(), 400);
    // Apply on the status of a missing object does not create it.
    let r = apply(
        &k,
        &format!("{DEPLOYS}/nope/status"),
        "tool",
        false,
        &deployment("nope", 1),
    )
    .await;
    assert_eq!(r.code(), 404);
}

#[tokio::test]
async fn every_write_records_managed_fields() {
    let k = Kube::start().await;
    // create: the fieldManager parameter.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m", "labels": {"x": "1"}},
        "data": {"a": "1", "b": "2"}});
    let created = k
        .post(&format!("{CMS}?fieldManager=creator"), &cm)
        .await
        .json();
    let entries = created["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    let e = &entries[0];
    assert_eq!(e["manager"], "creator");
    assert_eq!(e["operation"], "Update");
    assert_eq!(e["apiVersion"], "v1");
    assert_eq!(e["fieldsType"], "FieldsV1");
    assert!(e["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        e["fieldsV1"],
        json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}})
    );
    // patch: without fieldManager the User-Agent prefix names the manager.
    let patched = k
        .merge(&format!("{CMS}/m"), &json!({"data": {"b": "3"}}))
        .await
        .json();
    assert_eq!(
        fields_of(&patched, "kubeforge-tests", "Update"),
        &json!({"f:data": {"f:b": {}}})
    );
    assert_eq!(
        fields_of(&patched, "creator", "Update"),
        &json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}})
    );
    // update (PUT).
    let mut put = patched.clone();
    put["data"]["c"] = json!("4");
    let updated = k
        .put(&format!("{CMS}/m?fieldManager=writer"), &put)
        .await
        .json();
    assert_eq!(
        fields_of(&updated, "writer", "Update"),
        &json!({"f:data": {"f:c": {}}})
    );
    // Subresource writes are recorded with their subresource.
    k.post(DEPLOYS, &deployment("d", 1)).await;
    let r = k
        .merge(
            &format!("{DEPLOYS}/d/status?fieldManager=controller"),
            &json!({"status": {"replicas": 1}}),
        )
        .await
        .json();
    assert!(managers(&r).contains(&("controller".into(), "Update".into(), Some("status".into()))));
    assert_eq!(
        fields_of(&r, "controller", "Update")["f:status"]["f:replicas"],
        json!({})
    );
    // The main endpoint of a kind with a status subresource never gives
    // status to anyone.
    let main = k
        .merge(
            &format!("{DEPLOYS}/d?fieldManager=sneaky"),
            &json!({"status": {"replicas": 7}, "metadata": {"labels": {"y": "1"}}}),
        )
        .await
        .json();
    assert_eq!(main["status"]["replicas"], 1);
    assert_eq!(
        fields_of(&main, "sneaky", "Update"),
        &json!({"f:metadata": {"f:labels": {".": {}, "f:y": {}}}})
    );
    // An empty managedFields list clears them.
    let cleared = k
        .merge(
            &format!("{CMS}/m"),
            &json!({"metadata": {"managedFields": [{}]}}),
        )
        .await;
    assert_eq!(cleared.code(), 200);
    assert!(cleared.json()["metadata"].get("managedFields").is_none());
}

#[tokio::test]
async fn strategic_merge_patch_directives_on_a_deployment() {
    let k = Kube::start().await;
    let mut d = deployment("web", 1);
    d["metadata"]["finalizers"] = json!(["a.example.com/x", "a.example.com/y"]);
    d["metadata"]["labels"] = json!({"keep": "1", "drop": "1"});
    d["spec"]["template"]["spec"]["containers"] = json!([
        {"name": "main", "image": "nginx:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
         "ports": [{"containerPort": 80}]},
        {"name": "side", "image": "busybox"}
    ]);
    assert_eq!(k.post(DEPLOYS, &d).await.code(), 201);
    let path = format!("{DEPLOYS}/web");
    // Lists with a merge key merge by it; null deletes a map entry. Without
    // `$setElementOrder`, items named in the patch keep the patch's order
    // and the others are slotted in by their live position (mergeSlice's
    // "enforce the order": normalizeElementOrder, mergeSortedSlice).
    let r = k
        .patch(
            &path,
            SMP,
            &json!({"metadata": {"labels": {"drop": null}},
            "spec": {"template": {"spec": {"containers": [
                {"name": "main", "image": "nginx:2", "env": [{"name": "C", "value": "3"}]},
                {"name": "extra", "image": "redis"}
            ]}}}}),
        )
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let obj = r.json();
    assert_eq!(obj["metadata"]["labels"], json!({"keep": "1"}));
    let containers = &obj["spec"]["template"]["spec"]["containers"];
    let names: Vec<&str> = containers
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["main", "extra", "side"]);
    assert_eq!(containers[0]["image"], "nginx:2");
    assert_eq!(
        containers[0]["env"],
        json!([{"name": "C", "value": "3"}, {"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );
    // The port the patch left alone, with the protocol kube defaults.
    assert_eq!(
        containers[0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );
    // $patch: delete, $setElementOrder, $deleteFromPrimitiveList.
    let r = k
        .patch(
            &path,
            SMP,
            &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example.com/x"]},
            "spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "extra"}, {"name": "main"}],
                "containers": [{"name": "side", "$patch": "delete"}]
            }}}}),
        )
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let obj = r.json();
    assert_eq!(obj["metadata"]["finalizers"], json!(["a.example.com/y"]));
    let names: Vec<&str> = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["extra", "main"]);
    // $retainKeys: the strategy keeps only the listed keys (what kubectl
    // apply sends when switching to Recreate).
    let r = k
        .patch(
            &path,
            SMP,
            &json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        )
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["spec"]["strategy"], json!({"type": "Recreate"}));
    // $patch: replace on a list replaces it whole.
    let r = k
        .patch(
            &path,
            SMP,
            &json!({"spec": {"template": {"spec": {"containers": [
                {"name": "only", "image": "x"}, {"$patch": "replace"}]}}}}),
        )
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    // (The new container gets kube's container defaults; "x" has no tag,
    // so it pulls Always.)
    assert_eq!(
        r.json()["spec"]["template"]["spec"]["containers"],
        json!([{"name": "only", "image": "x", "imagePullPolicy": "Always", "resources": {},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}])
    );
    // Bad directives are 400s, as interpretStrategicMergePatchError maps them.
    let r = k
        .patch(
            &path,
            SMP,
            &json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
        )
        .await;
    assert_eq!(r.code(), 400, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["reason"], "BadRequest");
    // The patch is recorded like any other write.
    let obj = k.get(&path).await.json();
    assert!(managers(&obj)
        .iter()
        .any(|(m, op, _)| m == "kubeforge-tests" && op == "Update"));
}

#[tokio::test]
async fn strategic_merge_patch_keeps_server_defaults_and_validates() {
    let k = Kube::start().await;
    // Not the default (10), so that removing it is seen.
    let mut d = deployment("web", 2);
    d["spec"]["revisionHistoryLimit"] = json!(3);
    assert_eq!(k.post(DEPLOYS, &d).await.code(), 201);
    let path = format!("{DEPLOYS}/web");
    // Removing a defaulted field brings the default back, as decoding does.
    let r = k
        .patch(&path, SMP, &json!({"spec": {"revisionHistoryLimit": null}}))
        .await;
    assert_eq!(r.code(), 200);
    assert_eq!(r.json()["spec"]["revisionHistoryLimit"], 10);
    // A patch that makes the object invalid is rejected like an update.
    let r = k
        .patch(&path, SMP, &json!({"spec": {"replicas": -1}}))
        .await;
    assert_eq!(r.code(), 422);
    assert_eq!(r.json()["details"]["causes"][0]["field"], "spec.replicas");
}
