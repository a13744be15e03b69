//! Update (PUT, and the core of every patch): the status, scale and
//! finalize subresources, system fields kept from the stored object,
//! generation bumps, the finalizer rules while deleting, no-op detection,
//! removal when the last finalizer goes, conflict retries; mutating
//! admission on the patched object and validating admission on the
//! prepared one, inside the retry loop as in kube-apiserver's
//! `GuaranteedUpdate`.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{json, Value};

use super::checks::{check_type_meta, validate};
use super::hooks::{after_delete, after_write};
use super::opts::{store_error, write_options, Sub, WriteOpts, Written};
use crate::admission::attributes::{Admission, Attributes, NoAdmission, Operation};
use crate::machinery::status::{ApiError, Cause};
use crate::registry::conversion::{webhook_conversion, with_api_version};
use crate::registry::state::Shared;
use crate::registry::{BuiltinKind, GenerationPolicy, ResourceDef};
use crate::storage::{ObjKey, StoreError, StoredObject};
use crate::{machinery::util, objects::engines, registry::fields};

fn generation_changed(def: &ResourceDef, old: &Value, new: &Value) -> bool {
    match def.generation_fields() {
        None => false,
        Some(GenerationPolicy::Fields(fields)) => fields.iter().any(|f| old.get(*f) != new.get(*f)),
        Some(GenerationPolicy::AllButMetadata) => {
            let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
                return old != new;
            };
            let skip = |k: &str| {
                k == "metadata" || (def.status && k == "status") || k == "apiVersion" || k == "kind"
            };
            let ok: Vec<_> = o.iter().filter(|(k, _)| !skip(k)).collect();
            let nk: Vec<_> = n.iter().filter(|(k, _)| !skip(k)).collect();
            ok != nk
        }
    }
}

/// Builds the object an update stores, from the old object and what the
/// client sent, type-checked and admitted (strategy `PrepareForUpdate`
/// plus `BeforeUpdate`).
fn prepare_update(
    def: &ResourceDef,
    old: &Value,
    mut new: Value,
    opts: &WriteOpts,
) -> Result<(Value, Vec<String>), ApiError> {
    let name = util::meta_str(old, "name").unwrap_or("").to_owned();
    let is_namespace = def.is(BuiltinKind::Namespace);
    let mut next = match opts.sub {
        Sub::Status => {
            let mut next = old.clone();
            if let Some(map) = next.as_object_mut() {
                match new.get("status") {
                    Some(s) => map.insert("status".into(), s.clone()),
                    None => map.remove("status"),
                };
            }
            if let (Some(mf), Some(meta)) = (
                new.pointer("/metadata/managedFields").cloned(),
                util::meta_mut(&mut next),
            ) {
                meta.insert("managedFields".into(), mf);
            }
            next
        }
        Sub::Finalize => {
            let mut next = old.clone();
            if let Some(spec) = fields::ensure_object(&mut next, &["spec"]) {
                match new.pointer("/spec/finalizers") {
                    Some(f) => spec.insert("finalizers".into(), f.clone()),
                    None => spec.remove("finalizers"),
                };
            }
            next
        }
        Sub::Main | Sub::Scale => {
            if def.status {
                if let Some(map) = new.as_object_mut() {
                    match old.get("status") {
                        Some(s) => map.insert("status".into(), s.clone()),
                        None => map.remove("status"),
                    };
                }
            }
            if is_namespace {
                let fins = old.pointer("/spec/finalizers").cloned();
                if let Some(spec) = fields::ensure_object(&mut new, &["spec"]) {
                    match fins {
                        Some(f) => spec.insert("finalizers".into(), f),
                        None => spec.remove("finalizers"),
                    };
                }
            }
            new
        }
    };
    // System fields come from the stored object.
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Some(uid) = util::meta_str(&next, "uid") {
        if !uid.is_empty() && Some(uid) != old_meta.get("uid").and_then(Value::as_str) {
            return Err(ApiError::invalid(
                &def.kind,
                &def.group,
                &name,
                vec![Cause::invalid(
                    "metadata.uid",
                    format!("Invalid value: \"{uid}\": field is immutable"),
                )],
            ));
        }
    }
    if let Some(meta) = util::meta_mut(&mut next) {
        for f in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "name",
            "namespace",
        ] {
            match old_meta.get(f) {
                Some(v) => meta.insert(f.into(), v.clone()),
                None => meta.remove(f),
            };
        }
        meta.remove("selfLink");
        meta.insert(
            "resourceVersion".into(),
            old_meta
                .get("resourceVersion")
                .cloned()
                .unwrap_or(Value::Null),
        );
    }
    // No new finalizers once deletion has started (ValidateObjectMetaUpdate).
    if old_meta.get("deletionTimestamp").is_some() {
        let before = util::finalizers(old);
        let added: Vec<String> = util::finalizers(&next)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        if !added.is_empty() {
            let quoted: Vec<String> = added.iter().map(|f| format!("\"{f}\"")).collect();
            return Err(ApiError::invalid(
                &def.kind,
                &def.group,
                &name,
                vec![Cause::forbidden(
                    "metadata.finalizers",
                    format!("no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}", quoted.join(", ")),
                )],
            ));
        }
    }
    def.prepare_for_update(&mut next, old);
    if generation_changed(def, old, &next) {
        let g = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if let Some(meta) = util::meta_mut(&mut next) {
            meta.insert("generation".into(), json!(g + 1));
        }
    }
    let warnings = validate(def, &mut next, Some(old), opts)?;
    if !opts.apply {
        engines::track_managed_fields(
            def,
            Some(old),
            &mut next,
            &opts.manager,
            opts.sub.name(),
            &util::now(),
        );
    }
    Ok((next, warnings))
}

/// How an update's resourceVersion precondition is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Precondition {
    /// The client named a resourceVersion: 409 if it is stale.
    Rv(u64),
    /// No resourceVersion: last write wins (built-in PUT, patches).
    None,
}

/// Updates an object through the main, status, scale or finalize endpoint,
/// with no admission (the server's own writes). `mutate` builds the
/// client's intended object from the current one (a PUT body ignores it; a
/// patch applies itself to it); conflicts from other writers are retried
/// unless the client gave a resourceVersion.
pub(crate) fn update(
    shared: &Shared,
    def: &ResourceDef,
    key: &ObjKey,
    opts: &WriteOpts,
    mutate: impl FnMut(&Value) -> Result<(Value, Precondition), ApiError>,
) -> Result<Written, ApiError> {
    update_admitted(shared, def, key, opts, mutate, &NoAdmission)
}

/// [`update`] through `admission`: the intended object is admitted by the
/// mutating chain, prepared and validated, then admitted by the validating
/// chain, on every attempt.
pub(crate) fn update_admitted(
    shared: &Shared,
    def: &ResourceDef,
    key: &ObjKey,
    opts: &WriteOpts,
    mut mutate: impl FnMut(&Value) -> Result<(Value, Precondition), ApiError>,
    admission: &dyn Admission,
) -> Result<Written, ApiError> {
    let res = def.key();
    // A kind converted by a webhook is updated at the request's version
    // (the others have one shape under every version).
    let converts = webhook_conversion(def).is_some();
    let request_api_version = def.api_version(&opts.version);
    let storage_api_version = def.api_version(&def.storage_version);
    let options = write_options(Operation::Update, opts);
    let is_namespace = def.is(BuiltinKind::Namespace);
    let attrs = Attributes {
        def,
        operation: Operation::Update,
        subresource: opts.sub.name(),
        version: &opts.version,
        namespace: if is_namespace { &key.1 } else { &key.0 },
        name: &key.1,
        dry_run: opts.dry_run,
        options: &options,
        sub_kind: None,
    };
    loop {
        let old = shared
            .storage
            .lock()
            .get(&res, key)
            .ok_or_else(|| ApiError::not_found(&def.plural, &def.group, &key.1))?;
        // Kinds stored as another resource are updated in their own shape.
        // Parsed for this write only: the stored version keeps its bytes.
        let old_value = old.to_value();
        let mut current = match def.view(&old_value) {
            Some(view) => Cow::Owned(view),
            None => Cow::Borrowed(&old_value),
        };
        if converts {
            let stored = current.into_owned();
            current = Cow::Owned(admission.convert(def, stored, &request_api_version)?);
        }
        let (mut intended, pre) = mutate(&current)?;
        if let Precondition::Rv(rv) = pre {
            if rv != old.rv {
                return Err(ApiError::conflict(&def.plural, &def.group, &key.1));
            }
        }
        check_type_meta(def, &mut intended, &opts.version)?;
        if converts {
            intended = with_api_version(intended, &request_api_version);
        }
        def.default_fields(&mut intended);
        admission.mutate(&attrs, Some(&mut intended), Some(&current))?;
        let (next, warnings) = prepare_update(def, &current, intended, opts)?;
        admission.validate(&attrs, Some(&next), Some(&current))?;
        if next == *current {
            return Ok(Written { obj: old, warnings });
        }
        let next = admission.convert(def, next, &storage_api_version)?;
        let next = def.to_storage(next);
        let finished = next.pointer("/metadata/deletionTimestamp").is_some()
            && util::finalizers(&next).is_empty()
            && !namespace_spec_finalizers(def, &next);
        if opts.dry_run {
            return Ok(Written {
                obj: Arc::new(StoredObject::encode(next, old.rv)),
                warnings,
            });
        }
        let result = if finished {
            // Removing the last finalizer completes the deletion.
            let r = shared.storage.lock().delete(&res, key, Some(old.rv), None);
            r.inspect(|gone| after_delete(shared, def, gone))
        } else {
            let r = shared.storage.lock().update(&res, key, next, Some(old.rv));
            r.inspect(|stored| after_write(shared, def, Some(&old), stored))
        };
        match result {
            Ok(obj) => return Ok(Written { obj, warnings }),
            Err(StoreError::Conflict) if pre == Precondition::None => continue,
            Err(e) => return Err(store_error(def, &key.1, e)),
        }
    }
}

pub(super) fn namespace_spec_finalizers(def: &ResourceDef, obj: &Value) -> bool {
    def.is(BuiltinKind::Namespace)
        && obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
}
