//! Write semantics against kube-apiserver's: create, update with optimistic
//! concurrency, generation, status and scale subresources, finalizers,
//! delete responses and preconditions, patches, dry-run, bad input.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod common;

use common::{rv, Kube};
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

async fn widget_crd(k: &Kube) {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.ex.com"},
        "spec": {"group": "ex.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
                // A selectable field must name a scalar the schema declares.
                "selectableFields": [{"jsonPath": ".spec.color"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                             "properties": {"color": {"type": "string"}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}});
    k.create_crd(&crd).await;
}

fn widget(name: &str) -> Value {
    json!({"apiVersion": "ex.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"replicas": 1, "color": "red"}})
}

const WIDGETS: &str = "/apis/ex.com/v1/namespaces/default/widgets";

#[tokio::test]
async fn create_sets_server_fields_and_returns_201() {
    let k = Kube::start().await;
    let d = k.post(DEPLOYS, &deployment("web", 2)).await;
    assert_eq!(d.code(), 201);
    let d = d.json();
    assert_eq!(d["kind"], "Deployment");
    assert_eq!(d["metadata"]["generation"], 1);
    assert_eq!(d["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert!(d["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .ends_with('Z'));
    assert!(rv(&d) > 0);
    let cm = k.configmap("default", "a", json!({"k": "v"})).await;
    assert!(
        cm["metadata"].get("generation").is_none(),
        "configmaps have no generation"
    );
    let again = k
        .post(
            CMS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
        )
        .await;
    assert_eq!(again.code(), 409);
    let s = again.json();
    assert_eq!(
        (s["reason"].as_str(), s["message"].as_str()),
        (
            Some("AlreadyExists"),
            Some("configmaps \"a\" already exists")
        )
    );
    assert_eq!(s["details"]["kind"], "configmaps");
}

#[tokio::test]
async fn create_rejections() {
    let k = Kube::start().await;
    let with_rv = k.post(CMS, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "resourceVersion": "5"}})).await;
    assert_eq!(with_rv.code(), 500);
    assert_eq!(
        with_rv.json()["message"],
        "resourceVersion should not be set on objects to be created"
    );
    // Only a number above zero is refused (etcd3 store Create: the
    // versioner's ParseUint); anything else is replaced.
    for (i, rv) in ["0", "abc", "-1"].iter().enumerate() {
        let r = k.post(CMS, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("rv{i}"), "resourceVersion": rv}})).await;
        assert_eq!(r.code(), 201, "{rv}: {}", String::from_utf8_lossy(&r.body));
        assert_ne!(r.json()["metadata"]["resourceVersion"], *rv);
    }
    let missing_ns = k
        .post(
            "/api/v1/namespaces/nope/configmaps",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        )
        .await;
    assert_eq!(missing_ns.code(), 404);
    assert_eq!(
        missing_ns.json()["message"],
        "namespaces \"nope\" not found"
    );
    let wrong_ns = k.post(CMS, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}})).await;
    assert_eq!(wrong_ns.code(), 400);
    let no_name = k
        .post(
            CMS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
        )
        .await;
    assert_eq!(no_name.code(), 422);
    assert_eq!(
        no_name.json()["details"]["causes"][0]["field"],
        "metadata.name"
    );
    let bad_name = k
        .post(
            CMS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}),
        )
        .await;
    assert_eq!(bad_name.code(), 422);
    let s = bad_name.json();
    assert_eq!(s["reason"], "Invalid");
    assert!(s["message"].as_str().unwrap().starts_with(
        "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\""
    ));
    let wrong_kind = k
        .post(
            CMS,
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}),
        )
        .await;
    assert_eq!(wrong_kind.code(), 400);
    let bad_type = k.post(DEPLOYS, &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}, "spec": {"replicas": "three"}})).await;
    assert_eq!(bad_type.code(), 400);
    assert!(
        bad_type.json()["message"]
            .as_str()
            .unwrap()
            .contains("spec.replicas"),
        "{}",
        bad_type.json()
    );
    let missing_required = k.post(DEPLOYS, &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}, "spec": {"template": {}}})).await;
    assert_eq!(missing_required.code(), 422);
    assert_eq!(
        missing_required.json()["details"]["causes"][0]["field"],
        "spec.selector"
    );
}

#[tokio::test]
async fn generate_name_uses_the_apiserver_alphabet() {
    let k = Kube::start().await;
    let r = k
        .post(
            CMS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}),
        )
        .await;
    assert_eq!(r.code(), 201);
    let name = r.json()["metadata"]["name"].as_str().unwrap().to_owned();
    assert_eq!(name.len(), 9);
    assert!(
        name[4..]
            .bytes()
            .all(|c| b"bcdfghjklmnpqrstvwxz2456789".contains(&c)),
        "{name}"
    );
}

#[tokio::test]
async fn update_conflicts_on_a_stale_resource_version() {
    let k = Kube::start().await;
    let mut cm = k.configmap("default", "c", json!({"v": "1"})).await;
    let stale = cm.clone();
    cm["data"]["v"] = json!("2");
    let r = k.put(&format!("{CMS}/c"), &cm).await;
    assert_eq!(r.code(), 200);
    assert!(rv(&r.json()) > rv(&stale));
    let r = k.put(&format!("{CMS}/c"), &stale).await;
    assert_eq!(r.code(), 409);
    let s = r.json();
    assert_eq!(s["reason"], "Conflict");
    assert_eq!(s["message"], "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again");
    // Built-ins accept an update without resourceVersion (last write wins).
    let mut blind = stale.clone();
    blind["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    assert_eq!(k.put(&format!("{CMS}/c"), &blind).await.code(), 200);
    // No create on update; the UID read with the object is a precondition
    // a missing object fails first.
    let mut other = blind.clone();
    other["metadata"]["name"] = json!("missing");
    assert_eq!(k.put(&format!("{CMS}/missing"), &other).await.code(), 409);
    other["metadata"].as_object_mut().unwrap().remove("uid");
    assert_eq!(k.put(&format!("{CMS}/missing"), &other).await.code(), 404);
    // Name must match the URL.
    assert_eq!(k.put(&format!("{CMS}/c2"), &blind).await.code(), 400);
}

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";

fn lease(name: &str) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}})
}

#[tokio::test]
async fn a_put_creates_a_missing_object_of_a_kind_that_creates_on_update() {
    let k = Kube::start().await;
    // Leases create on update (`leaseStrategy.AllowCreateOnUpdate`): 201
    // with the server's fields, then the object is there.
    let r = k.put(&format!("{LEASES}/held"), &lease("held")).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    let created = r.json();
    assert_eq!(created["metadata"]["namespace"], "default");
    assert_eq!(created["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert!(rv(&created) > 0);
    assert_eq!(
        created["metadata"]["managedFields"][0]["operation"],
        "Update"
    );
    let got = k.get(&format!("{LEASES}/held")).await;
    assert_eq!(got.code(), 200);
    let got = got.json();
    assert_eq!(got["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(got["spec"]["holderIdentity"], "me");
    // The same PUT again updates it.
    let mut next = got.clone();
    next["spec"]["holderIdentity"] = json!("you");
    let r = k.put(&format!("{LEASES}/held"), &next).await;
    assert_eq!(r.code(), 200);
    assert_eq!(r.json()["metadata"]["uid"], created["metadata"]["uid"]);

    // A resourceVersion in the body of a create-on-update is not checked
    // (etcd3 clears it before storing); a UID is an update precondition
    // nothing missing meets.
    let mut versioned = lease("versioned");
    versioned["metadata"]["resourceVersion"] = json!("999999");
    let r = k.put(&format!("{LEASES}/versioned"), &versioned).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert_ne!(r.json()["metadata"]["resourceVersion"], "999999");
    let mut with_uid = lease("with-uid");
    with_uid["metadata"]["uid"] = json!("0b2b7d4e-3c9b-4a7e-9a55-6a3c0d7a1f00");
    let r = k.put(&format!("{LEASES}/with-uid"), &with_uid).await;
    assert_eq!(r.code(), 409);
    assert_eq!(
        r.json()["message"],
        "Operation cannot be fulfilled on leases.coordination.k8s.io \"with-uid\": StorageError: invalid object, Code: 4, \
         Key: /registry/leases/default/with-uid, ResourceVersion: 0, \
         AdditionalErrorMsg: Precondition failed: UID in precondition: 0b2b7d4e-3c9b-4a7e-9a55-6a3c0d7a1f00, UID in object meta: "
    );
    assert_eq!(k.get(&format!("{LEASES}/with-uid")).await.code(), 404);
    // The create path's checks: the name must match the URL, the body is
    // validated as on create, and a dry run stores nothing.
    assert_eq!(
        k.put(&format!("{LEASES}/other"), &lease("held"))
            .await
            .code(),
        400
    );
    let mut bad = lease("bad");
    bad["spec"]["leaseDurationSeconds"] = json!("long");
    assert_eq!(k.put(&format!("{LEASES}/bad"), &bad).await.code(), 400);
    let r = k
        .put(&format!("{LEASES}/dry?dryRun=All"), &lease("dry"))
        .await;
    assert_eq!(r.code(), 201);
    assert_eq!(k.get(&format!("{LEASES}/dry")).await.code(), 404);
    // Not in a namespace that does not exist.
    let r = k
        .put(
            "/apis/coordination.k8s.io/v1/namespaces/nowhere/leases/l",
            &lease("l"),
        )
        .await;
    assert_eq!(r.code(), 404);
    assert_eq!(r.json()["message"], "namespaces \"nowhere\" not found");

    // Services too, through the create defaults (a cluster IP); their
    // status subresource never creates.
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]}});
    let r = k
        .put("/api/v1/namespaces/default/services/web/status", &svc)
        .await;
    assert_eq!(r.code(), 404);
    let r = k.put("/api/v1/namespaces/default/services/web", &svc).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.json()["spec"]["clusterIP"].as_str().is_some());
    // Events of both groups.
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "c", "reportingInstance": "i",
        "action": "Act", "reason": "Why", "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}});
    let r = k
        .put("/apis/events.k8s.io/v1/namespaces/default/events/e", &event)
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        k.get("/api/v1/namespaces/default/events/e").await.code(),
        200
    );
}

#[tokio::test]
async fn a_put_to_a_missing_object_of_other_kinds_is_not_found() {
    let k = Kube::start().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gone"}});
    let r = k.put(&format!("{CMS}/gone"), &cm).await;
    assert_eq!(r.code(), 404);
    assert_eq!(r.json()["message"], "configmaps \"gone\" not found");
    let r = k
        .put(&format!("{DEPLOYS}/gone"), &deployment("gone", 1))
        .await;
    assert_eq!(r.code(), 404);
    // A UID in the body is an update precondition, checked before the
    // object is found missing: a 409 quoting the storage error, for every
    // kind (an update of an object read before it was deleted).
    let mut read = cm.clone();
    read["metadata"]["uid"] = json!("u-1");
    let r = k.put(&format!("{CMS}/gone"), &read).await;
    assert_eq!(r.code(), 409);
    assert_eq!(
        r.json()["message"],
        "Operation cannot be fulfilled on configmaps \"gone\": StorageError: invalid object, Code: 4, \
         Key: /registry/configmaps/default/gone, ResourceVersion: 0, \
         AdditionalErrorMsg: Precondition failed: UID in precondition: u-1, UID in object meta: "
    );
    // Custom resources never create on update; a missing one is a 404
    // before its resourceVersion is asked for (the store finds nothing
    // first).
    widget_crd(&k).await;
    let r = k.put(&format!("{WIDGETS}/gone"), &widget("gone")).await;
    assert_eq!(r.code(), 404, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["message"], "widgets.ex.com \"gone\" not found");
    let mut versioned = widget("gone");
    versioned["metadata"]["resourceVersion"] = json!("5");
    assert_eq!(
        k.put(&format!("{WIDGETS}/gone"), &versioned).await.code(),
        404
    );
    let mut read = widget("gone");
    read["metadata"]["uid"] = json!("u-2");
    let r = k.put(&format!("{WIDGETS}/gone"), &read).await;
    assert_eq!(r.code(), 409);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("Key: /registry/ex.com/widgets/default/gone, ResourceVersion: 0"),
        "{}",
        r.json()["message"]
    );
    assert_eq!(k.get(&format!("{WIDGETS}/gone")).await.code(), 404);
    // An existing one still needs its resourceVersion.
    let created = k.post(WIDGETS, &widget("here")).await;
    assert_eq!(created.code(), 201);
    let mut blind = created.json();
    blind["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let r = k.put(&format!("{WIDGETS}/here"), &blind).await;
    assert_eq!(r.code(), 422);
    assert_eq!(
        r.json()["details"]["causes"][0]["message"],
        "Invalid value: 0x0: must be specified for an update"
    );
}

#[tokio::test]
async fn unchanged_update_does_not_write() {
    let k = Kube::start().await;
    let cm = k.configmap("default", "same", json!({"v": "1"})).await;
    let r = k.put(&format!("{CMS}/same"), &cm).await.json();
    assert_eq!(rv(&r), rv(&cm));
}

#[tokio::test]
async fn generation_bumps_on_spec_only_for_builtins() {
    let k = Kube::start().await;
    let d = k.post(DEPLOYS, &deployment("g", 1)).await.json();
    let p = format!("{DEPLOYS}/g");
    let r = k
        .merge(&p, &json!({"metadata": {"labels": {"x": "y"}}}))
        .await
        .json();
    assert_eq!(r["metadata"]["generation"], 1);
    let r = k.merge(&p, &json!({"spec": {"replicas": 3}})).await.json();
    assert_eq!(r["metadata"]["generation"], 2);
    // Status through the main endpoint is ignored; through /status it is
    // written and does not bump generation.
    let r = k
        .merge(&p, &json!({"status": {"replicas": 9}}))
        .await
        .json();
    assert!(
        r.get("status").is_none() || r["status"].get("replicas").is_none(),
        "{r}"
    );
    let r = k
        .merge(
            &format!("{p}/status"),
            &json!({"status": {"replicas": 9}, "spec": {"replicas": 7}}),
        )
        .await
        .json();
    assert_eq!(r["status"]["replicas"], 9);
    assert_eq!(r["spec"]["replicas"], 3, "status endpoint ignores spec");
    assert_eq!(r["metadata"]["generation"], 2);
    assert!(rv(&r) > rv(&d));
}

#[tokio::test]
async fn custom_resources_need_resource_version_and_bump_generation_outside_metadata() {
    let k = Kube::start().await;
    widget_crd(&k).await;
    let w = k.post(WIDGETS, &widget("w")).await;
    assert_eq!(w.code(), 201, "{}", String::from_utf8_lossy(&w.body));
    let w = w.json();
    assert_eq!(w["metadata"]["generation"], 1);
    let mut no_rv = w.clone();
    no_rv["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let r = k.put(&format!("{WIDGETS}/w"), &no_rv).await;
    assert_eq!(r.code(), 422);
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .contains("metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"));
    let mut changed = w.clone();
    changed["spec"]["color"] = json!("blue");
    changed["extra"] = json!(1);
    let r = k.put(&format!("{WIDGETS}/w"), &changed).await.json();
    assert_eq!(r["metadata"]["generation"], 2);
    let r = k
        .merge(
            &format!("{WIDGETS}/w"),
            &json!({"metadata": {"annotations": {"a": "b"}}}),
        )
        .await
        .json();
    assert_eq!(r["metadata"]["generation"], 2);
    // Status is dropped on create and only written through /status.
    let mut with_status = widget("s");
    with_status["status"] = json!({"replicas": 4});
    let s = k.post(WIDGETS, &with_status).await.json();
    assert!(s.get("status").is_none());
    let s = k
        .merge(
            &format!("{WIDGETS}/s/status"),
            &json!({"status": {"replicas": 4, "selector": "app=s"}}),
        )
        .await
        .json();
    assert_eq!(s["status"]["replicas"], 4);
    assert_eq!(s["metadata"]["generation"], 1);
    // The items of a custom-resource list carry kind and apiVersion.
    let list = k.get(WIDGETS).await.json();
    assert_eq!(list["kind"], "WidgetList");
    assert_eq!(list["items"][0]["kind"], "Widget");
    // Wrong apiVersion or kind.
    let mut wrong = widget("x");
    wrong["kind"] = json!("Gadget");
    assert_eq!(k.post(WIDGETS, &wrong).await.code(), 400);
}

#[tokio::test]
async fn scale_subresource_for_builtins_and_crds() {
    let k = Kube::start().await;
    k.post(DEPLOYS, &deployment("s", 2)).await;
    let sc = k.get(&format!("{DEPLOYS}/s/scale")).await.json();
    assert_eq!(sc["kind"], "Scale");
    assert_eq!(sc["apiVersion"], "autoscaling/v1");
    assert_eq!(sc["spec"]["replicas"], 2);
    assert_eq!(sc["status"]["selector"], "app=s");
    let r = k
        .merge(
            &format!("{DEPLOYS}/s/scale"),
            &json!({"spec": {"replicas": 5}}),
        )
        .await;
    assert_eq!(r.code(), 200);
    assert_eq!(r.json()["spec"]["replicas"], 5);
    let d = k.get(&format!("{DEPLOYS}/s")).await.json();
    assert_eq!(d["spec"]["replicas"], 5);
    assert_eq!(d["metadata"]["generation"], 2);
    let mut put = sc.clone();
    put["spec"]["replicas"] = json!(1);
    assert_eq!(
        k.put(&format!("{DEPLOYS}/s/scale"), &put).await.code(),
        409,
        "stale resourceVersion in Scale"
    );
    put["spec"]["replicas"] = json!(-1);
    put["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    assert_eq!(k.put(&format!("{DEPLOYS}/s/scale"), &put).await.code(), 422);
    widget_crd(&k).await;
    k.post(WIDGETS, &widget("w")).await;
    k.merge(
        &format!("{WIDGETS}/w/status"),
        &json!({"status": {"replicas": 1, "selector": "app=w"}}),
    )
    .await;
    let sc = k.get(&format!("{WIDGETS}/w/scale")).await.json();
    assert_eq!(
        (
            sc["spec"]["replicas"].as_i64(),
            sc["status"]["selector"].as_str()
        ),
        (Some(1), Some("app=w"))
    );
    k.merge(
        &format!("{WIDGETS}/w/scale"),
        &json!({"spec": {"replicas": 3}}),
    )
    .await;
    assert_eq!(
        k.get(&format!("{WIDGETS}/w")).await.json()["spec"]["replicas"],
        3
    );
    // No scale subresource on configmaps.
    assert_eq!(k.get(&format!("{CMS}/x/scale")).await.code(), 404);
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let k = Kube::start().await;
    widget_crd(&k).await;
    let mut w = widget("f");
    w["metadata"]["finalizers"] = json!(["ex.com/keep"]);
    k.post(WIDGETS, &w).await;
    let p = format!("{WIDGETS}/f");
    let r = k.delete(&p).await;
    assert_eq!(r.code(), 200);
    let obj = r.json();
    assert_eq!(
        obj["kind"], "Widget",
        "a delete held by finalizers returns the object"
    );
    assert!(obj["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(obj["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(obj["metadata"]["generation"], 2);
    let add = k
        .merge(
            &p,
            &json!({"metadata": {"finalizers": ["ex.com/keep", "ex.com/more"]}}),
        )
        .await;
    assert_eq!(add.code(), 422);
    assert!(add.json()["message"]
        .as_str()
        .unwrap()
        .contains("no new finalizers can be added if the object is being deleted"));
    let mut watch = k
        .watch(&format!("{WIDGETS}?watch=1&resourceVersion={}", rv(&obj)))
        .await;
    let r = k
        .patch(
            &p,
            "application/json-patch+json",
            &json!([{"op": "remove", "path": "/metadata/finalizers"}]),
        )
        .await;
    assert_eq!(r.code(), 200);
    assert_eq!(k.get(&p).await.code(), 404);
    assert_eq!(
        common::ev(&watch.next().await),
        ("DELETED".into(), "f".into())
    );
}

/// A UID in a PUT body is an update precondition the stored object's UID
/// must meet (409 with etcd3's storage error, as kube-apiserver answers),
/// while a patch that changes the UID is refused by validation (422).
#[tokio::test]
async fn a_put_with_another_uid_is_a_conflict_and_a_patch_of_it_is_invalid() {
    let k = Kube::start().await;
    let cm = k.configmap("default", "u", json!({})).await;
    let stored = cm["metadata"]["uid"].as_str().unwrap().to_owned();

    let mut same = cm.clone();
    same["data"] = json!({"a": "1"});
    assert_eq!(k.put(&format!("{CMS}/u"), &same).await.code(), 200);

    let mut other = cm.clone();
    other["metadata"]["uid"] = json!("0b2b7d4e-3c9b-4a7e-9a55-6a3c0d7a1f01");
    other["metadata"]["resourceVersion"] = json!(null);
    let r = k.put(&format!("{CMS}/u"), &other).await;
    assert_eq!(r.code(), 409, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        format!(
            "Operation cannot be fulfilled on configmaps \"u\": StorageError: invalid object, Code: 4, \
             Key: /registry/configmaps/default/u, ResourceVersion: 0, \
             AdditionalErrorMsg: Precondition failed: UID in precondition: \
             0b2b7d4e-3c9b-4a7e-9a55-6a3c0d7a1f01, UID in object meta: {stored}"
        )
    );

    let r = k
        .patch(
            &format!("{CMS}/u"),
            "application/merge-patch+json",
            &json!({"metadata": {"uid": "0b2b7d4e-3c9b-4a7e-9a55-6a3c0d7a1f01"}}),
        )
        .await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    let got = k.get(&format!("{CMS}/u")).await.json();
    assert_eq!(got["metadata"]["uid"], stored.as_str());
    assert_eq!(got["data"], json!({"a": "1"}));
}

#[tokio::test]
async fn delete_responses_and_preconditions() {
    let k = Kube::start().await;
    let cm = k.configmap("default", "d", json!({})).await;
    let uid = cm["metadata"]["uid"].as_str().unwrap().to_owned();
    let bad = k
        .delete_with(
            &format!("{CMS}/d"),
            &json!({"preconditions": {"uid": "other"}}),
        )
        .await;
    assert_eq!(bad.code(), 409);
    assert!(bad.json()["message"]
        .as_str()
        .unwrap()
        .contains("Precondition failed: UID in precondition: other"));
    let bad = k
        .delete_with(
            &format!("{CMS}/d"),
            &json!({"preconditions": {"resourceVersion": "1"}}),
        )
        .await;
    assert_eq!(bad.code(), 409);
    let dry = k
        .raw("DELETE", &format!("{CMS}/d?dryRun=All"), None, "", None)
        .await;
    assert_eq!(dry.code(), 200);
    assert_eq!(
        k.get(&format!("{CMS}/d")).await.code(),
        200,
        "dry run deletes nothing"
    );
    let r = k
        .delete_with(&format!("{CMS}/d"), &json!({"preconditions": {"uid": uid}}))
        .await
        .json();
    assert_eq!(r["kind"], "Status");
    assert_eq!(r["status"], "Success");
    assert_eq!(r["details"]["name"], "d");
    assert_eq!(r["details"]["kind"], "configmaps");
    assert_eq!(r["details"]["uid"], uid.as_str());
    assert_eq!(k.delete(&format!("{CMS}/d")).await.code(), 404);
    // Pods answer with the object.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let created = k.post("/api/v1/namespaces/default/pods", &pod).await.json();
    assert_eq!(created["status"]["phase"], "Pending");
    let r = k.delete("/api/v1/namespaces/default/pods/p").await.json();
    assert_eq!(r["kind"], "Pod");
}

#[tokio::test]
async fn delete_collection_with_selector() {
    let k = Kube::start().await;
    for (n, l) in [("a", "x"), ("b", "x"), ("c", "y")] {
        k.post(CMS, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "labels": {"l": l}}})).await;
    }
    let r = k
        .raw(
            "DELETE",
            &format!("{CMS}?labelSelector=l%3Dx"),
            None,
            "",
            None,
        )
        .await;
    assert_eq!(r.code(), 200);
    assert_eq!(r.json()["kind"], "ConfigMapList");
    let left = k.get(CMS).await.json();
    let names: Vec<&str> = left["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c"]);
    // Namespaces have no deletecollection.
    assert_eq!(
        k.raw("DELETE", "/api/v1/namespaces", None, "", None)
            .await
            .code(),
        405
    );
}

#[tokio::test]
async fn dry_run_writes_nothing() {
    let k = Kube::start().await;
    let r = k
        .raw(
            "POST",
            &format!("{CMS}?dryRun=All"),
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dry"}}"#,
            None,
        )
        .await;
    assert_eq!(r.code(), 201);
    assert!(r.json()["metadata"]["uid"].is_string());
    assert_eq!(k.get(&format!("{CMS}/dry")).await.code(), 404);
    k.configmap("default", "dry", json!({"a": "1"})).await;
    let r = k
        .raw(
            "PATCH",
            &format!("{CMS}/dry?dryRun=All"),
            Some("application/merge-patch+json"),
            r#"{"data":{"a":"2"}}"#,
            None,
        )
        .await;
    assert_eq!(r.json()["data"]["a"], "2");
    assert_eq!(k.get(&format!("{CMS}/dry")).await.json()["data"]["a"], "1");
    assert_eq!(
        k.raw(
            "POST",
            &format!("{CMS}?dryRun=Some"),
            Some("application/json"),
            "{}",
            None
        )
        .await
        .code(),
        400
    );
}

#[tokio::test]
async fn patches_merge_json_and_preconditions() {
    let k = Kube::start().await;
    let cm = k
        .configmap("default", "p", json!({"a": "1", "b": "2"}))
        .await;
    let p = format!("{CMS}/p");
    let r = k
        .merge(&p, &json!({"data": {"a": null, "c": "3"}}))
        .await
        .json();
    assert_eq!(r["data"], json!({"b": "2", "c": "3"}));
    let r = k
        .patch(
            &p,
            "application/json-patch+json",
            &json!([{"op": "add", "path": "/data/d", "value": "4"}]),
        )
        .await
        .json();
    assert_eq!(r["data"]["d"], "4");
    let stale = k.merge(&p, &json!({"metadata": {"resourceVersion": cm["metadata"]["resourceVersion"]}, "data": {"x": "y"}})).await;
    assert_eq!(stale.code(), 409);
    let fresh = k.merge(&p, &json!({"metadata": {"resourceVersion": r["metadata"]["resourceVersion"]}, "data": {"x": "y"}})).await;
    assert_eq!(fresh.code(), 200);
    let failed_test = k
        .patch(
            &p,
            "application/json-patch+json",
            &json!([{"op": "test", "path": "/data/a", "value": "nope"}]),
        )
        .await;
    assert_eq!(failed_test.code(), 422);
    assert_eq!(
        k.merge(&format!("{CMS}/missing"), &json!({})).await.code(),
        404
    );
    let force = k
        .raw(
            "PATCH",
            &format!("{p}?force=true"),
            Some("application/merge-patch+json"),
            "{}",
            None,
        )
        .await;
    assert_eq!(force.code(), 422);
}

/// JSON patches are bounded as kube-apiserver bounds them: 10 000
/// operations (413, apiserver `endpoints/handlers/patch.go`) and 3 MiB
/// added by `copy` (`JSONPatchMaxCopyBytes`), so a self-doubling patch gets
/// an answer instead of exhausting memory.
#[tokio::test]
async fn json_patches_are_bounded() {
    let k = Kube::start().await;
    let cm = "/api/v1/namespaces/default/configmaps/bounded";
    k.configmap("default", "bounded", json!({"a": "x"})).await;
    let json_patch = "application/json-patch+json";

    let tests: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/kind", "value": "ConfigMap"}))
        .collect();
    let r = k.patch(cm, json_patch, &Value::Array(tests)).await;
    assert_eq!(r.code(), 413, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["reason"], "RequestEntityTooLarge");
    assert_eq!(
        r.json()["message"],
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );

    let mut doubling = vec![json!({"op": "add", "path": "/grow", "value": ["x".repeat(1024)]})];
    doubling.extend((0..40).map(|_| json!({"op": "copy", "from": "/grow", "path": "/grow/-"})));
    let r = k.patch(cm, json_patch, &Value::Array(doubling)).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    let message = r.json()["message"].as_str().unwrap_or_default().to_owned();
    assert!(
        message
            .starts_with("Unable to complete the copy, the accumulated size increase of copy is"),
        "{message}"
    );

    // Within the bounds, copy works.
    let r = k
        .patch(
            cm,
            json_patch,
            &json!([{"op": "copy", "from": "/data/a", "path": "/data/b"}]),
        )
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["data"], json!({"a": "x", "b": "x"}));
}

#[tokio::test]
async fn unsupported_patch_types_get_415() {
    let k = Kube::start().await;
    k.configmap("default", "p", json!({})).await;
    let r = k
        .raw("PATCH", &format!("{CMS}/p"), Some("text/plain"), "{}", None)
        .await;
    assert_eq!(r.code(), 415);
    assert_eq!(r.json()["reason"], "UnsupportedMediaType");
    widget_crd(&k).await;
    k.post(WIDGETS, &widget("w")).await;
    let r = k
        .raw(
            "PATCH",
            &format!("{WIDGETS}/w"),
            Some("application/strategic-merge-patch+json"),
            "{}",
            None,
        )
        .await;
    assert_eq!(r.code(), 415);
    assert_eq!(
        r.json()["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
}

#[tokio::test]
async fn bad_bodies_are_400_415_413() {
    let k = Kube::start().await;
    let r = k
        .raw("POST", CMS, Some("application/json"), "{not json", None)
        .await;
    assert_eq!(r.code(), 400);
    assert_eq!(r.json()["kind"], "Status");
    let r = k
        .raw("POST", CMS, Some("application/yaml"), "a: [b", None)
        .await;
    assert_eq!(r.code(), 400);
    let r = k
        .raw(
            "POST",
            CMS,
            Some("application/vnd.kubernetes.protobuf"),
            "k8s\0",
            None,
        )
        .await;
    // kube-apiserver's protobuf serializer: the magic prefix alone is "empty body".
    assert_eq!(r.code(), 400);
    assert!(r.json()["message"]
        .as_str()
        .unwrap_or("")
        .contains("empty body"));
    let r = k
        .raw("POST", CMS, Some("application/json"), "[1,2]", None)
        .await;
    assert_eq!(r.code(), 400);
    let huge = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"x":"{}"}}}}"#,
        "a".repeat(3 * 1024 * 1024 + 10)
    );
    let r = k
        .raw("POST", CMS, Some("application/json"), huge, None)
        .await;
    assert_eq!(r.code(), 413);
    // YAML bodies are accepted.
    let r = k
        .raw(
            "POST",
            CMS,
            Some("application/yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\ndata:\n  k: v\n",
            None,
        )
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    // And YAML responses when asked for.
    let r = k
        .get_accept(&format!("{CMS}/yml"), "application/yaml")
        .await;
    assert_eq!(r.headers["content-type"], "application/yaml");
    assert!(String::from_utf8_lossy(&r.body).contains("kind: ConfigMap"));
}

#[tokio::test]
async fn secrets_merge_string_data_and_services_get_cluster_ips() {
    let k = Kube::start().await;
    let s = k.post("/api/v1/namespaces/default/secrets", &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"u": "me"}})).await.json();
    assert_eq!(s["data"]["u"], "bWU=");
    assert_eq!(s["type"], "Opaque");
    assert!(s.get("stringData").is_none());
    let svc = k.post("/api/v1/namespaces/default/services", &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}})).await.json();
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert!(svc["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .starts_with("10.96."));
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);
}

#[tokio::test]
async fn concurrent_writers_never_lose_an_acknowledged_write() {
    let k = std::sync::Arc::new(Kube::start().await);
    k.configmap("default", "counter", json!({"n": "0"})).await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let k = k.clone();
        tasks.push(tokio::spawn(async move {
            let mut done = 0;
            while done < 5 {
                let cur = k.get(&format!("{CMS}/counter")).await.json();
                let n: i64 = cur["data"]["n"].as_str().unwrap().parse().unwrap();
                let mut next = cur.clone();
                next["data"]["n"] = json!((n + 1).to_string());
                let r = k.put(&format!("{CMS}/counter"), &next).await;
                match r.code() {
                    200 => done += 1,
                    409 => continue,
                    other => panic!("unexpected {other}"),
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let cur = k.get(&format!("{CMS}/counter")).await.json();
    assert_eq!(cur["data"]["n"], "40");
}

#[tokio::test]
async fn unknown_fields_warn_by_default_and_fail_under_strict() {
    let k = Kube::start().await;
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u","creationTimestamp":null,"bogus":1},"data":{"a":"b"},"extra":{"x":1}}"#;
    let r = k
        .raw("POST", CMS, Some("application/json"), body, None)
        .await;
    assert_eq!(r.code(), 201);
    let warnings: Vec<&str> = r
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        [
            r#"299 - "unknown field \"extra\"""#,
            r#"299 - "unknown field \"metadata.bogus\"""#
        ]
    );
    let r = k
        .raw(
            "POST",
            &format!("{CMS}?fieldValidation=Strict"),
            Some("application/json"),
            body.replace("\"u\"", "\"v\""),
            None,
        )
        .await;
    assert_eq!(r.code(), 400);
    assert_eq!(
        r.json()["message"],
        "strict decoding error: unknown field \"extra\", unknown field \"metadata.bogus\""
    );
    let r = k
        .raw(
            "POST",
            &format!("{CMS}?fieldValidation=Ignore"),
            Some("application/json"),
            body.replace("\"u\"", "\"w\""),
            None,
        )
        .await;
    assert_eq!(r.code(), 201);
    assert!(r.headers.get("warning").is_none());
    // Under Warn and Ignore alike, unknown fields are dropped, as decoding
    // into the kind's type drops them.
    for name in ["u", "w"] {
        let stored = k.get(&format!("{CMS}/{name}")).await.json();
        assert!(stored.get("extra").is_none(), "{stored}");
        assert!(stored["metadata"].get("bogus").is_none(), "{stored}");
        assert_eq!(stored["data"]["a"], "b");
    }
    // A full, valid Deployment has no unknown fields.
    let d = k
        .raw(
            "POST",
            &format!("{DEPLOYS}?fieldValidation=Strict"),
            Some("application/json"),
            serde_json::to_vec(&deployment("strict", 1)).unwrap(),
            None,
        )
        .await;
    assert_eq!(d.code(), 201, "{}", String::from_utf8_lossy(&d.body));
}

#[tokio::test]
async fn events_api_and_core_events_share_one_store() {
    let k = Kube::start().await;
    let new_api = "/apis/events.k8s.io/v1/namespaces/default/events";
    let e = k
        .post(new_api, &json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "ex.com/ctl", "reportingInstance": "ctl-0",
            "action": "Reconcile", "reason": "Synced", "type": "Normal", "note": "all good",
            "regarding": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "default"}}))
        .await;
    assert_eq!(e.code(), 201, "{}", String::from_utf8_lossy(&e.body));
    let e = e.json();
    assert_eq!(e["apiVersion"], "events.k8s.io/v1");
    assert_eq!(e["note"], "all good");
    let core = k.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dcm,involvedObject.kind%3DConfigMap").await.json();
    assert_eq!(core["items"].as_array().unwrap().len(), 1);
    assert_eq!(core["items"][0]["message"], "all good");
    assert_eq!(core["items"][0]["reportingComponent"], "ex.com/ctl");
    let back = k
        .get(&format!("{new_api}?fieldSelector=regarding.name%3Dcm"))
        .await
        .json();
    assert_eq!(back["items"][0]["note"], "all good");
    assert!(back["items"][0].get("kind").is_none());
    let mut w = k
        .watch(&format!("{new_api}?watch=1&resourceVersion={}", rv(&e)))
        .await;
    let patched = k
        .merge(&format!("{new_api}/e1"), &json!({"note": "changed"}))
        .await;
    assert_eq!(patched.code(), 200);
    assert_eq!(patched.json()["note"], "changed");
    let ev = w.next().await;
    assert_eq!(ev["object"]["apiVersion"], "events.k8s.io/v1");
    assert_eq!(ev["object"]["note"], "changed");
    assert_eq!(
        k.get("/api/v1/namespaces/default/events/e1").await.json()["message"],
        "changed"
    );
}

/// kube-apiserver decodes a built-in's body with the endpoint's kind and
/// version as defaults (apimachinery's `gvkWithDefaults`), which is how the
/// official Python client sends its models; a custom resource is decoded
/// unstructured and must name its kind and apiVersion.
#[tokio::test]
async fn bodies_without_type_meta_take_the_endpoints_for_builtins_only() {
    let k = Kube::start().await;
    // Create, cluster-scoped and namespaced, with neither field.
    let ns = k
        .post("/api/v1/namespaces", &json!({"metadata": {"name": "bare"}}))
        .await;
    assert_eq!(ns.code(), 201, "{}", ns.json());
    assert_eq!(ns.json()["kind"], "Namespace");
    assert_eq!(ns.json()["apiVersion"], "v1");
    let d = deployment("bare", 1);
    let mut bare = d.clone();
    bare.as_object_mut().unwrap().remove("kind");
    let created = k.post(DEPLOYS, &bare).await;
    assert_eq!(created.code(), 201, "{}", created.json());
    assert_eq!(created.json()["kind"], "Deployment");
    assert_eq!(created.json()["apiVersion"], "apps/v1");
    // Only the kind given; and a replace with neither.
    let cm = k
        .post(
            CMS,
            &json!({"kind": "ConfigMap", "metadata": {"name": "c"}}),
        )
        .await;
    assert_eq!(cm.code(), 201, "{}", cm.json());
    let mut replace = cm.json();
    replace["data"] = json!({"k": "v"});
    let map = replace.as_object_mut().unwrap();
    map.remove("kind");
    map.remove("apiVersion");
    let replaced = k.put(&format!("{CMS}/c"), &replace).await;
    assert_eq!(replaced.code(), 200, "{}", replaced.json());
    assert_eq!(replaced.json()["kind"], "ConfigMap");
    assert_eq!(k.get(&format!("{CMS}/c")).await.json()["data"]["k"], "v");
    // Naming another kind is still a 400.
    let other = k
        .post(CMS, &json!({"kind": "Secret", "metadata": {"name": "s"}}))
        .await;
    assert_eq!(other.code(), 400);
    assert!(other.json()["message"]
        .as_str()
        .unwrap()
        .starts_with("Secret in version \"v1\" cannot be handled as a ConfigMap"));

    // Custom resources: no kind is kube-apiserver's unstructured decode
    // error, no apiVersion its group-version check.
    widget_crd(&k).await;
    let mut no_kind = widget("w");
    no_kind.as_object_mut().unwrap().remove("kind");
    let r = k.post(WIDGETS, &no_kind).await;
    assert_eq!(r.code(), 400);
    let message = r.json()["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with(
            "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '{"
        ),
        "{message}"
    );
    assert!(message.ends_with(" ...)"), "{message}");
    let mut no_version = widget("w");
    no_version.as_object_mut().unwrap().remove("apiVersion");
    let r = k.post(WIDGETS, &no_version).await;
    assert_eq!(r.code(), 400);
    assert_eq!(
        r.json()["message"],
        "the API version in the data () does not match the expected API version (ex.com/v1)"
    );
    assert_eq!(k.get(&format!("{WIDGETS}/w")).await.code(), 404);
}

#[tokio::test]
async fn duplicate_keys_warn_by_default_and_fail_under_strict() {
    let k = Kube::start().await;
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","name":"d"},"data":{"a":"1"},"data":{"a":"2"}}"#;
    let r = k
        .raw(
            "POST",
            &format!("{CMS}?fieldValidation=Strict"),
            Some("application/json"),
            body,
            None,
        )
        .await;
    assert_eq!(r.code(), 400, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        "strict decoding error: duplicate field \"metadata.name\", duplicate field \"data\""
    );
    let r = k
        .raw("POST", CMS, Some("application/json"), body, None)
        .await;
    assert_eq!(r.code(), 201);
    let warnings: Vec<&str> = r
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        [
            r#"299 - "duplicate field \"metadata.name\"""#,
            r#"299 - "duplicate field \"data\"""#
        ]
    );
    // The last value wins, as encoding/json decodes.
    assert_eq!(r.json()["data"]["a"], "2");
}

#[tokio::test]
async fn field_manager_must_be_short_and_printable() {
    let k = Kube::start().await;
    let cm =
        |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    let long = "m".repeat(129);
    let r = k
        .post(&format!("{CMS}?fieldManager={long}"), &cm("a"))
        .await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
    );
    let r = k.post(&format!("{CMS}?fieldManager=a%07b"), &cm("a")).await;
    assert_eq!(r.code(), 422);
    let cause = &r.json()["details"]["causes"][0];
    assert_eq!(cause["field"], "fieldManager");
    assert_eq!(
        cause["message"],
        "Invalid value: \"a\\ab\": invalid character U+0007 (at position 1)"
    );
    let ok = k
        .post(&format!("{CMS}?fieldManager={}", "m".repeat(128)), &cm("b"))
        .await;
    assert_eq!(ok.code(), 201);
    let r = k
        .merge(
            &format!("{CMS}/b?fieldManager=%E2%80%8B"),
            &json!({"data": {"x": "y"}}),
        )
        .await;
    assert_eq!(r.code(), 422);
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .starts_with("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: "));
    let r = k
        .put(&format!("{CMS}/b?fieldManager={long}"), &cm("b"))
        .await;
    assert_eq!(r.code(), 422);
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .starts_with("UpdateOptions.meta.k8s.io"));

    // Within the limit, each unprintable character is its own error, as
    // kube-apiserver reports them.
    let r = k
        .post(&format!("{CMS}?fieldManager=a%00b%01"), &cm("c"))
        .await;
    assert_eq!(r.code(), 422);
    let causes = r.json()["details"]["causes"].clone();
    assert_eq!(causes.as_array().map(Vec::len), Some(2), "{causes}");
    assert_eq!(
        causes[1]["message"],
        "Invalid value: \"a\\x00b\\x01\": invalid character U+0001 (at position 3)"
    );
    // Beyond it, only the length: one error per unprintable character,
    // each quoting the whole value, would grow with the square of its
    // length (16k of them ran for minutes, holding gigabytes).
    let nuls = "%00".repeat(16_000);
    let r = k
        .post(&format!("{CMS}?fieldManager={nuls}"), &cm("d"))
        .await;
    assert_eq!(r.code(), 422);
    assert_eq!(
        r.json()["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
    );
    assert!(r.body.len() < 1024, "{} bytes", r.body.len());
}

#[tokio::test]
async fn the_system_namespaces_may_not_be_deleted() {
    let k = Kube::start().await;
    for ns in ["default", "kube-system", "kube-public"] {
        let r = k.delete(&format!("/api/v1/namespaces/{ns}")).await;
        assert_eq!(r.code(), 403, "{ns}");
        let s = r.json();
        assert_eq!(s["reason"], "Forbidden");
        assert_eq!(
            s["message"],
            format!("namespaces \"{ns}\" is forbidden: this namespace may not be deleted")
        );
        assert_eq!(s["details"], json!({"name": ns, "kind": "namespaces"}));
        assert_eq!(k.get(&format!("/api/v1/namespaces/{ns}")).await.code(), 200);
    }
    // Other namespaces, kube-node-lease included, may go.
    let r = k.delete("/api/v1/namespaces/kube-node-lease").await;
    assert_eq!(r.code(), 200);
}

/// Names follow the kind's apimachinery rule (`pkg/util/validation`, the
/// kinds' `pkg/apis/*/validation`): a DNS-1123 subdomain is one regex and
/// 253 characters, so a 100-character dotless name is one; namespaces are
/// DNS-1123 labels, services DNS-1035 labels, RBAC names path segments,
/// a generateName is checked as a prefix, and a CronJob keeps 52
/// characters for its Jobs' suffix.
#[tokio::test]
async fn names_follow_each_kinds_apimachinery_rule() {
    let k = Kube::start().await;
    let long = "a".repeat(100);
    let cm = k
        .post(
            CMS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": long}}),
        )
        .await;
    assert_eq!(cm.code(), 201, "{}", String::from_utf8_lossy(&cm.body));
    assert_eq!(k.get(&format!("{CMS}/{long}")).await.code(), 200);
    widget_crd(&k).await;
    let w = k.post(WIDGETS, &widget(&long)).await;
    assert_eq!(
        w.code(),
        201,
        "a custom resource's name is a subdomain: {}",
        String::from_utf8_lossy(&w.body)
    );

    let cause = |r: &common::Resp| {
        let s = r.json();
        assert_eq!(r.code(), 422, "{s}");
        let c = &s["details"]["causes"][0];
        (
            c["field"].as_str().unwrap_or_default().to_owned(),
            c["message"].as_str().unwrap_or_default().to_owned(),
        )
    };
    let ns = k
        .post(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a".repeat(64)}}),
        )
        .await;
    assert_eq!(
        cause(&ns),
        (
            "metadata.name".to_owned(),
            format!(
                "Invalid value: \"{}\": must be no more than 63 characters",
                "a".repeat(64)
            )
        )
    );
    let svc = k
        .post("/api/v1/namespaces/default/services", &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1svc"}, "spec": {"ports": [{"port": 80}]}}))
        .await;
    assert_eq!(
        cause(&svc),
        (
            "metadata.name".to_owned(),
            "Invalid value: \"1svc\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_owned()
        )
    );
    let role = k
        .post("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "system:Reader"}, "rules": []}))
        .await;
    assert_eq!(role.code(), 201, "{}", String::from_utf8_lossy(&role.body));
    let generated = k
        .post(
            CMS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "Web-"}}),
        )
        .await;
    let (field, message) = cause(&generated);
    assert_eq!(field, "metadata.generateName");
    assert!(
        message.starts_with("Invalid value: \"Web-\": a lowercase RFC 1123 subdomain"),
        "{message}"
    );
    let cron_name = "c".repeat(53);
    let cron = k
        .post("/apis/batch/v1/namespaces/default/cronjobs", &json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": cron_name},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}}}))
        .await;
    assert_eq!(
        cause(&cron),
        (
            "metadata.name".to_owned(),
            format!("Invalid value: \"{cron_name}\": must be no more than 52 characters")
        )
    );
}
