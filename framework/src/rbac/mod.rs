//! RBAC from the code, not from comments: the rules an operator needs,
//! recorded from what its controllers watch and write plus the typed extra
//! rules it declares, merged and sorted the way controller-gen merges
//! `+kubebuilder:rbac` markers, and rendered as the roles and bindings of
//! kubebuilder's `config/rbac`.
//!
//! - [`Rule`], [`Verb`]: one typed grant (`Rule::on::<Secret>().reads()`).
//! - [`Write`]: how a reconcile writes a kind, declared on the controller
//!   builder so the rules grant exactly the verbs used.
//! - [`Permissions`]: what a [`Manager`](crate::Manager) has recorded: per
//!   controller, the primary type (cached; patched when the controller
//!   declares finalizers; its `/status` written as declared, and
//!   `/finalizers`), owned types (cached, and written as declared), watched
//!   types (cached), events; the manager's extra rules; the
//!   leader-election Lease.
//!
//! A cache (an informer) lists and watches, so derived reads are `list`
//! and `watch`: the cached client never sends a `get`. What a reconcile
//! does beyond its cache and the builder's declarations (a live read, a
//! write of another kind) is declared with `.rule(..)`.
//! - [`merge`]: controller-gen's merging and sorting.
//! - [`render`]: the manager role (a ClusterRole, or a Role when the
//!   operator is restricted to a namespace), its binding, and the
//!   leader-election Role and binding.
//!
//! ```
//! use kubeforge::k8s_openapi::api::core::v1::Secret;
//! use kubeforge::rbac::{merge, Rule, Verb};
//!
//! let rules = merge([
//!     Rule::on::<Secret>().verbs([Verb::Get]),
//!     Rule::on::<Secret>().verbs([Verb::List, Verb::Watch]),
//! ]);
//! assert_eq!(rules.len(), 1);
//! assert_eq!(rules[0].to_policy_rule().verbs, ["get", "list", "watch"]);
//! ```

mod merge;
mod record;
mod render;
mod rule;
mod write;

pub use merge::merge;
pub use record::{ControllerRules, Permissions};
pub use render::{render, RoleManifests, RoleOptions, SHARDING_LEASE_VERBS};
pub use rule::{Rule, RuleScope, Verb};
pub use write::Write;
