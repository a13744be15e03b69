//! `kubeforge dev-server`: runs kubeforge's API server until SIGINT or
//! SIGTERM, writes a kubeconfig for it, and installs CRDs from files or
//! directories (multi-document YAML) at start. The workload controllers
//! and three simulated nodes run unless `--nodes 0`, so Deployments get
//! pods that start and become ready. `--user` and `--service-account` add
//! identities that RBAC governs (the server's own kubeconfig is an admin
//! in `system:masters`) and write a kubeconfig for each. `--audit` prints
//! the server's permission audit of an identity when the server stops:
//! what it was denied (the rules it lacks), the rules it was granted
//! and never used, and the verbs of used rules it never used. A flag rather than an endpoint: the server keeps
//! serving only the paths kube-apiserver serves (no extra path for
//! discovery, RBAC or a client to trip over), and the audit is read once
//! the session's requests are made, where the developer stops the server.
//! `--data-dir` keeps the whole state (objects, CRDs, the CA, tokens) in a
//! directory, so stopping and starting the server again loses nothing and
//! kubeconfigs written before keep working. `--image IMAGE=PATH` runs the
//! containers of an image as real processes of a local executable, so an
//! operator's own Deployment runs in-cluster as its manifests describe.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use std::time::Duration;

use anyhow::{bail, Context};
use kubeforge_apiserver::{ApiServer, Credentials, User, Workloads};

/// How long the tokens of `--service-account` are valid: a day outlasts
/// most sessions (the signing key lives as long as the process, or as the
/// `--data-dir`) without making a token immortal.
const SERVICE_ACCOUNT_TOKEN_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// Options of `kubeforge dev-server`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on. Binding anything but loopback exposes the
    /// server (with its token) to the network.
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Where to write a kubeconfig for the server.
    #[arg(long, value_name = "PATH")]
    write_kubeconfig: Option<PathBuf>,
    /// CRD manifests to install (a file, or a directory of .yaml/.yml/.json
    /// files); repeatable.
    #[arg(long = "crd", value_name = "FILE_OR_DIR")]
    crds: Vec<PathBuf>,
    /// Simulated nodes whose kubelets run pods (the workload controllers
    /// run with them); 0 turns the workload controllers and nodes off, so
    /// nothing writes status but you.
    #[arg(long, default_value_t = 3, value_name = "N")]
    nodes: usize,
    /// Adds a user authenticating with a new bearer token, in the groups
    /// listed after its name, and writes its kubeconfig to PATH (what it
    /// may do is up to RBAC); repeatable. E.g. `alice,dev,ops=alice.kubeconfig`.
    #[arg(long = "user", value_name = "NAME[,GROUP...]=PATH", value_parser = parse_user)]
    users: Vec<(User, PathBuf)>,
    /// Creates the ServiceAccount NAMESPACE/NAME (the namespace must exist,
    /// `default` does) and writes a kubeconfig with a token for it (valid
    /// for 24 hours) to PATH; repeatable.
    #[arg(long = "service-account", value_name = "NAMESPACE/NAME=PATH", value_parser = parse_service_account)]
    service_accounts: Vec<((String, String), PathBuf)>,
    /// Prints the permission audit of IDENTITY when the server stops (on
    /// SIGINT or SIGTERM): the requests it was denied, as the RBAC rules
    /// it lacks, the rules granted to it that it never used, and the
    /// verbs of the rules it used that it never used. IDENTITY
    /// is a user name, `NAMESPACE/NAME` for a service account, or `*` for
    /// every identity seen; repeatable.
    #[arg(long = "audit", value_name = "IDENTITY")]
    audits: Vec<String>,
    /// Keeps the server's state in DIR (created if missing): objects,
    /// CRDs, the CA, the admin token, users and the service-account key,
    /// so a restart loses nothing acknowledged and earlier kubeconfigs
    /// keep working. Without it the state lives in memory.
    #[arg(long = "data-dir", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Turns features on or off, as kube-apiserver's flag of the same name
    /// does: `NAME=true|false`, comma-separated or repeated. Known:
    /// `ShardedListAndWatch` (KEP-5866's `shardSelector`, on by default;
    /// off, sharded controllers fall back to slot labels).
    #[arg(long = "feature-gates", value_name = "NAME=BOOL[,...]", value_parser = parse_feature_gates)]
    feature_gates: Vec<Vec<(FeatureGate, bool)>>,
    /// Runs the containers whose image is IMAGE as real processes of the
    /// executable PATH, one per container of each pod the simulated nodes
    /// run, with what a kubelet gives a container (env, the service
    /// account's token, the `kubernetes` Service at 10.96.0.1:443);
    /// repeatable. Other images stay simulated. E.g.
    /// `controller:latest=target/debug/manager`.
    #[arg(long = "image", value_name = "IMAGE=PATH", value_parser = parse_image)]
    images: Vec<(String, PathBuf)>,
}

/// `IMAGE=PATH`, split at the first `=` (an image reference has none).
/// Whether PATH is an executable is the server's check at start.
fn parse_image(spec: &str) -> Result<(String, PathBuf), String> {
    const EXAMPLE: &str = "controller:latest=target/debug/manager";
    match spec.split_once('=') {
        Some((image, path)) if !image.trim().is_empty() && !path.is_empty() => {
            Ok((image.trim().to_owned(), PathBuf::from(path)))
        }
        Some((image, _)) if image.trim().is_empty() => {
            Err(format!("the image name is empty; expected IMAGE=PATH, e.g. {EXAMPLE}"))
        }
        Some(_) => Err(format!("the path is empty; expected IMAGE=PATH, e.g. {EXAMPLE}")),
        None => Err(format!(
            "{spec:?} has no `=`; expected IMAGE=PATH, the image a pod names and the executable that runs it, e.g. {EXAMPLE}"
        )),
    }
}

/// The feature gates `--feature-gates` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FeatureGate {
    ShardedListAndWatch,
}

/// `NAME=BOOL[,NAME=BOOL...]`, as kube-apiserver's `--feature-gates`
/// (`k8s.io/component-base/featuregate`, `Set`).
fn parse_feature_gates(spec: &str) -> Result<Vec<(FeatureGate, bool)>, String> {
    const KNOWN: &str = "ShardedListAndWatch";
    spec.split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').ok_or_else(|| {
                format!("missing bool value for {:?}; expected NAME=true|false, e.g. ShardedListAndWatch=false", pair.trim())
            })?;
            let gate = match name.trim() {
                "ShardedListAndWatch" => FeatureGate::ShardedListAndWatch,
                other => return Err(format!("unrecognized feature gate: {other} (known: {KNOWN})")),
            };
            let on = value.trim().parse::<bool>().map_err(|_| {
                format!("invalid value of {}: {:?}; expected true or false", name.trim(), value.trim())
            })?;
            Ok((gate, on))
        })
        .collect()
}

/// The user name `--audit` means: `NAMESPACE/NAME` is a service account.
fn audited_user(identity: &str) -> String {
    match identity.split_once('/') {
        Some((namespace, name)) if !identity.contains(':') => {
            format!("system:serviceaccount:{namespace}:{name}")
        }
        _ => identity.to_owned(),
    }
}

/// The permission audits `--audit` asked for, as text.
fn audits(server: &ApiServer, identities: &[String]) -> String {
    let mut users: Vec<String> = Vec::new();
    for identity in identities {
        if identity == "*" {
            users.extend(server.audited_identities());
        } else {
            users.push(audited_user(identity));
        }
    }
    users.dedup();
    let mut out = String::new();
    for user in users {
        out.push_str(&server.permission_audit(&user).to_string());
    }
    out
}

fn split_path(spec: &str, shape: &str) -> Result<(String, PathBuf), String> {
    match spec.split_once('=') {
        Some((who, path)) if !who.is_empty() && !path.is_empty() => {
            Ok((who.to_owned(), PathBuf::from(path)))
        }
        _ => Err(format!("expected {shape}, e.g. {}", example(shape))),
    }
}

fn example(shape: &str) -> &'static str {
    if shape.starts_with("NAMESPACE") {
        "default/robot=robot.kubeconfig"
    } else {
        "alice,dev=alice.kubeconfig"
    }
}

/// `NAME[,GROUP...]=PATH`.
fn parse_user(spec: &str) -> Result<(User, PathBuf), String> {
    let shape = "NAME[,GROUP...]=PATH";
    let (who, path) = split_path(spec, shape)?;
    let mut parts = who.split(',');
    let name = parts.next().unwrap_or_default();
    if name.is_empty() {
        return Err(format!("the user name is empty; expected {shape}"));
    }
    let mut user = User::new(name);
    for group in parts {
        if group.is_empty() {
            return Err(format!("an empty group in {who:?}; expected {shape}"));
        }
        user = user.group(group);
    }
    Ok((user, path))
}

/// `NAMESPACE/NAME=PATH`.
fn parse_service_account(spec: &str) -> Result<((String, String), PathBuf), String> {
    let shape = "NAMESPACE/NAME=PATH";
    let (who, path) = split_path(spec, shape)?;
    match who.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok(((ns.to_owned(), name.to_owned()), path))
        }
        _ => Err(format!(
            "{who:?} is not NAMESPACE/NAME; expected {shape}, e.g. {}",
            example(shape)
        )),
    }
}

/// Writes `creds`' kubeconfig to `path` and says so.
fn write_identity(creds: &Credentials, path: &Path) -> anyhow::Result<()> {
    creds.write_kubeconfig(path).with_context(|| {
        format!(
            "cannot write the kubeconfig of {} to {}",
            creds.user(),
            path.display()
        )
    })?;
    println!(
        "kubeconfig for {} written to {}",
        creds.user(),
        path.display()
    );
    Ok(())
}

/// Runs the server until a termination signal.
pub fn run(args: Args) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    if !args.listen.ip().is_loopback() {
        tracing::warn!(
            listen = %args.listen,
            "listening on a non-loopback address: anyone who can reach it and has the token can use the server"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(args))
}

async fn serve(args: Args) -> anyhow::Result<()> {
    let manifests = load_crds(&args.crds)?;
    let mut builder = ApiServer::builder().bind(args.listen);
    if args.nodes > 0 {
        builder = builder.workloads(Workloads::new().nodes(args.nodes));
    } else if !args.images.is_empty() {
        bail!("--image runs pods on the simulated nodes, and --nodes 0 turns them off; drop --nodes 0 or --image");
    }
    for (image, path) in &args.images {
        builder = builder.image(image, path);
    }
    if let Some(dir) = &args.data_dir {
        builder = builder.data_dir(dir);
    }
    for (gate, on) in args.feature_gates.iter().flatten() {
        builder = match gate {
            FeatureGate::ShardedListAndWatch => builder.sharded_list_and_watch(*on),
        };
    }
    let server = builder
        .start()
        .await
        .with_context(|| format!("cannot start the API server on {}", args.listen))?;
    for (source, crd) in manifests {
        server
            .install_crd(crd)
            .with_context(|| format!("cannot install the CRD from {}", source.display()))?;
    }
    println!("kubeforge dev-server listening on {}", server.url());
    if let Some(path) = &args.write_kubeconfig {
        server
            .write_kubeconfig(path)
            .with_context(|| format!("cannot write kubeconfig to {}", path.display()))?;
        println!("kubeconfig written to {}", path.display());
        println!("  export KUBECONFIG={}", path.display());
    }
    for (user, path) in &args.users {
        let creds = server
            .add_user(user)
            .with_context(|| format!("cannot add the user {}", user.name()))?;
        write_identity(&creds, path)?;
    }
    for ((namespace, name), path) in &args.service_accounts {
        let creds = server
            .add_service_account_for(namespace, name, SERVICE_ACCOUNT_TOKEN_LIFETIME)
            .with_context(|| format!("cannot add the service account {namespace}/{name}"))?;
        write_identity(&creds, path)?;
    }
    wait_for_signal().await?;
    println!("shutting down");
    print!("{}", audits(&server, &args.audits));
    server.shutdown().await;
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.context("cannot listen for SIGINT")?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c()
        .await
        .context("cannot listen for Ctrl-C")?;
    Ok(())
}

/// Reads every CRD document from the given files and directories.
fn load_crds(paths: &[PathBuf]) -> anyhow::Result<Vec<(PathBuf, serde_json::Value)>> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("cannot read directory {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    matches!(
                        f.extension().and_then(|e| e.to_str()),
                        Some("yaml" | "yml" | "json")
                    )
                })
                .collect();
            entries.sort();
            files.extend(entries);
        } else {
            files.push(p.clone());
        }
    }
    let mut out = Vec::new();
    for f in files {
        for doc in read_documents(&f)? {
            let kind = doc.get("kind").and_then(|k| k.as_str()).unwrap_or("");
            if kind != "CustomResourceDefinition" {
                bail!(
                    "{} contains a {kind:?} document; --crd takes CustomResourceDefinitions only",
                    f.display()
                );
            }
            out.push((f.clone(), doc));
        }
    }
    Ok(out)
}

fn read_documents(path: &Path) -> anyhow::Result<Vec<serde_json::Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text)
        .map_err(|e| anyhow::anyhow!("{} is not valid YAML: {e}", path.display()))?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audited_identities_name_users_and_service_accounts() {
        assert_eq!(audited_user("alice"), "alice");
        assert_eq!(
            audited_user("default/robot"),
            "system:serviceaccount:default:robot"
        );
        assert_eq!(
            audited_user("system:serviceaccount:a:b"),
            "system:serviceaccount:a:b"
        );
    }

    #[test]
    fn feature_gates_parse_as_kube_apiserver_spells_them() {
        assert_eq!(
            parse_feature_gates("ShardedListAndWatch=false").unwrap(),
            [(FeatureGate::ShardedListAndWatch, false)]
        );
        assert_eq!(
            parse_feature_gates("ShardedListAndWatch=false, ShardedListAndWatch=true").unwrap(),
            [
                (FeatureGate::ShardedListAndWatch, false),
                (FeatureGate::ShardedListAndWatch, true)
            ]
        );
        let unknown = parse_feature_gates("Nope=true").unwrap_err();
        assert!(
            unknown.contains("unrecognized feature gate: Nope"),
            "{unknown}"
        );
        let no_value = parse_feature_gates("ShardedListAndWatch").unwrap_err();
        assert!(no_value.contains("ShardedListAndWatch=false"), "{no_value}");
        let bad = parse_feature_gates("ShardedListAndWatch=maybe").unwrap_err();
        assert!(bad.contains("expected true or false"), "{bad}");
    }

    #[test]
    fn image_mappings_split_at_the_first_equals_and_bad_ones_show_an_example() {
        assert_eq!(
            parse_image("controller:latest=target/debug/manager").unwrap(),
            (
                "controller:latest".to_owned(),
                PathBuf::from("target/debug/manager")
            )
        );
        assert_eq!(
            parse_image("ghcr.io/a/b@sha256:00=bin/x=y").unwrap(),
            ("ghcr.io/a/b@sha256:00".to_owned(), PathBuf::from("bin/x=y"))
        );
        for (bad, rule) in [
            ("target/debug/manager", "has no `=`"),
            ("=target/debug/manager", "the image name is empty"),
            ("controller=", "the path is empty"),
        ] {
            let e = parse_image(bad).unwrap_err();
            assert!(e.contains(rule), "{bad}: {e}");
            assert!(
                e.contains("controller:latest=target/debug/manager"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn identity_specs_parse_and_bad_ones_say_the_shape() {
        let (user, path) = parse_user("alice,dev,system:masters=a.kubeconfig").unwrap();
        assert_eq!(
            (user.name(), user.groups(), path),
            (
                "alice",
                &["dev".to_owned(), "system:masters".to_owned()][..],
                PathBuf::from("a.kubeconfig")
            )
        );
        assert_eq!(
            parse_user("alice").unwrap_err(),
            "expected NAME[,GROUP...]=PATH, e.g. alice,dev=alice.kubeconfig"
        );
        assert!(parse_user("alice,,dev=p")
            .unwrap_err()
            .contains("empty group"));
        assert_eq!(
            parse_service_account("default/robot=r").unwrap(),
            (
                ("default".to_owned(), "robot".to_owned()),
                PathBuf::from("r")
            )
        );
        assert_eq!(
            parse_service_account("robot=r").unwrap_err(),
            "\"robot\" is not NAMESPACE/NAME; expected NAMESPACE/NAME=PATH, e.g. default/robot=robot.kubeconfig"
        );
    }
}
