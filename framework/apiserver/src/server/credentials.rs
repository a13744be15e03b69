//! `Credentials`: what a client needs to reach the server as one identity,
//! and the kubeconfig they render.

use std::path::Path;

use crate::machinery::error::Error;

/// How a client proves who it is.
#[derive(Clone)]
enum Secret {
    Token(String),
    Certificate { cert_pem: String, key_pem: String },
}

/// What a client needs to reach the server as one identity: the server's
/// URL and CA and a bearer token or a client certificate. It renders a
/// kubeconfig for any client.
#[derive(Clone)]
pub struct Credentials {
    user: String,
    server: String,
    ca_pem: String,
    secret: Secret,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    pub(crate) fn token(user: &str, server: &str, ca_pem: &str, token: String) -> Self {
        Self {
            user: user.to_owned(),
            server: server.to_owned(),
            ca_pem: ca_pem.to_owned(),
            secret: Secret::Token(token),
        }
    }

    pub(crate) fn certificate(
        user: &str,
        server: &str,
        ca_pem: &str,
        cert_pem: String,
        key_pem: String,
    ) -> Self {
        Self {
            user: user.to_owned(),
            server: server.to_owned(),
            ca_pem: ca_pem.to_owned(),
            secret: Secret::Certificate { cert_pem, key_pem },
        }
    }

    /// The user name these credentials authenticate as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The bearer token, for token credentials. Keep it out of logs.
    pub fn bearer_token(&self) -> Option<&str> {
        match &self.secret {
            Secret::Token(t) => Some(t),
            Secret::Certificate { .. } => None,
        }
    }

    /// The client certificate and its private key (PEM), for certificate
    /// credentials.
    pub fn client_certificate(&self) -> Option<(&str, &str)> {
        match &self.secret {
            Secret::Token(_) => None,
            Secret::Certificate { cert_pem, key_pem } => Some((cert_pem, key_pem)),
        }
    }

    fn kubeconfig_user(&self) -> serde_json::Value {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        match &self.secret {
            Secret::Token(t) => serde_json::json!({ "token": t }),
            Secret::Certificate { cert_pem, key_pem } => serde_json::json!({
                "client-certificate-data": b64(cert_pem),
                "client-key-data": b64(key_pem),
            }),
        }
    }

    /// A kubeconfig (YAML) for this identity: the server's cluster, this
    /// user, context [`KUBECONFIG_CONTEXT`](crate::KUBECONFIG_CONTEXT).
    pub fn kubeconfig(&self) -> Result<String, Error> {
        crate::server::kubeconfig::render_user(&self.server, &self.ca_pem, self.kubeconfig_user())
    }

    /// Writes [`kubeconfig`](Self::kubeconfig) to `path`, readable by the
    /// owner only.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let text = self.kubeconfig()?;
        crate::server::kubeconfig::write_text(path.as_ref(), &text)
    }
}
