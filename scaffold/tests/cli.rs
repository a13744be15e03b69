//! The `kubeforge` command's refusals: each bad input is named with the
//! Kubernetes rule it breaks and a valid example, a command run outside a
//! project says what is missing, and a command that fails writes nothing;
//! and what the commands write: init's layout and options, kinds with and
//! without controllers, files the CLI owns and files it never touches.
//! (The projects these commands write are built and run by the end-to-end
//! test in `tests/tests/scaffold.rs`.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kubeforge(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubeforge"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("kubeforge runs")
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = kubeforge(dir, args);
    assert!(
        out.status.success(),
        "{args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a command that must fail; returns its stderr.
fn fails(dir: &Path, args: &[&str]) -> String {
    let out = kubeforge(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} succeeded");
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// Every file under `dir` with its contents.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let relative = path.strip_prefix(base).expect("inside").to_owned();
                out.insert(relative, std::fs::read(&path).expect("file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// A fresh project (no build needed) in a temporary directory.
fn project() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("shop-operator");
    ok(
        tmp.path(),
        &["init", "shop-operator", "--domain", "example.com"],
    );
    (tmp, dir)
}

fn create_api(group: &str, version: &str, kind: &str) -> Vec<String> {
    [
        "create",
        "api",
        "--group",
        group,
        "--version",
        version,
        "--kind",
        kind,
    ]
    .map(str::to_owned)
    .to_vec()
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn commands_outside_a_project_name_the_record_and_how_to_start_one() {
    let tmp = tempfile::tempdir().expect("temp dir");
    for command in [
        args(&create_api("webapp", "v1", "Guestbook")),
        vec!["generate"],
        vec!["generate", "--check"],
    ] {
        let stderr = fails(tmp.path(), &command);
        assert!(stderr.contains("no kubeforge.toml in"), "{stderr}");
        assert!(stderr.contains("kubeforge init"), "{stderr}");
    }
    assert!(snapshot(tmp.path()).is_empty(), "nothing written");
}

#[test]
fn init_refuses_a_directory_that_is_not_empty_unless_forced() {
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::write(tmp.path().join("notes.txt"), "mine").expect("write");
    let stderr = fails(tmp.path(), &["init", "--project-name", "shop"]);
    assert!(stderr.contains("is not empty (notes.txt)"), "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    assert_eq!(snapshot(tmp.path()).len(), 1, "nothing written");

    ok(tmp.path(), &["init", "--project-name", "shop", "--force"]);
    let files = snapshot(tmp.path());
    assert_eq!(files[Path::new("notes.txt")], b"mine");
    assert!(files.contains_key(Path::new("kubeforge.toml")));
    assert!(files.contains_key(Path::new("config/manager/manager.yaml")));
    // A project is initialized once.
    let stderr = fails(tmp.path(), &["init", "--project-name", "shop", "--force"]);
    assert!(stderr.contains("kubeforge create api"), "{stderr}");
}

#[test]
fn init_names_the_rule_a_bad_project_name_or_domain_breaks() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let stderr = fails(tmp.path(), &["init", "Shop_Operator"]);
    assert!(
        stderr.contains("invalid project name \"Shop_Operator\"")
            && stderr.contains("DNS-1123 label")
            && stderr.contains("'S' is not a lowercase letter")
            && stderr.contains("directory's name; pass --project-name")
            && stderr.contains("for example \"guestbook-operator\""),
        "{stderr}"
    );
    let stderr = fails(tmp.path(), &["init", "shop", "--domain", "my_domain.com"]);
    assert!(
        stderr.contains("invalid domain \"my_domain.com\"")
            && stderr.contains("DNS-1123 subdomain")
            && stderr.contains("for example \"my.domain\""),
        "{stderr}"
    );
    assert!(snapshot(tmp.path()).is_empty(), "nothing written");
}

#[test]
fn bad_groups_versions_kinds_and_plurals_are_named_with_their_rule_and_an_example() {
    let (_tmp, dir) = project();
    let before = snapshot(&dir);
    let cases: [(Vec<String>, &[&str]); 7] = [
        (
            create_api("Web_App", "v1", "Guestbook"),
            &[
                "invalid group \"Web_App\"",
                "DNS-1123 subdomain",
                "for example \"webapp\"",
            ],
        ),
        (
            create_api("webapp", "1", "Guestbook"),
            &[
                "invalid version \"1\"",
                "'v' and a number",
                "for example \"v1alpha1\"",
            ],
        ),
        (
            create_api("webapp", "v1gamma1", "Guestbook"),
            &["'alpha' or 'beta'", "for example \"v1alpha1\""],
        ),
        (
            create_api("webapp", "v1", "guestbook"),
            &[
                "invalid kind \"guestbook\"",
                "UpperCamelCase",
                "for example \"CronJob\"",
            ],
        ),
        (
            create_api("webapp", "v1", "Guest-Book"),
            &["UpperCamelCase", "for example \"CronJob\""],
        ),
        (
            create_api("webapp", "v1", "Context"),
            &["invalid kind \"Context\"", "for example \"CronJob\""],
        ),
        (
            [
                create_api("webapp", "v1", "Guestbook"),
                vec!["--plural".into(), "Guestbooks".into()],
            ]
            .concat(),
            &[
                "invalid plural \"Guestbooks\"",
                "DNS-1035 label",
                "for example \"cronjobs\"",
            ],
        ),
    ];
    for (command, expected) in cases {
        let stderr = fails(&dir, &args(&command));
        for text in expected {
            assert!(
                stderr.contains(text),
                "{command:?}: {text:?} missing from {stderr}"
            );
        }
    }
    assert_eq!(snapshot(&dir), before, "nothing written");
}

#[test]
fn a_kind_is_created_once_per_version_and_more_versions_and_groups_work() {
    let (_tmp, dir) = project();
    ok(&dir, &args(&create_api("webapp", "v1", "Guestbook")));
    let types = dir.join("src/api/webapp/v1/guestbook.rs");
    assert!(std::fs::read_to_string(&types)
        .expect("types")
        .contains("    storage,\n"));

    // The same kind and version again: refused, nothing written.
    let before = snapshot(&dir);
    let stderr = fails(&dir, &args(&create_api("webapp", "v1", "Guestbook")));
    assert!(
        stderr.contains("webapp.example.com/v1 Guestbook exists already"),
        "{stderr}"
    );
    // A second version must keep the kind's scope and plural.
    let mut cluster = create_api("webapp", "v2", "Guestbook");
    cluster.push("--namespaced=false".into());
    let stderr = fails(&dir, &args(&cluster));
    assert!(
        stderr.contains("every version of a kind shares them"),
        "{stderr}"
    );
    // One controller serves every version.
    let mut second_controller = create_api("webapp", "v2", "Guestbook");
    second_controller.push("--controller=true".into());
    let stderr = fails(&dir, &args(&second_controller));
    assert!(stderr.contains("has a controller already"), "{stderr}");
    // A controller for a kind the project does not define.
    let mut controller_only = create_api("webapp", "v1", "Shelf");
    controller_only.push("--resource=false".into());
    let stderr = fails(&dir, &args(&controller_only));
    assert!(stderr.contains("is not a kind of this project"), "{stderr}");
    assert_eq!(snapshot(&dir), before, "nothing written");

    // Another version: types and sample, no controller, not the storage version.
    let out = ok(&dir, &args(&create_api("webapp", "v2", "Guestbook")));
    assert!(out.contains("src/api/webapp/v2/guestbook.rs"), "{out}");
    assert!(
        !out.contains("src/controllers/webapp/guestbook.rs"),
        "{out}"
    );
    let v2 = std::fs::read_to_string(dir.join("src/api/webapp/v2/guestbook.rs")).expect("v2");
    assert!(!v2.contains("storage"), "{v2}");
    // Another group, the same kind name: its own modules and files.
    ok(&dir, &args(&create_api("library", "v1beta1", "Guestbook")));
    let record = std::fs::read_to_string(dir.join("kubeforge.toml")).expect("record");
    assert_eq!(record.matches("[[resource]]").count(), 3, "{record}");
    let registry = std::fs::read_to_string(dir.join("src/api/mod.rs")).expect("registry");
    for kind in [
        "webapp::v1::Guestbook",
        "webapp::v2::Guestbook",
        "library::v1beta1::Guestbook",
    ] {
        assert!(
            registry.contains(kind),
            "{kind} not registered:\n{registry}"
        );
    }
    let controllers =
        std::fs::read_to_string(dir.join("src/controllers/mod.rs")).expect("registry");
    assert!(
        controllers.contains("webapp::guestbook::register(mgr)?"),
        "{controllers}"
    );
    assert!(
        controllers.contains("library::guestbook::register(mgr)?"),
        "{controllers}"
    );
    let crds = std::fs::read_to_string(dir.join("config/crd/kustomization.yaml")).expect("crds");
    assert_eq!(
        crds.matches("guestbooks.yaml").count(),
        2,
        "one CRD per kind:\n{crds}"
    );
    assert!(dir
        .join("config/rbac/library_guestbook_viewer_role.yaml")
        .is_file());
}

#[test]
fn user_files_are_never_overwritten() {
    let (_tmp, dir) = project();
    let mine = dir.join("src/controllers/webapp/guestbook.rs");
    std::fs::create_dir_all(mine.parent().expect("parent")).expect("dir");
    std::fs::write(&mine, "// mine\n").expect("write");
    let before = snapshot(&dir);
    let stderr = fails(&dir, &args(&create_api("webapp", "v1", "Guestbook")));
    assert!(
        stderr.contains("a file already exists: src/controllers/webapp/guestbook.rs"),
        "{stderr}"
    );
    assert_eq!(snapshot(&dir), before, "nothing written");
}

#[test]
fn a_block_whose_markers_were_removed_stops_create_api_before_any_write() {
    let (_tmp, dir) = project();
    let kustomization = dir.join("config/samples/kustomization.yaml");
    let text = std::fs::read_to_string(&kustomization).expect("kustomization");
    let edited: String = text
        .lines()
        .filter(|l| !l.starts_with("# +kubeforge:end:"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&kustomization, edited).expect("write");
    let before = snapshot(&dir);
    let stderr = fails(&dir, &args(&create_api("webapp", "v1", "Guestbook")));
    assert!(
        stderr.contains("config/samples/kustomization.yaml: the end marker is missing"),
        "{stderr}"
    );
    assert!(stderr.contains("# +kubeforge:end:samples"), "{stderr}");
    assert_eq!(snapshot(&dir), before, "nothing written");
}

#[test]
fn user_edits_outside_the_marked_blocks_survive() {
    let (_tmp, dir) = project();
    let kustomization = dir.join("config/rbac/kustomization.yaml");
    let text = std::fs::read_to_string(&kustomization).expect("kustomization");
    std::fs::write(&kustomization, format!("{text}- my_extra_role.yaml\n")).expect("write");
    ok(&dir, &args(&create_api("webapp", "v1", "Guestbook")));
    let text = std::fs::read_to_string(&kustomization).expect("kustomization");
    assert!(text.ends_with("- my_extra_role.yaml\n"), "{text}");
    assert!(
        text.contains("- webapp_guestbook_admin_role.yaml\n"),
        "{text}"
    );
}

fn text(files: &BTreeMap<PathBuf, Vec<u8>>, path: &str) -> String {
    let bytes = files
        .get(Path::new(path))
        .unwrap_or_else(|| panic!("{path} was not written"));
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn init_writes_kubebuilders_layout_with_the_options_given() {
    let tmp = tempfile::tempdir().expect("temp dir");
    ok(
        tmp.path(),
        &[
            "init",
            "shop",
            "--domain",
            "example.com",
            "--license",
            "none",
            "--kubeforge-version",
            "0.1.0",
        ],
    );
    let files = snapshot(&tmp.path().join("shop"));
    for path in [
        "kubeforge.toml",
        "Cargo.toml",
        "Dockerfile",
        ".dockerignore",
        ".gitignore",
        ".github/workflows/ci.yml",
        "README.md",
        "src/main.rs",
        "src/lib.rs",
        "src/api/mod.rs",
        "src/controllers/mod.rs",
        "tests/manifests.rs",
        "tests/rbac.rs",
        "config/default/kustomization.yaml",
        "config/manager/manager.yaml",
        "config/rbac/kustomization.yaml",
        "config/rbac/service_account.yaml",
        "config/crd/kustomization.yaml",
        "config/samples/kustomization.yaml",
        "config/prometheus/monitor.yaml",
        "config/network-policy/allow-metrics-traffic.yaml",
    ] {
        assert!(
            files.contains_key(Path::new(path)),
            "{path} was not written"
        );
    }
    // kubeforge from the registry: no path, no copied lock file.
    let cargo = text(&files, "Cargo.toml");
    assert!(
        cargo.contains("kubeforge = { version = \"0.1.0\" }"),
        "{cargo}"
    );
    assert!(!cargo.contains("kubeforge = { path ="), "{cargo}");
    assert!(!files.contains_key(Path::new("Cargo.lock")));
    assert!(!files.contains_key(Path::new(".cargo/config.toml")));
    let record = text(&files, "kubeforge.toml");
    assert!(record.contains("version = \"0.1.0\""), "{record}");
    assert!(record.contains("domain = \"example.com\""), "{record}");
    // --license none: no header, no license field.
    assert!(!cargo.contains("license ="), "{cargo}");
    assert!(text(&files, "src/main.rs").starts_with("//! "));
    // The manager is hardened as kubebuilder's is.
    let manager = text(&files, "config/manager/manager.yaml");
    for setting in [
        "runAsNonRoot: true",
        "readOnlyRootFilesystem: true",
        "- ALL",
        "--health-probe-bind-address=:8081",
        "requests:",
    ] {
        assert!(manager.contains(setting), "{setting} missing:\n{manager}");
    }
    let dockerfile = text(&files, "Dockerfile");
    let stages = dockerfile
        .lines()
        .filter(|l| l.starts_with("FROM "))
        .count();
    assert_eq!(
        stages, 2,
        "a build stage and a runtime stage:\n{dockerfile}"
    );
    assert!(dockerfile.contains("USER 65532:65532"), "{dockerfile}");

    // The default: the Apache header with the owner, and kubeforge by path
    // from this checkout, with its lock file.
    let tmp = tempfile::tempdir().expect("temp dir");
    ok(tmp.path(), &["init", "shop", "--owner", "The Shop Authors"]);
    let files = snapshot(&tmp.path().join("shop"));
    let main = text(&files, "src/main.rs");
    assert!(main.starts_with("// Copyright "), "{main}");
    assert!(main.contains("The Shop Authors."), "{main}");
    assert!(main.contains("Apache License, Version 2.0"), "{main}");
    let cargo = text(&files, "Cargo.toml");
    assert!(cargo.contains("license = \"Apache-2.0\""), "{cargo}");
    assert!(cargo.contains("kubeforge = { path = "), "{cargo}");
    assert!(files.contains_key(Path::new("Cargo.lock")));
    // ... and the checkout's target directory (the one this kubeforge was
    // built in), so the first build reuses what was built there.
    let target = Path::new(env!("CARGO_BIN_EXE_kubeforge"))
        .parent()
        .and_then(Path::parent)
        .expect("the target directory");
    let config: toml::Table = text(&files, ".cargo/config.toml")
        .parse()
        .expect("a TOML config");
    assert_eq!(
        config["build"]["target-dir"].as_str(),
        Some(&*target.to_string_lossy()),
        "{config}"
    );
}

#[test]
fn a_kind_without_a_controller_gets_one_later_with_resource_false() {
    let (_tmp, dir) = project();
    let mut types_only = create_api("webapp", "v1", "Shelf");
    types_only.push("--controller=false".into());
    let out = ok(&dir, &args(&types_only));
    assert!(out.contains("src/api/webapp/v1/shelf.rs"), "{out}");
    assert!(!dir.join("src/controllers/webapp/shelf.rs").exists());
    let record = std::fs::read_to_string(dir.join("kubeforge.toml")).expect("record");
    assert!(record.contains("controller = false"), "{record}");
    let registry = std::fs::read_to_string(dir.join("src/controllers/mod.rs")).expect("registry");
    assert!(!registry.contains("shelf"), "{registry}");

    // Asking for nothing new is refused.
    let mut nothing = types_only.clone();
    nothing.push("--resource=false".into());
    let before = snapshot(&dir);
    let stderr = fails(&dir, &args(&nothing));
    assert!(
        stderr.contains("--controller=false asks for nothing else"),
        "{stderr}"
    );
    assert_eq!(snapshot(&dir), before, "nothing written");

    // The controller alone, for the kind that exists: the types stay.
    let types = std::fs::read(dir.join("src/api/webapp/v1/shelf.rs")).expect("types");
    let mut controller_only = create_api("webapp", "v1", "Shelf");
    controller_only.push("--resource=false".into());
    let out = ok(&dir, &args(&controller_only));
    assert!(out.contains("src/controllers/webapp/shelf.rs"), "{out}");
    assert_eq!(
        std::fs::read(dir.join("src/api/webapp/v1/shelf.rs")).expect("types"),
        types
    );
    let record = std::fs::read_to_string(dir.join("kubeforge.toml")).expect("record");
    assert!(record.contains("controller = true"), "{record}");
    let registry = std::fs::read_to_string(dir.join("src/controllers/mod.rs")).expect("registry");
    assert!(
        registry.contains("webapp::shelf::register(mgr)?"),
        "{registry}"
    );
}

fn create_webhook(version: &str, flags: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "create",
        "webhook",
        "--group",
        "webapp",
        "--version",
        version,
        "--kind",
        "Guestbook",
    ]
    .map(str::to_owned)
    .to_vec();
    v.extend(flags.iter().map(|f| (*f).to_owned()));
    v
}

#[test]
fn create_webhook_refuses_bad_arguments_with_the_rule_and_an_example() {
    let (_tmp, dir) = project();
    // The kind does not exist yet.
    let stderr = fails(&dir, &args(&create_webhook("v1", &["--defaulting"])));
    assert!(
        stderr.contains("webapp.example.com/v1 Guestbook is not a kind of this project")
            && stderr
                .contains("`kubeforge create api --group webapp --version v1 --kind Guestbook`"),
        "{stderr}"
    );
    ok(&dir, &args(&create_api("webapp", "v1", "Guestbook")));
    let before = snapshot(&dir);
    for (flags, expected) in [
        (
            vec![],
            "no webhook asked for: pass --defaulting, --validation or --conversion with --spoke (for example `kubeforge create webhook --group webapp --version v1 --kind Guestbook --defaulting --validation`)",
        ),
        (
            vec!["--spoke", "v2"],
            "--spoke names a version converted through this one, so it needs --conversion (for example `kubeforge create webhook --group webapp --version v1 --kind Guestbook --conversion --spoke v2`)",
        ),
        (
            vec!["--conversion"],
            "name them with --spoke (for example",
        ),
        (
            vec!["--conversion", "--spoke", "v1"],
            "--spoke v1 is the hub itself",
        ),
        (
            vec!["--conversion", "--spoke", "v2"],
            "--spoke v2: webapp.example.com/v2 Guestbook is not a version of this project (kubeforge.toml); create it first with `kubeforge create api --group webapp --version v2 --kind Guestbook`",
        ),
        (
            vec!["--conversion", "--spoke", "2"],
            "invalid version \"2\"",
        ),
    ] {
        let stderr = fails(&dir, &args(&create_webhook("v1", &flags)));
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
    }
    assert_eq!(snapshot(&dir), before, "nothing written");
}

#[test]
fn create_webhook_writes_the_webhooks_registries_record_and_kustomize_pieces() {
    let (_tmp, dir) = project();
    ok(&dir, &args(&create_api("webapp", "v1", "Guestbook")));
    ok(&dir, &args(&create_api("webapp", "v2", "Guestbook")));
    let read = |path: &str| {
        std::fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let registry = read("src/webhooks/mod.rs");
    assert!(
        registry.contains("    app\n}"),
        "no webhooks yet: {registry}"
    );
    let before = snapshot(&dir);

    let out = ok(&dir, &args(&create_webhook("v1", &["--defaulting"])));
    assert!(out.contains("src/webhooks/webapp/v1/guestbook.rs"), "{out}");
    let created = snapshot(&dir);
    let added: Vec<String> = created
        .keys()
        .filter(|p| !before.contains_key(*p))
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(
        added,
        [
            "config/certmanager/certificate-webhook.yaml",
            "config/certmanager/issuer.yaml",
            "config/certmanager/kustomization.yaml",
            "config/certmanager/kustomizeconfig.yaml",
            "config/default/manager_webhook_patch.yaml",
            "config/webhook/kustomization.yaml",
            "config/webhook/kustomizeconfig.yaml",
            "config/webhook/service.yaml",
            "src/webhooks/webapp/mod.rs",
            "src/webhooks/webapp/v1/guestbook.rs",
            "src/webhooks/webapp/v1/mod.rs",
            "tests/webapp_guestbook_v1_webhook.rs",
        ]
    );
    let webhook = read("src/webhooks/webapp/v1/guestbook.rs");
    assert!(
        webhook.contains("impl Defaulter<Guestbook> for GuestbookWebhook")
            && !webhook.contains("Validator"),
        "{webhook}"
    );
    // Without --defaulting-path, kubebuilder's path and the plain form.
    assert!(
        webhook.contains("at kubebuilder's path\n/// (`/mutate-webapp-example-com-v1-guestbook`, `/validate-...`)")
            && webhook.contains("    mgr.webhooks().defaulter::<Guestbook, _>(GuestbookWebhook);")
            && !webhook.contains("WebhookOptions::default()")
            && !webhook.contains("DEFAULTING_PATH"),
        "{webhook}"
    );
    assert!(
        read("src/webhooks/mod.rs").contains("webapp::v1::guestbook::register(mgr);"),
        "registered"
    );
    let default = read("config/default/kustomization.yaml");
    assert!(
        default.contains("- ../webhook\n- ../certmanager\n")
            && default.contains("- path: manager_webhook_patch.yaml")
            && default.contains("kind: MutatingWebhookConfiguration")
            && !default.contains("kind: ValidatingWebhookConfiguration"),
        "{default}"
    );
    let record = read("kubeforge.toml");
    assert!(
        record.contains("[resource.webhooks]\ndefaulting = true\n"),
        "{record}"
    );

    // Twice is refused, naming the webhook and a type the kind lacks.
    let before_again = snapshot(&dir);
    let stderr = fails(&dir, &args(&create_webhook("v1", &["--defaulting"])));
    assert!(
        stderr.contains(
            "webapp.example.com/v1 Guestbook has a defaulting webhook already (kubeforge.toml); add a type it lacks instead (for example `kubeforge create webhook --group webapp --version v1 --kind Guestbook --validation`)"
        ),
        "{stderr}"
    );
    let stderr = fails(
        &dir,
        &args(&create_webhook("v1", &["--defaulting", "--validation"])),
    );
    assert!(
        stderr.contains("has a defaulting webhook already"),
        "{stderr}"
    );
    assert_eq!(snapshot(&dir), before_again, "nothing written");

    // A second admission type is spliced into the module and its test.
    let out = ok(&dir, &args(&create_webhook("v1", &["--validation"])));
    assert!(out.contains("src/webhooks/webapp/v1/guestbook.rs"), "{out}");
    let webhook = read("src/webhooks/webapp/v1/guestbook.rs");
    assert!(
        webhook.contains(
            "use kubeforge::webhook::{AdmissionRequest, AdmissionResult, Defaulter, Denial, Validator};"
        ) && webhook.contains("use kubeforge::prelude::ResourceExt as _;")
            && webhook.contains(
                "    mgr.webhooks()\n        .defaulter::<Guestbook, _>(GuestbookWebhook)\n        .validator::<Guestbook, _>(GuestbookWebhook);\n}"
            )
            && webhook.contains("impl Defaulter<Guestbook> for GuestbookWebhook")
            && webhook.contains("impl Validator<Guestbook> for GuestbookWebhook"),
        "{webhook}"
    );
    let test = read("tests/webapp_guestbook_v1_webhook.rs");
    assert!(
        test.contains("async fn the_defaulter_fills_in_spec_foo()")
            && test.contains("async fn the_validator_denies_an_invalid_spec_foo()"),
        "{test}"
    );
    assert!(
        read("config/default/kustomization.yaml").contains("kind: ValidatingWebhookConfiguration"),
        "the CA injection covers the validating configuration"
    );
    assert!(
        read("kubeforge.toml")
            .contains("[resource.webhooks]\ndefaulting = true\nvalidation = true\n"),
        "recorded"
    );
    let stderr = fails(&dir, &args(&create_webhook("v1", &["--validation"])));
    assert!(
        stderr.contains(
            "has a validation webhook already (kubeforge.toml); it has a defaulter and a validator: change them in src/webhooks/webapp/v1/guestbook.rs"
        ),
        "{stderr}"
    );

    // Conversion, through v1, of v2.
    ok(
        &dir,
        &args(&create_webhook("v1", &["--conversion", "--spoke", "v2"])),
    );
    for file in [
        "src/api/webapp/v1/guestbook_conversion.rs",
        "src/api/webapp/v2/guestbook_conversion.rs",
        "tests/webapp_guestbook_conversion.rs",
        "config/crd/patches/webhook_in_guestbooks.yaml",
        "config/crd/kustomizeconfig.yaml",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    assert!(read("src/api/webapp/v1/guestbook_conversion.rs").contains("impl Hub for Guestbook {}"));
    assert!(read("src/api/webapp/v2/guestbook_conversion.rs")
        .contains("impl Convertible<v1::Guestbook> for Guestbook"));
    assert!(read("src/api/webapp/v2/mod.rs").contains("mod guestbook_conversion;"));
    assert!(read("src/webhooks/mod.rs").contains(".spoke::<crate::api::webapp::v2::Guestbook>()"));
    let crd = read("config/crd/kustomization.yaml");
    assert!(
        crd.contains(
            "- path: patches/webhook_in_guestbooks.yaml\nconfigurations:\n- kustomizeconfig.yaml"
        ),
        "{crd}"
    );
    assert!(read("config/default/kustomization.yaml")
        .contains("kind: CustomResourceDefinition\n      name: guestbooks.webapp.example.com"));
    assert!(read("kubeforge.toml").contains("conversion = true\nspoke = [\"v2\"]"));

    // The same conversion again, and a second hub, are refused.
    let stderr = fails(
        &dir,
        &args(&create_webhook("v1", &["--conversion", "--spoke", "v2"])),
    );
    assert!(
        stderr.contains("has a conversion webhook already"),
        "{stderr}"
    );
    let stderr = fails(
        &dir,
        &args(&create_webhook("v2", &["--conversion", "--spoke", "v1"])),
    );
    assert!(
        stderr.contains("Guestbook converts through v1 already (its hub)"),
        "{stderr}"
    );
}

/// The webhook module and test of a project given `calls` of
/// `create webhook` for v1 Guestbook.
fn admission_files(calls: &[&[&str]]) -> (String, String) {
    let (_tmp, dir) = project();
    ok(&dir, &args(&create_api("webapp", "v1", "Guestbook")));
    for flags in calls {
        ok(&dir, &args(&create_webhook("v1", flags)));
    }
    let read = |path: &str| std::fs::read_to_string(dir.join(path)).expect(path);
    (
        read("src/webhooks/webapp/v1/guestbook.rs"),
        read("tests/webapp_guestbook_v1_webhook.rs"),
    )
}

#[test]
fn a_webhook_added_later_is_spliced_in_as_if_created_together() {
    // Defaulting then validation: the same files as both at once.
    let together = admission_files(&[&["--defaulting", "--validation"]]);
    let later = admission_files(&[&["--defaulting"], &["--validation"]]);
    assert_eq!(later, together);

    // Validation at a custom path, then defaulting: the defaulter's section
    // follows the validator's, and the imports cover both.
    let (webhook, test) = admission_files(&[
        &["--validation", "--validation-path", "/custom-validate"],
        &["--defaulting"],
    ]);
    assert!(
        webhook.contains("AdmissionRequest, AdmissionResult, Defaulter, Denial, Validator, WebhookOptions,")
            && webhook.contains(
                "WebhookOptions::default().path(VALIDATION_PATH),\n        )\n        .defaulter::<Guestbook, _>(GuestbookWebhook);"
            ),
        "{webhook}"
    );
    let validator = webhook
        .find("impl Validator<Guestbook>")
        .expect("validator");
    let defaulter = webhook
        .find("impl Defaulter<Guestbook>")
        .expect("defaulter");
    assert!(validator < defaulter, "{webhook}");
    assert!(
        test.contains("use shop_operator::webhooks::webapp::v1::guestbook::DEFAULT_FOO;")
            && test.contains("async fn the_defaulter_fills_in_spec_foo()"),
        "{test}"
    );
}

#[test]
fn a_webhook_module_edited_or_removed_is_named_and_a_removed_test_stays_removed() {
    let (_tmp, dir) = project();
    ok(&dir, &args(&create_api("webapp", "v1", "Guestbook")));
    ok(&dir, &args(&create_webhook("v1", &["--defaulting"])));
    let module = dir.join("src/webhooks/webapp/v1/guestbook.rs");
    let text = std::fs::read_to_string(&module).unwrap();
    let edited = text.replace(
        "mgr.webhooks().defaulter::<Guestbook, _>(GuestbookWebhook);",
        "let webhooks = Manager::webhooks(mgr);\n    webhooks.defaulter::<Guestbook, _>(GuestbookWebhook);",
    );
    assert_ne!(edited, text);
    std::fs::write(&module, &edited).unwrap();
    let before = snapshot(&dir);
    let stderr = fails(&dir, &args(&create_webhook("v1", &["--validation"])));
    assert!(
        stderr.contains("src/webhooks/webapp/v1/guestbook.rs: no `mgr.webhooks()` to add `.validator::<Guestbook, _>(GuestbookWebhook)` to; restore it as kubeforge wrote it, or add the webhook there by hand"),
        "{stderr}"
    );
    assert_eq!(snapshot(&dir), before, "nothing written");

    // A module that is gone is named; a test that is gone stays gone.
    std::fs::write(&module, &text).unwrap();
    std::fs::remove_file(dir.join("tests/webapp_guestbook_v1_webhook.rs")).unwrap();
    ok(&dir, &args(&create_webhook("v1", &["--validation"])));
    assert!(!dir.join("tests/webapp_guestbook_v1_webhook.rs").exists());
    assert!(std::fs::read_to_string(&module)
        .unwrap()
        .contains("impl Validator<Guestbook> for GuestbookWebhook"));
    ok(&dir, &args(&create_api("webapp", "v2", "Guestbook")));
    ok(&dir, &args(&create_webhook("v2", &["--defaulting"])));
    std::fs::remove_file(dir.join("src/webhooks/webapp/v2/guestbook.rs")).unwrap();
    let stderr = fails(&dir, &args(&create_webhook("v2", &["--validation"])));
    assert!(
        stderr.contains("cannot read src/webhooks/webapp/v2/guestbook.rs: ")
            && stderr.contains("restore it, or add the webhook there by hand"),
        "{stderr}"
    );
}

#[test]
fn webhook_path_flags_are_checked_with_the_rule_and_an_example() {
    let (_tmp, dir) = project();
    ok(&dir, &args(&create_api("webapp", "v1", "Guestbook")));
    let before = snapshot(&dir);
    let cmd = "kubeforge create webhook --group webapp --version v1 --kind Guestbook";
    let rule = "a webhook path must be '/' and '/'-separated segments of lowercase letters, digits and '-'";
    for (flags, expected) in [
        (
            vec!["--validation", "--defaulting-path", "/custom-default"],
            format!("--defaulting-path sets where the defaulting webhook is served, so it needs --defaulting (for example `{cmd} --defaulting --defaulting-path /custom-default`)"),
        ),
        (
            vec!["--defaulting", "--validation-path", "/custom-validate"],
            format!("--validation-path sets where the validation webhook is served, so it needs --validation (for example `{cmd} --validation --validation-path /custom-validate`)"),
        ),
        (
            vec!["--defaulting", "--defaulting-path", "custom-default"],
            format!("invalid --defaulting-path \"custom-default\": {rule}"),
        ),
        (
            vec!["--defaulting", "--defaulting-path", ""],
            "it is empty (for example \"/custom-default\")".to_owned(),
        ),
        (
            vec!["--defaulting", "--defaulting-path", "/custom default"],
            "it contains whitespace (' ') (for example \"/custom-default\")".to_owned(),
        ),
        (
            vec!["--validation", "--validation-path", "/custom-validate?dry=1"],
            "it has a query ('?...') (for example \"/custom-validate\")".to_owned(),
        ),
        (
            vec!["--validation", "--validation-path", "/custom-validate#top"],
            "it has a fragment ('#...')".to_owned(),
        ),
        (
            vec!["--validation", "--validation-path", "/Custom"],
            "segment \"Custom\": 'C' is not a lowercase letter, digit or '-'".to_owned(),
        ),
        (
            vec!["--validation", "--validation-path", "/custom//validate"],
            "segment 1 is empty ('//' or a trailing '/')".to_owned(),
        ),
        (
            vec!["--defaulting", "--defaulting-path", "/convert"],
            format!("--defaulting-path /convert: the webhook server serves conversions there; give the defaulting webhook a path of its own (for example `{cmd} --defaulting --defaulting-path /custom-default`)"),
        ),
        (
            vec!["--defaulting", "--validation", "--defaulting-path", "/same", "--validation-path", "/same"],
            format!("--validation-path /same: the defaulting webhook of webapp.example.com/v1 Guestbook is served there already (kubeforge.toml); each webhook needs a path of its own (for example `{cmd} --validation --validation-path /custom-validate`)"),
        ),
        (
            vec!["--defaulting", "--validation", "--defaulting-path", "/validate-webapp-example-com-v1-guestbook"],
            "--defaulting-path /validate-webapp-example-com-v1-guestbook: the validation webhook of webapp.example.com/v1 Guestbook is served there already".to_owned(),
        ),
    ] {
        let stderr = fails(&dir, &args(&create_webhook("v1", &flags)));
        assert!(stderr.contains(&expected), "{flags:?}: {stderr}");
    }
    assert_eq!(snapshot(&dir), before, "nothing written");
}

#[test]
fn webhook_paths_are_recorded_and_registered_and_another_webhook_cannot_take_them() {
    let (_tmp, dir) = project();
    ok(&dir, &args(&create_api("webapp", "v1", "Guestbook")));
    ok(&dir, &args(&create_api("webapp", "v1", "Shelf")));
    let read = |path: &str| {
        std::fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    ok(
        &dir,
        &args(&create_webhook(
            "v1",
            &[
                "--defaulting",
                "--validation",
                "--defaulting-path",
                "/custom-default",
                "--validation-path",
                "/webhooks/custom-validate",
            ],
        )),
    );
    let record = read("kubeforge.toml");
    assert!(
        record.contains(
            "[resource.webhooks]\ndefaulting = true\ndefaulting-path = \"/custom-default\"\nvalidation = true\nvalidation-path = \"/webhooks/custom-validate\"\n"
        ),
        "{record}"
    );
    let webhook = read("src/webhooks/webapp/v1/guestbook.rs");
    for expected in [
        "use kubeforge::webhook::{\n    AdmissionRequest, AdmissionResult, Defaulter, Denial, Validator, WebhookOptions,\n};",
        "pub const DEFAULTING_PATH: &str = \"/custom-default\";",
        "pub const VALIDATION_PATH: &str = \"/webhooks/custom-validate\";",
        "    mgr.webhooks()\n        .defaulter_with::<Guestbook, _>(\n            GuestbookWebhook,\n            WebhookOptions::default().path(DEFAULTING_PATH),\n        )\n        .validator_with::<Guestbook, _>(\n            GuestbookWebhook,\n            WebhookOptions::default().path(VALIDATION_PATH),\n        );\n",
    ] {
        assert!(webhook.contains(expected), "{expected}\n---\n{webhook}");
    }

    // Another kind's webhook may not take a path in use, custom or default.
    let shelf = |flags: &[&str]| {
        let mut v: Vec<String> = [
            "create",
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Shelf",
        ]
        .map(str::to_owned)
        .to_vec();
        v.extend(flags.iter().map(|f| (*f).to_owned()));
        v
    };
    let before = snapshot(&dir);
    let stderr = fails(
        &dir,
        &args(&shelf(&[
            "--defaulting",
            "--defaulting-path",
            "/custom-default",
        ])),
    );
    assert!(
        stderr.contains("--defaulting-path /custom-default: the defaulting webhook of webapp.example.com/v1 Guestbook is served there already (kubeforge.toml)"),
        "{stderr}"
    );
    assert_eq!(snapshot(&dir), before, "nothing written");

    // One path given, the other webhook at kubebuilder's default.
    ok(
        &dir,
        &args(&shelf(&[
            "--defaulting",
            "--validation",
            "--validation-path",
            "/shelf-validate",
        ])),
    );
    let webhook = read("src/webhooks/webapp/v1/shelf.rs");
    assert!(
        webhook.contains("/// (`/mutate-webapp-example-com-v1-shelf`, `/validate-...`) unless\n/// `kubeforge.toml` records another")
            && webhook.contains("        .defaulter::<Shelf, _>(ShelfWebhook)\n        .validator_with::<Shelf, _>(\n            ShelfWebhook,\n            WebhookOptions::default().path(VALIDATION_PATH),\n        );")
            && !webhook.contains("DEFAULTING_PATH"),
        "{webhook}"
    );
    assert!(
        read("kubeforge.toml")
            .contains("kind = \"Shelf\"\nplural = \"shelfs\"\nnamespaced = true\napi = true\ncontroller = true\n\n[resource.webhooks]\ndefaulting = true\nvalidation = true\nvalidation-path = \"/shelf-validate\"\n"),
        "recorded"
    );
}
