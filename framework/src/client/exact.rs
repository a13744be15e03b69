//! Decoding objects with every list sized to its length.
//!
//! `serde_json` cannot tell how long an array is before reading it, so
//! serde builds each `Vec` by pushing, and the vector keeps the capacity it
//! grew to: room for four elements where one was read (a Pod's lone
//! container status carries 2.2 KiB of empty slots), eight where five were.
//! A cache keeps every object it decodes for as long as it lives (where
//! kube-runtime's store keeps a deep clone, sized exactly, at the cost of
//! the copy). So [`from_slice`] decodes through a thin layer over
//! `serde_json` that tells each sequence its length when a `Vec` asks, from
//! a count of the elements of the arrays in the bytes: a scan that tracks
//! only strings and nesting, run as far as the arrays asked about so far
//! need (an object without lists outside its metadata is not scanned at
//! all). Maps are unaffected (a `BTreeMap` has no spare capacity to give
//! back) and so is every value: only the sizes of allocations change.
//!
//! The object's own `metadata` lists are left to the reflector's
//! trimming, which costs less than counting through managedFields.
//!
//! The counts are handed out in the order arrays open in the text, which
//! is the order `serde_json` reads them in, provided nothing skips a value
//! unseen: ignored fields are read through this layer too rather than
//! skipped. Should the two ever disagree (an array that ends at another
//! length than its count), the rest of the object is decoded without
//! lengths, as plain `serde_json` would. Reading an ignored field checks
//! more than skipping it does, so an object this decoding refuses is
//! decoded again by `serde_json` alone: the result, value or error, is
//! always `serde_json`'s.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

/// Decodes `json` as `serde_json::from_slice` does, with every sequence
/// outside `metadata` allocated at its length. Its result is always
/// serde_json's: what fails here is decoded again by serde_json alone.
pub(crate) fn from_slice<T: DeserializeOwned>(json: &[u8]) -> serde_json::Result<T> {
    let lengths = Lengths::new(json);
    let mut de = serde_json::Deserializer::from_slice(json);
    let exact = T::deserialize(Exact {
        de: &mut de,
        lengths: &lengths,
    })
    .and_then(|value| de.end().map(|()| value));
    // Reading an ignored value is stricter than skipping it (see
    // `deserialize_ignored_any`), so a failure is not yet serde_json's
    // verdict. Bad input is rare; decoding it twice costs little.
    exact.or_else(|_| serde_json::from_slice(json))
}

/// The element counts of the arrays in a text, counted as far as asked,
/// and where the decoder stands among them.
struct Lengths<'j> {
    scan: RefCell<Scan<'j>>,
    /// How many arrays the decoder has opened.
    opened: Cell<usize>,
    /// How deep in maps the decoder is: the object itself is at 1.
    depth: Cell<u32>,
    /// Reading a key of the object itself.
    noting_key: Cell<bool>,
    /// The last key read of the object itself was `metadata`.
    metadata_key: Cell<bool>,
    /// Reading the object's `metadata`: its lists (managedFields, owner
    /// references, finalizers) are trimmed after the decode instead, which
    /// costs less than counting through managedFields.
    in_metadata: Cell<bool>,
    /// Set once a sequence ended at a length other than its count.
    lost: Cell<bool>,
}

impl<'j> Lengths<'j> {
    fn new(json: &'j [u8]) -> Self {
        Self {
            scan: RefCell::new(Scan {
                json,
                at: 0,
                of: Vec::new(),
                open: Vec::new(),
                counting: None,
            }),
            opened: Cell::new(0),
            depth: Cell::new(0),
            noting_key: Cell::new(false),
            metadata_key: Cell::new(false),
            in_metadata: Cell::new(false),
            lost: Cell::new(false),
        }
    }

    /// Notes whether a string read is the object's `metadata` key.
    fn note_key(&self, s: &str) {
        if self.noting_key.get() {
            self.metadata_key.set(s == "metadata");
        }
    }

    /// An array opens: its index among the text's arrays.
    fn open(&self) -> usize {
        let index = self.opened.get();
        self.opened.set(index + 1);
        index
    }

    /// The element count of array `index`, when worth giving.
    fn count(&self, index: usize) -> Option<usize> {
        if self.lost.get() || self.in_metadata.get() {
            return None;
        }
        self.scan.borrow_mut().count(index)
    }
}

/// A resumable count of array elements: each array's count is known once
/// the scan has passed its closing bracket. Text that is not JSON gives
/// counts that are merely wrong; the decoder reports the error.
struct Scan<'j> {
    json: &'j [u8],
    /// The next byte to look at.
    at: usize,
    /// Per array, in the order they open: its count so far, and in the
    /// [`CLOSED`] bit whether it has closed.
    of: Vec<u32>,
    /// The open containers: each array's index in `of`, `OBJECT` for
    /// objects.
    open: Vec<usize>,
    /// The innermost open container, when it is an array.
    counting: Option<usize>,
}

/// Set in a count once its array has closed.
const CLOSED: u32 = 1 << 31;

impl Scan<'_> {
    /// The count of array `index`, scanning on until it has closed.
    fn count(&mut self, index: usize) -> Option<usize> {
        let closed = |of: &[u32]| of.get(index).is_some_and(|&n| n & CLOSED != 0);
        if !closed(&self.of) {
            self.scan_until_closed(index);
        }
        closed(&self.of).then(|| (self.of[index] & !CLOSED) as usize)
    }

    fn scan_until_closed(&mut self, index: usize) {
        let json = self.json;
        let of = &mut self.of;
        let open = &mut self.open;
        let mut at = self.at;
        let mut counting = self.counting;
        while let Some(&byte) = json.get(at) {
            at += 1;
            match byte {
                b'"' => at = string_end(json, at),
                b',' => {
                    if let Some(i) = counting {
                        of[i] = (of[i] + 1).min(CLOSED - 1);
                    }
                }
                b'[' => {
                    let rest = json.get(at..).unwrap_or_default();
                    let first = rest.iter().find(|b| !b.is_ascii_whitespace());
                    counting = Some(of.len());
                    open.push(of.len());
                    of.push(u32::from(first.is_some_and(|&b| b != b']')));
                }
                b'{' => {
                    open.push(OBJECT);
                    counting = None;
                }
                b']' | b'}' => {
                    let closing = open.pop().filter(|&i| i != OBJECT);
                    counting = open.last().copied().filter(|&i| i != OBJECT);
                    if let Some(i) = closing {
                        of[i] |= CLOSED;
                        if i == index {
                            break;
                        }
                    }
                }
                _ => {}
            }
        }
        self.at = at;
        self.counting = counting;
    }
}

/// Marks an open object among [`Scan::open`].
const OBJECT: usize = usize::MAX;

/// Where the string whose contents start at `from` ends (just past its
/// closing quote), or the end of the text.
fn string_end(json: &[u8], mut from: usize) -> usize {
    loop {
        let Some(at) = quote_or_backslash(json, from) else {
            return json.len();
        };
        if json[at] == b'"' {
            return at + 1;
        }
        // An escape: the next byte is part of it, whatever it is.
        from = at + 2;
    }
}

/// The first `"` or `\` at or after `from`. Eight bytes at a time: most
/// strings are a few words long, too short for memchr's set-up to pay.
fn quote_or_backslash(json: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Flags the zero bytes of `x`: the lowest flag is always right (a
    // borrow can only flag bytes above a real zero), and only it is used.
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut at = from;
    while let Some(word) = json.get(at..at + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let w = u64::from_le_bytes(bytes);
        let found =
            zero_byte(w ^ (ONES * u64::from(b'"'))) | zero_byte(w ^ (ONES * u64::from(b'\\')));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = json.get(at..)?;
    tail.iter()
        .position(|&b| b == b'"' || b == b'\\')
        .map(|i| at + i)
}

/// A deserializer that hands sequences their lengths.
struct Exact<'l, D> {
    de: D,
    lengths: &'l Lengths<'l>,
}

/// A visitor whose sequences, maps, options, newtypes and enums are read
/// through [`Exact`] too.
struct Wrap<'l, V> {
    visitor: V,
    lengths: &'l Lengths<'l>,
}

/// A sequence that knows its length.
struct ExactSeq<'l, A> {
    seq: A,
    lengths: &'l Lengths<'l>,
    /// Its index among the text's arrays.
    index: usize,
    /// The count given as its size hint, if one was.
    hinted: Cell<Option<usize>>,
    seen: usize,
}

struct ExactMap<'l, A> {
    map: A,
    lengths: &'l Lengths<'l>,
}

struct ExactEnum<'l, A> {
    data: A,
    lengths: &'l Lengths<'l>,
}

struct ExactSeed<'l, S> {
    seed: S,
    lengths: &'l Lengths<'l>,
}

impl<'l, V> Wrap<'l, V> {
    fn new(visitor: V, lengths: &'l Lengths<'l>) -> Self {
        Self { visitor, lengths }
    }
}

/// Forwards `deserialize_*` methods to the wrapped deserializer with the
/// visitor wrapped.
macro_rules! forward_wrapped {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.de.$method($($arg,)* Wrap::new(visitor, self.lengths))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Exact<'_, D> {
    type Error = D::Error;

    forward_wrapped! {
        deserialize_any(), deserialize_bool(), deserialize_i8(), deserialize_i16(),
        deserialize_i32(), deserialize_i64(), deserialize_i128(), deserialize_u8(),
        deserialize_u16(), deserialize_u32(), deserialize_u64(), deserialize_u128(),
        deserialize_f32(), deserialize_f64(), deserialize_char(), deserialize_str(),
        deserialize_string(), deserialize_bytes(), deserialize_byte_buf(),
        deserialize_option(), deserialize_unit(),
        deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str),
        deserialize_seq(), deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_map(),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
        deserialize_identifier(),
    }

    /// Read, not skipped, so that the arrays inside an ignored value use up
    /// their counts. Reading checks what a skip passes over (a string's
    /// UTF-8, a lone surrogate escape, a number beyond `f64`); no API
    /// server sends those, and [`from_slice`] hands such input to plain
    /// serde_json.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.de.deserialize_any(Wrap::new(visitor, self.lengths))
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

/// Forwards `visit_*` methods that carry a plain value.
macro_rules! forward_visits {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(
            fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
                self.visitor.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    forward_visits! {
        visit_bool(bool), visit_i8(i8), visit_i16(i16), visit_i32(i32), visit_i64(i64),
        visit_i128(i128), visit_u8(u8), visit_u16(u16), visit_u32(u32), visit_u64(u64),
        visit_u128(u128), visit_f32(f32), visit_f64(f64), visit_char(char),
        visit_bytes(&[u8]), visit_borrowed_bytes(&'de [u8]), visit_byte_buf(Vec<u8>),
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        self.lengths.note_key(v);
        self.visitor.visit_str(v)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.lengths.note_key(v);
        self.visitor.visit_borrowed_str(v)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        self.lengths.note_key(&v);
        self.visitor.visit_string(v)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        self.visitor.visit_some(Exact {
            de,
            lengths: self.lengths,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        self.visitor.visit_newtype_struct(Exact {
            de,
            lengths: self.lengths,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_seq(ExactSeq {
            seq,
            lengths: self.lengths,
            index: self.lengths.open(),
            hinted: Cell::new(None),
            seen: 0,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        let depth = &self.lengths.depth;
        depth.set(depth.get() + 1);
        let map = self.visitor.visit_map(ExactMap {
            map,
            lengths: self.lengths,
        });
        depth.set(depth.get() - 1);
        map
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_enum(ExactEnum {
            data,
            lengths: self.lengths,
        })
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for ExactSeq<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        let next = self.seq.next_element_seed(ExactSeed {
            seed,
            lengths: self.lengths,
        })?;
        match next {
            Some(_) => self.seen += 1,
            None if self.hinted.get().is_some_and(|n| n != self.seen) => {
                self.lengths.lost.set(true);
            }
            None => {}
        }
        Ok(next)
    }

    fn size_hint(&self) -> Option<usize> {
        let count = self.hinted.get().or_else(|| self.lengths.count(self.index));
        self.hinted.set(count);
        match count {
            Some(n) => Some(n.saturating_sub(self.seen)),
            None => self.seq.size_hint(),
        }
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for ExactMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let lengths = self.lengths;
        let top = lengths.depth.get() == 1;
        lengths.noting_key.set(top);
        let key = self.map.next_key_seed(ExactSeed { seed, lengths });
        lengths.noting_key.set(false);
        key
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        let lengths = self.lengths;
        if lengths.depth.get() != 1 {
            return self.map.next_value_seed(ExactSeed { seed, lengths });
        }
        lengths.in_metadata.set(lengths.metadata_key.get());
        let value = self.map.next_value_seed(ExactSeed { seed, lengths });
        lengths.in_metadata.set(false);
        value
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

impl<'de, 'l, A: EnumAccess<'de>> EnumAccess<'de> for ExactEnum<'l, A> {
    type Error = A::Error;
    type Variant = ExactEnum<'l, A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Self::Variant), A::Error> {
        let lengths = self.lengths;
        let (value, data) = self.data.variant_seed(ExactSeed { seed, lengths })?;
        Ok((value, ExactEnum { data, lengths }))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for ExactEnum<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.data.unit_variant()
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        self.data.newtype_variant_seed(ExactSeed {
            seed,
            lengths: self.lengths,
        })
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.data
            .tuple_variant(len, Wrap::new(visitor, self.lengths))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.data
            .struct_variant(fields, Wrap::new(visitor, self.lengths))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for ExactSeed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(Exact {
            de,
            lengths: self.lengths,
        })
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use serde::Deserialize;
    use serde_json::{json, Value};

    use super::*;

    /// A Pod as a kubeadm cluster serves it: two managedFields entries, one
    /// container, five conditions, a projected volume.
    const POD: &str = include_str!("exact_pod.json");

    fn same_as_serde_json<T>(json: &str) -> T
    where
        T: DeserializeOwned + PartialEq + fmt::Debug,
    {
        let exact: T = from_slice(json.as_bytes()).unwrap();
        let plain: T = serde_json::from_str(json).unwrap();
        assert_eq!(exact, plain);
        exact
    }

    #[test]
    fn a_pods_lists_outside_metadata_are_allocated_at_their_lengths() {
        let pod: Pod = same_as_serde_json(POD);
        let spec = pod.spec.as_ref().unwrap();
        let status = pod.status.as_ref().unwrap();
        let container = &spec.containers[0];
        let exact = [
            (spec.containers.len(), spec.containers.capacity()),
            (
                spec.tolerations.as_ref().unwrap().len(),
                spec.tolerations.as_ref().unwrap().capacity(),
            ),
            (
                spec.volumes.as_ref().unwrap().len(),
                spec.volumes.as_ref().unwrap().capacity(),
            ),
            (
                container.env.as_ref().unwrap().len(),
                container.env.as_ref().unwrap().capacity(),
            ),
            (
                container.ports.as_ref().unwrap().len(),
                container.ports.as_ref().unwrap().capacity(),
            ),
            (
                container.volume_mounts.as_ref().unwrap().len(),
                container.volume_mounts.as_ref().unwrap().capacity(),
            ),
            (
                status.conditions.as_ref().unwrap().len(),
                status.conditions.as_ref().unwrap().capacity(),
            ),
            (
                status.container_statuses.as_ref().unwrap().len(),
                status.container_statuses.as_ref().unwrap().capacity(),
            ),
        ];
        for (i, (len, capacity)) in exact.into_iter().enumerate() {
            assert_eq!(capacity, len, "list {i}");
        }
        let plain: Pod = serde_json::from_str(POD).unwrap();
        let plain_statuses = plain.status.unwrap().container_statuses.unwrap();
        assert_eq!(
            plain_statuses.capacity(),
            4,
            "serde_json alone leaves room for four"
        );
        // Metadata's lists are the trimming's (`trim_spare_capacity`), not counted.
        assert_eq!(pod.metadata.managed_fields.unwrap().len(), 2);
    }

    #[test]
    fn nested_empty_escaped_and_spaced_arrays_decode_as_serde_json_does() {
        #[derive(Debug, PartialEq, Deserialize)]
        struct Doc {
            outer: Vec<Vec<String>>,
            empty: Vec<u8>,
            spaced: Vec<u32>,
            text: String,
            #[serde(default)]
            after: Vec<i64>,
        }
        let json = r#"{"outer": [ ["a", "b,]", "c\"],["], [], [ "\\" ] ],
            "empty": [ ], "spaced": [ 1 , 2 ,3 ],
            "ignored": {"x": [[1, 2], [3]], "y": "[,]"},
            "text": "[[,,]]", "also_ignored": [{"a": [1]}, 2],
            "after": [1, 2, 3, 4, 5]}"#;
        let doc: Doc = same_as_serde_json(json);
        assert_eq!(doc.outer[0], ["a", "b,]", "c\"],["]);
        for list in &doc.outer {
            assert_eq!(list.capacity(), list.len());
        }
        assert_eq!(doc.outer.capacity(), 3);
        assert_eq!(doc.empty.capacity(), 0);
        assert_eq!(doc.spaced.capacity(), 3);
        // Arrays in ignored fields used up their counts: the last one is
        // still sized.
        assert_eq!(doc.after.capacity(), 5);
    }

    #[test]
    fn untyped_values_enums_and_options_decode_as_serde_json_does() {
        let value = json!({"a": [1, [2, 3], {"b": [null, true]}], "c": "[]"});
        let text = value.to_string();
        let back: Value = same_as_serde_json(&text);
        assert_eq!(back, value);
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "finalizers": ["a", "b"]},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                     "template": {"spec": {"containers": [{"name": "c", "args": ["x", "y"]}]}}}
        });
        let d: Deployment = same_as_serde_json(&deployment.to_string());
        let spec = d.spec.template.spec.unwrap();
        let args = spec.containers[0].args.as_ref().unwrap();
        assert_eq!(args.capacity(), 2);
        let cm: ConfigMap =
            same_as_serde_json(r#"{"metadata": {"name": "x"}, "data": {"k": "v"}}"#);
        assert_eq!(cm.data.unwrap()["k"], "v");
    }

    #[test]
    fn watch_events_and_dynamic_objects_decode_as_serde_json_does() {
        use kube_core::{DynamicObject, WatchEvent};
        let event = format!(r#"{{"type": "MODIFIED", "object": {POD}}}"#);
        let WatchEvent::Modified(pod) = from_slice::<WatchEvent<Pod>>(event.as_bytes()).unwrap()
        else {
            panic!("not a MODIFIED event");
        };
        assert_eq!(pod, serde_json::from_str::<Pod>(POD).unwrap());
        let statuses = pod.status.unwrap().container_statuses.unwrap();
        assert_eq!(statuses.capacity(), 1, "an event's object is sized too");
        let error =
            r#"{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}"#;
        assert!(matches!(
            from_slice::<WatchEvent<Pod>>(error.as_bytes()),
            Ok(WatchEvent::Error(e)) if e.code == 410
        ));
        let dynamic: DynamicObject = same_as_serde_json(POD);
        assert_eq!(dynamic.data["spec"]["containers"][0]["name"], "web");
    }

    #[test]
    fn bad_json_is_refused_as_serde_json_refuses_it() {
        for bad in [
            "",
            "{",
            r#"{"metadata": {"name": 1}}"#,
            r#"{"spec": {"containers": [{"name": "a"},]}}"#,
            r#"{"spec": {"containers": [}}"#,
            r#"{"spec": {"containers": []]}}"#,
            r#"{"a": "unterminated"#,
            r#"{} trailing"#,
            "[[[[[[[[",
        ] {
            let exact = from_slice::<Pod>(bad.as_bytes()).map_err(|e| e.to_string());
            let plain = serde_json::from_str::<Pod>(bad).map_err(|e| e.to_string());
            assert_eq!(exact, plain, "{bad}");
            assert!(exact.is_err());
        }
    }

    /// JSON lets a key repeat. A map (and a k8s-openapi type) keeps the
    /// last value, so the arrays read before it were counted and dropped,
    /// and the counts still line up with the arrays the decode asks about;
    /// a derived struct refuses the repeat, here as with serde_json alone.
    #[test]
    fn repeated_keys_decode_as_serde_json_does() {
        let maps: std::collections::BTreeMap<String, Vec<Vec<u32>>> =
            same_as_serde_json(r#"{"a": [[1, 2, 3]], "b": [[4]], "a": [[5], [6, 7]]}"#);
        let a = &maps["a"];
        assert_eq!(a, &[vec![5], vec![6, 7]]);
        assert_eq!(a.capacity(), 2);
        assert_eq!(a[1].capacity(), 2);
        assert_eq!(maps["b"][0].capacity(), 1);

        let pod: Pod = same_as_serde_json(
            r#"{"metadata": {"labels": {"x": "1", "x": "2"}},
                "spec": {"containers": [{"name": "a", "env": [{"name": "E", "value": "1"},
                    {"name": "F"}]}], "nodeSelector": {"k": "v", "k": "w"}}}"#,
        );
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.node_selector.as_ref().unwrap()["k"], "w");
        let env = spec.containers[0].env.as_ref().unwrap();
        assert_eq!((env.len(), env.capacity()), (2, 2));

        // k8s-openapi's types keep a field's last value, as maps do.
        let pod: Pod = same_as_serde_json(
            r#"{"spec": {"containers": [{"name": "a"}, {"name": "b"}], "containers": [{"name": "c"}]}}"#,
        );
        let containers = &pod.spec.as_ref().unwrap().containers;
        assert_eq!(containers[0].name, "c");
        assert_eq!((containers.len(), containers.capacity()), (1, 1));

        // A derived struct refuses a field given twice.
        let twice = r#"{"kids": [], "tags": ["a", "b"], "tags": ["c"]}"#;
        let exact = from_slice::<Node>(twice.as_bytes()).map_err(|e| e.to_string());
        let plain = serde_json::from_str::<Node>(twice).map_err(|e| e.to_string());
        assert_eq!(exact, plain);
        assert!(exact.is_err(), "{exact:?}");
    }

    /// A tree of lists, with a field the type does not have (arrays and
    /// objects of any shape) among its own.
    #[derive(Debug, PartialEq, Deserialize)]
    struct Node {
        kids: Vec<Node>,
        tags: Vec<String>,
        #[serde(default)]
        nums: Vec<i64>,
    }

    impl Node {
        fn all_exact(&self) -> bool {
            self.kids.capacity() == self.kids.len()
                && self.tags.capacity() == self.tags.len()
                && self.nums.capacity() == self.nums.len()
                && self.kids.iter().all(Node::all_exact)
        }
    }

    fn junk() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from),
            "[a-z\\[\\],{}:\"\\\\ ]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map("[a-z]{1,3}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn node() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let tags = || proptest::collection::vec("[a-z\\[\\],\"\\\\]{0,5}", 0..4);
        let leaf = (
            tags(),
            proptest::collection::vec(any::<i64>(), 0..6),
            junk(),
        )
            .prop_map(
                |(tags, nums, skip)| json!({"kids": [], "tags": tags, "nums": nums, "skip": skip}),
            );
        leaf.prop_recursive(4, 32, 5, move |inner| {
            (proptest::collection::vec(inner, 0..5), tags(), junk())
                .prop_map(|(kids, tags, skip)| json!({"kids": kids, "skip": skip, "tags": tags}))
        })
    }

    proptest::proptest! {
        /// Whatever the shape, spacing and ignored fields, the values are
        /// serde_json's and every list is at its length: the counts never
        /// fall out of step with the decoder.
        #[test]
        fn any_tree_of_lists_decodes_as_serde_json_does_with_every_list_exact(
            tree in node(),
            pretty in proptest::bool::ANY,
        ) {
            let text = if pretty {
                serde_json::to_string_pretty(&tree).unwrap()
            } else {
                tree.to_string()
            };
            let exact: Node = from_slice(text.as_bytes()).unwrap();
            let plain: Node = serde_json::from_str(&text).unwrap();
            proptest::prop_assert_eq!(&exact, &plain);
            proptest::prop_assert!(exact.all_exact(), "{}", text);
            let value: Value = from_slice(text.as_bytes()).unwrap();
            proptest::prop_assert_eq!(value, tree);
        }
    }

    #[test]
    fn ignored_fields_a_skip_passes_over_still_decode_as_serde_json_does() {
        // Found by the fuzzer: reading an ignored value checks its UTF-8,
        // its escapes and its numbers, which serde_json's skip does not.
        let mut invalid_utf8 = br#"{"metadata": {"name": "a"}, "junk": "x"#.to_vec();
        invalid_utf8.extend_from_slice(&[0xff, 0xfe]);
        invalid_utf8.extend_from_slice(br#"", "data": {"k": "v"}}"#);
        let lone_surrogate =
            br#"{"metadata": {"name": "a"}, "junk": "\ud800", "data": {"k": "v"}}"#;
        let huge = br#"{"junk": [1e400], "metadata": {"name": "a"}, "data": {"k": "v"}}"#;
        for json in [&invalid_utf8[..], lone_surrogate, huge] {
            let plain = serde_json::from_slice::<ConfigMap>(json).map_err(|e| e.to_string());
            let exact = from_slice::<ConfigMap>(json).map_err(|e| e.to_string());
            assert_eq!(exact, plain, "{}", String::from_utf8_lossy(json));
        }
        assert!(
            from_slice::<ConfigMap>(&invalid_utf8).is_ok(),
            "serde_json skips it"
        );
    }

    #[test]
    fn a_count_that_disagrees_with_the_decoder_stops_the_hints() {
        let lengths = Lengths::new(b"[1, 2]");
        let index = lengths.open();
        assert_eq!(lengths.count(index), Some(2));
        lengths.lost.set(true);
        assert_eq!(lengths.count(index), None, "no hints once lost");
        // And an index past the text's arrays has no count.
        let fresh = Lengths::new(b"[1]");
        assert_eq!(fresh.count(5), None);
    }
}
