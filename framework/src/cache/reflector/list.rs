//! Streaming decode of list responses: the items of
//! `{"kind":..,"metadata":{..},"items":[{..},{..}]}` are cut out of the
//! byte stream one at a time as chunks arrive and decoded while the rest
//! is still arriving, so the reflector never holds a whole list body, and
//! the time to sync is about the longer of fetching and decoding rather
//! than their sum. (A list at resourceVersion "0" is served from the watch
//! cache, which ignores `limit`: one response can hold every object of a
//! type.)
//!
//! [`ItemSplitter`] tracks just enough JSON structure (nesting depth,
//! strings and escapes, a few keys) to find the top-level `items` array and
//! `metadata` object. Items are gathered into batches that are decoded by
//! `serde_json` on the blocking pool, several at once, and put back in list
//! order; at most a few batches are in flight, so memory stays bounded
//! whatever the list's size. A decode thread reserves about its batch's
//! decoded size before decoding ([`reserve_heap`]), so its heap grows in
//! one step. When the transform drops managedFields anyway,
//! the splitter cuts each item's `metadata.managedFields` out of its bytes
//! before decoding, so they are never built. Every byte JSON gives
//! structural meaning to is ASCII, so scanning bytes is safe in UTF-8.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::stream::FuturesOrdered;
use futures::StreamExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube_core::{DynamicObject, Resource};
use serde::de::DeserializeOwned;

use crate::cache::Transform;
use crate::client::{self, Client};

/// The longest a list response may go without sending a byte.
pub(crate) const LIST_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Item bytes gathered before a batch goes to be decoded: large enough
/// that handing it over costs little next to decoding it, small enough
/// that several are in flight for a list of a few megabytes.
const BATCH_BYTES: usize = 128 * 1024;

/// About what a byte of an item's JSON takes once decoded: a ConfigMap of
/// 1.3 KiB as served is 6.4 KB decoded with its managedFields, and a
/// 0.8 KiB one without them 2.9 KB.
const DECODED_PER_JSON_BYTE: usize = 4;

/// Asks the allocator once for about what decoding `json_bytes` of items
/// will take, and gives it back, so that the thread's heap grows in one
/// step rather than a page at a time.
///
/// glibc gives each thread an arena that grows with one `mprotect` call
/// per page used, each call taking the process's memory map for writing:
/// filling a cache of 100k ConfigMaps (640 MB) took about as much time in
/// those calls as in page faults. A block this size, once freed, raises
/// glibc's dynamic mmap and trim thresholds above it, so from the second
/// batch on it comes from the arena and stays there as free space for the
/// decode. This cut the time to sync 100k ConfigMaps by about a quarter.
/// Other allocators see one large allocation and its free per batch.
fn reserve_heap(json_bytes: usize) {
    // `black_box`, or the optimiser drops an allocation nothing reads.
    drop(std::hint::black_box(Vec::<u8>::with_capacity(
        json_bytes * DECODED_PER_JSON_BYTE,
    )));
}

/// Which of the keys the splitter looks for a string was.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Key {
    #[default]
    Other,
    Items,
    Metadata,
    ManagedFields,
}

impl Key {
    fn of(raw: &[u8]) -> Self {
        match raw {
            b"items" => Self::Items,
            b"metadata" => Self::Metadata,
            b"managedFields" => Self::ManagedFields,
            _ => Self::Other,
        }
    }
}

/// Cuts the items out of a list body as its bytes arrive.
///
/// Depths: 1 is the list object, 2 the `items` array (or the list's
/// `metadata`), 3 an item, 4 an item's `metadata` (and its other fields).
#[derive(Debug, Default)]
pub(crate) struct ItemSplitter {
    buf: BytesMut,
    /// Next byte of `buf` to scan.
    pos: usize,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The next string is a key of an object whose keys matter (the
    /// list, an item, an item's metadata).
    expect_key: bool,
    key_start: Option<usize>,
    last_key: Key,
    in_items: bool,
    item_start: Option<usize>,
    meta_start: Option<usize>,
    metadata: Option<Bytes>,
    closed: bool,
    /// Cut `metadata.managedFields` out of every item.
    cut_managed_fields: bool,
    /// Inside the current item's `metadata` object.
    in_item_meta: bool,
    /// The last comma between the current item metadata's members.
    meta_comma: Option<usize>,
    /// Where the current item's `"managedFields"` key starts.
    managed_start: Option<usize>,
    /// The bytes of `buf` to cut out of the current item.
    cut: Option<(usize, usize)>,
}

impl ItemSplitter {
    /// A splitter that also cuts `metadata.managedFields` out of each item
    /// when `cut_managed_fields`.
    pub(crate) fn new(cut_managed_fields: bool) -> Self {
        Self {
            cut_managed_fields,
            ..Self::default()
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// Whether a string starting now is a key the splitter reads.
    fn at_tracked_key(&self) -> bool {
        self.expect_key
            && (self.depth == 1 || (self.in_items && (self.depth == 3 || self.in_item_meta)))
    }

    /// The next complete item, `None` once the buffered bytes hold no more.
    pub(crate) fn next_item(&mut self) -> Result<Option<Bytes>, String> {
        while self.pos < self.buf.len() {
            let i = self.pos;
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    self.pos += 1;
                    continue;
                }
                // Jump to the next quote or backslash: strings are most of
                // the bytes.
                match memchr::memchr2(b'"', b'\\', &self.buf[i..]) {
                    None => self.pos = self.buf.len(),
                    Some(off) => {
                        let j = i + off;
                        self.pos = j + 1;
                        if self.buf[j] == b'\\' {
                            self.escaped = true;
                        } else {
                            self.in_string = false;
                            if let Some(start) = self.key_start.take() {
                                self.last_key = Key::of(&self.buf[start + 1..j]);
                                if self.last_key == Key::ManagedFields
                                    && self.in_item_meta
                                    && self.cut_managed_fields
                                    && self.cut.is_none()
                                {
                                    self.managed_start = Some(start);
                                }
                            }
                        }
                    }
                }
                continue;
            }
            let b = self.buf[i];
            self.pos += 1;
            match b {
                b'"' => {
                    if self.depth == 2 && self.in_items {
                        return Err("a list item is not a JSON object".into());
                    }
                    if self.at_tracked_key() {
                        self.key_start = Some(i);
                        self.expect_key = false;
                    }
                    self.in_string = true;
                }
                b'{' | b'[' => {
                    if self.closed {
                        return Err("data after the end of the list".into());
                    }
                    self.depth += 1;
                    match self.depth {
                        1 if b != b'{' => {
                            return Err("a list response must be a JSON object".into())
                        }
                        1 => self.expect_key = true,
                        2 if b == b'[' && self.last_key == Key::Items => self.in_items = true,
                        2 if b == b'{' && self.last_key == Key::Metadata => {
                            self.meta_start = Some(i);
                        }
                        3 if self.in_items => {
                            if b != b'{' {
                                return Err("a list item is not a JSON object".into());
                            }
                            self.item_start = Some(i);
                            self.expect_key = true;
                        }
                        4 if self.in_items && b == b'{' && self.last_key == Key::Metadata => {
                            self.in_item_meta = true;
                            self.expect_key = true;
                            self.meta_comma = None;
                        }
                        _ => {}
                    }
                }
                b'}' | b']' => {
                    if self.depth == 0 {
                        return Err("unbalanced brackets in list response".into());
                    }
                    if self.depth == 4 && self.in_item_meta {
                        self.in_item_meta = false;
                        if let Some(start) = self.managed_start.take() {
                            // The last member: the comma before it goes too.
                            self.cut = Some((self.meta_comma.unwrap_or(start), i));
                        }
                    }
                    if self.depth == 3 && self.in_items {
                        if let Some(start) = self.item_start.take() {
                            self.depth -= 1;
                            return Ok(Some(self.take_item(start, i)));
                        }
                    }
                    if self.depth == 2 {
                        if self.in_items && b == b']' {
                            self.in_items = false;
                        }
                        if let Some(start) = self.meta_start.take() {
                            self.metadata = Some(Bytes::copy_from_slice(&self.buf[start..=i]));
                        }
                    }
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.closed = true;
                    }
                }
                b',' => match self.depth {
                    1 => self.expect_key = true,
                    3 if self.in_items => self.expect_key = true,
                    4 if self.in_item_meta => {
                        self.expect_key = true;
                        if let Some(start) = self.managed_start.take() {
                            // Key, value and the comma after them.
                            self.cut = Some((start, i + 1));
                        }
                        self.meta_comma = Some(i);
                    }
                    _ => {}
                },
                c if self.depth == 2 && self.in_items && !c.is_ascii_whitespace() => {
                    return Err("a list item is not a JSON object".into())
                }
                c if self.closed && !c.is_ascii_whitespace() => {
                    return Err("data after the end of the list".into())
                }
                _ => {}
            }
        }
        self.compact();
        Ok(None)
    }

    /// Takes the item `buf[start..=end]` out of the buffer, without the
    /// bytes to cut.
    fn take_item(&mut self, start: usize, end: usize) -> Bytes {
        let mut head = self.buf.split_to(end + 1);
        self.pos = 0;
        let mut item = head.split_off(start);
        if let Some((from, to)) = self.cut.take() {
            let (from, to) = (from - start, to - start);
            let len = item.len();
            item.copy_within(to..len, from);
            item.truncate(len - (to - from));
        }
        self.managed_start = None;
        self.in_item_meta = false;
        item.freeze()
    }

    /// Drops the scanned bytes nobody needs any more.
    fn compact(&mut self) {
        let keep = [self.item_start, self.meta_start, self.key_start]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(self.pos);
        if keep == 0 {
            return;
        }
        let _ = self.buf.split_to(keep);
        self.pos -= keep;
        // Every other position lies inside the item (or list metadata)
        // being assembled, so at or after `keep`.
        for at in [
            &mut self.item_start,
            &mut self.meta_start,
            &mut self.key_start,
            &mut self.meta_comma,
            &mut self.managed_start,
        ] {
            if let Some(at) = at.as_mut() {
                *at -= keep;
            }
        }
        if let Some((from, to)) = self.cut.as_mut() {
            *from -= keep;
            *to -= keep;
        }
    }

    /// The list's metadata, once the whole body has been pushed.
    pub(crate) fn finish(self) -> Result<ListMeta, String> {
        if !self.closed || self.depth != 0 {
            return Err("the list response ended before its closing brace".into());
        }
        match self.metadata {
            Some(raw) => serde_json::from_slice(&raw)
                .map_err(|e| format!("cannot decode the list's metadata: {e}")),
            None => Ok(ListMeta::default()),
        }
    }
}

/// Decodes one item: `serde_json` with lists at their lengths, then the
/// list-wide tidying, then the transform, then the `Arc` the cache shares.
fn decode_item<K>(
    item: &[u8],
    transform: Option<&Transform<K>>,
) -> Result<Arc<K>, serde_json::Error>
where
    K: Resource + DeserializeOwned + 'static,
{
    let mut obj: K = client::exact::from_slice(item)?;
    trim_spare_capacity(&mut obj);
    Ok(Arc::new(match transform {
        Some(t) => t.apply(obj),
        None => obj,
    }))
}

/// Gives back the spare capacity decoding leaves behind: a list grown by
/// pushing has room for four where there is one, and a cached object keeps
/// whatever it was decoded with. `client::exact` sizes the typed lists
/// outside the metadata; these are the rest: the metadata's own lists
/// (managedFields, owner references, finalizers), and the arrays of an
/// untyped [`DynamicObject`]'s body, which `serde_json::Value` always grows
/// by pushing.
pub(crate) fn trim_spare_capacity<K: Resource + 'static>(obj: &mut K) {
    let meta = obj.meta_mut();
    if let Some(v) = meta.managed_fields.as_mut() {
        v.shrink_to_fit();
    }
    if let Some(v) = meta.owner_references.as_mut() {
        v.shrink_to_fit();
    }
    if let Some(v) = meta.finalizers.as_mut() {
        v.shrink_to_fit();
    }
    if let Some(dynamic) = (obj as &mut dyn Any).downcast_mut::<DynamicObject>() {
        shrink_arrays(&mut dynamic.data);
    }
}

/// Shrinks every array in `value` to its length. Decoded JSON nests at
/// most 128 deep (`serde_json`'s limit), which bounds the recursion.
fn shrink_arrays(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Array(items) => {
            items.shrink_to_fit();
            items.iter_mut().for_each(shrink_arrays);
        }
        serde_json::Value::Object(fields) => fields.values_mut().for_each(shrink_arrays),
        _ => {}
    }
}

fn decode_batch<K>(
    batch: &[Bytes],
    transform: Option<&Transform<K>>,
) -> Result<Vec<Arc<K>>, serde_json::Error>
where
    K: Resource + DeserializeOwned + 'static,
{
    batch
        .iter()
        .map(|item| decode_item(item, transform))
        .collect()
}

/// Batches being decoded, in list order.
type InFlight<K> = FuturesOrdered<tokio::task::JoinHandle<Result<Vec<Arc<K>>, serde_json::Error>>>;

/// One page of a list: its items are decoded, transformed and wrapped in an
/// `Arc` into `out`, in list order, as they arrive. Returns the page's
/// metadata (resourceVersion, continue token).
pub(crate) async fn fetch_page<K>(
    client: &Client,
    request: http::Request<Vec<u8>>,
    transform: Option<&Transform<K>>,
    out: &mut Vec<Arc<K>>,
) -> Result<ListMeta, client::Error>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    let what = request
        .uri()
        .path_and_query()
        .map_or_else(String::new, |pq| pq.as_str().to_owned());
    let mut body = client.request_stream(request).await?;
    let cut = transform.is_some_and(Transform::drops_managed_fields);
    let mut splitter = ItemSplitter::new(cut);
    let protocol = |problem: String| client::Error::Protocol(format!("list {what}: {problem}"));
    let parallel = std::thread::available_parallelism().map_or(1, usize::from);
    let max_in_flight = 2 * parallel;
    let mut in_flight: InFlight<K> = FuturesOrdered::new();
    let mut batch: Vec<Bytes> = Vec::new();
    let mut batch_bytes = 0usize;
    loop {
        let chunk = match tokio::time::timeout(LIST_IDLE_TIMEOUT, body.next()).await {
            Err(_) => {
                return Err(client::Error::Timeout {
                    url: what,
                    timeout: LIST_IDLE_TIMEOUT,
                })
            }
            Ok(None) => break,
            Ok(Some(chunk)) => chunk?,
        };
        splitter.push(&chunk);
        drop(chunk);
        while let Some(item) = splitter.next_item().map_err(protocol)? {
            batch_bytes += item.len();
            batch.push(item);
            if batch_bytes < BATCH_BYTES {
                continue;
            }
            // Room first: bounded work in flight keeps memory bounded.
            if in_flight.len() >= max_in_flight {
                if let Some(done) = in_flight.next().await {
                    out.extend(joined(done, &what)?);
                }
            }
            let full = std::mem::take(&mut batch);
            batch_bytes = 0;
            let transform = transform.cloned();
            in_flight.push_back(tokio::task::spawn_blocking(move || {
                reserve_heap(BATCH_BYTES);
                decode_batch(&full, transform.as_ref())
            }));
        }
    }
    let meta = splitter.finish().map_err(protocol)?;
    while let Some(done) = in_flight.next().await {
        out.extend(joined(done, &what)?);
    }
    // The rest (a whole small list) is decoded here: a thread hop would
    // cost more than it saves.
    out.extend(decode_batch(&batch, transform).map_err(|e| decode_error(&what, e))?);
    Ok(meta)
}

fn decode_error(list: &str, source: serde_json::Error) -> client::Error {
    client::Error::Decode {
        what: format!("an item of list {list}"),
        source,
    }
}

/// A decoded batch from its task. Decoding reports bad input as errors, so
/// a task that panicked ran a transform that panicked: the panic carries on
/// here, as it would had the transform run on this task.
fn joined<K>(
    done: Result<Result<Vec<Arc<K>>, serde_json::Error>, tokio::task::JoinError>,
    list: &str,
) -> Result<Vec<Arc<K>>, client::Error> {
    match done {
        Ok(decoded) => decoded.map_err(|e| decode_error(list, e)),
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(e) => Err(client::Error::Protocol(format!(
                "decoding list {list} stopped: {e}"
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"tok"},"items":[{"metadata":{"name":"a","annotations":{"x":"}]\"{["}},"data":{"k":"v\\"}},{"metadata":{"name":"b"}} , {"metadata":{"name":"c","labels":{"items":"[]"}}}]}"#;

    fn split(chunks: &[&[u8]]) -> Result<(Vec<String>, ListMeta), String> {
        let mut s = ItemSplitter::new(false);
        let mut names = Vec::new();
        for c in chunks {
            s.push(c);
            while let Some(item) = s.next_item()? {
                let v: serde_json::Value =
                    serde_json::from_slice(&item).map_err(|e| e.to_string())?;
                names.push(v["metadata"]["name"].as_str().unwrap_or("?").to_owned());
            }
        }
        Ok((names, s.finish()?))
    }

    #[test]
    fn items_and_metadata_come_out_whatever_the_chunking() {
        let body = BODY.as_bytes();
        for i in 0..=body.len() {
            for j in i..=body.len() {
                if j - i > 7 && j != body.len() {
                    continue;
                }
                let (names, meta) = split(&[&body[..i], &body[i..j], &body[j..]]).unwrap();
                assert_eq!(names, ["a", "b", "c"], "split at {i}/{j}");
                assert_eq!(meta.resource_version.as_deref(), Some("42"));
                assert_eq!(meta.continue_.as_deref(), Some("tok"));
            }
        }
        let one_by_one: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(split(&one_by_one).unwrap().0, ["a", "b", "c"]);
    }

    #[test]
    fn metadata_after_items_and_empty_or_null_items() {
        let (names, meta) = split(&[
            br#"{"items":[{"metadata":{"name":"z"}}],"metadata":{"resourceVersion":"7"}}"#,
        ])
        .unwrap();
        assert_eq!(names, ["z"]);
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        assert!(
            split(&[br#"{"metadata":{"resourceVersion":"1"},"items":[]}"#])
                .unwrap()
                .0
                .is_empty()
        );
        assert!(split(&[br#"{"metadata":{},"items":null}"#])
            .unwrap()
            .0
            .is_empty());
    }

    #[test]
    fn truncated_or_malformed_bodies_are_errors() {
        for bad in [
            &br#"{"metadata":{},"items":[{"metadata":{}}"#[..],
            br#"[1,2]"#,
            br#"{"items":[1]}"#,
            br#"{"items":[]}}"#,
            br#"{"items":[]} {"#,
            br#"{"metadata":{"resourceVersion":5},"items":[]}"#,
        ] {
            assert!(split(&[bad]).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn only_the_item_being_assembled_is_buffered() {
        let mut s = ItemSplitter::new(false);
        s.push(br#"{"metadata":{"resourceVersion":"1"},"items":["#);
        assert!(s.next_item().unwrap().is_none());
        for n in 0..1000 {
            let item = format!(
                r#"{{"metadata":{{"name":"n{n}"}},"data":{{"k":"{}"}}}},"#,
                "x".repeat(100)
            );
            s.push(item.as_bytes());
            assert!(s.next_item().unwrap().is_some());
            assert!(s.next_item().unwrap().is_none());
            assert!(s.buf.len() < 16, "buffer holds {} bytes", s.buf.len());
        }
    }

    /// The items of `body`, fed in chunks of `step` bytes, as `Value`s.
    fn items_of(body: &[u8], step: usize, cut: bool) -> Vec<serde_json::Value> {
        let mut s = ItemSplitter::new(cut);
        let mut out = Vec::new();
        for chunk in body.chunks(step) {
            s.push(chunk);
            while let Some(item) = s.next_item().unwrap() {
                out.push(
                    serde_json::from_slice(&item)
                        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&item))),
                );
            }
        }
        s.finish().unwrap();
        out
    }

    const MANAGED: &str = r#"{"metadata":{"resourceVersion":"9"},"items":[
        {"metadata":{"name":"first","managedFields":[{"manager":"a","fieldsV1":{"f:data":{"]":{}}}}],"uid":"u1"},"data":{"managedFields":"kept"}},
        {"metadata":{"name":"last","uid":"u2" , "managedFields" : [{"manager":"b"}] },"spec":{"metadata":{"managedFields":[]}}},
        {"metadata":{"managedFields":null}},
        {"metadata":{"name":"none"},"managedFields":[1]}
    ]}"#;

    #[test]
    fn managed_fields_are_cut_from_item_metadata_only_whatever_the_chunking() {
        for step in [1, 2, 3, 7, 64, MANAGED.len()] {
            let items = items_of(MANAGED.as_bytes(), step, true);
            assert_eq!(
                items,
                [
                    serde_json::json!({"metadata":{"name":"first","uid":"u1"},"data":{"managedFields":"kept"}}),
                    serde_json::json!({"metadata":{"name":"last","uid":"u2"},"spec":{"metadata":{"managedFields":[]}}}),
                    serde_json::json!({"metadata":{}}),
                    serde_json::json!({"metadata":{"name":"none"},"managedFields":[1]}),
                ],
                "chunks of {step}"
            );
        }
    }

    #[test]
    fn managed_fields_stay_unless_asked_to_cut() {
        let items = items_of(MANAGED.as_bytes(), 5, false);
        assert_eq!(items[0]["metadata"]["managedFields"][0]["manager"], "a");
        assert_eq!(items[1]["metadata"]["managedFields"][0]["manager"], "b");
        assert!(items[2]["metadata"]["managedFields"].is_null());
        assert_eq!(items[2]["metadata"].as_object().map(|m| m.len()), Some(1));
    }

    #[test]
    fn decoded_items_give_back_spare_metadata_capacity() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let item = br#"{"metadata":{"name":"a","managedFields":[{"manager":"m"}],"finalizers":["x"],"ownerReferences":[{"apiVersion":"v1","kind":"K","name":"o","uid":"u"}]}}"#;
        let cm: Arc<ConfigMap> = decode_item(item, None).unwrap();
        let meta = &cm.metadata;
        assert_eq!(meta.managed_fields.as_ref().map(Vec::capacity), Some(1));
        assert_eq!(meta.finalizers.as_ref().map(Vec::capacity), Some(1));
        assert_eq!(meta.owner_references.as_ref().map(Vec::capacity), Some(1));
    }

    #[test]
    fn an_untyped_objects_arrays_keep_no_spare_room() {
        use kube_core::DynamicObject;
        // Arrays of one, five and none, nested in arrays and objects, and
        // an array of arrays: serde_json::Value grows each by pushing.
        let item = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","finalizers":["x"]},
            "spec":{"containers":[{"name":"c","ports":[{"containerPort":1},{"containerPort":2},
            {"containerPort":3},{"containerPort":4},{"containerPort":5}],"args":[]}],
            "matrix":[[1],[2,3]]}}"#;
        let obj: Arc<DynamicObject> = decode_item(item, None).unwrap();
        fn arrays(value: &serde_json::Value, out: &mut Vec<(usize, usize)>) {
            match value {
                serde_json::Value::Array(items) => {
                    out.push((items.len(), items.capacity()));
                    items.iter().for_each(|v| arrays(v, out));
                }
                serde_json::Value::Object(fields) => fields.values().for_each(|v| arrays(v, out)),
                _ => {}
            }
        }
        let mut seen = Vec::new();
        arrays(&obj.data, &mut seen);
        let mut lengths: Vec<usize> = seen.iter().map(|(len, _)| *len).collect();
        lengths.sort_unstable();
        assert_eq!(lengths, [0, 1, 1, 2, 2, 5], "every array was visited");
        for (len, capacity) in seen {
            assert_eq!(capacity, len);
        }
        assert_eq!(obj.metadata.finalizers.as_ref().map(Vec::capacity), Some(1));
        // The same bytes through serde_json alone keep the room it grew.
        let plain: DynamicObject = serde_json::from_slice(item).unwrap();
        let ports = &plain.data["spec"]["containers"][0]["ports"];
        assert_eq!(ports.as_array().map(Vec::capacity), Some(8));
    }
}
