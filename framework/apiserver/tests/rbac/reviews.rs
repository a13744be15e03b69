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
