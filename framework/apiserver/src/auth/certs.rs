//! Client certificates: the server's TLS asks for one without requiring it
//! ([`ClientCertPolicy`]), the authenticator verifies a presented chain
//! against the server's CA (a certificate from another CA is a 401, as
//! kube-apiserver's x509 authenticator answers, not a failed handshake),
//! and [`issue`] signs certificates for users, CN the user name and one O
//! per group (what envtest's `AddUser` hands out).

use std::sync::Arc;

use rcgen::{
    CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair, KeyUsagePurpose,
    SigningKey,
};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

use super::der;
use super::user::UserInfo;
use crate::machinery::error::Error;

/// What a connection's client certificate says about every request on it.
#[derive(Clone, Debug)]
pub(crate) enum PeerIdentity {
    /// A certificate the server's CA signed, for this user.
    Verified(Arc<UserInfo>),
    /// A certificate that does not verify: every request is a 401.
    Invalid,
}

/// Asks clients for a certificate (kube-apiserver's `RequestClientCert`)
/// and checks the handshake signature, leaving the chain's verdict to the
/// authenticator.
#[derive(Debug)]
pub(crate) struct ClientCertPolicy {
    webpki: Arc<dyn ClientCertVerifier>,
}

impl ClientCertPolicy {
    /// A policy trusting `ca_der` for client certificates.
    pub fn new(ca_der: &[u8]) -> Result<Self, Error> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from(ca_der.to_vec()))
            .map_err(|e| Error::Tls(e.to_string()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let webpki = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .allow_unauthenticated()
            .build()
            .map_err(|e| Error::Tls(e.to_string()))?;
        Ok(Self { webpki })
    }

    /// The identity a presented chain proves (`None` without a
    /// certificate).
    pub fn identity(&self, chain: Option<&[CertificateDer<'static>]>) -> Option<PeerIdentity> {
        let (leaf, intermediates) = chain?.split_first()?;
        let verified = self
            .webpki
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .is_ok();
        if !verified {
            return Some(PeerIdentity::Invalid);
        }
        match der::subject(leaf) {
            Some((cn, groups)) if !cn.is_empty() => {
                let user = UserInfo {
                    name: cn,
                    groups,
                    ..UserInfo::default()
                };
                Some(PeerIdentity::Verified(Arc::new(
                    user.with_authenticated_group(),
                )))
            }
            _ => Some(PeerIdentity::Invalid),
        }
    }
}

impl ClientCertVerifier for ClientCertPolicy {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.webpki.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // Judged per request by the authenticator (401, not a TLS alert).
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

fn attribute(oid: &[u8], value: &str) -> Vec<u8> {
    let mut atv = tlv(0x06, oid);
    atv.extend(tlv(0x0c, value.as_bytes()));
    tlv(0x31, &tlv(0x30, &atv))
}

/// Splits DER into its top-level TLVs (whole, with headers).
fn elements(mut input: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let (_, content, rest) = der::tlv(input)?;
        let header = input.len() - rest.len() - content.len();
        out.push(&input[..header + content.len()]);
        input = rest;
    }
    Some(out)
}

/// A client certificate and key (PEM) for `user`, signed by `ca`.
///
/// rcgen holds one value per attribute type, so the certificate is made
/// with the CN alone and its subject rewritten to carry one O per group,
/// then signed again with the CA key.
pub(crate) fn issue(
    ca: &Issuer<'static, KeyPair>,
    user: &str,
    groups: &[String],
) -> Result<(String, String), Error> {
    let tls = |e: rcgen::Error| Error::Tls(e.to_string());
    let malformed = || Error::Tls("could not re-encode the client certificate".into());
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(tls)?;
    params.distinguished_name.push(DnType::CommonName, user);
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params
        .extended_key_usages
        .push(ExtendedKeyUsagePurpose::ClientAuth);
    let key = KeyPair::generate().map_err(tls)?;
    let cert = params.signed_by(&key, ca).map_err(tls)?;

    let (_, outer, _) = der::tlv(cert.der()).ok_or_else(malformed)?;
    let parts = elements(outer).ok_or_else(malformed)?;
    let [tbs, sig_alg, _signature] = parts.as_slice() else {
        return Err(malformed());
    };
    let (_, tbs_content, _) = der::tlv(tbs).ok_or_else(malformed)?;
    let mut fields = elements(tbs_content).ok_or_else(malformed)?;
    // version, serial, signature, issuer, validity, subject, ...
    let subject_at = if fields.first().is_some_and(|f| f.first() == Some(&0xa0)) {
        5
    } else {
        4
    };
    if fields.len() <= subject_at {
        return Err(malformed());
    }
    let mut rdns = attribute(der::OID_CN, user);
    for g in groups {
        rdns.extend(attribute(der::OID_O, g));
    }
    let subject = tlv(0x30, &rdns);
    fields[subject_at] = &subject;
    let new_tbs = tlv(0x30, &fields.concat());
    let signature = ca.key().sign(&new_tbs).map_err(tls)?;
    let mut bits = vec![0u8];
    bits.extend(signature);
    let mut body = new_tbs;
    body.extend_from_slice(sig_alg);
    body.extend(tlv(0x03, &bits));
    let der_cert = tlv(0x30, &body);
    let pem = pem_encode("CERTIFICATE", &der_cert);
    Ok((pem, key.serialize_pem()))
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}
