//! `CronJob` conversion through kubeforge's in-process API server: the API
//! server stores v1 and calls the operator's `/convert` webhook to serve
//! v2, as the multiversion tutorial's deployment does on a cluster.
//!
//! - v1 → v2 → v1 and v2 → v1 → v2 round trips, status included: `active`
//!   and `lastScheduleTime` are carried, conditions are not (as in the
//!   tutorial), so a write at v2 drops the stored ones and a write at v1
//!   keeps them.
//! - A v1 schedule v2 cannot express (`@hourly`, two spaces in a row) makes
//!   a read at v2 fail with the conversion's message, a GET and a LIST
//!   alike, while v1 still serves it.
//!
//! As in the tutorial's webhook suite, the controller does not run: the
//! status written here is the only one.

use kubeforge::app::{App, Running};
use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kubeforge::kube_core::params::{ListParams, Patch, PatchParams, PostParams};
use kubeforge::testing::ApiServer;
use kubeforge::Api;
use serde_json::json;

use cronjob_operator::api::batch::{v1, v2};

/// What a read at v2 answers for a schedule v2 cannot express.
const CANNOT_EXPRESS: &str = "conversion webhook for batch.tutorial.kubebuilder.io/v1, \
     Kind=CronJob failed: invalid schedule: not a standard 5-field schedule";

/// The operator's kinds and webhooks (conversion included), without its
/// controller.
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

fn cron_job(name: &str, schedule: &str) -> v1::CronJob {
    v1::CronJob::new(
        name,
        v1::CronJobSpec {
            schedule: schedule.to_owned(),
            starting_deadline_seconds: Some(60),
            concurrency_policy: None,
            suspend: None,
            job_template: Default::default(),
            successful_jobs_history_limit: None,
            failed_jobs_history_limit: None,
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_to_v2_and_back_carries_the_spec_and_status_but_not_conditions() {
    let server = ApiServer::start().await.expect("API server");
    let operator = start(&server).await;
    let client = operator.client().clone();
    let hubs: Api<v1::CronJob> = Api::namespaced(client.clone(), "default");
    let spokes: Api<v2::CronJob> = Api::namespaced(client, "default");
    let pp = PostParams::default();

    let created = hubs
        .create(&pp, &cron_job("from-v1", "*/1 * * * *"))
        .await
        .expect("admitted");
    let status_json = json!({
        "active": [{
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "from-v1-1767225660",
            "namespace": "default",
            "uid": "3c1e5c2c-0d7a-4a8e-9b7e-2f0c6a1d9e11",
        }],
        "lastScheduleTime": "2026-01-01T00:01:00Z",
        "conditions": [{
            "type": "Available",
            "status": "True",
            "reason": "JobsActive",
            "message": "1 active job(s) running",
            "lastTransitionTime": "2026-01-01T00:01:00Z",
        }],
    });
    let written = hubs
        .patch_status(
            "from-v1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status_json })),
        )
        .await
        .expect("status written at v1");
    let written_status = written.status.clone().expect("status");
    assert_eq!(written_status.conditions.len(), 1);

    // Read at v2: the schedule split into its fields, the status without
    // its conditions.
    let at_v2 = spokes.get("from-v1").await.expect("read at v2");
    assert_eq!(at_v2.metadata.uid, created.metadata.uid);
    assert_eq!(
        at_v2.spec.schedule,
        v2::CronSchedule {
            minute: Some("*/1".to_owned()),
            ..v2::CronSchedule::default()
        }
    );
    assert_eq!(at_v2.spec.starting_deadline_seconds, Some(60));
    assert_eq!(
        at_v2.spec.concurrency_policy,
        created.spec.concurrency_policy
    );
    assert_eq!(
        at_v2.spec.successful_jobs_history_limit,
        created.spec.successful_jobs_history_limit
    );
    let v2_status = at_v2.status.clone().expect("status at v2");
    assert_eq!(v2_status.active, written_status.active);
    assert_eq!(
        v2_status.last_schedule_time,
        written_status.last_schedule_time
    );
    assert_eq!(v2_status.conditions, Vec::<Condition>::new());

    // Written at v2: the spec change reaches v1, with `active` and
    // `lastScheduleTime`. The conditions do not survive: the API server
    // handles a write at v2 at v2 (the stored status it keeps for a write
    // of the object is the stored one read at v2, without conditions), so
    // any write at v2 drops them, as on a cluster with the tutorial's
    // conversion. The controller reads and writes v1 only.
    let mut changed = at_v2;
    changed.spec.schedule.hour = Some("2".to_owned());
    spokes
        .replace("from-v1", &pp, &changed)
        .await
        .expect("written at v2");
    let back = hubs.get("from-v1").await.expect("read at v1");
    assert_eq!(back.spec.schedule, "*/1 2 * * *");
    assert_eq!(back.spec.starting_deadline_seconds, Some(60));
    assert_eq!(back.metadata.uid, created.metadata.uid);
    let status = back.status.expect("status");
    assert_eq!(status.active, written_status.active);
    assert_eq!(status.last_schedule_time, written_status.last_schedule_time);
    assert_eq!(status.conditions, Vec::<Condition>::new());

    // A write at v1 keeps them: the object's write leaves the status alone.
    hubs.patch_status(
        "from-v1",
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status_json })),
    )
    .await
    .expect("status written at v1");
    hubs.patch(
        "from-v1",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"schedule": "*/1 3 * * *"}})),
    )
    .await
    .expect("written at v1");
    let back = hubs.get("from-v1").await.expect("read at v1");
    assert_eq!(back.spec.schedule, "*/1 3 * * *");
    assert_eq!(back.status, Some(written_status));

    operator.stop().await.expect("the operator stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_to_v1_and_back_is_unchanged() {
    let server = ApiServer::start().await.expect("API server");
    let operator = start(&server).await;
    let client = operator.client().clone();
    let hubs: Api<v1::CronJob> = Api::namespaced(client.clone(), "default");
    let spokes: Api<v2::CronJob> = Api::namespaced(client, "default");
    let pp = PostParams::default();

    let mut spoke = v2::CronJob::new(
        "from-v2",
        v2::CronJobSpec {
            schedule: v2::CronSchedule {
                minute: Some("*/1".to_owned()),
                hour: Some("9-17".to_owned()),
                day_of_month: None,
                month: Some("jan,jul".to_owned()),
                day_of_week: Some("mon-fri".to_owned()),
            },
            starting_deadline_seconds: Some(30),
            concurrency_policy: Some(v2::ConcurrencyPolicy::Forbid),
            suspend: Some(true),
            job_template: Default::default(),
            successful_jobs_history_limit: Some(0),
            failed_jobs_history_limit: Some(2),
        },
    );
    spoke
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("app".to_owned(), "report".to_owned());
    let written = spokes.create(&pp, &spoke).await.expect("admitted");
    assert_eq!(written.spec, spoke.spec);

    let at_hub = hubs.get("from-v2").await.expect("read at v1");
    assert_eq!(at_hub.metadata.uid, written.metadata.uid);
    assert_eq!(at_hub.metadata.labels, written.metadata.labels);
    assert_eq!(at_hub.spec.schedule, "*/1 9-17 * jan,jul mon-fri");
    assert_eq!(
        at_hub.spec.concurrency_policy,
        Some(v1::ConcurrencyPolicy::Forbid)
    );
    assert_eq!(at_hub.spec.successful_jobs_history_limit, Some(0));

    let back = spokes.get("from-v2").await.expect("read at v2");
    assert_eq!(back.spec, written.spec);
    assert_eq!(back.metadata.labels, written.metadata.labels);
    let listed = spokes
        .list(&ListParams::default())
        .await
        .expect("listed at v2");
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].spec, written.spec);

    operator.stop().await.expect("the operator stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_v2_cannot_express_fails_reads_at_v2() {
    let server = ApiServer::start().await.expect("API server");
    let operator = start(&server).await;
    let client = operator.client().clone();
    let hubs: Api<v1::CronJob> = Api::namespaced(client.clone(), "default");
    let spokes: Api<v2::CronJob> = Api::namespaced(client, "default");
    let pp = PostParams::default();

    hubs.create(&pp, &cron_job("plain", "0 * * * *"))
        .await
        .expect("admitted");
    // robfig/cron parses both, so v1 admits them; v2 has no field for a
    // descriptor, and the tutorial's split on single spaces makes six parts
    // of a double space.
    for (name, schedule) in [("hourly", "@hourly"), ("spaced", "0  * * * *")] {
        hubs.create(&pp, &cron_job(name, schedule))
            .await
            .unwrap_or_else(|e| panic!("{schedule:?} is admitted at v1: {e}"));
        assert_eq!(
            hubs.get(name).await.expect("read at v1").spec.schedule,
            schedule
        );
        let err = spokes.get(name).await.expect_err("not expressible at v2");
        let status = err.status().unwrap_or_else(|| panic!("{err}"));
        assert_eq!(
            (status.code, status.message.as_str()),
            (500, CANNOT_EXPRESS),
            "{schedule:?}: {status:?}"
        );
    }
    // One such CronJob fails the whole list at v2; v1 lists them all.
    let err = spokes
        .list(&ListParams::default())
        .await
        .expect_err("the list at v2 fails");
    let status = err.status().unwrap_or_else(|| panic!("{err}"));
    assert_eq!(
        (status.code, status.message.as_str()),
        (500, CANNOT_EXPRESS)
    );
    let names: Vec<String> = hubs
        .list(&ListParams::default())
        .await
        .expect("listed at v1")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, ["hourly", "plain", "spaced"]);
    // The one v2 can express still reads at v2.
    let plain = spokes.get("plain").await.expect("read at v2");
    assert_eq!(plain.spec.schedule.minute.as_deref(), Some("0"));

    operator.stop().await.expect("the operator stops");
}
