//! Just enough DER to read a client certificate's subject: the common name
//! (the user) and every organization (the groups), as kube-apiserver's x509
//! authenticator maps them. The chain itself is verified by webpki before
//! this runs; malformed input yields `None`, never a panic.

/// `2.5.4.3`, commonName.
pub(crate) const OID_CN: &[u8] = &[0x55, 0x04, 0x03];
/// `2.5.4.10`, organizationName.
pub(crate) const OID_O: &[u8] = &[0x55, 0x04, 0x0a];

/// One tag-length-value: `(tag, content, rest)`.
pub(crate) fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// The subject's common name and organizations of a DER certificate.
pub(crate) fn subject(cert: &[u8]) -> Option<(String, Vec<String>)> {
    let (0x30, cert, _) = tlv(cert)? else {
        return None;
    };
    let (0x30, tbs, _) = tlv(cert)? else {
        return None;
    };
    let mut rest = tbs;
    // version [0] EXPLICIT, optional
    if rest.first() == Some(&0xa0) {
        rest = tlv(rest)?.2;
    }
    // serialNumber, signature, issuer, validity
    for _ in 0..4 {
        rest = tlv(rest)?.2;
    }
    let (0x30, mut rdns, _) = tlv(rest)? else {
        return None;
    };
    let mut cn = String::new();
    let mut orgs = Vec::new();
    while !rdns.is_empty() {
        let (tag, mut set, next) = tlv(rdns)?;
        rdns = next;
        if tag != 0x31 {
            return None;
        }
        while !set.is_empty() {
            let (0x30, atv, next) = tlv(set)? else {
                return None;
            };
            set = next;
            let (0x06, oid, value) = tlv(atv)? else {
                return None;
            };
            let (_, text, _) = tlv(value)?;
            let text = String::from_utf8_lossy(text).into_owned();
            if oid == OID_CN {
                cn = text;
            } else if oid == OID_O {
                orgs.push(text);
            }
        }
    }
    Some((cn, orgs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};

    #[test]
    fn reads_the_common_name_and_every_organization() {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, "alice");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "dev");
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let (cn, orgs) = subject(cert.der()).unwrap();
        assert_eq!(cn, "alice");
        assert_eq!(orgs, ["dev"]);
    }

    #[test]
    fn garbage_is_none_not_a_panic() {
        for bad in [
            &b""[..],
            &[0x30],
            &[0x30, 0x84, 0xff, 0xff, 0xff, 0xff],
            &[0x30, 0x02, 0x30, 0x05],
        ] {
            assert_eq!(subject(bad), None);
        }
    }
}
