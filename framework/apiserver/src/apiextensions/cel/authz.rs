//! The Kubernetes CEL authorization library (k8s.io/apiserver
//! `cel/library/authz.go`) for admission expressions: the `authorizer`
//! variable and `authorizer.requestResource`, asking the server's
//! authorizer about the requesting user:
//!
//! ```text
//! authorizer.group('apps').resource('deployments').subresource('scale')
//!     .namespace('ns').name('n').check('update').allowed()
//! authorizer.path('/healthz').check('get').reason()
//! authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').errored()
//! authorizer.requestResource.check('delete').error()
//! ```
//!
//! kube declares `Authorizer`, `GroupCheck`, `ResourceCheck`, `PathCheck`
//! and `Decision` as opaque types with member functions. The `cel` crate
//! calls a member function by name with its receiver, so each function here
//! takes the receiver it belongs to and refuses any other (`no such
//! overload`). One difference is unavoidable: the crate selects a field
//! only from a map (`x.f` on anything else is `false`), and resolves no
//! dotted variable names, so `authorizer` is bound as a map whose one entry
//! is `requestResource`; the functions that take an `Authorizer` accept that
//! map and find the authorizer through its request-resource check.
//!
//! Checks are what the admission cost budget counts: each costs
//! [`CHECK_COST`], kube's fixed cost (`library.CostEstimator`), so one
//! expression may make two. A check past the per-expression limit is not
//! made; the expression fails with cel-go's cancellation error
//! ([`COST_LIMIT_EXCEEDED`]).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kube_core::cel::cel::{
    self, extractors::This, objects::Key, objects::Opaque, ExecutionError, FunctionContext, Value,
};

use super::budget::PER_CALL_LIMIT;
use crate::machinery::names;

/// The cost of one authorization check: "set to allow for only two
/// authorization checks per expression".
pub(crate) const CHECK_COST: u64 = 350_000;

/// cel-go's error when an evaluation passes its cost limit.
pub(crate) const COST_LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// One question to an authorizer (`authorizer.AttributesRecord` as the
/// library fills it: `APIVersion` `*`, the user added by the principal).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Check {
    pub verb: String,
    pub resource_request: bool,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub path: String,
    /// A `fieldSelector`/`labelSelector` given to the check (RBAC ignores
    /// them; a webhook authorizer would see them).
    pub field_selector: String,
    pub label_selector: String,
}

/// An authorizer's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub allowed: bool,
    pub reason: String,
    /// The authorizer's error, if it had one.
    pub error: Option<String>,
}

/// Someone the server's authorizer can be asked about: the requesting user,
/// or a service account named by `serviceAccount()`.
pub(crate) trait Principal: Send + Sync {
    /// The authorizer's decision for this principal.
    fn authorize(&self, check: &Check) -> Verdict;
    /// The service account `namespace`/`name`, asked of the same
    /// authorizer.
    fn service_account(&self, namespace: &str, name: &str) -> Arc<dyn Principal>;
}

/// What one request's expressions share: the requesting principal, the
/// request's own resource, and the checks the current expression made.
pub(crate) struct Session {
    principal: Arc<dyn Principal>,
    request: Check,
    checks: AtomicU64,
}

impl Session {
    /// The session of a request by `principal` for `request` (its group,
    /// resource, subresource, namespace and name).
    pub fn new(principal: Arc<dyn Principal>, request: Check) -> Arc<Self> {
        Arc::new(Self {
            principal,
            request,
            checks: AtomicU64::new(0),
        })
    }

    /// The value `authorizer` is bound to.
    pub fn variable(self: &Arc<Self>) -> Value {
        let authorizer = Authorizer {
            session: self.clone(),
            principal: self.principal.clone(),
        };
        let request = ResourceCheck {
            authorizer,
            check: self.request.clone(),
        };
        let mut map = HashMap::new();
        map.insert(
            "requestResource".to_owned(),
            Value::Opaque(Arc::new(request)),
        );
        Value::from(map)
    }

    /// The cost of the checks made since the last call, which starts
    /// counting the next expression's.
    pub fn take_cost(&self) -> u64 {
        self.checks
            .swap(0, Ordering::Relaxed)
            .saturating_mul(CHECK_COST)
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

/// `kubernetes.authorization.Authorizer`.
#[derive(Clone)]
struct Authorizer {
    session: Arc<Session>,
    principal: Arc<dyn Principal>,
}

impl Authorizer {
    /// Asks the authorizer, unless this check would take the expression
    /// past its cost limit.
    fn check(&self, check: &Check) -> Result<Verdict> {
        let made = self.session.checks.fetch_add(1, Ordering::Relaxed) + 1;
        if made.saturating_mul(CHECK_COST) > PER_CALL_LIMIT {
            return Err(ExecutionError::function_error("check", COST_LIMIT_EXCEEDED));
        }
        Ok(self.principal.authorize(check))
    }
}

impl PartialEq for Authorizer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.session, &other.session) && Arc::ptr_eq(&self.principal, &other.principal)
    }
}
impl Eq for Authorizer {}

impl fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Authorizer")
    }
}

/// `kubernetes.authorization.GroupCheck`, `ResourceCheck` and `PathCheck`
/// share this shape: an authorizer and the check built so far.
#[derive(Clone, Debug, PartialEq, Eq)]
struct GroupCheck {
    authorizer: Authorizer,
    check: Check,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct ResourceCheck {
    authorizer: Authorizer,
    check: Check,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct PathCheck {
    authorizer: Authorizer,
    check: Check,
}

/// `kubernetes.authorization.Decision`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Decision(Verdict);

impl Opaque for Authorizer {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Authorizer"
    }
}
impl Opaque for GroupCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.GroupCheck"
    }
}
impl Opaque for ResourceCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.ResourceCheck"
    }
}
impl Opaque for PathCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.PathCheck"
    }
}
impl Opaque for Decision {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Decision"
    }
}

type Result<T> = std::result::Result<T, ExecutionError>;

/// The receiver as a `T`, or `no such overload`.
fn receiver<T: Opaque + Clone>(this: &Value) -> Result<T> {
    match this {
        Value::Opaque(o) => o
            .downcast_ref::<T>()
            .cloned()
            .ok_or(ExecutionError::NoSuchOverload),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

/// The receiver as an `Authorizer`: a service account's, or the bound
/// `authorizer` map.
fn authorizer_of(this: &Value) -> Result<Authorizer> {
    if let Value::Map(map) = this {
        let key = Key::String(Arc::new("requestResource".to_owned()));
        return match map.map.get(&key) {
            Some(request) => receiver::<ResourceCheck>(request).map(|r| r.authorizer),
            None => Err(ExecutionError::NoSuchOverload),
        };
    }
    receiver(this)
}

fn opaque(v: impl Opaque) -> Value {
    Value::Opaque(Arc::new(v))
}

fn path(ftx: &FunctionContext, This(this): This<Value>, path: Arc<String>) -> Result<Value> {
    let authorizer = authorizer_of(&this)?;
    if path.trim().is_empty() {
        return Err(ftx.error("path must not be empty"));
    }
    Ok(opaque(PathCheck {
        authorizer,
        check: Check {
            path: path.to_string(),
            ..Check::default()
        },
    }))
}

fn group(This(this): This<Value>, group: Arc<String>) -> Result<Value> {
    Ok(opaque(GroupCheck {
        authorizer: authorizer_of(&this)?,
        check: Check {
            resource_request: true,
            group: group.to_string(),
            ..Check::default()
        },
    }))
}

fn service_account(
    ftx: &FunctionContext,
    This(this): This<Value>,
    namespace: Arc<String>,
    name: Arc<String>,
) -> Result<Value> {
    let authorizer = authorizer_of(&this)?;
    if !names::is_dns1123_subdomain(&name).is_empty() {
        return Err(ftx.error("Invalid service account name"));
    }
    if !names::is_dns1123_label(&namespace).is_empty() {
        return Err(ftx.error("Invalid service account namespace"));
    }
    Ok(opaque(Authorizer {
        principal: authorizer.principal.service_account(&namespace, &name),
        session: authorizer.session,
    }))
}

fn resource(
    ftx: &FunctionContext,
    This(this): This<Value>,
    resource: Arc<String>,
) -> Result<Value> {
    let group: GroupCheck = receiver(&this)?;
    if resource.trim().is_empty() {
        return Err(ftx.error("resource must not be empty"));
    }
    Ok(opaque(ResourceCheck {
        authorizer: group.authorizer,
        check: Check {
            resource: resource.to_string(),
            ..group.check
        },
    }))
}

/// A `ResourceCheck` builder: the receiver with one field set.
fn with(this: &Value, set: impl FnOnce(&mut Check)) -> Result<Value> {
    let mut check: ResourceCheck = receiver(this)?;
    set(&mut check.check);
    Ok(opaque(check))
}

fn subresource(This(this): This<Value>, v: Arc<String>) -> Result<Value> {
    with(&this, |c| c.subresource = v.to_string())
}

fn namespace(This(this): This<Value>, v: Arc<String>) -> Result<Value> {
    with(&this, |c| c.namespace = v.to_string())
}

fn name(This(this): This<Value>, v: Arc<String>) -> Result<Value> {
    with(&this, |c| c.name = v.to_string())
}

fn field_selector(This(this): This<Value>, v: Arc<String>) -> Result<Value> {
    with(&this, |c| c.field_selector = v.to_string())
}

fn label_selector(This(this): This<Value>, v: Arc<String>) -> Result<Value> {
    with(&this, |c| c.label_selector = v.to_string())
}

fn check(This(this): This<Value>, verb: Arc<String>) -> Result<Value> {
    let (authorizer, mut check) = match receiver::<ResourceCheck>(&this) {
        Ok(r) => (r.authorizer, r.check),
        Err(_) => {
            let p: PathCheck = receiver(&this)?;
            (p.authorizer, p.check)
        }
    };
    check.verb = verb.to_string();
    Ok(opaque(Decision(authorizer.check(&check)?)))
}

fn allowed(This(this): This<Value>) -> Result<bool> {
    receiver::<Decision>(&this).map(|d| d.0.allowed)
}

fn reason(This(this): This<Value>) -> Result<Arc<String>> {
    receiver::<Decision>(&this).map(|d| Arc::new(d.0.reason))
}

fn errored(This(this): This<Value>) -> Result<bool> {
    receiver::<Decision>(&this).map(|d| d.0.error.is_some())
}

fn error(This(this): This<Value>) -> Result<Arc<String>> {
    receiver::<Decision>(&this).map(|d| Arc::new(d.0.error.unwrap_or_default()))
}

/// Adds the library's functions to `context`.
pub(super) fn register(context: &mut cel::Context<'_>) {
    context.add_function("path", path);
    context.add_function("group", group);
    context.add_function("serviceAccount", service_account);
    context.add_function("resource", resource);
    context.add_function("subresource", subresource);
    context.add_function("namespace", namespace);
    context.add_function("name", name);
    context.add_function("fieldSelector", field_selector);
    context.add_function("labelSelector", label_selector);
    context.add_function("check", check);
    context.add_function("allowed", allowed);
    context.add_function("reason", reason);
    context.add_function("errored", errored);
    context.add_function("error", error);
}
