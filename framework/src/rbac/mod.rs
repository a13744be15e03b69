//! RBAC from the code, not from comments: the rules an operator needs,
//! recorded from what its controllers watch and write plus the typed extra
//! rules it declares, merged and sorted the way controller-gen merges
//! `+kubebuilder:rbac` markers, and rendered as the roles and bindings of
//! kubebuilder's `config/rbac`.
//!
//! - [`Rule`], [`Verb`]: one typed grant (`Rule::on::<Secret>().reads()`).
//! - [`Permissions`]: what a [`Manager`](crate::Manager) has recorded: per
//!   controller, the primary type (read, and written through `update`,
//!   `patch`, `/status` and `/finalizers`), owned types (read and written),
//!   watched types (read), events; the manager's extra rules; the
//!   leader-election Lease.
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

pub use merge::merge;
pub use record::{ControllerRules, Permissions};
pub use render::{render, RoleManifests, RoleOptions};
pub use rule::{Rule, RuleScope, Verb};
