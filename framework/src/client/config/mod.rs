//! `Config`: where the API server is, how to trust it and how to
//! authenticate. Loading from kubeconfig files and in-cluster service-account
//! files lives in the submodules.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Everything needed to talk to one API server.
#[derive(Clone, Debug)]
pub struct Config {
    /// The API server's base URL, e.g. `https://127.0.0.1:6443`.
    pub cluster_url: http::Uri,
    /// The namespace `Api::default_namespaced` uses.
    pub default_namespace: String,
    /// Extra trusted root certificates (DER). When set, only these are trusted.
    pub root_certs: Option<Vec<Vec<u8>>>,
    /// Skip server certificate verification. Only ever set from an explicit
    /// `insecure-skip-tls-verify: true`.
    pub accept_invalid_certs: bool,
    /// The name to verify the server certificate against, when it differs
    /// from the URL's host.
    pub tls_server_name: Option<String>,
    /// How requests authenticate.
    pub auth: Auth,
    /// A client certificate and key (PEM) for mutual TLS.
    pub client_identity: Option<ClientIdentity>,
    /// Timeout for each non-watch request.
    pub read_timeout: Option<Duration>,
    /// Timeout for establishing a connection.
    pub connect_timeout: Option<Duration>,
}

impl Config {
    /// A config for `cluster_url` with no authentication, the `default`
    /// namespace and the default timeouts.
    pub fn new(cluster_url: http::Uri) -> Self {
        Self {
            cluster_url,
            default_namespace: "default".to_owned(),
            root_certs: None,
            accept_invalid_certs: false,
            tls_server_name: None,
            auth: Auth::None,
            client_identity: None,
            read_timeout: Some(Duration::from_secs(295)),
            connect_timeout: Some(Duration::from_secs(30)),
        }
    }
}

/// How requests authenticate.
#[derive(Clone, Debug, Default)]
pub enum Auth {
    /// No credentials.
    #[default]
    None,
    /// A static bearer token.
    Bearer(SecretString),
    /// A bearer token read from a file and re-read so rotated tokens work.
    TokenFile(PathBuf),
    /// HTTP basic authentication.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: SecretString,
    },
}

/// A client certificate chain and private key, both PEM.
#[derive(Clone)]
pub struct ClientIdentity {
    /// The certificate chain (PEM).
    pub cert_pem: Vec<u8>,
    /// The private key (PEM); never printed.
    pub key_pem: SecretBytes,
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientIdentity")
            .field("cert_pem", &format_args!("<{} bytes>", self.cert_pem.len()))
            .field("key_pem", &self.key_pem)
            .finish()
    }
}

/// A string that never appears in `Debug` or `Display` output.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretString(String);

impl SecretString {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret itself, for the few places that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Bytes that never appear in `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretBytes(Vec<u8>);

impl SecretBytes {
    /// Wraps secret bytes.
    pub fn new(secret: impl Into<Vec<u8>>) -> Self {
        Self(secret.into())
    }

    /// The secret itself, for the few places that must use it.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for SecretBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}
