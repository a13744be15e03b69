//! Delete (`store.go` `Delete`): preconditions, propagation policies as
//! finalizers, marking with `deletionTimestamp` while finalizers hold the
//! object, namespace termination (never of the system namespaces),
//! immediate removal otherwise; admission (mutating then validating, with
//! the stored object as `oldObject`) once the preconditions hold.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{json, Value};

use super::graceful::{self, Graceful};
use super::hooks::{after_delete, after_write};
use super::opts::store_error;
use super::update::namespace_spec_finalizers;
use crate::admission::attributes::{Admission, Attributes, NoAdmission, Operation};
use crate::machinery::status::{ApiError, Details};
use crate::registry::conversion::webhook_conversion;
use crate::registry::state::Shared;
use crate::registry::ResourceDef;
use crate::storage::{ObjKey, StoreError, StoredObject};
use crate::{machinery::util, registry::defaults};

/// `propagationPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Propagation {
    Orphan,
    Background,
    Foreground,
}

/// Delete options (`DeleteOptions` body or query).
#[derive(Clone, Debug, Default)]
pub(crate) struct DeleteOpts {
    pub propagation: Option<Propagation>,
    pub uid: Option<String>,
    pub rv: Option<u64>,
    pub dry_run: bool,
    /// `gracePeriodSeconds` (pods).
    pub grace_period: Option<i64>,
}

/// What a delete did.
#[derive(Debug)]
pub(crate) enum Deleted {
    /// Removed; the last state.
    Gone(Arc<StoredObject>),
    /// Marked for deletion, waiting for finalizers.
    Pending(Arc<StoredObject>),
}

/// The namespaces the NamespaceLifecycle admission plugin keeps from
/// deletion (its `immortalNamespaces`).
const IMMORTAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

impl DeleteOpts {
    /// The `meta.k8s.io/v1` `DeleteOptions` admission sees.
    fn to_options(&self) -> Value {
        let mut options = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
        if self.dry_run {
            options["dryRun"] = json!(["All"]);
        }
        if let Some(seconds) = self.grace_period {
            options["gracePeriodSeconds"] = json!(seconds);
        }
        if let Some(p) = self.propagation {
            options["propagationPolicy"] = json!(match p {
                Propagation::Orphan => "Orphan",
                Propagation::Background => "Background",
                Propagation::Foreground => "Foreground",
            });
        }
        if let Some(uid) = &self.uid {
            options["preconditions"]["uid"] = json!(uid);
        }
        if let Some(rv) = self.rv {
            options["preconditions"]["resourceVersion"] = json!(rv.to_string());
        }
        options
    }
}

/// Deletes an object (`store.go` `Delete`) with no admission (the
/// server's own deletes): with finalizers (or a propagation policy that
/// adds one) it is only marked.
pub(crate) fn delete(
    shared: &Shared,
    def: &ResourceDef,
    key: &ObjKey,
    opts: &DeleteOpts,
) -> Result<Deleted, ApiError> {
    delete_admitted(shared, def, key, opts, &def.storage_version, &NoAdmission)
}

/// [`delete`] through `admission`, for a request made at `version`.
pub(crate) fn delete_admitted(
    shared: &Shared,
    def: &ResourceDef,
    key: &ObjKey,
    opts: &DeleteOpts,
    version: &str,
    admission: &dyn Admission,
) -> Result<Deleted, ApiError> {
    let is_namespace = def.is(crate::registry::BuiltinKind::Namespace);
    if is_namespace && IMMORTAL_NAMESPACES.contains(&key.1.as_str()) {
        return Err(ApiError::forbidden(format!(
            "namespaces \"{}\" is forbidden: this namespace may not be deleted",
            key.1
        ))
        .with_details(Details {
            name: Some(key.1.clone()),
            group: Some(String::new()),
            kind: Some("namespaces".into()),
            ..Details::default()
        }));
    }
    let res = def.key();
    let options = opts.to_options();
    let attrs = Attributes {
        def,
        operation: Operation::Delete,
        subresource: None,
        version,
        namespace: if is_namespace { &key.1 } else { &key.0 },
        name: &key.1,
        dry_run: opts.dry_run,
        options: &options,
        sub_kind: None,
    };
    let request_api_version = def.api_version(version);
    loop {
        let old = shared
            .storage
            .lock()
            .get(&res, key)
            .ok_or_else(|| ApiError::not_found(&def.plural, &def.group, &key.1))?;
        if let Some(uid) = &opts.uid {
            if uid != old.uid() {
                return Err(ApiError::conflict_msg(
                    &def.plural,
                    &def.group,
                    &key.1,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        old.uid()
                    ),
                ));
            }
        }
        if let Some(rv) = opts.rv {
            if rv != old.rv {
                return Err(ApiError::conflict_msg(
                    &def.plural,
                    &def.group,
                    &key.1,
                    &format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}", old.rv),
                ));
            }
        }
        // `oldObject` is the stored object as the client's version shows it.
        // Parsed for this deletion only: the stored version keeps its bytes.
        let old_value = old.to_value();
        let mut shown = match def.view(&old_value) {
            Some(view) => Cow::Owned(view),
            None => Cow::Borrowed(&old_value),
        };
        if webhook_conversion(def).is_some() {
            let stored = shown.into_owned();
            shown = Cow::Owned(admission.convert(def, stored, &request_api_version)?);
        }
        admission.mutate(&attrs, None, Some(&shown))?;
        admission.validate(&attrs, None, Some(&shown))?;
        let mut fins = util::finalizers(&old_value);
        let deleting = old.deleting();
        match graceful::check(shared, def, &old_value, opts.grace_period) {
            Graceful::Pending => return Ok(Deleted::Pending(old)),
            Graceful::Mark(period) => {
                let mut next = old_value.clone();
                if let Some(meta) = util::meta_mut(&mut next) {
                    meta.insert(
                        "deletionTimestamp".into(),
                        json!(graceful::deadline(period)),
                    );
                    meta.insert("deletionGracePeriodSeconds".into(), json!(period));
                }
                if opts.dry_run {
                    return Ok(Deleted::Pending(Arc::new(StoredObject::encode(
                        next, old.rv,
                    ))));
                }
                let r = shared.storage.lock().update(&res, key, next, Some(old.rv));
                match r {
                    Ok(stored) => {
                        after_write(shared, def, Some(&old), &stored);
                        return Ok(Deleted::Pending(stored));
                    }
                    Err(StoreError::Conflict) => continue,
                    Err(e) => return Err(store_error(def, &key.1, e)),
                }
            }
            Graceful::No => {}
        }
        match opts.propagation {
            Some(Propagation::Orphan) => {
                fins.retain(|f| f != "foregroundDeletion");
                if !fins.iter().any(|f| f == "orphan") {
                    fins.push("orphan".into());
                }
            }
            Some(Propagation::Foreground) => {
                fins.retain(|f| f != "orphan");
                if !fins.iter().any(|f| f == "foregroundDeletion") {
                    fins.push("foregroundDeletion".into());
                }
            }
            Some(Propagation::Background) if deleting => {
                fins.retain(|f| f != "orphan" && f != "foregroundDeletion");
            }
            _ => {}
        }
        let ns_pending = namespace_spec_finalizers(def, &old_value);
        if deleting || !fins.is_empty() || ns_pending {
            let mut next = old_value.clone();
            let before = util::finalizers(&old_value);
            if let Some(meta) = util::meta_mut(&mut next) {
                if !deleting {
                    meta.insert("deletionTimestamp".into(), json!(util::now()));
                    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
                    if let Some(g) = meta.get("generation").and_then(Value::as_i64) {
                        meta.insert("generation".into(), json!(g + 1));
                    }
                }
                if fins.is_empty() {
                    meta.remove("finalizers");
                } else {
                    meta.insert("finalizers".into(), json!(fins));
                }
            }
            if ns_pending {
                if let Some(status) = defaults::ensure_object(&mut next, &["status"]) {
                    status.insert("phase".into(), json!("Terminating"));
                }
            }
            // A pod whose graceful deletion is cut short (grace period 0)
            // and that no finalizer holds goes now.
            if deleting && before == fins && (ns_pending || !fins.is_empty()) {
                return Ok(Deleted::Pending(old));
            }
            if opts.dry_run {
                return Ok(Deleted::Pending(Arc::new(StoredObject::encode(
                    next, old.rv,
                ))));
            }
            if deleting && fins.is_empty() && !ns_pending {
                let r = shared.storage.lock().delete(&res, key, Some(old.rv), None);
                match r {
                    Ok(gone) => {
                        after_delete(shared, def, &gone);
                        return Ok(Deleted::Gone(gone));
                    }
                    Err(StoreError::Conflict) => continue,
                    Err(e) => return Err(store_error(def, &key.1, e)),
                }
            }
            let r = shared.storage.lock().update(&res, key, next, Some(old.rv));
            match r {
                Ok(stored) => {
                    after_write(shared, def, Some(&old), &stored);
                    return Ok(Deleted::Pending(stored));
                }
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(store_error(def, &key.1, e)),
            }
        }
        if opts.dry_run {
            return Ok(Deleted::Gone(old));
        }
        let r = shared.storage.lock().delete(&res, key, Some(old.rv), None);
        match r {
            Ok(gone) => {
                after_delete(shared, def, &gone);
                return Ok(Deleted::Gone(gone));
            }
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(store_error(def, &key.1, e)),
        }
    }
}
