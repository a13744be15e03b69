//! The operator's standard command line (feature `app`, on by default):
//! every operator gets the same flags and commands from [`App`], so a
//! kubeforge upgrade brings new ones without touching the operator's
//! `main`.
//!
//! ```text
//! my-operator [run] [--kubeconfig PATH] [--context NAME]
//!                   [--embedded [--listen ADDR] [--write-kubeconfig PATH] [--no-samples]]
//!                   [--leader-elect] [--field-manager NAME]
//!                   [--metrics-bind-address ADDR] [--health-probe-bind-address ADDR]
//!                   [--namespace NS] [--log-level FILTER] [--log-format text|json] [operator flags]
//! my-operator manifests [--dir DIR] [--namespace NS] [operator flags]
//! ```
//!
//! - `run` (the default) runs the manager against the cluster of
//!   `--kubeconfig`/`--context`, else `$KUBECONFIG`, `~/.kube/config`, then
//!   the in-cluster service account; never silently against anything
//!   else. `--embedded` (feature `embedded`) runs kubeforge's in-process
//!   API server inside the operator instead, with the operator's CRDs
//!   installed, its webhooks ([`App::webhooks`]) served on loopback with a
//!   fresh CA and the server pointed at them, and its samples created; the
//!   operator runs there as its service account, bound to the RBAC
//!   `manifests` derive (the samples and the kubeconfig written for kubectl
//!   are the admin's).
//! - `manifests` prints (or writes under `--dir`, in kubebuilder's
//!   `config/` layout) what the operator knows about itself: its CRDs, its
//!   webhook configurations and its RBAC, derived from what its controllers
//!   watch and write (see [`rbac`](crate::rbac)). It registers the
//!   controllers on a manager that never connects, so it needs no cluster;
//!   `kubeforge generate` runs it.
//!
//! ```no_run
//! use kubeforge::app::App;
//! use kubeforge::prelude::*;
//! # #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
//! # #[crd(group = "cache.example.com", version = "v1alpha1", kind = "Memcached")]
//! # pub struct MemcachedSpec { pub size: i32 }
//! # async fn reconcile(_: Arc<Memcached>, _: Arc<Context<()>>) -> Result<Action, kubeforge::controller::Error> { Ok(Action::done()) }
//!
//! #[tokio::main]
//! async fn main() -> std::process::ExitCode {
//!     App::new("memcached-operator")
//!         .crd::<Memcached>()
//!         .leader_election_id("memcached-operator.cache.example.com")
//!         .setup(|mgr, _| {
//!             mgr.controller::<Memcached>().reconcile(reconcile, ());
//!             Ok::<_, kubeforge::controller::Error>(())
//!         })
//!         .run()
//!         .await
//! }
//! ```
//!
//! An operator's own flags are a `clap::Args` type given to
//! [`App::with_flags`]; they are parsed beside the standard flags of both
//! commands and handed to the setup function.

mod args;
#[cfg(feature = "testing")]
mod embedded;
#[cfg(feature = "testing")]
mod identity;
mod logging;
mod manifests;
#[cfg(feature = "testing")]
mod webhooks;

use std::ffi::OsString;
use std::fmt;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

pub use args::{LogFormat, ManifestArgs, RunArgs};
#[cfg(feature = "testing")]
pub use embedded::{CreatedSample, Running};
pub use manifests::{ManifestFile, ManifestOptions};

use crate::client::config::KubeConfigOptions;
use crate::client::BoxError;
use crate::crd::CustomResource;
use crate::manager::{Manager, ManagerBuilder};
use crate::rbac::Rule;
use crate::scheme::{Registrable, Scheme, SchemeError};
use crate::Config;
use args::Invocation;

/// An operator's own flags: any `clap::Args` type, parsed beside the
/// standard flags. [`NoFlags`] when it has none.
pub trait Flags: clap::Args + Send + Sync + 'static {}

impl<T: clap::Args + Send + Sync + 'static> Flags for T {}

/// The flags of an operator that adds none.
#[derive(clap::Args, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoFlags {}

/// What can stop the command line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command line is not valid (the message has clap's usage).
    #[error("{0}")]
    Args(#[from] clap::Error),

    /// `--log-level` is not a valid filter.
    #[error("invalid --log-level {filter:?}: {message}")]
    LogFilter {
        /// The filter given.
        filter: String,
        /// What is wrong with it.
        message: String,
    },

    /// No cluster configuration was found or the one named is unusable.
    #[error("{what}: {source}")]
    Cluster {
        /// What was being loaded.
        what: String,
        /// Why it failed.
        #[source]
        source: crate::Error,
    },

    /// `--embedded` in a build without the in-process API server.
    #[error("this build has no embedded API server: build the operator with kubeforge's `embedded` feature, or run it against a cluster with --kubeconfig")]
    NoEmbeddedServer,

    /// The embedded API server failed to start, refused a CRD or could not
    /// write its kubeconfig.
    #[cfg(feature = "testing")]
    #[error("{what}: {source}")]
    Embedded {
        /// What was being done.
        what: String,
        /// The server's error.
        #[source]
        source: crate::testing::Error,
    },

    /// A registered kind's CRD could not be built, or two kinds clash.
    #[error("the operator's kinds: {0}")]
    Scheme(#[from] SchemeError),

    /// The operator's service account or the RBAC its manifests derive
    /// could not be set up on the in-process API server.
    #[cfg(feature = "testing")]
    #[error("running the operator as its service account: {0}")]
    OperatorIdentity(#[source] crate::testing::OperatorError),

    /// A kind could not be registered (another type holds its
    /// group, version and kind).
    #[error("the operator's kinds: {0}")]
    Kind(String),

    /// A sample (counted from 0 in registration order) is not valid.
    #[error("sample {index}: {message}")]
    Sample {
        /// Which sample.
        index: usize,
        /// What is wrong with it.
        message: String,
    },

    /// A request to the API server failed.
    #[error("{what}: {source}")]
    Api {
        /// What was being done.
        what: String,
        /// The client's error.
        #[source]
        source: crate::Error,
    },

    /// The manager could not be built or stopped with an error.
    #[error(transparent)]
    Manager(#[from] crate::manager::Error),

    /// The operator's setup function failed.
    #[error("setting up the operator: {0}")]
    Setup(#[source] BoxError),

    /// The task running the operator panicked or was cancelled.
    #[error("the operator's task failed: {0}")]
    Task(#[source] tokio::task::JoinError),

    /// A manifest could not be written as YAML.
    #[error("{0}")]
    Manifest(#[source] crate::crd::CrdError),

    /// The operator's webhooks could not be wired to the in-process API
    /// server.
    #[cfg(feature = "testing")]
    #[error("the operator's webhooks on the API server: {0}")]
    Webhooks(#[source] crate::testing::LocalWebhooksError),

    /// A file could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The file or directory.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

type SetupFn<F> = dyn Fn(&Manager, &F) -> Result<(), BoxError> + Send + Sync;
type WebhooksFn = dyn Fn(&Manager) -> Result<(), BoxError> + Send + Sync;
type ConfigureFn = dyn Fn(ManagerBuilder) -> ManagerBuilder + Send + Sync;

/// An operator's command line: its name, kinds, samples, leader election,
/// and the setup function that registers its controllers. Finish with
/// [`run`](Self::run) in `main`.
pub struct App<F = NoFlags> {
    name: String,
    about: Option<String>,
    version: Option<String>,
    scheme: Scheme,
    scheme_errors: Vec<String>,
    samples: Vec<String>,
    lease: Option<String>,
    field_manager: Option<String>,
    rules: Vec<Rule>,
    configure: Vec<Arc<ConfigureFn>>,
    setup: Option<Arc<SetupFn<F>>>,
    webhooks: Vec<Arc<WebhooksFn>>,
}

impl<F> fmt::Debug for App<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("App")
            .field("name", &self.name)
            .field("samples", &self.samples.len())
            .field("lease", &self.lease)
            .field("rules", &self.rules.len())
            .field("webhooks", &self.webhooks.len())
            .finish_non_exhaustive()
    }
}

impl App<NoFlags> {
    /// The command line of the operator `name` (the program name in help
    /// and the default field manager and leader-election Lease).
    pub fn new(name: impl Into<String>) -> Self {
        Self::with_flags(name)
    }
}

/// The entry points of an app without flags of its own ([`App::new`], what
/// a generated project uses), compiled here once. Unoptimized builds share
/// generic code between crates, so an operator's binary and each of its
/// test binaries link these instead of compiling the whole run path again
/// (command line, manager, embedded server) for `App<NoFlags>`. Not API.
#[doc(hidden)]
pub mod compiled {
    use std::future::Future;
    use std::pin::Pin;

    use super::{App, ExitCode};

    /// A future, boxed: naming its `poll` compiles it here.
    pub type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

    /// [`App::run`].
    pub fn run(app: App) -> Boxed<'static, ExitCode> {
        Box::pin(app.run())
    }

    /// [`App::start_on`] and [`App::start_as_operator`].
    #[cfg(feature = "testing")]
    pub fn start<'a>(
        app: &'a App,
        server: &'a crate::testing::ApiServer,
        as_operator: bool,
    ) -> Boxed<'a, Result<super::Running, super::Error>> {
        if as_operator {
            Box::pin(app.start_as_operator(server, super::NoFlags {}))
        } else {
            Box::pin(app.start_on(server, super::NoFlags {}))
        }
    }
}

impl<F: Flags> App<F> {
    /// [`new`](App::new) for an operator with flags of its own, `F`:
    /// `App::<MyFlags>::with_flags("my-operator")`.
    pub fn with_flags(name: impl Into<String>) -> Self {
        App {
            name: name.into(),
            about: None,
            version: None,
            scheme: Scheme::with_builtins(),
            scheme_errors: Vec::new(),
            samples: Vec::new(),
            lease: None,
            field_manager: None,
            rules: Vec::new(),
            configure: Vec::new(),
            setup: None,
            webhooks: Vec::new(),
        }
    }

    /// The one-line description `--help` shows.
    pub fn about(mut self, about: impl Into<String>) -> Self {
        self.about = Some(about.into());
        self
    }

    /// The version `--version` prints (e.g. `env!("CARGO_PKG_VERSION")`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// A kind the operator defines: its CRD is installed by `--embedded`
    /// and written by `manifests` (versions of one kind combine into one
    /// CRD).
    pub fn crd<K: CustomResource + Registrable>(mut self) -> Self {
        if let Err(e) = self.scheme.register::<K>() {
            self.scheme_errors.push(e.to_string());
        }
        self
    }

    /// A sample (YAML, one or more documents) that `--embedded` creates,
    /// e.g. `include_str!("../config/samples/cache_v1alpha1_memcached.yaml")`.
    pub fn sample(mut self, yaml: impl Into<String>) -> Self {
        self.samples.push(yaml.into());
        self
    }

    /// The leader-election Lease (controller-runtime's `LeaderElectionID`;
    /// default: the operator's name), used with `--leader-elect` and
    /// granted by the rendered leader-election Role.
    pub fn leader_election_id(mut self, id: impl Into<String>) -> Self {
        self.lease = Some(id.into());
        self
    }

    /// The field manager of the operator's server-side applies (default:
    /// the operator's name).
    pub fn field_manager(mut self, name: impl Into<String>) -> Self {
        self.field_manager = Some(name.into());
        self
    }

    /// A rule the operator needs beyond what its controllers record (see
    /// [`Rule`]).
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Further manager settings (timeouts, ...), applied after the
    /// command line's.
    pub fn manager(
        mut self,
        configure: impl Fn(ManagerBuilder) -> ManagerBuilder + Send + Sync + 'static,
    ) -> Self {
        self.configure.push(Arc::new(configure));
        self
    }

    /// Registers the operator's controllers (and runnables) on the manager,
    /// given the operator's flags. `manifests` calls it too, on a manager
    /// that never connects, to learn what the controllers need: it must not
    /// talk to the API server.
    pub fn setup<E>(
        mut self,
        setup: impl Fn(&Manager, &F) -> Result<(), E> + Send + Sync + 'static,
    ) -> Self
    where
        E: Into<BoxError>,
    {
        self.setup = Some(Arc::new(move |mgr: &Manager, flags: &F| {
            setup(mgr, flags).map_err(Into::into)
        }));
        self
    }

    /// Registers webhooks on the manager (defaulters, validators and
    /// conversions, through [`Manager::webhooks`]); called after
    /// [`setup`](Self::setup), each time it is. Apart from `setup` so that
    /// the app knows before building a manager that it serves webhooks:
    /// `start_on` (feature `testing`) and `--embedded` then serve them on a
    /// loopback port with a fresh CA and point the API server at them, as
    /// envtest does, and `manifests` writes their configurations.
    pub fn webhooks<E>(
        mut self,
        setup: impl Fn(&Manager) -> Result<(), E> + Send + Sync + 'static,
    ) -> Self
    where
        E: Into<BoxError>,
    {
        self.webhooks.push(Arc::new(move |mgr: &Manager| {
            setup(mgr).map_err(Into::into)
        }));
        self
    }

    /// The operator's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The scheme: the built-in kinds and the operator's.
    pub fn scheme(&self) -> &Scheme {
        &self.scheme
    }

    /// The CRDs of the operator's kinds, one per kind, ordered by name.
    pub fn crds(&self) -> Result<Vec<CustomResourceDefinition>, Error> {
        if let Some(first) = self.scheme_errors.first() {
            return Err(Error::Kind(first.clone()));
        }
        Ok(self.scheme.crds()?)
    }

    fn lease(&self) -> String {
        self.lease.clone().unwrap_or_else(|| self.name.clone())
    }

    /// A manager builder with the app's settings and `run`'s flags.
    fn builder(&self, config: Config, run: &RunArgs) -> ManagerBuilder {
        let mut builder = Manager::builder()
            .config(config)
            .scheme(self.scheme.clone())
            .field_manager(
                run.field_manager
                    .clone()
                    .or_else(|| self.field_manager.clone())
                    .unwrap_or_else(|| self.name.clone()),
            )
            .metrics_bind_address(run.metrics_bind_address.clone())
            .health_probe_bind_address(run.health_probe_bind_address.clone())
            .leader_election_release_on_cancel(true);
        if let Some(ns) = &run.namespace {
            builder = builder.namespace(ns.clone());
        }
        if run.leader_elect {
            builder = builder.leader_election(self.lease());
        }
        for rule in &self.rules {
            builder = builder.rule(rule.clone());
        }
        for configure in &self.configure {
            builder = configure(builder);
        }
        builder
    }

    /// Builds the manager and registers the controllers on it.
    async fn manager_with(&self, builder: ManagerBuilder, flags: &F) -> Result<Manager, Error> {
        let mgr = builder.build().await?;
        if let Some(setup) = &self.setup {
            setup(&mgr, flags).map_err(Error::Setup)?;
        }
        for webhooks in &self.webhooks {
            webhooks(&mgr).map_err(Error::Setup)?;
        }
        Ok(mgr)
    }

    /// The manifests the operator's code defines (what `manifests`
    /// writes), for `flags`. No cluster is contacted.
    pub async fn manifests(
        &self,
        options: &ManifestOptions,
        flags: &F,
    ) -> Result<Vec<ManifestFile>, Error> {
        let crds = self.crds()?;
        let mgr = self.offline_manager(flags).await?;
        manifests::render_files(
            &self.name,
            &crds,
            mgr.permissions(),
            mgr.webhooks(),
            options,
        )
    }

    /// The manager `manifests` learns from: the controllers registered
    /// (with `flags`) on a manager that is never run.
    async fn offline_manager(&self, flags: &F) -> Result<Manager, Error> {
        // A manager that never connects: its client speaks plain HTTP (so
        // no TLS is set up: no trust store to load, no certificate check
        // to turn off and warn about) to a reserved name that never
        // resolves (RFC 6761's `.invalid`), its servers are off, and it is
        // never run.
        let offline = Config::new(http::Uri::from_static("http://manifests.invalid"));
        let mut builder = Manager::builder()
            .config(offline)
            .scheme(self.scheme.clone())
            .metrics_bind_address("0")
            .health_probe_bind_address("0")
            .leader_election(self.lease());
        for rule in &self.rules {
            builder = builder.rule(rule.clone());
        }
        for configure in &self.configure {
            builder = configure(builder);
        }
        // The settings may have changed the servers; manifests serve nothing.
        let builder = builder
            .metrics_bind_address("0")
            .health_probe_bind_address("0");
        self.manager_with(builder, flags).await
    }

    /// Parses the process's command line and runs what it asks for. A bad
    /// command line prints clap's message and exits (status 2); any other
    /// failure is printed with its causes, and the status is 1.
    pub async fn run(self) -> ExitCode {
        match self.run_with_args(std::env::args_os()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(Error::Args(e)) => e.exit(),
            Err(e) => {
                let mut message = format!("error: {e}");
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    message.push_str(&format!("\n  caused by: {cause}"));
                    source = cause.source();
                }
                tracing::error!(error = %e, "the operator failed");
                let _ = writeln!(std::io::stderr(), "{message}");
                ExitCode::FAILURE
            }
        }
    }

    /// Runs what `args` (the program name first) asks for.
    pub async fn run_with_args<I, T>(self, args: I) -> Result<(), Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let invocation = args::parse::<F>(
            &self.name,
            self.about.as_deref(),
            self.version.as_deref(),
            args,
        )?;
        match invocation {
            Invocation::Manifests(manifest_args, flags) => {
                let options = ManifestOptions {
                    namespace: manifest_args.namespace.clone(),
                };
                let files = self.manifests(&options, &flags).await?;
                match &manifest_args.dir {
                    Some(dir) => manifests::write_files(dir, &files),
                    None => {
                        let text = manifests::concatenate(&files);
                        std::io::stdout()
                            .write_all(text.as_bytes())
                            .map_err(|source| Error::Write {
                                path: "stdout".into(),
                                source,
                            })
                    }
                }
            }
            Invocation::Run(run, flags) => {
                logging::init(&run.log_level, run.log_format)?;
                if run.embedded {
                    self.run_embedded(run, flags).await
                } else {
                    let config = cluster_config(&run).await?;
                    self.run_operator(config, &run, &flags).await
                }
            }
        }
    }

    async fn run_operator(&self, config: Config, run: &RunArgs, flags: &F) -> Result<(), Error> {
        let mgr = self.manager_with(self.builder(config, run), flags).await?;
        tracing::info!(operator = %self.name, "starting: {}", endpoints(&mgr));
        mgr.run().await?;
        Ok(())
    }

    #[cfg(not(feature = "testing"))]
    async fn run_embedded(&self, _: RunArgs, _: F) -> Result<(), Error> {
        Err(Error::NoEmbeddedServer)
    }

    /// `--embedded`: the in-process API server and the CRDs, then the
    /// operator (its webhooks, if any, wired to the server), then the
    /// samples (through those webhooks) and the banner; the server stops
    /// after the operator.
    #[cfg(feature = "testing")]
    async fn run_embedded(&self, run: RunArgs, flags: F) -> Result<(), Error> {
        use crate::testing::ApiServerExt as _;

        if !run.listen.ip().is_loopback() {
            tracing::warn!(listen = %run.listen, "the embedded API server listens beyond loopback: anyone who can reach it and has the token can use it");
        }
        let crds = self.crds()?;
        let server = embedded::start_server(run.listen, &crds).await?;
        let admin = server.client().map_err(|source| Error::Cluster {
            what: "a client for the embedded API server".to_owned(),
            source,
        })?;
        // The operator as its service account, under the RBAC it ships.
        let config = self.embedded_operator_config(&server, &run, &flags).await?;
        let (builder, local) =
            webhooks::prepare(!self.webhooks.is_empty(), self.builder(config, &run))?;
        let mgr = self.manager_with(builder, &flags).await?;
        webhooks::install(local.as_ref(), &admin, &mgr).await?;
        tracing::info!(operator = %self.name, "starting: {}", endpoints(&mgr));
        let stop = crate::manager::shutdown_on_signals()?;
        let operator = tokio::spawn(webhooks::run_until(mgr, stop.clone(), local));
        if let Err(e) = self.announce_embedded(&server, &admin, &crds, &run).await {
            stop.cancel();
            let _ = operator.await;
            server.shutdown().await;
            return Err(e);
        }
        let result = match operator.await {
            Ok(result) => result.map_err(Error::Manager),
            Err(e) => Err(Error::Task(e)),
        };
        server.shutdown().await;
        result
    }

    /// `--embedded` once the operator runs: the samples, the kubeconfig,
    /// the banner.
    #[cfg(feature = "testing")]
    async fn announce_embedded(
        &self,
        server: &crate::testing::ApiServer,
        admin: &crate::Client,
        crds: &[CustomResourceDefinition],
        run: &RunArgs,
    ) -> Result<(), Error> {
        let samples = if run.no_samples {
            Vec::new()
        } else {
            let ns = run.namespace.as_deref().unwrap_or("default");
            embedded::create_samples(admin, &self.scheme, &self.samples, ns).await?
        };
        if let Some(path) = &run.write_kubeconfig {
            server
                .write_kubeconfig(path)
                .map_err(|source| Error::Embedded {
                    what: format!("cannot write the kubeconfig to {}", path.display()),
                    source,
                })?;
        }
        let banner = embedded::banner(server, crds, &samples, run.write_kubeconfig.as_deref());
        // One write, and a closed stdout (`| head`) is no reason to stop.
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = stdout
            .write_all(banner.as_bytes())
            .and_then(|()| stdout.flush())
        {
            tracing::warn!(error = %e, "cannot print the banner");
        }
        Ok(())
    }

    /// Runs the operator on `server` in the background, as a test wants
    /// it: the CRDs installed, the controllers registered (with `flags`),
    /// no probe or metrics servers, no leader election. The samples are
    /// created on request ([`Running::create_samples`]).
    ///
    /// ```no_run
    /// # async fn demo(app: kubeforge::app::App) -> Result<(), Box<dyn std::error::Error>> {
    /// use kubeforge::testing::ApiServer;
    ///
    /// let server = ApiServer::start().await?;
    /// let operator = app.start_on(&server, Default::default()).await?;
    /// operator.create_samples().await?;
    /// // ... wait for what the controllers do ...
    /// operator.stop().await?;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "testing")]
    pub async fn start_on(
        &self,
        server: &crate::testing::ApiServer,
        flags: F,
    ) -> Result<Running, Error> {
        use crate::testing::ApiServerExt as _;

        embedded::install_crds(server, &self.crds()?)?;
        let config = server.config();
        let client = crate::Client::try_from(config.clone()).map_err(|source| Error::Cluster {
            what: "a client for the API server".to_owned(),
            source,
        })?;
        self.start_in_background(config, client, false, flags).await
    }

    /// Runs the operator's manager in the background as a test wants it
    /// (no probe or metrics servers), connecting with `config`, its
    /// webhooks (if any) served locally and installed through `admin`,
    /// which [`Running`] keeps as its client.
    #[cfg(feature = "testing")]
    pub(crate) async fn start_in_background(
        &self,
        config: Config,
        admin: crate::Client,
        leader_elect: bool,
        flags: F,
    ) -> Result<Running, Error> {
        let run = RunArgs {
            kubeconfig: None,
            context: None,
            embedded: false,
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            write_kubeconfig: None,
            no_samples: true,
            field_manager: None,
            leader_elect,
            metrics_bind_address: "0".to_owned(),
            health_probe_bind_address: "0".to_owned(),
            namespace: None,
            log_level: "info".to_owned(),
            log_format: LogFormat::Text,
        };
        let (builder, local) =
            webhooks::prepare(!self.webhooks.is_empty(), self.builder(config, &run))?;
        let mgr = self.manager_with(builder, &flags).await?;
        webhooks::install(local.as_ref(), &admin, &mgr).await?;
        let stop = crate::manager::CancellationToken::new();
        let task = tokio::spawn(webhooks::run_until(mgr, stop.clone(), local));
        Ok(Running {
            client: admin,
            scheme: self.scheme.clone(),
            samples: self.samples.clone(),
            stop,
            task: Some(task),
        })
    }
}

/// What the operator serves, as addresses to try (`curl` them): the
/// metrics, the health probes and the webhooks, each only when it is on.
fn endpoints(mgr: &Manager) -> String {
    let served: Vec<String> = [
        mgr.metrics_address()
            .map(|a| format!("metrics at http://{a}/metrics")),
        mgr.health_probe_address()
            .map(|a| format!("health probes at http://{a}/healthz and /readyz")),
        mgr.webhook_address()
            .map(|a| format!("webhooks at https://{a}/")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if served.is_empty() {
        "no metrics, probe or webhook server".to_owned()
    } else {
        served.join(", ")
    }
}

/// The cluster, as kubectl finds it: the `--kubeconfig` file alone, else
/// `$KUBECONFIG`, `~/.kube/config`, then the in-cluster service account;
/// `--context` picks the kubeconfig's context.
async fn cluster_config(run: &RunArgs) -> Result<Config, Error> {
    let options = KubeConfigOptions {
        context: run.context.clone(),
        ..Default::default()
    };
    match &run.kubeconfig {
        Some(path) => Config::from_kubeconfig_file(path, &options)
            .await
            .map_err(|source| Error::Cluster {
                what: format!("cannot use the kubeconfig {}", path.display()),
                source,
            }),
        None => Config::infer_with(&options)
            .await
            .map_err(|source| Error::Cluster {
                what: "no cluster to run against (--embedded runs an in-process API server)"
                    .to_owned(),
                source,
            }),
    }
}
