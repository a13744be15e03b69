//! The hashes controllers name things by: `controller.ComputeHash` (FNV-1a
//! over the pod template, plus the collision count) for
//! `pod-template-hash`, and `history.HashControllerRevision` (FNV-1 over
//! the revision's data, plus the probe) for ControllerRevisions, both
//! printed in decimal and mapped through `rand.SafeEncodeString`.
//!
//! kube-controller-manager feeds the template to FNV as Go's `%#v` dump of
//! its in-memory struct, which no other program can reproduce; here the
//! template's canonical JSON (keys sorted at every level) is hashed
//! instead, so values differ from a real cluster's but behave the same:
//! equal templates hash equal, any change gives a new hash, and a
//! collision count moves it. Revision data is hashed as Go hashes it
//! (the JSON bytes, which Go writes with sorted keys).

use serde_json::Value;

const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `rand.SafeEncodeString`: each byte mapped into a vowel-free alphabet.
pub(crate) fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

fn fnv1a(hash: &mut u32, bytes: &[u8]) {
    for b in bytes {
        *hash ^= u32::from(*b);
        *hash = hash.wrapping_mul(0x0100_0193);
    }
}

fn fnv1(hash: &mut u32, bytes: &[u8]) {
    for b in bytes {
        *hash = hash.wrapping_mul(0x0100_0193);
        *hash ^= u32::from(*b);
    }
}

const FNV_OFFSET: u32 = 0x811c_9dc5;

/// JSON with object keys sorted at every level, compact.
pub(crate) fn canonical_json(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String((*k).clone()).to_string());
                    out.push(':');
                    write(&m[*k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

/// The `pod-template-hash` of a template with the Deployment's collision
/// count.
pub(crate) fn pod_template_hash(template: &Value, collision_count: Option<i64>) -> String {
    let mut h = FNV_OFFSET;
    fnv1a(&mut h, canonical_json(template).as_bytes());
    if let Some(c) = collision_count {
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&(c as u32).to_le_bytes());
        fnv1a(&mut h, &bytes);
    }
    safe_encode(&h.to_string())
}

/// The hash naming a ControllerRevision whose data is `data`.
pub(crate) fn revision_hash(data: &Value, probe: Option<i64>) -> String {
    let mut h = FNV_OFFSET;
    fnv1(&mut h, canonical_json(data).as_bytes());
    if let Some(p) = probe {
        fnv1(&mut h, p.to_string().as_bytes());
    }
    safe_encode(&h.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn safe_encoding_maps_digits_like_apimachinery() {
        // '0' is byte 48: 48 % 27 = 21 -> '4'; '1' -> '5'; '9' -> 'f' (57 % 27 = 3).
        assert_eq!(safe_encode("019"), "45f");
    }

    #[test]
    fn fnv_matches_reference_vectors() {
        let mut h = FNV_OFFSET;
        fnv1a(&mut h, b"a");
        assert_eq!(h, 0xe40c_292c);
        let mut h = FNV_OFFSET;
        fnv1(&mut h, b"a");
        assert_eq!(h, 0x050c_5d7e);
    }

    #[test]
    fn template_hash_is_stable_and_moves_with_changes() {
        let a = json!({"metadata": {"labels": {"app": "web", "tier": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let b = json!({"spec": {"containers": [{"image": "nginx", "name": "c"}]}, "metadata": {"labels": {"tier": "x", "app": "web"}}});
        assert_eq!(pod_template_hash(&a, None), pod_template_hash(&b, None));
        let mut c = a.clone();
        c["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert_ne!(pod_template_hash(&a, None), pod_template_hash(&c, None));
        assert_ne!(pod_template_hash(&a, None), pod_template_hash(&a, Some(1)));
        assert!(pod_template_hash(&a, None)
            .bytes()
            .all(|b| ALPHANUMS.contains(&b)));
    }
}
