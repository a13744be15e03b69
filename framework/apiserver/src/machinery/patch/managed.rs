//! `metadata.managedFields` as kube-apiserver's field manager keeps it
//! (k8s.io/apimachinery `pkg/util/managedfields/internal`): entries decoded
//! into one field set per manager identity (manager, operation, apiVersion for
//! updaters, subresource), encoded back sorted by operation, time, manager,
//! apiVersion and subresource; update entries capped at ten by folding the
//! oldest into `ancient-changes`; and the fields no manager ever owns.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fieldpath::{FieldSet, PathElement};

/// How a manager last wrote its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update or a non-apply patch.
    Update,
}

impl Operation {
    /// The wire name: `Apply` or `Update`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// The identity entries are merged under. Appliers are one manager whatever
/// apiVersion they apply; updaters get one entry per apiVersion
/// (`BuildManagerIdentifier`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ManagerId {
    pub manager: String,
    pub operation: Operation,
    pub api_version: Option<String>,
    pub subresource: Option<String>,
}

impl ManagerId {
    pub fn apply(manager: &str, subresource: Option<&str>) -> Self {
        ManagerId {
            manager: manager.to_string(),
            operation: Operation::Apply,
            api_version: None,
            subresource: subresource.filter(|s| !s.is_empty()).map(str::to_string),
        }
    }

    pub fn update(manager: &str, api_version: &str, subresource: Option<&str>) -> Self {
        ManagerId {
            manager: manager.to_string(),
            operation: Operation::Update,
            api_version: Some(api_version.to_string()),
            subresource: subresource.filter(|s| !s.is_empty()).map(str::to_string),
        }
    }
}

/// One manager's fields.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub set: FieldSet,
    pub api_version: String,
    pub time: Option<String>,
}

/// All managers' fields of one object.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Managed {
    pub entries: BTreeMap<ManagerId, Entry>,
}

/// The kube-apiserver limit on update entries (`DefaultMaxUpdateManagers`).
pub(crate) const MAX_UPDATE_MANAGERS: usize = 10;
const ANCIENT_CHANGES: &str = "ancient-changes";

fn str_field<'a>(entry: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("{key} must be a string, got {other}")),
    }
}

impl Managed {
    /// Decodes `metadata.managedFields` (absent or `null` is empty), with
    /// `DecodeManagedFields`' checks.
    pub fn decode(list: Option<&Value>) -> Result<Managed, String> {
        let items = match list {
            None | Some(Value::Null) => return Ok(Managed::default()),
            Some(Value::Array(items)) => items,
            Some(other) => return Err(format!("managedFields must be a list, got {other}")),
        };
        let mut managed = Managed::default();
        for (i, item) in items.iter().enumerate() {
            let Value::Object(entry) = item else {
                return Err(format!("managed fields entry {i} must be an object"));
            };
            let operation = match str_field(entry, "operation")? {
                Some("Apply") => Operation::Apply,
                Some("Update") => Operation::Update,
                _ => return Err("operation must be `Apply` or `Update`".to_string()),
            };
            let api_version = match str_field(entry, "apiVersion")? {
                Some(v) if !v.is_empty() => v.to_string(),
                _ => return Err("apiVersion must not be empty".to_string()),
            };
            match str_field(entry, "fieldsType")? {
                Some("FieldsV1") => {}
                None | Some("") => {
                    return Err(format!("missing fieldsType in managed fields entry {i}"))
                }
                Some(other) => {
                    return Err(format!(
                        "invalid fieldsType {other:?} in managed fields entry {i}"
                    ))
                }
            }
            let manager = str_field(entry, "manager")?.unwrap_or("");
            let subresource = str_field(entry, "subresource")?;
            let time = str_field(entry, "time")?.map(str::to_string);
            let set = match entry.get("fieldsV1") {
                None | Some(Value::Null) => FieldSet::new(),
                Some(v) => FieldSet::from_fields_v1(v)
                    .map_err(|e| format!("error decoding versioned set from entry {i}: {e}"))?,
            };
            let id = match operation {
                Operation::Apply => ManagerId::apply(manager, subresource),
                Operation::Update => ManagerId::update(manager, &api_version, subresource),
            };
            managed.entries.insert(
                id,
                Entry {
                    set,
                    api_version,
                    time,
                },
            );
        }
        Ok(managed)
    }

    /// Encodes the entries in kube-apiserver's order (`sortEncodedManagedFields`).
    pub fn encode(&self) -> Vec<Value> {
        let mut entries: Vec<(&ManagerId, &Entry)> = self.entries.iter().collect();
        entries.sort_by(|(a, ae), (b, be)| {
            a.operation
                .cmp(&b.operation)
                .then_with(|| unix_seconds(&ae.time).cmp(&unix_seconds(&be.time)))
                .then_with(|| a.manager.cmp(&b.manager))
                .then_with(|| ae.api_version.cmp(&be.api_version))
                .then_with(|| a.subresource.cmp(&b.subresource))
        });
        entries
            .into_iter()
            .map(|(id, e)| {
                let mut m = Map::new();
                if !id.manager.is_empty() {
                    m.insert("manager".into(), Value::String(id.manager.clone()));
                }
                m.insert(
                    "operation".into(),
                    Value::String(id.operation.as_str().into()),
                );
                m.insert("apiVersion".into(), Value::String(e.api_version.clone()));
                if let Some(t) = &e.time {
                    m.insert("time".into(), Value::String(t.clone()));
                }
                m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
                m.insert("fieldsV1".into(), e.set.to_fields_v1());
                if let Some(s) = &id.subresource {
                    m.insert("subresource".into(), Value::String(s.clone()));
                }
                Value::Object(m)
            })
            .collect()
    }

    /// Drops managers that own nothing.
    pub fn drop_empty(&mut self) {
        self.entries.retain(|_, e| !e.set.is_empty());
    }

    /// Folds the oldest update entries into one `ancient-changes` entry per
    /// apiVersion until at most `max` update entries remain (`capManagersManager`).
    pub fn cap_update_managers(&mut self, max: usize) {
        let mut updaters: Vec<ManagerId> = self
            .entries
            .keys()
            .filter(|id| id.operation == Operation::Update)
            .cloned()
            .collect();
        if updaters.len() <= max {
            return;
        }
        updaters.sort_by(|a, b| {
            let at = self
                .entries
                .get(a)
                .map(|e| unix_seconds(&e.time))
                .unwrap_or(0);
            let bt = self
                .entries
                .get(b)
                .map(|e| unix_seconds(&e.time))
                .unwrap_or(0);
            at.cmp(&bt).then_with(|| a.cmp(b))
        });
        let mut first_of_version: BTreeMap<String, ManagerId> = BTreeMap::new();
        let mut count = updaters.len();
        for id in updaters {
            if count <= max {
                break;
            }
            let Some(entry) = self.entries.get(&id).cloned() else {
                continue;
            };
            let version = entry.api_version.clone();
            let bucket = ManagerId::update(ANCIENT_CHANGES, &version, None);
            match first_of_version.get(&version) {
                Some(first) => {
                    if !self.entries.contains_key(&bucket) {
                        if let Some(first_entry) = self.entries.remove(first) {
                            self.entries.insert(bucket.clone(), first_entry);
                        }
                    }
                    if let Some(b) = self.entries.get_mut(&bucket) {
                        b.set.union_with(&entry.set);
                        // The merged update is the more recent one.
                        b.time = entry.time.clone();
                    }
                    if id != bucket {
                        self.entries.remove(&id);
                    }
                    count -= 1;
                }
                None => {
                    first_of_version.insert(version, id);
                }
            }
        }
    }
}

/// Seconds since the epoch of an RFC 3339 time; 0 when absent or unreadable,
/// as an absent time sorts in kube-apiserver.
fn unix_seconds(time: &Option<String>) -> i64 {
    time.as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| t.as_second())
        .unwrap_or(0)
}

/// Fields no manager owns (`stripMetaManager`), plus the deletion fields the
/// server alone sets.
pub(crate) fn unmanaged_fields() -> FieldSet {
    let f = |s: &str| PathElement::Field(s.to_string());
    let mut set = FieldSet::new();
    set.insert(&[f("apiVersion")]);
    set.insert(&[f("kind")]);
    set.insert(&[f("metadata")]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        set.insert(&[f("metadata"), f(name)]);
    }
    set
}
