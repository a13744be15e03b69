//! How a ring's replicas tell the server which objects they hold: by
//! KEP-5866's `shardSelector` where the server serves it, by a slot label
//! where it does not (every server before Kubernetes 1.36, and 1.36 with
//! the `ShardedListAndWatch` gate off), and how the choice is made.

use kube_core::Resource;

use crate::cache::Slots;
use crate::client::{self, Client};

/// How a sharded controller's replicas select their slots' objects of the
/// primary kind. Owned kinds are always selected by label: a child's slot
/// is its owner's, which no `shardSelector` field can express.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mechanism {
    /// `shardSelector` if the server serves it, else labels: asked once
    /// at start with a one-item list (see [`serves_shard_selector`]).
    #[default]
    Auto,
    /// `shardSelector` on list and watch. Against a server that ignores
    /// it the cache still holds only its slots (each object is checked),
    /// but every object's bytes arrive.
    ShardSelector,
    /// Every object labelled with its slot
    /// ([`slot_label_key`](crate::cache::slot_label_key)) by the replica
    /// holding it, and a label selector on list and watch.
    Labels,
}

/// Whether the server serves `shardSelector` on `K`'s list (in
/// `namespace`, or everywhere): it echoes the selector in the list's
/// `metadata.shardInfo`, and a server that ignores the parameter answers
/// without it (KEP-5866, "Version Skew Strategy").
pub async fn serves_shard_selector<K: Resource<DynamicType = ()>>(
    client: &Client,
    namespace: Option<&str>,
) -> Result<bool, client::Error> {
    // The whole hash space: every object, so the answer shows only
    // whether the server applied the selector.
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("limit", "1")
        .append_pair("shardSelector", &Slots::ALL.selector())
        .finish();
    let request = http::Request::get(format!("{}?{query}", K::url_path(&(), namespace)))
        .body(Vec::new())
        .map_err(|e| client::Error::Protocol(format!("cannot build the list request: {e}")))?;
    let list: serde_json::Value = client.request(request).await?;
    Ok(list
        .pointer("/metadata/shardInfo/selector")
        .is_some_and(|selector| selector.as_str().is_some_and(|s| !s.is_empty())))
}
