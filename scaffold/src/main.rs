//! The `kubeforge` command: scaffold operator projects (`init`, `create
//! api`, `create webhook`), generate their manifests (`generate`), and run
//! a development API server (`dev-server`).

mod blocks;
mod create_api;
mod create_webhook;
mod dev_server;
mod files;
mod generate;
mod init;
mod names;
mod plan;
mod project;
mod splice;
mod templates;

use std::io::Write as _;
use std::process::ExitCode;

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
    /// Write a new operator project into DIR (default: here).
    Init(init::Args),
    /// Add to the project in this directory.
    #[command(subcommand)]
    Create(Create),
    /// Build the project and write the manifests its code defines (CRDs,
    /// RBAC, webhook configurations) to config/.
    Generate(generate::Args),
    /// Run the in-process Kubernetes API server as a process, for kubectl
    /// and operators under development.
    DevServer(dev_server::Args),
}

#[derive(Subcommand, Debug)]
enum Create {
    /// A kind (or a version of one) with its controller.
    Api(create_api::Args),
    /// A defaulting or validating webhook for a version of a kind, or the
    /// conversions between its versions.
    Webhook(create_webhook::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Init(args)) => init::run(args),
        Some(Command::Create(Create::Api(args))) => create_api::run(args),
        Some(Command::Create(Create::Webhook(args))) => create_webhook::run(args),
        Some(Command::Generate(args)) => generate::run(args),
        Some(Command::DevServer(args)) => dev_server::run(args),
        None => {
            use clap::CommandFactory;
            Cli::command().print_help().map_err(Into::into)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The error and its causes, one line each.
            let _ = writeln!(std::io::stderr(), "error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
