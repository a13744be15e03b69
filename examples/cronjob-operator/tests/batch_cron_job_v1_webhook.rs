//! The tutorial's webhook tests, through kubeforge's in-process API server:
//! the operator's webhook server runs with the API server pointed at it (as
//! envtest's `WebhookInstallOptions` does), and every CronJob below is
//! written with a client, so it is the API server that calls the defaulter
//! and the validator, and its answers are what a `kubectl` user would see.
//! v1 first (`mcronjob-v1.kb.io`, `vcronjob-v1.kb.io`), then v2, which has
//! the same rules and puts its own prefix on the schedule's message.
//!
//! As in the tutorial's webhook suite, the controller does not run: nothing
//! else writes the CronJobs.

use kubeforge::app::{App, Running};
use kubeforge::kube_core::params::{Patch, PatchParams, PostParams};
use kubeforge::testing::{ApiServer, ApiServerExt as _};
use kubeforge::Api;
use serde_json::json;

use cronjob_operator::api::batch::v1::{ConcurrencyPolicy, CronJob, CronJobSpec};
use cronjob_operator::api::batch::v2;

/// The operator's kinds and webhooks, without its controller.
fn webhooks_only() -> App {
    cronjob_operator::webhooks::register(cronjob_operator::api::register(App::new(
        "cronjob-operator",
    )))
}

async fn start(server: &ApiServer) -> Running {
    webhooks_only()
        .start_on(server, Default::default())
        .await
        .expect("the operator's webhooks start")
}

fn cron_job(name: &str, schedule: &str) -> CronJob {
    CronJob::new(
        name,
        CronJobSpec {
            schedule: schedule.to_owned(),
            starting_deadline_seconds: None,
            concurrency_policy: None,
            suspend: None,
            job_template: Default::default(),
            successful_jobs_history_limit: None,
            failed_jobs_history_limit: None,
        },
    )
}

fn cron_job_v2(name: &str, minute: &str) -> v2::CronJob {
    v2::CronJob::new(
        name,
        v2::CronJobSpec {
            schedule: v2::CronSchedule {
                minute: Some(minute.to_owned()),
                ..v2::CronSchedule::default()
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

/// The denial the client got: HTTP code, reason, message and the fields
/// of its causes.
fn denial(err: kubeforge::Error) -> (u16, String, String, Vec<String>) {
    let status = err
        .status()
        .unwrap_or_else(|| panic!("not an API error: {err}"));
    let fields = status
        .details
        .iter()
        .flat_map(|d| d.causes.iter())
        .map(|c| c.field.clone())
        .collect();
    (
        status.code,
        status.reason.clone(),
        status.message.clone(),
        fields,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unset_fields_are_defaulted_and_set_ones_kept() {
    let server = ApiServer::start().await.expect("API server");
    let operator = start(&server).await;
    let api: Api<CronJob> = Api::namespaced(operator.client().clone(), "default");
    let pp = PostParams::default();

    let created = api
        .create(&pp, &cron_job("defaulted", "*/5 * * * *"))
        .await
        .expect("admitted");
    // What the API server stored, not just what it answered.
    let stored = api.get("defaulted").await.expect("stored");
    assert_eq!(stored.spec, created.spec);
    assert_eq!(
        stored.spec.concurrency_policy,
        Some(ConcurrencyPolicy::Allow)
    );
    assert_eq!(stored.spec.suspend, Some(false));
    assert_eq!(stored.spec.successful_jobs_history_limit, Some(3));
    assert_eq!(stored.spec.failed_jobs_history_limit, Some(1));

    let mut set = cron_job("kept", "*/5 * * * *");
    set.spec.concurrency_policy = Some(ConcurrencyPolicy::Forbid);
    set.spec.suspend = Some(true);
    set.spec.successful_jobs_history_limit = Some(5);
    set.spec.failed_jobs_history_limit = Some(2);
    api.create(&pp, &set).await.expect("admitted");
    let stored = api.get("kept").await.expect("stored");
    assert_eq!(stored.spec, set.spec);

    operator.stop().await.expect("the operator stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_longer_than_52_characters_are_denied() {
    let server = ApiServer::start().await.expect("API server");
    let operator = start(&server).await;
    let api: Api<CronJob> = Api::namespaced(operator.client().clone(), "default");
    let pp = PostParams::default();

    let long = "a".repeat(53);
    let err = api
        .create(&pp, &cron_job(&long, "*/5 * * * *"))
        .await
        .expect_err("a 53-character name is denied");
    assert_eq!(
        denial(err),
        (
            422,
            "Invalid".to_owned(),
            format!(
                "admission webhook \"vcronjob-v1.kb.io\" denied the request: \
                 CronJob.batch.tutorial.kubebuilder.io \"{long}\" is invalid: \
                 metadata.name: Invalid value: \"{long}\": must be no more than 52 characters"
            ),
            vec!["metadata.name".to_owned()],
        )
    );
    assert!(api.get_opt(&long).await.expect("get").is_none());

    let longest = "a".repeat(52);
    api.create(&pp, &cron_job(&longest, "*/5 * * * *"))
        .await
        .expect("a 52-character name is admitted");

    operator.stop().await.expect("the operator stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_robfig_cron_refuses_are_denied_with_its_message() {
    let server = ApiServer::start().await.expect("API server");
    let operator = start(&server).await;
    let api: Api<CronJob> = Api::namespaced(operator.client().clone(), "default");
    let pp = PostParams::default();

    let err = api
        .create(&pp, &cron_job("invalid", "invalid-cron-schedule"))
        .await
        .expect_err("denied");
    assert_eq!(
        denial(err),
        (
            422,
            "Invalid".to_owned(),
            "admission webhook \"vcronjob-v1.kb.io\" denied the request: \
             CronJob.batch.tutorial.kubebuilder.io \"invalid\" is invalid: \
             spec.schedule: Invalid value: \"invalid-cron-schedule\": \
             Expected exactly 5 fields, found 1: invalid-cron-schedule"
                .to_owned(),
            vec!["spec.schedule".to_owned()],
        )
    );
    assert!(api.get_opt("invalid").await.expect("get").is_none());

    api.create(&pp, &cron_job("valid", "*/5 * * * *"))
        .await
        .expect("admitted");
    // v1 accepts what robfig/cron's ParseStandard does, descriptors
    // included, though v2 cannot express them: v2's webhooks are not
    // called for v1 requests (matchPolicy Exact), so no conversion is tried.
    for (name, schedule) in [
        ("hourly", "@hourly"),
        ("every", "@every 2s"),
        ("spaced", "*/5  * * * *"),
    ] {
        api.create(&pp, &cron_job(name, schedule))
            .await
            .unwrap_or_else(|e| panic!("{schedule:?} is admitted at v1: {e}"));
    }

    operator.stop().await.expect("the operator stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_are_validated_with_every_broken_rule_listed() {
    let server = ApiServer::start().await.expect("API server");
    // A name cannot change in an update, so the CronJob with the long name
    // is stored before the webhooks exist (the CRD alone installed).
    for crd in webhooks_only().crds().expect("CRDs") {
        server.install_crd(&crd).expect("CRD installed");
    }
    let admin: Api<CronJob> = Api::namespaced(server.client().expect("admin client"), "default");
    let pp = PostParams::default();
    let long = "b".repeat(53);
    admin
        .create(&pp, &cron_job(&long, "*/5 * * * *"))
        .await
        .expect("stored without webhooks");

    let operator = start(&server).await;
    let api: Api<CronJob> = Api::namespaced(operator.client().clone(), "default");
    api.create(&pp, &cron_job("short", "*/5 * * * *"))
        .await
        .expect("admitted");

    let mut bad = api.get(&long).await.expect("stored");
    bad.spec.schedule = "x".to_owned();
    let err = api
        .replace(&long, &pp, &bad)
        .await
        .expect_err("a bad name and a bad schedule");
    assert_eq!(
        denial(err),
        (
            422,
            "Invalid".to_owned(),
            format!(
                "admission webhook \"vcronjob-v1.kb.io\" denied the request: \
                 CronJob.batch.tutorial.kubebuilder.io \"{long}\" is invalid: \
                 [metadata.name: Invalid value: \"{long}\": must be no more than 52 characters, \
                 spec.schedule: Invalid value: \"x\": Expected exactly 5 fields, found 1: x]"
            ),
            vec!["metadata.name".to_owned(), "spec.schedule".to_owned()],
        )
    );
    // The name alone still fails an update with a valid schedule.
    let err = api
        .patch(
            &long,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"schedule": "0 0 * * *"}})),
        )
        .await
        .expect_err("the name is still too long");
    assert_eq!(denial(err).3, ["metadata.name"]);
    assert_eq!(
        api.get(&long).await.expect("stored").spec.schedule,
        "*/5 * * * *"
    );

    let mut good = api.get("short").await.expect("stored");
    good.spec.schedule = "0 0 * * *".to_owned();
    let updated = api
        .replace("short", &pp, &good)
        .await
        .expect("a valid update is admitted");
    assert_eq!(updated.spec.schedule, "0 0 * * *");
    let mut bad = updated;
    bad.spec.schedule = "0 0 * * 7".to_owned();
    let err = api
        .replace("short", &pp, &bad)
        .await
        .expect_err("day of week 7");
    assert_eq!(
        denial(err).2,
        "admission webhook \"vcronjob-v1.kb.io\" denied the request: \
         CronJob.batch.tutorial.kubebuilder.io \"short\" is invalid: \
         spec.schedule: Invalid value: \"0 0 * * 7\": \
         End of range (7) above maximum (6): 7"
    );

    operator.stop().await.expect("the operator stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_has_the_same_defaults_and_rules_with_its_own_prefix() {
    let server = ApiServer::start().await.expect("API server");
    let operator = start(&server).await;
    let api: Api<v2::CronJob> = Api::namespaced(operator.client().clone(), "default");
    let pp = PostParams::default();

    api.create(&pp, &cron_job_v2("defaulted", "*/5"))
        .await
        .expect("admitted");
    let stored = api.get("defaulted").await.expect("stored");
    assert_eq!(
        stored.spec.concurrency_policy,
        Some(ConcurrencyPolicy::Allow)
    );
    assert_eq!(stored.spec.suspend, Some(false));
    assert_eq!(stored.spec.successful_jobs_history_limit, Some(3));
    assert_eq!(stored.spec.failed_jobs_history_limit, Some(1));
    assert_eq!(stored.spec.schedule.minute.as_deref(), Some("*/5"));

    let mut set = cron_job_v2("kept", "*/1");
    set.spec.concurrency_policy = Some(ConcurrencyPolicy::Replace);
    set.spec.suspend = Some(true);
    set.spec.successful_jobs_history_limit = Some(0);
    set.spec.failed_jobs_history_limit = Some(0);
    api.create(&pp, &set).await.expect("admitted");
    assert_eq!(api.get("kept").await.expect("stored").spec, set.spec);

    // The v2 webhook answers for v2, its message after v2's prefix.
    let err = api
        .create(&pp, &cron_job_v2("invalid", "bad"))
        .await
        .expect_err("denied");
    assert_eq!(
        denial(err),
        (
            422,
            "Invalid".to_owned(),
            "admission webhook \"vcronjob-v2.kb.io\" denied the request: \
             CronJob.batch.tutorial.kubebuilder.io \"invalid\" is invalid: \
             spec.schedule: Invalid value: \"bad * * * *\": invalid cron schedule format: \
             Failed to parse int from bad: strconv.Atoi: parsing \"bad\": invalid syntax"
                .to_owned(),
            vec!["spec.schedule".to_owned()],
        )
    );
    let long = "c".repeat(53);
    let err = api
        .create(&pp, &cron_job_v2(&long, "*/1"))
        .await
        .expect_err("denied");
    assert_eq!(
        denial(err).2,
        format!(
            "admission webhook \"vcronjob-v2.kb.io\" denied the request: \
             CronJob.batch.tutorial.kubebuilder.io \"{long}\" is invalid: \
             metadata.name: Invalid value: \"{long}\": must be no more than 52 characters"
        )
    );

    operator.stop().await.expect("the operator stops");
}
