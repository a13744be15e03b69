//! The manifests under `config/` agree with the code: the generated files
//! (the CRD, the manager role and the leader-election role with their
//! bindings) are exactly what the operator's `manifests` command produces
//! — what `kubeforge generate` writes — the role grants what the
//! controller's watches and writes need, kustomize renders the whole, and
//! the manager's Deployment opens the probe and metrics servers its probes
//! use.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kubeforge::app::ManifestOptions;
use kubeforge::k8s_openapi::api::apps::v1::Deployment;
use kubeforge::k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role};
use kubeforge::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use memcached_operator::{app, Flags};

fn config() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config")
}

fn read(relative: &str) -> String {
    let path = config().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The documents of a multi-document YAML text.
fn documents(yaml: &str) -> Vec<serde_json::Value> {
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(yaml).unwrap_or_else(|e| panic!("{e}:\n{yaml}"));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn one<T: serde::de::DeserializeOwned>(yaml: &str, kind: &str) -> T {
    let doc = documents(yaml)
        .into_iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in:\n{yaml}"));
    serde_json::from_value(doc).unwrap_or_else(|e| panic!("{kind}: {e}"))
}

/// The files the operator's code produces, by path under `config/`.
async fn generated() -> Vec<(String, String)> {
    app()
        .manifests(&ManifestOptions::default(), &Flags::default())
        .await
        .expect("the manifests render")
        .into_iter()
        .map(|f| (f.path.display().to_string(), f.contents))
        .collect()
}

/// `(group, resource, verb)` for every grant of `rules`.
fn grants(rules: &[PolicyRule]) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for rule in rules {
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    out.insert((group.clone(), resource.clone(), verb.clone()));
                }
            }
        }
    }
    out
}

fn set(group: &str, resource: &str, verbs: &[&str]) -> Vec<(String, String, String)> {
    verbs
        .iter()
        .map(|v| (group.to_owned(), resource.to_owned(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn the_generated_files_are_what_the_code_produces() {
    let files = generated().await;
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "crd/bases/cache.example.com_memcacheds.yaml",
            "rbac/role.yaml",
            "rbac/role_binding.yaml",
            "rbac/leader_election_role.yaml",
            "rbac/leader_election_role_binding.yaml",
        ]
    );
    for (path, contents) in &files {
        assert!(
            read(path) == *contents,
            "config/{path} is out of date: run `kubeforge generate` in examples/memcached-operator \
             (`cargo run -p kubeforge-cli -- generate` from there)"
        );
    }
    // No CRD the code no longer defines.
    let bases: Vec<String> = std::fs::read_dir(config().join("crd/bases"))
        .expect("config/crd/bases")
        .map(|e| {
            format!(
                "crd/bases/{}",
                e.expect("entry").file_name().to_string_lossy()
            )
        })
        .collect();
    assert_eq!(bases, ["crd/bases/cache.example.com_memcacheds.yaml"]);
}

#[tokio::test]
async fn the_crd_is_the_derives() {
    let files = generated().await;
    let crd: kubeforge::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
        one(&files[0].1, "CustomResourceDefinition");
    assert_eq!(crd, memcached_operator::crd().expect("the derive's CRD"));
}

#[tokio::test]
async fn the_manager_role_grants_what_the_controller_watches_and_writes() {
    let files = generated().await;
    let role: ClusterRole = one(&files[1].1, "ClusterRole");
    assert_eq!(role.metadata.name.as_deref(), Some("manager-role"));
    let expected: BTreeSet<_> = [
        // The primary: cached (list, watch), finalizer added and removed
        // (patch), status applied (patch), and update on /finalizers for
        // blockOwnerDeletion on what it owns.
        set(
            "cache.example.com",
            "memcacheds",
            &["list", "watch", "patch"],
        ),
        set("cache.example.com", "memcacheds/status", &["patch"]),
        set("cache.example.com", "memcacheds/finalizers", &["update"]),
        // Owned: cached and applied (patch, and create for the apply that
        // creates); never got, updated or deleted.
        set("apps", "deployments", &["list", "watch", "create", "patch"]),
        // The recorder: create, and patch for series.
        set("events.k8s.io", "events", &["create", "patch"]),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert_eq!(grants(role.rules.as_deref().unwrap_or_default()), expected);

    let election: Role = one(&files[3].1, "Role");
    let rules = election.rules.unwrap_or_default();
    assert_eq!(
        grants(&rules),
        set(
            "coordination.k8s.io",
            "leases",
            &["create", "get", "list", "update", "watch"]
        )
        .into_iter()
        .collect()
    );
    assert!(rules
        .iter()
        .any(|r| r.resource_names.as_deref()
            == Some(&[memcached_operator::LEASE_NAME.to_owned()][..])));
}

#[test]
fn kustomize_renders_the_operator_with_its_prefix_and_namespace() {
    let out = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(config().join("default"))
        .output()
        .expect("kubectl runs");
    let rendered = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let objects: BTreeSet<(String, String)> = documents(&rendered)
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap_or_default().to_owned(),
                d["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    for (kind, name) in [
        ("CustomResourceDefinition", "memcacheds.cache.example.com"),
        ("Namespace", "memcached-operator-system"),
        ("ServiceAccount", "memcached-operator-controller-manager"),
        ("ClusterRole", "memcached-operator-manager-role"),
        (
            "ClusterRoleBinding",
            "memcached-operator-manager-rolebinding",
        ),
        ("Role", "memcached-operator-leader-election-role"),
        (
            "RoleBinding",
            "memcached-operator-leader-election-rolebinding",
        ),
        ("Deployment", "memcached-operator-controller-manager"),
    ] {
        assert!(
            objects.contains(&(kind.to_owned(), name.to_owned())),
            "{kind} {name} missing from {objects:?}"
        );
    }
}

#[test]
fn the_manager_deployment_serves_its_probes_beyond_loopback() {
    let deployment: Deployment = one(&read("manager/manager.yaml"), "Deployment");
    let pod = deployment.spec.template.spec.expect("pod spec");
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("controller-manager")
    );
    let security = pod.security_context.expect("pod security context");
    assert_eq!(security.run_as_non_root, Some(true));
    let container = &pod.containers[0];
    let args = container.args.clone().unwrap_or_default();
    for flag in [
        "--leader-elect",
        "--health-probe-bind-address=:8081",
        "--metrics-bind-address=:8080",
    ] {
        assert!(
            args.iter().any(|a| a == flag),
            "{flag} missing from {args:?}"
        );
    }
    let hardened = container
        .security_context
        .clone()
        .expect("container security context");
    assert_eq!(hardened.read_only_root_filesystem, Some(true));
    assert_eq!(hardened.allow_privilege_escalation, Some(false));
    for (probe, path) in [
        (container.liveness_probe.as_ref(), "/healthz"),
        (container.readiness_probe.as_ref(), "/readyz"),
    ] {
        let get = probe
            .and_then(|p| p.http_get.as_ref())
            .expect("an HTTP probe");
        assert_eq!(get.path.as_deref(), Some(path));
        assert_eq!(get.port, IntOrString::Int(8081));
    }
}
