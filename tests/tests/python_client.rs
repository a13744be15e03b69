//! The official Kubernetes Python client, a second judge of the API server
//! independent of kubectl: `tests/python/test_official_client.py` drives
//! namespaces, ConfigMaps (replace, stale replace, generateName, pages,
//! watches), custom objects, leases and a Deployment's scale subresource,
//! writing its typed models as Python users do.
//!
//! `.ci/run` installs the client (`tests/python/requirements.txt`); on a
//! machine without it the test installs it into a virtual environment in
//! the target directory, once.

use std::path::{Path, PathBuf};
use std::process::Command;

use kubeforge::testing::ApiServer;
use kubeforge_e2e::{target_dir, workspace_root};

const CLIENT: &str = "kubernetes==37.0.2";

/// A Python that imports the pinned client: the machine's, or a virtual
/// environment made for it.
fn python() -> PathBuf {
    let has_client = |python: &Path| {
        Command::new(python)
            .args([
                "-c",
                "import kubernetes, sys; sys.exit(kubernetes.__version__ != '37.0.2')",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let system = PathBuf::from("python3");
    if has_client(&system) {
        return system;
    }
    let venv = target_dir().join("python-client");
    let python = venv.join("bin/python3");
    if !has_client(&python) {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 runs");
        assert!(made.success(), "python3 -m venv {venv:?} failed");
        let requirements = workspace_root().join("tests/python/requirements.txt");
        let installed = Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "-r"])
            .arg(&requirements)
            .status()
            .expect("pip runs");
        assert!(
            installed.success() && has_client(&python),
            "could not install {CLIENT}: run `pip install -r {}`",
            requirements.display()
        );
    }
    python
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_client_works_against_the_server() {
    let python = tokio::task::spawn_blocking(python).await.unwrap();
    let server = ApiServer::start().await.expect("server starts");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let script = workspace_root().join("tests/python/test_official_client.py");
    let out = tokio::process::Command::new(python)
        .arg(&script)
        .env("KUBECONFIG", &kubeconfig)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), out)
        .await
        .expect("the Python tests finish within two minutes")
        .expect("python runs");
    // unittest reports on stderr.
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("Ran 9 tests"), "{report}");
    assert!(report.trim_end().ends_with("OK"), "{report}");
}
