//! In-cluster configuration from the pod's service account, as client-go's
//! `rest.InClusterConfig` and clientcmd's in-cluster namespace lookup do:
//! server `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`, the
//! token file (re-read, since bound tokens rotate), `ca.crt`, and the
//! namespace from `$POD_NAMESPACE`, else the `namespace` file, else
//! `default`.

use super::{kubeconfig::pem_certificates, Auth, Config, Environment};
use crate::client::error::ConfigError;

/// Where Kubernetes mounts the service-account credentials.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The environment variable naming the API server's service IP.
pub const SERVICE_HOST_ENV: &str = "KUBERNETES_SERVICE_HOST";
/// The environment variable naming the API server's service port.
pub const SERVICE_PORT_ENV: &str = "KUBERNETES_SERVICE_PORT";

pub(crate) fn load(env: &Environment) -> Result<Config, ConfigError> {
    let host = env.var(SERVICE_HOST_ENV).ok_or_else(|| {
        ConfigError::new(format!(
            "not running in a cluster: {SERVICE_HOST_ENV} is not set"
        ))
    })?;
    let port = env.var(SERVICE_PORT_ENV).ok_or_else(|| {
        ConfigError::new(format!(
            "not running in a cluster: {SERVICE_PORT_ENV} is not set"
        ))
    })?;
    // An IPv6 service IP needs brackets in a URL.
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host
    };
    let url = format!("https://{host}:{port}");
    let uri: http::Uri = url.parse().map_err(|e: http::uri::InvalidUri| {
        ConfigError::new(format!(
            "{SERVICE_HOST_ENV}/{SERVICE_PORT_ENV} give an invalid URL {url:?}"
        ))
        .caused_by(e)
    })?;

    let dir = &env.service_account_dir;
    let token_path = dir.join("token");
    if !token_path.exists() {
        return Err(ConfigError::new("the service-account token is missing").in_file(&token_path));
    }
    let ca_path = dir.join("ca.crt");
    let ca = std::fs::read(&ca_path).map_err(|e| {
        ConfigError::new("cannot read the service-account CA")
            .in_file(&ca_path)
            .caused_by(e)
    })?;
    let roots = pem_certificates("ca.crt", &ca).map_err(|e| e.in_file(&ca_path))?;

    let namespace = env
        .var("POD_NAMESPACE")
        .or_else(|| {
            std::fs::read_to_string(dir.join("namespace"))
                .ok()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| "default".to_owned());

    let mut config = Config::new(uri);
    config.root_certs = Some(roots);
    config.auth = Auth::TokenFile(token_path);
    config.default_namespace = namespace;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa_dir(namespace: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let ca = rcgen::CertificateParams::new(vec!["kubernetes".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(dir.path().join("ca.crt"), ca.pem()).unwrap();
        std::fs::write(dir.path().join("token"), "sa-token").unwrap();
        if let Some(ns) = namespace {
            std::fs::write(dir.path().join("namespace"), ns).unwrap();
        }
        dir
    }

    #[test]
    fn service_env_token_ca_and_namespace_file() {
        let dir = sa_dir(Some("operators"));
        let env = Environment::fixed(
            &[(SERVICE_HOST_ENV, "10.96.0.1"), (SERVICE_PORT_ENV, "443")],
            None,
            dir.path(),
        );
        let config = load(&env).unwrap();
        assert_eq!(config.cluster_url, "https://10.96.0.1:443/");
        assert_eq!(config.default_namespace, "operators");
        assert_eq!(config.root_certs.map(|r| r.len()), Some(1));
        match config.auth {
            Auth::TokenFile(p) => assert_eq!(p, dir.path().join("token")),
            other => panic!("unexpected auth {other:?}"),
        }
    }

    #[test]
    fn pod_namespace_env_wins_and_default_is_default() {
        let dir = sa_dir(Some("from-file"));
        let env = Environment::fixed(
            &[
                (SERVICE_HOST_ENV, "fd00::1"),
                (SERVICE_PORT_ENV, "6443"),
                ("POD_NAMESPACE", "from-env"),
            ],
            None,
            dir.path(),
        );
        let config = load(&env).unwrap();
        assert_eq!(config.cluster_url, "https://[fd00::1]:6443/");
        assert_eq!(config.default_namespace, "from-env");

        let dir = sa_dir(None);
        let env = Environment::fixed(
            &[(SERVICE_HOST_ENV, "10.0.0.1"), (SERVICE_PORT_ENV, "443")],
            None,
            dir.path(),
        );
        assert_eq!(load(&env).unwrap().default_namespace, "default");
    }

    #[test]
    fn missing_pieces_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let env = Environment::fixed(&[(SERVICE_HOST_ENV, "10.0.0.1")], None, dir.path());
        assert!(load(&env)
            .unwrap_err()
            .to_string()
            .contains(SERVICE_PORT_ENV));
        let env = Environment::fixed(
            &[(SERVICE_HOST_ENV, "10.0.0.1"), (SERVICE_PORT_ENV, "443")],
            None,
            dir.path(),
        );
        let err = load(&env).unwrap_err().to_string();
        assert!(err.contains("token"), "{err}");
    }
}
