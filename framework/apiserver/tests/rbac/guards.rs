//! Impersonation and escalation prevention on the wire, and the deny
//! reason of a binding to a missing role: each with kube-apiserver's
//! exact text.

use kubeforge_apiserver::User;
use serde_json::{json, Value};

use super::*;

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

async fn create(k: &Kube, path: &str, obj: Value) {
    let r = k.post(path, &obj).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name}, "rules": rules,
    })
}

fn role(name: &str, rules: Value) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name}, "rules": rules,
    })
}

fn binding(kind: &str, name: &str, role_kind: &str, role: &str, user: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    })
}

fn message(r: &Resp) -> String {
    r.json()["message"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb_on_each_part() {
    let k = Kube::start().await;
    let creds = k.server.add_user(&User::new("alice")).unwrap();
    let alice = || As::creds(&k.server, &creds);
    let whoami = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});

    let r = alice()
        .header("Impersonate-User", "bob")
        .post(whoami, review.clone())
        .await;
    assert_eq!(r.code(), 403);
    assert_eq!(
        message(&r),
        r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    assert_eq!(r.json()["details"], json!({"name": "bob", "kind": "users"}));

    create(&k, &format!("{RBAC}/clusterroles"), cluster_role("impersonator", json!([
        {"apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"], "verbs": ["impersonate"]},
        {"apiGroups": [""], "resources": ["groups"], "resourceNames": ["ops"], "verbs": ["impersonate"]},
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]},
        {"apiGroups": ["authentication.k8s.io"], "resources": ["userextras/scopes", "uids"], "verbs": ["impersonate"]},
    ]))).await;
    create(
        &k,
        &format!("{RBAC}/clusterrolebindings"),
        binding(
            "ClusterRoleBinding",
            "alice-impersonates",
            "ClusterRole",
            "impersonator",
            "alice",
        ),
    )
    .await;

    let r = alice()
        .header("Impersonate-User", "bob")
        .header("Impersonate-Group", "ops")
        .header("Impersonate-Uid", "u-1")
        .header("Impersonate-Extra-Scopes", "view")
        .post(whoami, review.clone())
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["status"]["userInfo"],
        json!({"username": "bob", "uid": "u-1", "groups": ["ops", "system:authenticated"],
               "extra": {"scopes": ["view"]}})
    );
    // resourceNames narrow: carol and the group dev are not granted.
    let r = alice()
        .header("Impersonate-User", "carol")
        .post(whoami, review.clone())
        .await;
    assert_eq!(r.code(), 403);
    let r = alice()
        .header("Impersonate-User", "bob")
        .header("Impersonate-Group", "dev")
        .post(whoami, review.clone())
        .await;
    assert_eq!(
        message(&r),
        r#"groups "dev" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope"#
    );
    let r = alice()
        .header("Impersonate-User", "bob")
        .header("Impersonate-Extra-Team", "a")
        .post(whoami, review.clone())
        .await;
    assert_eq!(
        message(&r),
        r#"userextras.authentication.k8s.io "a" is forbidden: User "alice" cannot impersonate resource "userextras/team" in API group "authentication.k8s.io" at the cluster scope"#
    );
    // A service account checks `serviceaccounts` in its namespace and
    // gets the service-account groups when none are given.
    let r = alice()
        .header("Impersonate-User", "system:serviceaccount:ns1:robot")
        .post(whoami, review.clone())
        .await;
    assert_eq!(
        r.json()["status"]["userInfo"],
        json!({"username": "system:serviceaccount:ns1:robot",
               "groups": ["system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"]})
    );
    // The request then runs as the impersonated user.
    let r = alice()
        .header("Impersonate-User", "bob")
        .get("/api/v1/namespaces/default/pods")
        .await;
    assert_eq!(
        message(&r),
        r#"pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default""#
    );
    // An empty Impersonate-User impersonates no one.
    let r = alice()
        .header("Impersonate-User", "")
        .post(whoami, review.clone())
        .await;
    assert_eq!(r.json()["status"]["userInfo"]["username"], "alice");
    // A group without a user.
    let r = alice()
        .header("Impersonate-Group", "ops")
        .get("/api/v1/namespaces/default/pods")
        .await;
    assert_eq!(r.code(), 500);
    assert_eq!(
        message(&r),
        r#"Internal Server Error: "/api/v1/namespaces/default/pods": requested [{Group  ops    }] without impersonating a user"#
    );
}

#[tokio::test]
async fn role_writes_need_escalate_or_the_permissions_granted() {
    let k = Kube::start().await;
    let creds = k.server.add_user(&User::new("alice").group("dev")).unwrap();
    let alice = As::creds(&k.server, &creds);
    let roles = format!("{RBAC}/namespaces/default/roles");
    create(&k, &roles, role("role-writer", json!([
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create", "update"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
    ]))).await;
    create(
        &k,
        &format!("{RBAC}/namespaces/default/rolebindings"),
        binding(
            "RoleBinding",
            "alice-writes",
            "Role",
            "role-writer",
            "alice",
        ),
    )
    .await;

    // Rules alice holds: allowed.
    let r = alice
        .post(
            &roles,
            role(
                "cm-get",
                json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
            ),
        )
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    // More than she holds: kube-apiserver's message, missing rules compacted.
    let r = alice
        .post(&roles, role("too-much", json!([
            {"apiGroups": ["", "apps"], "resources": ["configmaps"], "verbs": ["get", "delete"]},
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["s"], "verbs": ["get"]},
        ])))
        .await;
    assert_eq!(r.code(), 403);
    assert_eq!(
        message(&r),
        "roles.rbac.authorization.k8s.io \"too-much\" is forbidden: user \"alice\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}\n\
         {APIGroups:[\"\"], Resources:[\"secrets\"], ResourceNames:[\"s\"], Verbs:[\"get\"]}\n\
         {APIGroups:[\"apps\"], Resources:[\"configmaps\"], Verbs:[\"get\" \"delete\"]}"
    );
    assert_eq!(
        r.json()["details"],
        json!({"name": "too-much", "group": "rbac.authorization.k8s.io", "kind": "roles"})
    );

    // Binding a role whose rules she lacks, then with `bind` on it.
    create(
        &k,
        &format!("{RBAC}/clusterroles"),
        cluster_role(
            "deleter",
            json!([
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]},
            ]),
        ),
    )
    .await;
    let bindings = format!("{RBAC}/namespaces/default/rolebindings");
    let r = alice
        .post(
            &bindings,
            binding("RoleBinding", "b1", "ClusterRole", "deleter", "bob"),
        )
        .await;
    assert_eq!(r.code(), 403);
    assert!(
        message(&r).starts_with(
            "rolebindings.rbac.authorization.k8s.io \"b1\" is forbidden: user \"alice\""
        ),
        "{}",
        message(&r)
    );
    let r = alice
        .post(
            &bindings,
            binding("RoleBinding", "b2", "Role", "cm-get", "bob"),
        )
        .await;
    assert_eq!(r.code(), 201, "holding the role's rules is enough");
    let r = alice
        .post(
            &bindings,
            binding("RoleBinding", "b3", "Role", "nothing", "bob"),
        )
        .await;
    assert_eq!(r.code(), 404);
    assert_eq!(
        message(&r),
        r#"roles.rbac.authorization.k8s.io "nothing" not found"#
    );

    create(&k, &format!("{RBAC}/clusterroles"), cluster_role("binder-escalator", json!([
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["deleter"], "verbs": ["bind"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]},
    ]))).await;
    create(
        &k,
        &format!("{RBAC}/clusterrolebindings"),
        binding(
            "ClusterRoleBinding",
            "alice-binds",
            "ClusterRole",
            "binder-escalator",
            "alice",
        ),
    )
    .await;
    let r = alice
        .post(
            &bindings,
            binding("RoleBinding", "b1", "ClusterRole", "deleter", "bob"),
        )
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    let r = alice
        .post(
            &roles,
            role(
                "too-much",
                json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
            ),
        )
        .await;
    assert_eq!(r.code(), 201, "escalate allows any rules");
}

#[tokio::test]
async fn a_binding_to_a_missing_role_is_the_deny_reason() {
    let k = Kube::start().await;
    let creds = k.server.add_user(&User::new("alice")).unwrap();
    let alice = As::creds(&k.server, &creds);
    create(
        &k,
        &format!("{RBAC}/namespaces/default/rolebindings"),
        binding("RoleBinding", "dangling", "Role", "gone", "alice"),
    )
    .await;
    create(
        &k,
        &format!("{RBAC}/clusterrolebindings"),
        binding(
            "ClusterRoleBinding",
            "dangling",
            "ClusterRole",
            "gone-too",
            "alice",
        ),
    )
    .await;
    let r = alice.get("/api/v1/namespaces/default/secrets").await;
    assert_eq!(r.code(), 403);
    assert_eq!(
        message(&r),
        r#"secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "default": RBAC: [clusterrole.rbac.authorization.k8s.io "gone-too" not found, role.rbac.authorization.k8s.io "gone" not found]"#
    );
    // Cluster scope: only the ClusterRoleBinding is visited.
    let r = alice.get("/api/v1/nodes").await;
    assert_eq!(
        message(&r),
        r#"nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "gone-too" not found"#
    );
    let r = alice
        .post(
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                   "spec": {"namespace": "default"}}),
        )
        .await;
    assert_eq!(
        r.json()["status"]["evaluationError"],
        r#"[clusterrole.rbac.authorization.k8s.io "gone-too" not found, role.rbac.authorization.k8s.io "gone" not found]"#
    );
}
