//! The client against a real HTTPS server on 127.0.0.1: TLS trust (custom
//! CA, wrong CA, tls-server-name, insecure-skip-tls-verify), credentials
//! (bearer, basic, token file, exec plugin tokens and client certificates,
//! the 401 re-run), headers, timeouts, connection reuse, error mapping, and
//! a kubeconfig loaded from an explicit path.

mod client_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use client_support::{handler, json, script, status, streamed, text, Fixture, Options};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kubeforge::client::{Auth, Config, ExecConfig, KubeConfigOptions, Kubeconfig, SecretString};
use kubeforge::kube_core::params::WatchParams;
use kubeforge::kube_core::WatchEvent;
use kubeforge::{Api, Client, Error};

fn version_handler() -> client_support::Handler {
    handler(|r| async move {
        match r.uri.path() {
            "/version" => json(
                200,
                serde_json::json!({
                    "major": "1", "minor": "33", "gitVersion": "v1.33.0", "gitCommit": "x",
                    "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z",
                    "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64"
                }),
            ),
            _ => text(404, "404 page not found\n"),
        }
    })
}

#[tokio::test]
async fn custom_ca_bearer_token_and_user_agent() {
    let server = Fixture::start(version_handler()).await;
    let client = Client::try_from(server.config("s3cret-token")).unwrap();
    let info = client.apiserver_version().await.unwrap();
    assert_eq!(info.git_version, "v1.33.0");

    let req = server.last();
    assert_eq!(req.header("authorization"), Some("Bearer s3cret-token"));
    assert_eq!(
        req.header("user-agent"),
        Some(concat!("kubeforge/", env!("CARGO_PKG_VERSION")))
    );
    assert_eq!(req.header("accept"), Some("application/json"));
    // The token never shows in the client's or config's Debug output.
    assert!(!format!("{client:?}").contains("s3cret"));
    assert!(!format!("{:?}", server.config("s3cret-token")).contains("s3cret"));
}

#[tokio::test]
async fn wrong_ca_fails_with_a_tls_error() {
    let server = Fixture::start(version_handler()).await;
    let other = client_support::Ca::new("someone-else");
    let mut config = server.config("t");
    config.root_certs = Some(vec![other.cert_der.clone()]);
    let err = Client::try_from(config)
        .unwrap()
        .apiserver_version()
        .await
        .unwrap_err();
    match &err {
        Error::Tls { source, .. } => {
            assert!(
                matches!(source, rustls::Error::InvalidCertificate(_)),
                "{source:?}"
            )
        }
        other => panic!("expected a TLS error, got {other:?}"),
    }
    assert!(err.to_string().contains("TLS"), "{err}");
    assert!(
        server.recorded().is_empty(),
        "no request may pass an untrusted server"
    );
}

#[tokio::test]
async fn insecure_skip_tls_verify_is_honoured_only_when_set() {
    let server = Fixture::start(version_handler()).await;
    let mut config = server.config("t");
    config.root_certs = Some(vec![client_support::Ca::new("other").cert_der]);
    config.accept_invalid_certs = true;
    Client::try_from(config)
        .unwrap()
        .apiserver_version()
        .await
        .unwrap();
}

#[tokio::test]
async fn tls_server_name_is_used_for_verification() {
    // The certificate names only api.internal, not the IP the client dials.
    let options = Options {
        names: vec!["api.internal"],
        require_client_cert: false,
    };
    let server = Fixture::start_with(options, version_handler()).await;
    let err = Client::try_from(server.config("t"))
        .unwrap()
        .apiserver_version()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Tls { .. }), "{err:?}");

    let mut config = server.config("t");
    config.tls_server_name = Some("api.internal".into());
    Client::try_from(config)
        .unwrap()
        .apiserver_version()
        .await
        .unwrap();
}

#[tokio::test]
async fn connections_are_reused() {
    let server = Fixture::start(version_handler()).await;
    let client = Client::try_from(server.config("t")).unwrap();
    for _ in 0..5 {
        client.apiserver_version().await.unwrap();
    }
    let clone = client.clone();
    clone.apiserver_version().await.unwrap();
    assert_eq!(server.recorded().len(), 6);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn basic_auth_and_token_file_rotation() {
    let server = Fixture::start(handler(|r| async move {
        match r.header("authorization") {
            Some("Basic YWxpY2U6cHc=") | Some("Bearer rotated") => json(200, serde_json::json!({})),
            _ => status(401, "Unauthorized", "Unauthorized"),
        }
    }))
    .await;
    let req = || http::Request::get("/api").body(Vec::new()).unwrap();

    let mut config = server.config("unused");
    config.auth = Auth::Basic {
        username: "alice".into(),
        password: SecretString::new("pw"),
    };
    Client::try_from(config)
        .unwrap()
        .request::<serde_json::Value>(req())
        .await
        .unwrap();

    // A token file that rotates: the 401 for the old token makes the
    // client re-read the file and retry.
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "original").unwrap();
    let mut config = server.config("unused");
    config.auth = Auth::TokenFile(token.clone());
    let client = Client::try_from(config).unwrap();
    let err = client
        .request::<serde_json::Value>(req())
        .await
        .unwrap_err();
    assert!(err.is_unauthorized(), "{err:?}");
    std::fs::write(&token, "rotated\n").unwrap();
    client.request::<serde_json::Value>(req()).await.unwrap();
}

/// The acceptance test for the exec plugin: a real script, whose first
/// token the server rejects. The 401 re-runs the plugin and the request is
/// retried with the new token.
#[tokio::test]
async fn a_401_reruns_the_exec_plugin() {
    let server = Fixture::start(handler(|r| async move {
        if r.header("authorization") == Some("Bearer token-2") {
            json(
                200,
                serde_json::json!({"kind": "APIVersions", "versions": ["v1"]}),
            )
        } else {
            status(401, "Unauthorized", "Unauthorized")
        }
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let cmd = script(
        dir.path(),
        "plugin",
        r#"n=$(cat "$COUNT" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$COUNT"
echo "{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"token-$n\"}}""#,
    );
    let mut exec = ExecConfig::new(cmd);
    exec.api_version = "client.authentication.k8s.io/v1beta1".into();
    exec.env = vec![("COUNT".into(), count.to_string_lossy().into())];
    let mut config = server.config("unused");
    config.auth = Auth::Exec(exec);
    let client = Client::try_from(config).unwrap();

    let versions: serde_json::Value = client
        .request(http::Request::get("/api").body(Vec::new()).unwrap())
        .await
        .unwrap();
    assert_eq!(versions["versions"][0], "v1");
    assert_eq!(std::fs::read_to_string(&count).unwrap().trim(), "2");
    let auths: Vec<_> = server
        .recorded()
        .iter()
        .map(|r| r.header("authorization").unwrap_or("").to_owned())
        .collect();
    assert_eq!(auths, ["Bearer token-1", "Bearer token-2"]);

    // The new token is cached: no third run.
    client
        .request::<serde_json::Value>(http::Request::get("/api").body(Vec::new()).unwrap())
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&count).unwrap().trim(), "2");
}

#[tokio::test]
async fn exec_plugin_client_certificates_are_presented() {
    let options = Options {
        require_client_cert: true,
        ..Options::default()
    };
    let server = Fixture::start_with(options, version_handler()).await;
    let leaf = server.ca.leaf(&["system:admin"], true);
    let dir = tempfile::tempdir().unwrap();
    let out = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"clientCertificateData": leaf.cert_pem, "clientKeyData": leaf.key_pem,
                   "expirationTimestamp": "2999-01-01T00:00:00Z"}
    });
    std::fs::write(dir.path().join("cred.json"), out.to_string()).unwrap();
    let cmd = script(
        dir.path(),
        "plugin",
        &format!("cat '{}'", dir.path().join("cred.json").display()),
    );
    let mut config = server.config("unused");
    config.auth = Auth::Exec(ExecConfig::new(cmd));
    Client::try_from(config)
        .unwrap()
        .apiserver_version()
        .await
        .unwrap();
    let req = server.last();
    assert_eq!(req.client_cert.as_deref(), Some(leaf.cert_der.as_slice()));
    assert_eq!(req.header("authorization"), None);
}

#[tokio::test]
async fn static_client_certificates_and_a_missing_one() {
    let options = Options {
        require_client_cert: true,
        ..Options::default()
    };
    let server = Fixture::start_with(options, version_handler()).await;
    let leaf = server.ca.leaf(&["me"], true);
    let mut config = server.config("t");
    config.client_identity = Some(kubeforge::client::ClientIdentity {
        cert_pem: leaf.cert_pem.clone().into_bytes(),
        key_pem: kubeforge::client::SecretBytes::new(leaf.key_pem.clone().into_bytes()),
    });
    Client::try_from(config)
        .unwrap()
        .apiserver_version()
        .await
        .unwrap();
    assert_eq!(
        server.last().client_cert.as_deref(),
        Some(leaf.cert_der.as_slice())
    );

    // Without a certificate the server refuses the handshake.
    let err = Client::try_from(server.config("t"))
        .unwrap()
        .apiserver_version()
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Tls { .. } | Error::Transport { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn kubeconfig_from_an_explicit_path_end_to_end() {
    use base64::Engine as _;
    let server = Fixture::start(version_handler()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), &server.ca.cert_pem).unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            r#"apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster:
    server: {url}
    certificate-authority: ca.pem
- name: data
  cluster:
    server: {url}
    certificate-authority-data: {ca}
users:
- name: dev
  user:
    token: from-kubeconfig
contexts:
- name: dev
  context: {{cluster: dev, user: dev, namespace: team}}
- name: data
  context: {{cluster: data, user: dev}}
"#,
            url = server.url(),
            ca = base64::engine::general_purpose::STANDARD.encode(&server.ca.cert_pem),
        ),
    )
    .unwrap();
    let kc = Kubeconfig::read_from(&path).unwrap();
    let config = Config::from_custom_kubeconfig(kc.clone(), &KubeConfigOptions::default()).unwrap();
    let client = Client::try_from(config).unwrap();
    assert_eq!(client.default_namespace(), "team");
    client.apiserver_version().await.unwrap();
    assert_eq!(
        server.last().header("authorization"),
        Some("Bearer from-kubeconfig")
    );

    let opts = KubeConfigOptions {
        context: Some("data".into()),
        ..Default::default()
    };
    let client = Client::try_from(Config::from_custom_kubeconfig(kc, &opts).unwrap()).unwrap();
    assert_eq!(client.default_namespace(), "default");
    client.apiserver_version().await.unwrap();
}

#[tokio::test]
async fn read_timeout_bounds_requests_but_not_watches() {
    let server = Fixture::start(handler(|r| async move {
        if r.uri.query().is_some_and(|q| q.contains("watch=true")) {
            // Headers at once, the event later than the read timeout.
            let event = r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late","resourceVersion":"9"}}}"#;
            streamed(vec![format!("{event}\n").into_bytes()], Duration::from_millis(600))
        } else {
            tokio::time::sleep(Duration::from_millis(600)).await;
            json(200, serde_json::json!({}))
        }
    }))
    .await;
    let mut config = server.config("t");
    config.read_timeout = Some(Duration::from_millis(200));
    let client = Client::try_from(config).unwrap();

    let err = client
        .request::<serde_json::Value>(http::Request::get("/api").body(Vec::new()).unwrap())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");

    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut events = api.watch(&WatchParams::default(), "0").await.unwrap();
    match events.next().await {
        Some(Ok(WatchEvent::Added(cm))) => assert_eq!(cm.metadata.name.as_deref(), Some("late")),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn error_answers_map_to_api_errors() {
    let server = Fixture::start(handler(|r| async move {
        match r.uri.path() {
            "/api/v1/namespaces/default/configmaps/gone" => {
                status(404, "NotFound", "configmaps \"gone\" not found")
            }
            "/api/v1/namespaces/default/configmaps/busy" => http::Response::builder()
                .status(429)
                .header("retry-after", "4")
                .body(http_body_util::BodyExt::boxed(http_body_util::Full::new(
                    bytes::Bytes::from_static(b"slow down"),
                )))
                .unwrap(),
            _ => text(404, "404 page not found\n"),
        }
    }))
    .await;
    let client = Client::try_from(server.config("t")).unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let err = api.get("gone").await.unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(
        err.status().unwrap().message,
        "configmaps \"gone\" not found"
    );
    assert!(api.get_opt("gone").await.unwrap().is_none());

    let err = api.get("busy").await.unwrap_err();
    assert!(err.is_too_many_requests());
    assert_eq!(err.retry_after(), Some(Duration::from_secs(4)));

    // Unknown paths answer plain text; still a typed 404.
    let err = client
        .request::<serde_json::Value>(
            http::Request::get("/apis/nope/v1")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    assert_eq!(err.code(), Some(404));

    // The raw form hands back whatever the server said.
    let raw = client
        .send(
            http::Request::get("/apis/nope/v1")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(raw.status(), 404);
    assert_eq!(&raw.body()[..], b"404 page not found\n");
}

#[tokio::test]
async fn unreachable_servers_are_transport_errors() {
    // Bind then drop, so the port is (almost certainly) closed.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut config = Config::new(format!("https://127.0.0.1:{port}").parse().unwrap());
    config.root_certs = Some(vec![client_support::Ca::new("x").cert_der]);
    let err = Client::try_from(config)
        .unwrap()
        .apiserver_version()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(err.to_string().contains(&port.to_string()), "{err}");
}
