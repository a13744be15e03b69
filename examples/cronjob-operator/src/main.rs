//! The `cronjob-operator` binary: kubeforge's standard operator command line,
//! `run` (the default) and `manifests`; see `cronjob_operator::app`.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    cronjob_operator::app().run().await
}
