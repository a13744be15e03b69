//! What the controller tests share: the in-process API server with the
//! CronJob CRD and no workload controllers (envtest's setting: the tests
//! write Job status themselves), the operator's manager on a fake clock
//! with a wake channel, and small builders and waits.

// Each test binary uses its own part of these helpers.
#![allow(dead_code)]

use std::future::Future;
use std::sync::PoisonError;

use cronjob_operator::api::batch::v1::{ConcurrencyPolicy, CronJob, CronJobSpec};
use cronjob_operator::clock::FakeClock;
use cronjob_operator::controllers::batch::cron_job::{self, CONTROLLER_NAME};
use jiff::Timestamp;
use kubeforge::k8s_openapi::api::batch::v1::{
    Job, JobCondition, JobSpec, JobStatus, JobTemplateSpec,
};
use kubeforge::k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use kubeforge::manager::{CancellationToken, SharedRegistry};
use kubeforge::prelude::*;
use kubeforge::reconcile::conditions::find_condition;
use kubeforge::reconcile::owner::controller_owner_ref;
use kubeforge::testing::{ApiServer, ApiServerExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub const NS: &str = "default";
pub const DEADLINE: Duration = Duration::from_secs(20);

/// The API server, keeping its state in a data directory (as `kubeforge
/// dev-server --data-dir` does), and the operator's manager on a fake
/// clock.
pub struct Operator {
    pub server: ApiServer,
    _data: tempfile::TempDir,
    pub client: Client,
    pub clock: Arc<FakeClock>,
    wake: mpsc::Sender<CronJob>,
    registry: SharedRegistry,
    stop: CancellationToken,
    manager: JoinHandle<Result<(), kubeforge::manager::Error>>,
}

impl Operator {
    /// Starts the server and the manager, the clock reading `now`.
    pub async fn start(now: Timestamp) -> Operator {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let data = tempfile::tempdir().expect("a data directory");
        let server = ApiServer::builder()
            .data_dir(data.path())
            .start()
            .await
            .expect("API server starts");
        server.install_crd_for::<CronJob>().expect("CRD installs");
        let client = server.client().expect("client");
        let mgr = Manager::builder()
            .client(client.clone())
            .metrics_bind_address("0")
            .health_probe_bind_address("0")
            .graceful_shutdown_timeout(Duration::from_secs(5))
            .build()
            .await
            .expect("manager builds");
        let clock = Arc::new(FakeClock::new(now));
        let (wake, woken) = mpsc::channel(16);
        cron_job::register_with(&mgr, clock.clone(), Some(woken)).expect("controller registers");
        let registry = mgr.registry().clone();
        let stop = CancellationToken::new();
        let manager = tokio::spawn(mgr.run_until(stop.clone()));
        Operator {
            server,
            _data: data,
            client,
            clock,
            wake,
            registry,
            stop,
            manager,
        }
    }

    pub fn cronjobs(&self) -> Api<CronJob> {
        Api::namespaced(self.client.clone(), NS)
    }

    pub fn jobs(&self) -> Api<Job> {
        Api::namespaced(self.client.clone(), NS)
    }

    /// Creates `cj` and returns it as stored.
    pub async fn create(&self, cj: &CronJob) -> CronJob {
        self.cronjobs()
            .create(&PostParams::default(), cj)
            .await
            .expect("create CronJob")
    }

    /// Reconciles CronJob `name` now (after the clock moved).
    pub async fn wake(&self, name: &str) {
        let cj = self.cronjobs().get(name).await.expect("get CronJob");
        self.wake.send(cj).await.expect("the controller listens");
    }

    /// Sets the clock to `at` and reconciles CronJob `name`.
    pub async fn at(&self, at: Timestamp, name: &str) {
        self.clock.set(at);
        self.wake(name).await;
    }

    /// Reconciles finished by the controller so far, whatever their result.
    pub fn reconciles(&self) -> f64 {
        let registry = self.registry.read().unwrap_or_else(PoisonError::into_inner);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("metrics encode");
        let series =
            format!(r#"controller_runtime_reconcile_total{{controller="{CONTROLLER_NAME}""#);
        text.lines()
            .filter(|line| line.starts_with(&series))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// Waits until a reconcile of `name` that started after this call has
    /// finished: two wakes, each waited for, so that a reconcile already
    /// running when the first is sent does not count.
    pub async fn settle(&self, name: &str) {
        for _ in 0..2 {
            let before = self.reconciles();
            self.wake(name).await;
            eventually("a reconcile", || async {
                (self.reconciles() > before).then_some(())
            })
            .await;
        }
    }

    /// The stored CronJob `name`.
    pub async fn get(&self, name: &str) -> CronJob {
        self.cronjobs().get(name).await.expect("get CronJob")
    }

    /// Waits until Job `name` exists and returns it.
    pub async fn job_appears(&self, name: &str) -> Job {
        eventually(&format!("Job {name}"), || async {
            self.jobs().get_opt(name).await.expect("get Job")
        })
        .await
    }

    /// Waits until Job `name` is gone.
    pub async fn job_gone(&self, name: &str) {
        eventually(&format!("Job {name} gone"), || async {
            self.jobs()
                .get_opt(name)
                .await
                .expect("get Job")
                .is_none()
                .then_some(())
        })
        .await;
    }

    /// The names of the Jobs in the namespace, sorted.
    pub async fn job_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .jobs()
            .list(&Default::default())
            .await
            .expect("list Jobs")
            .items
            .iter()
            .map(|job| job.name_any())
            .collect();
        names.sort();
        names
    }

    /// Creates a Job `name` controlled by `owner`, as a user (or an older
    /// run of the controller) would.
    pub async fn create_owned_job(&self, owner: &CronJob, name: &str) -> Job {
        let job = Job {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(NS.into()),
                owner_references: Some(vec![controller_owner_ref(owner).expect("owner ref")]),
                ..Default::default()
            },
            spec: template().spec,
            status: None,
        };
        self.jobs()
            .create(&PostParams::default(), &job)
            .await
            .expect("create Job")
    }

    /// Writes `status` to Job `name` (a PUT to `/status`, as envtest
    /// users do without a Job controller).
    pub async fn write_job_status(&self, name: &str, status: JobStatus) -> Job {
        let mut job = self.jobs().get(name).await.expect("get Job");
        job.status = Some(status);
        self.jobs()
            .replace_status(name, &PostParams::default(), &job)
            .await
            .expect("write Job status")
    }

    /// Finishes Job `name` as the Job controller would: `SuccessCriteriaMet`
    /// then `Complete` (with `completionTime`), or `FailureTarget` then
    /// `Failed`, each step its own status write.
    pub async fn finish_job(&self, name: &str, outcome: Outcome, started: Timestamp) -> Job {
        let (interim, last) = match outcome {
            Outcome::Complete => ("SuccessCriteriaMet", "Complete"),
            Outcome::Failed => ("FailureTarget", "Failed"),
        };
        let mut status = JobStatus {
            start_time: Some(Time(started)),
            conditions: Some(vec![job_condition(interim)]),
            ..Default::default()
        };
        self.write_job_status(name, status.clone()).await;
        status
            .conditions
            .get_or_insert_default()
            .push(job_condition(last));
        if outcome == Outcome::Complete {
            status.completion_time = Some(Time(started));
            status.succeeded = Some(1);
        } else {
            status.failed = Some(1);
        }
        self.write_job_status(name, status).await
    }

    /// Stops the manager and checks it ended without error.
    pub async fn stop(self) {
        self.stop.cancel();
        let ended = tokio::time::timeout(DEADLINE, self.manager)
            .await
            .expect("the manager stops in time")
            .expect("the manager task did not panic");
        ended.expect("the manager stops without error");
    }
}

/// How a Job ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Complete,
    Failed,
}

fn job_condition(type_: &str) -> JobCondition {
    JobCondition {
        type_: type_.into(),
        status: "True".into(),
        ..Default::default()
    }
}

/// The reference test's Job template: one container, `OnFailure`.
pub fn template() -> JobTemplateSpec {
    JobTemplateSpec {
        metadata: None,
        spec: Some(JobSpec {
            template: PodTemplateSpec {
                metadata: None,
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "test-container".into(),
                        image: Some("test-image".into()),
                        ..Default::default()
                    }],
                    restart_policy: Some("OnFailure".into()),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
    }
}

/// A CronJob `name` on `schedule` with the policy `Allow` and no limits.
pub fn cron_job(name: &str, schedule: &str) -> CronJob {
    let mut cj = CronJob::new(
        name,
        CronJobSpec {
            schedule: schedule.into(),
            starting_deadline_seconds: None,
            concurrency_policy: Some(ConcurrencyPolicy::Allow),
            suspend: None,
            job_template: template(),
            successful_jobs_history_limit: None,
            failed_jobs_history_limit: None,
        },
    );
    cj.metadata.namespace = Some(NS.into());
    cj
}

/// The CronJob's creation time.
pub fn created(cj: &CronJob) -> Timestamp {
    cj.metadata
        .creation_timestamp
        .as_ref()
        .expect("creationTimestamp")
        .0
}

/// The first multiple of `period` seconds (since the epoch) after `t`: the
/// runs of `*/5 * * * *` (300) or `* * * * *` (60), computed by hand.
pub fn next_multiple(t: Timestamp, period: i64) -> Timestamp {
    let secs = t.as_second();
    Timestamp::from_second((secs.div_euclid(period) + 1) * period).expect("in range")
}

/// `t` plus `secs` seconds.
pub fn plus(t: Timestamp, secs: i64) -> Timestamp {
    t.checked_add(jiff::SignedDuration::from_secs(secs))
        .expect("in range")
}

/// The name the controller gives the Job of the run at `at`.
pub fn job_name(cron_job: &str, at: Timestamp) -> String {
    format!("{cron_job}-{}", at.as_second())
}

/// Condition `type_` of `cj`'s status.
pub fn condition(cj: &CronJob, type_: &str) -> Option<Condition> {
    find_condition(&cj.status.as_ref()?.conditions, type_).cloned()
}

/// Whether `cj` has condition `type_` with `status` and `reason`.
pub fn has_condition(cj: &CronJob, type_: &str, status: &str, reason: &str) -> bool {
    condition(cj, type_).is_some_and(|c| c.status == status && c.reason == reason)
}

/// The names in `cj`'s `status.active`, sorted.
pub fn active_names(cj: &CronJob) -> Vec<String> {
    let mut names: Vec<String> = cj
        .status
        .iter()
        .flat_map(|s| &s.active)
        .filter_map(|r| r.name.clone())
        .collect();
    names.sort();
    names
}

/// Polls `probe` until it returns `Some`, at most [`DEADLINE`].
pub async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    kubeforge::testing::eventually(what, DEADLINE, probe).await
}

/// Polls until CronJob `name` satisfies `check`, and returns it.
pub async fn cron_job_where(
    op: &Operator,
    name: &str,
    what: &str,
    check: impl Fn(&CronJob) -> bool,
) -> CronJob {
    eventually(what, || async {
        let cj = op.get(name).await;
        check(&cj).then_some(cj)
    })
    .await
}
