//! [`Ctx`]: what every resource handler receives: the shared state, the
//! resource's definition, the parsed path and query, and the request head.

use std::sync::Arc;

use http::request::Parts;

use crate::http::routing::ResourcePath;
use crate::http::wire::Query;
use crate::registry::state::Shared;
use crate::registry::ResourceDef;

/// Everything a resource handler needs.
pub(crate) struct Ctx {
    pub shared: Arc<Shared>,
    pub def: Arc<ResourceDef>,
    pub path: ResourcePath,
    pub query: Query,
    pub parts: Parts,
}

impl Ctx {
    pub fn key(&self) -> (String, String) {
        (
            self.path.namespace.clone().unwrap_or_default(),
            self.path.name.clone().unwrap_or_default(),
        )
    }
}
