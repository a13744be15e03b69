//! Server-side apply and the field ownership every other write records, as
//! kube-apiserver's field manager does them (k8s.io/apimachinery
//! `pkg/util/managedfields/internal`: `structuredmerge.go`, `fieldmanager.go`,
//! `managedfieldsupdater.go`, `skipnonapplied.go`, `stripmeta.go`,
//! `lastappliedmanager.go`, `lastappliedupdater.go`, `conflict.go`; and
//! sigs.k8s.io/structured-merge-diff `merge/update.go`).
//!
//! Apply merges the configuration into the live object, drops the fields the
//! applier applied last time and no longer applies (unless someone else owns
//! them), and refuses with conflicts when it would change fields other
//! managers own, unless forced, in which case their ownership moves to the
//! applier. Updates give the fields they change to their manager's `Update`
//! entry and take them from everyone else.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fieldpath::{FieldSet, Path};
use super::managed::{unmanaged_fields, Entry, Managed, ManagerId, Operation, MAX_UPDATE_MANAGERS};
use super::schema::MergeSchema;
use super::typed::{
    compare, drop_nulls, ensure_named_fields, merge, remove_items, to_field_set, validate_config,
};

/// The annotation `kubectl apply` (client-side) keeps its last configuration in.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The `type` of the `Status` causes a conflict is reported with.
pub const FIELD_MANAGER_CONFLICT: &str = "FieldManagerConflict";

/// The manager kube-apiserver gives the fields of an object that had no
/// managed fields when it was first applied to.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// kube-apiserver's limit on the total size of an object's annotations
/// (`TotalAnnotationSizeLimitB`).
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// A field an apply would change that another manager owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The owning manager's name.
    pub manager: String,
    /// The field, as `.spec.containers[name="nginx"].image`.
    pub field: String,
    /// For an `Update` owner, the apiVersion it wrote with; `None` for an applier.
    pub using: Option<String>,
    /// The subresource the owner wrote through (`scale`, `status`), if any.
    pub subresource: Option<String>,
}

impl Conflict {
    /// `"mgr"`, `"mgr" using apps/v1` or `"mgr" with subresource "scale"
    /// using apps/v1`, as kube-apiserver names an owner (`printManager`).
    pub fn owner(&self) -> String {
        let mut owner = Value::String(self.manager.clone()).to_string();
        if let Some(sub) = &self.subresource {
            owner = format!("{owner} with subresource {}", Value::String(sub.clone()));
        }
        match &self.using {
            Some(v) => format!("{owner} using {v}"),
            None => owner,
        }
    }

    /// The message of this conflict's `FieldManagerConflict` cause:
    /// `conflict with "mgr" using apps/v1`.
    pub fn message(&self) -> String {
        format!("conflict with {}", self.owner())
    }
}

/// Why an apply was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change (409 Conflict).
    #[error("{}", conflicts_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The request is malformed: not an object, wrong or missing
    /// apiVersion/kind, `metadata.managedFields` set (400 BadRequest).
    #[error("{0}")]
    BadRequest(String),
    /// The configuration does not fit the schema: duplicate or missing list
    /// keys, items of the wrong type. kube-apiserver answers 500 with an
    /// empty reason for these.
    #[error("{0}")]
    InvalidConfig(String),
    /// The live object's `metadata.managedFields` cannot be decoded (500).
    #[error("failed to decode managed fields: {0}")]
    ManagedFields(String),
}

impl ApplyError {
    /// The `Status.message` kube-apiserver sends, e.g.
    /// `Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: .spec.replicas`.
    pub fn status_message(&self) -> String {
        self.to_string()
    }

    /// The HTTP status code kube-apiserver answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            ApplyError::Conflicts(_) => 409,
            ApplyError::BadRequest(_) => 400,
            ApplyError::InvalidConfig(_) | ApplyError::ManagedFields(_) => 500,
        }
    }

    /// The `Status.reason`: `Conflict`, `BadRequest`, or empty (unknown) for
    /// the errors kube-apiserver does not classify.
    pub fn reason(&self) -> &'static str {
        match self {
            ApplyError::Conflicts(_) => "Conflict",
            ApplyError::BadRequest(_) => "BadRequest",
            ApplyError::InvalidConfig(_) | ApplyError::ManagedFields(_) => "",
        }
    }
}

/// `Apply failed with N conflict(s): ...`, grouped by owner
/// (`internal.NewConflictError`).
fn conflicts_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: {}: {}",
            only.message(),
            only.field
        );
    }
    type Owner<'a> = (&'a str, Option<&'a str>, Option<&'a str>);
    let mut groups: BTreeMap<Owner<'_>, Vec<&str>> = BTreeMap::new();
    let mut owners: BTreeMap<Owner<'_>, String> = BTreeMap::new();
    for c in conflicts {
        let key = (
            c.manager.as_str(),
            c.subresource.as_deref(),
            c.using.as_deref(),
        );
        groups.entry(key).or_default().push(&c.field);
        owners.entry(key).or_insert_with(|| c.owner());
    }
    let mut lines = Vec::new();
    for (key, fields) in groups {
        let owner = owners.get(&key).cloned().unwrap_or_default();
        lines.push(format!("conflicts with {owner}:"));
        lines.extend(fields.into_iter().map(|f| format!("- {f}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// One entry of `metadata.managedFields`, decoded.
#[derive(Clone, Debug, PartialEq)]
#[cfg(test)]
pub struct ManagedEntry {
    /// The manager's name.
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: Operation,
    /// The apiVersion the fields were written with.
    pub api_version: String,
    /// The subresource written through, if any.
    pub subresource: Option<String>,
    /// When the fields last changed (RFC 3339), if recorded.
    pub time: Option<String>,
    /// The fields owned.
    pub fields: FieldSet,
}

/// Decodes an object's `metadata.managedFields`, with kube-apiserver's checks.
#[cfg(test)]
pub fn decode_managed_fields(obj: &Value) -> Result<Vec<ManagedEntry>, String> {
    let managed = Managed::decode(obj.pointer("/metadata/managedFields"))?;
    Ok(managed
        .entries
        .into_iter()
        .map(|(id, e)| ManagedEntry {
            manager: id.manager,
            operation: id.operation,
            api_version: e.api_version,
            subresource: id.subresource,
            time: e.time,
            fields: e.set,
        })
        .collect())
}

/// The fields `obj` sets, as an applier of it would own them (without the
/// identity and server-owned metadata no one owns).
#[cfg(test)]
pub fn field_set(obj: &Value, schema: &dyn MergeSchema) -> FieldSet {
    to_field_set(schema, obj).difference(&unmanaged_fields())
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// `group/version, Kind=kind`, as Go prints a GroupVersionKind.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

fn set_managed_fields(obj: &mut Value, managed: &Managed) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let entries = managed.encode();
    if entries.is_empty() {
        if let Some(Value::Object(meta)) = root.get_mut("metadata") {
            meta.remove("managedFields");
        }
        return;
    }
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        meta.insert("managedFields".into(), Value::Array(entries));
    }
}

/// Server-side apply of `config` (the applied configuration, already parsed)
/// to `live` (`None` creates). Returns the object to store, with
/// `metadata.managedFields` updated: the applier's `Apply` entry holds
/// exactly the fields of `config`; its `time` is `now` when the object
/// changed. `subresource` is the subresource applied through (`status`).
#[cfg(test)]
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    subresource: Option<&str>,
    now: &str,
    schema: &dyn MergeSchema,
) -> Result<Value, ApplyError> {
    apply_ignoring(
        live,
        config,
        manager,
        force,
        subresource,
        now,
        schema,
        &FieldSet::new(),
    )
}

/// [`apply`], with fields the endpoint resets and nobody owns through it
/// (kube-apiserver's `ResetFieldsStrategy`: `status` on the main resource of
/// a kind with a status subresource, everything but `status` on `/status`).
#[allow(clippy::too_many_arguments)]
pub fn apply_ignoring(
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    subresource: Option<&str>,
    now: &str,
    schema: &dyn MergeSchema,
    ignored: &FieldSet,
) -> Result<Value, ApplyError> {
    if !config.is_object() {
        return Err(ApplyError::BadRequest(
            "error decoding YAML: the applied configuration must be an object".into(),
        ));
    }
    let api_version = str_at(config, "/apiVersion");
    let kind = str_at(config, "/kind");
    let matches_live = live.is_none_or(|l| {
        let (lv, lk) = (str_at(l, "/apiVersion"), str_at(l, "/kind"));
        (lv.is_empty() || lv == api_version) && (lk.is_empty() || lk == kind)
    });
    if api_version.is_empty() || kind.is_empty() || !matches_live {
        return Err(ApplyError::BadRequest(format!(
            "invalid object type: {}",
            gvk_string(api_version, kind)
        )));
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    let errors = validate_config(schema, config);
    if !errors.is_empty() {
        return Err(ApplyError::InvalidConfig(format!(
            "failed to create typed patch object ({}/{}; {}): {}",
            str_at(config, "/metadata/namespace"),
            str_at(config, "/metadata/name"),
            gvk_string(api_version, kind),
            validation_message(&errors),
        )));
    }
    let cfg = drop_nulls(config);
    let empty = Value::Object(Map::new());
    let live_obj = live.unwrap_or(&empty);
    let mut managed = Managed::decode(live_obj.pointer("/metadata/managedFields"))
        .map_err(ApplyError::ManagedFields)?;
    let subresource = subresource.filter(|s| !s.is_empty());

    // An object nobody has been recorded on yet: its current fields belong
    // to `before-first-apply`, so that the apply conflicts with them.
    if managed.entries.is_empty() && live.is_some() {
        let id = ManagerId::update(BEFORE_FIRST_APPLY, api_version, subresource);
        record_update(
            &mut managed,
            &empty,
            live_obj,
            id,
            api_version,
            now,
            schema,
            ignored,
        );
    }

    let applier = ManagerId::apply(manager, subresource);
    let merged = merge(schema, live_obj, &cfg);
    let last = managed.entries.remove(&applier);
    let applied = to_field_set(schema, &cfg).recursive_difference(ignored);
    managed.entries.insert(
        applier.clone(),
        Entry {
            set: applied,
            api_version: api_version.to_string(),
            time: last.as_ref().and_then(|e| e.time.clone()),
        },
    );
    let merged = match &last {
        Some(last) if !last.set.is_empty() => prune(schema, &merged, &managed, &last.set),
        _ => merged,
    };

    let mut cmp = compare(schema, live_obj, &merged);
    let changed = !cmp.is_same();
    cmp.exclude(ignored);
    let touched = cmp.modified.union(&cmp.added);
    let mut conflicts: BTreeMap<ManagerId, FieldSet> = BTreeMap::new();
    for (id, entry) in &managed.entries {
        if *id == applier {
            continue;
        }
        let both = entry.set.intersection(&touched);
        if !both.is_empty() {
            conflicts.insert(id.clone(), both);
        }
    }
    if !conflicts.is_empty() && !force {
        // kubectl's server-side apply may take over what its client-side
        // apply set, as long as the live values still match.
        let allowed = (manager == "kubectl")
            .then(|| allowed_by_last_applied(schema, live_obj))
            .flatten();
        let remaining: Vec<Conflict> = conflict_list(&conflicts)
            .into_iter()
            .filter(|(_, path)| allowed.as_ref().is_none_or(|a| !a.has(&path.0)))
            .map(|(c, _)| c)
            .collect();
        if !remaining.is_empty() {
            return Err(ApplyError::Conflicts(remaining));
        }
    }
    for (id, taken) in &conflicts {
        if let Some(entry) = managed.entries.get_mut(id) {
            entry.set = entry.set.difference(taken);
        }
    }
    for (id, entry) in managed.entries.iter_mut() {
        if *id != applier {
            entry.set = entry.set.difference(&cmp.removed);
        }
    }
    if let Some(entry) = managed.entries.get_mut(&applier) {
        entry.set = entry.set.difference(&unmanaged_fields());
        if changed {
            entry.time = Some(now.to_string());
        }
    }
    managed.drop_empty();

    let mut result = merged;
    if manager == "kubectl" && has_last_applied(&result) {
        set_last_applied(&mut result, config);
    }
    set_managed_fields(&mut result, &managed);
    Ok(result)
}

/// Conflicts in owner order, each with its path.
fn conflict_list(conflicts: &BTreeMap<ManagerId, FieldSet>) -> Vec<(Conflict, Path)> {
    let mut out = Vec::new();
    for (id, set) in conflicts {
        for path in set.paths() {
            out.push((
                Conflict {
                    manager: id.manager.clone(),
                    field: path.to_string(),
                    using: match id.operation {
                        Operation::Update => id.api_version.clone(),
                        Operation::Apply => None,
                    },
                    subresource: id.subresource.clone(),
                },
                path,
            ));
        }
    }
    out
}

/// `ValidationErrors.Error()`: one error inline, several on indented lines.
fn validation_message(errors: &[(Path, String)]) -> String {
    let one = |(path, msg): &(Path, String)| {
        let p = path.to_string();
        if p.is_empty() {
            msg.clone()
        } else {
            format!("{p}: {msg}")
        }
    };
    match errors {
        [only] => one(only),
        _ => {
            let mut lines = vec!["errors:".to_string()];
            lines.extend(errors.iter().map(|e| format!("  {}", one(e))));
            lines.join("\n")
        }
    }
}

/// Removes what the applier applied last time (`last`) and no longer
/// applies, unless another manager (or the applier's new configuration)
/// owns it (structured-merge-diff `Updater.prune`, `addBackOwnedItems`,
/// `addBackDanglingItems`).
fn prune(schema: &dyn MergeSchema, merged: &Value, managed: &Managed, last: &FieldSet) -> Value {
    let last = ensure_named_fields(schema, last);
    let pruned = remove_items(schema, merged, &last);

    // Everything some manager owns is added back. The object's identity is
    // never pruned, even if no manager mentions it.
    let mut owned = unmanaged_fields();
    for entry in managed.entries.values() {
        owned.union_with(&entry.set);
    }
    let owned = ensure_named_fields(schema, &owned);
    let merged_set = ensure_named_fields(schema, &to_field_set(schema, merged));
    let pruned_set = ensure_named_fields(schema, &to_field_set(schema, &pruned));
    let pruned = remove_items(
        schema,
        merged,
        &merged_set.difference(&pruned_set.union(&owned)),
    );

    // Only what the applier owned last time is removed.
    let pruned_set = ensure_named_fields(schema, &to_field_set(schema, &pruned));
    remove_items(
        schema,
        merged,
        &merged_set.difference(&pruned_set).intersection(&last),
    )
}

/// Gives the fields `new` changed relative to `old` to `id`, and takes them
/// from every other manager (structured-merge-diff `Updater.Update` through
/// the `current-operation` manager of `managedFieldsUpdater`).
#[allow(clippy::too_many_arguments)]
fn record_update(
    managed: &mut Managed,
    old: &Value,
    new: &Value,
    id: ManagerId,
    api_version: &str,
    now: &str,
    schema: &dyn MergeSchema,
    ignored: &FieldSet,
) {
    let mut cmp = compare(schema, old, new);
    cmp.exclude(ignored);
    let touched = cmp.modified.union(&cmp.added);
    for entry in managed.entries.values_mut() {
        entry.set = entry.set.difference(&touched).difference(&cmp.removed);
    }
    managed.drop_empty();
    let current = touched
        .difference(&cmp.removed)
        .difference(&unmanaged_fields())
        .recursive_difference(ignored);
    if current.is_empty() {
        return;
    }
    let entry = managed.entries.entry(id).or_insert_with(|| Entry {
        set: FieldSet::new(),
        api_version: api_version.to_string(),
        time: None,
    });
    entry.set.union_with(&current);
    entry.api_version = api_version.to_string();
    entry.time = Some(now.to_string());
}

/// After a non-apply write (create, update, merge/JSON/strategic patch):
/// gives the fields the write changed (all set fields on create) to
/// `manager`'s `Update` entry, takes them from every other manager, drops
/// entries left empty, and caps update entries at ten. Like kube-apiserver,
/// managed fields sent in `new` replace the live ones (an empty list clears
/// them, and an object without any is not tracked again until applied to).
#[cfg(test)]
pub fn track_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
    schema: &dyn MergeSchema,
) {
    track_update_ignoring(
        old,
        new,
        manager,
        subresource,
        now,
        schema,
        &FieldSet::new(),
    )
}

/// [`track_update`], with fields the endpoint resets (see [`apply_ignoring`]).
#[allow(clippy::too_many_arguments)]
pub fn track_update_ignoring(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
    schema: &dyn MergeSchema,
    ignored: &FieldSet,
) {
    let subresource = subresource.filter(|s| !s.is_empty());
    let old_fields = old.and_then(|o| o.pointer("/metadata/managedFields"));
    let from_old = || Managed::decode(old_fields).unwrap_or_default();
    // `decodeLiveOrNew`: a subresource write keeps the live entries; otherwise
    // entries sent with the object win, unless absent or unreadable.
    let mut managed = if subresource.is_some() {
        from_old()
    } else {
        let sent = new.pointer("/metadata/managedFields");
        if is_reset(sent) {
            Managed::default()
        } else {
            match Managed::decode(sent) {
                Ok(m) if !m.entries.is_empty() => m,
                _ => from_old(),
            }
        }
    };
    if let Some(Value::Object(meta)) = new.get_mut("metadata") {
        meta.remove("managedFields");
    }

    // `skipNonAppliedManager`: an existing object without managed fields
    // stays untracked.
    let existing = old.is_some_and(|o| !str_at(o, "/metadata/uid").is_empty());
    if managed.entries.is_empty() && existing {
        return;
    }

    let api_version = match str_at(new, "/apiVersion") {
        "" => old.map(|o| str_at(o, "/apiVersion")).unwrap_or(""),
        v => v,
    }
    .to_string();
    let id = ManagerId::update(manager, &api_version, subresource);
    let empty = Value::Object(Map::new());
    record_update(
        &mut managed,
        old.unwrap_or(&empty),
        new,
        id,
        &api_version,
        now,
        schema,
        ignored,
    );
    managed.cap_update_managers(MAX_UPDATE_MANAGERS);
    set_managed_fields(new, &managed);
}

/// `managedFields: []` or `[{}]` asks for the entries to be cleared
/// (`isResetManagedFields`).
fn is_reset(sent: Option<&Value>) -> bool {
    match sent {
        Some(Value::Array(items)) => match items.as_slice() {
            [] => true,
            [Value::Object(entry)] => entry
                .values()
                .all(|v| v.is_null() || v.as_str() == Some("")),
            _ => false,
        },
        _ => false,
    }
}

fn last_applied(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED_ANNOTATION))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn has_last_applied(obj: &Value) -> bool {
    last_applied(obj).is_some()
}

/// The fields kubectl's client-side apply recorded in the last-applied
/// annotation whose live values still match it: the conflicts kubectl's
/// server-side apply may take over (`allowedConflictsFromLastApplied`).
fn allowed_by_last_applied(schema: &dyn MergeSchema, live: &Value) -> Option<FieldSet> {
    let last: Value = serde_json::from_str(last_applied(live)?).ok()?;
    if !last.is_object() || str_at(&last, "/apiVersion") != str_at(live, "/apiVersion") {
        return None;
    }
    if !validate_config(schema, &last).is_empty() {
        return None;
    }
    let set = to_field_set(schema, &last);
    let cmp = compare(schema, &last, live);
    Some(
        set.difference(&cmp.modified)
            .difference(&cmp.added)
            .difference(&cmp.removed),
    )
}

/// Rewrites the last-applied annotation to the configuration kubectl just
/// applied server-side, so that a later client-side apply starts from it
/// (`lastAppliedUpdater`); dropped if it would make annotations too large.
fn set_last_applied(result: &mut Value, config: &Value) {
    let mut applied = config.clone();
    if let Some(Value::Object(meta)) = applied.get_mut("metadata") {
        let now_empty = match meta.get_mut("annotations") {
            Some(Value::Object(annotations)) => {
                annotations.remove(LAST_APPLIED_ANNOTATION);
                annotations.is_empty()
            }
            _ => false,
        };
        if now_empty {
            meta.remove("annotations");
        }
    }
    let encoded = format!("{applied}\n");
    let Some(Value::Object(annotations)) = result.pointer_mut("/metadata/annotations") else {
        return;
    };
    annotations.insert(LAST_APPLIED_ANNOTATION.into(), Value::String(encoded));
    let size: usize = annotations
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}
