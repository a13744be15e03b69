//! Merging rules the way controller-gen merges `+kubebuilder:rbac` markers
//! (controller-tools `pkg/rbac/parser.go`, `GenerateRoles` and
//! `NormalizeRules`), so a kubeforge role reads like a kubebuilder one:
//!
//! 1. every rule is split into one rule per resource, `core` becomes `""`,
//!    and every list is sorted and de-duplicated;
//! 2. rules on the same groups, resources, names and URLs combine their
//!    verbs;
//! 3. then rules that differ only in resources combine them, then those
//!    that differ only in groups, then only in URLs;
//! 4. rules are sorted by `groups + resources + names + URLs` (each list
//!    joined with `&`), and a verb list holding `*` becomes `*` alone.
//!
//! Where two merged rules end up with the same groups, resources, names
//! and URLs but different verbs, controller-gen keeps one and drops the
//! other's verbs (a map overwrite); here their verbs are combined, so no
//! grant is lost.

use std::collections::BTreeMap;

use super::Rule;

/// The groups, resources, names and URLs of a rule.
type Key = [Vec<String>; 4];

fn key(rule: &Rule) -> Key {
    [
        rule.groups.clone(),
        rule.resources.clone(),
        rule.resource_names.clone(),
        rule.urls.clone(),
    ]
}

/// controller-gen's sort key: each list joined with `&`, the four joined
/// with ` + `.
fn sort_key(rule: &Rule) -> String {
    key(rule)
        .iter()
        .map(|list| list.join("&"))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Rules keyed by what they apply to; a rule on the same things as one
/// already there adds its verbs to it.
fn by_key(rules: impl IntoIterator<Item = Rule>) -> BTreeMap<Key, Rule> {
    let mut out: BTreeMap<Key, Rule> = BTreeMap::new();
    for mut rule in rules {
        rule.normalize();
        match out.get_mut(&key(&rule)) {
            Some(existing) => {
                existing.verbs.append(&mut rule.verbs);
                existing.normalize();
                existing.scope = existing.scope.max(rule.scope);
            }
            None => {
                out.insert(key(&rule), rule);
            }
        }
    }
    out
}

/// Combines the rules that agree on everything but the list `field` picks,
/// joining that list.
fn combine_on(
    rules: BTreeMap<Key, Rule>,
    field: fn(&mut Rule) -> &mut Vec<String>,
) -> BTreeMap<Key, Rule> {
    let mut buckets: BTreeMap<Vec<Vec<String>>, Rule> = BTreeMap::new();
    for (_, mut rule) in rules {
        let mut other = rule.clone();
        field(&mut other).clear();
        let bucket = vec![
            other.groups,
            other.resources,
            other.resource_names,
            other.urls,
            rule.verbs.clone(),
        ];
        match buckets.get_mut(&bucket) {
            Some(existing) => {
                field(existing).append(field(&mut rule));
                existing.scope = existing.scope.max(rule.scope);
            }
            None => {
                buckets.insert(bucket, rule);
            }
        }
    }
    by_key(buckets.into_values())
}

/// Merges and sorts `rules` as controller-gen does (see the module docs).
pub fn merge(rules: impl IntoIterator<Item = Rule>) -> Vec<Rule> {
    let split = rules.into_iter().flat_map(|rule| {
        if rule.resources.len() <= 1 {
            return vec![rule];
        }
        rule.resources
            .iter()
            .map(|resource| Rule {
                resources: vec![resource.clone()],
                ..rule.clone()
            })
            .collect()
    });
    let merged = by_key(split);
    let merged = combine_on(merged, |r| &mut r.resources);
    let merged = combine_on(merged, |r| &mut r.groups);
    let merged = combine_on(merged, |r| &mut r.urls);
    let mut out: Vec<Rule> = merged.into_values().collect();
    out.sort_by_cached_key(sort_key);
    for rule in &mut out {
        rule.collapse_all_verbs();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::Verb;

    /// A rule as a marker writes it: `groups=a;b,resources=x;y,verbs=get;list`.
    fn marker(groups: &[&str], resources: &[&str], names: &[&str], verbs: &[&str]) -> Rule {
        Rule {
            groups: groups.iter().map(|s| s.to_string()).collect(),
            resources: resources.iter().map(|s| s.to_string()).collect(),
            resource_names: names.iter().map(|s| s.to_string()).collect(),
            urls: Vec::new(),
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            scope: crate::rbac::RuleScope::Namespaced,
        }
    }

    fn url(path: &str, verbs: &[&str]) -> Rule {
        let mut rule = Rule::url(path);
        rule.verbs = verbs.iter().map(|s| s.to_string()).collect();
        rule
    }

    /// `(groups, resources, names, urls, verbs)` of each rule, joined.
    fn shape(rules: &[Rule]) -> Vec<[String; 5]> {
        rules
            .iter()
            .map(|r| {
                [
                    r.groups.join(","),
                    r.resources.join(","),
                    r.resource_names.join(","),
                    r.urls.join(","),
                    r.verbs.join(","),
                ]
            })
            .collect()
    }

    fn row(g: &str, r: &str, n: &str, u: &str, v: &str) -> [String; 5] {
        [g, r, n, u, v].map(str::to_owned)
    }

    /// controller-tools' `pkg/rbac/testdata` cluster-wide markers and the
    /// ClusterRole it expects (`role.yaml`).
    #[test]
    fn controller_gens_test_markers_merge_to_its_expected_role() {
        let rules = vec![
            marker(
                &["batch.io"],
                &["cronjobs"],
                &[],
                &["get", "watch", "create"],
            ),
            marker(
                &["batch.io"],
                &["cronjobs/status"],
                &[],
                &["get", "update", "patch"],
            ),
            marker(&["art"], &["jobs"], &[], &["get"]),
            marker(
                &["batch", "batch", "batch"],
                &["jobs/status"],
                &[],
                &["watch"],
            ),
            marker(
                &["batch", "cron"],
                &["jobs/status"],
                &[],
                &["create", "get"],
            ),
            marker(
                &["cron", "batch"],
                &["jobs/status"],
                &[],
                &["get", "create"],
            ),
            marker(&["batch"], &["jobs/status"], &[], &["watch", "watch"]),
            marker(
                &["batch.io"],
                &["cronjobs"],
                &["foo", "bar", "baz"],
                &["get", "watch"],
            ),
            marker(&["deduplicate-verbs"], &["some"], &[], &["get", "list"]),
            marker(&["deduplicate-verbs"], &["some"], &[], &["get"]),
            marker(&["deduplicate-verbs"], &["some"], &[], &["list"]),
            marker(&["deduplicate-resources"], &["one"], &[], &["create"]),
            marker(&["deduplicate-resources"], &["two"], &[], &["create"]),
            marker(&["deduplicate-resources"], &["three"], &[], &["create"]),
            marker(&["deduplicate-groups1"], &["foo"], &[], &["patch"]),
            marker(&["deduplicate-groups2"], &["foo"], &[], &["patch"]),
            marker(&["deduplicate-groups3"], &["foo"], &[], &["patch"]),
            marker(&["deduplicate-all"], &["foo", "bar"], &[], &["get", "list"]),
            marker(&["deduplicate-all"], &["foo"], &[], &["get"]),
            marker(&["deduplicate-all"], &["bar"], &[], &["list"]),
            marker(
                &["deduplicate-all-group"],
                &["foo", "bar"],
                &[],
                &["get", "list"],
            ),
            marker(&["not-deduplicate-resources"], &["some"], &[], &["get"]),
            marker(&["not-deduplicate-resources"], &["another"], &[], &["list"]),
            marker(&["not-deduplicate-groups1"], &["some"], &[], &["get"]),
            marker(&["not-deduplicate-groups2"], &["some"], &[], &["list"]),
            url("/url-to-duplicate", &["get"]),
            url("/another/url-to-duplicate", &["get"]),
            marker(&["core"], &["deduplicate"], &[], &["list"]),
            marker(&[""], &["me"], &[], &["list"]),
            marker(
                &["core", "", "some-other-to-deduplicate-with-core"],
                &["me"],
                &[],
                &["list", "get"],
            ),
        ];
        assert_eq!(
            shape(&merge(rules)),
            vec![
                row(
                    "",
                    "",
                    "",
                    "/another/url-to-duplicate,/url-to-duplicate",
                    "get"
                ),
                row("", "deduplicate,me", "", "", "list"),
                row(
                    ",some-other-to-deduplicate-with-core",
                    "me",
                    "",
                    "",
                    "get,list"
                ),
                row("art", "jobs", "", "", "get"),
                row("batch", "jobs/status", "", "", "watch"),
                row("batch,cron", "jobs/status", "", "", "create,get"),
                row("batch.io", "cronjobs", "", "", "create,get,watch"),
                row("batch.io", "cronjobs", "bar,baz,foo", "", "get,watch"),
                row("batch.io", "cronjobs/status", "", "", "get,patch,update"),
                row(
                    "deduplicate-all,deduplicate-all-group",
                    "bar,foo",
                    "",
                    "",
                    "get,list"
                ),
                row(
                    "deduplicate-groups1,deduplicate-groups2,deduplicate-groups3",
                    "foo",
                    "",
                    "",
                    "patch"
                ),
                row("deduplicate-resources", "one,three,two", "", "", "create"),
                row("deduplicate-verbs", "some", "", "", "get,list"),
                row(
                    "not-deduplicate-groups1,not-deduplicate-resources",
                    "some",
                    "",
                    "",
                    "get"
                ),
                row("not-deduplicate-groups2", "some", "", "", "list"),
                row("not-deduplicate-resources", "another", "", "", "list"),
            ]
        );
    }

    #[test]
    fn a_star_among_the_verbs_stands_alone() {
        let rules = vec![
            marker(
                &["deduplicate-groups4"],
                &["xyz"],
                &[],
                &["get", "update", "patch"],
            ),
            marker(&["deduplicate-groups4"], &["xyz"], &[], &["*"]),
        ];
        assert_eq!(
            shape(&merge(rules)),
            vec![row("deduplicate-groups4", "xyz", "", "", "*")]
        );
    }

    #[test]
    fn typed_rules_merge_like_markers() {
        use k8s_openapi::api::apps::v1::Deployment;
        use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
        let merged = merge([
            Rule::on::<Deployment>().reads(),
            Rule::on::<Deployment>().verbs([Verb::Create, Verb::Patch]),
            Rule::on::<ConfigMap>().reads(),
            Rule::on::<Namespace>().reads(),
        ]);
        assert_eq!(
            shape(&merged),
            vec![
                row("", "configmaps,namespaces", "", "", "get,list,watch"),
                row("apps", "deployments", "", "", "create,get,list,patch,watch"),
            ]
        );
        // A namespaced and a cluster-scoped resource merged into one rule:
        // only a ClusterRole can hold it.
        assert_eq!(merged[0].scope(), crate::rbac::RuleScope::Cluster);
        assert_eq!(merged[1].scope(), crate::rbac::RuleScope::Namespaced);
    }
}
