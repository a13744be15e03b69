//! List response bodies, `{"kind":…,"apiVersion":…,"metadata":{…},
//! "items":[…]}`, assembled from the stored bytes: built-in items without
//! `kind`/`apiVersion` (kubernetes#3030), custom-resource items with them.
//!
//! A JSON list goes out as a stream of chunks of about [`CHUNK`] bytes,
//! each written when the connection is ready for it, as kube-apiserver
//! encodes collections since 1.33 (KEP-5116, `StreamingCollectionEncoding
//! ToJSON`, on by default, stable in 1.34):
//! the client reads and decodes the first items while the server writes
//! the rest, and the server never holds a whole list body in memory.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{BufMut, Bytes, BytesMut};
use http_body::{Frame, SizeHint};
use serde_json::json;

use super::served::converted;
use crate::registry::ResourceDef;
use crate::storage::StoredObject;

/// Bytes gathered before a chunk goes to the connection: a few TLS records,
/// and a few dozen typical items.
pub(super) const CHUNK: usize = 64 * 1024;

/// What a list says about itself in its `metadata`.
pub(super) struct ListMeta<'a> {
    pub rv: &'a str,
    pub cont: Option<&'a str>,
    pub remaining: Option<u64>,
    /// `shardInfo.selector`: the shard selector the list was filtered by,
    /// re-serialized.
    pub shard_info: Option<&'a str>,
}

/// The list's opening, up to and including `"items":[`.
fn head(def: &ResourceDef, version: &str, meta: &ListMeta<'_>) -> Vec<u8> {
    let mut m = json!({"resourceVersion": meta.rv});
    if let Some(c) = meta.cont {
        m["continue"] = json!(c);
    }
    if let Some(n) = meta.remaining {
        m["remainingItemCount"] = json!(n);
    }
    if let Some(selector) = meta.shard_info {
        m["shardInfo"] = json!({"selector": selector});
    }
    let head =
        json!({"kind": def.list_kind, "apiVersion": def.api_version(version), "metadata": m});
    let mut out = serde_json::to_vec(&head).unwrap_or_default();
    // `{"kind":…,"metadata":{…}}` loses its closing brace to the items.
    out.pop();
    out.extend_from_slice(b",\"items\":[");
    out
}

/// Appends one item, converted to `version` if it is stored at another.
fn write_item(def: &ResourceDef, version: &str, o: &StoredObject, out: &mut BytesMut) {
    match (def.is_custom(), converted(def, version, o)) {
        (true, Some(c)) => out.extend_from_slice(c.bytes()),
        (true, None) => out.extend_from_slice(o.bytes()),
        (false, Some(c)) => c.write_item(out),
        (false, None) => o.write_item(out),
    }
}

/// A whole list body in one buffer: for YAML, which is rendered from it,
/// and for deletecollection's answer.
pub(super) fn list_body(
    def: Arc<ResourceDef>,
    version: &str,
    items: Vec<Arc<StoredObject>>,
    meta: &ListMeta<'_>,
) -> Bytes {
    let mut list = ListStream::new(def, version, items, meta);
    let size = list.left.map_or(0, |n| usize::try_from(n).unwrap_or(0));
    let mut out = BytesMut::with_capacity(size);
    while list.write_next(&mut out) {}
    out.freeze()
}

/// A JSON list body written a chunk at a time.
pub(super) struct ListStream {
    def: Arc<ResourceDef>,
    version: String,
    head: Option<Vec<u8>>,
    items: std::vec::IntoIter<Arc<StoredObject>>,
    /// No item has been written yet.
    first: bool,
    /// The closing `]}` has been written.
    done: bool,
    /// Bytes still to come, when known: every item is served as stored,
    /// so each one's size is known before it is written.
    left: Option<u64>,
}

impl ListStream {
    pub(super) fn new(
        def: Arc<ResourceDef>,
        version: &str,
        items: Vec<Arc<StoredObject>>,
        meta: &ListMeta<'_>,
    ) -> Self {
        let head = head(&def, version, meta);
        let as_stored = def.conversion().is_none() && version == def.storage_version;
        let left = as_stored.then(|| {
            let item_bytes: usize = items
                .iter()
                .map(|o| {
                    if def.is_custom() {
                        o.bytes().len()
                    } else {
                        o.item_len()
                    }
                })
                .sum();
            let commas = items.len().saturating_sub(1);
            (head.len() + item_bytes + commas + 2) as u64
        });
        Self {
            def,
            version: version.to_owned(),
            head: Some(head),
            items: items.into_iter(),
            first: true,
            done: false,
            left,
        }
    }

    /// Appends the next piece of the body: the head, then an item (after a
    /// comma but for the first), then the closing `]}`. False once that
    /// has been written.
    fn write_next(&mut self, out: &mut BytesMut) -> bool {
        if let Some(head) = self.head.take() {
            out.extend_from_slice(&head);
            return true;
        }
        match self.items.next() {
            Some(o) => {
                if !self.first {
                    out.put_u8(b',');
                }
                self.first = false;
                write_item(&self.def, &self.version, &o, out);
                true
            }
            None => {
                if !self.done {
                    out.extend_from_slice(b"]}");
                    self.done = true;
                }
                false
            }
        }
    }

    /// The next chunk: whole items until it holds at least [`CHUNK`]
    /// bytes, the closing `]}` after the last.
    fn next_chunk(&mut self) -> Bytes {
        let mut out = BytesMut::with_capacity(CHUNK + CHUNK / 4);
        while out.len() < CHUNK && self.write_next(&mut out) {}
        if let Some(left) = self.left.as_mut() {
            *left = left.saturating_sub(out.len() as u64);
        }
        out.freeze()
    }
}

impl http_body::Body for ListStream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        Poll::Ready(Some(Ok(Frame::data(this.next_chunk()))))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        match self.left {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    use crate::registry::Registry;

    fn configmap(i: usize, rv: u64) -> Arc<StoredObject> {
        let v = json!({
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"name": format!("c{i}"), "namespace": "ns", "resourceVersion": rv.to_string()},
            "data": {"k": "x".repeat(i % 700)},
        });
        Arc::new(StoredObject::encode(v, rv))
    }

    fn widget(i: usize, rv: u64) -> Arc<StoredObject> {
        let v = json!({
            "kind": "Widget",
            "apiVersion": "example.com/v1",
            "metadata": {"name": format!("w{i}"), "namespace": "ns", "resourceVersion": rv.to_string()},
            "spec": {"size": i, "note": "y".repeat(i % 300)},
        });
        Arc::new(StoredObject::encode(v, rv))
    }

    fn widgets_def() -> Arc<ResourceDef> {
        let crd = crate::apiextensions::tests::base_crd();
        Arc::new(crate::registry::crd::resource_def(&crd))
    }

    const META: ListMeta<'static> = ListMeta {
        rv: "9",
        cont: Some("tok"),
        remaining: Some(3),
        shard_info: None,
    };

    /// Streams `items`, checks that the chunks join to [`list_body`]'s
    /// bytes and that the announced size is theirs, and returns the chunks
    /// and the list they make.
    async fn stream_checked(
        def: &Arc<ResourceDef>,
        items: &[Arc<StoredObject>],
    ) -> (Vec<Bytes>, serde_json::Value) {
        let whole = list_body(Arc::clone(def), "v1", items.to_vec(), &META);
        let body = ListStream::new(Arc::clone(def), "v1", items.to_vec(), &META);
        let exact = http_body::Body::size_hint(&body)
            .exact()
            .expect("an exact size");
        let mut chunks = Vec::new();
        let mut body = std::pin::pin!(body);
        while let Some(frame) = body.frame().await {
            chunks.push(frame.expect("infallible").into_data().expect("data"));
        }
        let joined: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
        assert_eq!(joined, whole.to_vec(), "{} items", items.len());
        assert_eq!(exact, whole.len() as u64, "{} items", items.len());
        (chunks, serde_json::from_slice(&joined).expect("JSON"))
    }

    #[tokio::test]
    async fn the_streamed_list_is_the_whole_body_in_chunks_of_the_announced_size() {
        let def = Registry::with_builtins()
            .get("", "v1", "configmaps")
            .expect("configmaps");
        for n in [0, 1, 2, 60, 2000] {
            let items: Vec<_> = (0..n).map(|i| configmap(i, i as u64 + 1)).collect();
            let (chunks, v) = stream_checked(&def, &items).await;
            assert_eq!(v["items"].as_array().map(Vec::len), Some(n));
            assert_eq!(v["metadata"]["continue"], "tok");
            assert!(v["items"]
                .as_array()
                .is_some_and(|items| items.iter().all(|i| i.get("kind").is_none())));
            // Every chunk but the last holds at least CHUNK bytes, and
            // none holds more than one item beyond it.
            for c in chunks.iter().rev().skip(1) {
                assert!((CHUNK..CHUNK + 2048).contains(&c.len()), "{}", c.len());
            }
            if n == 2000 {
                assert!(chunks.len() > 5, "{} chunks", chunks.len());
            }
        }
    }

    #[tokio::test]
    async fn custom_resource_items_keep_kind_and_the_announced_size_is_exact() {
        let def = widgets_def();
        let items: Vec<_> = (0..1500).map(|i| widget(i, i as u64 + 1)).collect();
        let (chunks, v) = stream_checked(&def, &items).await;
        assert!(chunks.len() > 2, "{} chunks", chunks.len());
        assert_eq!(v["kind"], "WidgetList");
        assert_eq!(v["items"][0]["kind"], "Widget");
        assert_eq!(v["items"][1499]["apiVersion"], "example.com/v1");
    }
}
