//! The seam between the write path and admission: the points of a create,
//! update or delete where kube-apiserver runs its admission chain
//! (mutating admission before the strategy prepares and validates the
//! object, validating admission after it, both inside an update's retry
//! loop), and the conversion of a custom resource between the request's
//! version and the storage version when its CRD converts through a
//! webhook. The write path calls an [`Admission`]; requests pass the
//! webhook chain, the server's own writes pass [`NoAdmission`]. The write
//! path is synchronous (it runs on the work threads), so an admission that
//! calls out blocks its thread for the call.

use serde_json::Value;

use crate::machinery::status::ApiError;
use crate::registry::ResourceDef;

/// The operation being admitted (`admission.Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    /// `CREATE`, `UPDATE`, `DELETE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// What admission is told about a write besides the objects
/// (`admission.Attributes`).
#[derive(Debug)]
pub(crate) struct Attributes<'a> {
    pub def: &'a ResourceDef,
    pub operation: Operation,
    pub subresource: Option<&'a str>,
    /// The version the request was made at.
    pub version: &'a str,
    /// The object's namespace; a Namespace's own name for the namespace
    /// itself once it exists (kube-apiserver's request info does that).
    pub namespace: &'a str,
    /// Empty on a create with `generateName` before the name is made.
    pub name: &'a str,
    pub dry_run: bool,
    /// The operation's `meta.k8s.io/v1` options (`CreateOptions`, ...).
    pub options: &'a Value,
    /// The kind admission sees when a subresource has its own (the
    /// `scale` subresource's `autoscaling/v1` `Scale`).
    pub sub_kind: Option<SubKind>,
}

/// A subresource's own kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SubKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
}

/// `autoscaling/v1` `Scale`, what the scale subresource reads and writes.
pub(crate) const SCALE: SubKind = SubKind {
    group: "autoscaling",
    version: "v1",
    kind: "Scale",
};

/// The admission chain a write runs through.
pub(crate) trait Admission: Send + Sync {
    /// Mutating admission: may rewrite `object`, which is `None` on a
    /// delete (where a patch is an error).
    fn mutate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError>;

    /// Validating admission, on the object about to be stored.
    fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError>;

    /// `object` converted to `api_version`: unchanged when it is there
    /// already; its `apiVersion` rewritten when its kind's versions share
    /// one shape; through the CRD's conversion webhook otherwise.
    fn convert(
        &self,
        def: &ResourceDef,
        object: Value,
        api_version: &str,
    ) -> Result<Value, ApiError>;
}

/// The admission of the server's own writes (the garbage collector, the
/// namespace controller, seeding): none, and no conversion webhook, since
/// they write at the storage version.
pub(crate) struct NoAdmission;

impl Admission for NoAdmission {
    fn mutate(
        &self,
        _: &Attributes<'_>,
        _: Option<&mut Value>,
        _: Option<&Value>,
    ) -> Result<(), ApiError> {
        Ok(())
    }

    fn validate(
        &self,
        _: &Attributes<'_>,
        _: Option<&Value>,
        _: Option<&Value>,
    ) -> Result<(), ApiError> {
        Ok(())
    }

    fn convert(
        &self,
        def: &ResourceDef,
        object: Value,
        api_version: &str,
    ) -> Result<Value, ApiError> {
        crate::registry::conversion::local_conversion(def, object, api_version)
    }
}
