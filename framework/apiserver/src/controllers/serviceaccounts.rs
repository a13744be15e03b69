//! The service-account controller: every namespace gets its `default`
//! ServiceAccount.

use serde_json::json;

use super::write::MANAGER;
use crate::objects::{self, WriteOpts};
use crate::registry::state::Shared;

/// Creates the `default` ServiceAccount of a new namespace.
pub(crate) fn ensure_default(shared: &Shared, ns: &str) {
    let Some(def) = shared.registry().get("", "v1", "serviceaccounts") else {
        return;
    };
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}});
    let opts = WriteOpts::internal(&def, MANAGER);
    let _ = objects::create(shared, &def, Some(ns), sa, &opts);
}
