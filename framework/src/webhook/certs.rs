//! [`CertWatcher`]: the webhook server's certificate and key, read from
//! files (controller-runtime's `certwatcher`). It is the rustls certificate
//! resolver, so each TLS handshake uses the pair loaded last; a poll loop
//! re-reads the files when their size or modification time changes, and
//! keeps the old pair when the new one does not load (a half-written file,
//! a key that does not match the certificate), trying again on the next
//! tick.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_util::sync::CancellationToken;

use super::Error;

/// What identifies one version of a file on disk: its length and
/// modification time (`None` when it cannot be read).
type Stamp = Option<(u64, SystemTime)>;

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// A serving certificate and key loaded from two PEM files, reloaded when
/// they change.
pub struct CertWatcher {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Loaded>,
}

struct Loaded {
    key: Arc<CertifiedKey>,
    stamps: (Stamp, Stamp),
}

impl std::fmt::Debug for CertWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertWatcher")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

impl CertWatcher {
    /// Loads the pair now: a missing, unreadable or mismatched pair is an
    /// error naming the file.
    pub fn load(cert_path: PathBuf, key_path: PathBuf) -> Result<Self, Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let stamps = (stamp(&cert_path), stamp(&key_path));
        let key = load_pair(&cert_path, &key_path, &provider)?;
        Ok(Self {
            cert_path,
            key_path,
            provider,
            current: RwLock::new(Loaded { key, stamps }),
        })
    }

    /// Re-reads the files if they changed since the last load. Returns
    /// whether a new pair is now served; a pair that fails to load is
    /// logged and the previous one kept.
    pub fn reload_if_changed(&self) -> bool {
        let stamps = (stamp(&self.cert_path), stamp(&self.key_path));
        if self.read().stamps == stamps {
            return false;
        }
        match load_pair(&self.cert_path, &self.key_path, &self.provider) {
            Ok(key) => {
                let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
                *current = Loaded { key, stamps };
                tracing::info!(cert = %self.cert_path.display(), "reloaded the webhook serving certificate");
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "keeping the previous webhook serving certificate");
                false
            }
        }
    }

    /// Polls the files every `interval` until `stop` is cancelled.
    pub async fn watch(self: Arc<Self>, interval: Duration, stop: CancellationToken) {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let watcher = Arc::clone(&self);
            // File reads are blocking; keep them off the async workers.
            let _ = tokio::task::spawn_blocking(move || watcher.reload_if_changed()).await;
        }
    }

    /// A rustls server configuration serving this pair (and its reloads),
    /// offering HTTP/2 and HTTP/1.1.
    pub fn server_config(self: &Arc<Self>) -> Result<Arc<rustls::ServerConfig>, Error> {
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::clone(&self.provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Tls(e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(self) as Arc<dyn ResolvesServerCert>);
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Loaded> {
        self.current.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl ResolvesServerCert for CertWatcher {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.read().key))
    }
}

fn load_pair(
    cert_path: &Path,
    key_path: &Path,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, Error> {
    let invalid = |path: &Path, problem: String| Error::Certificate {
        path: path.to_owned(),
        problem,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
        .map_err(|e| invalid(cert_path, e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| invalid(cert_path, e.to_string()))?;
    if certs.is_empty() {
        return Err(invalid(cert_path, "no PEM certificate in the file".into()));
    }
    let key =
        PrivateKeyDer::from_pem_file(key_path).map_err(|e| invalid(key_path, e.to_string()))?;
    let key = CertifiedKey::from_der(certs, key, provider).map_err(|e| {
        invalid(
            key_path,
            format!("does not go with {}: {e}", cert_path.display()),
        )
    })?;
    Ok(Arc::new(key))
}
