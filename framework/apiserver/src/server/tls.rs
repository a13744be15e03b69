//! Certificates for one server run: a fresh self-signed CA and a serving
//! certificate it signs for `127.0.0.1`, `localhost` and `::1` (plus the
//! bind address when it is something else) and the `kubernetes` Service's
//! IP and names, and the rustls server config
//! offering h2 and HTTP/1.1 through ALPN.

use std::net::IpAddr;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::auth::certs::ClientCertPolicy;
use crate::machinery::error::Error;

/// The CA and serving identity of one server.
pub(crate) struct Certificates {
    /// The CA certificate, DER.
    pub ca_der: Vec<u8>,
    /// The CA certificate, PEM (what kubeconfig's `certificate-authority-data` carries).
    pub ca_pem: String,
    /// The TLS configuration serving the CA-signed certificate and asking
    /// for (not requiring) a client certificate.
    pub server_config: Arc<rustls::ServerConfig>,
    /// The CA, which also signs client certificates.
    pub ca: Issuer<'static, KeyPair>,
    /// Judges the client certificates the CA signed.
    pub client_certs: Arc<ClientCertPolicy>,
    /// The CA's own certificate and key, what a data directory keeps.
    pub ca_kept: KeptCa,
}

/// A CA kept across restarts: its certificate (DER, PEM) and key (PEM).
#[derive(Clone)]
pub(crate) struct KeptCa {
    pub der: Vec<u8>,
    pub pem: String,
    pub key_pem: String,
}

impl Certificates {
    /// Generates a CA (or takes the `kept` one) and a serving certificate
    /// it signs, valid for the loopback names and `extra_ip`.
    pub fn generate(extra_ip: Option<IpAddr>, kept: Option<KeptCa>) -> Result<Self, Error> {
        let tls = |e: rcgen::Error| Error::Tls(e.to_string());
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(tls)?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "kubeforge-ca");
        ca_params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
        ];
        // A kept CA signs with the same parameters it was made with (the
        // issuer name and key identifier come from them and its key), so
        // certificates signed now chain to the certificate clients hold.
        let (ca_key, ca_kept) = match kept {
            Some(kept) => (KeyPair::from_pem(&kept.key_pem).map_err(tls)?, kept),
            None => {
                let key = KeyPair::generate().map_err(tls)?;
                let cert = ca_params.self_signed(&key).map_err(tls)?;
                let kept = KeptCa {
                    der: cert.der().to_vec(),
                    pem: cert.pem(),
                    key_pem: key.serialize_pem(),
                };
                (key, kept)
            }
        };
        let issuer = Issuer::new(ca_params, ca_key);

        // The names and IP of the `kubernetes` Service too, as
        // kube-apiserver's serving certificate carries them
        // (pkg/controlplane/apiserver/options: the first service IP and
        // kubernetes.default.svc[.cluster.local]): pods the kubelet runs
        // as processes reach the server there.
        let names = [
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ];
        let mut params = CertificateParams::new(names.map(str::to_owned).to_vec()).map_err(tls)?;
        let mut ips: Vec<IpAddr> = vec![
            [127, 0, 0, 1].into(),
            std::net::Ipv6Addr::LOCALHOST.into(),
            crate::registry::core::service::KUBERNETES_SERVICE_IP.into(),
        ];
        if let Some(ip) = extra_ip {
            if !ip.is_unspecified() && !ips.contains(&ip) {
                ips.push(ip);
            }
        }
        params
            .subject_alt_names
            .extend(ips.into_iter().map(SanType::IpAddress));
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params
            .extended_key_usages
            .push(ExtendedKeyUsagePurpose::ServerAuth);
        let key = KeyPair::generate().map_err(tls)?;
        let cert = params.signed_by(&key, &issuer).map_err(tls)?;

        let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let chain = vec![
            CertificateDer::from(cert.der().to_vec()),
            CertificateDer::from(ca_kept.der.clone()),
        ];
        let client_certs = Arc::new(ClientCertPolicy::new(&ca_kept.der)?);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut server_config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Tls(e.to_string()))?
            .with_client_cert_verifier(client_certs.clone())
            .with_single_cert(chain, key_der)
            .map_err(|e| Error::Tls(e.to_string()))?;
        server_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self {
            ca_der: ca_kept.der.clone(),
            ca_pem: ca_kept.pem.clone(),
            server_config: Arc::new(server_config),
            ca: issuer,
            client_certs,
            ca_kept,
        })
    }
}
