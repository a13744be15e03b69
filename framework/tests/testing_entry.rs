//! `kubeforge::testing`, the runtime's entry to the in-process API server:
//! a `Config` and a `Client` for it, and CRDs installed from
//! `#[derive(CustomResource)]` types. The server's own behaviour is tested
//! on the wire in its crate (`framework/apiserver/tests`); these tests
//! borrow its raw HTTPS client to look at what the derive's CRDs become.

#[path = "../apiserver/tests/common/mod.rs"]
mod common;

use common::Kube;
use kubeforge::testing::ApiServerExt;
use serde_json::json;

#[tokio::test]
async fn config_names_the_servers_url_ca_and_token() {
    let k = Kube::start().await;
    let cfg = k.server.config();
    assert_eq!(cfg.cluster_url.to_string().trim_end_matches('/'), k.base());
    assert_eq!(cfg.root_certs.as_ref().unwrap()[0], k.server.ca_der());
    assert!(
        matches!(&cfg.auth, kubeforge::client::Auth::Bearer(t) if t.expose() == k.token()),
        "the admin token"
    );
}

#[tokio::test]
async fn the_runtimes_client_talks_to_the_server() -> anyhow::Result<()> {
    use kubeforge::k8s_openapi::api::core::v1::Namespace;
    let server = kubeforge::testing::ApiServer::start().await?;
    let namespaces: kubeforge::Api<Namespace> = kubeforge::Api::all(server.client()?);
    let default = namespaces.get("default").await?;
    assert_eq!(default.metadata.name.as_deref(), Some("default"));
    server.shutdown().await;
    Ok(())
}

mod typed {
    use kubeforge::prelude::*;

    /// Version v1 of a derived kind (storage).
    pub mod v1 {
        use kubeforge::prelude::*;

        /// A gauge.
        #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
        #[crd(group = "typed.example.com", version = "v1", kind = "Gauge", storage,
              printcolumn(name = "Max", type = integer, json_path = ".spec.max"))]
        pub struct GaugeSpec {
            /// Upper bound.
            #[crd(minimum = 1)]
            pub max: i32,
        }
    }

    /// Version v1beta1 of the same kind.
    pub mod v1beta1 {
        use kubeforge::prelude::*;

        /// A gauge, before `max` had a bound.
        #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
        #[crd(group = "typed.example.com", version = "v1beta1", kind = "Gauge")]
        pub struct GaugeSpec {
            /// Upper bound.
            pub max: i32,
        }
    }

    /// Optional fields: absent, defaulted, and one that accepts `null`.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
    #[crd(
        group = "typed.example.com",
        version = "v1",
        kind = "Damper",
        derive(PartialEq)
    )]
    pub struct DamperSpec {
        /// Optional.
        pub angle: Option<i32>,
        /// Optional, 45 when absent.
        #[crd(default = 45)]
        pub preset: Option<i32>,
        /// Optional and nullable.
        #[crd(nullable)]
        pub note: Option<String>,
    }

    /// A type that contains itself: the derive cannot make a CRD of it.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "typed.example.com", version = "v1", kind = "Tree")]
    pub struct TreeSpec {
        /// The root node.
        pub root: Node,
    }

    /// A node with children.
    #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
    pub struct Node {
        /// Child nodes.
        pub children: Vec<Child>,
    }

    /// A child, which may hold a subtree.
    #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
    pub struct Child {
        /// The subtree.
        pub subtree: Option<Box<Node>>,
    }
}

/// The typed ways in: `install_crd_for::<K>()` with the derive's CRD, and
/// `install_crd(&CustomResourceDefinition)` with several versions combined;
/// installing again updates; a CRD the derive cannot build and one the
/// server refuses are errors of their own.
#[tokio::test]
async fn typed_crds_install_and_serve_their_resources() {
    use kubeforge::crd::CustomResource as _;
    use kubeforge::testing::{ApiServerExt, Error, InstallError};

    let k = Kube::start().await;
    k.server
        .install_crd_for::<typed::v1::Gauge>()
        .expect("the derived CRD installs");
    let crd = k
        .get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gauges.typed.example.com")
        .await
        .json();
    assert_eq!(
        crd["spec"]["versions"][0]["additionalPrinterColumns"][0]["name"],
        "Max"
    );
    let bad = k
        .post(
            "/apis/typed.example.com/v1/namespaces/default/gauges",
            &json!({"apiVersion": "typed.example.com/v1", "kind": "Gauge",
                    "metadata": {"name": "g"}, "spec": {"max": 0}}),
        )
        .await;
    assert_eq!(bad.code(), 422, "the schema's minimum is enforced");

    // Both versions, combined in Rust: the update adds v1beta1.
    let combined = kubeforge::crd::combine(&[
        typed::v1::Gauge::DESCRIPTOR,
        typed::v1beta1::Gauge::DESCRIPTOR,
    ])
    .expect("the versions combine");
    k.server
        .install_crd(&combined)
        .expect("the update installs");
    let created = k
        .post(
            "/apis/typed.example.com/v1beta1/namespaces/default/gauges",
            &json!({"apiVersion": "typed.example.com/v1beta1", "kind": "Gauge",
                    "metadata": {"name": "g"}, "spec": {"max": 0}}),
        )
        .await;
    assert_eq!(
        created.code(),
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );

    let err = k
        .server
        .install_crd_for::<typed::Tree>()
        .expect_err("a recursive type has no CRD");
    assert!(matches!(err, InstallError::Crd(_)), "{err:?}");
    assert!(err.to_string().contains("recursive"), "{err}");

    let mut misnamed = combined.clone();
    misnamed.metadata.name = Some("gauges.elsewhere.example.com".into());
    let err = k
        .server
        .install_crd(&misnamed)
        .expect_err("the name must be <plural>.<group>");
    assert!(matches!(err, Error::Rejected(_)), "{err:?}");
}

/// An `Option` field without `#[crd(nullable)]` is not nullable, and
/// kube-apiserver drops a `null` sent for it before defaulting (the
/// structural schema's null pruning): a Rust client writing `None` as
/// `null` gets `None` back, or the field's CRD default; a nullable field
/// keeps its `null`.
#[tokio::test]
async fn null_for_an_optional_field_is_dropped_or_defaulted() {
    use typed::{Damper, DamperSpec};

    let k = Kube::start().await;
    k.server.install_crd_for::<Damper>().expect("installs");
    let created = k
        .post(
            "/apis/typed.example.com/v1/namespaces/default/dampers",
            &json!({"apiVersion": "typed.example.com/v1", "kind": "Damper",
                    "metadata": {"name": "d"},
                    "spec": {"angle": null, "preset": null, "note": null}}),
        )
        .await;
    assert_eq!(
        created.code(),
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let spec = created.json()["spec"].clone();
    assert_eq!(spec, json!({"preset": 45, "note": null}));

    // The same from the typed API: None is serialized as null.
    let api: kubeforge::Api<Damper> =
        kubeforge::Api::namespaced(k.server.client().expect("client"), "default");
    let stored = api
        .create(
            &Default::default(),
            &Damper::new(
                "typed",
                DamperSpec {
                    angle: None,
                    preset: None,
                    note: None,
                },
            ),
        )
        .await
        .expect("None fields are accepted");
    assert_eq!(
        stored.spec,
        DamperSpec {
            angle: None,
            preset: Some(45),
            note: None,
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_operator_runs_the_manager_as_its_service_account_under_derived_rbac() {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use k8s_openapi::api::core::v1::ConfigMap;
    use kubeforge::controller::{Action, Context};
    use kubeforge::testing::{operator_user, start_operator, ApiServer};
    use kubeforge::{Api, Manager};

    let server = ApiServer::start().await.expect("server starts");
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    let operator = start_operator(&server, Manager::builder(), move |mgr| {
        mgr.controller::<ConfigMap>().reconcile(
            |_: Arc<ConfigMap>, ctx: Arc<Context<Arc<std::sync::atomic::AtomicUsize>>>| async move {
                ctx.data().fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok::<_, kubeforge::controller::Error>(Action::done())
            },
            counter,
        );
    })
    .await
    .expect("the operator starts");
    let admin = server.client().expect("admin client");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "one"}})).unwrap();
    Api::<ConfigMap>::namespaced(admin, "default")
        .create(&Default::default(), &cm)
        .await
        .expect("create");
    // The reconcile can come from the initial list, before the cache's
    // watch reaches the server: wait for both, or the audit is read early.
    let allowed_verbs = || -> Vec<String> {
        server
            .permission_audit(&operator_user())
            .requests
            .iter()
            .filter(|r| r.resource == "configmaps" && r.allowed > 0)
            .map(|r| r.verb.clone())
            .collect()
    };
    let start = Instant::now();
    while seen.load(std::sync::atomic::Ordering::SeqCst) == 0
        || !allowed_verbs().iter().any(|v| v == "watch")
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never reconciled and watched: {}",
            server.permission_audit(&operator_user())
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    operator.stop().await.expect("stops cleanly");
    // It ran as the service account, and its derived ClusterRole let it
    // cache ConfigMaps: list and watch allowed, nothing denied.
    let audit = server.permission_audit(&operator_user());
    assert!(audit.denied.is_empty(), "{audit}");
    let verbs = allowed_verbs();
    assert!(
        verbs.iter().any(|v| v == "list") && verbs.iter().any(|v| v == "watch"),
        "{audit}"
    );
}
