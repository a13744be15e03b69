//! The operator's standard command line (`kubeforge::app`): `manifests`
//! renders the CRDs and the RBAC the registered controllers need, with no
//! cluster; `run` refuses a kubeconfig it cannot use, naming it; and the
//! operator started on the in-process API server reconciles.

use std::time::{Duration, Instant};

use kubeforge::app::{App, ManifestOptions, NoFlags};
use kubeforge::k8s_openapi::api::apps::v1::Deployment;
use kubeforge::k8s_openapi::api::core::v1::Secret;
use kubeforge::k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use kubeforge::prelude::*;
use kubeforge::rbac::Rule;
use kubeforge::testing::ApiServer;

/// A shelf of books.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(
    group = "library.example.com",
    version = "v1",
    kind = "Shelf",
    plural = "shelves",
    status = "ShelfStatus"
)]
pub struct ShelfSpec {
    /// How many books fit.
    pub size: i32,
}

/// What the controller saw.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub struct ShelfStatus {
    /// The size, once reconciled.
    #[serde(default)]
    pub seen: i32,
}

async fn reconcile(
    shelf: Arc<Shelf>,
    ctx: Arc<Context<()>>,
) -> Result<Action, kubeforge::controller::Error> {
    let status = ShelfStatus {
        seen: shelf.spec.size,
    };
    ctx.client().patch_status(&*shelf, &status).await?;
    Ok(Action::done())
}

const SAMPLE: &str = "apiVersion: library.example.com/v1
kind: Shelf
metadata:
  name: shelf-sample
spec:
  size: 3
";

fn app() -> App {
    App::new("library-operator")
        .crd::<Shelf>()
        .sample(SAMPLE)
        .leader_election_id("library-operator.example.com")
        .rule(Rule::url("/metrics").verbs([kubeforge::rbac::Verb::Get]))
        .setup(|mgr, _| {
            mgr.controller::<Shelf>()
                .owns::<Deployment>()
                .rule(Rule::on::<Secret>().reads())
                .reconcile(reconcile, ());
            Ok::<(), kubeforge::controller::Error>(())
        })
}

fn documents(yaml: &str) -> Vec<serde_json::Value> {
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(yaml).expect("YAML");
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

/// `(group, resource, verbs)` of each rule, resources spelled out.
fn grants(rules: &[kubeforge::k8s_openapi::api::rbac::v1::PolicyRule]) -> Vec<String> {
    rules
        .iter()
        .map(|r| {
            format!(
                "{:?} {:?} {:?} {:?}",
                r.api_groups.clone().unwrap_or_default(),
                r.resources.clone().unwrap_or_default(),
                r.non_resource_urls.clone().unwrap_or_default(),
                r.verbs
            )
        })
        .collect()
}

#[tokio::test]
async fn manifests_render_the_crd_and_the_rbac_the_controllers_need() {
    let files = app()
        .manifests(&ManifestOptions::default(), &NoFlags {})
        .await
        .expect("manifests");
    let paths: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    assert_eq!(
        paths,
        [
            "crd/bases/library.example.com_shelves.yaml",
            "rbac/role.yaml",
            "rbac/role_binding.yaml",
            "rbac/leader_election_role.yaml",
            "rbac/leader_election_role_binding.yaml",
        ]
    );
    let crd = &documents(&files[0].contents)[0];
    assert_eq!(crd["metadata"]["name"], "shelves.library.example.com");
    assert!(files[0]
        .contents
        .starts_with("# Generated from the code of library-operator"));

    let role: ClusterRole =
        serde_json::from_value(documents(&files[1].contents)[0].clone()).expect("ClusterRole");
    assert_eq!(
        grants(&role.rules.unwrap_or_default()),
        [
            r#"[] [] ["/metrics"] ["get"]"#,
            r#"[""] ["secrets"] [] ["get", "list", "watch"]"#,
            r#"["apps"] ["deployments"] [] ["create", "delete", "list", "patch", "update", "watch"]"#,
            r#"["events.k8s.io"] ["events"] [] ["create", "patch"]"#,
            r#"["library.example.com"] ["shelves"] [] ["list", "watch"]"#,
            r#"["library.example.com"] ["shelves/finalizers"] [] ["update"]"#,
            r#"["library.example.com"] ["shelves/status"] [] ["get", "patch", "update"]"#,
        ]
    );
}

#[tokio::test]
async fn a_namespaced_operator_gets_a_role_and_the_command_writes_under_dir() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("config");
    app()
        .run_with_args([
            "library-operator",
            "manifests",
            "--namespace",
            "shop",
            "--dir",
            &config.to_string_lossy(),
        ])
        .await
        .expect("manifests --dir");
    let role_file = std::fs::read_to_string(config.join("rbac/role.yaml")).expect("role.yaml");
    let docs = documents(&role_file);
    // The URL only a ClusterRole can grant; everything else in the Role.
    assert_eq!(docs.len(), 2, "{role_file}");
    let cluster: ClusterRole = serde_json::from_value(docs[0].clone()).expect("ClusterRole");
    assert_eq!(
        grants(&cluster.rules.unwrap_or_default()),
        [r#"[] [] ["/metrics"] ["get"]"#]
    );
    let role: Role = serde_json::from_value(docs[1].clone()).expect("Role");
    assert_eq!(role.metadata.namespace.as_deref(), Some("shop"));
    assert_eq!(role.rules.unwrap_or_default().len(), 6);
    assert!(config
        .join("crd/bases/library.example.com_shelves.yaml")
        .is_file());
}

#[tokio::test]
async fn run_names_a_kubeconfig_it_cannot_use() {
    let err = app()
        .run_with_args([
            "library-operator",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
            "--log-level",
            "warn",
        ])
        .await
        .expect_err("no such kubeconfig");
    let message = err.to_string();
    assert!(
        message.contains("cannot use the kubeconfig /nonexistent/kubeconfig"),
        "{message}"
    );
}

#[tokio::test]
async fn bad_flags_are_clap_errors() {
    let err = app()
        .run_with_args(["library-operator", "--embedded", "--kubeconfig", "k"])
        .await
        .expect_err("conflicting flags");
    assert!(matches!(err, kubeforge::app::Error::Args(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_started_on_the_in_process_server_reconciles_its_samples() {
    let server = ApiServer::start().await.expect("server");
    let operator = app()
        .start_on(&server, NoFlags {})
        .await
        .expect("the operator starts");
    let created = operator.create_samples().await.expect("samples");
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].namespace.as_deref(), Some("default"));
    let shelves: Api<Shelf> = Api::namespaced(operator.client().clone(), "default");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let shelf = shelves.get("shelf-sample").await.expect("the sample");
        if shelf.status.as_ref().is_some_and(|s| s.seen == 3) {
            break;
        }
        assert!(Instant::now() < deadline, "not reconciled: {shelf:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    operator.stop().await.expect("a clean stop");
}

/// Log output captured from a subscriber set for one future.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A normal `--embedded` start warns about nothing: in particular not
/// about skipping the certificate check of a connection that is never
/// made (the manager the RBAC is derived from never connects), while a
/// kubeconfig that really says `insecure-skip-tls-verify` is still warned
/// about (`client::tls`'s tests). Its start line says where to reach what
/// it serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_start_warns_about_nothing_and_says_where_it_serves() {
    use tracing::instrument::WithSubscriber as _;

    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let run = app()
        .run_with_args([
            "library-operator",
            "--embedded",
            "--listen",
            "127.0.0.1:0",
            "--no-samples",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "0",
            // The process-wide subscriber `run` installs stays silent; the
            // captured one sees this future's events.
            "--log-level",
            "off",
        ])
        .with_subscriber(subscriber);
    tokio::pin!(run);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !logs.text().contains("starting:") {
        tokio::select! {
            ended = &mut run => panic!("the operator ended: {ended:?}\n{}", logs.text()),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        assert!(Instant::now() < deadline, "not started:\n{}", logs.text());
    }
    let text = logs.text();
    assert!(!text.contains("WARN"), "{text}");
    assert!(!text.contains("insecure-skip-tls-verify"), "{text}");
    assert!(!text.contains("manifests.invalid"), "{text}");
    let start = text
        .lines()
        .find(|l| l.contains("starting:"))
        .expect("the start line");
    assert!(
        start.contains("starting: metrics at http://127.0.0.1:")
            && start.contains("/metrics")
            && !start.contains("probes")
            && !start.contains("Some(")
            && start.contains("operator=library-operator"),
        "{start}"
    );
}
