//! The checked-in manifests under `config/` agree with the code: the CRD
//! is exactly what the derive produces, the RBAC role grants what the
//! operator does and no more, and the manager's Deployment opens the probe
//! and metrics servers its probes use.

use std::collections::BTreeSet;
use std::path::Path;

use kubeforge::k8s_openapi::api::apps::v1::Deployment;
use kubeforge::k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role};
use kubeforge::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

const CRD_FILE: &str = "config/crd/bases/cache.example.com_memcacheds.yaml";

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The documents of a multi-document YAML file.
fn documents(relative: &str) -> Vec<serde_json::Value> {
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&read(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn one<T: serde::de::DeserializeOwned>(relative: &str, kind: &str) -> T {
    let doc = documents(relative)
        .into_iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("{relative} has no {kind}"));
    serde_json::from_value(doc).unwrap_or_else(|e| panic!("{relative} {kind}: {e}"))
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

fn set(items: &[(&str, &str, &str)]) -> BTreeSet<(String, String, String)> {
    items
        .iter()
        .map(|(g, r, v)| (g.to_string(), r.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_checked_in_crd_is_what_the_derive_produces() {
    let generated = memcached_operator::crd_yaml().expect("CRD YAML");
    assert!(
        read(CRD_FILE) == generated,
        "{CRD_FILE} is out of date; regenerate it with\n  cargo run -p memcached-operator -- crd > examples/memcached-operator/{CRD_FILE}"
    );
}

#[test]
fn the_manager_role_grants_what_the_operator_does_and_no_more() {
    let role: ClusterRole = one::<ClusterRole>("config/rbac/role.yaml", "ClusterRole");
    let expected = set(&[
        // The cache's list and watch, the finalizer's JSON patches.
        ("cache.example.com", "memcacheds", "get"),
        ("cache.example.com", "memcacheds", "list"),
        ("cache.example.com", "memcacheds", "watch"),
        ("cache.example.com", "memcacheds", "patch"),
        // Status by server-side apply.
        ("cache.example.com", "memcacheds/status", "patch"),
        // blockOwnerDeletion on the Deployment's owner reference.
        ("cache.example.com", "memcacheds/finalizers", "update"),
        // The metadata-only watch, and server-side apply (create on first apply).
        ("apps", "deployments", "get"),
        ("apps", "deployments", "list"),
        ("apps", "deployments", "watch"),
        ("apps", "deployments", "create"),
        ("apps", "deployments", "patch"),
        // The recorder: create, and patch for series.
        ("events.k8s.io", "events", "create"),
        ("events.k8s.io", "events", "patch"),
    ]);
    assert_eq!(grants(role.rules.as_deref().unwrap_or_default()), expected);

    let election: Role = one::<Role>("config/rbac/leader_election_role.yaml", "Role");
    assert_eq!(
        grants(election.rules.as_deref().unwrap_or_default()),
        set(&[
            ("coordination.k8s.io", "leases", "get"),
            ("coordination.k8s.io", "leases", "create"),
            ("coordination.k8s.io", "leases", "update"),
        ])
    );
    assert_eq!(
        election.metadata.namespace.as_deref(),
        Some("memcached-operator-system")
    );
}

#[test]
fn the_manager_deployment_serves_its_probes_beyond_loopback() {
    let deployment: Deployment = one::<Deployment>("config/manager/manager.yaml", "Deployment");
    let pod = deployment.spec.template.spec.expect("pod spec");
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("memcached-operator-controller-manager")
    );
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
