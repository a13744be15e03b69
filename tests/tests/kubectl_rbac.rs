//! The real `kubectl` against the server's authentication and RBAC: `auth
//! whoami`, `auth can-i` (namespaced, cluster-scoped, subresource,
//! non-resource, `--list`, `-A`, `--as`), `create token` and using the
//! token, impersonation with `--as`/`--as-group` allowed and forbidden,
//! `create role` and `create rolebinding` escalation denied, `replace`
//! creating a missing Role only with `create`, 403s as
//! kubectl prints them, and the identities `kubeforge dev-server --user
//! --service-account` writes kubeconfigs for.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kubeforge::testing::{ApiServer, User};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

struct Kubectl {
    dir: tempfile::TempDir,
}

#[derive(Debug)]
struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Kubectl {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn kubeconfig(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).expect("kubeconfig");
        p
    }

    /// `kubectl apply -f` of a manifest written to a file.
    async fn apply(&self, kubeconfig: &Path, name: &str, manifest: &str) {
        let p = self.dir.path().join(format!("{name}.yaml"));
        std::fs::write(&p, manifest).expect("manifest");
        let path = p.to_str().expect("utf-8 path");
        let out = self.run(kubeconfig, &["apply", "-f", path]).await;
        assert!(out.ok, "{name}: {out:?}");
    }

    async fn run(&self, kubeconfig: &Path, args: &[&str]) -> Out {
        let mut c = Command::new("kubectl");
        c.args(args)
            .env("KUBECONFIG", kubeconfig)
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(60), c.output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .expect("kubectl runs");
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

async fn setup() -> (ApiServer, Kubectl, PathBuf, PathBuf) {
    let server = ApiServer::start().await.expect("server starts");
    let k = Kubectl::new();
    let admin = k.kubeconfig("admin", &server.kubeconfig().expect("kubeconfig"));
    let alice = server
        .add_user(&User::new("alice").group("dev"))
        .expect("user");
    let alice = k.kubeconfig("alice", &alice.kubeconfig().expect("kubeconfig"));
    (server, k, admin, alice)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whoami_and_can_i_for_a_user_with_a_role() {
    let (_server, k, admin, alice) = setup().await;
    let out = k.run(&alice, &["auth", "whoami", "-o", "json"]).await;
    assert!(out.ok, "{out:?}");
    let who: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "alice");
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!(["dev", "system:authenticated"])
    );

    let out = k
        .run(&alice, &["auth", "can-i", "list", "configmaps"])
        .await;
    assert!(!out.ok);
    assert_eq!(out.stdout.trim(), "no");
    // A 403 as kubectl prints it, byte for byte kube-apiserver's text.
    let out = k.run(&alice, &["get", "configmaps"]).await;
    assert!(!out.ok);
    assert_eq!(
        out.stderr,
        "Error from server (Forbidden): configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\"\n"
    );

    for args in [
        &[
            "create",
            "role",
            "cm",
            "--verb=get,list",
            "--resource=configmaps",
            "--resource=deployments/scale",
        ][..],
        &["create", "rolebinding", "cm", "--role=cm", "--group=dev"][..],
        &[
            "create",
            "clusterrole",
            "nodes-read",
            "--verb=get",
            "--resource=nodes",
            "--non-resource-url=/metrics",
        ][..],
        &[
            "create",
            "clusterrolebinding",
            "nodes-read",
            "--clusterrole=nodes-read",
            "--user=alice",
        ][..],
    ] {
        let out = k.run(&admin, args).await;
        assert!(out.ok, "{args:?}: {out:?}");
    }
    for (args, yes) in [
        (&["auth", "can-i", "list", "configmaps"][..], true),
        (&["auth", "can-i", "delete", "configmaps"][..], false),
        (
            &["auth", "can-i", "list", "configmaps", "-n", "kube-system"][..],
            false,
        ),
        (
            &["auth", "can-i", "get", "deployments", "--subresource=scale"][..],
            true,
        ),
        (&["auth", "can-i", "get", "deployments"][..], false),
        (&["auth", "can-i", "get", "nodes"][..], true),
        (&["auth", "can-i", "get", "/metrics"][..], true),
        (&["auth", "can-i", "get", "/logs"][..], false),
        (&["auth", "can-i", "list", "configmaps", "-A"][..], false),
    ] {
        let out = k.run(&alice, args).await;
        let expected = if yes { "yes" } else { "no" };
        assert_eq!(out.stdout.trim(), expected, "{args:?}: {out:?}");
        assert_eq!(out.ok, yes, "{args:?}");
    }
    let out = k.run(&alice, &["auth", "can-i", "--list"]).await;
    assert!(out.ok, "{out:?}");
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("configmaps "))
        .unwrap_or_else(|| panic!("no configmaps row:\n{}", out.stdout));
    assert!(row.contains("[get list]"), "{row}");
    assert!(out.stdout.contains("/metrics"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("selfsubjectaccessreviews.authorization.k8s.io"),
        "{}",
        out.stdout
    );
    let out = k.run(&alice, &["get", "configmaps"]).await;
    assert!(out.ok, "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_token_and_use_it() {
    let (_server, k, admin, _alice) = setup().await;
    let out = k.run(&admin, &["create", "serviceaccount", "robot"]).await;
    assert!(out.ok, "{out:?}");
    let out = k
        .run(&admin, &["create", "token", "robot", "--duration=20m"])
        .await;
    assert!(out.ok, "{out:?}");
    let token = out.stdout.trim().to_owned();
    let out = k
        .run(
            &admin,
            &[
                "--token",
                &token,
                "auth",
                "whoami",
                "-o",
                "jsonpath={.status.userInfo.username}",
            ],
        )
        .await;
    assert!(out.ok, "{out:?}");
    assert_eq!(out.stdout, "system:serviceaccount:default:robot");
    let out = k.run(&admin, &["--token", &token, "get", "pods"]).await;
    assert!(!out.ok);
    assert!(
        out.stderr.contains(r#"pods is forbidden: User "system:serviceaccount:default:robot" cannot list resource "pods" in API group "" in the namespace "default""#),
        "{}",
        out.stderr
    );
    let out = k.run(&admin, &["delete", "serviceaccount", "robot"]).await;
    assert!(out.ok, "{out:?}");
    let out = k.run(&admin, &["--token", &token, "get", "pods"]).await;
    assert!(!out.ok);
    assert!(out.stderr.contains("Unauthorized"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonation_with_as_and_as_group() {
    let (_server, k, admin, alice) = setup().await;
    // The admin (system:masters) may impersonate anyone.
    let out = k
        .run(
            &admin,
            &["auth", "whoami", "--as=bob", "--as-group=ops", "-o", "json"],
        )
        .await;
    assert!(out.ok, "{out:?}");
    let who: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "bob");
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!(["ops", "system:authenticated"])
    );
    let out = k.run(&admin, &["get", "configmaps", "--as=alice"]).await;
    assert_eq!(
        out.stderr,
        "Error from server (Forbidden): configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\"\n"
    );
    let out = k
        .run(
            &admin,
            &["auth", "can-i", "list", "configmaps", "--as=alice"],
        )
        .await;
    assert_eq!((out.ok, out.stdout.trim()), (false, "no"), "{out:?}");

    // Alice may not impersonate until granted, and then only bob and ops.
    let out = k.run(&alice, &["get", "pods", "--as=bob"]).await;
    assert!(!out.ok);
    assert_eq!(
        out.stderr,
        "Error from server (Forbidden): users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope\n"
    );
    k.apply(
        &admin,
        "impersonator",
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonator}
rules:
- {apiGroups: [""], resources: [users], resourceNames: [bob], verbs: [impersonate]}
- {apiGroups: [""], resources: [groups], resourceNames: [ops], verbs: [impersonate]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-impersonates}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonator}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader, namespace: default}
rules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ops-reads-pods, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: ops}]
"#,
    )
    .await;
    // As bob alone, the request is bob's: he may not list pods.
    let out = k.run(&alice, &["get", "pods", "--as=bob"]).await;
    assert_eq!(
        out.stderr,
        "Error from server (Forbidden): pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"\n"
    );
    // As bob in ops, he may.
    let out = k
        .run(&alice, &["get", "pods", "--as=bob", "--as-group=ops"])
        .await;
    assert!(out.ok, "{out:?}");
    for (args, yes) in [
        (&["auth", "can-i", "list", "pods", "--as=bob"][..], false),
        (
            &[
                "auth",
                "can-i",
                "list",
                "pods",
                "--as=bob",
                "--as-group=ops",
            ][..],
            true,
        ),
        (
            &[
                "auth",
                "can-i",
                "delete",
                "pods",
                "--as=bob",
                "--as-group=ops",
            ][..],
            false,
        ),
    ] {
        let out = k.run(&alice, args).await;
        let expected = if yes { "yes" } else { "no" };
        assert_eq!(out.stdout.trim(), expected, "{args:?}: {out:?}");
    }
    // Forbidden impersonation of a user or a group not granted.
    let out = k.run(&alice, &["get", "pods", "--as=carol"]).await;
    assert_eq!(
        out.stderr,
        "Error from server (Forbidden): users \"carol\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope\n"
    );
    let out = k
        .run(&alice, &["get", "pods", "--as=bob", "--as-group=admins"])
        .await;
    assert_eq!(
        out.stderr,
        "Error from server (Forbidden): groups \"admins\" is forbidden: User \"alice\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_role_beyond_ones_own_permissions_is_denied() {
    let (_server, k, admin, alice) = setup().await;
    k.apply(
        &admin,
        "role-writer",
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: role-writer, namespace: default}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles, rolebindings], verbs: [create, get]}
- {apiGroups: [""], resources: [configmaps], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-writes-roles, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: role-writer}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
"#,
    )
    .await;
    let out = k
        .run(
            &alice,
            &[
                "create",
                "role",
                "cm-read",
                "--verb=get",
                "--resource=configmaps",
            ],
        )
        .await;
    assert!(out.ok, "{out:?}");
    let out = k
        .run(
            &alice,
            &[
                "create",
                "role",
                "cm-delete",
                "--verb=get,delete",
                "--resource=configmaps",
            ],
        )
        .await;
    assert!(!out.ok);
    assert_eq!(
        out.stderr,
        "Error from server (Forbidden): roles.rbac.authorization.k8s.io \"cm-delete\" is forbidden: user \"alice\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}\n"
    );
    // Binding the edit role would grant what alice lacks; binding her own
    // role does not.
    let out = k
        .run(
            &alice,
            &[
                "create",
                "rolebinding",
                "bob-edits",
                "--clusterrole=edit",
                "--user=bob",
            ],
        )
        .await;
    assert!(!out.ok);
    assert!(
        out.stderr.contains(r#"rolebindings.rbac.authorization.k8s.io "bob-edits" is forbidden: user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:"#),
        "{}",
        out.stderr
    );
    let out = k
        .run(
            &alice,
            &[
                "create",
                "rolebinding",
                "bob-reads",
                "--role=cm-read",
                "--user=bob",
            ],
        )
        .await;
    assert!(out.ok, "{out:?}");
    // A binding to a role that does not exist: its 403 says so.
    let out = k
        .run(
            &admin,
            &[
                "create",
                "rolebinding",
                "dangling",
                "--role=gone",
                "--user=alice",
            ],
        )
        .await;
    assert!(out.ok, "{out:?}");
    let out = k.run(&alice, &["get", "secrets"]).await;
    assert_eq!(
        out.stderr,
        "Error from server (Forbidden): secrets is forbidden: User \"alice\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\": RBAC: role.rbac.authorization.k8s.io \"gone\" not found\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_creates_a_missing_role_only_with_create() {
    let (_server, k, admin, alice) = setup().await;
    let write = |name: &str, text: &str| {
        let p = k.dir.path().join(name);
        std::fs::write(&p, text).expect("manifest");
        p.to_str().expect("utf-8 path").to_owned()
    };
    // `kubectl replace` PUTs what it cannot get: a Role is created
    // (roles create on update), a ConfigMap is not found.
    let role = write(
        "role.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n\
         metadata: {name: cm-read, namespace: default}\n\
         rules: [{apiGroups: [\"\"], resources: [configmaps], verbs: [get]}]\n",
    );
    let out = k.run(&admin, &["replace", "-f", &role]).await;
    assert!(out.ok, "{out:?}");
    assert_eq!(
        out.stdout,
        "role.rbac.authorization.k8s.io/cm-read replaced\n"
    );
    let out = k
        .run(&admin, &["get", "role", "cm-read", "-o", "name"])
        .await;
    assert_eq!(out.stdout, "role.rbac.authorization.k8s.io/cm-read\n");
    let cm = write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone, namespace: default}\n",
    );
    let out = k.run(&admin, &["replace", "-f", &cm]).await;
    assert!(!out.ok);
    assert_eq!(
        out.stderr,
        format!("Error from server (NotFound): error when replacing \"{cm}\": configmaps \"gone\" not found\n")
    );

    // Alice may update roles but not create them: the create is forbidden.
    k.apply(
        &admin,
        "role-updater",
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: role-updater, namespace: default}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles], verbs: [get, update]}
- {apiGroups: [""], resources: [configmaps], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-updates-roles, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: role-updater}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
"#,
    )
    .await;
    let other = write(
        "other.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n\
         metadata: {name: other, namespace: default}\n\
         rules: [{apiGroups: [\"\"], resources: [configmaps], verbs: [get]}]\n",
    );
    let out = k.run(&alice, &["replace", "-f", &other]).await;
    assert!(!out.ok);
    assert_eq!(
        out.stderr,
        format!("Error from server (Forbidden): error when replacing \"{other}\": roles.rbac.authorization.k8s.io \"other\" is forbidden: \n")
    );
    // Replacing what exists needs update only.
    let out = k.run(&alice, &["replace", "-f", &role]).await;
    assert!(out.ok, "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_server_adds_users_and_service_accounts_with_kubeconfigs() {
    let bin = kubeforge_e2e::kubeforge_binary();
    let k = Kubectl::new();
    let alice = k.dir.path().join("alice.kubeconfig");
    let robot = k.dir.path().join("robot.kubeconfig");
    let mut server = Command::new(&bin)
        .args(["dev-server", "--listen", "127.0.0.1:0", "--nodes", "0"])
        .arg("--user")
        .arg(format!("alice,dev,ops={}", alice.display()))
        .arg("--service-account")
        .arg(format!("default/robot={}", robot.display()))
        .args(["--audit", "default/robot"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("dev-server starts");
    let mut lines = BufReader::new(server.stdout.take().expect("stdout")).lines();
    let mut banner = String::new();
    while !banner.contains("kubeconfig for system:serviceaccount:default:robot written") {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("dev-server prints its banner")
            .expect("stdout readable")
            .unwrap_or_else(|| panic!("dev-server exited:\n{banner}"));
        banner.push_str(&line);
        banner.push('\n');
    }
    assert!(
        banner.contains(&format!(
            "kubeconfig for alice written to {}",
            alice.display()
        )),
        "{banner}"
    );
    let whoami = [
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
    ];
    let out = k.run(&alice, &whoami).await;
    assert!(out.ok, "{out:?}");
    assert_eq!(out.stdout, r#"alice ["dev","ops","system:authenticated"]"#);
    let out = k.run(&robot, &whoami).await;
    assert!(out.ok, "{out:?}");
    assert_eq!(
        out.stdout,
        r#"system:serviceaccount:default:robot ["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"]"#
    );
    // Both are governed by RBAC.
    let out = k.run(&robot, &["get", "pods"]).await;
    assert_eq!(
        out.stderr,
        "Error from server (Forbidden): pods is forbidden: User \"system:serviceaccount:default:robot\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"\n"
    );
    // On SIGTERM, `--audit default/robot` prints the rule it lacked.
    let pid = server.id().expect("pid");
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let mut rest = String::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("dev-server prints the audit and exits")
        .expect("stdout readable")
    {
        rest.push_str(&line);
        rest.push('\n');
    }
    assert!(
        rest.contains("permission audit of system:serviceaccount:default:robot:"),
        "{rest}"
    );
    assert!(
        rest.contains("denied (rules missing):\n# in namespace default\n- apiGroups: [\"\"]\n  resources: [\"pods\"]\n  verbs: [\"list\"]\n"),
        "{rest}"
    );
    // Granted nothing, it used every verb it was granted.
    assert!(
        rest.contains("verbs granted and never used: none\n"),
        "{rest}"
    );
    let status = tokio::time::timeout(Duration::from_secs(10), server.wait())
        .await
        .expect("exits")
        .expect("status");
    assert!(status.success(), "{status}");
}
