//! Exec credential plugins (client-go plugin/pkg/client/auth/exec/exec.go;
//! <https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins>).
//!
//! The plugin runs with the caller's environment plus the configured `env`
//! and `KUBERNETES_EXEC_INFO` (an `ExecCredential` whose `spec` carries
//! `interactive` and, with `provideClusterInfo`, the cluster). It prints an
//! `ExecCredential` whose `status` holds a token and/or a client certificate
//! and key, optionally with an `expirationTimestamp`. The result is cached
//! until then; a 401 re-runs the plugin unless another request already did.
//! Plugin output is never logged: it holds secrets.

use std::process::Stdio;
use std::sync::Arc;

use base64::Engine as _;
use http::HeaderValue;
use serde::Deserialize;

use super::bearer;
use crate::client::config::{Config, ExecConfig, ExecInteractiveMode};
use crate::client::error::Error;
use crate::client::tls::{der_to_pem, ClientCertStore};

/// How much of a failing plugin's stderr goes into the error.
const MAX_STDERR: usize = 2048;

pub(crate) struct ExecAuth {
    config: ExecConfig,
    /// `spec.cluster`, when the plugin asked for cluster info.
    cluster: Option<serde_json::Value>,
    certs: Arc<ClientCertStore>,
    /// Held across a plugin run so concurrent requests start one process.
    cached: tokio::sync::Mutex<Option<Cached>>,
}

#[derive(Clone)]
pub(crate) struct Cached {
    header: Option<HeaderValue>,
    expires: Option<jiff::Timestamp>,
}

impl Cached {
    /// Whether the credential carries a bearer token.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn has_token(&self) -> bool {
        self.header.is_some()
    }

    fn valid(&self) -> bool {
        self.expires.is_none_or(|exp| jiff::Timestamp::now() < exp)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredential {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    status: Option<ExecCredentialStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredentialStatus {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    client_certificate_data: Option<String>,
    #[serde(default)]
    client_key_data: Option<String>,
    #[serde(default)]
    expiration_timestamp: Option<String>,
}

impl ExecAuth {
    pub(crate) fn new(exec: ExecConfig, config: &Config, certs: Arc<ClientCertStore>) -> Self {
        let cluster = exec
            .provide_cluster_info
            .then(|| cluster_info(&exec, config));
        Self {
            config: exec,
            cluster,
            certs,
            cached: tokio::sync::Mutex::new(None),
        }
    }

    pub(crate) async fn header(&self) -> Result<Option<HeaderValue>, Error> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref().filter(|c| c.valid()) {
            return Ok(c.header.clone());
        }
        let fresh = self.run().await?;
        let header = fresh.header.clone();
        *cached = Some(fresh);
        Ok(header)
    }

    /// After a 401: re-run unless the credential already changed since
    /// `used` was handed out (client-go's maybeRefreshCreds).
    pub(crate) async fn refresh(&self, used: Option<&HeaderValue>) -> Result<bool, Error> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref() {
            if c.header.as_ref() != used && c.valid() {
                return Ok(true);
            }
        }
        tracing::debug!(command = %self.config.command, "401 from the API server; re-running the exec plugin");
        let fresh = self.run().await?;
        *cached = Some(fresh);
        Ok(true)
    }

    fn input(&self) -> String {
        let mut spec = serde_json::json!({ "interactive": false });
        if let Some(cluster) = &self.cluster {
            spec["cluster"] = cluster.clone();
        }
        serde_json::json!({
            "apiVersion": self.config.api_version,
            "kind": "ExecCredential",
            "spec": spec,
        })
        .to_string()
    }

    async fn run(&self) -> Result<Cached, Error> {
        let cmd = &self.config.command;
        if self.config.interactive_mode == ExecInteractiveMode::Always {
            return Err(Error::Auth(format!(
                "exec plugin {cmd} requires an interactive terminal (interactiveMode: Always), which kubeforge cannot provide"
            )));
        }
        let mut command = tokio::process::Command::new(cmd);
        command
            .args(&self.config.args)
            .envs(self.config.env.iter().map(|(k, v)| (k, v)))
            .env("KUBERNETES_EXEC_INFO", self.input())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A request that gives up (timeout, drop) must not leave the
            // plugin running.
            .kill_on_drop(true);
        let output = command.output().await.map_err(|e| {
            let mut msg = format!("cannot run exec plugin {cmd}: {e}");
            if e.kind() == std::io::ErrorKind::NotFound {
                if let Some(hint) = &self.config.install_hint {
                    msg.push_str(&format!("\n{hint}"));
                }
            }
            Error::Auth(msg)
        })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let stderr = stderr.trim();
            let cut = stderr
                .char_indices()
                .nth(MAX_STDERR)
                .map_or(stderr, |(i, _)| &stderr[..i]);
            return Err(Error::Auth(format!(
                "exec plugin {cmd} failed ({}): {cut}",
                output.status
            )));
        }
        if !output.stderr.is_empty() {
            tracing::debug!(command = %cmd, stderr = %String::from_utf8_lossy(&output.stderr).trim(), "exec plugin wrote to stderr");
        }
        self.parse(&output.stdout)
    }

    /// Reads the `ExecCredential` a plugin printed.
    pub(crate) fn parse(&self, stdout: &[u8]) -> Result<Cached, Error> {
        let cmd = &self.config.command;
        // The serde message is not included: it could quote part of a secret.
        let cred: ExecCredential = serde_json::from_slice(stdout).map_err(|e| {
            Error::Auth(format!(
                "exec plugin {cmd} printed an invalid ExecCredential ({:?} error at line {}, column {})",
                e.classify(),
                e.line(),
                e.column()
            ))
        })?;
        if cred.kind.as_deref() != Some("ExecCredential") {
            return Err(Error::Auth(format!(
                "exec plugin {cmd} printed kind {:?}, expected ExecCredential",
                cred.kind.unwrap_or_default()
            )));
        }
        let returned = cred.api_version.unwrap_or_default();
        if returned != self.config.api_version {
            return Err(Error::Auth(format!(
                "exec plugin {cmd} is configured to use API version {}, plugin returned version {returned}",
                self.config.api_version
            )));
        }
        let status = cred.status.ok_or_else(|| {
            Error::Auth(format!("exec plugin {cmd} did not return a status field"))
        })?;
        let token = status.token.filter(|t| !t.is_empty());
        let cert = status.client_certificate_data.filter(|c| !c.is_empty());
        let key = status.client_key_data.filter(|k| !k.is_empty());
        match (&cert, &key) {
            (Some(c), Some(k)) => {
                let changed = self
                    .certs
                    .set_pem(c.as_bytes(), k.as_bytes())
                    .map_err(|e| Error::Auth(format!("exec plugin {cmd}: {e}")))?;
                if changed {
                    tracing::debug!(command = %cmd, "exec plugin returned a new client certificate");
                }
            }
            (Some(_), None) => {
                return Err(Error::Auth(format!(
                    "exec plugin {cmd} returned clientCertificateData without clientKeyData"
                )))
            }
            (None, Some(_)) => {
                return Err(Error::Auth(format!(
                    "exec plugin {cmd} returned clientKeyData without clientCertificateData"
                )))
            }
            (None, None) if token.is_none() => {
                return Err(Error::Auth(format!(
                    "exec plugin {cmd} returned neither a token nor a client certificate and key"
                )))
            }
            (None, None) => {}
        }
        let expires = match status.expiration_timestamp.filter(|s| !s.is_empty()) {
            Some(ts) => Some(ts.parse::<jiff::Timestamp>().map_err(|e| {
                Error::Auth(format!(
                    "exec plugin {cmd} returned an invalid expirationTimestamp {ts:?}: {e}"
                ))
            })?),
            None => None,
        };
        let header = token.as_deref().map(bearer).transpose()?;
        Ok(Cached { header, expires })
    }
}

/// `spec.cluster` of `KUBERNETES_EXEC_INFO` (client.authentication.k8s.io
/// Cluster: kebab-case keys, CA data as base64 of PEM).
fn cluster_info(exec: &ExecConfig, config: &Config) -> serde_json::Value {
    let mut cluster = serde_json::json!({ "server": config.cluster_url.to_string() });
    if let Some(name) = &config.tls_server_name {
        cluster["tls-server-name"] = name.clone().into();
    }
    if config.accept_invalid_certs {
        cluster["insecure-skip-tls-verify"] = true.into();
    }
    if let Some(roots) = &config.root_certs {
        let pem = der_to_pem(roots);
        cluster["certificate-authority-data"] =
            base64::engine::general_purpose::STANDARD.encode(pem).into();
    }
    if let Some(extension) = &exec.cluster_config {
        cluster["config"] = extension.clone();
    }
    cluster
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::tls;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    /// Writes an executable shell script.
    fn script(dir: &Path, name: &str, body: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_string_lossy().into_owned()
    }

    fn exec_auth(exec: ExecConfig, config: &Config) -> ExecAuth {
        ExecAuth::new(
            exec,
            config,
            Arc::new(ClientCertStore::new(tls::provider())),
        )
    }

    fn config() -> Config {
        Config::new("https://127.0.0.1:6443".parse().unwrap())
    }

    /// A plugin that counts its runs in `count` and answers token-N.
    const COUNTING: &str = r#"
n=$(cat "$COUNT_FILE" 2>/dev/null || echo 0)
n=$((n+1))
echo "$n" > "$COUNT_FILE"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$INFO_FILE"
cat <<EOF
{"apiVersion":"$API_VERSION","kind":"ExecCredential","status":{"token":"token-$n"$EXPIRY}}
EOF
"#;

    fn counting(dir: &Path, api_version: &str, expiry: &str) -> ExecConfig {
        let mut exec = ExecConfig::new(script(dir, "plugin", COUNTING));
        exec.api_version = api_version.to_owned();
        exec.env = vec![
            (
                "COUNT_FILE".into(),
                dir.join("count").to_string_lossy().into(),
            ),
            (
                "INFO_FILE".into(),
                dir.join("info").to_string_lossy().into(),
            ),
            ("API_VERSION".into(), api_version.into()),
            ("EXPIRY".into(), expiry.into()),
        ];
        exec
    }

    fn runs(dir: &Path) -> u32 {
        std::fs::read_to_string(dir.join("count"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[tokio::test]
    async fn v1_token_is_cached_without_expiry_and_rerun_after_401() {
        let dir = tempfile::tempdir().unwrap();
        let auth = exec_auth(
            counting(dir.path(), "client.authentication.k8s.io/v1", ""),
            &config(),
        );
        let first = auth.header().await.unwrap().unwrap();
        assert_eq!(first, "Bearer token-1");
        assert_eq!(auth.header().await.unwrap().unwrap(), "Bearer token-1");
        assert_eq!(runs(dir.path()), 1);

        // A 401 with the current token re-runs the plugin.
        assert!(auth.refresh(Some(&first)).await.unwrap());
        assert_eq!(runs(dir.path()), 2);
        let second = auth.header().await.unwrap().unwrap();
        assert_eq!(second, "Bearer token-2");
        // A late 401 for the old token does not run it again.
        assert!(auth.refresh(Some(&first)).await.unwrap());
        assert_eq!(runs(dir.path()), 2);

        // KUBERNETES_EXEC_INFO carried the v1 ExecCredential, no cluster.
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("info")).unwrap())
                .unwrap();
        assert_eq!(info["apiVersion"], "client.authentication.k8s.io/v1");
        assert_eq!(info["kind"], "ExecCredential");
        assert_eq!(info["spec"]["interactive"], false);
        assert!(info["spec"].get("cluster").is_none());
    }

    #[tokio::test]
    async fn v1beta1_expired_credentials_are_rerun_and_future_ones_cached() {
        let dir = tempfile::tempdir().unwrap();
        let past = r#","expirationTimestamp":"2001-01-01T00:00:00Z""#;
        let auth = exec_auth(
            counting(dir.path(), "client.authentication.k8s.io/v1beta1", past),
            &config(),
        );
        auth.header().await.unwrap();
        auth.header().await.unwrap();
        assert_eq!(runs(dir.path()), 2, "an expired credential is never reused");

        let dir = tempfile::tempdir().unwrap();
        let future = r#","expirationTimestamp":"2999-01-01T00:00:00Z""#;
        let auth = exec_auth(
            counting(dir.path(), "client.authentication.k8s.io/v1beta1", future),
            &config(),
        );
        auth.header().await.unwrap();
        auth.header().await.unwrap();
        assert_eq!(runs(dir.path()), 1);
    }

    #[tokio::test]
    async fn cluster_info_is_provided_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let mut exec = counting(dir.path(), "client.authentication.k8s.io/v1", "");
        exec.provide_cluster_info = true;
        exec.cluster_config = Some(serde_json::json!({"audience": "x"}));
        let mut cfg = config();
        cfg.tls_server_name = Some("api.internal".into());
        cfg.root_certs = Some(vec![vec![1, 2, 3]]);
        exec_auth(exec, &cfg).header().await.unwrap();
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("info")).unwrap())
                .unwrap();
        let cluster = &info["spec"]["cluster"];
        assert_eq!(cluster["server"], "https://127.0.0.1:6443/");
        assert_eq!(cluster["tls-server-name"], "api.internal");
        assert_eq!(cluster["config"]["audience"], "x");
        let ca = base64::engine::general_purpose::STANDARD
            .decode(cluster["certificate-authority-data"].as_str().unwrap())
            .unwrap();
        assert!(String::from_utf8(ca)
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----"));
    }

    #[tokio::test]
    async fn client_certificates_go_to_the_resolver() {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["me".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let out = serde_json::json!({
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "status": {"clientCertificateData": cert.pem(), "clientKeyData": key.serialize_pem()}
        });
        std::fs::write(dir.path().join("out.json"), out.to_string()).unwrap();
        let cmd = script(
            dir.path(),
            "plugin",
            &format!("cat '{}'", dir.path().join("out.json").display()),
        );
        let certs = Arc::new(ClientCertStore::new(tls::provider()));
        let auth = ExecAuth::new(ExecConfig::new(cmd), &config(), certs.clone());
        assert!(
            auth.header().await.unwrap().is_none(),
            "no token, only a certificate"
        );
        assert_eq!(certs.generation(), 1);
        use rustls::client::ResolvesClientCert as _;
        assert!(certs.has_certs());
    }

    #[tokio::test]
    async fn plugin_failures_are_explained() {
        let dir = tempfile::tempdir().unwrap();
        let case = |name: &str, body: &str| {
            let mut exec = ExecConfig::new(script(dir.path(), name, body));
            exec.install_hint = Some("install it with: apt install plugin".into());
            exec_auth(exec, &config())
        };
        let err = |a: ExecAuth| async move { a.header().await.unwrap_err().to_string() };

        let e = err(case("fails", "echo 'token expired, run login' >&2; exit 3")).await;
        assert!(
            e.contains("token expired, run login") && e.contains("exit status: 3"),
            "{e}"
        );

        let e = err(case("garbage", "echo 'not json {'")).await;
        assert!(e.contains("invalid ExecCredential"), "{e}");

        let e = err(case(
            "wrongversion",
            r#"echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}}'"#,
        ))
        .await;
        assert!(
            e.contains("plugin returned version client.authentication.k8s.io/v1beta1"),
            "{e}"
        );

        let e = err(case(
            "nostatus",
            r#"echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"}'"#,
        ))
        .await;
        assert!(e.contains("did not return a status"), "{e}");

        let e = err(case(
            "empty",
            r#"echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}'"#,
        ))
        .await;
        assert!(e.contains("neither a token"), "{e}");

        let e = err(case(
            "halfcert",
            r#"echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientCertificateData":"x"}}'"#,
        ))
        .await;
        assert!(e.contains("without clientKeyData"), "{e}");

        let e = err(case(
            "badtime",
            r#"echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"soon"}}'"#,
        ))
        .await;
        assert!(e.contains("invalid expirationTimestamp"), "{e}");

        let mut missing = ExecConfig::new(dir.path().join("nope").to_string_lossy());
        missing.install_hint = Some("install it with: apt install plugin".into());
        let e = err(exec_auth(missing, &config())).await;
        assert!(
            e.contains("cannot run exec plugin") && e.contains("apt install plugin"),
            "{e}"
        );

        let mut always = ExecConfig::new("true");
        always.interactive_mode = ExecInteractiveMode::Always;
        let e = err(exec_auth(always, &config())).await;
        assert!(e.contains("interactive"), "{e}");
    }

    #[test]
    fn exec_config_debug_hides_env_values() {
        let mut exec = ExecConfig::new("plugin");
        exec.env = vec![("SECRET".into(), "hunter2".into())];
        let debug = format!("{exec:?}");
        assert!(
            debug.contains("SECRET") && !debug.contains("hunter2"),
            "{debug}"
        );
    }
}
