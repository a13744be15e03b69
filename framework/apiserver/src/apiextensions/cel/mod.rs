//! `x-kubernetes-validations` CEL rules, through kube-rs's `kube-cel` (the
//! `cel` feature of kube-core), with the checks kube-apiserver makes around
//! them:
//!
//! - When a CRD is written, every rule and `messageExpression` must pass
//!   the size and depth bounds ([`bounds`]), parse, type-check against the
//!   schema ([`analysis`]: undefined fields, a rule's `bool` result,
//!   regular expression literals) and stay under the estimated cost limits
//!   (per expression and per CRD), each failure worded as
//!   apiextensions-apiserver words it (`compilation failed: ERROR:
//!   <input>:1:5: ...`, laid out by [`display`]).
//! - On every custom resource write, after the OpenAPI validation and only
//!   when it found no blocking error (`hasBlockingErr`), the rules run,
//!   unless the object would take them over the runtime cost budget
//!   ([`budget`]). Failures become field errors the way
//!   `fieldErrorForReason` builds them: the value shown is the schema type
//!   of the node carrying the rule.
//!
//! Parsing and evaluation run on a large stack ([`work::with_large_stack`]).
//! `optionalOldSelf` rules see `oldSelf` as a CEL optional, as in
//! kube-apiserver (kube-cel binds it bare; see [`optional_old_self`]).

mod analysis;
pub(crate) mod authz;
mod bounds;
mod budget;
mod decl;
mod display;

use std::sync::{Arc, LazyLock};

use kube_core::cel::{
    cel, compile_schema, CompiledSchema, ErrorKind, KubeCelExt, ValidationError, Validator,
};
use serde_json::Value;

use super::field::{CauseType, FieldError, Path};
use super::node::Node;
use super::structural::schema_has;
use crate::machinery::work;
use analysis::{Analysis, Anchor, Declared, Step, Ty};
use budget::{BudgetedRule, Site};
pub(crate) use decl::RESERVED as CEL_RESERVED_WORDS;
use decl::{Decl, MAX_REQUEST_BYTES};
use display::Located;

/// The largest estimated cost of one rule (or `messageExpression`), times
/// how many times it may run for one object: apiextensions-apiserver's
/// `StaticEstimatedCostLimit` (pkg/apis/apiextensions/validation).
const STATIC_COST_LIMIT: u64 = 10_000_000;

/// The largest estimated cost of all of a CRD version's rules together:
/// `StaticEstimatedCRDCostLimit` (same file).
const STATIC_CRD_COST_LIMIT: u64 = 100_000_000;

static VALIDATOR: LazyLock<Validator> = LazyLock::new(Validator::new);

/// A schema's rules, compiled for kube-cel and analyzed for the budget.
pub(crate) struct Rules {
    compiled: CompiledSchema,
    sites: Vec<Site>,
}

/// One expression parsed and checked.
struct Parsed {
    program: cel::Program,
    analysis: Analysis,
}

/// Parses and checks one expression against the type of `self`; the error
/// is the text kube-apiserver puts after `compilation failed: `.
fn parse(text: &str, decl: Option<&Arc<Decl>>, optional_old_self: bool) -> Result<Parsed, String> {
    if let Err(refused) = bounds::check(text) {
        return Err(display::display(text, vec![Located::nowhere(refused.0)]));
    }
    let parsed = work::with_large_stack(|| {
        let program = cel::Program::compile(text).map_err(|errs| {
            errs.errors
                .iter()
                .map(|e| match e.pos {
                    (line, column) if line >= 1 && column >= 1 => Located {
                        at: Some((line as usize, column as usize - 1)),
                        message: e.msg.clone(),
                    },
                    _ => Located::nowhere(e.msg.clone()),
                })
                .collect::<Vec<_>>()
        })?;
        let analysis = analysis::analyze(program.expression(), decl, optional_old_self, &Declared);
        Ok(Parsed { program, analysis })
    });
    let parsed = match parsed {
        Ok(Ok(p)) => p,
        Ok(Err(errors)) => return Err(display::display(text, errors)),
        Err(panicked) => {
            tracing::warn!(%panicked, "the CEL parser failed");
            return Err(display::display(
                text,
                vec![Located::nowhere("the expression could not be parsed")],
            ));
        }
    };
    if !parsed.analysis.errors.is_empty() {
        let anchors = bounds::anchors(text);
        let errors = parsed
            .analysis
            .errors
            .iter()
            .map(|e| {
                let offset = match e.anchor {
                    Anchor::Select(i) => anchors.selects.get(i),
                    Anchor::StringLiteral(i) => anchors.strings.get(i),
                };
                match offset {
                    Some(&o) => Located::at_offset(text, o, e.message.clone()),
                    None => Located::nowhere(e.message.clone()),
                }
            })
            .collect();
        return Err(display::display(text, errors));
    }
    Ok(parsed)
}

/// Parses an expression bound to no schema (a webhook's
/// `matchConditions`): the size bounds and the syntax only, since its
/// variables are not typed here; the error is the text kube-apiserver
/// puts after `compilation failed: `.
pub(crate) fn parse_unbound(text: &str) -> Result<cel::Program, String> {
    if let Err(refused) = bounds::check(text) {
        return Err(display::display(text, vec![Located::nowhere(refused.0)]));
    }
    let compiled = work::with_large_stack(|| {
        cel::Program::compile(text).map_err(|errs| {
            errs.errors
                .iter()
                .map(|e| match e.pos {
                    (line, column) if line >= 1 && column >= 1 => Located {
                        at: Some((line as usize, column as usize - 1)),
                        message: e.msg.clone(),
                    },
                    _ => Located::nowhere(e.msg.clone()),
                })
                .collect::<Vec<_>>()
        })
    });
    match compiled {
        Ok(Ok(program)) => Ok(program),
        Ok(Err(errors)) => Err(display::display(text, errors)),
        Err(panicked) => {
            tracing::warn!(%panicked, "the CEL parser failed");
            Err(display::display(
                text,
                vec![Located::nowhere("the expression could not be parsed")],
            ))
        }
    }
}

/// The Kubernetes CEL library with the authorization library, for
/// admission expressions.
static LIBRARY: LazyLock<cel::Context<'static>> = LazyLock::new(|| {
    let mut context = cel::Context::default();
    KubeCelExt::register_all(&mut context);
    authz::register(&mut context);
    context
});

/// The runtime cost all of one webhook's (or one policy binding's)
/// `matchConditions` may take (`RuntimeCELCostBudgetMatchConditions`).
pub(crate) const MATCH_CONDITIONS_BUDGET: u64 = 2_500_000;

/// The error that ends an admission evaluation over its budget
/// (`ForInput`'s).
pub(crate) const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// A scope for one request's admission expressions: the inputs bound
/// once, the `authorizer` when given, and what is left of the budget.
struct Scope<'a> {
    context: cel::Context<'static>,
    /// The variables bound, which the cost estimate measures.
    roots: Vec<(String, cel::Value)>,
    authorizer: Option<&'a Arc<authz::Session>>,
    remaining: u64,
}

/// The budget ran out: nothing more is evaluated.
struct Spent;

impl<'a> Scope<'a> {
    fn new(
        inputs: &[(&str, &Value)],
        authorizer: Option<&'a Arc<authz::Session>>,
        budget: u64,
    ) -> Result<Self, String> {
        let mut scope = Self {
            context: LIBRARY.new_inner_scope(),
            roots: Vec::with_capacity(inputs.len() + 1),
            authorizer,
            remaining: budget,
        };
        for (name, value) in inputs {
            let value = cel::to_value(value).map_err(|e| e.to_string())?;
            scope.bind(name, value);
        }
        if let Some(session) = authorizer {
            session.take_cost();
            scope
                .context
                .add_variable_from_value("authorizer", session.variable());
        }
        Ok(scope)
    }

    /// Binds (or rebinds) the variable `name`.
    fn bind(&mut self, name: &str, value: cel::Value) {
        self.context.add_variable_from_value(name, value.clone());
        match self.roots.iter_mut().find(|(n, _)| n == name) {
            Some(root) => root.1 = value,
            None => self.roots.push((name.to_owned(), value)),
        }
    }

    /// Runs one expression and charges its cost (its authorization
    /// checks) as cel-go's `ForInput` does: over what is left of the
    /// budget ends the evaluation; over the per-expression limit fails
    /// the expression.
    ///
    /// The cost is the estimate with the sizes the bound values have
    /// ([`budget::admission_cost`]) plus the authorization checks made; an
    /// expression whose estimate alone is over the limit is not run, and
    /// one over the limit is charged the limit, where cel-go stops it.
    fn run(&mut self, program: &cel::Program) -> Result<Result<cel::Value, String>, Spent> {
        let roots: Vec<(&str, &cel::Value)> =
            self.roots.iter().map(|(n, v)| (n.as_str(), v)).collect();
        let estimate = budget::admission_cost(program, &roots);
        let outcome = (estimate <= budget::PER_CALL_LIMIT).then(|| program.execute(&self.context));
        let checks = self.authorizer.map_or(0, |s| s.take_cost());
        let cost = estimate.saturating_add(checks);
        let over_limit = cost > budget::PER_CALL_LIMIT;
        let charged = cost.min(budget::PER_CALL_LIMIT);
        if charged > self.remaining {
            return Err(Spent);
        }
        self.remaining -= charged;
        match outcome {
            Some(outcome) if !over_limit => Ok(outcome.map_err(|e| e.to_string())),
            _ => Ok(Err(authz::COST_LIMIT_EXCEEDED.to_owned())),
        }
    }
}

fn expect_bool(value: Result<cel::Value, String>) -> Result<bool, String> {
    match value? {
        cel::Value::Bool(b) => Ok(b),
        other => Err(format!(
            "expected a boolean result, got {:?}",
            other.type_of()
        )),
    }
}

/// Runs a webhook's or a policy's `matchConditions` (`None`: one that did
/// not compile, skipped) in one scope over `inputs`, with `authorizer`
/// bound when given, within [`MATCH_CONDITIONS_BUDGET`]: each one's
/// boolean result or error, or the error that ended them all.
pub(crate) fn evaluate_conditions(
    programs: &[Option<&cel::Program>],
    inputs: &[(&str, &Value)],
    authorizer: Option<&Arc<authz::Session>>,
) -> Result<Vec<Option<Result<bool, String>>>, String> {
    let outcome = work::with_large_stack(|| {
        let mut scope = Scope::new(inputs, authorizer, MATCH_CONDITIONS_BUDGET)?;
        let mut results = Vec::with_capacity(programs.len());
        for program in programs {
            results.push(match program {
                None => None,
                Some(p) => match scope.run(p) {
                    Ok(value) => Some(expect_bool(value)),
                    Err(Spent) => return Err(OUT_OF_BUDGET.to_owned()),
                },
            });
        }
        Ok(results)
    });
    outcome.unwrap_or_else(|panicked| Err(format!("evaluation failed: {panicked}")))
}

/// What one of a policy's validations gave.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Checked {
    Passed,
    /// False: with the `messageExpression`'s text when it gave a usable
    /// one (a string of one line, at most 5 KiB, trimmed).
    Failed(Option<String>),
    /// The evaluation failed, with why.
    Error(String),
}

/// The longest text a `messageExpression` may give
/// (`MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// Runs a ValidatingAdmissionPolicy's programs for one request (one
/// binding): `inputs` (object, oldObject, request, params) and, when
/// given, `authorizer` bound once, then the `variables` in order, each
/// seeing the earlier ones as `variables.NAME` (one that fails is left
/// out, so a reference to it fails), then each validation, all within
/// `RuntimeCELCostBudget`, whose exhaustion is the error. A false
/// validation's `messageExpression` is evaluated as kube-apiserver
/// evaluates it: without `authorizer`.
pub(crate) fn evaluate_policy(
    inputs: &[(&str, &Value)],
    authorizer: Option<&Arc<authz::Session>>,
    variables: &[(&str, &cel::Program)],
    validations: &[(&cel::Program, Option<&cel::Program>)],
) -> Result<Vec<Checked>, String> {
    let outcome = work::with_large_stack(|| {
        let mut scope = Scope::new(inputs, authorizer, budget::RUNTIME_BUDGET)?;
        let mut computed = std::collections::HashMap::new();
        for (name, program) in variables {
            scope.bind("variables", computed.clone().into());
            match scope.run(program) {
                Ok(Ok(value)) => {
                    computed.insert((*name).to_owned(), value);
                }
                Ok(Err(_)) => {}
                Err(Spent) => return Err(OUT_OF_BUDGET.to_owned()),
            }
        }
        scope.bind("variables", computed.clone().into());
        let mut results = Vec::with_capacity(validations.len());
        let mut messages: Option<cel::Context<'static>> = None;
        for (program, message) in validations {
            let value = match scope.run(program) {
                Ok(value) => value,
                Err(Spent) => return Err(OUT_OF_BUDGET.to_owned()),
            };
            results.push(match value {
                Ok(cel::Value::Bool(true)) => Checked::Passed,
                Ok(cel::Value::Bool(false)) => Checked::Failed(message.and_then(|m| {
                    if messages.is_none() {
                        messages = message_context(inputs, &computed);
                    }
                    match m.execute(messages.as_ref()?) {
                        Ok(cel::Value::String(text)) => {
                            let text = text.trim();
                            (!text.is_empty()
                                && text.len() <= MAX_MESSAGE_BYTES
                                && !text.contains('\n'))
                            .then(|| text.to_owned())
                        }
                        _ => None,
                    }
                })),
                Ok(other) => Checked::Error(format!(
                    "expected a boolean result, got {:?}",
                    other.type_of()
                )),
                Err(e) => Checked::Error(e),
            });
        }
        Ok(results)
    });
    outcome.unwrap_or_else(|panicked| Err(format!("evaluation failed: {panicked}")))
}

/// The scope of `messageExpression`s: the inputs and the variables,
/// without `authorizer`.
fn message_context(
    inputs: &[(&str, &Value)],
    variables: &std::collections::HashMap<String, cel::Value>,
) -> Option<cel::Context<'static>> {
    let mut context = LIBRARY.new_inner_scope();
    for (name, value) in inputs {
        context.add_variable_from_value(*name, cel::to_value(value).ok()?);
    }
    context.add_variable_from_value("variables", variables.clone());
    Some(context)
}

/// The places that rules sit at in a schema, each with how to reach it
/// from the object's root, the declared type of `self` there, and how
/// many times it may occur in one object (`None`: unbounded), as
/// apiextensions-apiserver's `CELSchemaContext` counts it.
struct RuleSite<'a> {
    schema: &'a serde_json::Map<String, Value>,
    steps: Vec<Step>,
    path: Path,
    decl: Option<Arc<Decl>>,
    cardinality: Option<u64>,
}

fn sites<'a>(schema: &'a Value, path: &Path) -> Vec<RuleSite<'a>> {
    let mut out = Vec::new();
    walk_sites(schema, path, Vec::new(), Some(1), true, &mut out);
    out
}

fn walk_sites<'a>(
    v: &'a Value,
    path: &Path,
    steps: Vec<Step>,
    cardinality: Option<u64>,
    root: bool,
    out: &mut Vec<RuleSite<'a>>,
) {
    let Some(m) = v.as_object() else { return };
    let has_rules = m
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if has_rules {
        let embedded = m.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true));
        out.push(RuleSite {
            schema: m,
            steps: steps.clone(),
            path: path.clone(),
            decl: decl::decl(v, root || embedded),
            cardinality,
        });
    }
    // extractMaxElements: how many children each value of this node has
    // (unbounded for lists and maps without maxItems/maxProperties).
    let typ = m.get("type").and_then(Value::as_str).unwrap_or("");
    let bound = |key: &str| m.get(key).and_then(Value::as_i64).map(|n| n.max(0) as u64);
    let factor = match typ {
        "object" if m.contains_key("additionalProperties") => bound("maxProperties"),
        "array" => bound("maxItems"),
        _ => Some(1),
    };
    let child = cardinality.zip(factor).map(|(c, f)| c.saturating_mul(f));
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, sub) in props {
            let mut s = steps.clone();
            s.push(Step::Field(k.clone()));
            walk_sites(sub, &path.child("properties").key(k), s, child, false, out);
        }
    }
    if let Some(items) = m.get("items").filter(|s| s.is_object()) {
        let mut s = steps.clone();
        s.push(Step::Items);
        walk_sites(items, &path.child("items"), s, child, false, out);
    }
    if let Some(ap) = m.get("additionalProperties").filter(|s| s.is_object()) {
        let mut s = steps;
        s.push(Step::Values);
        walk_sites(
            ap,
            &path.child("additionalProperties"),
            s,
            child,
            false,
            out,
        );
    }
}

/// The rules of a site, as the schema lists them: index, rule object.
fn rules_of<'a>(site: &RuleSite<'a>) -> impl Iterator<Item = (usize, &'a Value)> {
    site.schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

fn text_of<'a>(rule: &'a Value, key: &str) -> Option<&'a str> {
    rule.get(key)
        .and_then(Value::as_str)
        .filter(|r| !r.trim().is_empty())
}

fn optional_old_self_of(rule: &Value) -> bool {
    rule.get("optionalOldSelf") == Some(&Value::Bool(true))
}

/// How many times a rule may run for one object: the site's bound, or
/// as many values of its type as fit in a request (`maxCardinality`).
fn times(site: &RuleSite<'_>) -> u64 {
    site.cardinality.unwrap_or_else(|| {
        let min = site.decl.as_ref().map_or(1, |d| d.min_size);
        MAX_REQUEST_BYTES / (min + 1)
    })
}

/// Compiled rules of a schema, `None` when it has none. Rules a CRD write
/// would have refused (none get this far) are left out.
pub(crate) fn compile(schema: &Value) -> Option<Arc<Rules>> {
    let has_rules = schema_has(schema, &|m| {
        m.get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    });
    if !has_rules {
        return None;
    }
    let mut budget_sites = Vec::new();
    let mut refused = Vec::new();
    for site in sites(schema, &Path::root()) {
        let mut rules = Vec::new();
        for (i, rule) in rules_of(&site) {
            let Some(text) = text_of(rule, "rule") else {
                continue;
            };
            let optional_old_self = optional_old_self_of(rule);
            let rewritten = optional_old_self.then(|| rewrite_old_self(text));
            let fits = rewritten
                .as_deref()
                .is_none_or(|r| bounds::check(r).is_ok());
            match parse(text, site.decl.as_ref(), optional_old_self) {
                Ok(p) if fits => {
                    let transition = p.program.references().has_variable("oldSelf");
                    let name = text_of(rule, "message").unwrap_or(text).trim().to_owned();
                    rules.push(BudgetedRule {
                        static_cost: p.analysis.cost,
                        paths: p.analysis.paths.iter().cloned().collect(),
                        program: p.program,
                        decl: site.decl.clone(),
                        optional_old_self,
                        transition,
                        name,
                    });
                }
                _ => refused.push((site.steps.clone(), i)),
            }
        }
        let typ = site
            .schema
            .get("type")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .unwrap_or("object")
            .to_owned();
        budget_sites.push(Site {
            steps: site.steps,
            typ,
            rules,
        });
    }
    let mut schema = schema.clone();
    for (steps, i) in refused.iter().rev() {
        if let Some(rules) = schema_at(&mut schema, steps)
            .and_then(|s| s.get_mut("x-kubernetes-validations"))
            .and_then(Value::as_array_mut)
        {
            if *i < rules.len() {
                rules.remove(*i);
            }
        }
    }
    optional_old_self(&mut schema);
    let compiled = match work::with_large_stack(|| compile_schema(&schema)) {
        Ok(c) => c,
        Err(panicked) => {
            tracing::warn!(%panicked, "compiling CEL rules failed");
            return None;
        }
    };
    Some(Arc::new(Rules {
        compiled,
        sites: budget_sites,
    }))
}

/// The schema object at a site's steps.
fn schema_at<'a>(schema: &'a mut Value, steps: &[Step]) -> Option<&'a mut Value> {
    let mut cur = schema;
    for step in steps {
        cur = match step {
            Step::Field(k) => cur.get_mut("properties")?.get_mut(k)?,
            Step::Items => cur.get_mut("items")?,
            Step::Values => cur.get_mut("additionalProperties")?,
            Step::Keys => return None,
        };
    }
    Some(cur)
}

/// The CEL spelling of an `optionalOldSelf` rule's `oldSelf`.
const OPTIONAL_OLD_SELF: &str = "(oldSelf == null ? optional.none() : optional.of(oldSelf))";

fn rewrite_old_self(text: &str) -> String {
    replace_identifier(text, "oldSelf", OPTIONAL_OLD_SELF)
}

/// `getCostErrorMessage` (apiextensions validation.go).
fn cost_message(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// Checks every rule of a CRD version's schema at `path` (its
/// `openAPIV3Schema`), as apiextensions-apiserver does when the CRD is
/// written: each expression must compile, a rule evaluate to a bool and a
/// `messageExpression` to a string, each stay under
/// [`STATIC_COST_LIMIT`] and all together under [`STATIC_CRD_COST_LIMIT`].
pub(crate) fn compile_errors(schema: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0u64;
    // The costliest expressions (at least 1% of the CRD limit), most
    // expensive first, at most four (`TotalCost.MostExpensive`).
    let mut expensive: Vec<(u64, String)> = Vec::new();
    let mut observe = |field: &Path, cost: u64| {
        total = total.saturating_add(cost);
        if cost >= STATIC_CRD_COST_LIMIT / 100 {
            expensive.push((cost, field.as_str().to_owned()));
            expensive.sort_by_key(|e| std::cmp::Reverse(e.0));
            expensive.truncate(4);
        }
    };
    for site in sites(schema, path) {
        let times = times(&site);
        for (i, rule) in rules_of(&site) {
            let rp = site.path.child("x-kubernetes-validations").index(i);
            let optional_old_self = optional_old_self_of(rule);
            if let Some(text) = text_of(rule, "rule") {
                let field = rp.child("rule");
                let checked = parse(text, site.decl.as_ref(), optional_old_self).and_then(|p| {
                    if optional_old_self {
                        if let Err(r) = bounds::check(&rewrite_old_self(text)) {
                            return Err(display::display(text, vec![Located::nowhere(r.0)]));
                        }
                    }
                    Ok(p)
                });
                match checked {
                    Ok(p) => {
                        let cost = p.analysis.cost.saturating_mul(times);
                        if cost > STATIC_COST_LIMIT {
                            errs.push(FieldError::forbidden(
                                field.as_str(),
                                &cost_message("estimated rule cost", cost, STATIC_COST_LIMIT),
                            ));
                        }
                        observe(&field, cost);
                        if p.analysis.result.as_ref().is_some_and(|t| *t != Ty::Bool) {
                            errs.push(FieldError::invalid(
                                field.as_str(),
                                rule,
                                "cel expression must evaluate to a bool",
                            ));
                        }
                    }
                    Err(detail) => errs.push(FieldError::invalid(
                        field.as_str(),
                        rule,
                        &format!("compilation failed: {detail}"),
                    )),
                }
            }
            if let Some(text) = text_of(rule, "messageExpression") {
                let field = rp.child("messageExpression");
                match parse(text, site.decl.as_ref(), optional_old_self) {
                    Ok(p) => {
                        if p.analysis.result.as_ref().is_some_and(|t| *t != Ty::String) {
                            errs.push(FieldError::invalid(
                                field.as_str(),
                                rule,
                                "messageExpression must evaluate to a string",
                            ));
                        } else {
                            let cost = p.analysis.cost.saturating_mul(times);
                            if cost > STATIC_COST_LIMIT {
                                errs.push(FieldError::forbidden(
                                    field.as_str(),
                                    &cost_message(
                                        "estimated messageExpression cost",
                                        cost,
                                        STATIC_COST_LIMIT,
                                    ),
                                ));
                            }
                            observe(&field, cost);
                        }
                    }
                    Err(detail) => errs.push(FieldError::invalid(
                        field.as_str(),
                        rule,
                        &format!("messageExpression compilation failed: {detail}"),
                    )),
                }
            }
        }
    }
    if total > STATIC_CRD_COST_LIMIT {
        for (_, field) in &expensive {
            errs.push(FieldError::forbidden(
                field,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        errs.push(FieldError::forbidden(
            path.as_str(),
            &cost_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total,
                STATIC_CRD_COST_LIMIT,
            ),
        ));
    }
    errs
}

/// With `optionalOldSelf: true`, kube-apiserver binds `oldSelf` as a CEL
/// optional (`optional.none()` on create, `optional.of(old)` on update), so
/// rules are written `oldSelf.orValue(x)` / `oldSelf.hasValue()`; kube-cel
/// binds the bare old value, or `null` on create. Such rules are evaluated
/// with `oldSelf` rewritten into the optional, keeping the original text in
/// the message a failure reports (`failed rule: <rule>`).
fn optional_old_self(v: &mut Value) {
    let Some(m) = v.as_object_mut() else { return };
    if let Some(rules) = m
        .get_mut("x-kubernetes-validations")
        .and_then(Value::as_array_mut)
    {
        for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
            if rule.get("optionalOldSelf") != Some(&Value::Bool(true)) {
                continue;
            }
            let Some(text) = rule.get("rule").and_then(Value::as_str).map(str::to_owned) else {
                continue;
            };
            let rewritten = rewrite_old_self(&text);
            if rewritten == text {
                continue;
            }
            let has_message = ["message", "messageExpression"].iter().any(|k| {
                rule.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.trim().is_empty())
            });
            if !has_message {
                rule.insert(
                    "message".into(),
                    Value::String(format!("failed rule: {text}")),
                );
            }
            rule.insert("rule".into(), Value::String(rewritten));
        }
    }
    for (k, sub) in m.iter_mut() {
        match k.as_str() {
            "properties" => {
                if let Some(props) = sub.as_object_mut() {
                    props.values_mut().for_each(optional_old_self);
                }
            }
            "items" | "additionalProperties" => optional_old_self(sub),
            _ => {}
        }
    }
}
/// Replaces the identifier `ident` in a CEL expression, outside string
/// literals and not as a field selection (`x.oldSelf`).
fn replace_identifier(expr: &str, ident: &str, with: &str) -> String {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let chars: Vec<char> = expr.chars().collect();
    let word: Vec<char> = ident.chars().collect();
    let mut out = String::with_capacity(expr.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' {
            // A string literal, triple-quoted or not; escapes skip a char.
            let triple = chars
                .get(i..i + 3)
                .is_some_and(|t| t.iter().all(|&x| x == c));
            let quote_len = if triple { 3 } else { 1 };
            let start = i;
            i += quote_len;
            while i < chars.len() {
                if chars[i] == '\\' {
                    i += 2;
                    continue;
                }
                if chars[i] == c
                    && (!triple
                        || chars
                            .get(i..i + 3)
                            .is_some_and(|t| t.iter().all(|&x| x == c)))
                {
                    i += quote_len;
                    break;
                }
                i += 1;
            }
            out.extend(&chars[start..i.min(chars.len())]);
            continue;
        }
        let before_ok = i == 0 || (!is_ident(chars[i - 1]) && chars[i - 1] != '.');
        let matches = chars.get(i..i + word.len()) == Some(&word[..]);
        let after_ok = chars.get(i + word.len()).is_none_or(|&n| !is_ident(n));
        if before_ok && matches && after_ok {
            out.push_str(with);
            i += word.len();
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether OpenAPI errors keep CEL rules from running (apiextensions
/// `hasBlockingErr`).
pub(crate) fn blocking(errs: &[FieldError]) -> bool {
    errs.iter().any(|e| {
        matches!(
            e.cause,
            CauseType::NotSupported
                | CauseType::Required
                | CauseType::TooLong
                | CauseType::TooMany
                | CauseType::TypeInvalid
        )
    })
}

/// The error kube-apiserver adds when it skipped the rules.
pub(crate) fn not_checked() -> FieldError {
    FieldError::invalid(
        "<nil>",
        &Value::Null,
        "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
    )
}

/// The type of the schema node at a kube-cel field path (`spec.items[0]`).
fn type_at(root: &Node, path: &str) -> String {
    let mut cur = root;
    if !path.is_empty() {
        for part in path.split('.') {
            let (name, indices) = match part.find('[') {
                Some(i) => (&part[..i], part[i..].matches('[').count()),
                None => (part, 0),
            };
            if !name.is_empty() {
                match cur.properties.get(name).or_else(|| cur.additional_schema()) {
                    Some(n) => cur = n,
                    None => return "object".into(),
                }
            }
            for _ in 0..indices {
                match cur.items.as_deref() {
                    Some(n) => cur = n,
                    None => return "object".into(),
                }
            }
        }
    }
    if cur.int_or_string {
        return "string".into();
    }
    if cur.typ.is_empty() {
        "object".into()
    } else {
        cur.typ.clone()
    }
}

fn to_field_error(root: &Node, e: &ValidationError) -> FieldError {
    let field = if e.field_path.is_empty() {
        "<nil>".to_string()
    } else {
        e.field_path.trim_start_matches('.').to_string()
    };
    let typ = Value::String(type_at(root, &field));
    match e.kind {
        ErrorKind::ValidationFailure => match e.reason.as_deref() {
            Some("FieldValueForbidden") => FieldError::forbidden(&field, &e.message),
            Some("FieldValueRequired") => FieldError::required(&field, &e.message),
            Some("FieldValueDuplicate") => FieldError::duplicate(&field, &typ),
            _ => FieldError::invalid(&field, &typ, &e.message),
        },
        _ => FieldError::invalid(&field, &typ, &e.message),
    }
}

/// Evaluates the rules against `obj` (and `old` for transition rules),
/// unless that would take the object over the runtime cost budget.
pub(crate) fn evaluate(
    rules: &Rules,
    root: &Node,
    obj: &Value,
    old: Option<&Value>,
) -> Vec<FieldError> {
    let outcome = work::with_large_stack(|| {
        if let Some(e) = budget::over_budget(&rules.sites, obj, old) {
            return Err(vec![e]);
        }
        VALIDATOR
            .validate_compiled(&rules.compiled, obj, old)
            .map_err(|errs| errs.iter().map(|e| to_field_error(root, e)).collect())
    });
    match outcome {
        Ok(Ok(())) => Vec::new(),
        Ok(Err(errs)) => errs,
        Err(panicked) => {
            tracing::warn!(%panicked, "evaluating CEL rules failed");
            vec![FieldError::internal(
                "<nil>",
                "validation rules could not be evaluated",
            )]
        }
    }
}
