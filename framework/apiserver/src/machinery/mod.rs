//! What every wing uses and that knows no wing (apimachinery's place in
//! kube): errors as `Status`, label, field and shard selectors, patches
//! (strategic merge, JSON merge, server-side apply and managed fields),
//! fault rules, the webhook HTTPS client, the write threads, and small
//! helpers.

pub(crate) mod error;
pub(crate) mod faults;
pub(crate) mod names;
pub(crate) mod patch;
pub(crate) mod selectors;
pub(crate) mod shards;
pub(crate) mod status;
pub(crate) mod util;
pub(crate) mod webhook_client;
pub(crate) mod work;
