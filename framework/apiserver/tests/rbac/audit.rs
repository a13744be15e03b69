//! The permission audit on the wire: a service account's requests over
//! HTTPS are counted per distinct attribute set, its denials become the
//! rules it lacks, its unused grants the over-privilege, and impersonated
//! requests count for the impersonated identity; access reviews about an
//! identity are not its requests.

use serde_json::json;

use super::*;

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";
const ROBOT: &str = "system:serviceaccount:default:robot";

async fn apply(k: &Kube, path: &str, obj: serde_json::Value) {
    let r = k.post(path, &obj).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
}

/// Binds the Role `name` in `default` to the `robot` service account, by a
/// RoleBinding of the same name.
async fn bind_to_robot(k: &Kube, name: &str) {
    apply(
        k,
        &format!("{RBAC}/namespaces/default/rolebindings"),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "robot"}],
        }),
    )
    .await;
}

#[tokio::test]
async fn the_audit_names_missing_rules_and_unused_grants() {
    let k = Kube::start().await;
    let robot = As::creds(
        &k.server,
        &k.server.add_service_account("default", "robot").unwrap(),
    );
    apply(
        &k,
        &format!("{RBAC}/namespaces/default/roles"),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "robot"},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
                {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["delete"]},
            ],
        }),
    )
    .await;
    bind_to_robot(&k, "robot").await;

    for _ in 0..3 {
        let r = robot.get("/api/v1/namespaces/default/configmaps").await;
        assert_eq!(r.code(), 200);
    }
    // Allowed, then not found: still an allowed get.
    let r = robot.get("/api/v1/namespaces/default/configmaps/app").await;
    assert_eq!(r.code(), 404);
    let r = robot
        .get("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1")
        .await;
    assert_eq!(r.code(), 403);
    let r = robot.get("/api/v1/namespaces/default/secrets/x").await;
    assert_eq!(r.code(), 403);
    // Discovery: allowed by the default policy, not by the robot's grants.
    assert_eq!(robot.get("/apis").await.code(), 200);

    let audit = k.server.permission_audit(ROBOT);
    let lists: Vec<(&str, bool, u64, u64)> = audit
        .requests
        .iter()
        .filter(|r| r.resource == "configmaps")
        .map(|r| (r.verb.as_str(), r.named, r.allowed, r.denied))
        .collect();
    assert_eq!(
        lists,
        [
            ("get", true, 1, 0),
            ("list", false, 3, 0),
            ("watch", false, 0, 1)
        ]
    );
    let text = audit.to_string();
    let denied: Vec<String> = audit.denied.iter().map(|r| r.to_string()).collect();
    assert_eq!(
        denied,
        [
            "# in namespace default\n- apiGroups: [\"\"]\n  resources: [\"configmaps\"]\n  verbs: [\"watch\"]\n",
            "# in namespace default\n- apiGroups: [\"\"]\n  resources: [\"secrets\"]\n  verbs: [\"get\"]\n",
        ],
        "{text}"
    );
    let unused: Vec<String> = audit.unused.iter().map(|r| r.to_string()).collect();
    assert_eq!(
        unused,
        ["# in namespace default, granted by RoleBinding \"default/robot\" of Role \"robot\"\n- apiGroups: [\"apps\"]\n  resources: [\"deployments\"]\n  verbs: [\"delete\"]\n"],
        "{text}"
    );
    assert!(text.contains("denied (rules missing):"), "{text}");
    // The configmaps rule's get and list were both used.
    assert!(audit.unused_verbs.is_empty(), "{text}");
    assert!(
        text.contains("verbs granted and never used: none"),
        "{text}"
    );

    // Granting what was missing and using it: least privilege.
    k.server.clear_permission_audit();
    let r = robot.get("/api/v1/namespaces/default/configmaps").await;
    assert_eq!(r.code(), 200);
    let audit = k.server.permission_audit(ROBOT);
    assert!(audit.denied.is_empty(), "{audit}");
    assert_eq!(audit.unused.len(), 1, "{audit}");
    // Only the list was asked for: the rule is used, its get is not.
    let verbs: Vec<String> = audit.unused_verbs.iter().map(|r| r.to_string()).collect();
    assert_eq!(
        verbs,
        ["# in namespace default, granted by RoleBinding \"default/robot\" of Role \"robot\":\n#   apiGroups: [\"\"], resources: [\"configmaps\"], verbs: [\"get\", \"list\"]\n# never used of it:\n- apiGroups: [\"\"]\n  resources: [\"configmaps\"]\n  verbs: [\"get\"]\n"],
        "{audit}"
    );
    assert!(!audit.is_least_privilege());
}

#[tokio::test]
async fn impersonated_requests_count_for_the_identity_impersonated_and_reviews_for_nobody() {
    let k = Kube::start().await;
    // The admin impersonating the robot: the robot's request, denied.
    let admin_as_robot = As::token(&k.server, k.server.token()).header("Impersonate-User", ROBOT);
    let r = admin_as_robot.get("/api/v1/namespaces/default/pods").await;
    assert_eq!(r.code(), 403);
    // An access review asks about alice without being alice's request.
    let r = k
        .post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            &json!({
                "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}},
            }),
        )
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    let names = k.server.audited_identities();
    assert!(names.iter().any(|n| n == ROBOT), "{names:?}");
    assert!(names.iter().any(|n| n == "admin"), "{names:?}");
    assert!(!names.iter().any(|n| n == "alice"), "{names:?}");
    let audit = k.server.permission_audit(ROBOT);
    assert_eq!(audit.denied.len(), 1, "{audit}");
    assert_eq!(audit.denied[0].rule.resources, ["pods"]);
    assert_eq!(audit.denied[0].rule.verbs, ["list"]);
    // The admin bypasses RBAC: nothing is over-privilege.
    let admin = k.server.permission_audit("admin");
    assert!(admin.is_least_privilege(), "{admin}");
}

#[tokio::test]
async fn block_owner_deletion_needs_update_on_the_owners_finalizers_when_enforced() {
    let k = Kube::with(ApiServer::builder().owner_references_permission_enforcement(true)).await;
    let robot = As::creds(
        &k.server,
        &k.server.add_service_account("default", "robot").unwrap(),
    );
    let owner = k
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}),
        )
        .await
        .json();
    apply(
        &k,
        &format!("{RBAC}/namespaces/default/roles"),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "robot"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}],
        }),
    )
    .await;
    bind_to_robot(&k, "robot").await;
    let dependent = |name: &str, block: bool| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": name,
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": block}],
        }})
    };
    const CMS: &str = "/api/v1/namespaces/default/configmaps";
    // A reference that does not block needs nothing more on a create.
    assert_eq!(robot.post(CMS, dependent("free", false)).await.code(), 201);
    let r = robot.post(CMS, dependent("blocking", true)).await;
    assert_eq!(r.code(), 403);
    assert_eq!(
        r.json()["message"],
        r#"configmaps "blocking" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>"#
    );
    let audit = k.server.permission_audit(ROBOT);
    assert_eq!(audit.denied.len(), 1, "{audit}");
    assert_eq!(audit.denied[0].rule.resources, ["configmaps/finalizers"]);
    assert_eq!(audit.denied[0].rule.verbs, ["update"]);

    apply(&k, &format!("{RBAC}/namespaces/default/roles"), json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "robot-finalizers"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps/finalizers"], "verbs": ["update"]}],
    }))
    .await;
    bind_to_robot(&k, "robot-finalizers").await;
    assert_eq!(
        robot.post(CMS, dependent("blocking", true)).await.code(),
        201
    );
    // Both rules allowed something, with every verb: nothing is unused.
    let audit = k.server.permission_audit(ROBOT);
    assert!(audit.unused.is_empty(), "{audit}");
    assert!(audit.unused_verbs.is_empty(), "{audit}");
}

#[tokio::test]
async fn an_apply_that_creates_is_authorized_for_create_too() {
    let k = Kube::start().await;
    let robot = As::creds(
        &k.server,
        &k.server.add_service_account("default", "robot").unwrap(),
    );
    let role = |verbs: &[&str]| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "robot"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}],
        })
    };
    apply(
        &k,
        &format!("{RBAC}/namespaces/default/roles"),
        role(&["patch"]),
    )
    .await;
    bind_to_robot(&k, "robot").await;
    const CM: &str = "/api/v1/namespaces/default/configmaps/applied";
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}});
    // May patch, may not create: the apply of a new object is forbidden
    // as kube-apiserver's patch handler forbids it (`withAuthorization`).
    let r = robot.apply(CM, body.clone()).await;
    assert_eq!(r.code(), 403, "{}", String::from_utf8_lossy(&r.body));
    let status = r.json();
    assert_eq!(status["message"], r#"configmaps "applied" is forbidden: "#);
    assert_eq!(
        status["details"],
        json!({"name": "applied", "kind": "configmaps"})
    );
    let audit = k.server.permission_audit(ROBOT);
    assert_eq!(audit.denied.len(), 1, "{audit}");
    assert_eq!(audit.denied[0].rule.verbs, ["create"], "{audit}");
    assert_eq!(k.get(CM).await.code(), 404);

    let mut creates = role(&["create"]);
    creates["metadata"]["name"] = json!("robot-create");
    apply(&k, &format!("{RBAC}/namespaces/default/roles"), creates).await;
    bind_to_robot(&k, "robot-create").await;
    k.server.clear_permission_audit();
    assert_eq!(robot.apply(CM, body.clone()).await.code(), 201);
    // Applied again: a patch of what exists, no create asked.
    assert_eq!(robot.apply(CM, body).await.code(), 200);
    let audit = k.server.permission_audit(ROBOT);
    let verbs: Vec<(&str, u64)> = audit
        .requests
        .iter()
        .map(|r| (r.verb.as_str(), r.allowed))
        .collect();
    assert_eq!(verbs, [("create", 1), ("patch", 2)], "{audit}");
    assert!(audit.is_least_privilege(), "{audit}");
}

#[tokio::test]
async fn a_put_that_creates_is_authorized_for_create_too() {
    let k = Kube::start().await;
    let robot = As::creds(
        &k.server,
        &k.server.add_service_account("default", "robot").unwrap(),
    );
    let grant = |name: &str, verbs: &[&str]| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name},
            "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": verbs}],
        })
    };
    let roles = format!("{RBAC}/namespaces/default/roles");
    apply(&k, &roles, grant("robot", &["update"])).await;
    bind_to_robot(&k, "robot").await;
    const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases/held";
    let body = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "held"}, "spec": {"holderIdentity": "robot"}});
    // May update, may not create: the PUT of a missing lease is forbidden
    // as kube-apiserver's update handler forbids it (`withAuthorization`).
    let r = robot.send("PUT", LEASE, Some(body.clone())).await;
    assert_eq!(r.code(), 403, "{}", String::from_utf8_lossy(&r.body));
    let status = r.json();
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        r#"leases.coordination.k8s.io "held" is forbidden: "#
    );
    assert_eq!(
        status["details"],
        json!({"name": "held", "group": "coordination.k8s.io", "kind": "leases"})
    );
    let audit = k.server.permission_audit(ROBOT);
    let asked: Vec<(&str, u64, u64)> = audit
        .requests
        .iter()
        .map(|r| (r.verb.as_str(), r.allowed, r.denied))
        .collect();
    assert_eq!(asked, [("create", 0, 1), ("update", 1, 0)], "{audit}");
    assert_eq!(audit.denied.len(), 1, "{audit}");
    assert_eq!(audit.denied[0].rule.verbs, ["create"], "{audit}");
    assert_eq!(k.get(LEASE).await.code(), 404);

    // With create as well: 201, and the audit counts the create.
    apply(&k, &roles, grant("robot-create", &["create"])).await;
    bind_to_robot(&k, "robot-create").await;
    k.server.clear_permission_audit();
    let r = robot.send("PUT", LEASE, Some(body.clone())).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    // Put again: an update of what exists, no create asked.
    assert_eq!(robot.send("PUT", LEASE, Some(body)).await.code(), 200);
    let audit = k.server.permission_audit(ROBOT);
    let verbs: Vec<(&str, u64)> = audit
        .requests
        .iter()
        .map(|r| (r.verb.as_str(), r.allowed))
        .collect();
    assert_eq!(verbs, [("create", 1), ("update", 2)], "{audit}");
    assert!(audit.is_least_privilege(), "{audit}");
}

#[tokio::test]
async fn a_role_created_by_a_put_may_not_escalate() {
    let k = Kube::start().await;
    let robot = As::creds(
        &k.server,
        &k.server.add_service_account("default", "robot").unwrap(),
    );
    let roles = format!("{RBAC}/namespaces/default/roles");
    apply(
        &k,
        &roles,
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "robot"},
            "rules": [
                {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["create", "update"]},
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
            ],
        }),
    )
    .await;
    bind_to_robot(&k, "robot").await;
    let role = |name: &str, verbs: &[&str]| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}],
        })
    };
    // More than the robot holds: refused with the escalation error, as a
    // POST of the same Role is, and nothing is stored.
    let r = robot
        .send(
            "PUT",
            &format!("{roles}/wider"),
            Some(role("wider", &["get", "delete"])),
        )
        .await;
    assert_eq!(r.code(), 403, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        "roles.rbac.authorization.k8s.io \"wider\" is forbidden: user \"system:serviceaccount:default:robot\" \
         (groups=[\"system:serviceaccounts\" \"system:serviceaccounts:default\" \"system:authenticated\"]) \
         is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}"
    );
    let posted = robot.post(&roles, role("wider", &["get", "delete"])).await;
    assert_eq!(posted.code(), 403);
    assert_eq!(posted.json()["message"], r.json()["message"]);
    assert_eq!(k.get(&format!("{roles}/wider")).await.code(), 404);
    // Within what it holds: created.
    let r = robot
        .send(
            "PUT",
            &format!("{roles}/narrow"),
            Some(role("narrow", &["get"])),
        )
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
}

/// A PUT that would create a Role it may not create and that grants more
/// than its user holds fails on the escalation, as kube's RBAC storage
/// checks escalation before the create authorization wrapped around the
/// create's validation; a Role within what the user holds fails on the
/// create authorization.
#[tokio::test]
async fn a_put_that_creates_is_checked_for_escalation_before_create() {
    let k = Kube::start().await;
    let robot = As::creds(
        &k.server,
        &k.server.add_service_account("default", "robot").unwrap(),
    );
    let roles = format!("{RBAC}/namespaces/default/roles");
    apply(
        &k,
        &roles,
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "robot"},
            "rules": [
                {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["update"]},
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
            ],
        }),
    )
    .await;
    bind_to_robot(&k, "robot").await;
    let role = |name: &str, verbs: &[&str]| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}],
        })
    };
    let put = async |name: &str, verbs: &[&str]| {
        let r = robot
            .send("PUT", &format!("{roles}/{name}"), Some(role(name, verbs)))
            .await;
        assert_eq!(r.code(), 403, "{}", String::from_utf8_lossy(&r.body));
        r.json()["message"].as_str().unwrap_or_default().to_owned()
    };
    let wider = put("wider", &["get", "delete"]).await;
    assert!(
        wider.contains("is attempting to grant RBAC permissions not currently held"),
        "{wider}"
    );
    let narrow = put("narrow", &["get"]).await;
    // `withAuthorization`'s NewForbidden with RBAC's reason, which is
    // empty for a request no rule allows.
    assert_eq!(
        narrow,
        "roles.rbac.authorization.k8s.io \"narrow\" is forbidden: "
    );
    for name in ["wider", "narrow"] {
        assert_eq!(k.get(&format!("{roles}/{name}")).await.code(), 404);
    }
}

#[tokio::test]
async fn with_recording_off_requests_are_authorized_but_not_audited() {
    let k = Kube::with(ApiServer::builder().permission_audit(false)).await;
    assert!(!k.server.permission_audit_recording());
    let robot = As::creds(
        &k.server,
        &k.server.add_service_account("default", "robot").unwrap(),
    );
    let r = robot.get("/api/v1/namespaces/default/secrets/x").await;
    assert_eq!(r.code(), 403, "authorization does not depend on the audit");
    assert_eq!(robot.get("/apis").await.code(), 200);
    assert!(k.server.audited_identities().is_empty());
    let audit = k.server.permission_audit(ROBOT);
    assert!(audit.requests.is_empty() && audit.denied.is_empty());

    k.server.set_permission_audit(true);
    assert!(k.server.permission_audit_recording());
    let r = robot.get("/api/v1/namespaces/default/secrets/x").await;
    assert_eq!(r.code(), 403);
    let audit = k.server.permission_audit(ROBOT);
    let denied: Vec<(&str, &str, u64)> = audit
        .requests
        .iter()
        .map(|r| (r.verb.as_str(), r.resource.as_str(), r.denied))
        .collect();
    assert_eq!(denied, [("get", "secrets", 1)]);

    k.server.set_permission_audit(false);
    let r = robot.get("/api/v1/namespaces/default/secrets/x").await;
    assert_eq!(r.code(), 403);
    assert_eq!(k.server.permission_audit(ROBOT).requests[0].denied, 1);
}
