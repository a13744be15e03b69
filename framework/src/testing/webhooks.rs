//! [`LocalWebhooks`]: envtest's `WebhookInstallOptions` in one value. It
//! makes a CA and a serving certificate for the loopback names, writes
//! them as `tls.crt`/`tls.key` in a fresh directory for the manager's
//! webhook server, and, once the manager is built, points the API server
//! at it: a MutatingWebhookConfiguration and a
//! ValidatingWebhookConfiguration generated from the registered webhooks
//! with `url: https://127.0.0.1:PORT/PATH` and the CA as `caBundle`, and
//! `spec.conversion` of every converted CRD set to `/convert` the same
//! way.
//!
//! ```no_run
//! # async fn demo(server: &kubeforge::testing::ApiServer) -> anyhow::Result<()> {
//! use kubeforge::testing::{ApiServerExt, LocalWebhooks};
//! use kubeforge::Manager;
//!
//! let local = LocalWebhooks::generate()?;
//! let mgr = Manager::builder()
//!     .client(server.client()?)
//!     .webhook_server(local.server_options())
//!     .build()
//!     .await?;
//! // mgr.webhooks().defaulter::<MyKind, _>(...);
//! local.install(&mgr).await?; // configurations and CRDs point at the manager
//! # Ok(())
//! # }
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::params::{Patch, PatchParams};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use serde_json::json;

use crate::webhook::configurations::{self, Target};
use crate::webhook::{WebhookServerOptions, DEFAULT_CERT_NAME, DEFAULT_KEY_NAME};
use crate::{Api, Client, Manager};

/// The field manager of the configurations written.
const FIELD_MANAGER: &str = "kubeforge-local-webhooks";

/// Why the local webhook wiring failed.
#[derive(Debug, thiserror::Error)]
pub enum LocalWebhooksError {
    /// The certificates could not be made.
    #[error("cannot make the webhook certificates: {0}")]
    Certificates(String),
    /// The certificate directory could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The manager has no webhook server bound at build.
    #[error(
        "the manager has no webhook server: build it with .webhook_server(local.server_options())"
    )]
    NoServer,
    /// The API server refused a configuration or a CRD change.
    #[error("{what}: {source}")]
    Api {
        /// What was being written.
        what: String,
        /// The client's error.
        #[source]
        source: crate::Error,
    },
}

/// A CA and serving certificate for a webhook server on this machine, in a
/// directory removed on drop.
#[derive(Debug)]
pub struct LocalWebhooks {
    dir: PathBuf,
    ca_pem: String,
}

impl LocalWebhooks {
    /// Makes a CA and a serving certificate for `localhost`, `127.0.0.1`
    /// and `::1`, written as `tls.crt` and `tls.key` in a new directory.
    pub fn generate() -> Result<Self, LocalWebhooksError> {
        let (ca_pem, cert_pem, key_pem) =
            issue().map_err(|e| LocalWebhooksError::Certificates(e.to_string()))?;
        let dir = std::env::temp_dir().join(format!(
            "kubeforge-webhook-certs-{}-{:016x}",
            std::process::id(),
            fastrand::u64(..)
        ));
        let write = |path: PathBuf, text: &str| {
            std::fs::write(&path, text).map_err(|source| LocalWebhooksError::Write { path, source })
        };
        std::fs::create_dir_all(&dir).map_err(|source| LocalWebhooksError::Write {
            path: dir.clone(),
            source,
        })?;
        let local = LocalWebhooks { dir, ca_pem };
        write(local.dir.join(DEFAULT_CERT_NAME), &cert_pem)?;
        write(local.dir.join(DEFAULT_KEY_NAME), &key_pem)?;
        Ok(local)
    }

    /// The directory holding `tls.crt` and `tls.key`.
    pub fn cert_dir(&self) -> &Path {
        &self.dir
    }

    /// The CA that signed the serving certificate, PEM (the `caBundle`).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Webhook server settings for the manager: `127.0.0.1`, a free port,
    /// this certificate directory.
    pub fn server_options(&self) -> WebhookServerOptions {
        WebhookServerOptions::default()
            .host(IpAddr::V4(Ipv4Addr::LOCALHOST))
            .port(0)
            .cert_dir(&self.dir)
    }

    /// Where the API server reaches a webhook server listening on `addr`.
    pub fn target(&self, addr: SocketAddr) -> Target {
        Target::Url {
            base: format!("https://{addr}"),
            ca_pem: self.ca_pem.clone().into_bytes(),
        }
    }

    /// Points the API server at `manager`'s webhook server: writes the
    /// configurations of its registered admission webhooks (server-side
    /// apply, so it can be called again after more are registered) and
    /// sets `spec.conversion` on each CRD it converts (the CRDs must be
    /// installed).
    pub async fn install(&self, manager: &Manager) -> Result<(), LocalWebhooksError> {
        self.install_with(manager.live_client(), manager).await
    }

    /// [`install`](Self::install) through `client` rather than the
    /// manager's own: an operator running under a service account may not
    /// write webhook configurations or CRDs, its administrator may.
    pub async fn install_with(
        &self,
        client: &Client,
        manager: &Manager,
    ) -> Result<(), LocalWebhooksError> {
        let addr = manager
            .webhook_address()
            .ok_or(LocalWebhooksError::NoServer)?;
        let target = self.target(addr);
        let client = client.clone();
        let webhooks = manager.webhooks();
        let apply = PatchParams::apply(FIELD_MANAGER).force();
        let failed = |what: String| move |source| LocalWebhooksError::Api { what, source };
        if let Some(config) = configurations::mutating(webhooks, &target) {
            let name = config.metadata.name.clone().unwrap_or_default();
            Api::<MutatingWebhookConfiguration>::all(client.clone())
                .patch(&name, &apply, &Patch::Apply(&config))
                .await
                .map_err(failed(format!(
                    "writing MutatingWebhookConfiguration {name}"
                )))?;
        }
        if let Some(config) = configurations::validating(webhooks, &target) {
            let name = config.metadata.name.clone().unwrap_or_default();
            Api::<ValidatingWebhookConfiguration>::all(client.clone())
                .patch(&name, &apply, &Patch::Apply(&config))
                .await
                .map_err(failed(format!(
                    "writing ValidatingWebhookConfiguration {name}"
                )))?;
        }
        let conversion = configurations::conversion(&target);
        let crds = Api::<CustomResourceDefinition>::all(client);
        for name in webhooks.conversion_crds() {
            let patch = json!({"spec": {"conversion": conversion}});
            crds.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(failed(format!(
                    "setting the conversion webhook of CRD {name}"
                )))?;
        }
        Ok(())
    }
}

impl Drop for LocalWebhooks {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A CA, and a serving certificate it signs for the loopback names: the
/// CA's PEM, the certificate's PEM, the key's PEM.
fn issue() -> Result<(String, String, String), rcgen::Error> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "kubeforge-webhook-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
    ];
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let mut params = CertificateParams::new(vec!["localhost".to_owned()])?;
    params.subject_alt_names.extend([
        SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
    ]);
    params
        .distinguished_name
        .push(DnType::CommonName, "kubeforge-webhook-server");
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok((ca_cert.pem(), cert.pem(), key.serialize_pem()))
}
