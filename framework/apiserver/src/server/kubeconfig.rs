//! Writing a kubeconfig for a running server: one cluster (URL and CA
//! data), one token user, one context, made current. The file holds the
//! token, so it is created readable by its owner only.

use std::io::Write;
use std::path::Path;

use base64::Engine;
use serde_json::json;

use crate::machinery::error::Error;

/// The context, cluster and user name in written kubeconfigs.
pub const CONTEXT: &str = "kubeforge";

/// Renders the kubeconfig YAML.
pub(crate) fn render(server: &str, ca_pem: &str, token: &str) -> Result<String, Error> {
    render_user(server, ca_pem, json!({ "token": token }))
}

/// Renders a kubeconfig whose user entry is `user` (a token or a client
/// certificate).
pub(crate) fn render_user(
    server: &str,
    ca_pem: &str,
    user: serde_json::Value,
) -> Result<String, Error> {
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {
            "server": server.trim_end_matches('/'),
            "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(ca_pem),
        }}],
        "users": [{"name": CONTEXT, "user": user}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"}}],
        "current-context": CONTEXT,
        "preferences": {},
    });
    serde_saphyr::to_string(&doc).map_err(|e| Error::Kubeconfig(e.to_string()))
}

/// Writes the kubeconfig to `path` (mode 0600 on Unix).
pub(crate) fn write(path: &Path, server: &str, ca_pem: &str, token: &str) -> Result<(), Error> {
    write_text(path, &render(server, ca_pem, token)?)
}

/// Writes kubeconfig text to `path` (mode 0600 on Unix).
pub(crate) fn write_text(path: &Path, text: &str) -> Result<(), Error> {
    let io = |e: std::io::Error| Error::Io(path.to_path_buf(), e);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut file = opts.open(path).map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_round_trips() {
        let text = render("https://127.0.0.1:1/", "PEM", "tok").unwrap();
        let v: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(v["current-context"], "kubeforge");
        assert_eq!(v["clusters"][0]["cluster"]["server"], "https://127.0.0.1:1");
        assert_eq!(v["users"][0]["user"]["token"], "tok");
    }
}
