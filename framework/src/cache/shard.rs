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

use std::fmt;

use kube_core::Resource;

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
    fn the_hash_is_fnv_1a_64() {
        // The FNV test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
