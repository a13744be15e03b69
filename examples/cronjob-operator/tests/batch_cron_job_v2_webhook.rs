//! The `CronJob` webhooks (`batch.tutorial.kubebuilder.io/v2`) on kubeforge's
//! in-process API server: the operator runs with its webhooks served and
//! the API server pointed at them, and creates through the API server are
//! defaulted and validated by them.

use kubeforge::kube_core::params::PostParams;
use kubeforge::testing::ApiServer;
use kubeforge::Api;

use cronjob_operator::api::batch::v1::ConcurrencyPolicy;
use cronjob_operator::api::batch::v2::{CronJob, CronJobSpec, CronSchedule};

fn cron_job(name: &str, schedule: &str) -> CronJob {
    CronJob::new(
        name,
        CronJobSpec {
            schedule: CronSchedule {
                minute: Some(schedule.to_owned()),
                ..CronSchedule::default()
            },
            starting_deadline_seconds: None,
            concurrency_policy: None,
            suspend: None,
            job_template: Default::default(),
            successful_jobs_history_limit: None,
            failed_jobs_history_limit: None,
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

    // Written without the optional fields: the defaulter sets them.
    let created = api.create(&pp, &cron_job("defaulted", "*/5")).await?;
    assert_eq!(
        created.spec.concurrency_policy,
        Some(ConcurrencyPolicy::Allow)
    );
    assert_eq!(created.spec.suspend, Some(false));
    assert_eq!(created.spec.successful_jobs_history_limit, Some(3));
    assert_eq!(created.spec.failed_jobs_history_limit, Some(1));

    // An invalid schedule: the validator denies the create, with its message.
    let err = api
        .create(&pp, &cron_job("invalid", "bad"))
        .await
        .expect_err("the validator denies it");
    let message = err.status().map(|s| s.message.clone()).unwrap_or_default();
    assert!(
        message.contains("denied the request") && message.contains("spec.schedule"),
        "{err}"
    );
    assert!(api.get_opt("invalid").await?.is_none());

    // A valid one is created as written.
    let valid = api.create(&pp, &cron_job("valid", "*/1")).await?;
    assert_eq!(valid.metadata.name.as_deref(), Some("valid"));

    operator.stop().await?;
    Ok(())
}
