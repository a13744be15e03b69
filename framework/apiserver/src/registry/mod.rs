//! The resource registry: which resources the server serves, under which
//! group-versions, with their discovery attributes (names, kind, verbs,
//! short names, categories, subresources) and the behaviour that differs per
//! kind. Built-ins are fixed ([`builtins`]); custom resources come and go with
//! their CRDs ([`crd`]).

// One module per group, one file per kind.
pub(crate) mod admissionregistration;
pub(crate) mod apiextensions;
pub(crate) mod apps;
pub(crate) mod authentication;
pub(crate) mod authorization;
pub(crate) mod batch;
pub(crate) mod coordination;
pub(crate) mod core;
pub(crate) mod discovery;
pub(crate) mod events;
pub(crate) mod policy;
pub(crate) mod rbac;

// What the kinds are made of, and the registry around them.
pub(crate) mod builtins;
pub(crate) mod conversion;
pub(crate) mod crd;
mod def;
pub(crate) mod fields;
mod kind;
mod merge_schemas;
pub(crate) mod openapi;
pub(crate) mod openapi_docs;
pub(crate) mod pod_logs;
pub(crate) mod printers;
pub(crate) mod state;
pub(crate) mod strategy;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

pub(crate) use crate::storage::ResKey;
pub(crate) use def::{CustomInfo, GenerationPolicy, ResourceDef, ScalePaths};
pub(crate) use kind::BuiltinKind;
pub(crate) use merge_schemas::builtin_merge_schema;
pub(crate) use printers::Printer;

/// The set of served resources; cheap to clone out of (`Arc` entries).
#[derive(Default)]
pub(crate) struct Registry {
    /// `(group, version, plural)` to definition.
    by_gvr: BTreeMap<(String, String, String), Arc<ResourceDef>>,
    /// Built-in groups in discovery order, with their versions.
    builtin_groups: Vec<(String, Vec<String>)>,
    /// CRD name to the definition it registered.
    crds: BTreeMap<String, Arc<ResourceDef>>,
}

impl Registry {
    /// The built-in resources.
    pub fn with_builtins() -> Self {
        let mut reg = Self::default();
        for def in builtins::all() {
            let def = Arc::new(def);
            let gv = (def.group.clone(), def.versions.clone());
            if !reg.builtin_groups.iter().any(|(g, _)| *g == gv.0) {
                reg.builtin_groups.push(gv);
            }
            for v in &def.versions {
                reg.by_gvr.insert(
                    (def.group.clone(), v.clone(), def.plural.clone()),
                    def.clone(),
                );
            }
        }
        reg
    }

    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        self.by_gvr
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
            .cloned()
    }

    /// The definition serving `kind` in `group` at `version`.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceDef>> {
        self.by_gvr
            .iter()
            .find(|((g, v, _), d)| g == group && v == version && d.kind == kind)
            .map(|(_, d)| d.clone())
    }

    /// The definition stored under `key`, at any version.
    pub fn by_key(&self, key: &ResKey) -> Option<Arc<ResourceDef>> {
        self.by_gvr.values().find(|d| d.key() == *key).cloned()
    }

    /// Whether `/apis/{group}/{version}` (or `/api/v1`) is served.
    pub fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.groups()
            .iter()
            .any(|(g, vs)| g == group && vs.iter().any(|v| v == version))
    }

    /// Whether `group` is one of the built-in groups (the core group `""`
    /// included).
    pub fn is_builtin_group(&self, group: &str) -> bool {
        self.builtin_groups.iter().any(|(g, _)| g == group)
    }

    /// The built-in groups in discovery order, with their versions.
    pub fn builtin_groups(&self) -> &[(String, Vec<String>)] {
        &self.builtin_groups
    }

    /// Groups in discovery order (core first, built-ins, then CRD groups by
    /// name), each with its versions in preference order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out = self.builtin_groups.clone();
        let mut custom: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for def in self.crds.values() {
            let versions = custom.entry(def.group.clone()).or_default();
            for v in &def.versions {
                if !versions.contains(v) {
                    versions.push(v.clone());
                }
            }
        }
        for (g, mut vs) in custom {
            if out.iter().any(|(bg, _)| *bg == g) {
                continue;
            }
            vs.sort_by(|a, b| crd::compare_versions(b, a));
            out.push((g, vs));
        }
        out
    }

    /// Resources served under one group-version, in name order.
    pub fn resources(&self, group: &str, version: &str) -> Vec<Arc<ResourceDef>> {
        self.by_gvr
            .iter()
            .filter(|((g, v, _), _)| g == group && v == version)
            .map(|(_, d)| d.clone())
            .collect()
    }

    /// Every served definition, once each.
    pub fn all(&self) -> Vec<Arc<ResourceDef>> {
        let mut seen = std::collections::HashSet::new();
        self.by_gvr
            .values()
            .filter(|d| seen.insert(d.key()))
            .cloned()
            .collect()
    }

    /// The definition a CRD registered, if any.
    pub fn crd_def(&self, crd_name: &str) -> Option<Arc<ResourceDef>> {
        self.crds.get(crd_name).cloned()
    }

    /// Registers or replaces the resource of a CRD.
    pub fn put_crd(&mut self, crd_name: &str, def: ResourceDef) -> Arc<ResourceDef> {
        self.remove_crd(crd_name);
        let def = Arc::new(def);
        for v in &def.versions {
            self.by_gvr.insert(
                (def.group.clone(), v.clone(), def.plural.clone()),
                def.clone(),
            );
        }
        self.crds.insert(crd_name.to_owned(), def.clone());
        def
    }

    /// Stops serving a CRD's resource.
    pub fn remove_crd(&mut self, crd_name: &str) -> Option<Arc<ResourceDef>> {
        let old = self.crds.remove(crd_name)?;
        self.by_gvr.retain(|_, d| !Arc::ptr_eq(d, &old));
        Some(old)
    }

    /// Whether some served resource other than `except_crd`'s already uses
    /// this plural/singular/short name/kind in `group` (the naming
    /// controller's conflict check).
    pub fn name_conflict(
        &self,
        group: &str,
        except_crd: &str,
        names: &crd::Names,
    ) -> Option<&'static str> {
        for def in self.all() {
            if def.group != group {
                continue;
            }
            if let Some(c) = def.custom() {
                if c.crd_name == except_crd {
                    continue;
                }
            }
            if def.plural == names.plural || def.singular == names.plural {
                return Some("PluralConflict");
            }
            if def.plural == names.singular || def.singular == names.singular {
                return Some("SingularConflict");
            }
            if names
                .short_names
                .iter()
                .any(|s| def.short_names.contains(s))
            {
                return Some("ShortNamesConflict");
            }
            if def.kind == names.kind {
                return Some("KindConflict");
            }
            if def.list_kind == names.list_kind {
                return Some("ListKindConflict");
            }
        }
        None
    }
}

/// Reads a dotted JSON path (`.spec.replicas`) from `obj`.
pub(crate) fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for seg in path.trim_start_matches('.').split('.') {
        if seg.is_empty() {
            continue;
        }
        cur = cur.get(seg)?;
    }
    Some(cur)
}

/// Writes `value` at a dotted JSON path, creating objects on the way.
pub(crate) fn set_json_path(obj: &mut Value, path: &str, value: Value) -> bool {
    let segs: Vec<&str> = path
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect();
    let Some((last, parents)) = segs.split_last() else {
        return false;
    };
    let mut cur = obj;
    for seg in parents {
        let Some(map) = cur.as_object_mut() else {
            return false;
        };
        cur = map
            .entry((*seg).to_owned())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    match cur.as_object_mut() {
        Some(map) => {
            map.insert((*last).to_owned(), value);
            true
        }
        None => false,
    }
}
