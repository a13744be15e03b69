//! Service-account tokens: ES256 JWTs with kube-apiserver's bound-token
//! claims (`iss`, `sub`, `aud`, `iat`, `nbf`, `exp`, `jti` and the private
//! `kubernetes.io` claim naming the namespace and service account), signed
//! by a key generated per server, and their verification (signature,
//! issuer, audience, time with go-jose's one-minute leeway), remembered
//! for a few seconds by the verified-token [`cache`].

mod cache;
mod subject;

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING;
use ring::signature::{EcdsaKeyPair, KeyPair, UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
use serde_json::{json, Value};

use self::cache::{Verified, VerifiedTokens};
pub(crate) use self::subject::{LiveAccount, TokenSubject};
use crate::machinery::error::Error;

/// The issuer (and default audience) of the tokens, as a kubeadm cluster
/// configures `--service-account-issuer`.
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// What a token claims about its lifetime and audience.
#[derive(Clone, Debug)]
pub(crate) struct TokenSpec {
    pub audiences: Vec<String>,
    pub issued_at: i64,
    pub expires_at: i64,
}

/// Signs and verifies the server's service-account tokens.
pub(crate) struct Signer {
    key: EcdsaKeyPair,
    /// The key's PKCS#8 document, what a data directory keeps.
    pkcs8: Vec<u8>,
    kid: String,
    rng: SystemRandom,
    verified: VerifiedTokens,
    /// How many tokens went through [`Signer::verify_claims`].
    #[cfg(test)]
    verifications: std::sync::atomic::AtomicUsize,
}

impl Signer {
    /// A signer with a fresh P-256 key.
    pub fn generate() -> Result<Self, Error> {
        Self::with_cache_capacity(cache::CAPACITY)
    }

    /// A signer with the P-256 key in `pkcs8` (one a data directory kept),
    /// so tokens issued before a restart still verify.
    pub fn from_pkcs8(pkcs8: &[u8]) -> Result<Self, Error> {
        Self::with_key(pkcs8.to_vec(), cache::CAPACITY)
    }

    /// The key as PKCS#8, to keep in a data directory.
    pub fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// A signer whose verified-token cache holds `capacity` tokens.
    fn with_cache_capacity(capacity: usize) -> Result<Self, Error> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| Error::Tls("could not generate the service-account key".into()))?;
        Self::with_key(pkcs8.as_ref().to_vec(), capacity)
    }

    fn with_key(pkcs8: Vec<u8>, capacity: usize) -> Result<Self, Error> {
        let rng = SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng)
            .map_err(|_| Error::Tls("could not load the service-account key".into()))?;
        let digest = ring::digest::digest(&ring::digest::SHA256, key.public_key().as_ref());
        let kid = URL_SAFE_NO_PAD.encode(&digest.as_ref()[..16]);
        let verified = VerifiedTokens::new(&rng, capacity)?;
        Ok(Self {
            key,
            pkcs8,
            kid,
            rng,
            verified,
            #[cfg(test)]
            verifications: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// A signed token for `subject`.
    pub fn issue(&self, subject: &TokenSubject, spec: &TokenSpec) -> Result<String, Error> {
        let header = json!({"alg": "ES256", "kid": self.kid});
        let claims = json!({
            "aud": spec.audiences,
            "exp": spec.expires_at,
            "iat": spec.issued_at,
            "iss": ISSUER,
            "jti": crate::machinery::util::uid(),
            "kubernetes.io": {
                "namespace": subject.namespace,
                "serviceaccount": {"name": subject.name, "uid": subject.uid},
            },
            "nbf": spec.issued_at,
            "sub": super::user::service_account_user(&subject.namespace, &subject.name),
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = self
            .key
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|_| Error::Tls("could not sign a service-account token".into()))?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(sig.as_ref())
        ))
    }

    /// Whether `token` looks like a JWT (three dot-separated parts), so
    /// that the service-account authenticator owns its verdict.
    pub fn looks_like_jwt(token: &str) -> bool {
        token.split('.').count() == 3
    }

    /// The service account a token names, if its signature, issuer,
    /// audience and times hold at `now` (seconds): from the verified-token
    /// cache when the token was verified in the last few seconds, else
    /// verified and cached. Its times are checked either way; whether the
    /// account still exists is the caller's to check, on every request.
    pub fn authenticate(&self, token: &str, now: i64) -> Option<Arc<TokenSubject>> {
        let digest = self.verified.digest(token);
        if let Some(hit) = self.verified.get(&digest, now) {
            if hit.valid_at(now) {
                return Some(hit.subject);
            }
            if hit.expired_at(now) {
                self.verified.remove(&digest);
            }
            return None;
        }
        let verified = self.verify_claims(token)?;
        if !verified.valid_at(now) {
            return None;
        }
        let subject = verified.subject.clone();
        self.verified.insert(digest, verified, now);
        Some(subject)
    }

    /// [`verify_claims`](Self::verify_claims) and the token's times at
    /// `now`, without the cache.
    #[cfg(test)]
    pub fn verify(&self, token: &str, now: i64) -> Option<TokenSubject> {
        let verified = self.verify_claims(token)?;
        verified
            .valid_at(now)
            .then(|| TokenSubject::clone(&verified.subject))
    }

    /// The service account a token names and its `exp` and `nbf`, if its
    /// signature, issuer, audience and subject hold (its times are not
    /// checked here).
    fn verify_claims(&self, token: &str) -> Option<Verified> {
        #[cfg(test)]
        self.verifications
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut parts = token.split('.');
        let (h, c, s) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(h).ok()?).ok()?;
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return None;
        }
        let sig = URL_SAFE_NO_PAD.decode(s).ok()?;
        let public =
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, self.key.public_key().as_ref());
        let signed = &token[..h.len() + 1 + c.len()];
        public.verify(signed.as_bytes(), &sig).ok()?;
        let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(c).ok()?).ok()?;
        if claims.get("iss").and_then(Value::as_str) != Some(ISSUER) {
            return None;
        }
        let audiences: Vec<&str> = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !audiences.contains(&ISSUER) {
            return None;
        }
        let time = |k: &str| claims.get(k).and_then(Value::as_i64);
        let (expires_at, not_before) = (time("exp")?, time("nbf"));
        let k8s = claims.get("kubernetes.io")?;
        let sa = k8s.get("serviceaccount")?;
        let subject = TokenSubject::new(
            k8s.get("namespace")?.as_str()?.to_owned(),
            sa.get("name")?.as_str()?.to_owned(),
            sa.get("uid")?.as_str()?.to_owned(),
        );
        let sub = super::user::service_account_user(&subject.namespace, &subject.name);
        (claims.get("sub").and_then(Value::as_str) == Some(sub.as_str())).then(|| Verified {
            subject: Arc::new(subject),
            expires_at,
            not_before,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::cache::SUCCESS_TTL_SECS;
    use super::subject::LEEWAY_SECS;
    use super::*;

    fn subject() -> TokenSubject {
        TokenSubject::new("ns".into(), "sa".into(), "u1".into())
    }

    fn spec(issued_at: i64, ttl: i64) -> TokenSpec {
        TokenSpec {
            audiences: vec![ISSUER.into()],
            issued_at,
            expires_at: issued_at + ttl,
        }
    }

    #[test]
    fn a_token_verifies_until_it_expires_past_the_leeway() {
        let signer = Signer::generate().unwrap();
        let token = signer.issue(&subject(), &spec(1_000, 600)).unwrap();
        assert_eq!(signer.verify(&token, 1_000), Some(subject()));
        assert_eq!(signer.verify(&token, 1_600 + LEEWAY_SECS), Some(subject()));
        assert_eq!(signer.verify(&token, 1_601 + LEEWAY_SECS), None);
        assert_eq!(signer.verify(&token, 1_000 - LEEWAY_SECS - 1), None);
    }

    #[test]
    fn tampered_foreign_and_malformed_tokens_fail() {
        let signer = Signer::generate().unwrap();
        let other = Signer::generate().unwrap();
        let token = signer.issue(&subject(), &spec(1_000, 600)).unwrap();
        assert_eq!(other.verify(&token, 1_000), None);
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let mut claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&parts[1]).unwrap()).unwrap();
        claims["kubernetes.io"]["serviceaccount"]["name"] = json!("admin");
        parts[1] = URL_SAFE_NO_PAD.encode(claims.to_string());
        assert_eq!(signer.verify(&parts.join("."), 1_000), None);
        for bad in ["", "a.b.c", "....", "x.y", "é.é.é"] {
            assert_eq!(signer.verify(bad, 1_000), None);
        }
        let wrong_audience = TokenSpec {
            audiences: vec!["vault".into()],
            ..spec(1_000, 600)
        };
        let token = signer.issue(&subject(), &wrong_audience).unwrap();
        assert_eq!(signer.verify(&token, 1_000), None);
    }

    fn verifications(signer: &Signer) -> usize {
        signer
            .verifications
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn named(name: &str) -> TokenSubject {
        TokenSubject::new("ns".into(), name.into(), "u1".into())
    }

    #[test]
    fn a_cached_token_is_not_verified_again_until_its_ttl_passes() {
        let signer = Signer::generate().unwrap();
        let token = signer.issue(&subject(), &spec(1_000, 600)).unwrap();
        for now in [1_000, 1_001, 1_000 + SUCCESS_TTL_SECS - 1] {
            assert_eq!(
                signer.authenticate(&token, now).as_deref(),
                Some(&subject())
            );
        }
        assert_eq!(verifications(&signer), 1);
        let later = 1_000 + SUCCESS_TTL_SECS;
        assert_eq!(
            signer.authenticate(&token, later).as_deref(),
            Some(&subject())
        );
        assert_eq!(verifications(&signer), 2);
        assert_eq!(signer.verified.len(), 1);
    }

    #[test]
    fn a_cached_token_past_its_expiry_is_refused_and_forgotten() {
        let signer = Signer::generate().unwrap();
        let token = signer.issue(&subject(), &spec(1_000, 600)).unwrap();
        let last = 1_600 + LEEWAY_SECS;
        assert!(signer.authenticate(&token, last).is_some());
        // Within the TTL, so answered from the cache: refused all the same.
        assert_eq!(signer.authenticate(&token, last + 1), None);
        assert_eq!(verifications(&signer), 1);
        assert_eq!(signer.verified.len(), 0);
        assert_eq!(signer.authenticate(&token, last + 2), None);
        assert_eq!(verifications(&signer), 2);
        assert_eq!(signer.verified.len(), 0);
    }

    #[test]
    fn failed_tokens_are_not_cached() {
        let signer = Signer::generate().unwrap();
        let other = Signer::generate().unwrap();
        let foreign = other.issue(&subject(), &spec(1_000, 600)).unwrap();
        let expired = signer.issue(&subject(), &spec(0, 600)).unwrap();
        let not_yet = signer.issue(&subject(), &spec(5_000, 600)).unwrap();
        let good = signer.issue(&subject(), &spec(1_000, 600)).unwrap();
        let (head, _) = good.rsplit_once('.').unwrap();
        let forged = format!("{head}.{}", URL_SAFE_NO_PAD.encode([7u8; 64]));
        let bad = [foreign, expired, not_yet, forged, "a.b.c".into()];
        for _ in 0..2 {
            for token in &bad {
                assert_eq!(signer.authenticate(token, 1_000), None);
            }
        }
        assert_eq!(verifications(&signer), 2 * bad.len());
        assert_eq!(signer.verified.len(), 0);
        assert!(signer.authenticate(&good, 1_000).is_some());
        assert_eq!(signer.verified.len(), 1);
    }

    #[test]
    fn the_cache_is_bounded() {
        let signer = Signer::with_cache_capacity(8).unwrap();
        for i in 0..50 {
            let name = format!("sa-{i}");
            let token = signer.issue(&named(&name), &spec(1_000, 600)).unwrap();
            let subject = signer.authenticate(&token, 1_000).unwrap();
            assert_eq!(subject.name, name);
            assert!(signer.verified.len() <= 8);
            // Just inserted, so a hit.
            assert!(signer.authenticate(&token, 1_000).is_some());
            assert_eq!(verifications(&signer), i + 1);
        }
    }

    #[test]
    fn a_full_cache_drops_stale_entries_before_fresh_ones() {
        let signer = Signer::with_cache_capacity(4).unwrap();
        let tokens: Vec<String> = (0..5)
            .map(|i| signer.issue(&named(&format!("sa-{i}")), &spec(1_000, 600)))
            .collect::<Result<_, _>>()
            .unwrap();
        let fresh_from = 1_000 + SUCCESS_TTL_SECS / 2;
        let now = 1_000 + SUCCESS_TTL_SECS;
        for (token, at) in tokens[..4]
            .iter()
            .zip([1_000, 1_000, fresh_from, fresh_from])
        {
            assert!(signer.authenticate(token, at).is_some());
        }
        assert_eq!(signer.verified.len(), 4);
        assert!(signer.authenticate(&tokens[4], now).is_some());
        assert_eq!(signer.verified.len(), 3);
        for token in &tokens[2..] {
            assert!(signer.authenticate(token, now).is_some());
        }
        assert_eq!(verifications(&signer), 5, "the fresh entries were kept");
    }
}
