//! `kubeforge init` to a green `cargo test`, and on to a cluster: a
//! project with two kinds (one namespaced with two versions, one
//! cluster-scoped, in two groups) and webhooks (a defaulter and a
//! validator for the first version of the namespaced kind, and its
//! conversion from the second version) is scaffolded in a temporary
//! directory, built and tested as written, its manifests generated (the
//! CRD files are the derive's CRDs, with the conversion stanza) and
//! checked (`generate --check` passes, then fails once a field is added),
//! rendered by `kubectl kustomize` (webhook Service, cert-manager
//! certificate and CA injection renamed as deployed) and applied to the
//! dev server, where every object is created; the operator then runs
//! `--embedded`, `kubectl get` shows its samples reconciled, and kubectl
//! meets its webhooks: a create defaulted with the defaulter's warning
//! printed, a create denied with the validator's message, an object
//! written at v2 read at v1 and back unchanged.
//!
//! The generated project is its own workspace with a path dependency on
//! this checkout; its builds share this workspace's target directory (the
//! `.cargo/config.toml` that `init` writes names it), so they reuse the
//! registry crates built there. kubeforge, kubeforge-apiserver and
//! kubeforge-macros are built once more for a project outside the
//! workspace (cargo names a path package's artifacts by its path relative
//! to the workspace root inside it, by its absolute path outside), and the
//! project is built exactly as `init` writes it, with no setting of its
//! own: so what this test builds is what every later project depending on
//! this checkout reuses, such as the README's first one. The test prints
//! what the nested build compiled.

mod project;

use std::time::Instant;

use kubeforge_e2e::{kubeforge_binary, target_dir};
use project::{documents, kubectl, kubectl_until, show, start, terminate, Project};

/// cert-manager's Certificate and Issuer kinds (their schemas left open),
/// for the dev server to take the rendered certificate and issuer.
const CERT_MANAGER_CRDS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: certificates.cert-manager.io
spec:
  group: cert-manager.io
  names: {kind: Certificate, listKind: CertificateList, plural: certificates, singular: certificate}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: issuers.cert-manager.io
spec:
  group: cert-manager.io
  names: {kind: Issuer, listKind: IssuerList, plural: issuers, singular: issuer}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

/// A test the e2e adds to the generated project: the generated CRD files
/// parse to exactly what the derive builds for each kind.
const CRD_FILES_TEST: &str = r#"
use kubeforge::crd::yaml::from_yaml;
use kubeforge::crd::{combine, CustomResource};
use shop_operator::api::infra::v1alpha1::Cluster;
use shop_operator::api::webapp::{v1, v2};

fn file(name: &str) -> kubeforge::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    let text = std::fs::read_to_string(format!("config/crd/bases/{name}")).expect(name);
    from_yaml(&text).expect(name)
}

#[test]
fn the_crd_files_are_the_derives() {
    let guestbooks = combine(&[v1::Guestbook::DESCRIPTOR, v2::Guestbook::DESCRIPTOR]).unwrap();
    assert_eq!(guestbooks.spec.versions.len(), 2);
    // The derive's CRD, converted by the operator's webhook.
    let mut written = file("webapp.example.com_guestbooks.yaml");
    let conversion = written.spec.conversion.take().expect("a conversion stanza");
    assert_eq!(conversion.strategy, "Webhook");
    let service = conversion.webhook.and_then(|w| w.client_config).and_then(|c| c.service).expect("a Service");
    assert_eq!((service.name.as_str(), service.path.as_deref()), ("webhook-service", Some("/convert")));
    let annotations = written.metadata.annotations.take().expect("annotations");
    assert_eq!(annotations["cert-manager.io/inject-ca-from"], "system/serving-cert");
    assert_eq!(written, guestbooks);
    assert_eq!(file("infra.example.com_clusters.yaml"), Cluster::try_crd().unwrap());
}
"#;

#[test]
fn init_create_api_build_test_generate_deploy_and_run() {
    let kubeforge = kubeforge_binary();
    let tmp = tempfile::tempdir().expect("temp dir");
    let project = Project {
        dir: tmp.path().join("shop-operator"),
        _tmp: tmp,
        kubeforge,
    };
    let started = Instant::now();
    // An empty directory (as `git init` leaves it) is fine to init in.
    std::fs::create_dir_all(project.dir.join(".git")).expect("project dir");

    // init, then two kinds: namespaced in webapp (two versions),
    // cluster-scoped in infra.
    let out = project.run(
        &project.kubeforge,
        &[
            "init",
            &project.dir.to_string_lossy(),
            "--domain",
            "example.com",
            "--owner",
            "The Shop Authors",
        ],
    );
    assert!(out.status.success(), "{}", show(&out));
    for (group, version, kind, scope) in [
        ("webapp", "v1", "Guestbook", "--namespaced=true"),
        ("webapp", "v2", "Guestbook", "--namespaced=true"),
        ("infra", "v1alpha1", "Cluster", "--namespaced=false"),
    ] {
        let args = [
            "create",
            "api",
            "--group",
            group,
            "--version",
            version,
            "--kind",
            kind,
            scope,
        ];
        let out = project.kubeforge(&args);
        assert!(out.status.success(), "{args:?}: {}", show(&out));
    }
    // Webhooks for the Guestbook, one type a call as a project grows them:
    // a defaulter at v1, a validator spliced into its module, then
    // conversions of v2 through v1 (the hub).
    for flags in [
        &["--defaulting"][..],
        &["--validation"][..],
        &["--conversion", "--spoke", "v2"][..],
    ] {
        let mut args = vec![
            "create",
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ];
        args.extend_from_slice(flags);
        let out = project.kubeforge(&args);
        assert!(out.status.success(), "{args:?}: {}", show(&out));
    }
    let record = project.read("kubeforge.toml");
    assert!(record.contains("kind = \"Guestbook\"") && record.contains("namespaced = false"));
    assert!(
        record.contains("[resource.webhooks]\ndefaulting = true\nvalidation = true\nconversion = true\nspoke = [\"v2\"]"),
        "{record}"
    );

    // Formatted as rustfmt formats it, and built and tested as written.
    project.cargo(&["fmt", "--check"]);
    let build = Instant::now();
    let messages = project.cargo(&["build", "--message-format=json-render-diagnostics"]);
    let compiled: Vec<String> = messages
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["fresh"] == false)
        .filter_map(|m| m["target"]["name"].as_str().map(str::to_owned))
        .collect();
    eprintln!(
        "cargo build of the generated project: {:?}, compiled {} crates: {}",
        build.elapsed(),
        compiled.len(),
        compiled.join(", ")
    );
    let test = Instant::now();
    let out = project.cargo(&["test", "--quiet"]);
    eprintln!("cargo test of the generated project: {:?}", test.elapsed());
    let passed: usize = out
        .lines()
        .filter_map(|l| l.strip_prefix("test result: ok. "))
        .filter_map(|l| l.split(' ').next()?.parse::<usize>().ok())
        .sum();
    assert!(
        passed >= 7 && !out.contains("FAILED"),
        "both controller tests, the defaulter's and the validator's tests, the conversion test, the manifests test and the RBAC test ran:\n{out}"
    );
    eprintln!("init -> green cargo test: {:?}", started.elapsed());

    // generate: the CRDs and RBAC, from the code.
    let out = project.kubeforge(&["generate"]);
    assert!(out.status.success(), "{}", show(&out));
    for file in [
        "config/crd/bases/webapp.example.com_guestbooks.yaml",
        "config/crd/bases/infra.example.com_clusters.yaml",
        "config/rbac/role.yaml",
        "config/rbac/role_binding.yaml",
        "config/rbac/leader_election_role.yaml",
        "config/rbac/leader_election_role_binding.yaml",
        "config/webhook/manifests.yaml",
    ] {
        assert!(project.path(file).is_file(), "{file} was not written");
    }
    let role = &documents(&project.read("config/rbac/role.yaml"))[0];
    assert_eq!(role["kind"], "ClusterRole");
    let rules = role["rules"].to_string();
    for grant in ["guestbooks/status", "clusters/status", "events.k8s.io"] {
        assert!(rules.contains(grant), "{grant} not granted: {rules}");
    }
    // The scaffolded controllers own nothing: no owner references to block
    // deletion through, so no `/finalizers` rule.
    assert!(!rules.contains("finalizers"), "{rules}");
    project.write("tests/crd_files.rs", CRD_FILES_TEST);
    project.cargo(&["test", "--quiet", "--test", "crd_files"]);

    // --check passes on fresh manifests and fails, naming the file, once
    // the code has moved on.
    let out = project.kubeforge(&["generate", "--check"]);
    assert!(out.status.success(), "{}", show(&out));
    // (The Cluster: a field added to a Guestbook version must be converted
    // too, and the compiler says so in its conversion.)
    let types = "src/api/infra/v1alpha1/cluster.rs";
    let original = project.read(types);
    let changed = original.replacen(
        "pub foo: Option<String>,",
        "pub foo: Option<String>,\n\n    /// How many replicas.\n    #[serde(default)]\n    pub replicas: i32,",
        1,
    );
    assert_ne!(
        changed, original,
        "the example field is where it was written"
    );
    project.write(types, &changed);
    let out = project.kubeforge(&["generate", "--check"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", show(&out));
    assert!(
        stderr.contains("config/crd/bases/infra.example.com_clusters.yaml differs"),
        "{stderr}"
    );
    assert!(!stderr.contains("guestbooks.yaml"), "{stderr}");

    // A project that does not compile gets the compiler's message.
    project.write(
        types,
        &format!("{changed}\nfn broken() -> u32 {{ \"no\" }}\n"),
    );
    let out = project.kubeforge(&["generate"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("error[E0308]: mismatched types"),
        "{stderr}"
    );
    assert!(stderr.contains("the project does not build"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    project.write(types, &changed);
    let out = project.kubeforge(&["generate"]);
    assert!(out.status.success(), "{}", show(&out));
    let crd = project.read("config/crd/bases/infra.example.com_clusters.yaml");
    assert!(crd.contains("replicas:"), "the new field is in the CRD");

    // kustomize renders the operator; the dev server takes all of it.
    let rendered = project.ok("kubectl", &["kustomize", "config/default"]);
    let objects: Vec<(String, String)> = documents(&rendered)
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
    for expected in [
        ("Namespace", "shop-operator-system"),
        ("CustomResourceDefinition", "guestbooks.webapp.example.com"),
        ("CustomResourceDefinition", "clusters.infra.example.com"),
        ("ClusterRole", "shop-operator-manager-role"),
        ("ClusterRoleBinding", "shop-operator-manager-rolebinding"),
        ("Role", "shop-operator-leader-election-role"),
        ("ClusterRole", "shop-operator-webapp-guestbook-editor-role"),
        ("Deployment", "shop-operator-controller-manager"),
        (
            "Service",
            "shop-operator-controller-manager-metrics-service",
        ),
        ("Service", "shop-operator-webhook-service"),
        ("Certificate", "shop-operator-serving-cert"),
        ("Issuer", "shop-operator-selfsigned-issuer"),
        (
            "MutatingWebhookConfiguration",
            "shop-operator-mutating-webhook-configuration",
        ),
        (
            "ValidatingWebhookConfiguration",
            "shop-operator-validating-webhook-configuration",
        ),
    ] {
        assert!(
            objects.contains(&(expected.0.to_owned(), expected.1.to_owned())),
            "{expected:?} not rendered: {objects:?}"
        );
    }
    // What calls the webhooks names the renamed Service, and cert-manager
    // injects the renamed certificate's CA into it; the certificate is
    // for the renamed Service.
    let rendered = documents(&rendered);
    let find = |kind: &str, name: &str| {
        rendered
            .iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    };
    let ca_from = "shop-operator-system/shop-operator-serving-cert";
    let service = serde_json::json!({"name": "shop-operator-webhook-service", "namespace": "shop-operator-system"});
    let crd = find("CustomResourceDefinition", "guestbooks.webapp.example.com");
    assert_eq!(
        crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        ca_from
    );
    let convert = &crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"];
    assert_eq!(
        (&convert["name"], &convert["namespace"]),
        (&service["name"], &service["namespace"])
    );
    for (kind, name) in [
        (
            "MutatingWebhookConfiguration",
            "shop-operator-mutating-webhook-configuration",
        ),
        (
            "ValidatingWebhookConfiguration",
            "shop-operator-validating-webhook-configuration",
        ),
    ] {
        let config = find(kind, name);
        assert_eq!(
            config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            ca_from
        );
        let called = &config["webhooks"][0]["clientConfig"]["service"];
        assert_eq!(
            (&called["name"], &called["namespace"]),
            (&service["name"], &service["namespace"])
        );
    }
    assert_eq!(
        find("Certificate", "shop-operator-serving-cert")["spec"]["dnsNames"],
        serde_json::json!([
            "shop-operator-webhook-service.shop-operator-system.svc",
            "shop-operator-webhook-service.shop-operator-system.svc.cluster.local"
        ])
    );
    let deployment = find("Deployment", "shop-operator-controller-manager").to_string();
    assert!(
        deployment.contains("\"containerPort\":9443")
            && deployment.contains("\"secretName\":\"webhook-server-cert\""),
        "{deployment}"
    );

    let kubeconfig = project.path("dev.kubeconfig");
    let mut dev_server = project.command(&project.kubeforge);
    dev_server
        .args([
            "dev-server",
            "--listen",
            "127.0.0.1:0",
            "--write-kubeconfig",
        ])
        .arg(&kubeconfig);
    let (mut server, _) = start(dev_server, "kubeconfig written");
    // cert-manager's kinds, as the cluster would have them installed.
    let cert_manager = project.path("cert-manager-crds.yaml");
    std::fs::write(&cert_manager, CERT_MANAGER_CRDS).expect("cert-manager CRDs");
    let out = kubectl(
        &kubeconfig,
        &["apply", "-f", &cert_manager.to_string_lossy()],
    );
    assert!(out.status.success(), "{}", show(&out));
    let out = kubectl(
        &kubeconfig,
        &[
            "apply",
            "-k",
            &project.path("config/default").to_string_lossy(),
        ],
    );
    let applied = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", show(&out));
    for (kind, name) in &objects {
        let line = applied
            .lines()
            .find(|l| {
                l.split_once('/').is_some_and(|(k, n)| {
                    k.split('.').next() == Some(kind.to_ascii_lowercase().as_str())
                        && n.split_whitespace().next() == Some(name.as_str())
                })
            })
            .unwrap_or_else(|| panic!("{kind} {name} not applied:\n{applied}"));
        assert!(line.ends_with(" created"), "{line}");
    }
    assert_eq!(applied.lines().count(), objects.len(), "{applied}");
    assert!(terminate(&mut server).success());

    // The operator itself, embedded: kubectl sees its samples reconciled.
    let binary = target_dir().join("debug").join("shop-operator");
    let kubeconfig = project.path("embedded.kubeconfig");
    let mut operator = project.command(&binary);
    operator
        .args([
            "--embedded",
            "--listen",
            "127.0.0.1:0",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
            "--write-kubeconfig",
        ])
        .arg(&kubeconfig);
    let (mut operator, banner) = start(operator, "get events");
    assert!(
        banner.contains("sample created: Guestbook default/guestbook-sample"),
        "{banner}"
    );
    assert!(
        banner.contains("sample created: Cluster cluster-sample"),
        "{banner}"
    );
    let ready = "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}";
    kubectl_until(
        &kubeconfig,
        &["get", "guestbook", "guestbook-sample", "-o", ready],
        "True",
    );
    kubectl_until(
        &kubeconfig,
        &["get", "cluster", "cluster-sample", "-o", ready],
        "True",
    );
    let table = kubectl(&kubeconfig, &["get", "guestbooks"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("READY") && table.contains("True"), "{table}");

    // kubectl meets the operator's webhooks. Defaulted, with the
    // defaulter's warning printed.
    let create = |yaml: &str| {
        let file = project.path("guestbook.yaml");
        std::fs::write(&file, yaml).expect("manifest");
        kubectl(&kubeconfig, &["create", "-f", &file.to_string_lossy()])
    };
    let out = create(
        "apiVersion: webapp.example.com/v1\nkind: Guestbook\nmetadata:\n  name: plain\nspec: {}\n",
    );
    assert!(out.status.success(), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Warning: spec.foo was not set: defaulted to \"default\""),
        "{stderr}"
    );
    kubectl_until(
        &kubeconfig,
        &["get", "guestbook", "plain", "-o", "jsonpath={.spec.foo}"],
        "default",
    );
    // Denied, with the validator's message.
    let out = create(
        "apiVersion: webapp.example.com/v1\nkind: Guestbook\nmetadata:\n  name: bad\nspec:\n  foo: Not Valid\n",
    );
    assert!(!out.status.success(), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "spec.foo: Invalid value: \"Not Valid\": must be lowercase letters, digits and '-'"
        ),
        "{stderr}"
    );
    // Written at v2, read at v1 (the stored version) and back unchanged.
    let out = create(
        "apiVersion: webapp.example.com/v2\nkind: Guestbook\nmetadata:\n  name: second\nspec:\n  foo: from-v2\n",
    );
    assert!(out.status.success(), "{}", show(&out));
    let at = |version: &str| {
        let resource = format!("guestbooks.{version}.webapp.example.com");
        let out = kubectl(
            &kubeconfig,
            &[
                "get",
                &resource,
                "second",
                "-o",
                "jsonpath={.apiVersion} {.spec}",
            ],
        );
        assert!(out.status.success(), "{}", show(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(at("v1"), "webapp.example.com/v1 {\"foo\":\"from-v2\"}");
    assert_eq!(at("v2"), "webapp.example.com/v2 {\"foo\":\"from-v2\"}");
    assert!(terminate(&mut operator).success());
    eprintln!("init -> deployed and run: {:?}", started.elapsed());
}
