//! The operator under exactly the RBAC it ships: it runs as its service
//! account, bound to the roles its own `manifests` derive, on a server that
//! enforces what those roles exist for (RBAC, and the ownerReferences
//! check behind `cronjobs/finalizers`), with the Job controller and
//! simulated nodes running its Jobs. After Jobs have been created,
//! replaced, finished and pruned, and the CronJob deleted, the server's
//! permission audit must show no request denied (no rule missing), no
//! granted rule unused and no granted verb unused (no over-privilege) but
//! the recorder's series patch, which no repeated event exercises here;
//! and the same run without one derived verb must fail with the 403 named.

use cronjob_operator::api::batch::v1::{ConcurrencyPolicy, CronJob, CronJobSpec};
use cronjob_operator::app;
use cronjob_operator::controllers::batch::cron_job::status::DEGRADED;
use cronjob_operator::controllers::batch::cron_job::{SUCCESSFUL_CREATE, SUCCESSFUL_DELETE};
use kubeforge::k8s_openapi::api::batch::v1::{Job, JobSpec, JobTemplateSpec};
use kubeforge::k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use kubeforge::k8s_openapi::api::events::v1::Event;
use kubeforge::prelude::*;
use kubeforge::reconcile::conditions::find_condition;
use kubeforge::testing::{assert_least_privilege, eventually, operator_user, ApiServer, Workloads};

const NS: &str = "default";
// Up to a minute until the first run, then the work.
const DEADLINE: Duration = Duration::from_secs(120);

async fn server() -> ApiServer {
    ApiServer::builder()
        .workloads(Workloads::fast())
        .owner_references_permission_enforcement(true)
        .start()
        .await
        .expect("API server starts")
}

/// A CronJob every minute (real time: the operator runs on the system
/// clock) that replaces its running Job and keeps no finished ones: every
/// write the controller can make. A five-field schedule, which the v2
/// admission webhooks can convert whatever their match policy.
fn fast_cron_job() -> CronJob {
    CronJob::new(
        "fast",
        CronJobSpec {
            schedule: "* * * * *".into(),
            starting_deadline_seconds: None,
            concurrency_policy: Some(ConcurrencyPolicy::Replace),
            suspend: None,
            job_template: JobTemplateSpec {
                metadata: None,
                spec: Some(JobSpec {
                    template: PodTemplateSpec {
                        metadata: None,
                        spec: Some(PodSpec {
                            containers: vec![Container {
                                name: "hello".into(),
                                image: Some("busybox".into()),
                                ..Default::default()
                            }],
                            restart_policy: Some("OnFailure".into()),
                            ..Default::default()
                        }),
                    },
                    ..Default::default()
                }),
            },
            successful_jobs_history_limit: Some(0),
            failed_jobs_history_limit: Some(0),
        },
    )
}

async fn has_event(events: &Api<Event>, reason: &str) -> bool {
    let list = events.list(&Default::default()).await.expect("list events");
    list.items
        .iter()
        .any(|e| e.reason.as_deref() == Some(reason))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_and_delete_cycle_uses_exactly_the_derived_rbac() {
    let server = server().await;
    let op = app()
        .start_as_operator(&server, Default::default())
        .await
        .expect("the operator starts as its service account");
    let cronjobs: Api<CronJob> = Api::namespaced(op.client().clone(), NS);
    let jobs: Api<Job> = Api::namespaced(op.client().clone(), NS);
    let events: Api<Event> = Api::namespaced(op.client().clone(), NS);
    cronjobs
        .create(&PostParams::default(), &fast_cron_job())
        .await
        .expect("create CronJob");
    // Jobs are created, finished Jobs pruned.
    eventually(
        "Jobs created and finished ones deleted",
        DEADLINE,
        || async {
            (has_event(&events, SUCCESSFUL_CREATE).await
                && has_event(&events, SUCCESSFUL_DELETE).await)
                .then_some(())
        },
    )
    .await;
    cronjobs
        .delete("fast", &DeleteParams::default())
        .await
        .expect("delete CronJob");
    // The garbage collector takes its Jobs.
    eventually("the CronJob and its Jobs gone", DEADLINE, || async {
        let cj = cronjobs.get_opt("fast").await.expect("get CronJob");
        let left = jobs.list(&Default::default()).await.expect("list Jobs");
        (cj.is_none() && left.items.is_empty()).then_some(())
    })
    .await;
    op.stop().await.expect("the operator stops cleanly");

    let audit = server.permission_audit(&operator_user());
    println!("{audit}");
    // No rule missing, no rule or verb granted and never used, but for
    // the two one replica may not exercise (`NOT_EXERCISED_BY_ONE_REPLICA`).
    assert_least_privilege(&audit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_jobs_create_the_cron_job_is_degraded_with_the_403_named() {
    let server = server().await;
    let op = app()
        .start_as_operator_with(&server, Default::default(), |rbac| {
            assert!(rbac.remove_verb("jobs", "create"), "derived")
        })
        .await
        .expect("the operator starts as its service account");
    let cronjobs: Api<CronJob> = Api::namespaced(op.client().clone(), NS);
    cronjobs
        .create(&PostParams::default(), &fast_cron_job())
        .await
        .expect("create CronJob");
    let user = operator_user();
    let denial = format!(
        r#"jobs.batch is forbidden: User "{user}" cannot create resource "jobs" in API group "batch" in the namespace "default""#
    );
    let message = eventually("Degraded=True/JobCreationFailed", DEADLINE, || async {
        let cj = cronjobs.get("fast").await.expect("get CronJob");
        let status = cj.status?;
        let degraded = find_condition(&status.conditions, DEGRADED)?;
        (degraded.reason == "JobCreationFailed").then(|| degraded.message.clone())
    })
    .await;
    assert!(message.contains(&denial), "{message}");
    op.stop().await.expect("the operator stops cleanly");

    // The audit names the rule to add back.
    let audit = server.permission_audit(&user);
    let denied: Vec<String> = audit.denied.iter().map(ToString::to_string).collect();
    assert_eq!(denied.len(), 1, "{audit}");
    assert!(denied[0].contains(r#"resources: ["jobs"]"#), "{audit}");
    assert!(denied[0].contains(r#"verbs: ["create"]"#), "{audit}");
}
