//! The names most operators need, for `use kubeforge::prelude::*;`: the
//! derive and its traits, the client and the manager, what a reconcile
//! returns and receives, the usual helpers, and `Arc` and `Duration`.
//!
//! `JsonSchema` here is both schemars' trait and kubeforge's derive, which
//! wraps schemars' derive and understands `#[crd(...)]` schema markers.

#[doc(no_inline)]
pub use crate::cache::ObjectKey;
#[doc(no_inline)]
pub use crate::controller::predicate::{GenerationChanged, PredicateExt};
#[doc(no_inline)]
pub use crate::controller::{Action, Context, Controller, Owns, TerminalError, Watch};
#[doc(no_inline)]
pub use crate::crd::CustomResource;
#[doc(no_inline)]
pub use crate::manager::Manager;
#[doc(no_inline)]
pub use crate::reconcile::finalizer::{Event as FinalizerEvent, FinalizerError};
#[doc(no_inline)]
pub use crate::reconcile::owner::set_controller_reference;
#[doc(no_inline)]
pub use crate::reconcile::{CachedClient, ListOptions};
#[doc(no_inline)]
pub use crate::scheme::Scheme;
/// `server.client()` and `server.install_crd_for::<K>()` on the in-process
/// API server.
#[cfg(feature = "testing")]
#[doc(no_inline)]
pub use crate::testing::ApiServerExt as _;
#[doc(no_inline)]
pub use crate::{Api, Client};
#[doc(no_inline)]
pub use kube_core::object::{HasSpec, HasStatus};
#[doc(no_inline)]
pub use kube_core::params::{DeleteParams, Patch, PatchParams, PostParams};
#[doc(no_inline)]
pub use kube_core::{CustomResourceExt, Resource, ResourceExt};
#[doc(no_inline)]
pub use kubeforge_macros::{CustomResource, JsonSchema};
#[doc(no_inline)]
pub use serde::{Deserialize, Serialize};
#[doc(no_inline)]
pub use std::sync::Arc;
#[doc(no_inline)]
pub use std::time::Duration;

// The trait only: the derive of the same name is kubeforge's, above. A glob
// import is shadowed by explicit ones per namespace, which keeps schemars'
// derive macro out.
#[doc(no_inline)]
pub use self::schema_trait::*;

mod schema_trait {
    pub use schemars::JsonSchema;
}
