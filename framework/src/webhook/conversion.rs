//! `/convert`: the CRD conversion webhook (`ConversionReview`
//! `apiextensions.k8s.io/v1`) for every multi-version kind registered with
//! a hub-and-spoke [`Converter`]. A review may mix kinds' source versions;
//! each object goes to its kind's converter, spoke to spoke through the
//! hub. The answer follows the rules kube-apiserver checks: the request's
//! uid, every object in order at the desired apiVersion with its kind and
//! metadata (only labels and annotations may change), or `result.status:
//! Failure` with the conversion function's message as is (as
//! controller-runtime answers), or, when the framework itself could not
//! convert, a message naming the object.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::crd::conversion::{ConversionError, Converter, Hub};

/// The path controller-runtime serves conversion at.
pub const CONVERT_PATH: &str = "/convert";

const REVIEW_VERSION: &str = "apiextensions.k8s.io/v1";

/// One kind's conversions, type-erased.
pub(crate) trait KindConverter: Send + Sync + 'static {
    fn convert(&self, object: Value, desired: &str) -> Result<Value, ConversionError>;
}

impl<H: Hub> KindConverter for Converter<H> {
    fn convert(&self, object: Value, desired: &str) -> Result<Value, ConversionError> {
        Converter::convert(self, object, desired)
    }
}

/// The converters of every registered kind, by group and kind.
#[derive(Clone, Default)]
pub(crate) struct Conversions {
    kinds: HashMap<(String, String), Arc<dyn KindConverter>>,
}

impl Conversions {
    pub(crate) fn add<H: Hub>(&mut self, converter: Converter<H>) {
        let (group, kind) = converter.group_kind();
        self.kinds
            .insert((group.to_owned(), kind.to_owned()), Arc::new(converter));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// The review answering `body`.
    pub(crate) fn answer(&self, body: &[u8]) -> Vec<u8> {
        let response = match decode(body) {
            Ok(request) => {
                let uid = request.uid.clone();
                match self.convert_all(request) {
                    Ok(objects) => json!({
                        "uid": uid,
                        "convertedObjects": objects,
                        "result": {"status": "Success"},
                    }),
                    Err(message) => failure(&uid, &message),
                }
            }
            Err((uid, message)) => failure(&uid, &message),
        };
        let review = json!({
            "apiVersion": REVIEW_VERSION,
            "kind": "ConversionReview",
            "response": response,
        });
        serde_json::to_vec(&review).unwrap_or_default()
    }

    fn convert_all(&self, request: ConversionRequest) -> Result<Vec<Value>, String> {
        let desired = request.desired_api_version;
        let desired_group = desired.rsplit_once('/').map_or("", |(group, _)| group);
        let mut converted = Vec::with_capacity(request.objects.len());
        for (index, object) in request.objects.into_iter().enumerate() {
            let kind = object
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let name = object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let what = format!("object {index} ({kind} {name:?})");
            let converter = self
                .kinds
                .get(&(desired_group.to_owned(), kind.clone()))
                .ok_or_else(|| {
                    format!(
                        "{what}: no conversion is registered for {kind} in group {desired_group:?}"
                    )
                })?;
            // A conversion function's refusal is its message as is, as
            // controller-runtime answers; the framework's own failures
            // name the object.
            let object = converter.convert(object, &desired).map_err(|e| match e {
                ConversionError::Failed(message) => message,
                e => format!("{what}: {e}"),
            })?;
            converted.push(object);
        }
        Ok(converted)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConversionRequest {
    uid: String,
    #[serde(rename = "desiredAPIVersion")]
    desired_api_version: String,
    #[serde(default)]
    objects: Vec<Value>,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default, rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    request: Option<Value>,
}

/// The request in `body`, or the uid (when known) and why it is unusable.
fn decode(body: &[u8]) -> Result<ConversionRequest, (String, String)> {
    let envelope: Envelope = serde_json::from_slice(body).map_err(|e| {
        (
            String::new(),
            format!("the body is not a ConversionReview: {e}"),
        )
    })?;
    if envelope.api_version.as_deref() != Some(REVIEW_VERSION)
        || envelope.kind.as_deref() != Some("ConversionReview")
    {
        return Err((
            String::new(),
            format!(
                "expected a ConversionReview of {REVIEW_VERSION}, got {}, Kind={}",
                envelope.api_version.unwrap_or_default(),
                envelope.kind.unwrap_or_default()
            ),
        ));
    }
    let Some(request) = envelope.request.filter(Value::is_object) else {
        return Err((String::new(), "the ConversionReview has no request".into()));
    };
    let uid = request
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    serde_json::from_value(request).map_err(|e| (uid, format!("invalid request: {e}")))
}

fn failure(uid: &str, message: &str) -> Value {
    json!({
        "uid": uid,
        "convertedObjects": [],
        "result": {"status": "Failure", "message": message},
    })
}
