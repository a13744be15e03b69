//! `manifests` of an operator with webhooks: `webhook/manifests.yaml`
//! with controller-gen's configuration names, kubebuilder's webhook names,
//! paths and Service, and cert-manager's CA injection; the converted CRD
//! with `spec.conversion` pointing at `/convert` through that Service.
//! And the webhooks an `App` registers ([`App::webhooks`]) served to the
//! in-process API server by `start_on`, as `--embedded` serves them, with
//! the `matchPolicy` they were registered with.

use kubeforge::app::{App, ManifestOptions, NoFlags};
use kubeforge::crd::conversion::{ConversionError, Converter, Convertible, Hub};
use kubeforge::kube_core::params::PostParams;
use kubeforge::prelude::ResourceExt as _;
use kubeforge::testing::ApiServer;
use kubeforge::webhook::{
    AdmissionRequest, AdmissionResult, Defaulter, Denial, MatchPolicy, Validator, WebhookOptions,
};
use kubeforge::Api;
use serde_json::{json, Value};

mod v2 {
    use kubeforge::prelude::*;

    /// The hub.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "units.example.com", version = "v2", kind = "Rod", storage)]
    pub struct RodSpec {
        pub millimetres: u64,
    }
}

mod v1 {
    use kubeforge::prelude::*;

    /// A spoke.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "units.example.com", version = "v1", kind = "Rod")]
    pub struct RodSpec {
        pub centimetres: u64,
    }
}

impl Hub for v2::Rod {}

impl Convertible<v2::Rod> for v1::Rod {
    fn to_hub(&self) -> Result<v2::Rod, ConversionError> {
        Ok(v2::Rod::new(
            "",
            v2::RodSpec {
                millimetres: self.spec.centimetres * 10,
            },
        ))
    }
    fn from_hub(hub: &v2::Rod) -> Result<Self, ConversionError> {
        Ok(v1::Rod::new(
            "",
            v1::RodSpec {
                centimetres: hub.spec.millimetres / 10,
            },
        ))
    }
}

struct Hooks;

impl Defaulter<v2::Rod> for Hooks {
    async fn default(&self, _: &mut v2::Rod, _: &AdmissionRequest) -> AdmissionResult {
        Ok(vec![])
    }
}

impl Validator<v2::Rod> for Hooks {}

fn documents(yaml: &str) -> Vec<Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).expect("YAML");
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

#[tokio::test]
async fn manifests_carry_the_webhook_configurations_and_the_conversion_stanza() {
    let files = App::new("rod-operator")
        .crd::<v2::Rod>()
        .crd::<v1::Rod>()
        .setup(|mgr, _| {
            mgr.webhooks()
                .defaulter::<v2::Rod, _>(Hooks)
                .validator::<v2::Rod, _>(Hooks)
                .converter(Converter::<v2::Rod>::new().spoke::<v1::Rod>());
            Ok::<_, kubeforge::controller::Error>(())
        })
        .manifests(&ManifestOptions::default(), &NoFlags {})
        .await
        .expect("manifests");
    let file = |path: &str| {
        files
            .iter()
            .find(|f| f.path.display().to_string() == path)
            .unwrap_or_else(|| panic!("no {path}"))
    };
    let crd = &documents(&file("crd/bases/units.example.com_rods.yaml").contents)[0];
    assert_eq!(
        crd["spec"]["conversion"],
        json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"namespace": "system", "name": "webhook-service", "path": "/convert"}},
            "conversionReviewVersions": ["v1"]}})
    );
    assert_eq!(
        crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        "system/serving-cert"
    );

    let webhooks = documents(&file("webhook/manifests.yaml").contents);
    assert_eq!(webhooks.len(), 2);
    let (mutating, validating) = (&webhooks[0], &webhooks[1]);
    assert_eq!(mutating["kind"], "MutatingWebhookConfiguration");
    assert_eq!(
        mutating["metadata"]["name"],
        "mutating-webhook-configuration"
    );
    assert_eq!(
        mutating["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        "system/serving-cert"
    );
    let hook = &mutating["webhooks"][0];
    assert_eq!(hook["name"], "mrod-v2.kb.io");
    assert_eq!(
        hook["clientConfig"]["service"],
        json!({"namespace": "system", "name": "webhook-service", "path": "/mutate-units-example-com-v2-rod"})
    );
    assert_eq!(
        hook["rules"],
        json!([{"apiGroups": ["units.example.com"], "apiVersions": ["v2"],
                "operations": ["CREATE", "UPDATE"], "resources": ["rods"]}])
    );
    assert_eq!(hook["sideEffects"], "None");
    assert_eq!(hook["admissionReviewVersions"], json!(["v1"]));
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(
        hook.get("matchPolicy"),
        None,
        "unset, as controller-gen leaves it: the API server defaults it to Equivalent"
    );
    assert_eq!(validating["kind"], "ValidatingWebhookConfiguration");
    assert_eq!(
        validating["metadata"]["name"],
        "validating-webhook-configuration"
    );
    assert_eq!(validating["webhooks"][0]["name"], "vrod-v2.kb.io");
    assert_eq!(
        validating["webhooks"][0]["clientConfig"]["service"]["path"],
        "/validate-units-example-com-v2-rod"
    );
}

/// Rods default to 1000 mm (with a warning); rods over 5 m are refused.
struct Lengths;

impl Defaulter<v2::Rod> for Lengths {
    async fn default(&self, rod: &mut v2::Rod, _: &AdmissionRequest) -> AdmissionResult {
        if rod.spec.millimetres != 0 {
            return Ok(vec![]);
        }
        rod.spec.millimetres = 1000;
        Ok(vec!["no length: 1000 mm".into()])
    }
}

impl Validator<v2::Rod> for Lengths {
    async fn validate_create(&self, rod: &v2::Rod, _: &AdmissionRequest) -> AdmissionResult {
        if rod.spec.millimetres > 5000 {
            return Err(Denial::invalid("Rod", rod.name_any()).with_cause(
                "spec.millimetres",
                "FieldValueInvalid",
                "at most 5000",
            ));
        }
        Ok(vec![])
    }
}

fn rod_app() -> App {
    rod_app_matching(None)
}

/// The rod operator, its v2 webhooks registered with `match_policy` when
/// given.
fn rod_app_matching(match_policy: Option<MatchPolicy>) -> App {
    let options = match match_policy {
        Some(policy) => WebhookOptions::default().match_policy(policy),
        None => WebhookOptions::default(),
    };
    App::new("rod-operator")
        .crd::<v2::Rod>()
        .crd::<v1::Rod>()
        .webhooks(move |mgr| {
            mgr.webhooks()
                .defaulter_with::<v2::Rod, _>(Lengths, options.clone())
                .validator_with::<v2::Rod, _>(Lengths, options.clone())
                .converter(Converter::<v2::Rod>::new().spoke::<v1::Rod>());
            Ok::<_, kubeforge::controller::Error>(())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_on_points_the_api_server_at_the_apps_webhooks() {
    let server = ApiServer::start().await.unwrap();
    let operator = rod_app().start_on(&server, NoFlags {}).await.unwrap();
    let pp = PostParams::default();
    let hubs: Api<v2::Rod> = Api::namespaced(operator.client().clone(), "default");

    // Defaulted by the app's defaulter.
    let created = hubs
        .create(&pp, &v2::Rod::new("plain", v2::RodSpec { millimetres: 0 }))
        .await
        .unwrap();
    assert_eq!(created.spec.millimetres, 1000);

    // Denied by its validator, with its message and cause.
    let err = hubs
        .create(
            &pp,
            &v2::Rod::new("long", v2::RodSpec { millimetres: 9000 }),
        )
        .await
        .unwrap_err();
    let status = err.status().expect("a Status");
    assert_eq!(status.code, 422);
    assert!(
        status
            .message
            .contains("admission webhook \"vrod-v2.kb.io\" denied the request")
            && status.message.contains("spec.millimetres: at most 5000"),
        "{status:?}"
    );

    // Converted by its converter: written at v1, read at v2 and back.
    let spokes: Api<v1::Rod> = Api::namespaced(operator.client().clone(), "default");
    spokes
        .create(&pp, &v1::Rod::new("short", v1::RodSpec { centimetres: 42 }))
        .await
        .unwrap();
    assert_eq!(hubs.get("short").await.unwrap().spec.millimetres, 420);
    assert_eq!(spokes.get("short").await.unwrap().spec.centimetres, 42);

    // matchPolicy defaults to Equivalent: a v1 request goes to the v2
    // validator too, converted to v2.
    let err = spokes
        .create(
            &pp,
            &v1::Rod::new("long-v1", v1::RodSpec { centimetres: 900 }),
        )
        .await
        .unwrap_err();
    let status = err.status().expect("a Status");
    assert_eq!(status.code, 422, "{status:?}");
    assert!(status.message.contains("vrod-v2.kb.io"), "{status:?}");
    operator.stop().await.unwrap();
}

/// With `matchPolicy: Exact` the v2 webhooks see v2 requests only: a v1
/// create is neither defaulted nor validated by them, while a v2 create
/// still is both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_match_policy_keeps_webhooks_to_the_version_they_name() {
    let server = ApiServer::start().await.unwrap();
    let operator = rod_app_matching(Some(MatchPolicy::Exact))
        .start_on(&server, NoFlags {})
        .await
        .unwrap();
    let pp = PostParams::default();
    let hubs: Api<v2::Rod> = Api::namespaced(operator.client().clone(), "default");
    let spokes: Api<v1::Rod> = Api::namespaced(operator.client().clone(), "default");

    let long = spokes
        .create(
            &pp,
            &v1::Rod::new("long-v1", v1::RodSpec { centimetres: 900 }),
        )
        .await
        .expect("the v2 validator is not called for v1");
    assert_eq!(long.spec.centimetres, 900);
    let unset = spokes
        .create(
            &pp,
            &v1::Rod::new("unset-v1", v1::RodSpec { centimetres: 0 }),
        )
        .await
        .unwrap();
    assert_eq!(unset.spec.centimetres, 0, "nor the v2 defaulter");
    assert_eq!(hubs.get("unset-v1").await.unwrap().spec.millimetres, 0);

    let defaulted = hubs
        .create(&pp, &v2::Rod::new("plain", v2::RodSpec { millimetres: 0 }))
        .await
        .unwrap();
    assert_eq!(defaulted.spec.millimetres, 1000);
    let err = hubs
        .create(
            &pp,
            &v2::Rod::new("long", v2::RodSpec { millimetres: 9000 }),
        )
        .await
        .unwrap_err();
    assert_eq!(err.status().expect("a Status").code, 422);
    operator.stop().await.unwrap();
}

#[tokio::test]
async fn manifests_carry_the_match_policy_set() {
    let files = rod_app_matching(Some(MatchPolicy::Exact))
        .manifests(&ManifestOptions::default(), &NoFlags {})
        .await
        .unwrap();
    let webhooks = files
        .iter()
        .find(|f| f.path.display().to_string() == "webhook/manifests.yaml")
        .expect("webhook/manifests.yaml");
    let docs = documents(&webhooks.contents);
    assert_eq!(docs[0]["kind"], "MutatingWebhookConfiguration");
    assert_eq!(docs[0]["webhooks"][0]["matchPolicy"], "Exact");
    assert_eq!(docs[1]["kind"], "ValidatingWebhookConfiguration");
    assert_eq!(docs[1]["webhooks"][0]["matchPolicy"], "Exact");

    let files = rod_app_matching(Some(MatchPolicy::Equivalent))
        .manifests(&ManifestOptions::default(), &NoFlags {})
        .await
        .unwrap();
    let webhooks = files
        .iter()
        .find(|f| f.path.display().to_string() == "webhook/manifests.yaml")
        .expect("webhook/manifests.yaml");
    let docs = documents(&webhooks.contents);
    assert_eq!(docs[1]["webhooks"][0]["matchPolicy"], "Equivalent");
}

#[tokio::test]
async fn manifests_include_the_webhooks_registered_apart_from_setup() {
    let files = rod_app()
        .manifests(&ManifestOptions::default(), &NoFlags {})
        .await
        .unwrap();
    let webhooks = files
        .iter()
        .find(|f| f.path.display().to_string() == "webhook/manifests.yaml")
        .expect("webhook/manifests.yaml");
    let docs = documents(&webhooks.contents);
    assert_eq!(docs[0]["webhooks"][0]["name"], "mrod-v2.kb.io");
    assert_eq!(docs[1]["webhooks"][0]["name"], "vrod-v2.kb.io");
}
