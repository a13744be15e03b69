//! The real `kubectl` against the server's authentication and RBAC: `auth
//! whoami`, `auth can-i` (namespaced, cluster-scoped, subresource,
//! non-resource, `--list`), `create token` and using the token, and a 403
//! as kubectl prints it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kubeforge::testing::{ApiServer, User};
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
