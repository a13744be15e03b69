//! Custom resources converted between versions by their CRD's conversion
//! webhook (`spec.conversion.strategy: Webhook`), as kube-apiserver's
//! `webhookConverter` converts them: one `ConversionReview` per object or
//! per page of a list, carrying only the objects not already at the
//! desired version (none: no call), POSTed to the CRD's `clientConfig`
//! through the admission webhooks' HTTPS client; the response checked as
//! kube-apiserver checks it ([`review`]), each object's metadata restored
//! from the original but for labels and annotations, then pruned and
//! defaulted with the target version's schema (the storage codec's
//! `schemaCoercingConverter`). Any failure is a 500 whose message is the
//! converter's error, unprefixed, as kube-apiserver's handlers answer a
//! plain error from the storage codec; a conversion an `Equivalent`
//! admission webhook needs is wrapped as an `InternalError` by
//! [`crate::admission::webhooks`], as the admission dispatchers wrap it.
//!
//! The conversion is async: reads and watches await it on the runtime
//! (the call never blocks a runtime thread); the write path, which runs
//! on threads of its own, waits for it through [`crate::admission::webhooks::Chain`].
//! Kinds whose CRD has the `None` strategy keep the `apiVersion` rewrite
//! ([`local_conversion`]).

mod review;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::machinery::status::ApiError;
use crate::machinery::webhook_client::{self, Target};
use crate::registry::{CustomInfo, ResourceDef};
use crate::storage::StoredObject;

/// How long one conversion call may take. A CRD gives no timeout for its
/// converter; this is the bound of kube-apiserver's webhook REST client.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The conversion webhook of one CRD.
#[derive(Clone)]
pub(crate) struct Converter {
    kind: String,
    info: Arc<CustomInfo>,
}

impl Converter {
    /// The converter of `def` when its CRD converts through a webhook.
    pub fn of(def: &ResourceDef) -> Option<Self> {
        webhook_conversion(def)?;
        Some(Self {
            kind: def.kind.clone(),
            info: def.custom()?.clone(),
        })
    }

    fn webhook(&self) -> &Value {
        self.info
            .spec
            .pointer("/conversion/webhook")
            .unwrap_or(&Value::Null)
    }

    /// `objects` at `api_version`, in order: those already there as they
    /// are, the others through one review. `list` picks the error texts
    /// kube-apiserver uses for a list.
    pub async fn convert(
        &self,
        mut objects: Vec<Value>,
        api_version: &str,
        list: bool,
    ) -> Result<Vec<Value>, ApiError> {
        let pending: Vec<usize> = objects
            .iter()
            .enumerate()
            .filter(|(_, o)| api_version_of(o) != api_version)
            .map(|(i, _)| i)
            .collect();
        let Some(&first) = pending.first() else {
            return Ok(objects);
        };
        // The `GroupVersionKind` kube-apiserver names in its errors: the
        // object converted, or the list's first item to convert.
        let source = format!("{}, Kind={}", api_version_of(&objects[first]), self.kind);
        let sent: Vec<Value> = pending.iter().map(|&i| objects[i].clone()).collect();
        let versions = self
            .webhook()
            .get("conversionReviewVersions")
            .and_then(Value::as_array)
            .map(|vs| vs.iter().filter_map(Value::as_str).collect::<Vec<_>>())
            .unwrap_or_default();
        let (uid, review_version, body) = review::request(&versions, api_version, &sent)
            .map_err(|e| conversion_error(e.to_owned()))?;
        let failed = |why: String| {
            conversion_error(format!("conversion webhook for {source} failed: {why}"))
        };
        let target = Target::from_client_config(
            self.webhook().get("clientConfig").unwrap_or(&Value::Null),
            CALL_TIMEOUT,
        )
        .map_err(&failed)?;
        let answer = webhook_client::post(target, body).await.map_err(&failed)?;
        let converted = review::converted(&answer, review_version, &uid).map_err(&failed)?;
        if converted.len() != sent.len() {
            return Err(conversion_error(format!(
                "conversion webhook for {source} returned {} objects, expected {}",
                converted.len(),
                sent.len()
            )));
        }
        let check = review::Check {
            source: &source,
            api_version,
            list,
        };
        let target_version = api_version.rsplit('/').next().unwrap_or(api_version);
        let schema = self.info.structural.get(target_version);
        for (n, (i, mut out)) in pending.into_iter().zip(converted).enumerate() {
            let original = &objects[i];
            check
                .object(n, original, &mut out)
                .map_err(conversion_error)?;
            if let Some(schema) = schema {
                schema.prune(&mut out);
                schema.default(&mut out);
            }
            objects[i] = out;
        }
        Ok(objects)
    }

    /// Stored objects as served at `api_version`, re-encoded where a
    /// review converted them.
    pub async fn serve(
        &self,
        items: Vec<Arc<StoredObject>>,
        api_version: &str,
        list: bool,
    ) -> Result<Vec<Arc<StoredObject>>, ApiError> {
        // Only the objects not at `api_version` are copied and sent; the
        // others are served as stored.
        let pending: Vec<Value> = items
            .iter()
            .filter(|o| o.api_version().unwrap_or("") != api_version)
            .map(|o| o.to_value())
            .collect();
        if pending.is_empty() {
            return Ok(items);
        }
        let mut converted = self.convert(pending, api_version, list).await?.into_iter();
        Ok(items
            .into_iter()
            .map(|stored| {
                if stored.api_version().unwrap_or("") == api_version {
                    return stored;
                }
                match converted.next() {
                    Some(value) => Arc::new(StoredObject::encode(value, stored.rv)),
                    None => stored,
                }
            })
            .collect())
    }
}

/// Stored objects of `def` as served at `version`: through the CRD's
/// webhook when it has one, unchanged otherwise (the `None` strategy's
/// `apiVersion` rewrite happens when they are rendered).
pub(crate) async fn serve(
    def: &ResourceDef,
    version: &str,
    items: Vec<Arc<StoredObject>>,
    list: bool,
) -> Result<Vec<Arc<StoredObject>>, ApiError> {
    match Converter::of(def) {
        Some(c) => c.serve(items, &def.api_version(version), list).await,
        None => Ok(items),
    }
}

/// [`serve`] for one object.
pub(crate) async fn serve_one(
    def: &ResourceDef,
    version: &str,
    obj: Arc<StoredObject>,
) -> Result<Arc<StoredObject>, ApiError> {
    let mut served = serve(def, version, vec![obj.clone()], false).await?;
    Ok(served.pop().unwrap_or(obj))
}

fn api_version_of(obj: &Value) -> &str {
    obj.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

/// A conversion failure as clients see it: a 500 whose message is the
/// converter's error (kube-apiserver answers a plain error that way).
fn conversion_error(message: String) -> ApiError {
    ApiError::new(500, "", message)
}

/// Conversion without a webhook: nothing to do at the same version, the
/// `apiVersion` rewritten for a kind whose versions share one shape, an
/// error for a kind whose CRD needs its webhook.
pub(crate) fn local_conversion(
    def: &ResourceDef,
    object: Value,
    api_version: &str,
) -> Result<Value, ApiError> {
    if object.get("apiVersion").and_then(Value::as_str) == Some(api_version) {
        Ok(object)
    } else if webhook_conversion(def).is_some() {
        Err(ApiError::internal(format!(
            "{} needs its conversion webhook to reach {api_version}",
            def.kind
        )))
    } else {
        Ok(with_api_version(object, api_version))
    }
}

/// The CRD's `spec.conversion.webhook` when its strategy is `Webhook`.
pub(crate) fn webhook_conversion(def: &ResourceDef) -> Option<&Value> {
    let conversion = def.custom()?.spec.get("conversion")?;
    (conversion.get("strategy").and_then(Value::as_str) == Some("Webhook"))
        .then(|| conversion.get("webhook"))
        .flatten()
}

/// `object` with its `apiVersion` set.
pub(crate) fn with_api_version(mut object: Value, api_version: &str) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!(api_version));
    }
    object
}
