//! `StoredObject`: one version of one object, serialized exactly once. The
//! serialized bytes are the source of truth: beside them an object keeps
//! only a summary of what storage, selectors and preconditions read on
//! every request (where its name, namespace, uid, `apiVersion`, labels and
//! resourceVersion sit in the bytes; whether it is being deleted; the uids
//! its ownerReferences name), and parses the whole tree only when asked.
//! The bytes start with `kind` and `apiVersion`, so a built-in list item
//! (which kube-apiserver sends without them) is a zero-copy slice of the
//! same buffer; watch events wrap these bytes into frames as they are sent.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use bytes::{BufMut, Bytes, BytesMut};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub(crate) type ObjKey = (String, String);

/// A string field of the object: where its text sits in the bytes, or the
/// text itself when JSON escapes made the encoded form differ from it.
#[derive(Debug, Clone, Default)]
enum Text {
    #[default]
    Absent,
    At(u32, u32),
    Owned(Box<str>),
}

impl Text {
    /// `s` as encoded at `at` (the range of the JSON string, quotes
    /// included).
    fn of(s: &str, at: Range<usize>, bytes: &[u8]) -> Self {
        let inner = (at.start + 1)..at.end.saturating_sub(1);
        match (u32::try_from(inner.start), u32::try_from(inner.end)) {
            (Ok(a), Ok(b)) if bytes.get(inner.clone()) == Some(s.as_bytes()) => Self::At(a, b),
            _ => Self::Owned(s.into()),
        }
    }

    fn get<'a>(&'a self, bytes: &'a [u8]) -> Option<&'a str> {
        match self {
            Self::Absent => None,
            Self::At(a, b) => bytes
                .get(*a as usize..*b as usize)
                .and_then(|s| std::str::from_utf8(s).ok()),
            Self::Owned(s) => Some(s),
        }
    }

    fn shift(&mut self, from: usize, by: isize) {
        if let Self::At(a, b) = self {
            if *a as usize >= from {
                *a = (*a as isize + by) as u32;
                *b = (*b as isize + by) as u32;
            }
        }
    }
}

/// What is read of an object on every request, found while encoding it.
#[derive(Debug, Clone, Default)]
struct Summary {
    name: Text,
    namespace: Text,
    uid: Text,
    api_version: Text,
    /// The `metadata.labels` object, as a range of the bytes.
    labels: Option<(u32, u32)>,
    /// The `metadata.resourceVersion` string, quotes included.
    rv_at: Option<(u32, u32)>,
    deleting: bool,
    /// The uids `metadata.ownerReferences` name.
    owners: Box<[Box<str>]>,
}

fn range32(r: &Range<usize>) -> Option<(u32, u32)> {
    Some((u32::try_from(r.start).ok()?, u32::try_from(r.end).ok()?))
}

/// One stored object version.
pub(crate) struct StoredObject {
    /// The resourceVersion this version was written at.
    pub rv: u64,
    bytes: Bytes,
    /// Where the fields after `kind`/`apiVersion` start in `bytes`.
    rest_start: usize,
    summary: Summary,
    /// The parsed tree, once a reader asked for it through [`Self::value`],
    /// while this version is current or recently replaced.
    parsed: Mutex<Parsed>,
    /// Set once storage holds another version of the object, or none:
    /// readers that memoize what they found in a version (the
    /// service-account authenticator) know it still holds without taking
    /// the storage lock.
    replaced: AtomicBool,
}

/// Whether a version keeps its parsed tree.
#[derive(Debug, Default)]
enum Parsed {
    #[default]
    NotYet,
    Kept(Arc<Value>),
    /// Replaced in storage long enough ago (see `Store::retire`): the
    /// tree is dropped and never kept again. Only the bytes stay, for the
    /// watch history; a tree there would live as long as the event, at
    /// about ten times the bytes the history is bounded by.
    Superseded,
}

impl fmt::Debug for StoredObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredObject")
            .field("rv", &self.rv)
            .field("object", &String::from_utf8_lossy(&self.bytes))
            .finish()
    }
}

/// Writes `"key":value`, returning where the value went.
fn write_field(buf: &mut Vec<u8>, key: &str, v: &Value) -> Range<usize> {
    // Serializing a `String` and a `Value` into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *buf, key);
    buf.push(b':');
    let start = buf.len();
    let _ = serde_json::to_writer(&mut *buf, v);
    start..buf.len()
}

/// Writes `metadata`'s fields one by one, noting where the summarized ones
/// went.
fn write_metadata(buf: &mut Vec<u8>, meta: &Map<String, Value>, summary: &mut Summary) {
    buf.push(b'{');
    for (i, (k, v)) in meta.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        let at = write_field(buf, k, v);
        match (k.as_str(), v) {
            ("name", Value::String(s)) => summary.name = Text::of(s, at, buf),
            ("namespace", Value::String(s)) => summary.namespace = Text::of(s, at, buf),
            ("uid", Value::String(s)) => summary.uid = Text::of(s, at, buf),
            ("labels", Value::Object(_)) => summary.labels = range32(&at),
            ("resourceVersion", Value::String(_)) => summary.rv_at = range32(&at),
            ("deletionTimestamp", _) => summary.deleting = true,
            ("ownerReferences", Value::Array(refs)) => {
                summary.owners = refs
                    .iter()
                    .filter_map(|r| r.get("uid").and_then(Value::as_str))
                    .map(Box::from)
                    .collect();
            }
            _ => {}
        }
    }
    buf.push(b'}');
}

impl StoredObject {
    /// Serializes `value` (which already carries its resourceVersion).
    pub fn encode(value: Value, rv: u64) -> Self {
        let mut buf = Vec::with_capacity(512);
        let mut summary = Summary::default();
        buf.push(b'{');
        let mut first = true;
        let mut rest_start = None;
        if let Some(map) = value.as_object() {
            for key in ["kind", "apiVersion"] {
                if let Some(v) = map.get(key) {
                    if !first {
                        buf.push(b',');
                    }
                    let at = write_field(&mut buf, key, v);
                    if let ("apiVersion", Value::String(s)) = (key, v) {
                        summary.api_version = Text::of(s, at, &buf);
                    }
                    first = false;
                }
            }
            for (k, v) in map {
                if k == "kind" || k == "apiVersion" {
                    continue;
                }
                if !first {
                    buf.push(b',');
                }
                if rest_start.is_none() {
                    rest_start = Some(buf.len());
                }
                match (k.as_str(), v) {
                    ("metadata", Value::Object(meta)) => {
                        let _ = serde_json::to_writer(&mut buf, k);
                        buf.push(b':');
                        write_metadata(&mut buf, meta, &mut summary);
                    }
                    _ => {
                        write_field(&mut buf, k, v);
                    }
                }
                first = false;
            }
        }
        buf.push(b'}');
        let rest_start = rest_start.unwrap_or(buf.len() - 1);
        buf.shrink_to_fit();
        Self {
            rv,
            bytes: Bytes::from(buf),
            rest_start,
            summary,
            parsed: Mutex::default(),
            replaced: AtomicBool::new(false),
        }
    }

    /// This version stamped with resourceVersion `rv` (a deletion's last
    /// state, an object leaving a watcher's selection): the bytes are
    /// spliced, not re-encoded.
    pub fn with_rv(&self, rv: u64) -> Self {
        let Some((a, b)) = self.summary.rv_at else {
            let mut v = self.to_value();
            set_rv(&mut v, rv);
            return Self::encode(v, rv);
        };
        let (a, b) = (a as usize, b as usize);
        let stamp = format!("\"{rv}\"");
        let mut buf = Vec::with_capacity(self.bytes.len() + stamp.len() - (b - a));
        buf.extend_from_slice(&self.bytes[..a]);
        buf.extend_from_slice(stamp.as_bytes());
        buf.extend_from_slice(&self.bytes[b..]);
        let by = stamp.len() as isize - (b - a) as isize;
        let mut summary = self.summary.clone();
        for t in [
            &mut summary.name,
            &mut summary.namespace,
            &mut summary.uid,
            &mut summary.api_version,
        ] {
            t.shift(b, by);
        }
        if let Some((la, lb)) = &mut summary.labels {
            if *la as usize >= b {
                *la = (*la as isize + by) as u32;
                *lb = (*lb as isize + by) as u32;
            }
        }
        summary.rv_at = Some((a as u32, (b as isize + by) as u32));
        Self {
            rv,
            bytes: Bytes::from(buf),
            rest_start: self.rest_start,
            summary,
            parsed: Mutex::default(),
            replaced: AtomicBool::new(false),
        }
    }

    /// Appends the `{"type":T,"object":…}\n` watch frame for this version.
    pub fn write_frame(&self, ty: &str, out: &mut BytesMut) {
        write_frame(ty, &self.bytes, out);
    }

    /// The full JSON encoding.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The length of [`Self::write_item`]'s output.
    pub fn item_len(&self) -> usize {
        1 + self.bytes.len() - self.rest_start
    }

    /// Appends the encoding without `kind`/`apiVersion` (built-in list items).
    pub fn write_item(&self, out: &mut BytesMut) {
        out.put_u8(b'{');
        out.extend_from_slice(&self.bytes[self.rest_start..]);
    }

    /// The parsed object, parsed on first use and kept until this version
    /// is retired: for readers that come back to the same object (the
    /// workload controllers). One-off readers use [`Self::to_value`].
    pub fn value(&self) -> Arc<Value> {
        let superseded = match &*self.parsed() {
            Parsed::Kept(tree) => return Arc::clone(tree),
            Parsed::NotYet => false,
            Parsed::Superseded => true,
        };
        // Parsed outside the lock; two first readers may both parse, and
        // the first to finish is kept.
        let tree = Arc::new(parse(&self.bytes));
        if superseded {
            return tree;
        }
        let mut parsed = self.parsed();
        match &*parsed {
            Parsed::Kept(kept) => Arc::clone(kept),
            Parsed::Superseded => tree,
            Parsed::NotYet => {
                *parsed = Parsed::Kept(Arc::clone(&tree));
                tree
            }
        }
    }

    /// A parsed copy of the object, not kept.
    pub fn to_value(&self) -> Value {
        match self.kept() {
            Some(tree) => Value::clone(&tree),
            None => parse(&self.bytes),
        }
    }

    /// Storage no longer holds this version as the object's current one:
    /// it was updated, reread or deleted.
    pub(crate) fn mark_replaced(&self) {
        self.replaced.store(true, Ordering::Release);
    }

    /// Whether storage has replaced or deleted this version (a deletion's
    /// last state, never current, is marked as it is made).
    pub fn is_replaced(&self) -> bool {
        self.replaced.load(Ordering::Acquire)
    }

    /// This version was replaced a while ago: drop the parsed tree, and
    /// keep none from now on.
    pub(crate) fn supersede(&self) {
        let tree = std::mem::replace(&mut *self.parsed(), Parsed::Superseded);
        // Freed here, after the cell's lock is released.
        drop(tree);
    }

    /// Whether the parsed tree is kept with this version.
    #[cfg(test)]
    pub(crate) fn keeps_tree(&self) -> bool {
        self.kept().is_some()
    }

    fn parsed(&self) -> MutexGuard<'_, Parsed> {
        // Nothing panics while the lock is held.
        self.parsed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn kept(&self) -> Option<Arc<Value>> {
        match &*self.parsed() {
            Parsed::Kept(tree) => Some(Arc::clone(tree)),
            _ => None,
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.summary.name.get(&self.bytes).unwrap_or("")
    }

    /// `metadata.namespace`, empty when cluster-scoped.
    pub fn namespace(&self) -> &str {
        self.summary.namespace.get(&self.bytes).unwrap_or("")
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        self.summary.uid.get(&self.bytes).unwrap_or("")
    }

    /// `apiVersion`.
    pub fn api_version(&self) -> Option<&str> {
        self.summary.api_version.get(&self.bytes)
    }

    /// Whether `metadata.deletionTimestamp` is set.
    pub fn deleting(&self) -> bool {
        self.summary.deleting
    }

    /// The uids `metadata.ownerReferences` name.
    pub fn owner_uids(&self) -> &[Box<str>] {
        &self.summary.owners
    }

    /// `metadata.labels`, parsed from its slice of the bytes.
    pub fn labels(&self) -> Option<Map<String, Value>> {
        let (a, b) = self.summary.labels?;
        let slice = self.bytes.get(a as usize..b as usize)?;
        serde_json::from_slice(slice).ok()
    }

    /// The value at `path` (object keys), read from the bytes without
    /// parsing the rest; `None` when absent or not under objects.
    pub fn field(&self, path: &[String]) -> Option<Value> {
        if let Some(tree) = self.kept() {
            let mut cur = Some(&*tree);
            for seg in path {
                cur = cur.and_then(|v| v.get(seg));
            }
            return cur.cloned();
        }
        let mut de = serde_json::Deserializer::from_slice(&self.bytes);
        PathSeed(path).deserialize(&mut de).ok().flatten()
    }
}

impl crate::machinery::selectors::Selectable for StoredObject {
    fn labels(&self) -> Option<Map<String, Value>> {
        StoredObject::labels(self)
    }

    fn field(&self, path: &[String]) -> Option<Value> {
        StoredObject::field(self, path)
    }
}

/// Parses bytes this module encoded from a `Value`.
fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| {
        // Unreachable: the bytes are serde_json's own output.
        tracing::error!(error = %e, "stored object does not parse");
        Value::Null
    })
}

/// Sets `metadata.resourceVersion`.
pub(crate) fn set_rv(value: &mut Value, rv: u64) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

/// Follows object keys down a JSON document, skipping everything else
/// without building it.
struct PathSeed<'p>(&'p [String]);

impl<'de> DeserializeSeed<'de> for PathSeed<'_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        match self.0.split_first() {
            None => Value::deserialize(d).map(Some),
            Some((head, rest)) => d.deserialize_any(PathVisitor { head, rest }),
        }
    }
}

struct PathVisitor<'p> {
    head: &'p str,
    rest: &'p [String],
}

impl<'de> Visitor<'de> for PathVisitor<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
        let mut found = None;
        while let Some(is_head) = map.next_key_seed(KeyIs(self.head))? {
            if is_head && found.is_none() {
                found = map.next_value_seed(PathSeed(self.rest))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Value>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<Value>, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<Value>, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<Value>, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<Value>, E> {
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<Value>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<Value>, E> {
        Ok(None)
    }
}

/// A map key compared with `self.0` without being allocated.
struct KeyIs<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<bool, E> {
        Ok(s == self.0)
    }
}

/// The type of a watch event as a client sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change, kept in the watch history and fanned out to watchers.
#[derive(Debug)]
pub(crate) struct Event {
    pub rv: u64,
    pub key: ObjKey,
    /// The new state; for a deletion, the last state stamped with the
    /// deletion's resourceVersion.
    pub object: Arc<StoredObject>,
    /// The state before (`None` for a creation).
    pub prev: Option<Arc<StoredObject>>,
    pub deleted: bool,
    /// For watchers the object stops matching: the previous state stamped
    /// with this event's resourceVersion (what the cacher sends).
    left: OnceLock<Arc<StoredObject>>,
}

impl Event {
    /// What the event keeps alive in a history, in bytes: the JSON of the
    /// object it carries (the state before belongs to the event before).
    pub fn size(&self) -> usize {
        self.object.bytes().len()
    }

    pub fn new(
        key: ObjKey,
        object: Arc<StoredObject>,
        prev: Option<Arc<StoredObject>>,
        deleted: bool,
    ) -> Self {
        Self {
            rv: object.rv,
            key,
            object,
            prev,
            deleted,
            left: OnceLock::new(),
        }
    }

    /// The object a watcher sees with type `ty`: for an object that left
    /// the watcher's selection, its previous state at this event's
    /// resourceVersion.
    pub fn object_for(&self, ty: EventType) -> Arc<StoredObject> {
        match (&self.prev, ty, self.deleted) {
            (Some(prev), EventType::Deleted, false) => self
                .left
                .get_or_init(|| {
                    let left = prev.with_rv(self.rv);
                    left.supersede();
                    Arc::new(left)
                })
                .clone(),
            _ => self.object.clone(),
        }
    }

    /// Appends `{"type":T,"object":…}\n` for a watcher that sees type `ty`.
    pub fn write_frame(&self, ty: EventType, out: &mut BytesMut) {
        if ty == EventType::Deleted && !self.deleted && self.prev.is_some() {
            self.object_for(ty).write_frame(ty.as_str(), out);
        } else {
            self.object.write_frame(ty.as_str(), out);
        }
    }
}

/// Appends a watch frame around already-encoded object bytes.
pub(crate) fn write_frame(ty: &str, object: &[u8], out: &mut BytesMut) {
    out.reserve(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(ty.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
}

/// A watch frame around already-encoded object bytes.
pub(crate) fn frame(ty: &str, object: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(object.len() + 32);
    write_frame(ty, object, &mut out);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn item_is_object_without_type_meta() {
        let o = StoredObject::encode(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}, "metadata": {"name": "x"}}),
            3,
        );
        let full: Value = serde_json::from_slice(o.bytes()).unwrap();
        assert_eq!(full["kind"], "ConfigMap");
        assert!(o
            .bytes()
            .starts_with(br#"{"kind":"ConfigMap","apiVersion":"v1","#));
        let mut buf = BytesMut::new();
        o.write_item(&mut buf);
        let item: Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(item, json!({"data": {"a": "b"}, "metadata": {"name": "x"}}));
    }

    fn pod() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web-0",
                "namespace": "prod",
                "uid": "u-1",
                "resourceVersion": "7",
                "labels": {"app": "web", "tier": "front"},
                "ownerReferences": [{"uid": "rs-1", "kind": "ReplicaSet"}, {"uid": "rs-2"}],
                "deletionTimestamp": "2024-01-01T00:00:00Z",
            },
            "spec": {"nodeName": "n1", "priority": 5, "containers": [{"name": "c"}]},
            "status": {"phase": "Running"},
        })
    }

    #[test]
    fn summary_is_read_from_the_bytes() {
        let o = StoredObject::encode(pod(), 7);
        assert_eq!(o.name(), "web-0");
        assert_eq!(o.namespace(), "prod");
        assert_eq!(o.uid(), "u-1");
        assert_eq!(o.api_version(), Some("v1"));
        assert!(o.deleting());
        let owners: Vec<&str> = o.owner_uids().iter().map(|u| &**u).collect();
        assert_eq!(owners, ["rs-1", "rs-2"]);
        let labels = o.labels().expect("labels");
        assert_eq!(labels["app"], "web");
        assert_eq!(labels.len(), 2);
        assert_eq!(o.to_value(), pod());
        assert_eq!(*o.value(), pod());
        // A bare object has none of it.
        let bare = StoredObject::encode(json!({"kind": "A", "metadata": {}}), 1);
        assert_eq!((bare.name(), bare.uid(), bare.namespace()), ("", "", ""));
        assert!(!bare.deleting() && bare.labels().is_none() && bare.api_version().is_none());
    }

    #[test]
    fn escaped_names_are_kept_as_text() {
        let o = StoredObject::encode(
            json!({"apiVersion": "a/\"v1", "kind": "K", "metadata": {"name": "a\"b\\c", "uid": "é"}}),
            1,
        );
        assert_eq!(o.name(), "a\"b\\c");
        assert_eq!(o.uid(), "é");
        assert_eq!(o.api_version(), Some("a/\"v1"));
    }

    #[test]
    fn restamping_splices_the_resource_version() {
        let o = StoredObject::encode(pod(), 7);
        for rv in [123_456_789u64, 8] {
            let s = o.with_rv(rv);
            assert_eq!(s.rv, rv);
            let mut want = pod();
            want["metadata"]["resourceVersion"] = json!(rv.to_string());
            assert_eq!(s.to_value(), want);
            // Fields after the resourceVersion moved with it.
            assert_eq!((s.name(), s.uid(), s.namespace()), ("web-0", "u-1", "prod"));
            assert_eq!(s.labels().expect("labels")["tier"], "front");
            let again = s.with_rv(rv + 1);
            assert_eq!(again.uid(), "u-1");
            assert_eq!(
                again.to_value()["metadata"]["resourceVersion"],
                (rv + 1).to_string()
            );
        }
        // Without a resourceVersion to splice, it is added.
        let bare = StoredObject::encode(json!({"kind": "A", "metadata": {"name": "x"}}), 1);
        let s = bare.with_rv(5);
        assert_eq!(s.to_value()["metadata"]["resourceVersion"], "5");
        assert_eq!(s.name(), "x");
    }

    #[test]
    fn a_field_is_read_without_parsing_the_rest() {
        let o = StoredObject::encode(pod(), 7);
        let path = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(o.field(&path("spec.nodeName")), Some(json!("n1")));
        assert_eq!(o.field(&path("spec.priority")), Some(json!(5)));
        assert_eq!(o.field(&path("status.phase")), Some(json!("Running")));
        assert_eq!(o.field(&path("spec.containers.name")), None);
        assert_eq!(o.field(&path("spec.nodeName.x")), None);
        assert_eq!(o.field(&path("spec.missing")), None);
        // The parsed tree answers the same once it exists.
        let _ = o.value();
        assert_eq!(o.field(&path("spec.nodeName")), Some(json!("n1")));
        assert_eq!(o.field(&path("spec.containers.name")), None);
    }

    #[test]
    fn frames_wrap_the_stored_bytes() {
        let o = Arc::new(StoredObject::encode(
            json!({"kind": "A", "metadata": {"resourceVersion": "1"}}),
            1,
        ));
        let e = Event::new((String::new(), "a".into()), o, None, false);
        let mut out = BytesMut::new();
        e.write_frame(EventType::Added, &mut out);
        e.write_frame(EventType::Modified, &mut out);
        let frames: Vec<Value> = out[..]
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0]["type"], "ADDED");
        assert_eq!(frames[1]["type"], "MODIFIED");
        assert_eq!(frames[1]["object"]["kind"], "A");
    }
}
