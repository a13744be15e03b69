//! `Config`: where the API server is, how to trust it and how to
//! authenticate. Loading from kubeconfig files ([`kubeconfig`]) and
//! in-cluster service-account files ([`incluster`]) lives in the submodules;
//! [`Config::infer`] picks between them the way client-go's clientcmd does.

pub mod incluster;
pub mod kubeconfig;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::error::{ConfigError, Error};
pub use kubeconfig::{KubeConfigOptions, Kubeconfig};

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

    /// The configuration the environment points at, as client-go's
    /// clientcmd finds it: the files in `KUBECONFIG` (merged, first value
    /// wins), else `~/.kube/config`, and when those give nothing, the
    /// in-cluster service account.
    pub async fn infer() -> Result<Self, Error> {
        Self::infer_with(&KubeConfigOptions::default()).await
    }

    /// [`Config::infer`] with a context, cluster or user chosen over the
    /// kubeconfig's own (a `--context` flag), as client-go's
    /// `ClientConfigLoadingRules` with `ConfigOverrides` do: the overrides
    /// apply to the kubeconfig the environment points at, and without one
    /// the in-cluster service account is used — unless an override names a
    /// context, cluster or user, which only a kubeconfig can have: then
    /// the missing kubeconfig is the error, as `kubectl --context x` says.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), kubeforge::Error> {
    /// use kubeforge::client::config::KubeConfigOptions;
    /// use kubeforge::Config;
    ///
    /// let options = KubeConfigOptions { context: Some("staging".into()), ..Default::default() };
    /// let config = Config::infer_with(&options).await?;
    /// # let _ = config;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn infer_with(options: &KubeConfigOptions) -> Result<Self, Error> {
        let env = Environment::process();
        Ok(infer_in(&env, options)?)
    }

    /// Loads the kubeconfig file `path` alone (a `--kubeconfig` flag:
    /// `KUBECONFIG` and `~/.kube/config` are not read, as with client-go's
    /// `ExplicitPath`), with `options`' context, cluster or user. A missing
    /// or unreadable file is an error naming it; relative paths inside it
    /// resolve against its directory.
    pub async fn from_kubeconfig_file(
        path: impl AsRef<std::path::Path>,
        options: &KubeConfigOptions,
    ) -> Result<Self, Error> {
        Ok(from_file(path.as_ref(), options)?)
    }

    /// Loads the kubeconfig the environment points at (`KUBECONFIG` or
    /// `~/.kube/config`), with an optional explicit context, cluster or user.
    pub async fn from_kubeconfig(options: &KubeConfigOptions) -> Result<Self, Error> {
        let env = Environment::process();
        let kc = kubeconfig::load_default(&env)?;
        Ok(kc.to_config(options)?)
    }

    /// Builds a config from an already loaded kubeconfig.
    pub fn from_custom_kubeconfig(
        kubeconfig: Kubeconfig,
        options: &KubeConfigOptions,
    ) -> Result<Self, Error> {
        Ok(kubeconfig.to_config(options)?)
    }

    /// The in-cluster configuration: `KUBERNETES_SERVICE_HOST`/`_PORT`, the
    /// service-account token (re-read as it rotates), `ca.crt` and namespace.
    pub fn incluster() -> Result<Self, Error> {
        Ok(incluster::load(&Environment::process())?)
    }
}

/// Looks up one environment variable.
type VarLookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Where configuration comes from: environment variables, the home
/// directory and the service-account directory. Injected so tests never
/// touch the process environment.
pub(crate) struct Environment {
    vars: VarLookup,
    pub(crate) home: Option<PathBuf>,
    pub(crate) service_account_dir: PathBuf,
}

impl Environment {
    /// The real process environment.
    pub(crate) fn process() -> Self {
        Self {
            vars: Box::new(|name| std::env::var(name).ok()),
            home: home::home_dir(),
            service_account_dir: PathBuf::from(incluster::SERVICE_ACCOUNT_DIR),
        }
    }

    /// A fixed environment, for tests.
    #[cfg(test)]
    pub(crate) fn fixed(
        vars: &[(&str, &str)],
        home: Option<&std::path::Path>,
        service_account_dir: &std::path::Path,
    ) -> Self {
        let vars: std::collections::HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Self {
            vars: Box::new(move |name| vars.get(name).cloned()),
            home: home.map(std::path::Path::to_path_buf),
            service_account_dir: service_account_dir.to_path_buf(),
        }
    }

    /// A non-empty environment variable.
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        (self.vars)(name).filter(|v| !v.is_empty())
    }
}

/// client-go's deferred loading: kubeconfig files first; an empty result
/// (no file, or files without entries) falls back to in-cluster, unless
/// `options` name a context, cluster or user (client-go: a named context
/// that does not exist is an error, not an empty config).
pub(crate) fn infer_in(
    env: &Environment,
    options: &KubeConfigOptions,
) -> Result<Config, ConfigError> {
    let kc = kubeconfig::load_default(env)?;
    if !kc.is_empty() {
        return kc.to_config(options);
    }
    let searched = match env.var("KUBECONFIG") {
        Some(list) => format!("KUBECONFIG={list}"),
        None => match &env.home {
            Some(home) => home.join(".kube").join("config").display().to_string(),
            None => "~/.kube/config (no home directory)".to_owned(),
        },
    };
    let named = [
        ("context", &options.context),
        ("cluster", &options.cluster),
        ("user", &options.user),
    ]
    .into_iter()
    .find_map(|(what, name)| Some((what, name.as_deref().filter(|n| !n.is_empty())?)));
    if let Some((what, name)) = named {
        return Err(ConfigError::new(format!(
            "{what} {name:?} was asked for, but no kubeconfig was found (looked in {searched})"
        )));
    }
    if env.var(incluster::SERVICE_HOST_ENV).is_some() {
        tracing::debug!("no kubeconfig found; using the in-cluster service account");
        return incluster::load(env);
    }
    Err(ConfigError::new(format!(
        "no kubeconfig found (looked in {searched}) and not running in a cluster \
         ({} is not set)",
        incluster::SERVICE_HOST_ENV
    )))
}

/// One kubeconfig file, explicitly named: no merging, no fallback.
pub(crate) fn from_file(
    path: &std::path::Path,
    options: &KubeConfigOptions,
) -> Result<Config, ConfigError> {
    Kubeconfig::read_from(path)?.to_config(options)
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
    /// An exec credential plugin (`client.authentication.k8s.io/v1` or
    /// `v1beta1`), run on demand and cached until the credential expires.
    Exec(ExecConfig),
}

/// How an exec plugin may interact with the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExecInteractiveMode {
    /// Never use standard input.
    Never,
    /// Use standard input when available (the `v1beta1` default). kubeforge
    /// never has a terminal to offer, so this behaves like `Never`.
    #[default]
    IfAvailable,
    /// Requires standard input; kubeforge cannot offer one, so running the
    /// plugin fails with an explanation.
    Always,
}

/// An exec credential plugin, as in a kubeconfig's `users[].user.exec`.
#[derive(Clone)]
pub struct ExecConfig {
    /// `client.authentication.k8s.io/v1` or `client.authentication.k8s.io/v1beta1`.
    pub api_version: String,
    /// The program to run (resolved against the kubeconfig's directory when
    /// it contains a path separator).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables (values may be secret: never printed).
    pub env: Vec<(String, String)>,
    /// Whether the plugin may prompt.
    pub interactive_mode: ExecInteractiveMode,
    /// Pass the cluster (server, CA, ...) to the plugin in `KUBERNETES_EXEC_INFO`.
    pub provide_cluster_info: bool,
    /// The cluster's `client.authentication.k8s.io/exec` extension, passed as
    /// `spec.cluster.config`.
    pub cluster_config: Option<serde_json::Value>,
    /// Shown when the command cannot be found.
    pub install_hint: Option<String>,
}

impl ExecConfig {
    /// A `client.authentication.k8s.io/v1` plugin running `command` with no
    /// arguments.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            api_version: "client.authentication.k8s.io/v1".to_owned(),
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            interactive_mode: ExecInteractiveMode::Never,
            provide_cluster_info: false,
            cluster_config: None,
            install_hint: None,
        }
    }
}

impl fmt::Debug for ExecConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env_names: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ExecConfig")
            .field("api_version", &self.api_version)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &env_names)
            .field("interactive_mode", &self.interactive_mode)
            .field("provide_cluster_info", &self.provide_cluster_info)
            .finish_non_exhaustive()
    }
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

impl From<String> for SecretString {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl<'de> serde::Deserialize<'de> for SecretString {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self)
    }
}

impl serde::Serialize for SecretString {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
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
