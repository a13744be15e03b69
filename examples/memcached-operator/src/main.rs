//! `memcached-operator`: runs the memcached controller against a cluster
//! (kubeconfig or in-cluster configuration) or, with `--embedded`, against
//! kubeforge's in-process API server, with a sample Memcached to play with.
//! `memcached-operator crd` prints the CRD.

use std::io::{IsTerminal as _, Write as _};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use kubeforge::client::config::KubeConfigOptions;
use kubeforge::{Config, Manager};
use memcached_operator::controller::FIELD_MANAGER;
use memcached_operator::{register, Settings};

/// The Lease held by the leader with `--leader-elect`.
const LEASE_NAME: &str = "memcached-operator.cache.example.com";

/// Where the sample Memcached goes with `--embedded`.
#[cfg(feature = "embedded")]
const SAMPLE_NAMESPACE: &str = "default";

/// Keeps a Deployment of `size` memcached pods for every Memcached.
#[derive(Parser, Debug)]
#[command(name = "memcached-operator", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    /// Start kubeforge's in-process API server, install the CRD, create a
    /// sample Memcached, and run the operator against it.
    #[arg(long)]
    embedded: bool,

    /// With --embedded: the API server's address (loopback unless you mean
    /// to expose it; 6443 is kube-apiserver's port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:6443")]
    listen: SocketAddr,

    /// With --embedded: write a kubeconfig for the API server to PATH, for
    /// kubectl.
    #[arg(long, value_name = "PATH", requires = "embedded")]
    write_kubeconfig: Option<PathBuf>,

    /// The kubeconfig file of the cluster (default: $KUBECONFIG,
    /// ~/.kube/config, then the in-cluster service account).
    #[arg(long, value_name = "PATH", conflicts_with = "embedded")]
    kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (default: its current context).
    #[arg(long, value_name = "NAME", conflicts_with = "embedded")]
    context: Option<String>,

    /// Watch Memcacheds (and cache Deployments) in this namespace only.
    #[arg(long, value_name = "NAMESPACE")]
    namespace: Option<String>,

    /// Run the controller only while holding the leader Lease, so several
    /// replicas can run with one active.
    #[arg(long)]
    leader_elect: bool,

    /// Where /metrics is served: ADDR:PORT, :PORT (every interface), or 0
    /// to turn it off.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    metrics_bind_address: String,

    /// Where /healthz and /readyz are served: ADDR:PORT, :PORT (every
    /// interface), or 0 to turn them off.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8081")]
    health_probe_bind_address: String,

    /// Reconcile every Memcached at least this often, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    resync_period: u64,

    /// How many Memcacheds may be reconciled at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    max_concurrent_reconciles: usize,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the Memcached CustomResourceDefinition as YAML.
    Crd,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Some(Command::Crd) = cli.command {
        std::io::stdout().write_all(memcached_operator::crd_yaml()?.as_bytes())?;
        return Ok(());
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    if cli.embedded {
        run_embedded(cli).await
    } else {
        let config = cluster_config(&cli).await?;
        run_operator(config, &cli).await
    }
}

/// The cluster, as kubectl finds it: the `--kubeconfig` file alone, else
/// `$KUBECONFIG`, `~/.kube/config`, then the in-cluster service account;
/// `--context` picks the kubeconfig's context.
async fn cluster_config(cli: &Cli) -> anyhow::Result<Config> {
    let options = KubeConfigOptions {
        context: cli.context.clone(),
        ..Default::default()
    };
    Ok(match &cli.kubeconfig {
        Some(path) => Config::from_kubeconfig_file(path, &options).await?,
        None => Config::infer_with(&options)
            .await
            .context("no cluster to run against; --embedded runs an in-process API server")?,
    })
}

/// Builds the manager, registers the controller, and runs until SIGTERM or
/// SIGINT.
async fn run_operator(config: Config, cli: &Cli) -> anyhow::Result<()> {
    let mut builder = Manager::builder()
        .config(config)
        .field_manager(FIELD_MANAGER)
        .metrics_bind_address(cli.metrics_bind_address.clone())
        .health_probe_bind_address(cli.health_probe_bind_address.clone())
        .leader_election_release_on_cancel(true);
    if let Some(namespace) = &cli.namespace {
        builder = builder.namespace(namespace.clone());
    }
    if cli.leader_elect {
        builder = builder.leader_election(LEASE_NAME);
    }
    let mgr = builder.build().await?;
    tracing::info!(
        metrics = ?mgr.metrics_address(),
        probes = ?mgr.health_probe_address(),
        "starting the memcached operator"
    );
    register(
        &mgr,
        Settings {
            resync: Duration::from_secs(cli.resync_period.max(1)),
        },
        cli.max_concurrent_reconciles,
    );
    mgr.run().await?;
    Ok(())
}

/// `--embedded` in a build without the in-process API server.
#[cfg(not(feature = "embedded"))]
async fn run_embedded(_: Cli) -> anyhow::Result<()> {
    anyhow::bail!("this build has no embedded API server (feature `embedded`); run against a cluster with --kubeconfig, or rebuild with default features")
}

/// `--embedded`: the in-process API server, the CRD, the sample, then the
/// operator; the server stops after the operator has.
#[cfg(feature = "embedded")]
async fn run_embedded(cli: Cli) -> anyhow::Result<()> {
    use kubeforge::testing::ApiServerExt as _;

    if !cli.listen.ip().is_loopback() {
        tracing::warn!(listen = %cli.listen, "the embedded API server listens beyond loopback: anyone who can reach it and has the token can use it");
    }
    let server = memcached_operator::embedded::start(cli.listen)
        .await
        .with_context(|| format!("cannot start the embedded API server on {}", cli.listen))?;
    let sample = memcached_operator::create_sample(&server.client()?, SAMPLE_NAMESPACE).await?;
    let mut banner = format!("embedded API server listening on {}\n", server.url());
    match &cli.write_kubeconfig {
        Some(path) => {
            server
                .write_kubeconfig(path)
                .with_context(|| format!("cannot write the kubeconfig to {}", path.display()))?;
            let name = sample.metadata.name.as_deref().unwrap_or_default();
            let kubectl = format!("KUBECONFIG={} kubectl", path.display());
            banner.push_str(&format!(
                "kubeconfig written to {}; try:\n\
                 \x20 {kubectl} get memcached\n\
                 \x20 {kubectl} scale memcached/{name} --replicas=3\n\
                 \x20 {kubectl} get deployments\n\
                 \x20 {kubectl} delete memcached/{name}\n\
                 \x20 {kubectl} get events\n",
                path.display()
            ));
        }
        None => banner.push_str("add --write-kubeconfig PATH to reach it with kubectl\n"),
    }
    // One write, and a closed stdout (`| head`) is no reason to stop.
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(banner.as_bytes())
        .and_then(|()| stdout.flush())
    {
        tracing::warn!(error = %e, "cannot print the banner");
    }
    drop(stdout);
    let result = run_operator(server.config(), &cli).await;
    server.shutdown().await;
    result
}
