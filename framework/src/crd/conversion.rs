//! Hub-and-spoke conversion between the versions of a kind, as in
//! controller-runtime's `conversion.Hub` / `conversion.Convertible`: one
//! version (usually the storage version) is the [`Hub`]; every other version
//! is [`Convertible`] to and from it. A [`Converter`] answers the apiserver's
//! `ConversionReview`s, which is what a conversion webhook serves.

use std::collections::BTreeMap;
use std::fmt;

use kube_core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde_json::Value;

use super::CustomResource;

/// The version every other version converts through.
pub trait Hub: CustomResource {}

/// A version that converts to and from the hub `H`.
///
/// Convert `spec` and `status`; metadata is carried over by the
/// [`Converter`] unchanged, as the apiserver requires.
pub trait Convertible<H: Hub>: CustomResource {
    /// This version to the hub (controller-runtime's `ConvertTo`).
    fn to_hub(&self) -> Result<H, ConversionError>;
    /// The hub to this version (controller-runtime's `ConvertFrom`).
    fn from_hub(hub: &H) -> Result<Self, ConversionError>;
}

/// Why an object could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    /// The object's apiVersion is not one this converter knows.
    #[error("cannot convert {kind}: unknown apiVersion {api_version:?}")]
    UnknownVersion {
        /// The kind.
        kind: String,
        /// The apiVersion.
        api_version: String,
    },
    /// The object did not decode as its version's type.
    #[error("cannot decode {kind} {api_version}: {source}")]
    Decode {
        /// The kind.
        kind: String,
        /// The apiVersion.
        api_version: String,
        /// The decoding error.
        source: serde_json::Error,
    },
    /// The converted object could not be encoded.
    #[error("cannot encode {kind} {api_version}: {source}")]
    Encode {
        /// The kind.
        kind: String,
        /// The apiVersion.
        api_version: String,
        /// The encoding error.
        source: serde_json::Error,
    },
    /// A conversion function refused the object. The message is the whole
    /// of what the API server is told (controller-runtime answers with the
    /// conversion's `err.Error()` as is), so it says what was wrong itself.
    #[error("{0}")]
    Failed(String),
}

type ToHub<H> = fn(Value) -> Result<H, ConversionError>;
type FromHub<H> = fn(&H) -> Result<Value, ConversionError>;

/// Converts objects of one kind between its versions through the hub `H`.
pub struct Converter<H: Hub> {
    versions: BTreeMap<String, (ToHub<H>, FromHub<H>)>,
}

impl<H: Hub> fmt::Debug for Converter<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Converter")
            .field("hub", &H::DESCRIPTOR.api_version())
            .field("versions", &self.versions.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<H: Hub> Default for Converter<H> {
    fn default() -> Self {
        Self::new()
    }
}

fn decode<K: CustomResource>(object: Value) -> Result<K, ConversionError> {
    serde_json::from_value(object).map_err(|source| ConversionError::Decode {
        kind: K::DESCRIPTOR.kind.into(),
        api_version: K::DESCRIPTOR.api_version(),
        source,
    })
}

fn encode<K: CustomResource>(object: &K) -> Result<Value, ConversionError> {
    serde_json::to_value(object).map_err(|source| ConversionError::Encode {
        kind: K::DESCRIPTOR.kind.into(),
        api_version: K::DESCRIPTOR.api_version(),
        source,
    })
}

impl<H: Hub> Converter<H> {
    /// A converter that knows the hub version only.
    pub fn new() -> Self {
        let mut versions: BTreeMap<String, (ToHub<H>, FromHub<H>)> = BTreeMap::new();
        versions.insert(H::DESCRIPTOR.api_version(), (decode::<H>, encode::<H>));
        Converter { versions }
    }

    /// Add a spoke version.
    pub fn spoke<S: Convertible<H>>(mut self) -> Self {
        fn to_hub<H: Hub, S: Convertible<H>>(object: Value) -> Result<H, ConversionError> {
            decode::<S>(object)?.to_hub()
        }
        fn from_hub<H: Hub, S: Convertible<H>>(hub: &H) -> Result<Value, ConversionError> {
            encode(&S::from_hub(hub)?)
        }
        self.versions.insert(
            S::DESCRIPTOR.api_version(),
            (to_hub::<H, S>, from_hub::<H, S>),
        );
        self
    }

    /// Convert one object (as JSON) to `desired_api_version`, as
    /// kube-apiserver accepts a converted object: at the desired
    /// apiVersion, with the same kind, and with the metadata it had except
    /// for labels and annotations, which the conversion may change (a
    /// conversion that leaves them out keeps them as they were).
    pub fn convert(
        &self,
        object: Value,
        desired_api_version: &str,
    ) -> Result<Value, ConversionError> {
        let kind = H::DESCRIPTOR.kind;
        let source_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if source_version == desired_api_version {
            return Ok(object);
        }
        let unknown = |api_version: &str| ConversionError::UnknownVersion {
            kind: kind.into(),
            api_version: api_version.into(),
        };
        let (to_hub, _) = self
            .versions
            .get(&source_version)
            .ok_or_else(|| unknown(&source_version))?;
        let (_, from_hub) = self
            .versions
            .get(desired_api_version)
            .ok_or_else(|| unknown(desired_api_version))?;
        let metadata = object.get("metadata").cloned();
        let source_kind = object.get("kind").cloned();
        let hub = to_hub(object)?;
        let mut converted = from_hub(&hub)?;
        let Some(obj) = converted.as_object_mut() else {
            return Err(ConversionError::Failed(format!(
                "{kind} {desired_api_version} did not encode as a JSON object"
            )));
        };
        obj.insert("apiVersion".into(), desired_api_version.into());
        if let Some(source_kind) = source_kind {
            obj.insert("kind".into(), source_kind);
        }
        if let Some(mut metadata) = metadata {
            let changed = obj.get("metadata").and_then(Value::as_object);
            if let (Some(changed), Some(kept)) = (changed, metadata.as_object_mut()) {
                for field in ["labels", "annotations"] {
                    if let Some(value) = changed.get(field) {
                        kept.insert(field.into(), value.clone());
                    }
                }
            }
            obj.insert("metadata".into(), metadata);
        }
        Ok(converted)
    }

    /// The group and kind this converter serves.
    pub fn group_kind(&self) -> (&'static str, &'static str) {
        (H::DESCRIPTOR.group, H::DESCRIPTOR.kind)
    }

    /// The apiVersions this converter knows, the hub's among them.
    pub fn api_versions(&self) -> impl Iterator<Item = &str> {
        self.versions.keys().map(String::as_str)
    }

    /// Answer a `ConversionReview` from the apiserver: every object converted,
    /// or a failure naming the first that could not be.
    pub fn review(&self, review: ConversionReview) -> ConversionReview {
        let request = match ConversionRequest::from_review(review) {
            Ok(request) => request,
            Err(e) => {
                return ConversionResponse::invalid(kube_core::Status::failure(
                    &e.to_string(),
                    "BadRequest",
                ))
                .into_review();
            }
        };
        let desired = request.desired_api_version.clone();
        let objects = request.objects.clone();
        let response = ConversionResponse::for_request(request);
        let mut converted = Vec::with_capacity(objects.len());
        for object in objects {
            match self.convert(object, &desired) {
                Ok(object) => converted.push(object),
                Err(e) => {
                    return response
                        .failure(kube_core::Status::failure(
                            &e.to_string(),
                            "ConversionFailed",
                        ))
                        .into_review();
                }
            }
        }
        response.success(converted).into_review()
    }
}
