//! Kubeconfig files: parsing (YAML or JSON), merging several files the way
//! client-go's clientcmd loader does, and turning one context into a
//! [`Config`].
//!
//! Rules followed (client-go tools/clientcmd loader.go, validation.go,
//! api/v1/conversion.go):
//! - `KUBECONFIG` is a path list; missing files are skipped; for clusters,
//!   users, contexts and `current-context` the first file that sets a name
//!   wins.
//! - Relative paths (certificate-authority, client-certificate, client-key,
//!   tokenFile, and an exec command containing a path separator) are
//!   resolved against the directory of the file they came from.
//! - A name appearing twice in one file's list is an error.
//! - `*-data` fields win over their file counterparts; `tokenFile` wins over
//!   `token`; token and basic auth together are an error; a CA together with
//!   `insecure-skip-tls-verify` is an error.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::{Deserialize, Serialize};

use super::{
    Auth, ClientIdentity, Config, Environment, ExecConfig, ExecInteractiveMode, SecretBytes,
    SecretString,
};
use crate::client::error::ConfigError;

/// The exec plugin API versions kubeforge speaks.
pub(crate) const EXEC_V1: &str = "client.authentication.k8s.io/v1";
pub(crate) const EXEC_V1BETA1: &str = "client.authentication.k8s.io/v1beta1";
/// The cluster extension handed to exec plugins as `spec.cluster.config`.
const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// A kubeconfig file (`apiVersion: v1`, `kind: Config`), possibly merged
/// from several files.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Kubeconfig {
    /// Always `v1`.
    #[serde(
        default,
        rename = "apiVersion",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_version: Option<String>,
    /// Always `Config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Named clusters.
    #[serde(default, deserialize_with = "null_as_default")]
    pub clusters: Vec<NamedCluster>,
    /// Named users.
    #[serde(default, rename = "users", deserialize_with = "null_as_default")]
    pub auth_infos: Vec<NamedAuthInfo>,
    /// Named contexts.
    #[serde(default, deserialize_with = "null_as_default")]
    pub contexts: Vec<NamedContext>,
    /// The context used when none is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_context: Option<String>,
    /// The files this config was read from, in precedence order.
    #[serde(skip)]
    pub sources: Vec<PathBuf>,
}

/// A cluster with its name.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NamedCluster {
    /// The name contexts refer to.
    pub name: String,
    /// The cluster.
    #[serde(default)]
    pub cluster: Cluster,
    /// The file this entry came from.
    #[serde(skip)]
    pub origin: Option<PathBuf>,
}

/// How to reach and trust one API server.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    /// The API server URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Path of a PEM CA bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<String>,
    /// Base64 of a PEM CA bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority_data: Option<String>,
    /// Skip server certificate verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_tls_verify: Option<bool>,
    /// The name to verify the server certificate against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_server_name: Option<String>,
    /// An HTTP proxy (not supported by kubeforge: refused with an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,
    /// Extensions, e.g. `client.authentication.k8s.io/exec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<NamedExtension>>,
}

/// A named extension value.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NamedExtension {
    /// The extension's name.
    pub name: String,
    /// Its value.
    #[serde(default)]
    pub extension: serde_json::Value,
}

/// A user with its name.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NamedAuthInfo {
    /// The name contexts refer to.
    pub name: String,
    /// The credentials.
    #[serde(default)]
    pub user: AuthInfo,
    /// The file this entry came from.
    #[serde(skip)]
    pub origin: Option<PathBuf>,
}

/// Credentials for one user. Secrets never appear in `Debug` output.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct AuthInfo {
    /// Path of a PEM client certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<String>,
    /// Base64 of a PEM client certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate_data: Option<String>,
    /// Path of a PEM private key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key: Option<String>,
    /// Base64 of a PEM private key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key_data: Option<SecretString>,
    /// A bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<SecretString>,
    /// A file holding a bearer token, re-read as it rotates.
    #[serde(default, rename = "tokenFile", skip_serializing_if = "Option::is_none")]
    pub token_file: Option<String>,
    /// Basic-auth user name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Basic-auth password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<SecretString>,
    /// An exec credential plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecEntry>,
    /// A legacy auth provider (not supported: use an exec plugin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_provider: Option<serde_json::Value>,
    /// Impersonated user (not supported: refused with an error).
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub impersonate: Option<String>,
}

/// `users[].user.exec` as written in a kubeconfig.
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecEntry {
    /// The ExecCredential API version.
    #[serde(default)]
    pub api_version: Option<String>,
    /// The program.
    #[serde(default)]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Extra environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<ExecEnvVar>>,
    /// Shown when the command is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_hint: Option<String>,
    /// Pass cluster info in `KUBERNETES_EXEC_INFO`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provide_cluster_info: Option<bool>,
    /// `Never`, `IfAvailable` or `Always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interactive_mode: Option<String>,
}

impl std::fmt::Debug for ExecEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecEntry")
            .field("api_version", &self.api_version)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("interactive_mode", &self.interactive_mode)
            .finish_non_exhaustive()
    }
}

/// One environment variable for an exec plugin.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct ExecEnvVar {
    /// The variable's name.
    pub name: String,
    /// Its value (may be secret).
    #[serde(default)]
    pub value: String,
}

/// A context with its name.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NamedContext {
    /// The context's name.
    pub name: String,
    /// The context.
    #[serde(default)]
    pub context: Context,
    /// The file this entry came from.
    #[serde(skip)]
    pub origin: Option<PathBuf>,
}

/// A (cluster, user, namespace) triple.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Context {
    /// The cluster's name.
    #[serde(default)]
    pub cluster: String,
    /// The user's name (may be empty: no credentials).
    #[serde(default)]
    pub user: String,
    /// The default namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Which context, cluster and user to use; unset fields come from the
/// kubeconfig's `current-context`.
#[derive(Clone, Debug, Default)]
pub struct KubeConfigOptions {
    /// Use this context instead of `current-context`.
    pub context: Option<String>,
    /// Use this cluster instead of the context's.
    pub cluster: Option<String>,
    /// Use this user instead of the context's.
    pub user: Option<String>,
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

impl Kubeconfig {
    /// Parses kubeconfig text (YAML or JSON). Relative paths stay relative
    /// to the working directory; use [`Kubeconfig::read_from`] for files.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        let kc = parse(text, None)?;
        kc.check_duplicates(None)?;
        Ok(kc)
    }

    /// Reads the kubeconfig the environment points at: the `KUBECONFIG`
    /// list (merged, first wins), else `~/.kube/config`. Empty when neither
    /// exists.
    pub fn read() -> Result<Self, ConfigError> {
        load_default(&Environment::process())
    }

    /// Serializes to kubeconfig YAML (what `kubectl` reads), e.g. to hand a
    /// test server's address and credentials to other tools.
    pub fn to_yaml(&self) -> Result<String, ConfigError> {
        serde_saphyr::to_string(self).map_err(|e| {
            ConfigError::new("cannot serialize the kubeconfig").caused_by(e.to_string())
        })
    }

    /// Reads one kubeconfig file, resolving its relative paths against its
    /// directory.
    pub fn read_from(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::new("cannot read kubeconfig")
                .in_file(path)
                .caused_by(e)
        })?;
        let mut kc = parse(&text, Some(path))?;
        kc.check_duplicates(Some(path))?;
        let base = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let base = std::path::absolute(&base).unwrap_or(base);
        kc.resolve_paths(&base);
        for c in &mut kc.clusters {
            c.origin = Some(path.to_path_buf());
        }
        for u in &mut kc.auth_infos {
            u.origin = Some(path.to_path_buf());
        }
        for c in &mut kc.contexts {
            c.origin = Some(path.to_path_buf());
        }
        kc.sources = vec![path.to_path_buf()];
        Ok(kc)
    }

    /// Reads and merges files in precedence order: the first file to set a
    /// cluster, user or context name, or `current-context`, wins. Missing
    /// files are skipped, as client-go skips them; unreadable or invalid
    /// ones are errors.
    pub fn read_paths<P: AsRef<Path>>(paths: &[P]) -> Result<Self, ConfigError> {
        let mut merged = Kubeconfig::default();
        for path in paths {
            let path = path.as_ref();
            if path.as_os_str().is_empty() {
                continue;
            }
            if !path.exists() {
                tracing::debug!(path = %path.display(), "kubeconfig in the list does not exist; skipped");
                continue;
            }
            merged = merged.merge(Kubeconfig::read_from(path)?);
        }
        Ok(merged)
    }

    /// Merges `other` into `self`; entries already in `self` win.
    pub fn merge(mut self, other: Kubeconfig) -> Self {
        fn merge_named<T>(into: &mut Vec<T>, from: Vec<T>, name: impl Fn(&T) -> &str) {
            let known: HashSet<String> = into.iter().map(|t| name(t).to_owned()).collect();
            into.extend(from.into_iter().filter(|t| !known.contains(name(t))));
        }
        merge_named(&mut self.clusters, other.clusters, |c| &c.name);
        merge_named(&mut self.auth_infos, other.auth_infos, |u| &u.name);
        merge_named(&mut self.contexts, other.contexts, |c| &c.name);
        if self.current_context.as_deref().unwrap_or("").is_empty() {
            self.current_context = other.current_context;
        }
        if self.api_version.is_none() {
            self.api_version = other.api_version;
        }
        if self.kind.is_none() {
            self.kind = other.kind;
        }
        self.sources.extend(other.sources);
        self
    }

    /// No clusters, users, contexts or current context: nothing to use.
    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
            && self.auth_infos.is_empty()
            && self.contexts.is_empty()
            && self.current_context.as_deref().unwrap_or("").is_empty()
    }

    fn check_duplicates(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        fn check<'a>(
            what: &str,
            names: impl Iterator<Item = &'a str>,
            file: Option<&Path>,
        ) -> Result<(), ConfigError> {
            let mut seen = HashSet::new();
            for name in names {
                if !seen.insert(name) {
                    let e = ConfigError::new(format!("{what} {name:?} appears more than once"));
                    return Err(match file {
                        Some(f) => e.in_file(f),
                        None => e,
                    });
                }
            }
            Ok(())
        }
        check(
            "cluster",
            self.clusters.iter().map(|c| c.name.as_str()),
            file,
        )?;
        check(
            "user",
            self.auth_infos.iter().map(|u| u.name.as_str()),
            file,
        )?;
        check(
            "context",
            self.contexts.iter().map(|c| c.name.as_str()),
            file,
        )
    }

    fn resolve_paths(&mut self, base: &Path) {
        fn resolve(p: &mut Option<String>, base: &Path) {
            if let Some(s) = p {
                if !s.is_empty() && !Path::new(s.as_str()).is_absolute() {
                    *s = base.join(&*s).to_string_lossy().into_owned();
                }
            }
        }
        for c in &mut self.clusters {
            resolve(&mut c.cluster.certificate_authority, base);
        }
        for u in &mut self.auth_infos {
            let user = &mut u.user;
            resolve(&mut user.client_certificate, base);
            resolve(&mut user.client_key, base);
            resolve(&mut user.token_file, base);
            if let Some(exec) = &mut user.exec {
                // Only commands naming a path are resolved; bare names are
                // looked up in PATH (client-go GetAuthInfoFileReferences).
                if exec
                    .command
                    .as_deref()
                    .is_some_and(|c| c.contains(std::path::MAIN_SEPARATOR))
                {
                    resolve(&mut exec.command, base);
                }
            }
        }
    }

    /// Builds the [`Config`] for the chosen context.
    pub fn to_config(&self, options: &KubeConfigOptions) -> Result<Config, ConfigError> {
        let in_sources = |e: ConfigError| match self.sources.as_slice() {
            [one] if e.file.is_none() => e.in_file(one),
            _ => e,
        };

        let context_name = options
            .context
            .as_deref()
            .or(self.current_context.as_deref())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                in_sources(ConfigError::new(
                    "no current-context is set and no context was given",
                ))
            })?;
        let context = self
            .contexts
            .iter()
            .find(|c| c.name == context_name)
            .ok_or_else(|| {
                in_sources(ConfigError::new(format!(
                    "context {context_name:?} not found"
                )))
            })?;
        let ctx_err = |e: ConfigError| match &context.origin {
            Some(f) => e.in_file(f),
            None => in_sources(e),
        };

        let cluster_name = options
            .cluster
            .as_deref()
            .unwrap_or(&context.context.cluster);
        if cluster_name.is_empty() {
            return Err(ctx_err(
                ConfigError::new("no cluster is set").at(format!("context {context_name:?}")),
            ));
        }
        let cluster = self
            .clusters
            .iter()
            .find(|c| c.name == cluster_name)
            .ok_or_else(|| {
                ctx_err(
                    ConfigError::new(format!("cluster {cluster_name:?} not found"))
                        .at(format!("context {context_name:?}")),
                )
            })?;

        let user_name = options.user.as_deref().unwrap_or(&context.context.user);
        let user = if user_name.is_empty() {
            None
        } else {
            Some(
                self.auth_infos
                    .iter()
                    .find(|u| u.name == user_name)
                    .ok_or_else(|| {
                        ctx_err(
                            ConfigError::new(format!("user {user_name:?} not found"))
                                .at(format!("context {context_name:?}")),
                        )
                    })?,
            )
        };

        let mut config = cluster_config(cluster).map_err(|e| match &cluster.origin {
            Some(f) if e.file.is_none() => e.in_file(f),
            _ => in_sources(e),
        })?;
        if let Some(user) = user {
            apply_user(&mut config, user, &cluster.cluster).map_err(|e| match &user.origin {
                Some(f) if e.file.is_none() => e.in_file(f),
                _ => in_sources(e),
            })?;
        }
        if let Some(ns) = context
            .context
            .namespace
            .as_deref()
            .filter(|s| !s.is_empty())
        {
            config.default_namespace = ns.to_owned();
        }
        Ok(config)
    }
}

fn parse(text: &str, file: Option<&Path>) -> Result<Kubeconfig, ConfigError> {
    if text.trim().is_empty() {
        return Ok(Kubeconfig::default());
    }
    serde_saphyr::from_str::<Kubeconfig>(text).map_err(|e| {
        let err = ConfigError::new("not a valid kubeconfig").caused_by(e.to_string());
        match file {
            Some(f) => err.in_file(f),
            None => err,
        }
    })
}

fn decode_b64(field: &str, data: &str) -> Result<Vec<u8>, ConfigError> {
    // Kubeconfigs written by hand sometimes wrap base64 across lines.
    let compact: String = data.split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .map_err(|e| ConfigError::new(format!("{field} is not valid base64")).caused_by(e))
}

fn read_file(field: &str, path: &str) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path)
        .map_err(|e| ConfigError::new(format!("cannot read {field} {path}")).caused_by(e))
}

/// Parses a PEM bundle into DER certificates.
pub(crate) fn pem_certificates(field: &str, pem: &[u8]) -> Result<Vec<Vec<u8>>, ConfigError> {
    let mut out = Vec::new();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| {
            ConfigError::new(format!("{field} is not a valid PEM certificate bundle"))
                .caused_by(e.to_string())
        })?;
        out.push(cert.to_vec());
    }
    if out.is_empty() {
        return Err(ConfigError::new(format!(
            "{field} contains no PEM certificate"
        )));
    }
    Ok(out)
}

fn cluster_config(named: &NamedCluster) -> Result<Config, ConfigError> {
    let entry = format!("cluster {:?}", named.name);
    let cluster = &named.cluster;
    let err = |problem: String| ConfigError::new(problem).at(entry.clone());

    let server = cluster
        .server
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| err("no server is set".to_owned()))?;
    let uri: http::Uri = server.parse().map_err(|e: http::uri::InvalidUri| {
        err(format!("server {server:?} is not a valid URL: {e}"))
    })?;
    match uri.scheme_str() {
        Some("https") | Some("http") => {}
        _ => {
            return Err(err(format!(
                "server {server:?} must start with https:// or http://"
            )))
        }
    }
    if uri.host().is_none() {
        return Err(err(format!("server {server:?} has no host")));
    }
    if cluster.proxy_url.as_deref().is_some_and(|p| !p.is_empty()) {
        return Err(err("proxy-url is not supported by kubeforge".to_owned()));
    }

    let mut config = Config::new(uri);
    let ca_pem = match (
        cluster
            .certificate_authority_data
            .as_deref()
            .filter(|s| !s.is_empty()),
        cluster
            .certificate_authority
            .as_deref()
            .filter(|s| !s.is_empty()),
    ) {
        (Some(data), _) => {
            Some(decode_b64("certificate-authority-data", data).map_err(|e| e.at(entry.clone()))?)
        }
        (None, Some(path)) => {
            Some(read_file("certificate-authority", path).map_err(|e| e.at(entry.clone()))?)
        }
        (None, None) => None,
    };
    let insecure = cluster.insecure_skip_tls_verify == Some(true);
    if let Some(pem) = ca_pem {
        if insecure {
            // client-go transport: "specifying a root certificates file with
            // the insecure flag is not allowed".
            return Err(err(
                "certificate-authority and insecure-skip-tls-verify cannot both be set".to_owned(),
            ));
        }
        let field = if cluster.certificate_authority_data.is_some() {
            "certificate-authority-data"
        } else {
            "certificate-authority"
        };
        config.root_certs = Some(pem_certificates(field, &pem).map_err(|e| e.at(entry.clone()))?);
    }
    config.accept_invalid_certs = insecure;
    config.tls_server_name = cluster.tls_server_name.clone().filter(|s| !s.is_empty());
    Ok(config)
}

fn apply_user(
    config: &mut Config,
    named: &NamedAuthInfo,
    cluster: &Cluster,
) -> Result<(), ConfigError> {
    let entry = format!("user {:?}", named.name);
    let user = &named.user;
    let err = |problem: String| ConfigError::new(problem).at(entry.clone());
    let nonempty = |s: &Option<String>| s.as_deref().filter(|s| !s.is_empty()).map(str::to_owned);

    if user.auth_provider.is_some() {
        return Err(err(
            "auth-provider is not supported; use an exec credential plugin".to_owned(),
        ));
    }
    if nonempty(&user.impersonate).is_some() {
        return Err(err(
            "impersonation (as) is not supported by kubeforge".to_owned()
        ));
    }

    // Client certificate: data wins over file (client-go validation.go).
    let cert = match (
        nonempty(&user.client_certificate_data),
        nonempty(&user.client_certificate),
    ) {
        (Some(d), _) => {
            Some(decode_b64("client-certificate-data", &d).map_err(|e| e.at(entry.clone()))?)
        }
        (None, Some(p)) => {
            Some(read_file("client-certificate", &p).map_err(|e| e.at(entry.clone()))?)
        }
        _ => None,
    };
    let key_data = user
        .client_key_data
        .as_ref()
        .map(|s| s.expose())
        .filter(|s| !s.is_empty());
    let key = match (key_data, nonempty(&user.client_key)) {
        (Some(d), _) => Some(decode_b64("client-key-data", d).map_err(|e| e.at(entry.clone()))?),
        (None, Some(p)) => Some(read_file("client-key", &p).map_err(|e| e.at(entry.clone()))?),
        _ => None,
    };
    match (cert, key) {
        (Some(cert_pem), Some(key_pem)) => {
            pem_certificates("client-certificate", &cert_pem).map_err(|e| e.at(entry.clone()))?;
            PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
                err("client-key is not a valid PEM private key".to_owned()).caused_by(e.to_string())
            })?;
            config.client_identity = Some(ClientIdentity {
                cert_pem,
                key_pem: SecretBytes::new(key_pem),
            });
        }
        (Some(_), None) => {
            return Err(err(
                "client-certificate is set but client-key(-data) is missing".to_owned(),
            ))
        }
        (None, Some(_)) => {
            return Err(err(
                "client-key is set but client-certificate(-data) is missing".to_owned(),
            ))
        }
        (None, None) => {}
    }

    let token = user
        .token
        .as_ref()
        .filter(|t| !t.expose().is_empty())
        .cloned();
    let token_file = nonempty(&user.token_file);
    let basic = user.username.as_deref().filter(|s| !s.is_empty()).is_some()
        || user
            .password
            .as_ref()
            .is_some_and(|p| !p.expose().is_empty());
    if (token.is_some() || token_file.is_some()) && basic {
        return Err(err(
            "more than one authentication method found (token and basic auth); only one is allowed"
                .to_owned(),
        ));
    }

    config.auth = if let Some(path) = token_file {
        // client-go: the file's value, once read, takes precedence over `token`.
        if !Path::new(&path).exists() {
            return Err(err(format!("tokenFile {path} does not exist")));
        }
        Auth::TokenFile(PathBuf::from(path))
    } else if let Some(token) = token {
        Auth::Bearer(token)
    } else if basic {
        Auth::Basic {
            username: user.username.clone().unwrap_or_default(),
            password: user
                .password
                .clone()
                .unwrap_or_else(|| SecretString::new("")),
        }
    } else if let Some(exec) = &user.exec {
        Auth::Exec(exec_config(exec, cluster).map_err(|e| e.at(entry.clone()))?)
    } else {
        Auth::None
    };
    if user.exec.is_some() && !matches!(config.auth, Auth::Exec(_)) {
        // client-go's exec round-tripper steps aside when the request already
        // carries credentials.
        tracing::debug!(user = %named.name, "static credentials set; exec plugin not used");
    }
    Ok(())
}

fn exec_config(exec: &ExecEntry, cluster: &Cluster) -> Result<ExecConfig, ConfigError> {
    let command = exec
        .command
        .clone()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| ConfigError::new("exec: command must be specified"))?;
    let api_version = exec
        .api_version
        .clone()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ConfigError::new("exec: apiVersion must be specified"))?;
    if api_version != EXEC_V1 && api_version != EXEC_V1BETA1 {
        return Err(ConfigError::new(format!(
            "exec: apiVersion {api_version:?} is not supported (use {EXEC_V1} or {EXEC_V1BETA1})"
        )));
    }
    let interactive_mode = match exec.interactive_mode.as_deref() {
        Some("Never") => ExecInteractiveMode::Never,
        Some("IfAvailable") => ExecInteractiveMode::IfAvailable,
        Some("Always") => ExecInteractiveMode::Always,
        Some("") | None if api_version == EXEC_V1 => {
            // Required from v1 on (client-go validation).
            return Err(ConfigError::new(
                "exec: interactiveMode must be specified for client.authentication.k8s.io/v1",
            ));
        }
        Some("") | None => ExecInteractiveMode::IfAvailable,
        Some(other) => {
            return Err(ConfigError::new(format!(
                "exec: interactiveMode {other:?} is not one of Never, IfAvailable, Always"
            )))
        }
    };
    let mut env = Vec::new();
    for var in exec.env.iter().flatten() {
        if var.name.is_empty() {
            return Err(ConfigError::new("exec: an env entry has no name"));
        }
        env.push((var.name.clone(), var.value.clone()));
    }
    let cluster_config = cluster
        .extensions
        .iter()
        .flatten()
        .find(|e| e.name == EXEC_EXTENSION)
        .map(|e| e.extension.clone());
    Ok(ExecConfig {
        api_version,
        command,
        args: exec.args.clone().unwrap_or_default(),
        env,
        interactive_mode,
        provide_cluster_info: exec.provide_cluster_info.unwrap_or(false),
        cluster_config,
        install_hint: exec.install_hint.clone(),
    })
}

/// The kubeconfig the environment points at: the `KUBECONFIG` list, else
/// `~/.kube/config`. Empty when neither exists.
pub(crate) fn load_default(env: &Environment) -> Result<Kubeconfig, ConfigError> {
    if let Some(list) = env.var("KUBECONFIG") {
        let paths: Vec<PathBuf> = std::env::split_paths(&list).collect();
        return Kubeconfig::read_paths(&paths);
    }
    match &env.home {
        Some(home) => {
            let path = home.join(".kube").join("config");
            if path.exists() {
                Kubeconfig::read_from(&path)
            } else {
                Ok(Kubeconfig::default())
            }
        }
        None => Ok(Kubeconfig::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::config::{infer_in, Environment};
    use std::fs;

    fn ca_pem() -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["ca.test".to_owned()]).unwrap();
        params.self_signed(&key).unwrap().pem()
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        fs::write(&p, text).unwrap();
        p
    }

    const FIRST: &str = r#"
apiVersion: v1
kind: Config
current-context: first
clusters:
- name: shared
  cluster:
    server: https://first.example:6443
- name: only-first
  cluster:
    server: https://only-first.example
users:
- name: shared
  user:
    token: first-token
contexts:
- name: first
  context: {cluster: shared, user: shared, namespace: team-a}
"#;

    const SECOND: &str = r#"
apiVersion: v1
kind: Config
current-context: second
clusters:
- name: shared
  cluster:
    server: https://second.example:6443
- name: only-second
  cluster:
    server: https://only-second.example
users:
- name: shared
  user:
    token: second-token
- name: second-user
  user:
    username: bob
    password: hunter2
contexts:
- name: second
  context: {cluster: only-second, user: second-user}
"#;

    #[test]
    fn merge_is_first_wins_like_clientcmd() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a", FIRST);
        let b = write(dir.path(), "b", SECOND);
        let missing = dir.path().join("missing");
        let kc = Kubeconfig::read_paths(&[missing, a.clone(), b.clone()]).unwrap();
        assert_eq!(kc.current_context.as_deref(), Some("first"));
        let names: Vec<_> = kc.clusters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["shared", "only-first", "only-second"]);
        let shared = kc.clusters.iter().find(|c| c.name == "shared").unwrap();
        assert_eq!(
            shared.cluster.server.as_deref(),
            Some("https://first.example:6443")
        );
        assert_eq!(shared.origin.as_deref(), Some(a.as_path()));
        assert_eq!(kc.sources, [a, b]);

        let config = kc.to_config(&KubeConfigOptions::default()).unwrap();
        assert_eq!(config.cluster_url, "https://first.example:6443/");
        assert_eq!(config.default_namespace, "team-a");
        match &config.auth {
            Auth::Bearer(t) => assert_eq!(t.expose(), "first-token"),
            other => panic!("unexpected auth {other:?}"),
        }

        // An explicit context from the second file, with basic auth and the
        // default namespace.
        let opts = KubeConfigOptions {
            context: Some("second".into()),
            ..Default::default()
        };
        let config = kc.to_config(&opts).unwrap();
        assert_eq!(config.cluster_url, "https://only-second.example/");
        assert_eq!(config.default_namespace, "default");
        match &config.auth {
            Auth::Basic { username, password } => {
                assert_eq!(username, "bob");
                assert_eq!(password.expose(), "hunter2");
            }
            other => panic!("unexpected auth {other:?}"),
        }
    }

    #[test]
    fn explicit_cluster_and_user_override_the_context() {
        let kc = Kubeconfig::from_yaml(FIRST).unwrap();
        let opts = KubeConfigOptions {
            context: None,
            cluster: Some("only-first".into()),
            user: None,
        };
        let config = kc.to_config(&opts).unwrap();
        assert_eq!(config.cluster_url, "https://only-first.example/");
    }

    #[test]
    fn duplicate_names_in_one_file_are_an_error() {
        let text = r#"
clusters:
- name: c
  cluster: {server: "https://a"}
- name: c
  cluster: {server: "https://b"}
"#;
        let err = Kubeconfig::from_yaml(text).unwrap_err();
        assert!(
            err.to_string()
                .contains("cluster \"c\" appears more than once"),
            "{err}"
        );
    }

    #[test]
    fn relative_paths_resolve_against_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        fs::write(sub.join("ca.pem"), ca_pem()).unwrap();
        fs::write(sub.join("token"), "file-token\n").unwrap();
        let kc_path = write(
            &sub,
            "config",
            r#"
current-context: c
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: ca.pem, tls-server-name: api.internal}
users:
- name: u
  user: {tokenFile: token, token: ignored}
- name: e
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: ./bin/plugin
- name: p
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: plugin-on-path
contexts:
- name: c
  context: {cluster: c, user: u}
- name: e
  context: {cluster: c, user: e}
- name: p
  context: {cluster: c, user: p}
"#,
        );
        let kc = Kubeconfig::read_from(&kc_path).unwrap();
        let config = kc.to_config(&KubeConfigOptions::default()).unwrap();
        assert_eq!(config.root_certs.as_ref().map(Vec::len), Some(1));
        assert_eq!(config.tls_server_name.as_deref(), Some("api.internal"));
        match &config.auth {
            Auth::TokenFile(p) => assert_eq!(p, &std::path::absolute(sub.join("token")).unwrap()),
            other => panic!("unexpected auth {other:?}"),
        }
        let ctx = |name: &str| KubeConfigOptions {
            context: Some(name.into()),
            ..Default::default()
        };
        match kc.to_config(&ctx("e")).unwrap().auth {
            Auth::Exec(e) => {
                assert_eq!(e.command, sub.join("./bin/plugin").to_string_lossy());
                assert_eq!(e.interactive_mode, ExecInteractiveMode::IfAvailable);
            }
            other => panic!("unexpected auth {other:?}"),
        }
        match kc.to_config(&ctx("p")).unwrap().auth {
            Auth::Exec(e) => assert_eq!(e.command, "plugin-on-path"),
            other => panic!("unexpected auth {other:?}"),
        }
    }

    #[test]
    fn ca_data_client_cert_data_and_insecure() {
        let ca = ca_pem();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["me".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let text = format!(
            r#"
current-context: c
clusters:
- name: c
  cluster:
    server: https://10.0.0.1
    certificate-authority-data: {ca}
- name: insecure
  cluster:
    server: https://10.0.0.2
    insecure-skip-tls-verify: true
- name: both
  cluster:
    server: https://10.0.0.3
    insecure-skip-tls-verify: true
    certificate-authority-data: {ca}
users:
- name: u
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
contexts:
- name: c
  context: {{cluster: c, user: u}}
- name: insecure
  context: {{cluster: insecure, user: u}}
- name: both
  context: {{cluster: both, user: u}}
"#,
            ca = b64(&ca),
            cert = b64(&cert.pem()),
            key = b64(&key.serialize_pem()),
        );
        let kc = Kubeconfig::from_yaml(&text).unwrap();
        let config = kc.to_config(&KubeConfigOptions::default()).unwrap();
        assert!(!config.accept_invalid_certs);
        assert_eq!(config.root_certs.as_ref().map(Vec::len), Some(1));
        let identity = config.client_identity.as_ref().unwrap();
        assert_eq!(identity.cert_pem, cert.pem().as_bytes());
        // The key never shows in Debug output.
        let debug = format!("{config:?}");
        assert!(!debug.contains("PRIVATE KEY"), "{debug}");
        assert!(debug.contains("<redacted>"));

        let opts = |c: &str| KubeConfigOptions {
            context: Some(c.into()),
            ..Default::default()
        };
        let insecure = kc.to_config(&opts("insecure")).unwrap();
        assert!(insecure.accept_invalid_certs);
        assert!(insecure.root_certs.is_none());
        let err = kc.to_config(&opts("both")).unwrap_err();
        assert!(err.to_string().contains("cluster \"both\""), "{err}");
    }

    #[test]
    fn exec_entries_become_exec_config() {
        let text = r#"
current-context: c
clusters:
- name: c
  cluster:
    server: https://10.0.0.1
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {audience: kubeforge}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: get-token
      args: [--cluster, c]
      env: [{name: REGION, value: "eu"}]
      interactiveMode: Never
      provideClusterInfo: true
- name: no-mode
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: x}
- name: alpha
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}
contexts:
- name: c
  context: {cluster: c, user: u}
- name: no-mode
  context: {cluster: c, user: no-mode}
- name: alpha
  context: {cluster: c, user: alpha}
"#;
        let kc = Kubeconfig::from_yaml(text).unwrap();
        let Auth::Exec(exec) = kc.to_config(&KubeConfigOptions::default()).unwrap().auth else {
            panic!("expected exec auth");
        };
        assert_eq!(exec.api_version, EXEC_V1);
        assert_eq!(exec.args, ["--cluster", "c"]);
        assert_eq!(exec.env, [("REGION".to_owned(), "eu".to_owned())]);
        assert_eq!(exec.interactive_mode, ExecInteractiveMode::Never);
        assert!(exec.provide_cluster_info);
        assert_eq!(
            exec.cluster_config,
            Some(serde_json::json!({"audience": "kubeforge"}))
        );

        let opts = |c: &str| KubeConfigOptions {
            context: Some(c.into()),
            ..Default::default()
        };
        let err = kc.to_config(&opts("no-mode")).unwrap_err().to_string();
        assert!(
            err.contains("user \"no-mode\"") && err.contains("interactiveMode"),
            "{err}"
        );
        let err = kc.to_config(&opts("alpha")).unwrap_err().to_string();
        assert!(err.contains("v1alpha1"), "{err}");
    }

    #[test]
    fn unusable_entries_name_file_entry_and_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "kc",
            r#"
current-context: c
clusters:
- name: c
  cluster: {server: "https://10.0.0.1", certificate-authority: /nonexistent/ca.pem}
- name: noserver
  cluster: {}
- name: badurl
  cluster: {server: "ftp://x"}
users:
- name: certonly
  user: {client-certificate-data: aGVsbG8=}
- name: both
  user: {token: t, username: u, password: p}
- name: badkey
  user: {client-key-data: "!!notbase64"}
- name: provider
  user: {auth-provider: {name: gcp}}
contexts:
- name: c
  context: {cluster: c}
- name: noserver
  context: {cluster: noserver}
- name: badurl
  context: {cluster: badurl}
- name: missing-cluster
  context: {cluster: nope}
- name: missing-user
  context: {cluster: noserver, user: nope}
- name: certonly
  context: {cluster: badurl, user: certonly}
"#,
        );
        let kc = Kubeconfig::read_from(&path).unwrap();
        let check = |ctx: &str, needles: &[&str]| {
            let opts = KubeConfigOptions {
                context: Some(ctx.into()),
                ..Default::default()
            };
            let msg = kc.to_config(&opts).unwrap_err().to_string();
            assert!(msg.contains(&path.display().to_string()), "{msg}");
            for n in needles {
                assert!(msg.contains(n), "{ctx}: {msg:?} lacks {n:?}");
            }
        };
        check(
            "c",
            &[
                "cluster \"c\"",
                "cannot read certificate-authority /nonexistent/ca.pem",
            ],
        );
        check("noserver", &["cluster \"noserver\"", "no server"]);
        check("badurl", &["cluster \"badurl\"", "https://"]);
        check(
            "missing-cluster",
            &["context \"missing-cluster\"", "cluster \"nope\" not found"],
        );
        check("missing-user", &["user \"nope\" not found"]);
        check("nope", &["context \"nope\" not found"]);

        let user_err = |user: &str| {
            let opts = KubeConfigOptions {
                context: Some("c".into()),
                cluster: Some("badurl".into()),
                user: Some(user.into()),
            };
            // Cluster errors come first; point at a usable cluster instead.
            let mut kc = kc.clone();
            kc.clusters.push(NamedCluster {
                name: "ok".into(),
                cluster: Cluster {
                    server: Some("https://ok".into()),
                    ..Default::default()
                },
                origin: None,
            });
            let opts = KubeConfigOptions {
                cluster: Some("ok".into()),
                ..opts
            };
            kc.to_config(&opts).unwrap_err().to_string()
        };
        assert!(user_err("certonly").contains("client-key(-data) is missing"));
        assert!(user_err("both").contains("more than one authentication method"));
        assert!(user_err("badkey").contains("client-key-data is not valid base64"));
        assert!(user_err("provider").contains("auth-provider is not supported"));
    }

    #[test]
    fn yaml_round_trip_keeps_what_kubectl_reads() {
        let kc = Kubeconfig::from_yaml(FIRST).unwrap();
        let yaml = kc.to_yaml().unwrap();
        assert!(yaml.contains("current-context: first"), "{yaml}");
        assert!(
            !yaml.contains("certificate-authority"),
            "absent fields stay absent: {yaml}"
        );
        let back = Kubeconfig::from_yaml(&yaml).unwrap();
        let config = back.to_config(&KubeConfigOptions::default()).unwrap();
        assert_eq!(config.cluster_url, "https://first.example:6443/");
        assert_eq!(config.default_namespace, "team-a");
        match config.auth {
            Auth::Bearer(t) => assert_eq!(t.expose(), "first-token"),
            other => panic!("unexpected auth {other:?}"),
        }
    }

    #[test]
    fn invalid_yaml_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "broken", "clusters: [\n  - {name: x, cluster: ");
        let err = Kubeconfig::read_from(&path).unwrap_err().to_string();
        assert!(
            err.contains("broken") && err.contains("not a valid kubeconfig"),
            "{err}"
        );
        // An invalid file in the KUBECONFIG list is an error, not skipped.
        assert!(Kubeconfig::read_paths(&[path]).is_err());
        // An empty file is an empty config.
        let empty = write(dir.path(), "empty", "");
        assert!(Kubeconfig::read_from(&empty).unwrap().is_empty());
    }

    #[test]
    fn infer_order_kubeconfig_env_then_home_then_incluster() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        fs::create_dir_all(home.join(".kube")).unwrap();
        let sa = dir.path().join("sa");
        fs::create_dir_all(&sa).unwrap();
        fs::write(sa.join("token"), "sa-token").unwrap();
        fs::write(sa.join("ca.crt"), ca_pem()).unwrap();
        fs::write(sa.join("namespace"), "pod-ns\n").unwrap();
        let a = write(dir.path(), "a", FIRST);
        let b = write(dir.path(), "b", SECOND);
        let list = std::env::join_paths([&b, &a])
            .unwrap()
            .into_string()
            .unwrap();
        let opts = KubeConfigOptions::default();

        // KUBECONFIG wins, merged first-wins: b comes first.
        let env = Environment::fixed(&[("KUBECONFIG", &list)], Some(&home), &sa);
        let config = infer_in(&env, &opts).unwrap();
        assert_eq!(config.cluster_url, "https://only-second.example/");

        // No KUBECONFIG: ~/.kube/config.
        fs::write(home.join(".kube").join("config"), FIRST).unwrap();
        let env = Environment::fixed(&[], Some(&home), &sa);
        assert_eq!(
            infer_in(&env, &opts).unwrap().cluster_url,
            "https://first.example:6443/"
        );

        // Nothing there: in-cluster.
        fs::remove_file(home.join(".kube").join("config")).unwrap();
        let env = Environment::fixed(
            &[
                ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
                ("KUBERNETES_SERVICE_PORT", "443"),
            ],
            Some(&home),
            &sa,
        );
        let config = infer_in(&env, &opts).unwrap();
        assert_eq!(config.cluster_url, "https://10.96.0.1:443/");
        assert_eq!(config.default_namespace, "pod-ns");

        // KUBECONFIG naming only missing files also falls back.
        let env = Environment::fixed(
            &[
                ("KUBECONFIG", dir.path().join("nope").to_str().unwrap()),
                ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
                ("KUBERNETES_SERVICE_PORT", "443"),
            ],
            Some(&home),
            &sa,
        );
        assert_eq!(
            infer_in(&env, &opts).unwrap().cluster_url,
            "https://10.96.0.1:443/"
        );

        // Neither: an error saying where we looked.
        let env = Environment::fixed(&[], Some(&home), &sa);
        let err = infer_in(&env, &opts).unwrap_err().to_string();
        assert!(
            err.contains(".kube/config") && err.contains("KUBERNETES_SERVICE_HOST"),
            "{err}"
        );
    }

    fn bearer(config: &Config) -> &str {
        match &config.auth {
            crate::client::config::Auth::Bearer(t) => t.expose(),
            other => panic!("unexpected auth {other:?}"),
        }
    }

    /// client-go's `ClientConfigLoadingRules` + `ConfigOverrides`: the
    /// files merge first (first wins), then the override picks the context,
    /// whose cluster and user come from the merged result.
    #[test]
    fn infer_with_applies_the_overrides_to_the_merged_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        let sa = dir.path().join("sa");
        let a = write(dir.path(), "a", FIRST);
        let b = write(dir.path(), "b", SECOND);
        let list = std::env::join_paths([&b, &a])
            .unwrap()
            .into_string()
            .unwrap();
        let env = Environment::fixed(&[("KUBECONFIG", &list)], None, &sa);

        // b's current-context without an override.
        let config = infer_in(&env, &KubeConfigOptions::default()).unwrap();
        assert_eq!(config.cluster_url, "https://only-second.example/");

        // --context first: a's context, the merged (b's) `shared` entries.
        let first = KubeConfigOptions {
            context: Some("first".into()),
            ..Default::default()
        };
        let config = infer_in(&env, &first).unwrap();
        assert_eq!(config.cluster_url, "https://second.example:6443/");
        assert_eq!(bearer(&config), "second-token");
        assert_eq!(config.default_namespace, "team-a");

        // --cluster and --user on top of the current context.
        let overridden = KubeConfigOptions {
            context: None,
            cluster: Some("only-first".into()),
            user: Some("shared".into()),
        };
        let config = infer_in(&env, &overridden).unwrap();
        assert_eq!(config.cluster_url, "https://only-first.example/");
        assert_eq!(bearer(&config), "second-token");

        // A context no file has is an error naming it.
        let missing = KubeConfigOptions {
            context: Some("nope".into()),
            ..Default::default()
        };
        let err = infer_in(&env, &missing).unwrap_err().to_string();
        assert!(err.contains("context \"nope\" not found"), "{err}");
    }

    /// In a pod, no kubeconfig means the service account — but a named
    /// context, cluster or user exists only in a kubeconfig, so asking for
    /// one without a kubeconfig is an error (kubectl --context x says so
    /// too), not a silent switch to in-cluster.
    #[test]
    fn infer_with_a_named_context_and_no_kubeconfig_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        fs::create_dir_all(&home).unwrap();
        let sa = dir.path().join("sa");
        fs::create_dir_all(&sa).unwrap();
        fs::write(sa.join("token"), "sa-token").unwrap();
        fs::write(sa.join("ca.crt"), ca_pem()).unwrap();
        let env = Environment::fixed(
            &[
                ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
                ("KUBERNETES_SERVICE_PORT", "443"),
            ],
            Some(&home),
            &sa,
        );
        let config = infer_in(&env, &KubeConfigOptions::default()).unwrap();
        assert_eq!(config.cluster_url, "https://10.96.0.1:443/");

        for (field, options) in [
            (
                "context \"staging\"",
                KubeConfigOptions {
                    context: Some("staging".into()),
                    ..Default::default()
                },
            ),
            (
                "cluster \"prod\"",
                KubeConfigOptions {
                    cluster: Some("prod".into()),
                    ..Default::default()
                },
            ),
            (
                "user \"admin\"",
                KubeConfigOptions {
                    user: Some("admin".into()),
                    ..Default::default()
                },
            ),
        ] {
            let err = infer_in(&env, &options).unwrap_err().to_string();
            assert!(
                err.contains(field) && err.contains(".kube/config"),
                "{field}: {err}"
            );
        }
        // An empty name is no override.
        let empty = KubeConfigOptions {
            context: Some(String::new()),
            ..Default::default()
        };
        assert!(infer_in(&env, &empty).is_ok());
    }

    /// `--kubeconfig PATH` (client-go's `ExplicitPath`): that file alone,
    /// with the overrides; a missing file is an error naming it.
    #[tokio::test]
    async fn from_kubeconfig_file_reads_that_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a", FIRST);
        let config = Config::from_kubeconfig_file(&a, &KubeConfigOptions::default())
            .await
            .unwrap();
        assert_eq!(config.cluster_url, "https://first.example:6443/");
        assert_eq!(bearer(&config), "first-token");

        let b = write(dir.path(), "b", SECOND);
        let shared = KubeConfigOptions {
            context: Some("second".into()),
            user: Some("shared".into()),
            ..Default::default()
        };
        let config = Config::from_kubeconfig_file(&b, &shared).await.unwrap();
        assert_eq!(config.cluster_url, "https://only-second.example/");
        assert_eq!(bearer(&config), "second-token");

        // The context of another file is not there.
        let first = KubeConfigOptions {
            context: Some("first".into()),
            ..Default::default()
        };
        let err = Config::from_kubeconfig_file(&b, &first)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("context \"first\" not found"), "{err}");
        assert!(err.contains(&b.display().to_string()), "{err}");

        let missing = dir.path().join("missing");
        let err = Config::from_kubeconfig_file(&missing, &KubeConfigOptions::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(&missing.display().to_string()), "{err}");
    }
}
