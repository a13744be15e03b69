//! `kubeforge init [DIR]`: a new operator project, recorded in
//! `kubeforge.toml`, that builds and passes its tests as written.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

use crate::files::Files;
use crate::names;
use crate::plan::Plan;
use crate::project::{License, Project, Source, RECORD_FILE, RECORD_VERSION};
use crate::templates::Templates;

/// `kubeforge init`'s flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The project's directory (default: the current one); created if
    /// missing.
    pub dir: Option<PathBuf>,

    /// The domain every API group of the project ends with.
    #[arg(long, default_value = "my.domain")]
    pub domain: String,

    /// The project's name: its crate, binary, namespace and name prefix
    /// (default: the directory's name).
    #[arg(long, value_name = "NAME")]
    pub project_name: Option<String>,

    /// The copyright owner in the license header.
    #[arg(long)]
    pub owner: Option<String>,

    /// The license header of the generated Rust files.
    #[arg(long, value_enum, default_value_t = License::Apache2)]
    pub license: License,

    /// Depend on this kubeforge version from crates.io (default: a path
    /// dependency on the checkout this kubeforge was built from, so the
    /// project builds without a network).
    #[arg(long, value_name = "VERSION")]
    pub kubeforge_version: Option<String>,

    /// Write into a directory that is not empty (files the project needs
    /// are overwritten).
    #[arg(long)]
    pub force: bool,
}

/// The kubeforge checkout this binary was built from, if it is still there:
/// its root (with `framework/`).
pub fn checkout() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    let manifest = std::fs::read_to_string(root.join("framework/Cargo.toml")).ok()?;
    manifest
        .lines()
        .any(|l| l.trim() == "name = \"kubeforge\"")
        .then(|| root.to_owned())
}

/// Where a project depending on the checkout by path says which target
/// directory it builds in.
const CARGO_CONFIG: &str = ".cargo/config.toml";

/// The target directory the checkout builds in, for a project depending on
/// it by path to share: the one this `kubeforge` binary was built in
/// (`DIR/<profile>/kubeforge`, DIR holding cargo's `CACHEDIR.TAG`), else
/// the checkout's `target/` if cargo made it.
fn shared_target_dir(checkout: &Path) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok();
    let built_in = exe
        .as_deref()
        .and_then(|exe| exe.parent()?.parent())
        .map(Path::to_owned);
    built_in
        .into_iter()
        .chain([checkout.join("target")])
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
}

/// The project's `.cargo/config.toml`: the checkout's target directory.
/// Crates from the registry are built there already, exactly as the project
/// needs them (the lock file is the checkout's, the profile the same), and
/// so is kubeforge once any project depending on the checkout was built
/// there (the checkout's own end-to-end test builds one). kubeforge built
/// as the checkout's own workspace member cannot be reused: cargo names a
/// path package's artifacts by its path relative to the workspace root
/// when it is inside it, by its absolute path otherwise.
fn cargo_config(target: &Path) -> String {
    format!(
        "# Builds go to the target directory of the kubeforge checkout this project\n\
         # depends on, so they reuse the crates built there. `cargo clean` cleans that\n\
         # whole directory; `cargo clean -p NAME` cleans one crate. Remove this file to\n\
         # build in ./target.\n\
         [build]\n\
         target-dir = {}\n",
        toml_string(&target.to_string_lossy())
    )
}

/// A TOML string literal.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let dir = match &args.dir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => cwd.join(d),
        None => cwd,
    };
    let name = match &args.project_name {
        Some(name) => name.clone(),
        None => dir
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_owned)
            .context("the directory has no name to take the project's from; pass --project-name")?,
    };
    names::check_project_name(&name).map_err(|e| {
        anyhow::anyhow!(
            "{e}{}",
            if args.project_name.is_none() {
                " (taken from the directory's name; pass --project-name)"
            } else {
                ""
            }
        )
    })?;
    names::check_domain(&args.domain)?;

    if dir.exists() {
        let entries: Vec<String> = std::fs::read_dir(&dir)
            .with_context(|| format!("cannot read {}", dir.display()))?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".git")
            .collect();
        if !entries.is_empty() && !args.force {
            let mut shown = entries.clone();
            shown.sort();
            shown.truncate(5);
            bail!(
                "{} is not empty ({}{}): choose an empty directory, or pass --force to write into it",
                dir.display(),
                shown.join(", "),
                if entries.len() > 5 { ", ..." } else { "" }
            );
        }
        if args.force && dir.join(RECORD_FILE).exists() {
            bail!(
                "{} is a kubeforge project already ({RECORD_FILE}); add APIs with `kubeforge create api`",
                dir.display()
            );
        }
    }

    let checkout = checkout();
    let (source, dependency) = match (&args.kubeforge_version, &checkout) {
        (Some(version), _) => (
            Source {
                path: None,
                version: Some(version.clone()),
            },
            format!("version = {}", toml_string(version)),
        ),
        (None, Some(root)) => {
            let framework = root.join("framework");
            let text = framework.to_string_lossy().into_owned();
            (
                Source {
                    path: Some(framework),
                    version: None,
                },
                format!("path = {}", toml_string(&text)),
            )
        }
        (None, None) => bail!(
            "this kubeforge was not built from a checkout that still exists, so the project cannot depend on it by path: pass --kubeforge-version {}",
            env!("CARGO_PKG_VERSION")
        ),
    };

    let project = Project {
        record_version: RECORD_VERSION,
        name: name.clone(),
        domain: args.domain.clone(),
        owner: args.owner.clone(),
        license: args.license,
        cli_version: env!("CARGO_PKG_VERSION").to_owned(),
        kubeforge: source,
        resources: Vec::new(),
    };
    let templates = Templates::new().context("the CLI's templates")?;
    let files = Files::new(&project, &templates);
    let mut plan = Plan::new();
    files.init(&mut plan, &dependency)?;
    plan.create(RECORD_FILE, project.to_toml());
    // A path dependency starts from the versions the checkout was built and
    // tested with, which its machine already has: the project builds
    // offline, and shares build artifacts with the checkout.
    if let Some(root) = checkout.filter(|_| project.kubeforge.path.is_some()) {
        if let Ok(lock) = std::fs::read_to_string(root.join("Cargo.lock")) {
            if !dir.join("Cargo.lock").exists() {
                plan.create("Cargo.lock", lock);
            }
        }
        if let Some(target) = shared_target_dir(&root) {
            plan.create(CARGO_CONFIG, cargo_config(&target));
        }
    }
    let plan = if args.force { plan.forced() } else { plan };
    let written = plan.apply(&dir)?;

    println!(
        "wrote the {} operator project ({} files) in {}",
        name,
        written.len(),
        dir.display()
    );
    println!(
        "next:\n  cd {}\n  kubeforge create api --group webapp --version v1 --kind Guestbook\n  cargo test\n  kubeforge generate\n  cargo run -- --embedded --write-kubeconfig /tmp/{name}.kubeconfig",
        dir.display()
    );
    Ok(())
}
