//! End-to-end tests across kubeforge's crates live in `tests/tests/`; this
//! library holds their shared helpers.

pub mod imports;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's root directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

/// The target directory the outer `cargo test` builds into, which nested
/// builds share so they do not rebuild the world.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// A `cargo` command for a nested build, run from the workspace root.
///
/// Cargo gives a test process the package's `CARGO_MANIFEST_DIR` and
/// `CARGO_PKG_*`; ring's build script reruns when those change
/// (`rerun-if-env-changed`), so a nested cargo that inherited them rebuilt
/// ring and everything above it (rustls, kubeforge, every test binary),
/// there and again in the next outer build. They are removed here.
pub fn cargo() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = nested(cargo);
    command.current_dir(workspace_root());
    command
}

/// A command for `program` without the variables cargo set for this test
/// (see [`cargo`]): for programs that run cargo themselves, such as
/// `kubeforge generate`.
pub fn nested(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new(program);
    for (key, _) in std::env::vars_os() {
        let set_for_this_test = key.to_str().is_some_and(|k| {
            k.starts_with("CARGO_PKG_")
                || k.starts_with("CARGO_MANIFEST_")
                || matches!(
                    k,
                    "CARGO_CRATE_NAME"
                        | "CARGO_PRIMARY_PACKAGE"
                        | "CARGO_TARGET_TMPDIR"
                        | "OUT_DIR"
                )
        });
        if set_for_this_test {
            command.env_remove(key);
        }
    }
    command
}

/// The `kubeforge` binary of this workspace, built if needed.
pub fn kubeforge_binary() -> PathBuf {
    run_ok(cargo().args([
        "build",
        "--quiet",
        "-p",
        "kubeforge-cli",
        "--bin",
        "kubeforge",
    ]));
    target_dir().join("debug").join("kubeforge")
}

/// Runs `command`, returning its stdout; a failure panics with what it
/// printed.
pub fn run_ok(command: &mut Command) -> String {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{command:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
