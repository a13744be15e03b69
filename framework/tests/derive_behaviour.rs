//! What `#[derive(CustomResource)]` generates: the wire format, the
//! `Resource` impl and scope, accessors, and the errors `try_crd` gives for
//! types a structural schema cannot express.

use kubeforge::crd::{CrdError, CustomResource};
use kubeforge::k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kubeforge::kube_core::Resource;
use kubeforge::prelude::*;
use kubeforge::serde_json::{self, json};

mod kinds {
    use kubeforge::prelude::*;

    /// A namespaced kind with a status.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
    #[crd(group = "demo.example.com", version = "v1", kind = "Lamp", status = "LampStatus",
          shortnames = ["lp", "lmp"], derive = "PartialEq")]
    pub struct LampSpec {
        pub watts: u32,
    }

    /// Lamp status.
    #[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
    pub struct LampStatus {
        pub on: bool,
    }

    /// A cluster-scoped kind without a status.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(
        group = "demo.example.com",
        version = "v1",
        kind = "Policy",
        scope = "Cluster"
    )]
    pub struct PolicySpec {
        pub strict: bool,
    }

    /// Two types that contain each other: only visible when the schema is built.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "demo.example.com", version = "v1", kind = "Org")]
    pub struct OrgSpec {
        pub root: Team,
    }

    /// A team.
    #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
    pub struct Team {
        pub name: String,
        pub members: Vec<Member>,
    }

    /// A member, who may lead a team.
    #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
    pub struct Member {
        pub name: String,
        pub leads: Option<Box<Team>>,
    }

    /// An untagged enum of a string and a number.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "demo.example.com", version = "v1", kind = "Knob")]
    pub struct KnobSpec {
        pub setting: Setting,
    }

    /// A string or a number: two JSON types.
    #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[serde(untagged)]
    pub enum Setting {
        Named(String),
        Level(i64),
    }

    /// A mixed enum derived with schemars' own derive, which kubeforge
    /// cannot check at compile time.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "demo.example.com", version = "v1", kind = "Switch")]
    pub struct SwitchSpec {
        pub state: State,
    }

    /// Off, or on at a level.
    #[derive(Serialize, Deserialize, Clone, Debug, kubeforge::schemars::JsonSchema)]
    #[schemars(crate = "kubeforge::schemars")]
    pub enum State {
        Off,
        On(u8),
    }
}

use kinds::*;

/// Container-level `#[serde(default)]`: schemars asks the type for its
/// default; kubeforge's derive answers with the real type's `Default`.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[serde(default)]
pub struct Tuning {
    /// Retries.
    pub retries: u32,
    /// Mode.
    #[crd(enum_values = ["fast", "safe"])]
    pub mode: String,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            retries: 5,
            mode: "safe".into(),
        }
    }
}

#[test]
fn container_serde_default_fills_in_the_schema_defaults() {
    let schema = kubeforge::crd::schema::schema_for::<Tuning>().to_value();
    assert_eq!(schema["properties"]["retries"]["default"], 5);
    assert_eq!(schema["properties"]["mode"]["default"], "safe");
    assert_eq!(
        schema["properties"]["mode"]["enum"],
        json!(["fast", "safe"])
    );
    assert!(schema.get("required").is_none());
}

#[test]
fn objects_serialize_with_api_version_and_kind_and_without_empty_status() {
    let lamp = Lamp::new("desk", LampSpec { watts: 40 });
    let json = serde_json::to_value(&lamp).unwrap();
    assert_eq!(
        json,
        json!({"apiVersion": "demo.example.com/v1", "kind": "Lamp",
               "metadata": {"name": "desk"}, "spec": {"watts": 40}})
    );
    let mut lit = lamp.clone();
    lit.status = Some(LampStatus { on: true });
    assert_eq!(
        serde_json::to_value(&lit).unwrap()["status"],
        json!({"on": true})
    );
}

#[test]
fn objects_deserialize_from_the_wire_format() {
    let lamp: Lamp = serde_json::from_value(json!({
        "apiVersion": "demo.example.com/v1", "kind": "Lamp",
        "metadata": {"name": "desk", "namespace": "home", "resourceVersion": "7"},
        "spec": {"watts": 60}, "status": {"on": false}
    }))
    .unwrap();
    assert_eq!(lamp.spec().watts, 60);
    assert_eq!(lamp.status(), Some(&LampStatus { on: false }));
    assert_eq!(lamp.namespace().as_deref(), Some("home"));
    assert_eq!(lamp.resource_version().as_deref(), Some("7"));
    let mut lamp = lamp;
    lamp.spec_mut().watts = 1;
    *lamp.status_mut() = None;
    assert_eq!(lamp.spec.watts, 1);
    assert!(lamp.status.is_none());
}

fn namespaced<K: Resource<Scope = NamespaceResourceScope>>() {}
fn cluster<K: Resource<Scope = ClusterResourceScope>>() {}

#[test]
fn resource_impl_names_the_kind_and_its_scope() {
    namespaced::<Lamp>();
    cluster::<Policy>();
    assert_eq!(Lamp::kind(&()), "Lamp");
    assert_eq!(Lamp::group(&()), "demo.example.com");
    assert_eq!(Lamp::version(&()), "v1");
    assert_eq!(Lamp::api_version(&()), "demo.example.com/v1");
    assert_eq!(Lamp::plural(&()), "lamps");
    assert_eq!(Policy::plural(&()), "policies");
    assert_eq!(Lamp::crd_name(), "lamps.demo.example.com");
    assert_eq!(Lamp::shortnames(), &["lp", "lmp"]);
    let ar = Lamp::api_resource();
    assert_eq!(
        (ar.group.as_str(), ar.plural.as_str()),
        ("demo.example.com", "lamps")
    );
    assert_eq!(Policy::crd().spec.scope, "Cluster");
    assert_eq!(
        Lamp::DESCRIPTOR.spec_type,
        "derive_behaviour::kinds::LampSpec"
    );
}

fn not_structural(
    result: Result<kubeforge::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition, CrdError>,
) -> (String, Vec<String>) {
    match result {
        Err(e @ CrdError::NotStructural { .. }) => {
            let message = e.to_string();
            let CrdError::NotStructural { errors, .. } = e else {
                unreachable!()
            };
            (message, errors.into_iter().map(|e| e.path).collect())
        }
        other => panic!("expected NotStructural, got {other:?}"),
    }
}

#[test]
fn mutually_recursive_types_are_an_error_naming_the_field() {
    let (message, paths) = not_structural(Org::try_crd());
    assert!(
        message.contains("Org (derive_behaviour::kinds::OrgSpec)"),
        "{message}"
    );
    assert!(message.contains("recursive"), "{message}");
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with(".spec.root.members[*].leads")),
        "{paths:?}"
    );
}

#[test]
fn an_untagged_enum_of_different_json_types_is_an_error_naming_the_field() {
    let (message, paths) = not_structural(Knob::try_crd());
    assert_eq!(paths, [".spec.setting"]);
    assert!(message.contains("untagged enum"), "{message}");
}

#[test]
fn a_mixed_enum_from_schemars_derive_is_an_error_not_a_panic() {
    let (message, paths) = not_structural(Switch::try_crd());
    assert_eq!(paths, [".spec.state"]);
    assert!(message.contains("mixed enum"), "{message}");
}

#[test]
#[should_panic(expected = "cannot become a structural schema")]
fn crd_panics_with_the_same_message() {
    let _ = Knob::crd();
}

mod optional {
    use kubeforge::prelude::*;

    /// Markers on optional nested objects and enums.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "demo.example.com", version = "v1", kind = "Heater")]
    pub struct HeaterSpec {
        #[crd(default = json!({"celsius": 20}), validation = "self.celsius < 30")]
        pub target: Option<Target>,
        #[crd(default = "Eco")]
        pub mode: Option<Mode>,
        #[crd(max_items = 2)]
        pub schedules: Option<Vec<Target>>,
    }

    /// A temperature.
    #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
    pub struct Target {
        /// Degrees.
        pub celsius: i32,
    }

    /// A mode.
    #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
    pub enum Mode {
        /// Saves energy.
        Eco,
        /// Full power.
        Boost,
    }
}

#[test]
fn markers_on_optional_objects_and_enums_stay_structural() {
    let crd = optional::Heater::try_crd().unwrap();
    assert!(kubeforge::crd::check_crd(&crd).is_empty());
    let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
    let spec = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert_eq!(spec["target"]["default"], json!({"celsius": 20}));
    assert_eq!(spec["target"]["type"], "object");
    // Optional, not nullable: a `null` is dropped and the default applies.
    assert!(spec["target"].get("nullable").is_none());
    assert_eq!(
        spec["target"]["x-kubernetes-validations"][0]["rule"],
        "self.celsius < 30"
    );
    assert_eq!(spec["mode"]["default"], "Eco");
    assert_eq!(spec["mode"]["enum"], json!(["Eco", "Boost"]));
    assert_eq!(spec["schedules"]["maxItems"], 2);
}

mod nullability {
    use kubeforge::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use kubeforge::prelude::*;

    /// Which fields say `nullable`.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "demo.example.com", version = "v1", kind = "Valve")]
    #[serde(rename_all = "camelCase")]
    pub struct ValveSpec {
        /// May be absent.
        pub plain: Option<i32>,
        /// A serde default of `None` is no schema default.
        #[serde(default)]
        pub defaulted: Option<String>,
        /// Absent when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub skipped: Option<bool>,
        /// Says it accepts `null`.
        #[crd(nullable)]
        pub explicit: Option<String>,
        /// Must be there; `None` is written as `null`.
        #[crd(required)]
        pub present: Option<String>,
        /// Absent, `null` and a value are three states.
        pub tristate: Option<Option<String>>,
        /// Fully qualified.
        pub qualified: std::option::Option<u16>,
        /// Optional int-or-string.
        pub surge: Option<IntOrString>,
        /// The field's own words.
        pub opening: Option<Opening>,
        /// A unit enum.
        pub mode: Option<Mode>,
        /// Lists of optional values keep their nulls.
        pub slots: Vec<Option<i32>>,
    }

    /// How far a valve opens.
    #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub enum Opening {
        /// A percentage.
        Percent(u8),
        /// Steps of a stepper motor.
        Steps(u32),
    }

    /// Operating mode.
    #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
    pub enum Mode {
        /// Automatic.
        Auto,
        /// Manual.
        Manual,
    }
}

/// `Option<T>` means "may be absent" (not in `required`), as an optional
/// pointer does for controller-gen, which writes no `nullable` for it;
/// `nullable` comes from `#[crd(nullable)]`, from `#[crd(required)]` on an
/// Option (the key must be sent, and `None` is sent as `null`), and from
/// `Option<Option<T>>`. kube-apiserver drops a `null` sent for a
/// non-nullable field before defaulting, so `None` still round-trips.
#[test]
fn option_fields_are_optional_not_nullable_unless_asked() {
    let crd = nullability::Valve::try_crd().unwrap();
    assert!(kubeforge::crd::check_crd(&crd).is_empty());
    let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
    let spec = &schema["openAPIV3Schema"]["properties"]["spec"];
    let props = &spec["properties"];
    let nullable = |field: &str| props[field].get("nullable") == Some(&json!(true));
    for field in [
        "plain",
        "defaulted",
        "skipped",
        "qualified",
        "surge",
        "opening",
        "mode",
    ] {
        assert!(!nullable(field), "{field}: {}", props[field]);
    }
    for field in ["explicit", "present", "tristate"] {
        assert!(nullable(field), "{field}: {}", props[field]);
    }
    assert_eq!(spec["required"], json!(["present", "slots"]));
    assert_eq!(props["plain"]["type"], "integer");
    assert!(props["defaulted"].get("default").is_none());
    assert_eq!(props["qualified"]["format"], "uint16");
    assert_eq!(props["surge"]["x-kubernetes-int-or-string"], true);
    assert_eq!(props["mode"]["enum"], json!(["Auto", "Manual"]));
    assert_eq!(props["mode"]["type"], "string");
    // The data enum's schema, with the field's description.
    assert_eq!(props["opening"]["type"], "object");
    assert_eq!(props["opening"]["description"], "The field's own words.");
    assert!(props["opening"]["properties"]["percent"].is_object());
    assert_eq!(props["slots"]["items"]["nullable"], true);
}
