//! The manifests under `config/` agree with the code: the generated files
//! (the CRD with its conversion webhook, the manager and leader-election
//! roles with their bindings, and the webhook configurations) are exactly
//! what the operator's `manifests` command produces — what `kubeforge
//! generate` writes — the manager role grants what the controller uses,
//! each API version's admission webhooks match that
//! version only (`matchPolicy: Exact`), the CRD converts through `/convert`
//! as `kubeforge.toml` records, and kustomize renders the whole with the
//! names and certificate annotations wired together.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kubeforge::app::ManifestOptions;
use kubeforge::k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhookConfiguration,
};
use kubeforge::k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kubeforge::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use cronjob_operator::app;

const GROUP: &str = "batch.tutorial.kubebuilder.io";
const CRD_FILE: &str = "crd/bases/batch.tutorial.kubebuilder.io_cronjobs.yaml";
const WEBHOOK_FILE: &str = "webhook/manifests.yaml";

fn project() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn config() -> PathBuf {
    project().join("config")
}

fn read(relative: &str) -> String {
    let path = config().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The documents of a multi-document YAML text.
fn documents(yaml: &str) -> Vec<Value> {
    let docs: Vec<Value> =
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
        .manifests(&ManifestOptions::default(), &Default::default())
        .await
        .expect("the manifests render")
        .into_iter()
        .map(|f| (f.path.display().to_string(), f.contents))
        .collect()
}

async fn generated_file(path: &str) -> String {
    generated()
        .await
        .into_iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("{path} is not generated"))
        .1
}

/// The API versions of CronJob that `kubeforge.toml` records converting
/// through the webhook, with the hub first: `[]` when none does.
fn converted_versions() -> Vec<String> {
    let path = project().join("kubeforge.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let record: toml::Table = text.parse().unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let resources = record["resource"].as_array().expect("[[resource]]");
    let mut versions = Vec::new();
    for resource in resources {
        let webhooks = &resource.get("webhooks");
        let converts = webhooks
            .and_then(|w| w.get("conversion"))
            .and_then(toml::Value::as_bool)
            .unwrap_or(false);
        if resource["kind"].as_str() == Some("CronJob") && converts {
            versions.push(resource["version"].as_str().expect("version").to_owned());
            let spokes = webhooks.and_then(|w| w.get("spoke"));
            for spoke in spokes.and_then(toml::Value::as_array).into_iter().flatten() {
                versions.push(spoke.as_str().expect("spoke").to_owned());
            }
        }
    }
    versions
}

#[tokio::test]
async fn the_generated_files_are_what_the_code_produces() {
    let files = generated().await;
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths.iter().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from([
            CRD_FILE,
            "rbac/role.yaml",
            "rbac/role_binding.yaml",
            "rbac/leader_election_role.yaml",
            "rbac/leader_election_role_binding.yaml",
            WEBHOOK_FILE,
        ]),
        "{paths:?}"
    );
    for (path, contents) in &files {
        assert!(
            read(path) == *contents,
            "config/{path} is out of date: run `kubeforge generate` in examples/cronjob-operator \
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
    assert_eq!(bases, [CRD_FILE]);
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
async fn the_manager_role_grants_what_the_controller_uses() {
    let role: ClusterRole = one(&generated_file("rbac/role.yaml").await, "ClusterRole");
    assert_eq!(role.metadata.name.as_deref(), Some("manager-role"));
    let expected: BTreeSet<_> = [
        // The primary: cached only (list, watch): it adds no finalizer, so
        // no update or patch; no create or delete, which the tutorial's
        // markers grant. Its status replaced (update).
        set(GROUP, "cronjobs", &["list", "watch"]),
        set(GROUP, "cronjobs/status", &["update"]),
        // blockOwnerDeletion on the Jobs it owns.
        set(GROUP, "cronjobs/finalizers", &["update"]),
        // Owned: cached, created, deleted (history, Replace); never got,
        // updated or patched; no `jobs/status get`: the status comes with
        // the Job.
        set("batch", "jobs", &["list", "watch", "create", "delete"]),
        // SuccessfulCreate and SuccessfulDelete.
        set("events.k8s.io", "events", &["create", "patch"]),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert_eq!(grants(role.rules.as_deref().unwrap_or_default()), expected);
}

#[tokio::test]
async fn the_crd_serves_both_versions_stores_v1_and_converts_as_the_project_records() {
    let crd: CustomResourceDefinition =
        one(&generated_file(CRD_FILE).await, "CustomResourceDefinition");
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("cronjobs.batch.tutorial.kubebuilder.io")
    );
    let versions: Vec<(&str, bool, bool, bool)> = crd
        .spec
        .versions
        .iter()
        .map(|v| {
            (
                v.name.as_str(),
                v.served,
                v.storage,
                v.subresources.as_ref().is_some_and(|s| s.status.is_some()),
            )
        })
        .collect();
    assert_eq!(
        versions,
        [("v1", true, true, true), ("v2", true, false, true)]
    );

    assert_eq!(converted_versions(), ["v1", "v2"], "kubeforge.toml");
    let conversion = crd.spec.conversion.expect("spec.conversion");
    assert_eq!(conversion.strategy, "Webhook");
    let webhook = conversion.webhook.expect("conversion.webhook");
    assert_eq!(webhook.conversion_review_versions, ["v1"]);
    let service = webhook
        .client_config
        .and_then(|c| c.service)
        .expect("a service reference");
    assert_eq!(
        (
            service.namespace.as_str(),
            service.name.as_str(),
            service.path.as_deref()
        ),
        ("system", "webhook-service", Some("/convert"))
    );
    // cert-manager fills in the CA bundle, as for the webhook configurations.
    assert_eq!(
        crd.metadata
            .annotations
            .unwrap_or_default()
            .get("cert-manager.io/inject-ca-from")
            .map(String::as_str),
        Some("system/serving-cert")
    );
}

/// `(name, path, apiVersions, matchPolicy, failurePolicy, sideEffects,
/// admissionReviewVersions, operations)` of one webhook.
type Row = (
    String,
    String,
    Vec<String>,
    Option<String>,
    Option<String>,
    String,
    Vec<String>,
    Vec<String>,
);

fn expected(prefix: &str, kind: &str, version: &str) -> Row {
    (
        format!("{prefix}cronjob-{version}.kb.io"),
        format!("/{kind}-batch-tutorial-kubebuilder-io-{version}-cronjob"),
        vec![version.to_owned()],
        Some("Exact".to_owned()),
        Some("Fail".to_owned()),
        "None".to_owned(),
        vec!["v1".to_owned()],
        vec!["CREATE".to_owned(), "UPDATE".to_owned()],
    )
}

#[tokio::test]
async fn each_version_has_its_defaulter_and_validator_matching_that_version_only() {
    let yaml = generated_file(WEBHOOK_FILE).await;
    let rule_of = |rules: Option<&Vec<RuleWithOperations>>| {
        let rules = rules.expect("rules");
        assert_eq!(rules.len(), 1, "{rules:?}");
        let rule = &rules[0];
        assert_eq!(rule.api_groups.as_deref(), Some(&[GROUP.to_owned()][..]));
        assert_eq!(
            rule.resources.as_deref(),
            Some(&["cronjobs".to_owned()][..])
        );
        (
            rule.api_versions.clone().unwrap_or_default(),
            rule.operations.clone().unwrap_or_default(),
        )
    };

    let mutating: MutatingWebhookConfiguration = one(&yaml, "MutatingWebhookConfiguration");
    let rows: Vec<Row> = mutating
        .webhooks
        .unwrap_or_default()
        .iter()
        .map(|w| {
            let (versions, operations) = rule_of(w.rules.as_ref());
            (
                w.name.clone(),
                w.client_config
                    .service
                    .as_ref()
                    .and_then(|s| s.path.clone())
                    .unwrap_or_default(),
                versions,
                w.match_policy.clone(),
                w.failure_policy.clone(),
                w.side_effects.clone(),
                w.admission_review_versions.clone(),
                operations,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [expected("m", "mutate", "v1"), expected("m", "mutate", "v2")]
    );

    let validating: ValidatingWebhookConfiguration = one(&yaml, "ValidatingWebhookConfiguration");
    let rows: Vec<Row> = validating
        .webhooks
        .unwrap_or_default()
        .iter()
        .map(|w| {
            let (versions, operations) = rule_of(w.rules.as_ref());
            (
                w.name.clone(),
                w.client_config
                    .service
                    .as_ref()
                    .and_then(|s| s.path.clone())
                    .unwrap_or_default(),
                versions,
                w.match_policy.clone(),
                w.failure_policy.clone(),
                w.side_effects.clone(),
                w.admission_review_versions.clone(),
                operations,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            expected("v", "validate", "v1"),
            expected("v", "validate", "v2")
        ]
    );
}

#[test]
fn kustomize_wires_the_webhooks_the_conversion_and_the_certificate_together() {
    let out = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(config().join("default"))
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = documents(&String::from_utf8_lossy(&out.stdout));
    let find = |kind: &str, name: &str| {
        rendered
            .iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{kind} {name} is not rendered"))
    };
    let ca_from = "cronjob-operator-system/cronjob-operator-serving-cert";
    for (kind, name) in [
        (
            "MutatingWebhookConfiguration",
            "cronjob-operator-mutating-webhook-configuration",
        ),
        (
            "ValidatingWebhookConfiguration",
            "cronjob-operator-validating-webhook-configuration",
        ),
        (
            "CustomResourceDefinition",
            "cronjobs.batch.tutorial.kubebuilder.io",
        ),
    ] {
        let doc = find(kind, name);
        assert_eq!(
            doc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"], ca_from,
            "{kind}"
        );
    }
    // Every webhook and the conversion reach the operator's Service.
    let service = serde_json::json!({
        "name": "cronjob-operator-webhook-service",
        "namespace": "cronjob-operator-system",
    });
    let crd = find(
        "CustomResourceDefinition",
        "cronjobs.batch.tutorial.kubebuilder.io",
    );
    let conversion = &crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"];
    assert_eq!(conversion["name"], service["name"]);
    assert_eq!(conversion["namespace"], service["namespace"]);
    assert_eq!(conversion["path"], "/convert");
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        for doc in rendered.iter().filter(|d| d["kind"] == kind) {
            for webhook in doc["webhooks"].as_array().expect("webhooks") {
                let target = &webhook["clientConfig"]["service"];
                assert_eq!(target["name"], service["name"], "{}", webhook["name"]);
                assert_eq!(target["namespace"], service["namespace"]);
                assert_eq!(webhook["matchPolicy"], "Exact");
            }
        }
    }
    // The certificate names that Service; the Deployment mounts its secret.
    let certificate = find("Certificate", "cronjob-operator-serving-cert");
    assert_eq!(
        certificate["spec"]["dnsNames"],
        serde_json::json!([
            "cronjob-operator-webhook-service.cronjob-operator-system.svc",
            "cronjob-operator-webhook-service.cronjob-operator-system.svc.cluster.local",
        ])
    );
    let deployment = find("Deployment", "cronjob-operator-controller-manager");
    let volumes = &deployment["spec"]["template"]["spec"]["volumes"];
    assert!(
        volumes
            .as_array()
            .into_iter()
            .flatten()
            .any(|v| v["secret"]["secretName"] == certificate["spec"]["secretName"]),
        "{volumes}"
    );
}
