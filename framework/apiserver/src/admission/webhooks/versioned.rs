//! An admitted object as a webhook or policy matched at another version
//! of its resource sees it (kube-apiserver's `NewVersionedAttributes`):
//! converted there through the admission's converter, which is the CRD's
//! conversion webhook when it has one.

use std::borrow::Cow;

use serde_json::Value;

use crate::admission::attributes::{Admission, Attributes};
use crate::machinery::status::ApiError;

/// `object` at `version`: borrowed when that is the request's version (or
/// the request is on a subresource with a kind of its own, the same at
/// every version), else converted. The error is the converter's.
pub(crate) fn at<'v>(
    admission: &dyn Admission,
    attrs: &Attributes<'_>,
    object: Option<&'v Value>,
    version: &str,
) -> Result<Option<Cow<'v, Value>>, ApiError> {
    match object {
        None => Ok(None),
        Some(o) if version == attrs.version || attrs.sub_kind.is_some() => {
            Ok(Some(Cow::Borrowed(o)))
        }
        Some(o) => {
            let api_version = attrs.def.api_version(version);
            admission
                .convert(attrs.def, o.clone(), &api_version)
                .map(|converted| Some(Cow::Owned(converted)))
        }
    }
}
