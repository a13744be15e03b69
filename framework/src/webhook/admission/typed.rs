//! Typed admission for a kind `K`: a [`Defaulter`] changes the object and
//! the framework answers with the JSON patch from the object as sent to
//! the object as left; a [`Validator`] checks creates, updates (with the
//! old object) and deletes. Both may warn or deny.

use std::future::Future;
use std::marker::PhantomData;

use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::{Admission, AdmissionHandler, AdmissionRequest, Denial, Operation, Verdict};

/// What a defaulter or validator returns: warnings for the client, or a
/// denial.
pub type AdmissionResult = Result<Vec<String>, Denial>;

/// Sets defaults on objects of kind `K` as they are created or updated
/// (controller-runtime's `Defaulter[T]`). DELETE and CONNECT requests are
/// allowed without a call.
///
/// ```
/// use kubeforge::webhook::{AdmissionRequest, AdmissionResult, Defaulter};
/// use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
///
/// struct Labelled;
///
/// impl Defaulter<ConfigMap> for Labelled {
///     async fn default(&self, cm: &mut ConfigMap, _: &AdmissionRequest) -> AdmissionResult {
///         cm.metadata.labels.get_or_insert_with(Default::default)
///             .entry("team".into()).or_insert_with(|| "core".into());
///         Ok(vec![])
///     }
/// }
/// ```
pub trait Defaulter<K>: Send + Sync + 'static {
    /// Changes `object` in place; the framework sends the difference as a
    /// JSON patch.
    fn default(
        &self,
        object: &mut K,
        request: &AdmissionRequest,
    ) -> impl Future<Output = AdmissionResult> + Send;
}

/// Checks objects of kind `K` beyond what a schema can say
/// (controller-runtime's `Validator[T]`). Each method allows by default.
pub trait Validator<K>: Send + Sync + 'static {
    /// Checks a new object.
    fn validate_create(
        &self,
        object: &K,
        request: &AdmissionRequest,
    ) -> impl Future<Output = AdmissionResult> + Send {
        let _ = (object, request);
        async { Ok(Vec::new()) }
    }

    /// Checks a change from `old` to `new`.
    fn validate_update(
        &self,
        old: &K,
        new: &K,
        request: &AdmissionRequest,
    ) -> impl Future<Output = AdmissionResult> + Send {
        let _ = (old, new, request);
        async { Ok(Vec::new()) }
    }

    /// Checks a deletion of `object` (as stored).
    fn validate_delete(
        &self,
        object: &K,
        request: &AdmissionRequest,
    ) -> impl Future<Output = AdmissionResult> + Send {
        let _ = (object, request);
        async { Ok(Vec::new()) }
    }
}

/// A [`Defaulter`] as an [`AdmissionHandler`].
pub(crate) struct Defaulting<K, D> {
    defaulter: D,
    kind: PhantomData<fn() -> K>,
}

impl<K, D> Defaulting<K, D> {
    pub(crate) fn new(defaulter: D) -> Self {
        Self {
            defaulter,
            kind: PhantomData,
        }
    }
}

/// A [`Validator`] as an [`AdmissionHandler`].
pub(crate) struct Validating<K, V> {
    validator: V,
    kind: PhantomData<fn() -> K>,
}

impl<K, V> Validating<K, V> {
    pub(crate) fn new(validator: V) -> Self {
        Self {
            validator,
            kind: PhantomData,
        }
    }
}

/// The 400 for an object that does not decode as `K`.
fn undecodable<K>(which: &str, error: &serde_json::Error) -> Denial {
    Denial::new(
        400,
        "BadRequest",
        format!(
            "cannot decode the {which} as {}: {error}",
            std::any::type_name::<K>()
        ),
    )
}

fn decode<K: DeserializeOwned>(value: Option<&Value>, which: &str) -> Result<K, Denial> {
    let Some(value) = value else {
        return Err(Denial::new(
            400,
            "BadRequest",
            format!("the request has no {which}"),
        ));
    };
    K::deserialize(value).map_err(|e| undecodable::<K>(which, &e))
}

fn finish(result: AdmissionResult) -> Verdict {
    match result {
        Ok(warnings) => Verdict::allowed().with_warnings(warnings),
        Err(denial) => Verdict::denied(denial),
    }
}

impl<K, D> AdmissionHandler for Defaulting<K, D>
where
    K: Serialize + DeserializeOwned + Send + Sync + 'static,
    D: Defaulter<K>,
{
    fn admit(&self, admission: Admission) -> BoxFuture<'_, Verdict> {
        Box::pin(async move {
            if !matches!(
                admission.request.operation,
                Operation::Create | Operation::Update
            ) {
                return Verdict::allowed();
            }
            let before = admission.object.as_ref();
            let mut object: K = match decode(before, "object") {
                Ok(object) => object,
                Err(denial) => return Verdict::denied(denial),
            };
            let encode = |object: &K| {
                serde_json::to_value(object).map_err(|e| {
                    Denial::new(
                        500,
                        "InternalError",
                        format!(
                            "cannot encode the object as {}: {e}",
                            std::any::type_name::<K>()
                        ),
                    )
                })
            };
            let known = match encode(&object) {
                Ok(known) => known,
                Err(denial) => return Verdict::denied(denial),
            };
            let warnings = match self
                .defaulter
                .default(&mut object, &admission.request)
                .await
            {
                Ok(warnings) => warnings,
                Err(denial) => return Verdict::denied(denial),
            };
            let Some(before) = before else {
                return Verdict::allowed();
            };
            match encode(&object) {
                Ok(after) => defaulted(before, &known, &after).with_warnings(warnings),
                Err(denial) => Verdict::denied(denial),
            }
        })
    }
}

/// The patch from `before` to `after`, without removals of fields that
/// `known` (the object as the Rust type re-encodes it) lacks: a type that
/// does not know a field would otherwise erase it (controller-runtime drops
/// such removals too, unless told otherwise).
fn defaulted(before: &Value, known: &Value, after: &Value) -> Verdict {
    let mut verdict = Verdict::patched(before, after);
    if let Some(patch) = &mut verdict.patch {
        patch.0.retain(|op| match op {
            json_patch::PatchOperation::Remove(remove) => {
                known.pointer(remove.path.as_str()).is_some()
            }
            _ => true,
        });
        if patch.0.is_empty() {
            verdict.patch = None;
        }
    }
    verdict
}

impl<K, V> AdmissionHandler for Validating<K, V>
where
    K: DeserializeOwned + Send + Sync + 'static,
    V: Validator<K>,
{
    fn admit(&self, admission: Admission) -> BoxFuture<'_, Verdict> {
        Box::pin(async move {
            let request = &admission.request;
            let result = match request.operation {
                Operation::Create => match decode::<K>(admission.object.as_ref(), "object") {
                    Ok(object) => self.validator.validate_create(&object, request).await,
                    Err(denial) => Err(denial),
                },
                Operation::Update => {
                    let new = decode::<K>(admission.object.as_ref(), "object");
                    let old = decode::<K>(admission.old_object.as_ref(), "oldObject");
                    match (old, new) {
                        (Ok(old), Ok(new)) => {
                            self.validator.validate_update(&old, &new, request).await
                        }
                        (Err(denial), _) | (_, Err(denial)) => Err(denial),
                    }
                }
                Operation::Delete => {
                    match decode::<K>(admission.old_object.as_ref(), "oldObject") {
                        Ok(object) => self.validator.validate_delete(&object, request).await,
                        Err(denial) => Err(denial),
                    }
                }
                Operation::Connect => Ok(Vec::new()),
            };
            finish(result)
        })
    }
}
