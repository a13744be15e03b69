//! The controllers a lone API server needs so deletions finish: the
//! ownerReference garbage collector (background, foreground, orphan),
//! namespace deletion, and CRD deletion with its custom resources.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod common;
mod poll;

use common::Kube;
use poll::eventually;
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn owned(k: &Kube, name: &str, owner: &Value, block: bool) -> Value {
    let r = k
        .post(
            CMS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                "blockOwnerDeletion": block}]}}),
        )
        .await;
    assert_eq!(r.code(), 201);
    r.json()
}

#[tokio::test]
async fn background_deletion_removes_dependents() {
    let k = Kube::start().await;
    let owner = k.configmap("default", "owner", json!({})).await;
    owned(&k, "child", &owner, false).await;
    let grandchild_owner = k.get(&format!("{CMS}/child")).await.json();
    owned(&k, "grandchild", &grandchild_owner, false).await;
    assert_eq!(k.delete(&format!("{CMS}/owner")).await.code(), 200);
    eventually("dependents deleted", async || {
        k.get(&format!("{CMS}/child")).await.code() == 404
            && k.get(&format!("{CMS}/grandchild")).await.code() == 404
    })
    .await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let k = Kube::start().await;
    let owner = k.configmap("default", "owner", json!({})).await;
    let mut child = owned(&k, "child", &owner, true).await;
    // A finalizer on the dependent keeps the owner waiting.
    child["metadata"]["finalizers"] = json!(["ex.com/hold"]);
    assert_eq!(k.put(&format!("{CMS}/child"), &child).await.code(), 200);
    let r = k
        .delete_with(
            &format!("{CMS}/owner"),
            &json!({"propagationPolicy": "Foreground"}),
        )
        .await
        .json();
    assert_eq!(r["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    assert!(r["metadata"]["deletionTimestamp"].is_string());
    eventually("dependent marked", async || {
        k.get(&format!("{CMS}/child")).await.json()["metadata"]["deletionTimestamp"].is_string()
    })
    .await;
    assert_eq!(
        k.get(&format!("{CMS}/owner")).await.code(),
        200,
        "owner waits for the blocking dependent"
    );
    k.patch(
        &format!("{CMS}/child"),
        "application/json-patch+json",
        &json!([{"op": "remove", "path": "/metadata/finalizers"}]),
    )
    .await;
    eventually("owner gone", async || {
        k.get(&format!("{CMS}/owner")).await.code() == 404
    })
    .await;
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_and_drops_the_reference() {
    let k = Kube::start().await;
    let owner = k.configmap("default", "owner", json!({})).await;
    owned(&k, "child", &owner, false).await;
    k.delete_with(
        &format!("{CMS}/owner"),
        &json!({"propagationPolicy": "Orphan"}),
    )
    .await;
    eventually("owner gone", async || {
        k.get(&format!("{CMS}/owner")).await.code() == 404
    })
    .await;
    // The dependent must still be there: a 404 Status has empty metadata
    // too, so the reference check alone would pass if it had been deleted.
    let child = k.get(&format!("{CMS}/child")).await;
    assert_eq!(child.code(), 200, "the dependent is kept");
    let child = child.json();
    assert!(
        child["metadata"].get("ownerReferences").is_none(),
        "{child}"
    );
}

#[tokio::test]
async fn namespace_deletion_removes_contents_then_the_namespace() {
    let k = Kube::start().await;
    k.post(
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
    )
    .await;
    k.configmap("team", "a", json!({})).await;
    let mut held = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["ex.com/x"]}});
    assert_eq!(
        k.post("/api/v1/namespaces/team/configmaps", &held)
            .await
            .code(),
        201
    );
    let r = k.delete("/api/v1/namespaces/team").await.json();
    assert_eq!(r["kind"], "Namespace");
    assert_eq!(r["status"]["phase"], "Terminating");
    eventually("contents deleted", async || {
        k.get("/api/v1/namespaces/team/configmaps/a").await.code() == 404
    })
    .await;
    let refused = k
        .post(
            "/api/v1/namespaces/team/configmaps",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new"}}),
        )
        .await;
    assert_eq!(refused.code(), 403);
    assert_eq!(
        k.get("/api/v1/namespaces/team").await.code(),
        200,
        "a finalizer in the namespace holds it"
    );
    held = k
        .get("/api/v1/namespaces/team/configmaps/held")
        .await
        .json();
    held["metadata"]["finalizers"] = json!([]);
    assert_eq!(
        k.put("/api/v1/namespaces/team/configmaps/held", &held)
            .await
            .code(),
        200
    );
    eventually("namespace gone", async || {
        k.get("/api/v1/namespaces/team").await.code() == 404
    })
    .await;
}

#[tokio::test]
async fn crds_register_at_once_and_their_deletion_deletes_custom_resources() {
    let k = Kube::start().await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.ex.com"},
        "spec": {"group": "ex.com", "scope": "Cluster",
            "names": {"plural": "gadgets", "kind": "Gadget", "categories": ["all"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "additionalPrinterColumns": [{"name": "Color", "type": "string", "jsonPath": ".spec.color"}],
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    k.create_crd(&crd).await;
    let stored = k
        .get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.ex.com")
        .await
        .json();
    let conds = stored["status"]["conditions"].as_array().unwrap();
    assert!(conds
        .iter()
        .any(|c| c["type"] == "Established" && c["status"] == "True"));
    assert!(conds
        .iter()
        .any(|c| c["type"] == "NamesAccepted" && c["status"] == "True"));
    assert_eq!(stored["status"]["acceptedNames"]["singular"], "gadget");
    assert!(stored["metadata"]["finalizers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == "customresourcecleanup.apiextensions.k8s.io"));
    let disc = k.get("/apis/ex.com/v1").await.json();
    assert_eq!(disc["resources"][0]["name"], "gadgets");
    assert_eq!(disc["resources"][0]["namespaced"], false);
    let g = k.post("/apis/ex.com/v1/gadgets", &json!({"apiVersion": "ex.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"color": "red"}})).await;
    assert_eq!(g.code(), 201);
    let t = k
        .get_accept(
            "/apis/ex.com/v1/gadgets",
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await
        .json();
    assert_eq!(t["columnDefinitions"][1]["name"], "Color");
    assert_eq!(t["rows"][0]["cells"], json!(["g", "red"]));
    // A second CRD with a clashing kind in the group is not accepted.
    let mut clash = crd.clone();
    clash["metadata"]["name"] = json!("gizmos.ex.com");
    clash["spec"]["names"] = json!({"plural": "gizmos", "singular": "gizmo", "kind": "Gadget"});
    k.post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &clash,
    )
    .await;
    let c = k
        .get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.ex.com")
        .await
        .json();
    let names = c["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "NamesAccepted")
        .unwrap()
        .clone();
    assert_eq!(
        (names["status"].as_str(), names["reason"].as_str()),
        (Some("False"), Some("KindConflict"))
    );
    assert_eq!(k.get("/apis/ex.com/v1/gizmos").await.code(), 404);
    // Invalid CRDs are rejected with causes.
    let mut bad = crd.clone();
    bad["metadata"]["name"] = json!("wrong.ex.com");
    let r = k
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &bad,
        )
        .await;
    assert_eq!(r.code(), 422);
    assert_eq!(r.json()["details"]["causes"][0]["field"], "metadata.name");
    // Deleting the CRD deletes its objects, then stops serving.
    k.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.ex.com")
        .await;
    eventually("CRD gone", async || {
        k.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.ex.com")
            .await
            .code()
            == 404
    })
    .await;
    assert_eq!(k.get("/apis/ex.com/v1/gadgets").await.code(), 404);
}

/// A dependent written after its owner is gone (a controller that read the
/// owner from its cache before the deletion, then created or re-created the
/// dependent) is collected too, as kube-controller-manager's collector
/// verifies an owner it has not seen and, finding it absent, deletes its
/// dependents. Found as a flaky kube-rs controller test: the collector
/// removed the ConfigMap, the reconcile in flight applied it again, and it
/// stayed for good.
#[tokio::test]
async fn a_dependent_written_after_its_owner_is_gone_is_collected() {
    let k = Kube::start().await;
    let owner = k.configmap("default", "owner", json!({})).await;
    assert_eq!(k.delete(&format!("{CMS}/owner")).await.code(), 200);
    assert_eq!(k.get(&format!("{CMS}/owner")).await.code(), 404);

    // Created naming the gone owner.
    owned(&k, "late", &owner, false).await;
    eventually("the late dependent collected", async || {
        k.get(&format!("{CMS}/late")).await.code() == 404
    })
    .await;

    // Given a reference to it by an update.
    k.configmap("default", "adopted", json!({})).await;
    let r = k
        .patch(
            &format!("{CMS}/adopted"),
            "application/merge-patch+json",
            &json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                "name": "owner", "uid": owner["metadata"]["uid"]}]}}),
        )
        .await;
    assert_eq!(r.code(), 200);
    eventually("the adopted dependent collected", async || {
        k.get(&format!("{CMS}/adopted")).await.code() == 404
    })
    .await;

    // With another owner alive, only the dangling reference goes.
    let alive = k.configmap("default", "alive", json!({})).await;
    let reference = |o: &Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],
               "uid": o["metadata"]["uid"]})
    };
    let r = k
        .post(
            CMS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared",
                "ownerReferences": [reference(&owner), reference(&alive)]}}),
        )
        .await;
    assert_eq!(r.code(), 201);
    eventually("the dangling reference dropped", async || {
        let shared = k.get(&format!("{CMS}/shared")).await;
        shared.code() == 200
            && shared.json()["metadata"]["ownerReferences"] == json!([reference(&alive)])
    })
    .await;
}

/// An owner reference resolves in the dependent's namespace, by group,
/// kind and name, as kube-controller-manager's collector looks owners up:
/// the uid of an object in another namespace, or of another kind, is no
/// owner, and the dependent is collected. A cluster-scoped dependent naming
/// a namespaced kind cannot be judged and is never collected. A reference
/// to an object in another namespace is reported on the dependent as kube
/// reports it (`OwnerRefInvalidNamespace`). A reference that resolves keeps
/// its dependent.
#[tokio::test]
async fn a_reference_to_an_owner_elsewhere_is_dangling() {
    let k = Kube::start().await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}});
    assert_eq!(k.post("/api/v1/namespaces", &ns).await.code(), 201);
    let owner = k.configmap("default", "owner", json!({})).await;
    let uid = owner["metadata"]["uid"].as_str().unwrap().to_owned();
    let reference =
        |kind: &str| json!([{"apiVersion": "v1", "kind": kind, "name": "owner", "uid": uid}]);
    let k = &k;
    let create = |path: String, body: Value| async move {
        let r = k.post(&path, &body).await;
        assert_eq!(r.code(), 201, "{}", r.json());
    };
    let cm = |name: &str, refs: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "ownerReferences": refs}})
    };
    const ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    create(CMS.to_owned(), cm("kept", reference("ConfigMap"))).await;
    create(
        "/api/v1/namespaces/other/configmaps".to_owned(),
        cm("elsewhere", reference("ConfigMap")),
    )
    .await;
    create(CMS.to_owned(), cm("other-kind", reference("Secret"))).await;
    create(
        ROLES.to_owned(),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "cluster-scoped", "ownerReferences": reference("ConfigMap")}}),
    )
    .await;
    eventually("the dependents of no owner collected", async || {
        k.get("/api/v1/namespaces/other/configmaps/elsewhere")
            .await
            .code()
            == 404
            && k.get(&format!("{CMS}/other-kind")).await.code() == 404
    })
    .await;
    assert_eq!(k.get(&format!("{CMS}/kept")).await.code(), 200);
    assert_eq!(k.get(&format!("{CMS}/owner")).await.code(), 200);

    // Each misplaced reference reported once, on its dependent.
    let reported = async |ns: &str| -> Vec<Value> {
        let events = k
            .get(&format!(
                "/api/v1/namespaces/{ns}/events?fieldSelector=reason%3DOwnerRefInvalidNamespace"
            ))
            .await
            .json();
        events["items"].as_array().cloned().unwrap_or_default()
    };
    let expected = |dependent_ns: &str| {
        format!(
            "ownerRef [v1/ConfigMap, namespace: {dependent_ns}, name: owner, uid: {uid}] \
             does not exist in namespace \"{dependent_ns}\""
        )
    };
    eventually("both misplaced references reported", async || {
        reported("other").await.len() == 1 && reported("default").await.len() == 1
    })
    .await;
    let elsewhere = &reported("other").await[0];
    assert_eq!(elsewhere["type"], "Warning");
    assert_eq!(elsewhere["message"], expected("other"));
    assert_eq!(
        elsewhere["source"]["component"],
        "garbage-collector-controller"
    );
    assert_eq!(elsewhere["involvedObject"]["kind"], "ConfigMap");
    assert_eq!(elsewhere["involvedObject"]["name"], "elsewhere");
    let cluster_scoped = &reported("default").await[0];
    assert_eq!(cluster_scoped["message"], expected(""));
    assert_eq!(cluster_scoped["involvedObject"]["kind"], "ClusterRole");
    assert_eq!(
        cluster_scoped["involvedObject"]["apiVersion"],
        "rbac.authorization.k8s.io/v1"
    );

    // The owner's removal collects its dependent but not the cluster-scoped
    // object that named it: that reference cannot be judged.
    assert_eq!(k.delete(&format!("{CMS}/owner")).await.code(), 200);
    eventually("the owned ConfigMap collected", async || {
        k.get(&format!("{CMS}/kept")).await.code() == 404
    })
    .await;
    assert_eq!(k.get(&format!("{ROLES}/cluster-scoped")).await.code(), 200);
    assert_eq!(reported("default").await.len(), 1, "reported again");
}
