//! The schema half of the in-process API server: `CustomResourceDefinition`
//! validation and, per CRD version, the structural schema that prunes,
//! defaults and validates custom resources, all written to match
//! kube-apiserver and apiextensions-apiserver (field paths, cause types and
//! message texts included), so `kubectl` users see the errors a real cluster
//! gives.
//!
//! - [`validate_crd`] / [`default_crd`]: a CRD on create and update.
//! - [`StructuralSchema`]: parsed once per CRD version; [`prune`](StructuralSchema::prune),
//!   [`default`](StructuralSchema::default), [`validate`](StructuralSchema::validate),
//!   and the list/map topology server-side apply needs.
//! - [`FieldError`] / [`CauseType`] / [`aggregate`]: the `Status` causes.

mod cel;
mod crd;
mod default;
mod embedded;
mod field;
mod formats;

mod node;
mod prune;
mod structural;
mod validate;

#[cfg(test)]
pub(crate) mod tests;

pub(crate) use cel::{
    authz, evaluate_conditions, evaluate_policy, parse_unbound, Checked, CEL_RESERVED_WORDS,
};

use std::sync::Arc;

use serde_json::Value;

pub use crd::{default_crd, validate_crd};
#[cfg(test)]
use field::aggregate;
pub use field::{CauseType, FieldError};

use field::Path;
use node::Node;
use structural::{validate_openapi_schema, validate_structural, SchemaOptions};
use validate::Validator;

/// A CRD version's `openAPIV3Schema`, parsed once and shared (cheap to clone,
/// `Send + Sync`).
#[derive(Clone)]
pub struct StructuralSchema {
    root: Arc<Node>,
    /// The compiled `x-kubernetes-validations`, when there are any.
    rules: Option<Arc<cel::Rules>>,
}

impl std::fmt::Debug for StructuralSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuralSchema")
            .field("root", &self.root)
            .field("rules", &self.rules.is_some())
            .finish()
    }
}

impl StructuralSchema {
    /// Parses an `openAPIV3Schema`, rejecting one that is not structural or
    /// breaks the CRD schema rules (errors under `openAPIV3Schema`).
    pub fn parse(open_api_v3_schema: &Value) -> Result<Self, Vec<FieldError>> {
        let path = Path::new("openAPIV3Schema");
        let mut errs = validate_structural(open_api_v3_schema, &path);
        errs.extend(validate_openapi_schema(
            open_api_v3_schema,
            &path,
            &SchemaOptions::default(),
        ));
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(StructuralSchema {
            root: Arc::new(Node::parse(open_api_v3_schema)),
            rules: cel::compile(open_api_v3_schema),
        })
    }

    /// Removes the fields the schema does not know from a whole custom
    /// resource, keeping the root `apiVersion`, `kind` and `metadata` (whose
    /// own top-level keys, like an embedded resource's, are cut to
    /// `ObjectMeta`'s fields), and returns the removed paths, sorted, in the
    /// form kube-apiserver's `unknown field "spec.foo"` messages use
    /// (`spec.foo`, `spec.items[0].bar`, `metadata.bogus`; no leading dot).
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        prune::prune(obj, &self.root, true, true)
    }

    /// Applies the schema's defaults: `null`s of non-nullable fields without
    /// a default are dropped first, then defaults are applied top-down
    /// (a defaulted object gets its nested defaults too).
    pub fn default(&self, obj: &mut Value) {
        default::prune_non_nullable_nulls(obj, &self.root);
        default::apply_defaults(obj, &self.root);
    }

    /// Validates a whole custom resource: the OpenAPI schema (types,
    /// required, enum, bounds, lengths, patterns, formats, items, nullable,
    /// int-or-string, additionalProperties), embedded resources' `apiVersion`,
    /// `kind` and `metadata`, the uniqueness of list-type `set` items and
    /// `map` keys, then the `x-kubernetes-validations` CEL rules (skipped, with
    /// kube-apiserver's notice, when the object already has type, required,
    /// enum or size errors; transition rules need `old`). With `old` (an
    /// update), errors about values that did not change are dropped (CRD
    /// validation ratcheting).
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        Validator::new(None).validate(&self.root, obj, "", &mut errs);
        embedded::validate_embedded(&Path::root(), obj, &self.root, &mut errs);
        if let Some(m) = obj.as_object() {
            embedded::validate_list_sets_and_maps(&Path::root(), &self.root, m, &mut errs);
        }
        if let Some(rules) = &self.rules {
            if cel::blocking(&errs) {
                errs.push(cel::not_checked());
            } else {
                errs.extend(cel::evaluate(rules, &self.root, obj, old));
            }
        }
        if let Some(old) = old {
            errs.retain(|e| !unchanged(e, obj, old));
        }
        errs
    }

    /// The `x-kubernetes-list-type` (`atomic` when unset) and
    /// `x-kubernetes-list-map-keys` of the list at a field path
    /// (`["spec", "containers", "ports"]`: list items are stepped over).
    /// `None` when the path does not lead to a list in the schema.
    #[cfg(test)]
    pub fn list_type_at(&self, path: &[&str]) -> Option<(String, Vec<String>)> {
        let node = self.node_at(path)?;
        if node.typ != "array" && node.items.is_none() {
            return None;
        }
        Some((
            node.list_type
                .clone()
                .unwrap_or_else(|| "atomic".to_string()),
            node.list_map_keys.clone(),
        ))
    }

    /// Whether the object at a field path is `x-kubernetes-map-type: atomic`.
    #[cfg(test)]
    pub fn map_is_atomic(&self, path: &[&str]) -> bool {
        self.node_at(path)
            .is_some_and(|n| n.map_type.as_deref() == Some("atomic"))
    }

    #[cfg(test)]
    fn node_at(&self, path: &[&str]) -> Option<&Node> {
        let mut cur: &Node = &self.root;
        for seg in path {
            while let Some(items) = cur.items.as_deref() {
                cur = items;
            }
            cur = match cur.properties.get(*seg) {
                Some(n) => n,
                None => cur.additional_schema()?,
            };
        }
        Some(cur)
    }
}

/// Resolves a field path as errors name them (`spec.items[2].name`).
fn lookup<'a>(v: &'a Value, field: &str) -> Option<&'a Value> {
    let mut cur = v;
    for part in field.split('.') {
        let (name, rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            cur = cur.get(name)?;
        }
        let mut rest = rest;
        while let Some(stripped) = rest.strip_prefix('[') {
            let end = stripped.find(']')?;
            let idx: usize = stripped[..end].parse().ok()?;
            cur = cur.get(idx)?;
            rest = &stripped[end + 1..];
        }
    }
    Some(cur)
}

/// Whether the value an error is about is the same in `old` (ratcheting:
/// a required field is judged by its parent object).
fn unchanged(e: &FieldError, new: &Value, old: &Value) -> bool {
    if e.field.is_empty() || e.field == "<nil>" {
        return false;
    }
    // A missing field ("Required value", no detail) is judged by its parent.
    let field = if e.cause == CauseType::Required && e.message == "Required value" {
        match e.field.rfind('.') {
            Some(i) => &e.field[..i],
            None => return lookup(new, "").is_some() && new == old,
        }
    } else {
        e.field.as_str()
    };
    match (lookup(new, field), lookup(old, field)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}
