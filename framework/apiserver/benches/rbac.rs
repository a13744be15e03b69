//! The cost of authentication and RBAC per request: GETs of single
//! ConfigMaps over real HTTPS as the admin (system:masters, RBAC not
//! consulted) beside the same GETs as a user granted them by a Role with a
//! few rules, first with only the bootstrap policy in the store, then with
//! 1,000 more Roles and RoleBindings (half naming other users, half naming
//! a group the user is in, in other namespaces). Rounds alternate between
//! the two identities and the best of each is printed. Prints figures;
//! asserts nothing about time.
//!
//! `cargo bench -p kubeforge-apiserver --bench rbac`
//! (`RBAC_BENCH_REQUESTS` per round, `RBAC_BENCH_ROLES` scale it).

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::Kube;
use http_body_util::{BodyExt, Full};
use kubeforge_apiserver::User;
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";
const OBJECTS: usize = 100;
const CONCURRENCY: usize = 16;
const ROUNDS: usize = 3;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `requests` GETs of the ConfigMaps as the bearer of `token`, from
/// [`CONCURRENCY`] tasks; the time they took.
async fn gets(k: &Arc<Kube>, token: &Arc<str>, requests: usize) -> Duration {
    let t = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|w| {
            let k = k.clone();
            let token = token.clone();
            tokio::spawn(async move {
                let client = common::client(&k.server, false);
                let mut i = w;
                while i < requests {
                    let req =
                        http::Request::get(format!("{}{CMS}/cm-{:03}", k.base(), i % OBJECTS))
                            .header("authorization", format!("Bearer {token}"))
                            .body(Full::new(Bytes::new()))
                            .expect("request");
                    let resp = client.request(req).await.expect("response");
                    assert_eq!(resp.status(), 200, "GET as {token:.6}...");
                    resp.into_body().collect().await.expect("body");
                    i += CONCURRENCY;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("client task");
    }
    t.elapsed()
}

/// Alternating rounds as admin and as the user; the best rate of each.
async fn compare(k: &Arc<Kube>, admin: &Arc<str>, user: &Arc<str>, requests: usize) -> (f64, f64) {
    let (mut best_admin, mut best_user) = (0f64, 0f64);
    for _ in 0..ROUNDS {
        let d = gets(k, admin, requests).await;
        best_admin = best_admin.max(requests as f64 / d.as_secs_f64());
        let d = gets(k, user, requests).await;
        best_user = best_user.max(requests as f64 / d.as_secs_f64());
    }
    (best_admin, best_user)
}

fn report(what: &str, (admin, user): (f64, f64)) {
    println!(
        "{what:<34} admin {admin:>8.0} req/s   user {user:>8.0} req/s   ({:+.1}%)",
        (user / admin - 1.0) * 100.0
    );
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let requests = env_usize("RBAC_BENCH_REQUESTS", 20_000);
    let roles = env_usize("RBAC_BENCH_ROLES", 1_000);
    let k = Arc::new(Kube::start().await);
    for i in 0..OBJECTS {
        k.configmap("default", &format!("cm-{i:03}"), json!({"k": "v"}))
            .await;
    }
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "cm-reader"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods", "services"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["deployments", "*/scale"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
        ],
    });
    assert_eq!(
        k.post(&format!("{RBAC}/namespaces/default/roles"), &role)
            .await
            .code(),
        201
    );
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "alice-reads"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
    });
    assert_eq!(
        k.post(&format!("{RBAC}/namespaces/default/rolebindings"), &binding)
            .await
            .code(),
        201
    );
    let alice = k
        .server
        .add_user(&User::new("alice").group("dev"))
        .expect("user");
    let user: Arc<str> = alice.bearer_token().expect("token user").into();
    let admin: Arc<str> = k.token().into();
    println!(
        "rbac bench: GET of single configmaps over HTTPS, {requests} per round, {CONCURRENCY} clients, best of {ROUNDS}"
    );
    // Warm both paths (connections, the RBAC index).
    gets(&k, &admin, requests / 10).await;
    gets(&k, &user, requests / 10).await;
    report(
        "bootstrap policy + 1 role:",
        compare(&k, &admin, &user, requests).await,
    );

    let namespaces = 10;
    for ns in 0..namespaces {
        let r = k
            .post(
                "/api/v1/namespaces",
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("team-{ns}")}}),
            )
            .await;
        assert_eq!(r.code(), 201);
    }
    for i in 0..roles {
        let ns = format!("team-{}", i % namespaces);
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": format!("role-{i}")},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list"]},
                {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]},
            ],
        });
        let r = k
            .post(&format!("{RBAC}/namespaces/{ns}/roles"), &role)
            .await;
        assert_eq!(r.code(), 201);
        let subject = if i % 2 == 0 {
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": format!("user-{i}")})
        } else {
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "dev"})
        };
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": format!("binding-{i}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("role-{i}")},
            "subjects": [subject],
        });
        let r = k
            .post(&format!("{RBAC}/namespaces/{ns}/rolebindings"), &binding)
            .await;
        assert_eq!(r.code(), 201);
    }
    gets(&k, &user, requests / 10).await;
    report(
        &format!("+ {roles} Roles and RoleBindings:"),
        compare(&k, &admin, &user, requests).await,
    );
}
