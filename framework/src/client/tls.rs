//! TLS for the client: the rustls configuration (trusted roots, the
//! explicit `insecure-skip-tls-verify` escape hatch) and the client
//! certificate resolver. The resolver holds the current certificate so an
//! exec plugin can hand out a new one without rebuilding the TLS config;
//! each change bumps a generation counter so the transport knows to drop
//! pooled connections made with the old certificate (as client-go's
//! connection tracker closes them on rotation).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::ResolvesClientCert;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, SignatureScheme};

use super::config::Config;
use super::error::{ConfigError, Error};

/// The crypto provider kubeforge uses everywhere (ring).
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the rustls client configuration for `config`.
pub(crate) fn client_config(
    config: &Config,
    certs: Arc<ClientCertStore>,
) -> Result<rustls::ClientConfig, Error> {
    let provider = certs.provider.clone();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ConfigError::new("cannot set up TLS").caused_by(e))?;
    let builder = if config.cluster_url.scheme() == Some(&http::uri::Scheme::HTTP) {
        // Plain HTTP: no handshake, so no server certificate to trust or to
        // skip verifying (`insecure-skip-tls-verify` means nothing here, as
        // in client-go, which sets up TLS only for https hosts). Nothing is
        // trusted, so the system store is not read.
        builder.with_root_certificates(rustls::RootCertStore::empty())
    } else if config.accept_invalid_certs {
        tracing::warn!(
            server = %config.cluster_url,
            "insecure-skip-tls-verify is set: the API server's certificate is not verified"
        );
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SkipVerification { provider }))
    } else {
        builder.with_root_certificates(root_store(config)?)
    };
    Ok(builder.with_client_cert_resolver(certs))
}

fn root_store(config: &Config) -> Result<rustls::RootCertStore, Error> {
    let mut roots = rustls::RootCertStore::empty();
    match &config.root_certs {
        Some(ders) => {
            for der in ders {
                roots
                    .add(CertificateDer::from(der.clone()))
                    .map_err(|e| ConfigError::new("a root certificate is invalid").caused_by(e))?;
            }
        }
        None => {
            // No CA configured: trust the system's store, as client-go does.
            let found = rustls_native_certs::load_native_certs();
            for e in &found.errors {
                tracing::debug!(error = %e, "skipping part of the system trust store");
            }
            let (added, ignored) = roots.add_parsable_certificates(found.certs);
            tracing::debug!(added, ignored, "loaded system root certificates");
        }
    }
    if roots.is_empty() {
        return Err(ConfigError::new(
            "no trusted root certificates: set certificate-authority(-data) for the cluster",
        )
        .into());
    }
    Ok(roots)
}

/// Verifies handshake signatures but accepts any server certificate. Used
/// only when the configuration explicitly says `insecure-skip-tls-verify`.
#[derive(Debug)]
struct SkipVerification {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for SkipVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The client certificate presented in TLS handshakes, replaceable at run
/// time.
pub(crate) struct ClientCertStore {
    provider: Arc<CryptoProvider>,
    current: RwLock<Option<(Vec<u8>, Arc<CertifiedKey>)>>,
    generation: AtomicU64,
}

impl fmt::Debug for ClientCertStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCertStore")
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl ClientCertStore {
    pub(crate) fn new(provider: Arc<CryptoProvider>) -> Self {
        Self {
            provider,
            current: RwLock::new(None),
            generation: AtomicU64::new(0),
        }
    }

    /// Bumped whenever the certificate changes.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Installs a PEM certificate chain and key; returns whether it differs
    /// from the current one.
    pub(crate) fn set_pem(&self, cert_pem: &[u8], key_pem: &[u8]) -> Result<bool, String> {
        {
            let current = self.current.read().unwrap_or_else(|p| p.into_inner());
            if current.as_ref().is_some_and(|(pem, _)| pem == cert_pem) {
                return Ok(false);
            }
        }
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("the client certificate is not valid PEM: {e}"))?;
        if chain.is_empty() {
            return Err("the client certificate PEM holds no certificate".to_owned());
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem)
            .map_err(|e| format!("the client key is not a valid PEM private key: {e}"))?;
        let certified = CertifiedKey::from_der(chain, key, &self.provider)
            .map_err(|e| format!("the client certificate and key cannot be used: {e}"))?;
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        *current = Some((cert_pem.to_vec(), Arc::new(certified)));
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(true)
    }
}

impl ResolvesClientCert for ClientCertStore {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        current.as_ref().map(|(_, key)| key.clone())
    }

    fn has_certs(&self) -> bool {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        current.is_some()
    }
}

/// DER certificates as a PEM bundle (for `KUBERNETES_EXEC_INFO`).
pub(crate) fn der_to_pem(ders: &[Vec<u8>]) -> String {
    use base64::Engine as _;
    let mut out = String::new();
    for der in ders {
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        for line in b64.as_bytes().chunks(64) {
            out.push_str(&String::from_utf8_lossy(line));
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
}

/// Finds a rustls error in an error's source chain. `io::Error` hides its
/// inner error from `source()`, so it is unwrapped explicitly.
pub(crate) fn find_tls_error<'a>(
    mut err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a rustls::Error> {
    loop {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if let Some(inner) = io.get_ref() {
                if let Some(found) = find_tls_error(inner) {
                    return Some(found);
                }
            }
        }
        err = err.source()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cert_store_changes_generation_only_on_a_new_cert() {
        let store = ClientCertStore::new(provider());
        assert!(!store.has_certs());
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["me".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let (c, k) = (cert.pem(), key.serialize_pem());
        assert!(store.set_pem(c.as_bytes(), k.as_bytes()).unwrap());
        assert_eq!(store.generation(), 1);
        assert!(!store.set_pem(c.as_bytes(), k.as_bytes()).unwrap());
        assert_eq!(store.generation(), 1);
        assert!(store.resolve(&[], &[]).is_some());
        assert!(store.set_pem(b"junk", k.as_bytes()).is_err());
        // The debug form shows no key material.
        assert!(!format!("{store:?}").contains("PRIVATE"));
    }

    #[test]
    fn der_round_trips_through_pem() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["ca".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let der = cert.der().to_vec();
        let pem = der_to_pem(std::slice::from_ref(&der));
        let back: Vec<_> = CertificateDer::pem_slice_iter(pem.as_bytes())
            .map(|c| c.unwrap().to_vec())
            .collect();
        assert_eq!(back, vec![der]);
    }

    /// What a subscriber wrote, for the warnings a client logs as it is
    /// built.
    #[derive(Clone, Default)]
    struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The warnings logged while a client is built for `config`.
    fn warnings_building(config: Config) -> String {
        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            crate::Client::new(config).expect("a client");
        });
        let bytes = logs.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn a_kubeconfig_that_says_insecure_skip_tls_verify_is_warned_about() {
        let kc = crate::client::config::Kubeconfig::from_yaml(
            "
current-context: c
clusters:
- name: c
  cluster:
    server: https://cluster.example.com:6443
    insecure-skip-tls-verify: true
contexts:
- name: c
  context: {cluster: c, user: u}
users:
- name: u
  user: {token: t}
",
        )
        .unwrap();
        let config = kc.to_config(&Default::default()).unwrap();
        let logged = warnings_building(config);
        assert!(
            logged.contains("WARN")
                && logged.contains("insecure-skip-tls-verify is set")
                && logged.contains("server=https://cluster.example.com:6443/"),
            "{logged}"
        );
    }

    #[test]
    fn a_verified_or_plain_http_connection_is_not_warned_about() {
        let key = rcgen::KeyPair::generate().unwrap();
        let ca = rcgen::CertificateParams::new(vec!["ca".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let mut verified = Config::new(http::Uri::from_static("https://cluster.example.com"));
        verified.root_certs = Some(vec![ca.der().to_vec()]);
        assert_eq!(warnings_building(verified), "");
        // Plain HTTP needs no trust store, and skipping a certificate check
        // there skips nothing.
        let mut plain = Config::new(http::Uri::from_static("http://manifests.invalid"));
        plain.accept_invalid_certs = true;
        assert_eq!(warnings_building(plain), "");
    }

    #[test]
    fn tls_errors_are_found_inside_io_errors() {
        let io = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        let wrapped: Box<dyn std::error::Error + Send + Sync> = Box::new(io);
        assert!(find_tls_error(wrapped.as_ref()).is_some());
        let plain = std::io::Error::other("refused");
        assert!(find_tls_error(&plain).is_none());
    }
}
