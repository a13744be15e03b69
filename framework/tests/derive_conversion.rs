//! Hub-and-spoke conversion between versions of a kind (controller-runtime's
//! `Hub`/`Convertible`), and the `ConversionReview` answer a webhook sends.

use kubeforge::crd::conversion::{ConversionError, Converter, Convertible, Hub};
use kubeforge::kube_core::conversion::ConversionReview;
use kubeforge::serde_json::{self, json, Value};

mod v2 {
    use kubeforge::prelude::*;

    /// The hub: a length in millimetres.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "units.example.com", version = "v2", kind = "Rod", storage)]
    pub struct RodSpec {
        pub millimetres: u64,
    }
}

mod v1 {
    use kubeforge::prelude::*;

    /// A spoke: a length in centimetres.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[crd(group = "units.example.com", version = "v1", kind = "Rod")]
    pub struct RodSpec {
        pub centimetres: u64,
    }
}

impl Hub for v2::Rod {}

impl Convertible<v2::Rod> for v1::Rod {
    fn to_hub(&self) -> Result<v2::Rod, ConversionError> {
        let mut hub = v2::Rod::new(
            "",
            v2::RodSpec {
                millimetres: self.spec.centimetres * 10,
            },
        );
        hub.metadata = self.metadata.clone();
        Ok(hub)
    }

    fn from_hub(hub: &v2::Rod) -> Result<Self, ConversionError> {
        if hub.spec.millimetres % 10 != 0 {
            return Err(ConversionError::Failed(format!(
                "{} mm is not a whole number of centimetres",
                hub.spec.millimetres
            )));
        }
        let mut rod = v1::Rod::new(
            "",
            v1::RodSpec {
                centimetres: hub.spec.millimetres / 10,
            },
        );
        rod.metadata = hub.metadata.clone();
        Ok(rod)
    }
}

fn converter() -> Converter<v2::Rod> {
    Converter::new().spoke::<v1::Rod>()
}

fn rod(api_version: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": "Rod",
           "metadata": {"name": "r", "uid": "u-1", "labels": {"a": "b"}}, "spec": spec})
}

#[test]
fn spokes_convert_through_the_hub_keeping_metadata() {
    let c = converter();
    let up = c
        .convert(
            rod("units.example.com/v1", json!({"centimetres": 12})),
            "units.example.com/v2",
        )
        .unwrap();
    assert_eq!(up, rod("units.example.com/v2", json!({"millimetres": 120})));
    let down = c.convert(up, "units.example.com/v1").unwrap();
    assert_eq!(
        down,
        rod("units.example.com/v1", json!({"centimetres": 12}))
    );
    // Same version: returned untouched.
    let same = rod("units.example.com/v2", json!({"millimetres": 5}));
    assert_eq!(
        c.convert(same.clone(), "units.example.com/v2").unwrap(),
        same
    );
}

#[test]
fn unknown_versions_and_refusals_are_errors() {
    let c = converter();
    let err = c
        .convert(
            rod("units.example.com/v9", json!({})),
            "units.example.com/v2",
        )
        .unwrap_err();
    assert!(
        matches!(err, ConversionError::UnknownVersion { ref api_version, .. } if api_version == "units.example.com/v9")
    );
    let err = c
        .convert(
            rod("units.example.com/v2", json!({"millimetres": 5})),
            "units.example.com/v1",
        )
        .unwrap_err();
    assert!(err.to_string().contains("5 mm"), "{err}");
    let err = c
        .convert(
            rod("units.example.com/v1", json!({"centimetres": "x"})),
            "units.example.com/v2",
        )
        .unwrap_err();
    assert!(matches!(err, ConversionError::Decode { .. }), "{err}");
}

fn review(objects: Vec<Value>, desired: &str) -> ConversionReview {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "req-1", "desiredAPIVersion": desired, "objects": objects}
    }))
    .unwrap()
}

#[test]
fn reviews_are_answered_with_every_object_or_a_failure() {
    let c = converter();
    let answer = c.review(review(
        vec![
            rod("units.example.com/v1", json!({"centimetres": 1})),
            rod("units.example.com/v2", json!({"millimetres": 20})),
        ],
        "units.example.com/v2",
    ));
    let answer = serde_json::to_value(answer).unwrap();
    assert_eq!(answer["response"]["uid"], "req-1");
    assert_eq!(answer["response"]["result"]["status"], "Success");
    let objects = answer["response"]["convertedObjects"].as_array().unwrap();
    assert_eq!(objects[0]["spec"], json!({"millimetres": 10}));
    assert_eq!(objects[1]["spec"], json!({"millimetres": 20}));

    let failed = c.review(review(
        vec![rod("units.example.com/v2", json!({"millimetres": 3}))],
        "units.example.com/v1",
    ));
    let failed = serde_json::to_value(failed).unwrap();
    assert_eq!(failed["response"]["result"]["status"], "Failure");
    assert_eq!(
        failed["response"]["result"]["message"], "3 mm is not a whole number of centimetres",
        "the conversion's message as is"
    );
}
