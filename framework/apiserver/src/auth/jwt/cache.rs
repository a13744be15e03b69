//! The verified-token cache, kube-apiserver's `token/cache` in front of
//! the service-account authenticator: a token whose signature, issuer,
//! audience and subject were verified is remembered for
//! [`SUCCESS_TTL_SECS`] (kube-apiserver's default success TTL), so a
//! client reusing it pays for one ES256 verification and two decodes per
//! TTL instead of per request. Failures are not cached (kube-apiserver's
//! default failure TTL is zero): a flood of bad tokens neither evicts good
//! ones nor grows memory.
//!
//! An entry keeps what a hit still needs: the subject and the token's
//! `exp` and `nbf`, checked against the clock on every hit. Whether the
//! service account still exists is not the cache's business; the caller
//! checks it on every request (from the account version it remembers in
//! the subject, while that version is current). Entries are keyed by an HMAC-SHA256 of
//! the token under a key generated per server (as kube-apiserver keys its
//! cache), so the token text is never stored and the keys tell nothing
//! about it.
//!
//! Bounded by its capacity: an insert into a full cache first drops the
//! entries past their TTL or expiry, and if none were, empties the cache.
//! That costs one pass over the entries, no more than the ES256
//! verification every insert follows, and no bookkeeping on hits (an LRU
//! would take a write lock on each); the price is that after an overflow
//! the live tokens are verified once more each.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use ring::hmac;
use ring::rand::SystemRandom;

use super::subject::{TokenSubject, LEEWAY_SECS};
use crate::machinery::error::Error;

/// How many verified tokens a server remembers.
pub(super) const CAPACITY: usize = 4096;
/// How long a verification is trusted, as kube-apiserver's
/// `TokenSuccessCacheTTL` (10 s).
pub(super) const SUCCESS_TTL_SECS: i64 = 10;

/// What a verified token says about whom and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Verified {
    pub subject: Arc<TokenSubject>,
    pub expires_at: i64,
    pub not_before: Option<i64>,
}

impl Verified {
    /// Whether the token is valid at `now`, with go-jose's leeway.
    pub fn valid_at(&self, now: i64) -> bool {
        now <= self.expires_at.saturating_add(LEEWAY_SECS)
            && self
                .not_before
                .is_none_or(|nbf| now.saturating_add(LEEWAY_SECS) >= nbf)
    }

    /// Whether the token expired before `now`, past the leeway: it will
    /// never be valid again.
    pub fn expired_at(&self, now: i64) -> bool {
        now > self.expires_at.saturating_add(LEEWAY_SECS)
    }
}

struct Entry {
    verified: Verified,
    cached_at: i64,
}

impl Entry {
    fn fresh_at(&self, now: i64) -> bool {
        now < self.cached_at.saturating_add(SUCCESS_TTL_SECS)
    }
}

/// The key of a token in the cache: its HMAC under the cache's key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Digest([u8; 32]);

/// Verified tokens by [`Digest`].
pub(super) struct VerifiedTokens {
    key: hmac::Key,
    entries: RwLock<HashMap<Digest, Entry>>,
    capacity: usize,
}

impl VerifiedTokens {
    /// An empty cache of at most `capacity` tokens.
    pub fn new(rng: &SystemRandom, capacity: usize) -> Result<Self, Error> {
        let key = hmac::Key::generate(hmac::HMAC_SHA256, rng)
            .map_err(|_| Error::Tls("could not generate the token cache key".into()))?;
        Ok(Self {
            key,
            entries: RwLock::default(),
            capacity,
        })
    }

    pub fn digest(&self, token: &str) -> Digest {
        let mut digest = [0u8; 32];
        digest.copy_from_slice(hmac::sign(&self.key, token.as_bytes()).as_ref());
        Digest(digest)
    }

    /// The verification of the token `digest` names, if it was cached
    /// less than the TTL before `now`. Its times are the caller's to check.
    pub fn get(&self, digest: &Digest, now: i64) -> Option<Verified> {
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let entry = entries.get(digest)?;
        entry.fresh_at(now).then(|| entry.verified.clone())
    }

    /// Remembers a verification made at `now`.
    pub fn insert(&self, digest: Digest, verified: Verified, now: i64) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= self.capacity && !entries.contains_key(&digest) {
            entries.retain(|_, e| e.fresh_at(now) && !e.verified.expired_at(now));
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        if self.capacity > 0 {
            entries.insert(
                digest,
                Entry {
                    verified,
                    cached_at: now,
                },
            );
        }
    }

    /// Forgets a token (one found expired: it never becomes valid again).
    pub fn remove(&self, digest: &Digest) {
        self.entries
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(digest);
    }

    /// How many tokens are cached.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.read().unwrap_or_else(|e| e.into_inner()).len()
    }
}
