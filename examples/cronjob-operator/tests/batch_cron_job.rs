//! The `CronJob` controller on kubeforge's in-process API server: the
//! operator runs, the sample (`config/samples/batch_v1_cronjob.yaml`) is
//! created, and the controller marks it `Ready`.

use std::time::{Duration, Instant};

use kubeforge::reconcile::conditions::is_condition_true;
use kubeforge::testing::ApiServer;
use kubeforge::Api;

use cronjob_operator::api::batch::v1::CronJob;

#[tokio::test]
async fn the_controller_marks_the_sample_ready() -> Result<(), Box<dyn std::error::Error>> {
    let server = ApiServer::start().await?;
    let operator = cronjob_operator::app()
        .start_on(&server, Default::default())
        .await?;
    operator.create_samples().await?;

    let api: Api<CronJob> = Api::namespaced(operator.client().clone(), "default");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let sample = api.get("cronjob-sample").await?;
        let status = sample.status.clone().unwrap_or_default();
        if is_condition_true(&status.conditions, "Ready") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "cronjob-sample is not Ready after 30 s: {sample:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    operator.stop().await?;
    Ok(())
}
