//! The flags of the standard command line and how a command line becomes
//! an [`Invocation`]: `run` (the default, so its flags also stand alone)
//! or `manifests`, each with the operator's own flags `F`.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{ArgMatches, Args, Command, FromArgMatches, ValueEnum};

/// How logs are written to stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines, coloured on a terminal.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// The flags of `run`: where the cluster is, leader election, endpoints,
/// cache scope, logs.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct RunArgs {
    /// The kubeconfig file of the cluster (default: $KUBECONFIG,
    /// ~/.kube/config, then the in-cluster service account).
    #[arg(long, value_name = "PATH", conflicts_with = "embedded")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (default: its current context).
    #[arg(long, value_name = "NAME", conflicts_with = "embedded")]
    pub context: Option<String>,

    /// Start kubeforge's in-process API server, install the operator's
    /// CRDs (and create its samples), and run against it.
    #[arg(long)]
    pub embedded: bool,

    /// With --embedded: the API server's address (loopback unless you mean
    /// to expose it; 6443 is kube-apiserver's port, 127.0.0.1:0 a free one).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:6443",
        requires = "embedded"
    )]
    pub listen: SocketAddr,

    /// With --embedded: write a kubeconfig for the API server to PATH, for
    /// kubectl.
    #[arg(long, value_name = "PATH", requires = "embedded")]
    pub write_kubeconfig: Option<PathBuf>,

    /// With --embedded: do not create the operator's sample objects.
    #[arg(long, requires = "embedded")]
    pub no_samples: bool,

    /// The field manager of the operator's writes (default: the one the
    /// operator names, else its name). Replicas that must tell their
    /// writes apart in `managedFields` each take their own.
    #[arg(long, value_name = "NAME")]
    pub field_manager: Option<String>,

    /// Run the controllers only while holding the leader-election Lease,
    /// so several replicas can run with one active.
    #[arg(long)]
    pub leader_elect: bool,

    /// Where /metrics is served: ADDR:PORT, :PORT (every interface), or 0
    /// to turn it off.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub metrics_bind_address: String,

    /// Where /healthz and /readyz are served: ADDR:PORT, :PORT (every
    /// interface), or 0 to turn them off.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8081")]
    pub health_probe_bind_address: String,

    /// Watch (and cache) objects of namespaced kinds in this namespace
    /// only.
    #[arg(long, value_name = "NAMESPACE", env = "WATCH_NAMESPACE")]
    pub namespace: Option<String>,

    /// The log filter: a level (error, warn, info, debug, trace) or
    /// tracing directives such as `info,kubeforge=debug`.
    #[arg(long, value_name = "FILTER", env = "RUST_LOG", default_value = "info")]
    pub log_level: String,

    /// How logs are written to stderr.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// The flags of `manifests`.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct ManifestArgs {
    /// Write the manifests under DIR (kubebuilder's `config/` layout:
    /// `crd/bases/<group>_<plural>.yaml`, `rbac/role.yaml`, ...) instead
    /// of printing them.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Render the manager's RBAC as a Role in NAMESPACE, for an operator
    /// run with --namespace NAMESPACE (rules only a ClusterRole can grant
    /// stay in one).
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
}

/// What a command line asks for.
#[derive(Debug)]
pub enum Invocation<F> {
    /// Run the operator.
    Run(RunArgs, F),
    /// Print or write the manifests.
    Manifests(ManifestArgs, F),
}

/// The standard command line of the operator `name`, with the operator's
/// flags `F` beside the standard ones of each command.
pub fn command<F: Args>(name: &str, about: Option<&str>, version: Option<&str>) -> Command {
    // `augment_args` sets the about of `F`'s doc comment: set ours after it.
    let run = F::augment_args(RunArgs::augment_args(Command::new("run")))
        .about("Run the operator (the default)")
        .long_about(None::<&str>);
    let manifests = F::augment_args(ManifestArgs::augment_args(Command::new("manifests")))
        .about(
            "Print (or write under --dir) the operator's CRDs and RBAC, as its code defines them",
        )
        .long_about(None::<&str>);
    let mut root = F::augment_args(RunArgs::augment_args(Command::new(name.to_owned())))
        .subcommand(run)
        .subcommand(manifests)
        .args_conflicts_with_subcommands(true)
        .about(None::<&str>)
        .long_about(None::<&str>);
    if let Some(about) = about {
        root = root.about(about.to_owned());
    }
    if let Some(version) = version {
        root = root.version(version.to_owned());
    }
    root
}

/// Parses `args` (the program name first) into an [`Invocation`].
pub fn parse<F: Args>(
    name: &str,
    about: Option<&str>,
    version: Option<&str>,
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
) -> Result<Invocation<F>, clap::Error> {
    let matches = command::<F>(name, about, version).try_get_matches_from(args)?;
    let both = |m: &ArgMatches| -> Result<(RunArgs, F), clap::Error> {
        Ok((RunArgs::from_arg_matches(m)?, F::from_arg_matches(m)?))
    };
    let invocation = match matches.subcommand() {
        Some(("manifests", m)) => {
            Invocation::Manifests(ManifestArgs::from_arg_matches(m)?, F::from_arg_matches(m)?)
        }
        Some(("run", m)) => {
            let (run, flags) = both(m)?;
            Invocation::Run(run, flags)
        }
        _ => {
            let (run, flags) = both(&matches)?;
            Invocation::Run(run, flags)
        }
    };
    Ok(invocation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::NoFlags;

    fn parse_ok(args: &[&str]) -> Invocation<NoFlags> {
        parse::<NoFlags>(
            "op",
            None,
            None,
            std::iter::once("op").chain(args.iter().copied()),
        )
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    fn parse_err(args: &[&str]) -> String {
        match parse::<NoFlags>(
            "op",
            None,
            None,
            std::iter::once("op").chain(args.iter().copied()),
        ) {
            Ok(i) => panic!("{args:?} parsed: {i:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn run_is_the_default_and_can_be_named() {
        for args in [&["--leader-elect"][..], &["run", "--leader-elect"]] {
            match parse_ok(args) {
                Invocation::Run(run, _) => {
                    assert!(run.leader_elect);
                    assert_eq!(run.metrics_bind_address, "127.0.0.1:8080");
                    assert_eq!(run.health_probe_bind_address, "127.0.0.1:8081");
                    assert_eq!(run.log_format, LogFormat::Text);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn manifests_takes_a_directory_and_a_namespace() {
        match parse_ok(&["manifests", "--dir", "config", "--namespace", "shop"]) {
            Invocation::Manifests(m, _) => {
                assert_eq!(m.dir, Some(PathBuf::from("config")));
                assert_eq!(m.namespace.as_deref(), Some("shop"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn embedded_excludes_a_kubeconfig_and_its_flags_need_it() {
        assert!(parse_err(&["--embedded", "--kubeconfig", "k"]).contains("cannot be used with"));
        assert!(parse_err(&["--write-kubeconfig", "k"]).contains("--embedded"));
        assert!(parse_err(&["--listen", "127.0.0.1:0"]).contains("--embedded"));
        match parse_ok(&[
            "--embedded",
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
        ]) {
            Invocation::Run(run, _) => {
                assert!(run.embedded);
                assert_eq!(run.listen.port(), 0);
                assert_eq!(run.log_format, LogFormat::Json);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn run_flags_are_not_taken_beside_a_subcommand() {
        assert!(!parse_err(&["--leader-elect", "manifests"]).is_empty());
    }

    #[test]
    fn the_help_says_what_each_command_does() {
        let help = command::<NoFlags>("op", Some("Runs shops."), None)
            .render_help()
            .to_string();
        assert!(help.contains("Runs shops."), "{help}");
        assert!(help.contains("Run the operator (the default)"), "{help}");
        assert!(help.contains("CRDs and RBAC"), "{help}");
        assert!(!help.contains("adds none"), "{help}");
    }

    /// An operator's own flags sit beside the standard ones of each command.
    #[test]
    fn the_operators_flags_are_parsed_for_both_commands() {
        #[derive(Args, Debug)]
        struct Flags {
            #[arg(long, default_value_t = 300)]
            resync_period: u64,
        }
        let parse = |args: &[&str]| {
            parse::<Flags>(
                "op",
                None,
                None,
                std::iter::once("op").chain(args.iter().copied()),
            )
            .expect("parses")
        };
        match parse(&["--resync-period", "5"]) {
            Invocation::Run(_, flags) => assert_eq!(flags.resync_period, 5),
            other => panic!("{other:?}"),
        }
        match parse(&["manifests"]) {
            Invocation::Manifests(_, flags) => assert_eq!(flags.resync_period, 300),
            other => panic!("{other:?}"),
        }
    }
}
