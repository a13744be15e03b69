//! The names most operators need, for `use kubeforge::prelude::*;`.
//!
//! `JsonSchema` here is both schemars' trait and kubeforge's derive, which
//! wraps schemars' derive and understands `#[crd(...)]` schema markers.

#[doc(no_inline)]
pub use crate::crd::CustomResource;
#[doc(no_inline)]
pub use crate::scheme::Scheme;
#[doc(no_inline)]
pub use kube_core::object::{HasSpec, HasStatus};
#[doc(no_inline)]
pub use kube_core::{CustomResourceExt, Resource, ResourceExt};
#[doc(no_inline)]
pub use kubeforge_macros::{CustomResource, JsonSchema};
#[doc(no_inline)]
pub use serde::{Deserialize, Serialize};

// The trait only: the derive of the same name is kubeforge's, above. A glob
// import is shadowed by explicit ones per namespace, which keeps schemars'
// derive macro out.
#[doc(no_inline)]
pub use self::schema_trait::*;

mod schema_trait {
    pub use schemars::JsonSchema;
}
