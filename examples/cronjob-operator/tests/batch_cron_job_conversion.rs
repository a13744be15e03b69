//! `CronJob` conversion on kubeforge's in-process API server: an object
//! written at a spoke version (v2) reads at the hub (v1) and back
//! unchanged, through the operator's conversion webhook.

use kubeforge::kube_core::params::PostParams;
use kubeforge::testing::ApiServer;
use kubeforge::Api;

use cronjob_operator::api::batch::{v1, v2};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spokes_read_at_the_hub_and_back_unchanged() -> Result<(), Box<dyn std::error::Error>> {
    let server = ApiServer::start().await?;
    let operator = cronjob_operator::app()
        .start_on(&server, Default::default())
        .await?;
    let client = operator.client().clone();
    let pp = PostParams::default();
    let hubs: Api<v1::CronJob> = Api::namespaced(client.clone(), "default");

    let spokes: Api<v2::CronJob> = Api::namespaced(client.clone(), "default");
    let written = spokes
        .create(
            &pp,
            &v2::CronJob::new(
                "from-v2",
                v2::CronJobSpec {
                    schedule: v2::CronSchedule {
                        minute: Some("*/1".to_owned()),
                        ..v2::CronSchedule::default()
                    },
                    starting_deadline_seconds: None,
                    concurrency_policy: None,
                    suspend: None,
                    job_template: Default::default(),
                    successful_jobs_history_limit: None,
                    failed_jobs_history_limit: None,
                },
            ),
        )
        .await?;
    let at_hub = hubs.get("from-v2").await?;
    assert_eq!(at_hub.metadata.uid, written.metadata.uid);
    assert_eq!(at_hub.spec.schedule, "*/1 * * * *");
    let back = spokes.get("from-v2").await?;
    assert_eq!(back.spec, written.spec);

    operator.stop().await?;
    Ok(())
}
