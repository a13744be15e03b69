//! The webhooks of the stored Mutating/ValidatingWebhookConfigurations
//! (`admissionregistration.k8s.io/v1`) and whether a request matches one
//! (kube-apiserver's `predicates/rules`, `namespace` and `object`
//! matchers): rules by operation, group, version, resource with
//! subresource wildcards and scope, exactly or (`matchPolicy:
//! Equivalent`) at another served version of the resource;
//! namespaceSelector; objectSelector.
//! Configurations are read in name order, webhooks in list order.

use std::time::Duration;

use serde_json::Value;

use crate::admission::attributes::Attributes;
use crate::machinery::selectors::selector_matches;
use crate::registry::state::Shared;
use crate::registry::ResKey;
use crate::storage::Filter;

/// The two configuration resources.
pub(crate) fn mutating_key() -> ResKey {
    ResKey::new(
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    )
}

/// See [`mutating_key`].
pub(crate) fn validating_key() -> ResKey {
    ResKey::new(
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    )
}

/// One webhook of a configuration.
#[derive(Debug, Clone)]
pub(crate) struct Hook {
    /// The webhook's `name`.
    pub name: String,
    /// The whole webhook object, for its rules, selectors and client config.
    spec: Value,
    /// `failurePolicy: Ignore` (the v1 default is Fail).
    pub ignore_failures: bool,
    pub timeout: Duration,
    /// `sideEffects` None or NoneOnDryRun: safe to call on a dry run.
    pub dry_run_safe: bool,
    /// `reinvocationPolicy: IfNeeded` (mutating only).
    pub reinvoke_if_needed: bool,
}

impl Hook {
    fn from_spec(spec: &Value) -> Self {
        let str_of = |f: &str| spec.get(f).and_then(Value::as_str).unwrap_or("");
        let seconds = spec
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(10)
            .clamp(1, 30);
        Self {
            name: str_of("name").to_owned(),
            ignore_failures: str_of("failurePolicy") == "Ignore",
            timeout: Duration::from_secs(seconds),
            dry_run_safe: matches!(str_of("sideEffects"), "None" | "NoneOnDryRun"),
            reinvoke_if_needed: str_of("reinvocationPolicy") == "IfNeeded",
            spec: spec.clone(),
        }
    }

    /// The webhook's `matchConditions`.
    pub fn match_conditions(&self) -> &[Value] {
        self.spec
            .get("matchConditions")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// The webhook's `clientConfig`.
    pub fn client_config(&self) -> &Value {
        self.spec.get("clientConfig").unwrap_or(&Value::Null)
    }

    /// Whether the webhook wants this request (a rule matches, and both
    /// selectors do), and the version it is to see the object at: the
    /// request's when a rule names it, else, under `matchPolicy:
    /// Equivalent` (the v1 default), the first other served version of the
    /// resource a rule names (kube-apiserver's equivalent resources).
    pub fn matches(
        &self,
        shared: &Shared,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Option<String> {
        let version = self.matched_version(attrs)?;
        (self.namespace_matches(shared, attrs, object, old) && self.object_matches(object, old))
            .then_some(version)
    }

    fn matched_version(&self, attrs: &Attributes<'_>) -> Option<String> {
        let rules = self.spec.get("rules").and_then(Value::as_array)?;
        if rules.iter().any(|r| rule_matches(r, attrs, attrs.version)) {
            return Some(attrs.version.to_owned());
        }
        if self.spec.get("matchPolicy").and_then(Value::as_str) == Some("Exact") {
            return None;
        }
        // Rule by rule, each against every other version in turn.
        rules.iter().find_map(|rule| {
            attrs
                .def
                .versions
                .iter()
                .filter(|v| *v != attrs.version)
                .find(|v| rule_matches(rule, attrs, v))
                .cloned()
        })
    }

    /// `namespaceSelector`: a namespaced object is judged by its
    /// namespace's labels, a Namespace by its own, any other cluster-scoped
    /// object always matches.
    fn namespace_matches(
        &self,
        shared: &Shared,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> bool {
        let Some(selector) = self.spec.get("namespaceSelector").filter(|s| !is_empty(s)) else {
            return true;
        };
        let def = attrs.def;
        if def.is(crate::registry::BuiltinKind::Namespace) {
            let labels = object.or(old).and_then(|o| o.pointer("/metadata/labels"));
            return selector_matches(selector, labels);
        }
        if !def.namespaced {
            return true;
        }
        let namespace = shared.storage.lock().get(
            &ResKey::new("", "namespaces"),
            &(String::new(), attrs.namespace.to_owned()),
        );
        let tree = namespace.as_ref().map(|ns| ns.value());
        let labels = tree
            .as_deref()
            .and_then(|ns| ns.pointer("/metadata/labels"));
        selector_matches(selector, labels)
    }

    /// `objectSelector`: either the new or the old object may match.
    fn object_matches(&self, object: Option<&Value>, old: Option<&Value>) -> bool {
        let Some(selector) = self.spec.get("objectSelector").filter(|s| !is_empty(s)) else {
            return true;
        };
        [object, old]
            .into_iter()
            .flatten()
            .any(|o| selector_matches(selector, o.pointer("/metadata/labels")))
    }
}

/// Whether a policy's `matchConstraints` or a binding's `matchResources`
/// take in this request, as kube-apiserver's generic policy matcher
/// decides: both selectors, then no `excludeResourceRules` entry, then a
/// `resourceRules` entry (none: every resource), each rule's
/// `resourceNames` (when listed) naming the object; `matchPolicy` as for
/// webhooks. When they do, the version they took it in at: the request's
/// unless only an `Equivalent` match at another version did.
pub(crate) fn resources_match(
    criteria: &Value,
    shared: &Shared,
    attrs: &Attributes<'_>,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Option<String> {
    let named = |rules: &str| -> Value {
        let rules = criteria.get(rules).and_then(Value::as_array);
        rules
            .into_iter()
            .flatten()
            .filter(|rule| {
                rule.get("resourceNames")
                    .and_then(Value::as_array)
                    .is_none_or(|names| {
                        names.is_empty() || names.iter().any(|n| n.as_str() == Some(attrs.name))
                    })
            })
            .cloned()
            .collect()
    };
    let with_rules = |rules: Value| {
        let mut spec = serde_json::json!({"rules": rules});
        for field in ["matchPolicy", "namespaceSelector", "objectSelector"] {
            if let Some(v) = criteria.get(field) {
                spec[field] = v.clone();
            }
        }
        Hook::from_spec(&spec)
    };
    let selectors = with_rules(Value::Array(Vec::new()));
    if !(selectors.namespace_matches(shared, attrs, object, old)
        && selectors.object_matches(object, old))
    {
        return None;
    }
    if with_rules(named("excludeResourceRules"))
        .matched_version(attrs)
        .is_some()
    {
        return None;
    }
    let every_resource = criteria
        .get("resourceRules")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if every_resource {
        return Some(attrs.version.to_owned());
    }
    with_rules(named("resourceRules")).matched_version(attrs)
}

/// An absent or `{}` selector selects everything.
fn is_empty(selector: &Value) -> bool {
    selector.is_null() || selector.as_object().is_some_and(|m| m.is_empty())
}

fn listed(values: Option<&Value>, wanted: &str) -> bool {
    values.and_then(Value::as_array).is_some_and(|vs| {
        vs.iter()
            .filter_map(Value::as_str)
            .any(|v| v == "*" || v == wanted)
    })
}

/// One `RuleWithOperations` against the request, made at `version`.
fn rule_matches(rule: &Value, attrs: &Attributes<'_>, version: &str) -> bool {
    let def = attrs.def;
    let scope_ok = match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" => !def.namespaced,
        "Namespaced" => def.namespaced,
        _ => true,
    };
    let sub = attrs.subresource.unwrap_or("");
    let resource_ok = rule
        .get("resources")
        .and_then(Value::as_array)
        .is_some_and(|rs| {
            rs.iter().filter_map(Value::as_str).any(|r| {
                let (res, want_sub) = r.split_once('/').unwrap_or((r, ""));
                (res == "*" || res == def.plural) && (want_sub == "*" || want_sub == sub)
            })
        });
    scope_ok
        && resource_ok
        && listed(rule.get("operations"), attrs.operation.as_str())
        && listed(rule.get("apiGroups"), &def.group)
        && listed(rule.get("apiVersions"), version)
}

/// The webhooks of every configuration of one kind, configurations in
/// name order, each one's webhooks in list order.
pub(crate) fn hooks(shared: &Shared, res: &ResKey) -> Vec<Hook> {
    let page = shared
        .storage
        .lock()
        .list(res, &Filter::default(), None, None, None);
    let Ok(page) = page else {
        return Vec::new();
    };
    // The store lists in key order: cluster-scoped keys are the names.
    page.items
        .iter()
        .flat_map(|config| {
            config
                .value()
                .get("webhooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(Hook::from_spec)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether any webhook configuration exists (the cheap test before a
/// write decides where to run).
pub(crate) fn any(shared: &Shared) -> bool {
    let store = shared.storage.lock();
    store.count(&mutating_key()) + store.count(&validating_key()) > 0
}
