//! The `kubeforge` command.

use clap::Parser;

/// Scaffold operator projects, generate manifests, run a development API server.
#[derive(Parser, Debug)]
#[command(name = "kubeforge", version, about)]
struct Cli {}

fn main() {
    let _cli = Cli::parse();
}
