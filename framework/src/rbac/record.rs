//! [`Permissions`]: the rules a manager has recorded, per controller and
//! for itself, and the grants each kind of watch implies.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kube_core::Resource;

use super::{Rule, Verb, Write};

/// The rules one controller needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerRules {
    /// The controller's name.
    pub name: String,
    /// What it watches and writes, and the extra rules declared on it.
    pub rules: Vec<Rule>,
}

#[derive(Debug, Default)]
struct Recorded {
    controllers: Vec<ControllerRules>,
    extra: Vec<Rule>,
    lease: Option<String>,
    sharded: bool,
}

/// What an operator needs from the API server, as its
/// [`Manager`](crate::Manager) recorded it: each controller's rules, the
/// manager's extra rules, and the leader-election Lease. Cheap to clone;
/// clones share the record.
#[derive(Clone, Debug, Default)]
pub struct Permissions(Arc<Mutex<Recorded>>);

impl Permissions {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Recorded> {
        // Plain lists changed by single pushes: a panic elsewhere cannot
        // leave them half-written.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a controller's rules.
    pub fn add_controller(&self, name: impl Into<String>, rules: Vec<Rule>) {
        self.lock().controllers.push(ControllerRules {
            name: name.into(),
            rules,
        });
    }

    /// Records a rule the operator needs beyond its controllers'.
    pub fn add_rule(&self, rule: Rule) {
        self.lock().extra.push(rule);
    }

    /// Records that a controller is sharded: its replicas keep Leases in
    /// the manager's namespace (see [`crate::sharding`]).
    pub fn set_sharded(&self) {
        self.lock().sharded = true;
    }

    /// Whether a controller is sharded.
    pub fn sharded(&self) -> bool {
        self.lock().sharded
    }

    /// Records the name of the leader-election Lease.
    pub fn set_leader_election_lease(&self, name: impl Into<String>) {
        self.lock().lease = Some(name.into());
    }

    /// Each controller's rules, in registration order.
    pub fn controllers(&self) -> Vec<ControllerRules> {
        self.lock().controllers.clone()
    }

    /// The rules recorded beyond the controllers'.
    pub fn extra_rules(&self) -> Vec<Rule> {
        self.lock().extra.clone()
    }

    /// The leader-election Lease's name, when the manager elects a leader.
    pub fn leader_election_lease(&self) -> Option<String> {
        self.lock().lease.clone()
    }

    /// Every rule, unmerged: the controllers', then the extra ones.
    pub fn rules(&self) -> Vec<Rule> {
        let recorded = self.lock();
        recorded
            .controllers
            .iter()
            .flat_map(|c| c.rules.iter().cloned())
            .chain(recorded.extra.iter().cloned())
            .collect()
    }
}

impl Rule {
    /// What a controller needs of its primary type `K`: to cache it (list,
    /// watch); with `finalizers`, to add and remove its finalizers (the
    /// finalizer helpers' JSON patch: patch); and to write its status as
    /// `status` declares (kubebuilder's scaffolded get, update and patch
    /// when undeclared). A controller that owns objects needs
    /// [`for_owner`](Self::for_owner) too.
    pub fn for_primary<K>(finalizers: bool, status: Option<&[Write]>) -> Vec<Rule>
    where
        K: Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        let mut primary = Rule::on::<K>().caches();
        if finalizers {
            primary = primary.verbs([Verb::Patch]);
        }
        let status_verbs: Vec<Verb> = match status {
            Some(writes) => writes
                .iter()
                .flat_map(|w| w.subresource_verbs().iter().copied())
                .collect(),
            None => vec![Verb::Get, Verb::Update, Verb::Patch],
        };
        let mut rules = vec![primary];
        if !status_verbs.is_empty() {
            rules.push(Rule::on::<K>().subresource("status").verbs(status_verbs));
        }
        rules
    }

    /// What a controller needs to own objects as `K`'s controller: the
    /// owner references it sets say `blockOwnerDeletion`, which the API
    /// server's OwnerReferencesPermissionEnforcement admission allows only
    /// to who may update `K`'s `/finalizers`. Derived with every
    /// `.owns*` declaration (kubebuilder scaffolds it for every
    /// controller); add it as an extra rule when a reconciler sets
    /// controller references on objects written outside of `.owns*`.
    pub fn for_owner<K>() -> Rule
    where
        K: Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        Rule::on::<K>()
            .subresource("finalizers")
            .verbs([Verb::Update])
    }

    /// What a controller needs of a type it owns: to cache it (list,
    /// watch) and to write it as `writes` declares (create, update, patch
    /// and delete when undeclared, as kubebuilder scaffolds).
    pub fn for_owned<K>(writes: Option<&[Write]>) -> Rule
    where
        K: Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        let rule = Rule::on::<K>().caches();
        match writes {
            Some(writes) => rule.verbs(writes.iter().flat_map(|w| w.verbs().iter().copied())),
            None => rule.writes(),
        }
    }

    /// What a controller needs of a type it watches: to cache it (list,
    /// watch).
    pub fn for_watched<K>() -> Rule
    where
        K: Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        Rule::on::<K>().caches()
    }

    /// What an event recorder needs: `events.k8s.io` events, created, and
    /// patched for a repeated event's series.
    pub fn for_events() -> Rule {
        Rule::resource("events.k8s.io", "events").verbs([Verb::Create, Verb::Patch])
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    /// `resource verbs` of each rule, verbs sorted.
    fn grants(rules: &[Rule]) -> Vec<String> {
        rules
            .iter()
            .map(|r| {
                let p = r.to_policy_rule();
                format!(
                    "{} {}",
                    p.resources.unwrap_or_default().join(","),
                    p.verbs.join(",")
                )
            })
            .collect()
    }

    #[test]
    fn a_primary_is_cached_and_written_only_as_declared() {
        assert_eq!(
            grants(&Rule::for_primary::<ConfigMap>(false, None)),
            [
                "configmaps list,watch",
                "configmaps/status get,patch,update"
            ]
        );
        assert_eq!(
            grants(&Rule::for_primary::<ConfigMap>(true, Some(&[Write::Apply]))),
            ["configmaps list,patch,watch", "configmaps/status patch"]
        );
        // No status write declared: no status rule.
        assert_eq!(
            grants(&Rule::for_primary::<ConfigMap>(false, Some(&[]))),
            ["configmaps list,watch"]
        );
        assert_eq!(
            grants(&[Rule::for_owner::<ConfigMap>()]),
            ["configmaps/finalizers update"]
        );
    }

    #[test]
    fn owned_kinds_are_written_as_declared_or_as_kubebuilder_scaffolds() {
        assert_eq!(
            grants(&[Rule::for_owned::<Deployment>(None)]),
            ["deployments create,delete,list,patch,update,watch"]
        );
        assert_eq!(
            grants(&[Rule::for_owned::<Deployment>(Some(&[Write::Apply]))]),
            ["deployments create,list,patch,watch"]
        );
        assert_eq!(
            grants(&[Rule::for_owned::<Deployment>(Some(&[
                Write::Create,
                Write::Delete
            ]))]),
            ["deployments create,delete,list,watch"]
        );
        assert_eq!(
            grants(&[Rule::for_watched::<Deployment>()]),
            ["deployments list,watch"]
        );
    }
}
