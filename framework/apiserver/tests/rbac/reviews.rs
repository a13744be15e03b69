//! Access reviews on the wire: what `kubectl auth can-i` and `whoami`
//! send, answered for the caller or the named subject.

use kubeforge_apiserver::User;
use serde_json::json;

use super::*;

const AUTHZ: &str = "/apis/authorization.k8s.io/v1";

#[tokio::test]
async fn self_reviews_answer_for_the_caller() {
    let k = Kube::start().await;
    let alice = As::creds(
        &k.server,
        &k.server.add_user(&User::new("alice").group("dev")).unwrap(),
    );
    let r = alice
        .post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json!({}),
        )
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["status"]["userInfo"],
        json!({"username": "alice", "groups": ["dev", "system:authenticated"]})
    );
    let ssar = |verb: &str, resource: &str| json!({"spec": {"resourceAttributes": {"verb": verb, "resource": resource, "namespace": "default"}}});
    let r = alice
        .post(
            &format!("{AUTHZ}/selfsubjectaccessreviews"),
            ssar("list", "pods"),
        )
        .await;
    assert_eq!(r.code(), 201);
    assert_eq!(r.json()["status"]["allowed"], false);
    let r = alice
        .post(
            &format!("{AUTHZ}/selfsubjectaccessreviews"),
            json!({"spec": {"nonResourceAttributes": {"verb": "get", "path": "/version"}}}),
        )
        .await;
    assert_eq!(r.json()["status"]["allowed"], true);
    // Neither attribute set: 422.
    let r = alice
        .post(
            &format!("{AUTHZ}/selfsubjectaccessreviews"),
            json!({"spec": {}}),
        )
        .await;
    assert_eq!(r.code(), 422);
    // Rules reviews need a namespace.
    let r = alice
        .post(
            &format!("{AUTHZ}/selfsubjectrulesreviews"),
            json!({"spec": {}}),
        )
        .await;
    assert_eq!(r.code(), 400);
    assert_eq!(r.json()["message"], "no namespace on request");
    let r = alice
        .post(
            &format!("{AUTHZ}/selfsubjectrulesreviews"),
            json!({"spec": {"namespace": "default"}}),
        )
        .await;
    let rules = r.json()["status"]["resourceRules"].to_string();
    assert!(rules.contains("selfsubjectaccessreviews"), "{rules}");
    // A SubjectAccessReview needs the right to create one.
    let sar = json!({"spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}}});
    let r = alice
        .post(&format!("{AUTHZ}/subjectaccessreviews"), sar.clone())
        .await;
    assert_eq!(r.code(), 403);
    let admin = As::token(&k.server, k.token());
    let r = admin
        .post(&format!("{AUTHZ}/subjectaccessreviews"), sar)
        .await;
    assert_eq!(r.code(), 201);
    assert_eq!(r.json()["status"]["allowed"], false);
    let sar = json!({"spec": {"groups": ["system:masters"], "resourceAttributes": {"verb": "get", "resource": "pods"}}});
    let r = admin
        .post(&format!("{AUTHZ}/subjectaccessreviews"), sar)
        .await;
    assert_eq!(r.json()["status"]["allowed"], true);
    // A local review's namespace must be the path's.
    let lsar = json!({"spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "other"}}});
    let r = admin
        .post(
            &format!("{AUTHZ}/namespaces/default/localsubjectaccessreviews"),
            lsar,
        )
        .await;
    assert_eq!(r.code(), 422);
}

/// client-go lists protobuf first in `Accept`; the review comes back as
/// protobuf then, as kube-apiserver sends it, and as JSON to everyone else.
#[tokio::test]
async fn reviews_answer_protobuf_to_clients_that_prefer_it() {
    let k = Kube::start().await;
    let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"nonResourceAttributes": {"path": "/version", "verb": "get"}}});
    let path = format!("{AUTHZ}/selfsubjectaccessreviews");
    let r = k
        .raw(
            "POST",
            &path,
            Some("application/json"),
            body.to_string(),
            Some("application/vnd.kubernetes.protobuf,application/json"),
        )
        .await;
    assert_eq!(r.code(), 201);
    assert_eq!(
        r.headers["content-type"],
        "application/vnd.kubernetes.protobuf"
    );
    assert!(r.body.starts_with(b"k8s\0"), "{:?}", r.body);
    // status = 3 {allowed = 1: true} closes the object, then the
    // envelope's empty contentEncoding = 3 and contentType = 4.
    assert!(
        r.body
            .ends_with(&[0x1a, 0x02, 0x08, 0x01, 0x1a, 0x00, 0x22, 0x00]),
        "{:?}",
        r.body
    );
    let r = k
        .raw(
            "POST",
            &path,
            Some("application/json"),
            body.to_string(),
            Some("application/json,application/vnd.kubernetes.protobuf"),
        )
        .await;
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.json()["status"]["allowed"], true);
}
