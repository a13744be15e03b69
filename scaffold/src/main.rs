//! The `kubeforge` command.

mod dev_server;

use clap::{Parser, Subcommand};

/// Scaffold operator projects, generate manifests, run a development API server.
#[derive(Parser, Debug)]
#[command(name = "kubeforge", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the in-process Kubernetes API server as a process, for kubectl
    /// and operators under development.
    DevServer(dev_server::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::DevServer(args)) => dev_server::run(args),
        None => {
            use clap::CommandFactory;
            Cli::command().print_help()?;
            Ok(())
        }
    }
}
