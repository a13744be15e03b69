//! The operator's manifests render: every CRD is a structural schema the
//! API server accepts, and the RBAC its controllers need is known.
//! `kubeforge generate` writes them to `config/`; `kubeforge generate
//! --check` (in CI) fails when the files there are stale.

use kubeforge::app::ManifestOptions;

#[tokio::test]
async fn the_manifests_render() -> Result<(), Box<dyn std::error::Error>> {
    let files = cronjob_operator::app()
        .manifests(&ManifestOptions::default(), &Default::default())
        .await?;
    let paths: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    assert!(paths.contains(&"rbac/role.yaml".to_owned()), "{paths:?}");
    Ok(())
}
