//! `kubeforge dev-server`: runs kubeforge's API server until SIGINT or
//! SIGTERM, writes a kubeconfig for it, and installs CRDs from files or
//! directories (multi-document YAML) at start. The workload controllers
//! and three simulated nodes run unless `--nodes 0`, so Deployments get
//! pods that start and become ready.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use kubeforge_apiserver::{ApiServer, Workloads};

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
    wait_for_signal().await?;
    println!("shutting down");
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
