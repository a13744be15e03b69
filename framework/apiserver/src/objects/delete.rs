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
use crate::registry::{ResKey, ResourceDef};
use crate::storage::{ObjKey, StoreError, StoredObject};
use crate::{machinery::util, registry::fields};

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

/// [`delete`] through `admission`, for a request made at `version`: the
/// immortal namespaces refused, then until no write conflicts: the
/// preconditions, admission, and graceful marking, a mark while
/// finalizers hold the object, or removal.
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
    let deletion = Deletion {
        shared,
        def,
        key,
        res: def.key(),
        opts,
    };
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
            .get(&deletion.res, key)
            .ok_or_else(|| ApiError::not_found(&def.plural, &def.group, &key.1))?;
        deletion.check_preconditions(&old)?;
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
        if let Some(done) = deletion.attempt(&old, &old_value)? {
            return Ok(done);
        }
    }
}

/// One delete request against one object.
struct Deletion<'a> {
    shared: &'a Shared,
    def: &'a ResourceDef,
    key: &'a ObjKey,
    res: ResKey,
    opts: &'a DeleteOpts,
}

impl Deletion<'_> {
    /// The request's uid and resourceVersion preconditions against `old`.
    fn check_preconditions(&self, old: &StoredObject) -> Result<(), ApiError> {
        let (def, key) = (self.def, self.key);
        if let Some(uid) = &self.opts.uid {
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
        if let Some(rv) = self.opts.rv {
            if rv != old.rv {
                return Err(ApiError::conflict_msg(
                    &def.plural,
                    &def.group,
                    &key.1,
                    &format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}", old.rv),
                ));
            }
        }
        Ok(())
    }

    /// Deletes the admitted `old`: marks it for a graceful deletion, marks
    /// it while finalizers (or a namespace's spec finalizers) hold it, or
    /// removes it. `None` when a write conflicted and the delete is tried
    /// again.
    fn attempt(
        &self,
        old: &Arc<StoredObject>,
        old_value: &Value,
    ) -> Result<Option<Deleted>, ApiError> {
        let opts = self.opts;
        let deleting = old.deleting();
        match graceful::check(self.shared, self.def, old_value, opts.grace_period) {
            Graceful::Pending => return Ok(Some(Deleted::Pending(old.clone()))),
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
                    return Ok(Some(Deleted::Pending(Arc::new(StoredObject::encode(
                        next, old.rv,
                    )))));
                }
                return self.update(old, next);
            }
            Graceful::No => {}
        }
        let mut fins = util::finalizers(old_value);
        propagate(&mut fins, opts.propagation, deleting);
        let ns_pending = namespace_spec_finalizers(self.def, old_value);
        if deleting || !fins.is_empty() || ns_pending {
            return self.hold(old, old_value, &fins, ns_pending);
        }
        if opts.dry_run {
            return Ok(Some(Deleted::Gone(old.clone())));
        }
        self.remove(old)
    }

    /// Marks `old` deleted with finalizers `fins` (a namespace also
    /// `Terminating`), or removes it if it was already being deleted and
    /// nothing holds it any more.
    fn hold(
        &self,
        old: &Arc<StoredObject>,
        old_value: &Value,
        fins: &[String],
        ns_pending: bool,
    ) -> Result<Option<Deleted>, ApiError> {
        let deleting = old.deleting();
        let mut next = old_value.clone();
        let before = util::finalizers(old_value);
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
            if let Some(status) = fields::ensure_object(&mut next, &["status"]) {
                status.insert("phase".into(), json!("Terminating"));
            }
        }
        // A pod whose graceful deletion is cut short (grace period 0)
        // and that no finalizer holds goes now.
        if deleting && before == fins && (ns_pending || !fins.is_empty()) {
            return Ok(Some(Deleted::Pending(old.clone())));
        }
        if self.opts.dry_run {
            return Ok(Some(Deleted::Pending(Arc::new(StoredObject::encode(
                next, old.rv,
            )))));
        }
        if deleting && fins.is_empty() && !ns_pending {
            return self.remove(old);
        }
        self.update(old, next)
    }

    /// Writes `next` over `old`: the object stays, marked.
    fn update(&self, old: &Arc<StoredObject>, next: Value) -> Result<Option<Deleted>, ApiError> {
        let r = self
            .shared
            .storage
            .lock()
            .update(&self.res, self.key, next, Some(old.rv));
        Ok(self.retried(r)?.map(|stored| {
            after_write(self.shared, self.def, Some(old), &stored);
            Deleted::Pending(stored)
        }))
    }

    /// Removes `old` from the store.
    fn remove(&self, old: &StoredObject) -> Result<Option<Deleted>, ApiError> {
        let r = self
            .shared
            .storage
            .lock()
            .delete(&self.res, self.key, Some(old.rv), None);
        Ok(self.retried(r)?.map(|gone| {
            after_delete(self.shared, self.def, &gone);
            Deleted::Gone(gone)
        }))
    }

    /// A store write's result: `None` on a conflict, to try again.
    fn retried(
        &self,
        r: Result<Arc<StoredObject>, StoreError>,
    ) -> Result<Option<Arc<StoredObject>>, ApiError> {
        match r {
            Ok(stored) => Ok(Some(stored)),
            Err(StoreError::Conflict) => Ok(None),
            Err(e) => Err(store_error(self.def, &self.key.1, e)),
        }
    }
}

/// The finalizers a propagation policy adds (`orphan`,
/// `foregroundDeletion`) or, for a background delete of an object already
/// being deleted, removes.
fn propagate(fins: &mut Vec<String>, propagation: Option<Propagation>, deleting: bool) {
    match propagation {
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
}
