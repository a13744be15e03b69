//! RBAC decisions on the wire: Role and RoleBinding, ClusterRole through a
//! RoleBinding, subresources, resourceNames with single-object watches,
//! non-resource URLs, the bootstrap roles and aggregation, the exact 403s.

use kubeforge_apiserver::User;
use serde_json::json;

use super::*;

async fn apply(k: &Kube, path: &str, obj: serde_json::Value) {
    let r = k.post(path, &obj).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
}

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

#[tokio::test]
async fn a_role_binding_grants_its_rules_and_nothing_else() {
    let k = Kube::start().await;
    let alice = As::creds(&k.server, &k.server.add_user(&User::new("alice")).unwrap());
    // Nothing bound yet: the exact 403 kube-apiserver answers.
    let r = alice.get("/api/v1/namespaces/default/configmaps").await;
    assert_eq!(r.code(), 403);
    let s = r.json();
    assert_eq!(
        s["message"],
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    assert_eq!(s["reason"], "Forbidden");
    assert_eq!(s["details"], json!({"kind": "configmaps"}));
    assert_eq!(s["code"], 403);

    apply(&k, &format!("{RBAC}/namespaces/default/roles"), json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "cm-reader"},
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["app"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["get"]},
        ],
    })).await;
    apply(&k, &format!("{RBAC}/namespaces/default/rolebindings"), json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "alice-reads"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
    })).await;
    assert_eq!(
        alice
            .get("/api/v1/namespaces/default/configmaps")
            .await
            .code(),
        200
    );
    // Only in the binding's namespace.
    let r = alice.get("/api/v1/namespaces/kube-system/configmaps").await;
    assert_eq!(r.code(), 403);
    // Not other verbs.
    let r = alice
        .post(
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": "x"}}),
        )
        .await;
    assert_eq!(r.code(), 403);
    assert_eq!(
        r.json()["message"],
        r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "default""#
    );
    // resourceNames: the named get is allowed (404: it does not exist),
    // a plain list is not, a list pinned to the name is.
    assert_eq!(
        alice
            .get("/api/v1/namespaces/default/secrets/app")
            .await
            .code(),
        404
    );
    let r = alice.get("/api/v1/namespaces/default/secrets/other").await;
    assert_eq!(r.code(), 403);
    assert_eq!(
        r.json()["details"],
        json!({"name": "other", "kind": "secrets"})
    );
    assert_eq!(
        r.json()["message"],
        r#"secrets "other" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "default""#
    );
    assert_eq!(
        alice.get("/api/v1/namespaces/default/secrets").await.code(),
        403
    );
    assert_eq!(
        alice
            .get("/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Dapp")
            .await
            .code(),
        200
    );
    // `*/scale` covers any resource's scale subresource, not the resource.
    assert_eq!(
        alice
            .get("/apis/apps/v1/namespaces/default/deployments/web/scale")
            .await
            .code(),
        404
    );
    let r = alice
        .get("/apis/apps/v1/namespaces/default/deployments/web")
        .await;
    assert_eq!(r.code(), 403);

    // Deleting the binding takes the grant away at once.
    let r = k
        .delete(&format!(
            "{RBAC}/namespaces/default/rolebindings/alice-reads"
        ))
        .await;
    assert_eq!(r.code(), 200);
    assert_eq!(
        alice
            .get("/api/v1/namespaces/default/configmaps")
            .await
            .code(),
        403
    );
}

#[tokio::test]
async fn groups_service_accounts_and_cluster_roles_through_role_bindings() {
    let k = Kube::start().await;
    let bob = As::creds(
        &k.server,
        &k.server
            .add_certificate_user(&User::new("bob").group("team-a").group("team-b"))
            .unwrap(),
    );
    let robot = As::creds(
        &k.server,
        &k.server.add_service_account("default", "robot").unwrap(),
    );
    // `view` is filled by aggregation from the bootstrap roles.
    apply(&k, &format!("{RBAC}/namespaces/default/rolebindings"), json!({
        "metadata": {"name": "team-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "team-b"},
            {"kind": "ServiceAccount", "name": "robot"},
        ],
    })).await;
    for who in [&bob, &robot] {
        assert_eq!(who.get("/api/v1/namespaces/default/pods").await.code(), 200);
        assert_eq!(
            who.get("/apis/apps/v1/namespaces/default/deployments")
                .await
                .code(),
            200
        );
        // A ClusterRole through a RoleBinding: only in its namespace.
        assert_eq!(who.get("/api/v1/pods").await.code(), 403);
        // view does not read secrets.
        assert_eq!(
            who.get("/api/v1/namespaces/default/secrets").await.code(),
            403
        );
        // Discovery and version through the bootstrap bindings.
        assert_eq!(who.get("/apis").await.code(), 200);
        assert_eq!(who.get("/version").await.code(), 200);
        let r = who.get("/metrics").await;
        assert_eq!(r.code(), 403);
    }
    let r = robot.get("/metrics").await;
    assert_eq!(
        r.json()["message"],
        r#"forbidden: User "system:serviceaccount:default:robot" cannot get path "/metrics""#
    );
    // A new ClusterRole labelled for aggregation into view extends it.
    apply(&k, &format!("{RBAC}/clusterroles"), json!({
        "metadata": {"name": "widgets-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}],
    })).await;
    let mut granted = false;
    for _ in 0..100 {
        if bob.get("/api/v1/namespaces/default/secrets").await.code() == 200 {
            granted = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(granted, "aggregation into view did not happen");
}

#[tokio::test]
async fn anonymous_requests_get_public_info_only() {
    let k = Kube::with(kubeforge_apiserver::ApiServer::builder().anonymous(true)).await;
    let nobody = As::nobody(&k.server);
    assert_eq!(nobody.get("/version").await.code(), 200);
    assert_eq!(nobody.get("/healthz").await.code(), 200);
    let r = nobody.get("/apis").await;
    assert_eq!(r.code(), 403);
    assert_eq!(
        r.json()["message"],
        r#"forbidden: User "system:anonymous" cannot get path "/apis""#
    );
    let r = nobody.get("/api/v1/namespaces/default/pods").await;
    assert_eq!(
        r.json()["message"],
        r#"pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace "default""#
    );
    // A bad credential is still a 401, never anonymous.
    assert_unauthorized(&As::token(&k.server, "bad").get("/version").await);
}
