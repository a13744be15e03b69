//! How the crates fit together, checked with cargo itself: the API server
//! crate depends on no kubeforge crate (so it never reuses the runtime it
//! tests, and kube-rs projects can use it alone), `kubeforge dev-server`
//! needs the server and not the runtime, a kube-rs project tests with the
//! server and kube-rs alone, and a project may pin the
//! Kubernetes version of its API types as kube-rs projects do.

use kubeforge_e2e::{cargo, run_ok, target_dir, workspace_root};

/// Every package in `package`'s dependency tree along `edges`, as `name`.
fn dependencies(package: &str, edges: &str) -> Vec<String> {
    let tree = run_ok(cargo().args([
        "tree", "--quiet", "--locked", "-p", package, "-e", edges, "--prefix", "none", "--format",
        "{p}",
    ]));
    let mut names: Vec<String> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

fn kubeforge_crates(names: &[String]) -> Vec<&str> {
    names
        .iter()
        .map(String::as_str)
        .filter(|n| *n == "kubeforge" || n.starts_with("kubeforge-"))
        .collect()
}

#[test]
fn the_api_server_depends_on_no_kubeforge_crate() {
    // Normal, build and dev dependencies alike.
    let names = dependencies("kubeforge-apiserver", "all");
    assert!(names.iter().any(|n| n == "kube-core"), "{names:?}");
    assert_eq!(kubeforge_crates(&names), ["kubeforge-apiserver"]);
}

#[test]
fn the_kube_rs_users_crate_tests_the_server_with_kube_rs_alone() {
    let names = dependencies("kube-rs-users", "all");
    assert!(names.iter().any(|n| n == "kube-runtime"), "{names:?}");
    assert_eq!(kubeforge_crates(&names), ["kubeforge-apiserver"]);
}

#[test]
fn the_dev_server_command_needs_the_server_not_the_runtime() {
    let names = dependencies("kubeforge-cli", "normal");
    assert_eq!(
        kubeforge_crates(&names),
        ["kubeforge-apiserver", "kubeforge-cli"]
    );
}

#[test]
fn the_runtime_uses_the_server_only_for_its_testing_feature() {
    let names = dependencies("kubeforge", "normal");
    assert_eq!(kubeforge_crates(&names), ["kubeforge", "kubeforge-macros"]);
}

/// kube-rs is a dependency of the side-by-side benchmark only
/// (tests/bench-vs-kube-runtime), never of kubeforge or its server.
#[test]
fn kube_rs_stays_out_of_kubeforges_tree() {
    for package in ["kubeforge", "kubeforge-apiserver"] {
        let names = dependencies(package, "all");
        let kube_rs: Vec<&String> = names
            .iter()
            .filter(|n| ["kube", "kube-client", "kube-runtime"].contains(&n.as_str()))
            .collect();
        assert!(kube_rs.is_empty(), "{package} depends on {kube_rs:?}");
    }
    let bench = dependencies("kubeforge-bench-vs-kube-runtime", "normal");
    assert!(bench.iter().any(|n| n == "kube-runtime"), "{bench:?}");
}

/// kubeforge's default feature picks k8s-openapi's latest version; this
/// crate (a workspace member) also depends on k8s-openapi with
/// `features = ["latest"]`, as kube-rs projects write it, and builds.
#[test]
fn a_project_naming_k8s_openapis_latest_version_builds_beside_kubeforge() {
    let deployment = k8s_openapi::api::apps::v1::Deployment::default();
    let same: kubeforge::k8s_openapi::api::apps::v1::Deployment = deployment;
    assert!(same.metadata.name.is_none());
}

/// A project that pins one version turns kubeforge's default off and names
/// its own (tests/fixtures/pinned-k8s-version, which compiles only with
/// 1.33's types).
///
/// The fixture is built from a copy under the target directory whose lock
/// file starts as the workspace's: it resolves to the versions the
/// workspace already locked and downloaded (so `--offline` holds), and a
/// dependency change in the workspace can never leave a second lock file
/// stale.
#[test]
fn a_project_pinning_a_kubernetes_version_builds() {
    let root = workspace_root();
    let fixture = root.join("tests/fixtures/pinned-k8s-version");
    let copy = target_dir().join("fixtures/pinned-k8s-version");
    std::fs::create_dir_all(copy.join("src")).unwrap();
    let manifest = std::fs::read_to_string(fixture.join("Cargo.toml"))
        .unwrap()
        .replace(
            "\"../../../framework\"",
            &format!("{:?}", root.join("framework")),
        );
    std::fs::write(copy.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(fixture.join("src/lib.rs"), copy.join("src/lib.rs")).unwrap();
    std::fs::copy(root.join("Cargo.lock"), copy.join("Cargo.lock")).unwrap();
    // The workspace's target directory: the build scripts and proc-macros
    // are the same crates and are not built again.
    run_ok(
        cargo()
            .args(["check", "--quiet", "--offline", "--manifest-path"])
            .arg(copy.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(target_dir()),
    );
}
