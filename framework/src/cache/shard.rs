//! A shard of a collection: the objects whose uid (or namespace) hashes
//! into one range of the 64-bit FNV-1a hash, as KEP-5866's `shardSelector`
//! defines it (`shardRange(object.metadata.uid, '0x…', '0x…')`, ranges
//! `[start, end)`, the hash of `k8s.io/apimachinery` `pkg/sharding`).
//!
//! An informer given a [`Shard`] lists and watches with its selector, so a
//! server that serves sharded lists (Kubernetes 1.36 with
//! `ShardedListAndWatch`) sends only the shard; and it checks every object
//! against the range itself, so against a server that ignores the
//! parameter the cache still holds only its shard (the bytes still
//! arrive). A uid and a namespace never change, so an object never moves
//! between shards.
//!
//! A sharded controller's replicas split the uid hash into [`SLOTS`] equal
//! slots and hand them between each other as they join and leave (see
//! [`crate::sharding`]); an informer given [`Holdings`] follows the slots
//! its replica holds, listing again with the new selector each time they
//! change.

use std::fmt;
use std::sync::{Arc, OnceLock};

use kube_core::Resource;
use tokio::sync::watch;

/// What a shard hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ShardBy {
    /// `object.metadata.uid`: objects spread evenly.
    Uid,
    /// `object.metadata.namespace`: a namespace stays in one shard.
    Namespace,
}

impl ShardBy {
    fn path(self) -> &'static str {
        match self {
            Self::Uid => "object.metadata.uid",
            Self::Namespace => "object.metadata.namespace",
        }
    }
}

/// One range `[start, end)` of the hash space (`end` up to 2^64).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard {
    by: ShardBy,
    start: u128,
    end: u128,
}

const SPACE: u128 = 1 << 64;

impl Shard {
    /// Shard `index` of `count` equal ranges of the uid hash: together the
    /// `count` shards hold every object exactly once. `None` when `count`
    /// is zero or `index` is not below it.
    pub fn of(index: u32, count: u32) -> Option<Self> {
        if index >= count {
            return None;
        }
        let bound = |i: u32| SPACE * u128::from(i) / u128::from(count);
        Some(Self {
            by: ShardBy::Uid,
            start: bound(index),
            end: bound(index + 1),
        })
    }

    /// The same range of the namespace's hash instead.
    pub fn by(mut self, by: ShardBy) -> Self {
        self.by = by;
        self
    }

    /// The `shardSelector` the server is sent.
    pub fn selector(&self) -> String {
        format!(
            "shardRange({}, '0x{:016x}', '0x{:016x}')",
            self.by.path(),
            self.start,
            self.end
        )
    }

    /// Whether `obj` is in this shard.
    pub fn contains<K: Resource>(&self, obj: &K) -> bool {
        let meta = obj.meta();
        let value = match self.by {
            ShardBy::Uid => meta.uid.as_deref(),
            ShardBy::Namespace => meta.namespace.as_deref(),
        };
        let hash = u128::from(fnv1a64(value.unwrap_or("").as_bytes()));
        self.start <= hash && hash < self.end
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.selector())
    }
}

/// How many slots the uid hash is cut into for sharded controllers: a
/// power of two, so a slot is the hash's top bits, and enough that 16
/// replicas hold within 7% of an equal share.
pub const SLOTS: u32 = 128;

/// The bits of the hash below a slot's.
const SLOT_SHIFT: u32 = 64 - SLOTS.trailing_zeros();

/// A set of slots (of [`SLOTS`]) of the uid hash: slot `i` is the range
/// `[i·2^57, (i+1)·2^57)`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Slots(u128);

impl Slots {
    /// No slot.
    pub const NONE: Self = Self(0);
    /// Every slot.
    pub const ALL: Self = Self(u128::MAX);

    /// The slot an object with this uid is in.
    pub fn slot_of_uid(uid: &str) -> u32 {
        (fnv1a64(uid.as_bytes()) >> SLOT_SHIFT) as u32
    }

    /// The slot `obj` is in (by its uid).
    pub fn slot_of<K: Resource>(obj: &K) -> u32 {
        Self::slot_of_uid(obj.meta().uid.as_deref().unwrap_or(""))
    }

    /// These slots and `slot` (ignored unless below [`SLOTS`]).
    #[must_use]
    pub fn with(self, slot: u32) -> Self {
        if slot >= SLOTS {
            return self;
        }
        Self(self.0 | 1 << slot)
    }

    /// The slots in either set.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The slots in both sets.
    #[must_use]
    pub fn intersect(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    /// The slots of `self` not in `other`.
    #[must_use]
    pub fn minus(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    /// Whether `slot` is in the set.
    pub fn has(self, slot: u32) -> bool {
        slot < SLOTS && self.0 & (1 << slot) != 0
    }

    /// Whether `obj`'s uid falls in one of the slots.
    pub fn contains<K: Resource>(self, obj: &K) -> bool {
        self.has(Self::slot_of(obj))
    }

    /// How many slots the set holds.
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The slots, lowest first.
    pub fn iter(self) -> impl Iterator<Item = u32> {
        (0..SLOTS).filter(move |&s| self.has(s))
    }

    /// The set as runs of adjacent slots, `[first, last]` each.
    pub fn runs(self) -> Vec<(u32, u32)> {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for slot in self.iter() {
            match runs.last_mut() {
                Some((_, last)) if *last + 1 == slot => *last = slot,
                _ => runs.push((slot, slot)),
            }
        }
        runs
    }

    /// The `shardSelector` for these slots: one `shardRange` per run of
    /// adjacent slots, joined by `||`. The empty set is sent as the range
    /// `[0, 1)`, which holds no real uid's hash, and arriving objects are
    /// checked against the set anyway.
    pub fn selector(self) -> String {
        let range = |start: u128, end: u128| {
            format!("shardRange(object.metadata.uid, '0x{start:016x}', '0x{end:016x}')")
        };
        if self.is_empty() {
            return range(0, 1);
        }
        let bound = |slot: u32| u128::from(slot) << SLOT_SHIFT;
        self.runs()
            .into_iter()
            .map(|(first, last)| range(bound(first), bound(last + 1)))
            .collect::<Vec<_>>()
            .join(" || ")
    }
}

impl fmt::Debug for Slots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Slots({self})")
    }
}

/// `0-41,64,70-80`; `-` for none.
impl fmt::Display for Slots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("-");
        }
        let runs: Vec<String> = self
            .runs()
            .into_iter()
            .map(|(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect();
        f.write_str(&runs.join(","))
    }
}

/// The label a sharded controller's objects carry when its replicas
/// shard by label (a server without `shardSelector`, and every owned
/// object, whose slot is its owner's): `slot.sharding.kubeforge.dev/<ring>`,
/// valued with the slot's number.
pub fn slot_label_key(ring: &str) -> String {
    format!("slot.sharding.kubeforge.dev/{ring}")
}

impl Slots {
    /// The label selector for these slots under the label `key`:
    /// `key in (0,1,…)`. An empty set selects the value `none`, which no
    /// object carries (an `in` needs a value).
    pub fn label_selector(self, key: &str) -> String {
        let values: Vec<String> = self.iter().map(|s| s.to_string()).collect();
        let values = if values.is_empty() {
            "none".to_owned()
        } else {
            values.join(",")
        };
        format!("{key} in ({values})")
    }

    /// The slot the label `key` of `obj` names, if it names one.
    pub fn slot_labelled<K: Resource>(obj: &K, key: &str) -> Option<u32> {
        let value = obj.meta().labels.as_ref()?.get(key)?;
        value.parse().ok().filter(|slot| *slot < SLOTS)
    }
}

/// How an informer given [`Holdings`] tells the server, and checks, which
/// objects are in its slots.
#[derive(Clone)]
enum SlotsBy {
    /// By `shardSelector` over the uid, until the cell is given the label
    /// key to use instead (the server turned out not to serve it).
    Uid(Arc<OnceLock<Arc<str>>>),
    /// Always by the label.
    Label(Arc<str>),
}

/// The slots one replica of a sharded controller holds, as they change: an
/// informer given them ([`InformerOptions::holdings`](super::InformerOptions::holdings))
/// caches only those slots' objects, and lists again whenever they change.
///
/// The objects are selected by their uid's hash (`shardSelector`), or by
/// [`slot_label_key`] where that is what the ring uses: for every owned
/// kind, and for the primary kind on a server that does not serve
/// `shardSelector`.
#[derive(Clone)]
pub struct Holdings {
    ring: Arc<str>,
    slots: watch::Receiver<Slots>,
    by: SlotsBy,
}

impl Holdings {
    /// Holdings of the ring named `ring`, following `slots`, by uid.
    pub fn new(ring: impl Into<Arc<str>>, slots: watch::Receiver<Slots>) -> Self {
        Self::by_uid_until_labelled(ring, slots, Arc::default())
    }

    /// Holdings by the uid's hash until `labelled` is given a label key,
    /// then by that label (whoever sets it also wakes `slots`).
    pub(crate) fn by_uid_until_labelled(
        ring: impl Into<Arc<str>>,
        slots: watch::Receiver<Slots>,
        labelled: Arc<OnceLock<Arc<str>>>,
    ) -> Self {
        Self {
            ring: ring.into(),
            slots,
            by: SlotsBy::Uid(labelled),
        }
    }

    /// Holdings of the ring named `ring` selected by the label `key`
    /// (valued with the slot), following `slots`.
    pub fn by_label(
        ring: impl Into<Arc<str>>,
        key: impl Into<Arc<str>>,
        slots: watch::Receiver<Slots>,
    ) -> Self {
        Self {
            ring: ring.into(),
            slots,
            by: SlotsBy::Label(key.into()),
        }
    }

    /// The ring's name: part of the informer's identity.
    pub fn ring(&self) -> &str {
        &self.ring
    }

    /// The informer's identity within the ring: the ring's name, and
    /// `by label` for holdings that are always by label (an owned kind's,
    /// which differ from the same kind's as a primary).
    pub(crate) fn identity(&self) -> String {
        match &self.by {
            SlotsBy::Uid(_) => self.ring.to_string(),
            SlotsBy::Label(_) => format!("{} by label", self.ring),
        }
    }

    /// The slots held now.
    pub fn current(&self) -> Slots {
        *self.slots.borrow()
    }

    /// The label key the objects are selected by now; `None`: by uid.
    pub fn label_key(&self) -> Option<Arc<str>> {
        match &self.by {
            SlotsBy::Uid(labelled) => labelled.get().cloned(),
            SlotsBy::Label(key) => Some(Arc::clone(key)),
        }
    }

    /// The receiver to follow changes with.
    pub(crate) fn receiver(&self) -> watch::Receiver<Slots> {
        self.slots.clone()
    }
}

impl fmt::Debug for Holdings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Holdings")
            .field("ring", &self.ring)
            .field("slots", &self.current())
            .field("label", &self.label_key())
            .finish()
    }
}

/// 64-bit FNV-1a.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn shards_split_the_hash_space_without_gaps_or_overlaps() {
        let shards: Vec<Shard> = (0..3).map(|i| Shard::of(i, 3).unwrap()).collect();
        assert_eq!(shards[0].start, 0);
        assert_eq!(shards[2].end, SPACE);
        for pair in shards.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        assert!(Shard::of(3, 3).is_none() && Shard::of(0, 0).is_none());
        assert_eq!(
            Shard::of(1, 2).unwrap().selector(),
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
        );
        for n in 0..200 {
            let mut cm = ConfigMap::default();
            cm.metadata.uid = Some(format!("uid-{n}"));
            let holding = shards.iter().filter(|s| s.contains(&cm)).count();
            assert_eq!(holding, 1, "uid-{n}");
        }
    }

    #[test]
    fn slots_tile_the_hash_space_and_their_selector_merges_adjacent_ones() {
        let some = Slots::NONE.with(0).with(1).with(2).with(64).with(127);
        assert_eq!(some.to_string(), "0-2,64,127");
        assert_eq!(some.len(), 5);
        assert_eq!(
            some.selector(),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x0600000000000000') || \
             shardRange(object.metadata.uid, '0x8000000000000000', '0x8200000000000000') || \
             shardRange(object.metadata.uid, '0xfe00000000000000', '0x10000000000000000')"
        );
        assert_eq!(
            Slots::ALL.selector(),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"
        );
        assert_eq!(Slots::NONE.with(SLOTS), Slots::NONE);
        // An object's slot agrees with the ranges the selector sends.
        for n in 0..500 {
            let uid = format!("{:016x}-{n}", fastrand::u64(..));
            let slot = Slots::slot_of_uid(&uid);
            let hash = u128::from(fnv1a64(uid.as_bytes()));
            assert!(u128::from(slot) << SLOT_SHIFT <= hash);
            assert!(hash < u128::from(slot + 1) << SLOT_SHIFT);
        }
        let halves = (Slots((1 << 64) - 1), Slots(u128::MAX << 64));
        assert_eq!(halves.0.union(halves.1), Slots::ALL);
        assert_eq!(Slots::ALL.minus(halves.0), halves.1);
    }

    #[test]
    fn slots_select_by_label_and_read_it_back() {
        let key = slot_label_key("memcached-shards");
        assert_eq!(key, "slot.sharding.kubeforge.dev/memcached-shards");
        let some = Slots::NONE.with(3).with(4).with(90);
        assert_eq!(some.label_selector(&key), format!("{key} in (3,4,90)"));
        assert_eq!(Slots::NONE.label_selector(&key), format!("{key} in (none)"));
        let mut cm = ConfigMap::default();
        assert_eq!(Slots::slot_labelled(&cm, &key), None);
        for (value, slot) in [("90", Some(90)), ("128", None), ("x", None), ("-1", None)] {
            cm.metadata.labels = Some([(key.clone(), value.to_owned())].into());
            assert_eq!(Slots::slot_labelled(&cm, &key), slot, "{value}");
        }
    }

    #[test]
    fn the_hash_is_fnv_1a_64() {
        // The FNV test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
