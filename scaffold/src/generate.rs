//! `kubeforge generate [--check]`: builds the project, asks its binary for
//! its manifests (`<binary> manifests --dir ...`: the CRDs its types
//! derive, the RBAC its controllers record and the configurations of the
//! webhooks it registers), and writes them to `config/` (CRDs to
//! `config/crd/bases/<group>_<plural>.yaml`, RBAC to `config/rbac/`,
//! webhooks to `config/webhook/manifests.yaml`), keeping `config/crd/kustomization.yaml`'s list of CRDs
//! in step. Generator and runtime are one program, so they never disagree.
//! `--check` writes nothing and fails, naming the files, when `config/` is
//! not what the code produces.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context as _};

use crate::blocks;
use crate::files::{CRD_BLOCK, KUSTOMIZATIONS};
use crate::plan::Plan;
use crate::project::Project;

/// `kubeforge generate`'s flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Write nothing; exit with an error naming the files under `config/`
    /// that differ from what the code produces (for CI).
    #[arg(long)]
    pub check: bool,
}

/// What generate found: `config/`-relative paths and their new contents
/// (`None`: the file should not exist).
type Changes = BTreeMap<PathBuf, Option<String>>;

/// Builds the project's binary with cargo, the compiler's messages going
/// straight to the terminal; returns the binary's path.
fn build(root: &Path, binary: &str) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut child = Command::new(&cargo)
        .args([
            "build",
            "--quiet",
            "--bin",
            binary,
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot run {}", cargo.to_string_lossy()))?;
    let stdout = child.stdout.take().context("cargo's output")?;
    let mut executable = None;
    for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
        let line = line.context("reading cargo's output")?;
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if message["reason"] == "compiler-artifact" && message["target"]["name"] == binary {
            if let Some(path) = message["executable"].as_str() {
                executable = Some(PathBuf::from(path));
            }
        }
    }
    let status = child.wait().context("waiting for cargo")?;
    if !status.success() {
        bail!("the project does not build (cargo's messages are above)");
    }
    executable.with_context(|| format!("cargo built no binary named {binary}"))
}

/// Runs `<binary> manifests --dir <tmp>` and reads what it wrote.
fn manifests(root: &Path, binary: &Path) -> anyhow::Result<BTreeMap<PathBuf, String>> {
    let out = tempfile::Builder::new()
        .prefix("kubeforge-manifests-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let result = Command::new(binary)
        .arg("manifests")
        .arg("--dir")
        .arg(out.path())
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    if !result.status.success() {
        bail!(
            "`{} manifests` failed ({}):\n{}",
            binary.display(),
            result.status,
            String::from_utf8_lossy(&result.stderr).trim_end()
        );
    }
    let mut files = BTreeMap::new();
    read_tree(out.path(), out.path(), &mut files)?;
    Ok(files)
}

fn read_tree(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            read_tree(base, &path, out)?;
        } else {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let relative = path.strip_prefix(base).unwrap_or(&path).to_owned();
            out.insert(relative, text);
        }
    }
    Ok(())
}

/// What must change under `config/` for it to hold `produced`.
fn changes(config: &Path, produced: &BTreeMap<PathBuf, String>) -> anyhow::Result<Changes> {
    let mut changes = Changes::new();
    for (path, contents) in produced {
        if std::fs::read_to_string(config.join(path)).ok().as_ref() != Some(contents) {
            changes.insert(path.clone(), Some(contents.clone()));
        }
    }
    // CRDs no longer defined by the code.
    let bases = Path::new("crd").join("bases");
    if let Ok(entries) = std::fs::read_dir(config.join(&bases)) {
        for entry in entries.filter_map(Result::ok) {
            let path = bases.join(entry.file_name());
            let is_yaml = path.extension().is_some_and(|e| e == "yaml");
            if is_yaml && !produced.contains_key(&path) {
                changes.insert(path, None);
            }
        }
    }
    // The list of CRDs in config/crd/kustomization.yaml.
    let (kustomization, block) = KUSTOMIZATIONS
        .iter()
        .find(|(_, b)| *b == CRD_BLOCK)
        .copied()
        .unwrap_or(("config/crd/kustomization.yaml", CRD_BLOCK));
    let relative = Path::new(kustomization)
        .strip_prefix("config")
        .unwrap_or(Path::new(kustomization))
        .to_owned();
    let lines: Vec<String> = produced
        .keys()
        .filter_map(|p| p.strip_prefix("crd").ok())
        .map(|p| format!("- {}", p.display()))
        .collect();
    let current = std::fs::read_to_string(config.join(&relative))
        .with_context(|| format!("cannot read {kustomization} (kubeforge init writes it)"))?;
    let updated = blocks::replace_block(Path::new(kustomization), &current, block, &lines)?;
    if updated != current {
        changes.insert(relative, Some(updated));
    }
    Ok(changes)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let (root, project) = Project::find(&cwd)?;
    let binary = build(&root, &project.name)?;
    let produced = manifests(&root, &binary)?;
    let config = root.join("config");
    let changes = changes(&config, &produced)?;

    let shown = |path: &Path| Path::new("config").join(path).display().to_string();
    if args.check {
        if changes.is_empty() {
            println!(
                "config/ is what the code produces ({} files)",
                produced.len()
            );
            return Ok(());
        }
        for (path, contents) in &changes {
            let why = match contents {
                None => "is no longer produced by the code",
                Some(_) if config.join(path).exists() => "differs from what the code produces",
                Some(_) => "is missing",
            };
            eprintln!("{} {why}", shown(path));
        }
        bail!(
            "{} file{} under config/ {} out of date: run `kubeforge generate`",
            changes.len(),
            if changes.len() == 1 { "" } else { "s" },
            if changes.len() == 1 { "is" } else { "are" }
        );
    }

    let mut plan = Plan::new();
    let mut removed = Vec::new();
    for (path, contents) in &changes {
        match contents {
            Some(contents) => plan.replace(Path::new("config").join(path), contents.clone()),
            None => removed.push(config.join(path)),
        }
    }
    let written = plan.apply(&root)?;
    for path in &removed {
        std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    for path in &written {
        println!("wrote {}", path.display());
    }
    for path in &removed {
        println!(
            "removed {} (no longer produced)",
            path.strip_prefix(&root).unwrap_or(path).display()
        );
    }
    println!(
        "config/ holds the {} manifests the code produces ({} changed)",
        produced.len(),
        written.len() + removed.len()
    );
    Ok(())
}
