//! `/openapi/v3`: the index of group-versions, the per-group-version
//! documents kubectl reads for `apply` validation, client-side apply and
//! `explain`, and kube-openapi `handler3`'s caching rules (`?hash=`
//! redirects, immutable caching, `ETag`), kept current as CRDs come and go.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod common;
mod poll;

use common::{Kube, CRDS};
use serde_json::{json, Value};

fn crd(description: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.ex.com"},
        "spec": {"group": "ex.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "description": description}}}}}}}]}})
}

/// The index's `serverRelativeURL` per path key.
async fn index(k: &Kube) -> Value {
    let r = k.get("/openapi/v3").await;
    assert_eq!(r.code(), 200);
    assert_eq!(r.headers["content-type"], "application/json");
    r.json()["paths"].clone()
}

fn url<'a>(index: &'a Value, key: &str) -> &'a str {
    index[key]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {index}"))
}

/// The PATCH operation kubectl's query-param verifier and patcher look at.
fn patch_op<'a>(doc: &'a Value, path: &str) -> &'a Value {
    &doc["paths"][path]["patch"]
}

fn content_types(op: &Value) -> Vec<String> {
    op["requestBody"]["content"]
        .as_object()
        .map(|c| c.keys().cloned().collect())
        .unwrap_or_default()
}

fn has_field_validation(op: &Value) -> bool {
    op["parameters"]
        .as_array()
        .is_some_and(|ps| ps.iter().any(|p| p["name"] == "fieldValidation"))
}

#[tokio::test]
async fn index_lists_every_served_group_version_with_a_hash() {
    let k = Kube::start().await;
    let idx = index(&k).await;
    for key in [
        "api/v1",
        "apis/apps/v1",
        "apis/batch/v1",
        "apis/apiextensions.k8s.io/v1",
        "apis/coordination.k8s.io/v1",
        "apis/rbac.authorization.k8s.io/v1",
    ] {
        let u = url(&idx, key);
        let (path, hash) = u.split_once("?hash=").expect("hashed URL");
        assert_eq!(path, format!("/openapi/v3/{key}"));
        assert_eq!(hash.len(), 128, "SHA-512 in hex: {hash}");
        assert!(hash
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()));
    }
    assert_eq!(k.get("/openapi/v2").await.code(), 404);
}

#[tokio::test]
async fn builtin_documents_carry_what_kubectl_needs() {
    let k = Kube::start().await;
    let idx = index(&k).await;
    let r = k.get(url(&idx, "apis/apps/v1")).await;
    assert_eq!(r.code(), 200);
    assert_eq!(r.headers["content-type"], "application/json");
    let doc = r.json();
    assert_eq!(doc["openapi"], "3.0.0");
    let deploy = &doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deploy["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
    );
    let op = patch_op(
        &doc,
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
    );
    assert_eq!(
        op["x-kubernetes-group-version-kind"],
        json!({"group": "apps", "kind": "Deployment", "version": "v1"})
    );
    assert!(has_field_validation(op), "{op}");
    assert!(content_types(op).contains(&"application/strategic-merge-patch+json".to_owned()));
    // Only this group-version's kinds are described with a GVK.
    let core = k.get(url(&idx, "api/v1")).await.json();
    assert!(has_field_validation(patch_op(
        &core,
        "/api/v1/namespaces/{name}"
    )));
    assert!(core["components"]["schemas"]
        .get("io.k8s.api.apps.v1.Deployment")
        .is_none());
    // Unknown group-versions are plain 404s; JSON is the only format served.
    assert_eq!(
        k.get("/openapi/v3/apis/nope.example.com/v1").await.code(),
        404
    );
    let pb = k
        .get_accept(
            url(&idx, "apis/apps/v1"),
            "application/com.github.proto-openapi.spec.v3@v1.0+protobuf",
        )
        .await;
    assert_eq!(pb.code(), 406);
}

#[tokio::test]
async fn hashed_urls_are_immutable_and_stale_hashes_redirect() {
    let k = Kube::start().await;
    let idx = index(&k).await;
    let u = url(&idx, "apis/batch/v1").to_owned();
    let hash = u.split_once("?hash=").unwrap().1.to_owned();
    let r = k.get(&u).await;
    assert_eq!(r.code(), 200);
    assert_eq!(r.headers["cache-control"], "public, immutable");
    assert!(r.headers.contains_key("expires"));
    assert_eq!(r.headers["etag"], format!("\"{hash}\""));
    assert_eq!(r.headers["vary"], "Accept");
    // Without a hash: no caching headers, same document.
    let plain = k.get("/openapi/v3/apis/batch/v1").await;
    assert_eq!(plain.body, r.body);
    assert!(!plain.headers.contains_key("cache-control"));
    // A stale hash is redirected to the current one.
    let stale = k.get("/openapi/v3/apis/batch/v1?hash=ABC").await;
    assert_eq!(stale.code(), 301);
    assert_eq!(stale.headers["location"], u);
    // If-None-Match with the ETag: 304.
    let req = http::Request::builder()
        .method("GET")
        .uri(format!("{}{u}", k.base()))
        .header("authorization", format!("Bearer {}", k.token()))
        .header("if-none-match", format!("\"{hash}\""))
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let r = k.send(req).await;
    assert_eq!(r.code(), 304);
    assert!(r.body.is_empty());
}

#[tokio::test]
async fn crd_documents_follow_the_crd() {
    let k = Kube::start().await;
    assert!(index(&k).await.get("apis/ex.com/v1").is_none());
    k.create_crd(&crd("Parts.")).await;
    let idx = index(&k).await;
    let first = url(&idx, "apis/ex.com/v1").to_owned();
    let doc = k.get(&first).await.json();
    let widget = &doc["components"]["schemas"]["com.ex.v1.Widget"];
    assert_eq!(
        widget["x-kubernetes-group-version-kind"],
        json!([{"group": "ex.com", "kind": "Widget", "version": "v1"}])
    );
    assert_eq!(
        widget["properties"]["spec"]["properties"]["size"]["description"],
        "Parts."
    );
    let op = patch_op(
        &doc,
        "/apis/ex.com/v1/namespaces/{namespace}/widgets/{name}",
    );
    assert!(has_field_validation(op));
    // No strategic merge for custom resources: client-side apply falls back
    // to a JSON merge patch.
    assert_eq!(
        content_types(op),
        [
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json"
        ]
    );
    // A status-only CRD write keeps the document; a schema change replaces it.
    let status = k
        .merge(
            &format!("{CRDS}/widgets.ex.com/status"),
            &json!({"status": {"conditions": [{"type": "Example", "status": "True",
                "reason": "Test", "message": "a status-only write",
                "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}),
        )
        .await;
    assert_eq!(
        status.code(),
        200,
        "{}",
        String::from_utf8_lossy(&status.body)
    );
    let unchanged = url(&index(&k).await, "apis/ex.com/v1").to_owned();
    assert_eq!(unchanged, first);
    let mut changed = k.get(&format!("{CRDS}/widgets.ex.com")).await.json();
    changed["spec"] = crd("Number of parts.")["spec"].clone();
    assert_eq!(
        k.put(&format!("{CRDS}/widgets.ex.com"), &changed)
            .await
            .code(),
        200
    );
    let second = url(&index(&k).await, "apis/ex.com/v1").to_owned();
    assert_ne!(second, first);
    let doc = k.get(&second).await.json();
    assert_eq!(
        doc["components"]["schemas"]["com.ex.v1.Widget"]["properties"]["spec"]["properties"]
            ["size"]["description"],
        "Number of parts."
    );
    assert_eq!(k.get(&first).await.code(), 301);
    // Gone with the CRD.
    k.delete(&format!("{CRDS}/widgets.ex.com")).await;
    poll::eventually("the document to go away", async || {
        index(&k).await.get("apis/ex.com/v1").is_none()
    })
    .await;
    assert_eq!(k.get("/openapi/v3/apis/ex.com/v1").await.code(), 404);
}
