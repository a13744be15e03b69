//! Who is asking: each authenticator, the implicit groups, and 401s for
//! credentials that are present but invalid. Identity is read back through
//! SelfSubjectReview where served; here through the RBAC decisions'
//! effects on a path only the identity can reach.

use std::time::Duration;

use kubeforge_apiserver::{ApiServer, User};
use serde_json::json;

use super::*;

#[tokio::test]
async fn token_users_and_certificate_users_authenticate_and_bad_ones_are_401() {
    let k = Kube::start().await;
    let alice = k.server.add_user(&User::new("alice").group("dev")).unwrap();
    let resp = As::creds(&k.server, &alice).get("/version").await;
    assert_ne!(resp.code(), 401, "{}", String::from_utf8_lossy(&resp.body));
    let bob = k
        .server
        .add_certificate_user(&User::new("bob").group("ops").group("sre"))
        .unwrap();
    let resp = As::creds(&k.server, &bob).get("/version").await;
    assert_ne!(resp.code(), 401, "{}", String::from_utf8_lossy(&resp.body));
    for token in ["nope", "a.b.c", "", "Bearer"] {
        assert_unauthorized(&As::token(&k.server, token).get("/version").await);
    }
    // A certificate another CA signed: 401, not a failed handshake.
    let other = ApiServer::start().await.unwrap();
    let foreign = other.add_certificate_user(&User::new("mallory")).unwrap();
    assert_unauthorized(&As::creds(&k.server, &foreign).get("/version").await);
}

#[tokio::test]
async fn without_anonymous_a_request_without_credentials_is_401() {
    let k = Kube::start().await;
    assert_unauthorized(&As::nobody(&k.server).get("/api/v1/namespaces").await);
}

#[tokio::test]
async fn token_request_issues_a_jwt_that_authenticates_until_the_account_is_deleted() {
    let k = Kube::start().await;
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}});
    let r = k
        .post("/api/v1/namespaces/default/serviceaccounts", &sa)
        .await;
    assert_eq!(r.code(), 201);
    let admin = As::token(&k.server, k.token());
    let path = "/api/v1/namespaces/default/serviceaccounts/robot/token";
    let resp = admin
        .post(
            path,
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
        )
        .await;
    assert_eq!(resp.code(), 201, "{}", String::from_utf8_lossy(&resp.body));
    let tr = resp.json();
    assert_eq!(tr["kind"], "TokenRequest");
    assert_eq!(tr["spec"]["expirationSeconds"], 3600);
    assert_eq!(
        tr["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert!(tr["status"]["expirationTimestamp"]
        .as_str()
        .unwrap()
        .ends_with('Z'));
    let token = tr["status"]["token"].as_str().unwrap().to_owned();
    // The claims kube-apiserver puts in a bound token.
    use base64::Engine;
    let claims = token.split('.').nth(1).unwrap();
    let claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(claims)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["sub"], "system:serviceaccount:default:robot");
    assert_eq!(claims["kubernetes.io"]["namespace"], "default");
    assert_eq!(claims["kubernetes.io"]["serviceaccount"]["name"], "robot");
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        3600
    );
    let robot = As::token(&k.server, &token);
    assert_ne!(robot.get("/version").await.code(), 401);
    // Verified once, then served from the verified-token cache.
    assert_ne!(robot.get("/version").await.code(), 401);

    // Too short a lifetime is a 422 with kube-apiserver's words.
    let resp = admin
        .post(path, json!({"spec": {"expirationSeconds": 60}}))
        .await;
    assert_eq!(resp.code(), 422);
    assert!(resp.json()["message"]
        .as_str()
        .unwrap()
        .contains("may not specify a duration less than 10 minutes"));
    // A missing service account is a 404.
    let resp = admin
        .post(
            "/api/v1/namespaces/default/serviceaccounts/ghost/token",
            json!({}),
        )
        .await;
    assert_eq!(resp.code(), 404);

    // A write to the account leaves its tokens working; a finalizer holds
    // the deletion below, and an account being deleted refuses them.
    let account = "/api/v1/namespaces/default/serviceaccounts/robot";
    let merge = "application/merge-patch+json";
    let held = json!({"metadata": {"finalizers": ["example.com/hold"]}});
    assert_eq!(k.patch(account, merge, &held).await.code(), 200);
    for _ in 0..2 {
        assert_ne!(robot.get("/version").await.code(), 401);
    }
    let r = k.delete(account).await;
    assert_eq!(r.code(), 200);
    assert_unauthorized(&robot.get("/version").await);
    let release = json!({"metadata": {"finalizers": null}});
    assert_eq!(k.patch(account, merge, &release).await.code(), 200);
    assert_eq!(k.get(account).await.code(), 404, "gone once released");
    // The token is still cached as verified: the account's absence is
    // what refuses it.
    assert_unauthorized(&robot.get("/version").await);
    // Recreated under the same name, it is another account (new uid).
    let r = k
        .post("/api/v1/namespaces/default/serviceaccounts", &sa)
        .await;
    assert_eq!(r.code(), 201);
    assert_unauthorized(&robot.get("/version").await);
}

#[tokio::test]
async fn an_expired_service_account_token_is_401() {
    let k = Kube::start().await;
    let creds = k
        .server
        .add_service_account("default", "shortlived")
        .unwrap();
    assert_ne!(
        As::creds(&k.server, &creds).get("/version").await.code(),
        401
    );
    // Expired more than go-jose's one-minute leeway ago is impossible to
    // wait for here; a zero lifetime is checked against the leeway in the
    // unit tests, and a token of another server's key is refused.
    let other = ApiServer::start().await.unwrap();
    let foreign = other.add_service_account("default", "shortlived").unwrap();
    assert_unauthorized(&As::creds(&k.server, &foreign).get("/version").await);
    let zero = k
        .server
        .service_account_token("default", "shortlived", Duration::ZERO)
        .unwrap();
    assert_ne!(
        As::token(&k.server, &zero).get("/version").await.code(),
        401
    );
}
