//! The cost budget of one request's CEL validation, as kube-apiserver
//! enforces it (`celconfig.RuntimeCELCostBudget` for all the rules an
//! object triggers, `celconfig.PerCallLimit` for one evaluation of one
//! rule; k8s.io/apiserver/pkg/apis/cel/config.go). cel-go counts the
//! actual cost while it evaluates; the `cel` crate cannot, so the cost is
//! bounded before evaluating: each rule's cost estimate is recomputed
//! with the sizes the object actually has (its longest list, map or
//! string at every path the rule reads), times the number of places the
//! rule applies to. An object over budget is refused with
//! kube-apiserver's messages and no rule runs.
//!
//! Admission expressions (webhook `matchConditions`, policies) are costed
//! the same way, one expression at a time: the estimate with the sizes
//! their untyped variables actually have ([`admission_cost`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_core::cel::cel::{self, objects::Key, Program};
use serde_json::Value;

use super::analysis::{self, DataPath, Root, Sizes, Step};
use super::decl::Decl;
use crate::apiextensions::field::FieldError;

/// The cost all rules of one object may take together
/// (`RuntimeCELCostBudget`, "roughly 1 second").
pub(super) const RUNTIME_BUDGET: u64 = 10_000_000;

/// The cost one evaluation of one rule may take (`PerCallLimit`,
/// "roughly 0.1 second").
pub(super) const PER_CALL_LIMIT: u64 = 1_000_000;

/// A rule as the budget sees it.
pub(super) struct BudgetedRule {
    pub program: Program,
    pub decl: Option<Arc<Decl>>,
    pub optional_old_self: bool,
    /// Whether the rule reads `oldSelf` (it only runs on updates then,
    /// unless `optionalOldSelf`).
    pub transition: bool,
    /// The estimate with the schema's bounds.
    pub static_cost: u64,
    /// The data paths that estimate depends on.
    pub paths: Vec<DataPath>,
    /// What errors name the rule by (`ruleErrorString`: its message, or
    /// else its text).
    pub name: String,
}

/// A schema node carrying rules, and how to reach its values.
pub(super) struct Site {
    pub steps: Vec<Step>,
    /// The schema type errors show (`Invalid value: "object"`).
    pub typ: String,
    pub rules: Vec<BudgetedRule>,
}

/// The values at a site (nulls skipped: rules do not see them).
fn instances<'v>(obj: &'v Value, steps: &[Step]) -> Vec<&'v Value> {
    let mut cur = vec![obj];
    for step in steps {
        let mut next = Vec::new();
        for v in cur {
            match (step, v) {
                (Step::Field(name), Value::Object(m)) => next.extend(m.get(name)),
                (Step::Items, Value::Array(items)) => next.extend(items),
                (Step::Values, Value::Object(m)) => next.extend(m.values()),
                _ => {}
            }
        }
        cur = next;
    }
    cur.retain(|v| !v.is_null());
    cur
}

/// The field path of the first value at a site (`spec.items[0]`), which
/// budget errors name.
fn first_path(obj: &Value, steps: &[Step]) -> String {
    let mut path = String::new();
    let mut cur = obj;
    for step in steps {
        let next = match (step, cur) {
            (Step::Field(name), Value::Object(m)) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(name);
                m.get(name)
            }
            (Step::Items, Value::Array(items)) => {
                path.push_str("[0]");
                items.first()
            }
            (Step::Values, Value::Object(m)) => m.iter().next().map(|(k, v)| {
                path.push_str(&format!("[{k}]"));
                v
            }),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => break,
        }
    }
    if path.is_empty() {
        "<nil>".into()
    } else {
        path
    }
}

/// The size of a value as CEL sees it.
fn size_of(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.chars().count() as u64,
        Value::Array(a) => a.len() as u64,
        Value::Object(m) => m.len() as u64,
        _ => 1,
    }
}

/// The most elements a path reaches, over all the values it starts from.
fn measure(values: &[&Value], steps: &[Step]) -> u64 {
    let mut max = 0u64;
    let mut cur: Vec<&Value> = values.to_vec();
    for (i, step) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        let mut next = Vec::new();
        for v in cur {
            match (step, v) {
                (Step::Field(name), Value::Object(m)) => next.extend(m.get(name)),
                (Step::Items, Value::Array(items)) => next.extend(items),
                (Step::Values, Value::Object(m)) => next.extend(m.values()),
                (Step::Keys, Value::Object(m)) if last => {
                    let longest = m.keys().map(|k| k.chars().count() as u64).max();
                    max = max.max(longest.unwrap_or(0));
                }
                _ => {}
            }
        }
        cur = next;
    }
    if !matches!(steps.last(), Some(Step::Keys)) {
        for v in cur {
            max = max.max(size_of(v));
        }
    }
    max
}

/// Sizes measured on the values a rule runs on.
struct Measured {
    sizes: BTreeMap<DataPath, u64>,
}

impl Sizes for Measured {
    fn size(&self, path: &DataPath, decl: &Decl) -> u64 {
        self.sizes.get(path).copied().unwrap_or(decl.max_elements)
    }
}

/// The error that stops validation when an object's rules would cost more
/// than kube-apiserver allows, if they would.
pub(super) fn over_budget(sites: &[Site], obj: &Value, old: Option<&Value>) -> Option<FieldError> {
    let mut spent = 0u64;
    for site in sites {
        let values = instances(obj, &site.steps);
        if values.is_empty() {
            continue;
        }
        let old_values = old.map(|o| instances(o, &site.steps)).unwrap_or_default();
        let count = values.len() as u64;
        for rule in &site.rules {
            if rule.transition && !rule.optional_old_self && old.is_none() {
                continue;
            }
            let per_call = if rule.static_cost <= PER_CALL_LIMIT
                && spent.saturating_add(rule.static_cost.saturating_mul(count)) <= RUNTIME_BUDGET
            {
                rule.static_cost
            } else {
                // Over the schema-bound estimate: look at the sizes this
                // object actually has.
                let sizes = rule
                    .paths
                    .iter()
                    .map(|p| {
                        let from = match p.0 {
                            Root::SelfValue => &values,
                            Root::OldSelf => &old_values,
                            // CRD rules read only `self` and `oldSelf`.
                            Root::Untyped(_) => return (p.clone(), 0),
                        };
                        (p.clone(), measure(from, &p.1))
                    })
                    .collect();
                let measured = Measured { sizes };
                analysis::analyze(
                    rule.program.expression(),
                    rule.decl.as_ref(),
                    rule.optional_old_self,
                    &measured,
                )
                .cost
            };
            let field = || first_path(obj, &site.steps);
            let typ = Value::String(site.typ.clone());
            if per_call > PER_CALL_LIMIT {
                return Some(FieldError::invalid(
                    &field(),
                    &typ,
                    &format!(
                        "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        rule.name
                    ),
                ));
            }
            spent = spent.saturating_add(per_call.saturating_mul(count));
            if spent > RUNTIME_BUDGET {
                return Some(FieldError::invalid(
                    &field(),
                    &typ,
                    "validation failed due to running out of cost budget, no further validation rules will be run",
                ));
            }
        }
    }
    None
}

/// The cost of one evaluation of an admission expression over `roots`
/// (its variables, as bound): cel-go's estimate with the sizes the values
/// it reads have, authorization checks aside (they are counted as they
/// are made).
pub(super) fn admission_cost(program: &Program, roots: &[(&str, &cel::Value)]) -> u64 {
    let names: Vec<&str> = roots.iter().map(|(n, _)| *n).collect();
    let values: Vec<&cel::Value> = roots.iter().map(|(_, v)| *v).collect();
    analysis::analyze_untyped(program.expression(), &names, &Bound { roots: values }).cost
}

/// Sizes read from the values admission expressions are bound to.
struct Bound<'v> {
    roots: Vec<&'v cel::Value>,
}

impl Sizes for Bound<'_> {
    fn size(&self, _path: &DataPath, decl: &Decl) -> u64 {
        decl.max_elements
    }

    fn untyped_size(&self, path: &DataPath) -> u64 {
        let Root::Untyped(i) = path.0 else { return 0 };
        let Some(root) = self.roots.get(i) else {
            return 0;
        };
        let mut cur: Vec<cel::Value> = vec![(*root).clone()];
        for step in &path.1 {
            let mut next = Vec::new();
            for v in &cur {
                match (step, v) {
                    (Step::Field(name), cel::Value::Map(m)) => {
                        next.extend(m.map.get(&Key::String(Arc::new(name.clone()))).cloned());
                    }
                    (Step::Items | Step::Values, cel::Value::List(items)) => {
                        next.extend(items.iter().cloned());
                    }
                    (Step::Items | Step::Keys, cel::Value::Map(m)) => {
                        next.extend(m.map.keys().map(|k| cel::Value::from(k.clone())));
                    }
                    (Step::Values, cel::Value::Map(m)) => next.extend(m.map.values().cloned()),
                    _ => {}
                }
            }
            cur = next;
        }
        cur.iter().map(cel_size).max().unwrap_or(0)
    }
}

/// The size of a value as CEL sees it.
fn cel_size(v: &cel::Value) -> u64 {
    match v {
        cel::Value::String(s) => s.chars().count() as u64,
        cel::Value::Bytes(b) => b.len() as u64,
        cel::Value::List(l) => l.len() as u64,
        cel::Value::Map(m) => m.map.len() as u64,
        _ => 1,
    }
}
