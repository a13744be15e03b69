//! The patch engine of the in-process API server: strategic merge patch for
//! built-in kinds, server-side apply with `metadata.managedFields`, conflicts
//! and `force`, and the field ownership other writes record. Pure functions
//! on `serde_json::Value`; the server decides when to call them.
//!
//! - [`strategic_merge`] applies a strategic merge patch.
//! - [`apply`] applies a configuration server-side; [`track_update`] records
//!   who changed what on every other write.
//! - [`MergeSchema`] says how a kind's lists and maps merge;
//!   [`merge_schema_of`] has the built-in kinds', [`OpenApiMergeSchema`]
//!   reads a custom resource's from its CRD schema.
//! - [`FieldSet`] and [`PathElement`] are structured-merge-diff's field sets
//!   and their `fieldsV1` encoding.
//!
//! How a server uses it, per write (`now` is the request time, RFC 3339):
//!
//! - POST / PUT / merge, JSON and strategic patches: compute the new object
//!   (with [`strategic_merge`] for `application/strategic-merge-patch+json`
//!   on built-in kinds), then `track_update(old, &mut new, manager,
//!   subresource, now, schema)` before storing (`old` is `None` on create).
//! - `application/apply-patch+yaml`: `apply(live, &config, manager, force,
//!   subresource, now, schema)` returns the object to store; on error answer
//!   [`ApplyError::http_status`] / [`ApplyError::reason`] /
//!   [`ApplyError::status_message`], with one cause per [`Conflict`]
//!   (`type` [`FIELD_MANAGER_CONFLICT`], `message` [`Conflict::message`],
//!   `field` [`Conflict::field`]).
//! - Kinds with a status subresource: [`apply_ignoring`] and
//!   [`track_update_ignoring`] with `status` as the ignored set on the main
//!   resource, so appliers there never own status.
//! - Schemas: [`merge_schema_of`] for built-ins, an
//!   [`OpenApiMergeSchema`] per CRD version for custom resources.

mod apply;
mod builtin;
mod fieldpath;
mod managed;
mod openapi;
mod schema;
mod strategic;
mod typed;

#[cfg(test)]
mod tests;

pub use apply::{apply_ignoring, track_update_ignoring, ApplyError, FIELD_MANAGER_CONFLICT};
pub use builtin::{merge_schema_of, object_meta_schema, Kind};
pub use fieldpath::{FieldSet, PathElement};
pub use openapi::OpenApiMergeSchema;
pub use schema::{ListType, MergeSchema};
pub use strategic::{strategic_merge, PatchError};

// What only the engine's own tests call.
#[cfg(test)]
use {
    apply::{
        apply, decode_managed_fields, field_set, track_update, Conflict, LAST_APPLIED_ANNOTATION,
    },
    fieldpath::{values_equal, FieldSetError, Path},
    managed::Operation,
    schema::Untyped,
};
