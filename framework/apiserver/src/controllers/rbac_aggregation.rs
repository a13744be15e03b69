//! The ClusterRole aggregation controller kube-controller-manager runs
//! (`clusterroleaggregation`): a ClusterRole with an `aggregationRule`
//! holds the union of the rules of the ClusterRoles its selectors match,
//! redone after every ClusterRole write.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::auth::rbac::{Rule, GROUP};
use crate::machinery::selectors::LabelSelector;
use crate::objects::{self, Precondition, WriteOpts};
use crate::registry::state::Shared;
use crate::storage::ResKey;

const AGGREGATOR: &str = "clusterrole-aggregation-controller";

/// A `LabelSelector` object as the selector it means (`matchLabels` and
/// `matchExpressions`); `None` if it cannot match anything valid.
fn selector(sel: &Value) -> Option<LabelSelector> {
    let mut terms = Vec::new();
    if let Some(labels) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            terms.push(format!("{k}={}", v.as_str()?));
        }
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str)?;
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        terms.push(match e.get("operator").and_then(Value::as_str)? {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            "DoesNotExist" => format!("!{key}"),
            _ => return None,
        });
    }
    LabelSelector::parse(&terms.join(",")).ok()
}

/// One pass of the aggregation controller: every ClusterRole with an
/// `aggregationRule` gets the union of the rules of the ClusterRoles its
/// selectors match (name order, itself excluded), written only when it
/// changed.
pub(crate) fn aggregate(shared: &Shared) {
    let res = ResKey::new(GROUP, "clusterroles");
    let roles: Vec<_> = {
        let store = shared.storage.lock();
        store
            .keys(&res)
            .iter()
            .filter_map(|k| store.get(&res, k))
            .collect()
    };
    let Some(def) = shared.registry().get(GROUP, "v1", "clusterroles") else {
        return;
    };
    let opts = WriteOpts::internal(&def, AGGREGATOR);
    for role in &roles {
        let tree = role.value();
        let Some(selectors) = tree
            .pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
        else {
            continue;
        };
        let selectors: Vec<LabelSelector> = selectors.iter().filter_map(selector).collect();
        let mut seen = BTreeSet::new();
        let mut rules: Vec<Value> = Vec::new();
        for other in &roles {
            if other.name() == role.name() || !selectors.iter().any(|s| s.matches(&other.value())) {
                continue;
            }
            for r in Rule::all_of(&other.value()) {
                let v = r.to_json();
                if seen.insert(v.to_string()) {
                    rules.push(v);
                }
            }
        }
        let current: Vec<Value> = Rule::all_of(&role.value())
            .iter()
            .map(Rule::to_json)
            .collect();
        if current == rules {
            continue;
        }
        let key = (String::new(), role.name().to_owned());
        let result = objects::update(shared, &def, &key, &opts, |cur| {
            let mut next = cur.clone();
            next["rules"] = Value::Array(rules.clone());
            Ok((next, Precondition::None))
        });
        if let Err(e) = result {
            tracing::debug!(role = role.name(), error = %e.message, "aggregating a ClusterRole failed");
        }
    }
}
