//! The CronJob example stays a project the CLI made: the commands it was
//! created with (`kubeforge init`, `create api` for v1 and v2, `create
//! webhook` for the defaulters, validators and the conversion) are run again
//! in a temporary directory, and every file the CLI owns (the ones it
//! rewrites whole, the marked blocks of the kustomizations, the project
//! record) must be what the example holds. The user-owned files (types,
//! controller, webhooks, tests) are the tutorial's logic written into what
//! the commands left.
//!
//! That `config/` is what the code produces is the example's own
//! `tests/manifests.rs`.

use std::path::{Path, PathBuf};

use kubeforge_e2e::{kubeforge_binary, nested, run_ok, workspace_root};

/// How the example was created, in order.
const COMMANDS: &[&[&str]] = &[
    &[
        "init",
        "cronjob-operator",
        "--domain",
        "tutorial.kubebuilder.io",
        "--license",
        "none",
    ],
    &[
        "create",
        "api",
        "--group",
        "batch",
        "--version",
        "v1",
        "--kind",
        "CronJob",
    ],
    &[
        "create",
        "api",
        "--group",
        "batch",
        "--version",
        "v2",
        "--kind",
        "CronJob",
    ],
    &[
        "create",
        "webhook",
        "--group",
        "batch",
        "--version",
        "v1",
        "--kind",
        "CronJob",
        "--defaulting",
        "--validation",
    ],
    &[
        "create",
        "webhook",
        "--group",
        "batch",
        "--version",
        "v2",
        "--kind",
        "CronJob",
        "--defaulting",
        "--validation",
    ],
    &[
        "create",
        "webhook",
        "--group",
        "batch",
        "--version",
        "v1",
        "--kind",
        "CronJob",
        "--conversion",
        "--spoke",
        "v2",
    ],
];

/// What marks a file the CLI rewrites whole, and a block inside a file it
/// rewrites between markers.
const WHOLE_FILE: &str = "rewrites this file whole";
const BLOCK_BEGIN: &str = "+kubeforge:begin:";
const BLOCK_END: &str = "+kubeforge:end:";

fn example() -> PathBuf {
    workspace_root().join("examples/cronjob-operator")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The marked blocks of `text`, by name, with their lines.
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut open: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        if let Some(at) = line.find(BLOCK_BEGIN) {
            let name = line[at + BLOCK_BEGIN.len()..]
                .split_whitespace()
                .next()
                .unwrap_or_default();
            open = Some((name.to_string(), Vec::new()));
        } else if line.contains(BLOCK_END) {
            if let Some((name, lines)) = open.take() {
                found.push((name, lines.join("\n")));
            }
        } else if let Some((_, lines)) = open.as_mut() {
            lines.push(line);
        }
    }
    found
}

/// The project record without its `[kubeforge] path`, which points at this
/// checkout from wherever the project is.
fn record_without_path(text: &str) -> String {
    text.lines()
        .filter(|line| !line.starts_with("path = "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_files_the_cli_owns_are_what_its_commands_write() {
    let kubeforge = kubeforge_binary();
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let mut dir = tmp.path().to_path_buf();
    for (i, args) in COMMANDS.iter().enumerate() {
        run_ok(nested(&kubeforge).args(*args).current_dir(&dir));
        if i == 0 {
            dir = dir.join("cronjob-operator");
        }
    }

    let example = example();
    let mut compared = 0;
    for generated in files(&dir) {
        let relative = generated.strip_prefix(&dir).expect("under the project");
        let text = std::fs::read_to_string(&generated).unwrap_or_default();
        let ours = example.join(relative);
        if text.contains(WHOLE_FILE) {
            let kept = std::fs::read_to_string(&ours)
                .unwrap_or_else(|e| panic!("the example lacks {}: {e}", relative.display()));
            assert_eq!(
                kept,
                text,
                "{} is rewritten whole by the CLI, but the example's differs",
                relative.display()
            );
            compared += 1;
        } else if text.contains(BLOCK_BEGIN) {
            let kept = std::fs::read_to_string(&ours)
                .unwrap_or_else(|e| panic!("the example lacks {}: {e}", relative.display()));
            assert_eq!(
                blocks(&kept),
                blocks(&text),
                "the CLI's blocks of {} differ in the example",
                relative.display()
            );
            compared += 1;
        }
    }
    // The API, controller and webhook registries and the kustomizations.
    assert!(compared >= 14, "only {compared} CLI-owned files compared");

    let record = |root: &Path| {
        std::fs::read_to_string(root.join("kubeforge.toml")).expect("the project record")
    };
    assert_eq!(
        record_without_path(&record(&example)),
        record_without_path(&record(&dir)),
        "kubeforge.toml is the record the commands write"
    );
}

#[test]
fn blocks_are_read_between_their_markers() {
    let text = "a\n# +kubeforge:begin:crds (x)\n- one\n- two\n# +kubeforge:end:crds\nb\n";
    assert_eq!(
        blocks(text),
        [("crds".to_string(), "- one\n- two".to_string())]
    );
}
