//! The `CronJob` webhooks (`batch.tutorial.kubebuilder.io/v2`) on kubeforge's
//! in-process API server: the operator runs with its webhooks served and
//! the API server pointed at them, and creates through the API server are
//! defaulted and validated by them.

use kubeforge::kube_core::params::PostParams;
use kubeforge::testing::ApiServer;
use kubeforge::Api;

use cronjob_operator::api::batch::v2::{CronJob, CronJobSpec};
use cronjob_operator::webhooks::batch::v2::cron_job::DEFAULT_FOO;

fn cron_job(name: &str, foo: Option<&str>) -> CronJob {
    CronJob::new(
        name,
        CronJobSpec {
            foo: foo.map(str::to_owned),
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_calls_the_webhooks() -> Result<(), Box<dyn std::error::Error>> {
    let server = ApiServer::start().await?;
    let operator = cronjob_operator::app()
        .start_on(&server, Default::default())
        .await?;
    let api: Api<CronJob> = Api::namespaced(operator.client().clone(), "default");
    let pp = PostParams::default();

    // Written without spec.foo: the defaulter sets it.
    let created = api.create(&pp, &cron_job("defaulted", None)).await?;
    assert_eq!(created.spec.foo.as_deref(), Some(DEFAULT_FOO));

    // An invalid spec.foo: the validator denies the create, with its message.
    let err = api
        .create(&pp, &cron_job("invalid", Some("Not Valid")))
        .await
        .expect_err("the validator denies it");
    let message = err.status().map(|s| s.message.clone()).unwrap_or_default();
    assert!(
        message.contains("denied the request") && message.contains("spec.foo"),
        "{err}"
    );
    assert!(api.get_opt("invalid").await?.is_none());

    // A valid one is created as written.
    let valid = api
        .create(&pp, &cron_job("valid", Some("valid-foo")))
        .await?;
    assert_eq!(valid.spec.foo.as_deref(), Some("valid-foo"));

    operator.stop().await?;
    Ok(())
}
