//! What kube-apiserver's CEL compiler checks beyond syntax, done on the
//! `cel` crate's syntax tree and the declared type of `self`
//! ([`Decl`](super::decl::Decl)): field selections on declared objects
//! (`undefined field 'x'`), the result type of a rule, and regular
//! expression literals (`invalid matches argument`); and the cost estimate
//! of cel-go's checker (`checker/cost.go`, with k8s.io/apiserver's
//! `library.CostEstimator` for the Kubernetes functions): the most one
//! evaluation may cost, given how large each list, map and string may be.
//!
//! The type inference is deliberately partial: what it cannot type is
//! `dyn`, and `dyn` is never an error, so a rule kube-apiserver accepts is
//! not refused here.

use std::collections::BTreeSet;
use std::sync::Arc;

use kube_core::cel::cel::common::ast::{
    operators, CallExpr, ComprehensionExpr, EntryExpr, Expr, LiteralValue,
};
use kube_core::cel::cel::IdedExpr;

use super::decl::{Decl, Kind, MAX_REQUEST_BYTES};

// cel-go's cost units (common/cost.go, checker/cost.go).
const SELECT_AND_IDENT_COST: u64 = 1;
const CONST_COST: u64 = 0;
const CREATE_LIST_BASE_COST: u64 = 10;
const CREATE_MAP_BASE_COST: u64 = 30;
const CREATE_MESSAGE_BASE_COST: u64 = 40;
const STRING_TRAVERSAL_COST_FACTOR: f64 = 0.1;
const REGEX_STRING_LENGTH_COST_FACTOR: f64 = 0.25;

/// The size assumed for a value whose size nothing bounds (a computed
/// value the estimate does not follow): no value taken from a request can
/// be larger than the request.
const UNKNOWN_SIZE: u64 = MAX_REQUEST_BYTES;

/// The namespaces of the Kubernetes and cel-go extension libraries, which
/// the parser reads as receivers (`sets.contains(a, b)`).
const NAMESPACES: &[&str] = &[
    "base64",
    "format",
    "jsonpatch",
    "lists",
    "math",
    "optional",
    "sets",
    "strings",
];

/// The identifiers naming types (`type(x) == int`).
const TYPE_NAMES: &[&str] = &[
    "bool",
    "bytes",
    "double",
    "duration",
    "dyn",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "timestamp",
    "type",
    "uint",
];

/// Where a value comes from: `self` or `oldSelf`, or the n-th untyped
/// variable of an admission expression (`object`, `request`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Root {
    SelfValue,
    OldSelf,
    Untyped(usize),
}

/// One step from a root into the data, as cel-go's size estimator paths
/// go (`@items`, `@keys`, `@values`). Below an untyped root, where lists
/// and maps are not told apart, `Items` is what a comprehension ranges
/// over (a list's items, a map's keys) and `Values` what an index gives
/// (a list's items, a map's values).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Step {
    Field(String),
    Items,
    Keys,
    Values,
}

/// A value's place in the data.
pub(super) type DataPath = (Root, Vec<Step>);

/// How large a declared value is.
pub(super) trait Sizes {
    /// The most elements (items, entries, characters) the value at `path`
    /// has.
    fn size(&self, path: &DataPath, decl: &Decl) -> u64;

    /// The most elements the value at `path` below an untyped root has.
    fn untyped_size(&self, _path: &DataPath) -> u64 {
        UNKNOWN_SIZE
    }
}

/// At CRD write: what the schema allows (`MaxElements`).
pub(super) struct Declared;

impl Sizes for Declared {
    fn size(&self, _path: &DataPath, decl: &Decl) -> u64 {
        decl.max_elements
    }
}

/// Where a type error points in the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Anchor {
    /// The n-th field selection (`.name`) in source order.
    Select(usize),
    /// The n-th string literal in source order.
    StringLiteral(usize),
}

/// A type error, worded as cel-go's checker words it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TypeError {
    pub anchor: Anchor,
    pub message: String,
}

/// What the analysis of one expression found.
#[derive(Debug)]
pub(super) struct Analysis {
    pub errors: Vec<TypeError>,
    /// The most one evaluation costs.
    pub cost: u64,
    /// The result type, when known (`None`: dyn).
    pub result: Option<Ty>,
    /// The data paths whose sizes the cost depends on.
    pub paths: BTreeSet<DataPath>,
}

/// A CEL type, as far as the analysis follows it.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Ty {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    Type,
    List(Box<Ty>),
    Map(Box<Ty>),
    Object,
    Optional(Box<Ty>),
    Dyn,
}

impl Ty {
    fn of(decl: &Decl) -> Ty {
        match &decl.kind {
            Kind::Bool => Ty::Bool,
            Kind::Int => Ty::Int,
            Kind::Double => Ty::Double,
            Kind::String => Ty::String,
            Kind::Bytes => Ty::Bytes,
            Kind::Duration => Ty::Duration,
            Kind::Timestamp => Ty::Timestamp,
            Kind::Dyn => Ty::Dyn,
            Kind::List(e) => Ty::List(Box::new(Ty::of(e))),
            Kind::Map(v) => Ty::Map(Box::new(Ty::of(v))),
            Kind::Object(_) => Ty::Object,
        }
    }

    /// Types whose values have no size (cel-go `computeTypeSize`: 1).
    fn is_scalar(&self) -> bool {
        matches!(
            self,
            Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::Null | Ty::Duration | Ty::Timestamp
        )
    }

    /// cel-go's name of a primitive type, for messages.
    fn primitive_name(&self) -> Option<&'static str> {
        Some(match self {
            Ty::Bool => "bool",
            Ty::Int => "int",
            Ty::Uint => "uint",
            Ty::Double => "double",
            Ty::String => "string",
            Ty::Bytes => "bytes",
            Ty::Null => "null_type",
            Ty::Duration => "google.protobuf.Duration",
            Ty::Timestamp => "google.protobuf.Timestamp",
            _ => return None,
        })
    }
}

/// A value during the analysis: its type, the declaration and data path
/// it was read from (which give its size), or a size of its own; for a
/// computed list, what its elements are.
#[derive(Clone, Debug)]
struct Val {
    ty: Ty,
    decl: Option<Arc<Decl>>,
    path: Option<DataPath>,
    size: Option<u64>,
    elem: Option<Box<Val>>,
}

impl Val {
    fn of(ty: Ty) -> Val {
        Val {
            ty,
            decl: None,
            path: None,
            size: None,
            elem: None,
        }
    }

    fn sized(ty: Ty, size: u64) -> Val {
        Val {
            size: Some(size),
            ..Val::of(ty)
        }
    }

    fn declared(decl: &Arc<Decl>, path: Option<DataPath>) -> Val {
        Val {
            ty: Ty::of(decl),
            decl: Some(decl.clone()),
            path,
            size: None,
            elem: None,
        }
    }

    fn dyn_() -> Val {
        Val::of(Ty::Dyn)
    }

    /// Whether this is data below an untyped root.
    fn untyped(&self) -> bool {
        self.decl.is_none()
            && self.ty == Ty::Dyn
            && matches!(self.path, Some((Root::Untyped(_), _)))
    }

    /// The untyped value one `step` below this one.
    fn untyped_child(&self, step: Step) -> Val {
        Val {
            path: self.step(step),
            ..Val::dyn_()
        }
    }

    fn step(&self, step: Step) -> Option<DataPath> {
        self.path.as_ref().map(|(root, steps)| {
            let mut steps = steps.clone();
            steps.push(step);
            (*root, steps)
        })
    }

    /// An element of this list (or a key of this map).
    fn element(&self) -> Val {
        if let Some(e) = &self.elem {
            return (**e).clone();
        }
        match self.decl.as_deref().map(|d| &d.kind) {
            Some(Kind::List(e)) => Val::declared(e, self.step(Step::Items)),
            // Map keys are declared as plain strings (`StringType`), whose
            // size kube-apiserver leaves at 0.
            Some(Kind::Map(_)) => Val {
                path: self.step(Step::Keys),
                ..Val::sized(Ty::String, 0)
            },
            _ => match &self.ty {
                Ty::List(t) => Val::of((**t).clone()),
                Ty::Map(_) => Val::of(Ty::String),
                _ if self.untyped() => self.untyped_child(Step::Items),
                _ => Val::dyn_(),
            },
        }
    }

    /// A value of this map.
    fn map_value(&self) -> Val {
        match self.decl.as_deref().map(|d| &d.kind) {
            Some(Kind::Map(v)) => Val::declared(v, self.step(Step::Values)),
            _ => match &self.ty {
                Ty::Map(t) => Val::of((**t).clone()),
                _ if self.untyped() => self.untyped_child(Step::Values),
                _ => Val::dyn_(),
            },
        }
    }
}

fn factor(size: u64, f: f64) -> u64 {
    let v = (size as f64 * f).ceil();
    if v >= u64::MAX as f64 {
        u64::MAX
    } else {
        v as u64
    }
}

/// Analyzes one expression with `self` (and `oldSelf`, optional when
/// `optional_old_self`) of type `root`.
pub(super) fn analyze(
    expr: &IdedExpr,
    root: Option<&Arc<Decl>>,
    optional_old_self: bool,
    sizes: &dyn Sizes,
) -> Analysis {
    let mut a = Analyzer {
        sizes,
        scopes: Vec::new(),
        errors: Vec::new(),
        paths: BTreeSet::new(),
        selects: 0,
        strings: 0,
    };
    let self_val = match root {
        Some(d) => Val::declared(d, Some((Root::SelfValue, Vec::new()))),
        None => Val::dyn_(),
    };
    let mut old = match root {
        Some(d) => Val::declared(d, Some((Root::OldSelf, Vec::new()))),
        None => Val::dyn_(),
    };
    if optional_old_self {
        old = Val {
            ty: Ty::Optional(Box::new(old.ty.clone())),
            elem: Some(Box::new(old)),
            ..Val::dyn_()
        };
    }
    a.scopes.push(("self".into(), self_val));
    a.scopes.push(("oldSelf".into(), old));
    let (v, cost) = a.expr(expr);
    Analysis {
        errors: a.errors,
        cost,
        result: (v.ty != Ty::Dyn).then_some(v.ty),
        paths: a.paths,
    }
}

/// Analyzes an admission expression whose variables, `roots`, are untyped:
/// sizes come from `sizes.untyped_size` at the paths the expression reads.
pub(super) fn analyze_untyped(expr: &IdedExpr, roots: &[&str], sizes: &dyn Sizes) -> Analysis {
    let mut a = Analyzer {
        sizes,
        scopes: Vec::new(),
        errors: Vec::new(),
        paths: BTreeSet::new(),
        selects: 0,
        strings: 0,
    };
    for (i, name) in roots.iter().enumerate() {
        let root = Val {
            path: Some((Root::Untyped(i), Vec::new())),
            ..Val::dyn_()
        };
        a.scopes.push(((*name).to_owned(), root));
    }
    let (v, cost) = a.expr(expr);
    Analysis {
        errors: a.errors,
        cost,
        result: (v.ty != Ty::Dyn).then_some(v.ty),
        paths: a.paths,
    }
}

/// A call's evaluated operands.
struct Operands<'a> {
    name: &'a str,
    /// The library namespace called on (`sets`, `optional`, `strings`).
    namespace: Option<String>,
    /// The receiver of a method call.
    recv: Option<Val>,
    /// Each argument's value and cost.
    args: Vec<(Val, u64)>,
    /// What evaluating the receiver and arguments costs.
    arg_cost: u64,
    exprs: &'a [IdedExpr],
    /// String literals seen before the arguments.
    strings_before: usize,
}

impl Operands<'_> {
    fn arg(&self, i: usize) -> Option<Val> {
        self.args.get(i).map(|(v, _)| v.clone())
    }

    /// The value a string function works on: the receiver, or the first
    /// argument of the global form.
    fn subject(&self) -> Option<Val> {
        self.recv.clone().or_else(|| self.arg(0))
    }

    /// The cost of a constant-time call.
    fn one(&self) -> u64 {
        1u64.saturating_add(self.arg_cost)
    }
}

struct Analyzer<'s> {
    sizes: &'s dyn Sizes,
    scopes: Vec<(String, Val)>,
    errors: Vec<TypeError>,
    paths: BTreeSet<DataPath>,
    /// Field selections and string literals seen so far, in source order.
    selects: usize,
    strings: usize,
}

impl Analyzer<'_> {
    /// The most elements a value has. Declared values have their
    /// declaration's (`MaxElements`, 0 for numbers, booleans and objects,
    /// as kube-apiserver's size estimator has it); lists, maps and strings
    /// read from the data have the data's at run time.
    fn size(&mut self, v: &Val) -> u64 {
        if let Some(s) = v.size {
            return s;
        }
        match (&v.decl, &v.path) {
            (Some(d), Some(p)) if d.has_elements() => {
                self.paths.insert(p.clone());
                self.sizes.size(p, d)
            }
            (Some(d), _) => d.max_elements,
            (None, _) if v.ty.is_scalar() => 1,
            (None, Some(p)) if v.untyped() => {
                self.paths.insert(p.clone());
                self.sizes.untyped_size(p)
            }
            _ => UNKNOWN_SIZE,
        }
    }

    fn lookup(&self, name: &str) -> Option<Val> {
        self.scopes
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    fn expr(&mut self, e: &IdedExpr) -> (Val, u64) {
        match &e.expr {
            Expr::Literal(l) => (self.literal(l), CONST_COST),
            Expr::Ident(name) => {
                let v = match self.lookup(name) {
                    Some(v) => v,
                    None if TYPE_NAMES.contains(&name.as_str()) => Val::of(Ty::Type),
                    None => Val::dyn_(),
                };
                (v, SELECT_AND_IDENT_COST)
            }
            Expr::Select(sel) => {
                let (operand, cost) = self.expr(&sel.operand);
                let ordinal = self.selects;
                self.selects += 1;
                let field = self.select(&operand, &sel.field, ordinal);
                if sel.test {
                    // has(): kube-apiserver counts presence tests as free
                    // (`PresenceTestHasCost(false)`).
                    return (Val::of(Ty::Bool), cost);
                }
                let own = match operand.ty {
                    Ty::Object | Ty::Map(_) => SELECT_AND_IDENT_COST,
                    _ if operand.untyped() => SELECT_AND_IDENT_COST,
                    _ => 0,
                };
                (field, cost.saturating_add(own))
            }
            Expr::Call(call) => self.call(call),
            Expr::List(list) => {
                let mut cost = CREATE_LIST_BASE_COST;
                let mut elem: Option<Val> = None;
                for el in &list.elements {
                    let (v, c) = self.expr(el);
                    cost = cost.saturating_add(c);
                    let size = self.size(&v);
                    elem = Some(match elem {
                        None => Val {
                            size: Some(size),
                            ..v
                        },
                        Some(prev) => {
                            let s = prev.size.unwrap_or(0).max(size);
                            let ty = if prev.ty == v.ty { v.ty } else { Ty::Dyn };
                            Val::sized(ty, s)
                        }
                    });
                }
                let ty = elem.as_ref().map_or(Ty::Dyn, |e| e.ty.clone());
                let v = Val {
                    elem: elem.map(Box::new),
                    ..Val::sized(Ty::List(Box::new(ty)), list.elements.len() as u64)
                };
                (v, cost)
            }
            Expr::Map(map) => {
                let mut cost = CREATE_MAP_BASE_COST;
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        cost = cost.saturating_add(self.expr(&m.key).1);
                        cost = cost.saturating_add(self.expr(&m.value).1);
                    }
                }
                (
                    Val::sized(Ty::Map(Box::new(Ty::Dyn)), map.entries.len() as u64),
                    cost,
                )
            }
            Expr::Struct(s) => {
                let mut cost = CREATE_MESSAGE_BASE_COST;
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        cost = cost.saturating_add(self.expr(&f.value).1);
                    }
                }
                (Val::dyn_(), cost)
            }
            Expr::Comprehension(c) => self.comprehension(c),
            Expr::Unspecified => (Val::dyn_(), 0),
        }
    }

    fn literal(&mut self, l: &LiteralValue) -> Val {
        match l {
            LiteralValue::String(s) => {
                self.strings += 1;
                Val::sized(Ty::String, s.inner().chars().count() as u64)
            }
            LiteralValue::Bytes(b) => Val::sized(Ty::Bytes, b.inner().len() as u64),
            LiteralValue::Boolean(_) => Val::of(Ty::Bool),
            LiteralValue::Int(_) => Val::of(Ty::Int),
            LiteralValue::UInt(_) => Val::of(Ty::Uint),
            LiteralValue::Double(_) => Val::of(Ty::Double),
            LiteralValue::Null => Val::of(Ty::Null),
        }
    }

    /// `operand.field`: a declared field, a map value, or an error.
    fn select(&mut self, operand: &Val, field: &str, ordinal: usize) -> Val {
        match (&operand.ty, operand.decl.as_deref().map(|d| &d.kind)) {
            (Ty::Object, Some(Kind::Object(fields))) => match fields.get(field) {
                Some(f) => Val::declared(&f.decl, operand.step(Step::Field(f.json_name.clone()))),
                None => {
                    self.errors.push(TypeError {
                        anchor: Anchor::Select(ordinal),
                        message: format!("undefined field '{field}'"),
                    });
                    Val::dyn_()
                }
            },
            (Ty::Map(_), _) => operand.map_value(),
            _ if operand.untyped() => operand.untyped_child(Step::Field(field.to_owned())),
            (t, _) => {
                if let Some(name) = t.primitive_name() {
                    self.errors.push(TypeError {
                        anchor: Anchor::Select(ordinal),
                        message: format!("type '{name}' does not support field selection"),
                    });
                }
                Val::dyn_()
            }
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> (Val, u64) {
        let (range, range_cost) = self.expr(&c.iter_range);
        let (init, init_cost) = self.expr(&c.accu_init);
        let is_map = matches!(range.ty, Ty::Map(_));
        let scope = self.scopes.len();
        self.scopes.push((c.accu_var.clone(), init.clone()));
        match &c.iter_var2 {
            Some(second) => {
                let (first, value) = if is_map {
                    (range.element(), range.map_value())
                } else {
                    (Val::of(Ty::Int), range.element())
                };
                self.scopes.push((c.iter_var.clone(), first));
                self.scopes.push((second.clone(), value));
            }
            None => {
                let first = range.element();
                self.scopes.push((c.iter_var.clone(), first));
            }
        }
        let (_, cond_cost) = self.expr(&c.loop_cond);
        let (step, step_cost) = self.expr(&c.loop_step);
        // A list built up step by step (map, filter) has the step's type.
        let accu = if matches!(init.ty, Ty::List(_)) {
            let range_size = self.size(&range);
            Val {
                size: Some(range_size),
                ..step
            }
        } else {
            init
        };
        self.scopes.truncate(scope);
        self.scopes.push((c.accu_var.clone(), accu));
        let (result, result_cost) = self.expr(&c.result);
        self.scopes.truncate(scope);
        let count = self.size(&range);
        let per_item = cond_cost.saturating_add(step_cost);
        let cost = range_cost
            .saturating_add(init_cost)
            .saturating_add(result_cost)
            .saturating_add(count.saturating_mul(per_item));
        (result, cost)
    }

    /// A call's type and cost: its operands evaluated, then the operator
    /// or function, group by group (the first that knows it answers).
    fn call(&mut self, call: &CallExpr) -> (Val, u64) {
        let name = call.func_name.as_str();
        // A call on a library namespace (`sets.contains(a, b)`).
        let namespace = match call.target.as_deref().map(|t| &t.expr) {
            Some(Expr::Ident(ns))
                if NAMESPACES.contains(&ns.as_str()) && self.lookup(ns).is_none() =>
            {
                Some(ns.clone())
            }
            _ => None,
        };
        let target = match (&call.target, &namespace) {
            (Some(t), None) => Some(self.expr(t)),
            _ => None,
        };
        let mut args = Vec::with_capacity(call.args.len());
        let strings_before = self.strings;
        for a in &call.args {
            args.push(self.expr(a));
        }
        let arg_cost = args
            .iter()
            .fold(0u64, |acc, (_, c)| acc.saturating_add(*c))
            .saturating_add(target.as_ref().map_or(0, |(_, c)| *c));
        let c = Operands {
            name,
            namespace,
            recv: target.map(|(v, _)| v),
            args,
            arg_cost,
            exprs: &call.args,
            strings_before,
        };
        self.logic_and_comparison(&c)
            .or_else(|| self.arithmetic_and_index(&c))
            .or_else(|| self.strings_and_conversions(&c))
            .or_else(|| self.libraries(&c))
            .unwrap_or_else(|| (Val::dyn_(), c.one()))
    }

    /// The logical operators, the conditional and the comparisons.
    fn logic_and_comparison(&mut self, c: &Operands<'_>) -> Option<(Val, u64)> {
        let name = c.name;
        let args = &c.args;
        let arg = |i: usize| c.arg(i);
        let bool_ = Val::of(Ty::Bool);
        let one = c.one();
        let arg_cost = c.arg_cost;
        Some(match (c.namespace.as_deref(), c.name) {
            (None, operators::LOGICAL_AND | operators::LOGICAL_OR) => (bool_, arg_cost),
            (None, operators::LOGICAL_NOT | operators::NOT_STRICTLY_FALSE) => (bool_, one),
            (None, operators::NEGATE) => (arg(0).map_or_else(Val::dyn_, |v| Val::of(v.ty)), one),
            (None, operators::CONDITIONAL) => {
                let c0 = args.first().map_or(0, |a| a.1);
                let c1 = args.get(1).map_or(0, |a| a.1);
                let c2 = args.get(2).map_or(0, |a| a.1);
                let (t, f) = (
                    arg(1).unwrap_or_else(Val::dyn_),
                    arg(2).unwrap_or_else(Val::dyn_),
                );
                let size = self.size(&t).max(self.size(&f));
                let v = if t.ty == f.ty {
                    Val {
                        size: Some(size),
                        path: None,
                        ..t
                    }
                } else {
                    Val::sized(Ty::Dyn, size)
                };
                (v, c0.saturating_add(c1.max(c2)))
            }
            (
                None,
                operators::EQUALS
                | operators::NOT_EQUALS
                | operators::LESS
                | operators::LESS_EQUALS
                | operators::GREATER
                | operators::GREATER_EQUALS,
            ) => {
                let (l, r) = (
                    arg(0).unwrap_or_else(Val::dyn_),
                    arg(1).unwrap_or_else(Val::dyn_),
                );
                let ordering = !matches!(name, operators::EQUALS | operators::NOT_EQUALS);
                let sized = !ordering || matches!(l.ty, Ty::String | Ty::Bytes);
                let cost = if sized {
                    let smallest = self.size(&l).min(self.size(&r));
                    factor(smallest, STRING_TRAVERSAL_COST_FACTOR)
                } else {
                    1
                };
                (bool_, cost.saturating_add(arg_cost))
            }
            _ => return None,
        })
    }

    /// Arithmetic, indexing, optional selection and `in`.
    fn arithmetic_and_index(&mut self, c: &Operands<'_>) -> Option<(Val, u64)> {
        let name = c.name;
        let arg = |i: usize| c.arg(i);
        let bool_ = Val::of(Ty::Bool);
        let one = c.one();
        let arg_cost = c.arg_cost;
        Some(match (c.namespace.as_deref(), c.name) {
            (None, operators::ADD) => {
                let (l, r) = (
                    arg(0).unwrap_or_else(Val::dyn_),
                    arg(1).unwrap_or_else(Val::dyn_),
                );
                match (&l.ty, &r.ty) {
                    (Ty::String, Ty::String) | (Ty::Bytes, Ty::Bytes) => {
                        let size = self.size(&l).saturating_add(self.size(&r));
                        let cost = factor(size, STRING_TRAVERSAL_COST_FACTOR);
                        (
                            Val::sized(l.ty.clone(), size),
                            cost.saturating_add(arg_cost),
                        )
                    }
                    (Ty::List(a), Ty::List(b)) => {
                        let size = self.size(&l).saturating_add(self.size(&r));
                        let elem = if **a == Ty::Dyn {
                            r.element()
                        } else {
                            l.element()
                        };
                        let ty = if **a == Ty::Dyn { b.clone() } else { a.clone() };
                        let v = Val {
                            elem: Some(Box::new(elem)),
                            ..Val::sized(Ty::List(ty), size)
                        };
                        (v, one)
                    }
                    (Ty::Timestamp, _) | (_, Ty::Timestamp) => (Val::of(Ty::Timestamp), one),
                    (a, b) if a == b && a.is_scalar() => (Val::of(a.clone()), one),
                    _ => (Val::dyn_(), one),
                }
            }
            (None, operators::SUBSTRACT) => {
                let ty = match (arg(0).map(|v| v.ty), arg(1).map(|v| v.ty)) {
                    (Some(Ty::Timestamp), Some(Ty::Timestamp)) => Ty::Duration,
                    (Some(Ty::Timestamp), _) => Ty::Timestamp,
                    (Some(a), Some(b)) if a == b && a.is_scalar() => a,
                    _ => Ty::Dyn,
                };
                (Val::of(ty), one)
            }
            (None, operators::MULTIPLY | operators::DIVIDE | operators::MODULO) => {
                let ty = match (arg(0).map(|v| v.ty), arg(1).map(|v| v.ty)) {
                    (Some(a), Some(b)) if a == b && a.is_scalar() => a,
                    _ => Ty::Dyn,
                };
                (Val::of(ty), one)
            }
            (None, operators::INDEX | operators::OPT_INDEX) => {
                let c = arg(0).unwrap_or_else(Val::dyn_);
                let v = match c.ty {
                    Ty::List(_) => c.element(),
                    Ty::Map(_) => c.map_value(),
                    _ if c.untyped() => c.untyped_child(Step::Values),
                    _ => Val::dyn_(),
                };
                let v = if name == operators::OPT_INDEX {
                    Val {
                        ty: Ty::Optional(Box::new(v.ty.clone())),
                        elem: Some(Box::new(v)),
                        ..Val::dyn_()
                    }
                } else {
                    v
                };
                (v, one)
            }
            (None, operators::OPT_SELECT) => (Val::of(Ty::Optional(Box::new(Ty::Dyn))), one),
            (None, operators::IN) => {
                let c = arg(1).unwrap_or_else(Val::dyn_);
                let cost = match c.ty {
                    Ty::Map(_) => 1,
                    _ => self.size(&c),
                };
                (bool_, cost.saturating_add(arg_cost))
            }
            _ => return None,
        })
    }

    /// `size`, the regex and string tests, the conversions and the optional accessors.
    fn strings_and_conversions(&mut self, c: &Operands<'_>) -> Option<(Val, u64)> {
        let name = c.name;
        let arg = |i: usize| c.arg(i);
        let recv = c.recv.clone();
        let subject = c.subject();
        let bool_ = Val::of(Ty::Bool);
        let one = c.one();
        let arg_cost = c.arg_cost;
        let strings_before = c.strings_before;
        Some(match (c.namespace.as_deref(), c.name) {
            (None, "size") => (Val::of(Ty::Int), one),
            (None, "matches" | "find" | "findAll") => {
                // `s.matches(re)` or `matches(s, re)`.
                let (s, re) = if recv.is_some() {
                    (subject.clone(), arg(0))
                } else {
                    (arg(0), arg(1))
                };
                if name == "matches" {
                    self.check_regex(c.exprs, strings_before);
                }
                let s = s.unwrap_or_else(Val::dyn_);
                let re = re.unwrap_or_else(Val::dyn_);
                let s_size = self.size(&s);
                let str_cost = factor(s_size.saturating_add(1), STRING_TRAVERSAL_COST_FACTOR);
                let re_cost = factor(self.size(&re), REGEX_STRING_LENGTH_COST_FACTOR);
                let cost = str_cost.saturating_mul(re_cost).saturating_add(arg_cost);
                let v = match name {
                    "matches" => bool_,
                    "find" => Val::sized(Ty::String, s_size),
                    _ => Val {
                        elem: Some(Box::new(Val::sized(Ty::String, s_size))),
                        ..Val::sized(Ty::List(Box::new(Ty::String)), s_size)
                    },
                };
                (v, cost)
            }
            (None, "startsWith" | "endsWith") => {
                let size = arg(0).map_or(0, |v| self.size(&v));
                (
                    bool_,
                    factor(size, STRING_TRAVERSAL_COST_FACTOR).saturating_add(arg_cost),
                )
            }
            (None, "contains") => {
                let s = subject.clone().unwrap_or_else(Val::dyn_);
                let sub = arg(0).unwrap_or_else(Val::dyn_);
                let a = factor(self.size(&s), STRING_TRAVERSAL_COST_FACTOR);
                let b = factor(self.size(&sub), STRING_TRAVERSAL_COST_FACTOR);
                (bool_, a.saturating_mul(b).saturating_add(arg_cost))
            }
            (None, "string" | "bytes") => {
                let ty = if name == "string" {
                    Ty::String
                } else {
                    Ty::Bytes
                };
                let s = arg(0).unwrap_or_else(Val::dyn_);
                let size = self.size(&s);
                let cost = match (&s.ty, name) {
                    (Ty::Bytes, "string") | (Ty::String, "bytes") => {
                        factor(size, STRING_TRAVERSAL_COST_FACTOR).saturating_add(arg_cost)
                    }
                    _ => one,
                };
                (Val::sized(ty, size), cost)
            }
            (None, "int") => (Val::of(Ty::Int), one),
            (None, "uint") => (Val::of(Ty::Uint), one),
            (None, "double") => (Val::of(Ty::Double), one),
            (None, "bool") => (bool_, one),
            (None, "duration") => (Val::of(Ty::Duration), one),
            (None, "timestamp") => (Val::of(Ty::Timestamp), one),
            (None, "type") => (Val::of(Ty::Type), one),
            (None, "dyn") => {
                let v = arg(0).unwrap_or_else(Val::dyn_);
                (Val { ty: Ty::Dyn, ..v }, one)
            }
            // Optionals.
            (None, "hasValue") => (bool_, one),
            (None, "value" | "orValue") => {
                let inner = recv
                    .as_ref()
                    .and_then(|r| r.elem.as_deref().cloned())
                    .unwrap_or_else(Val::dyn_);
                (inner, one)
            }
            _ => return None,
        })
    }

    /// Optional constructors and the Kubernetes list, string, format, URL/IP/quantity and sets libraries.
    fn libraries(&mut self, c: &Operands<'_>) -> Option<(Val, u64)> {
        let name = c.name;
        let arg = |i: usize| c.arg(i);
        let recv = c.recv.clone();
        let subject = c.subject();
        let bool_ = Val::of(Ty::Bool);
        let one = c.one();
        let arg_cost = c.arg_cost;
        Some(match (c.namespace.as_deref(), c.name) {
            (Some("optional"), "of" | "ofNonZeroValue") => {
                let v = arg(0).unwrap_or_else(Val::dyn_);
                (
                    Val {
                        ty: Ty::Optional(Box::new(v.ty.clone())),
                        elem: Some(Box::new(v)),
                        ..Val::dyn_()
                    },
                    one,
                )
            }
            (Some("optional"), "none") => (Val::of(Ty::Optional(Box::new(Ty::Dyn))), one),
            // Kubernetes list library: one pass over the list.
            (None, "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf")
                if matches!(recv.as_ref().map(|r| &r.ty), Some(Ty::List(_))) =>
            {
                let l = recv.clone().unwrap_or_else(Val::dyn_);
                let elem = l.element();
                let mut per = 1u64;
                if matches!(elem.ty, Ty::String | Ty::Bytes) {
                    per =
                        per.saturating_add(factor(self.size(&elem), STRING_TRAVERSAL_COST_FACTOR));
                }
                let cost = self.size(&l).saturating_mul(per).saturating_add(arg_cost);
                let v = match name {
                    "isSorted" => bool_,
                    "indexOf" | "lastIndexOf" => Val::of(Ty::Int),
                    _ => Val::of(elem.ty),
                };
                (v, cost)
            }
            // Kubernetes and cel-go string libraries: one pass over the
            // string.
            (None, "lowerAscii" | "upperAscii" | "substring" | "trim" | "charAt" | "reverse") => {
                let s = subject.clone().unwrap_or_else(Val::dyn_);
                let size = self.size(&s);
                let v = if name == "charAt" {
                    Val::sized(Ty::String, 1)
                } else {
                    Val::sized(Ty::String, size)
                };
                (
                    v,
                    factor(size, STRING_TRAVERSAL_COST_FACTOR).saturating_add(arg_cost),
                )
            }
            (None, "indexOf" | "lastIndexOf") => {
                let size = subject.as_ref().map_or(0, |s| self.size(s));
                (
                    Val::of(Ty::Int),
                    factor(size, STRING_TRAVERSAL_COST_FACTOR).saturating_add(arg_cost),
                )
            }
            (None, "replace") => {
                let s = subject.clone().unwrap_or_else(Val::dyn_);
                let size = self.size(&s);
                let from = arg(0).map_or(1, |v| self.size(&v).max(1));
                let to = arg(1).map_or(1, |v| self.size(&v));
                let result = if to > from {
                    size.saturating_mul(to) / from
                } else {
                    size
                };
                (
                    Val::sized(Ty::String, result),
                    factor(size, 2.0 * STRING_TRAVERSAL_COST_FACTOR).saturating_add(arg_cost),
                )
            }
            (None, "split") => {
                let s = subject.clone().unwrap_or_else(Val::dyn_);
                let size = self.size(&s);
                let v = Val {
                    elem: Some(Box::new(Val::sized(Ty::String, size))),
                    ..Val::sized(Ty::List(Box::new(Ty::String)), size)
                };
                (
                    v,
                    factor(size, 2.0 * STRING_TRAVERSAL_COST_FACTOR).saturating_add(arg_cost),
                )
            }
            (None, "join") => {
                let l = subject.clone().unwrap_or_else(Val::dyn_);
                let elem = l.element();
                let size = self.size(&l).saturating_mul(self.size(&elem).max(1));
                (
                    Val::sized(Ty::String, size),
                    factor(size, STRING_TRAVERSAL_COST_FACTOR).saturating_add(arg_cost),
                )
            }
            (None, "format" | "quote") | (Some("strings"), "quote") => {
                let s = subject.clone().unwrap_or_else(Val::dyn_);
                let size = self.size(&s);
                (
                    Val::sized(Ty::String, size.saturating_mul(2)),
                    factor(size, STRING_TRAVERSAL_COST_FACTOR).saturating_add(arg_cost),
                )
            }
            (
                None,
                "url" | "ip" | "cidr" | "quantity" | "semver" | "isURL" | "isIP" | "isCIDR"
                | "isQuantity" | "isSemver",
            ) => {
                let size = subject.as_ref().map_or(0, |s| self.size(s));
                let v = if name.starts_with("is") {
                    bool_
                } else {
                    Val::dyn_()
                };
                (
                    v,
                    factor(size, STRING_TRAVERSAL_COST_FACTOR).saturating_add(arg_cost),
                )
            }
            (Some("sets"), "contains" | "equivalent" | "intersects") => {
                let a = arg(0).map_or(0, |v| self.size(&v));
                let b = arg(1).map_or(0, |v| self.size(&v));
                (bool_, a.saturating_mul(b).saturating_add(arg_cost))
            }

            _ => return None,
        })
    }

    /// cel-go's `ValidateRegexLiterals`: the first argument of `matches`,
    /// when a string literal, must compile.
    fn check_regex(&mut self, args: &[IdedExpr], strings_before: usize) {
        let Some(Expr::Literal(LiteralValue::String(re))) = args.first().map(|a| &a.expr) else {
            return;
        };
        if regex::Regex::new(re.inner()).is_err() {
            self.errors.push(TypeError {
                anchor: Anchor::StringLiteral(strings_before),
                message: "invalid matches argument".into(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiextensions::cel::decl::decl;
    use kube_core::cel::cel::Program;
    use serde_json::json;

    fn cost(schema: serde_json::Value, rule: &str) -> u64 {
        let d = decl(&schema, false);
        let p = Program::compile(rule).expect("parses");
        let a = analyze(p.expression(), d.as_ref(), false, &Declared);
        assert!(a.errors.is_empty(), "{:?}", a.errors);
        a.cost
    }

    fn array(items: &str, max: Option<i64>) -> serde_json::Value {
        let mut s = json!({"type": "array", "items": {"type": items}});
        if let Some(m) = max {
            s["maxItems"] = json!(m);
        }
        s
    }

    /// apiextensions-apiserver's `TestCostEstimation` cases
    /// (pkg/apiserver/schema/cel/compilation_test.go), which pin cel-go's
    /// estimates.
    #[test]
    fn estimates_match_kube_apiservers() {
        assert_eq!(cost(array("number", None), "self.all(x, true)"), 4_718_591);
        assert_eq!(cost(array("string", None), "self.all(x, true)"), 3_145_727);
        assert_eq!(cost(array("boolean", None), "self.all(x, true)"), 1_887_437);
        let map = json!({"type": "object", "additionalProperties": {"type": "number"}});
        assert_eq!(cost(map, "self.all(x, true)"), 1_348_169);
        let string = json!({"type": "string"});
        assert_eq!(cost(string.clone(), "self.contains('test')"), 314_574);
        assert_eq!(cost(string.clone(), "self.startsWith('test')"), 2);
        assert_eq!(
            cost(string.clone(), r#"size(self + "hello") > size("hello")"#),
            314_578
        );
        assert_eq!(cost(string.clone(), r#"self.matches("x")"#), 314_574);
        assert_eq!(
            cost(string.clone(), r#""".matches("(((((((((())))))))))[0-9]")"#),
            7
        );
        assert_eq!(cost(string, r#"self.matches("")"#), 1);
        assert_eq!(cost(array("number", None), "self[1] == 0.0"), 2);
        assert_eq!(cost(array("string", None), "self[1] == self[1]"), 314_577);
        assert_eq!(
            cost(array("number", Some(10)), "self.all(x, self.all(y, true))"),
            352
        );
        assert_eq!(
            cost(
                array("number", Some(10)),
                "self.all(x, self.all(y, self.all(z, true)))"
            ),
            3552
        );
    }

    #[test]
    fn type_errors_are_found_and_dyn_is_never_one() {
        let s = json!({"type": "object", "properties": {
            "a": {"type": "string"}, "foo-bar": {"type": "integer"},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "ios": {"x-kubernetes-int-or-string": true}}});
        let check = |rule: &str| {
            let d = decl(&s, true);
            let p = Program::compile(rule).expect("parses");
            analyze(p.expression(), d.as_ref(), false, &Declared)
        };
        let errors = |rule: &str| -> Vec<String> {
            check(rule).errors.into_iter().map(|e| e.message).collect()
        };
        assert_eq!(errors("self.nope == 1"), ["undefined field 'nope'"]);
        assert_eq!(errors("has(self.nope)"), ["undefined field 'nope'"]);
        assert_eq!(
            errors("self.a.b == 1"),
            ["type 'string' does not support field selection"]
        );
        assert_eq!(errors("self.a.matches('(')"), ["invalid matches argument"]);
        for ok in [
            "self.foo__dash__bar > 0",
            "self.m.anything == 'x'",
            "self.ios.whatever == 1",
            "self.metadata.name == 'x' && self.kind == 'K' && self.apiVersion == 'v'",
            "self.all(k, k.size() > 0)",
            "dyn(self).nope == 1",
        ] {
            assert_eq!(errors(ok), Vec::<String>::new(), "{ok}");
        }
        assert_eq!(check("1").result, Some(Ty::Int));
        assert_eq!(check("self.a").result, Some(Ty::String));
        assert_eq!(check("self.a == 'x'").result, Some(Ty::Bool));
        assert_eq!(check("self.ios").result, None);
    }
}
