//! Service-account tokens: ES256 JWTs with kube-apiserver's bound-token
//! claims (`iss`, `sub`, `aud`, `iat`, `nbf`, `exp`, `jti` and the private
//! `kubernetes.io` claim naming the namespace and service account), signed
//! by a key generated per server, and their verification (signature,
//! issuer, audience, time with go-jose's one-minute leeway).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING;
use ring::signature::{EcdsaKeyPair, KeyPair, UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
use serde_json::{json, Value};

use crate::error::Error;

/// The issuer (and default audience) of the tokens, as a kubeadm cluster
/// configures `--service-account-issuer`.
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// go-jose's default leeway on `exp`, `nbf` and `iat`.
const LEEWAY_SECS: i64 = 60;

/// The service account a valid token names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TokenSubject {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

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
    kid: String,
    rng: SystemRandom,
}

impl Signer {
    /// A signer with a fresh P-256 key.
    pub fn generate() -> Result<Self, Error> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| Error::Tls("could not generate the service-account key".into()))?;
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| Error::Tls("could not load the service-account key".into()))?;
        let digest = ring::digest::digest(&ring::digest::SHA256, key.public_key().as_ref());
        let kid = URL_SAFE_NO_PAD.encode(&digest.as_ref()[..16]);
        Ok(Self { key, kid, rng })
    }

    /// A signed token for `subject`.
    pub fn issue(&self, subject: &TokenSubject, spec: &TokenSpec) -> Result<String, Error> {
        let header = json!({"alg": "ES256", "kid": self.kid});
        let claims = json!({
            "aud": spec.audiences,
            "exp": spec.expires_at,
            "iat": spec.issued_at,
            "iss": ISSUER,
            "jti": crate::util::uid(),
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
    /// audience and times hold at `now` (seconds).
    pub fn verify(&self, token: &str, now: i64) -> Option<TokenSubject> {
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
        if time("exp").is_none_or(|exp| now > exp + LEEWAY_SECS)
            || time("nbf").is_some_and(|nbf| now + LEEWAY_SECS < nbf)
        {
            return None;
        }
        let k8s = claims.get("kubernetes.io")?;
        let sa = k8s.get("serviceaccount")?;
        let subject = TokenSubject {
            namespace: k8s.get("namespace")?.as_str()?.to_owned(),
            name: sa.get("name")?.as_str()?.to_owned(),
            uid: sa.get("uid")?.as_str()?.to_owned(),
        };
        let sub = super::user::service_account_user(&subject.namespace, &subject.name);
        (claims.get("sub").and_then(Value::as_str) == Some(sub.as_str())).then_some(subject)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject() -> TokenSubject {
        TokenSubject {
            namespace: "ns".into(),
            name: "sa".into(),
            uid: "u1".into(),
        }
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
}
