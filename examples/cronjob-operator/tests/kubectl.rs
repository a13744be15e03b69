//! The `cronjob-operator` binary under `--embedded`, driven by the real
//! `kubectl` (with its own `KUBECACHEDIR`), then stopped with SIGTERM: the
//! README's commands. The embedded API server runs the Job controller and
//! simulated nodes, so the Jobs the operator creates run and complete.
//!
//! The built-in `batch/v1` CronJob owns the short name `cronjobs`, so the
//! tutorial's kind is always named with its group, and with `v1` wherever
//! a CronJob v2 cannot express may be listed (v2 is the group's preferred
//! version, and one such CronJob fails every read at v2).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long any one thing may take: a kubectl run, or a state to be reached.
const DEADLINE: Duration = Duration::from_secs(30);

/// The CronJobs at v1, the version the API server stores.
const V1: &str = "cronjobs.v1.batch.tutorial.kubebuilder.io";
/// The CronJobs at v2, converted by the operator's webhook.
const V2: &str = "cronjobs.v2.batch.tutorial.kubebuilder.io";

/// What a read at v2 answers for a schedule v2 cannot express.
const CANNOT_EXPRESS: &str = "conversion webhook for batch.tutorial.kubebuilder.io/v1, \
     Kind=CronJob failed: invalid schedule: not a standard 5-field schedule";

const SCHEDULED_AT: &str = "batch.tutorial.kubebuilder.io/scheduled-at";

/// The running binary, its kubeconfig, log and scratch files.
struct Operator {
    child: Child,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    banner: String,
}

impl Drop for Operator {
    fn drop(&mut self) {
        // On a failed assertion, show what the operator logged.
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.log()).unwrap_or_default();
            eprintln!(
                "--- operator banner ---\n{}--- operator log ---\n{log}",
                self.banner
            );
        }
    }
}

/// What a kubectl run produced.
#[derive(Debug)]
struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Operator {
    /// Starts the binary with `--embedded` and waits for its banner.
    async fn embedded() -> Operator {
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        let log = std::fs::File::create(dir.path().join("operator.log")).expect("log file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_cronjob-operator"))
            .args([
                "--embedded",
                "--listen",
                "127.0.0.1:0",
                "--write-kubeconfig",
            ])
            .arg(&kubeconfig)
            .args([
                "--metrics-bind-address",
                "127.0.0.1:0",
                "--health-probe-bind-address",
                "127.0.0.1:0",
            ])
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG")
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("the operator starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut op = Operator {
            child,
            dir,
            kubeconfig,
            banner: String::new(),
        };
        let mut lines = BufReader::new(stdout).lines();
        while !op.banner.contains("get events") {
            let line = tokio::time::timeout(DEADLINE, lines.next_line())
                .await
                .expect("the operator prints its banner in time")
                .expect("stdout readable")
                .unwrap_or_else(|| panic!("the operator exited; it printed:\n{}", op.banner));
            op.banner.push_str(&line);
            op.banner.push('\n');
        }
        // Keep reading, so the binary never writes to a closed pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        for line in [
            "CRDs installed: cronjobs.batch.tutorial.kubebuilder.io",
            "sample created: CronJob default/cronjob-sample\n",
            "sample created: CronJob default/cronjob-sample-v2\n",
        ] {
            assert!(op.banner.contains(line), "{line:?} in:\n{}", op.banner);
        }
        op
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("operator.log")
    }

    /// Writes `yaml` to a file in the scratch directory; returns its path.
    fn file(&self, name: &str, yaml: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, yaml).expect("manifest written");
        path.to_string_lossy().into_owned()
    }

    async fn kubectl(&self, args: &[&str]) -> Out {
        let run = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.path().join("kube-cache"))
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(DEADLINE, run)
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish in time"))
            .expect("kubectl runs");
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs kubectl and expects success; returns stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args).await;
        assert!(
            out.ok,
            "kubectl {args:?} failed:\n{}{}",
            out.stdout, out.stderr
        );
        out.stdout
    }

    /// Runs kubectl and expects it to fail; returns stderr.
    async fn fails(&self, args: &[&str]) -> String {
        let out = self.kubectl(args).await;
        assert!(!out.ok, "kubectl {args:?} succeeded:\n{}", out.stdout);
        out.stderr
    }

    /// Runs kubectl until `pred` holds for its output, at most [`DEADLINE`].
    async fn eventually(&self, what: &str, args: &[&str], pred: impl Fn(&Out) -> bool) -> Out {
        let start = Instant::now();
        loop {
            let out = self.kubectl(args).await;
            if pred(&out) {
                return out;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}; last: {out:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The Jobs the CronJob `owner` controls, as `kubectl get jobs -o json`
    /// lists them.
    async fn jobs_of(&self, owner: &str) -> Vec<Value> {
        let list: Value =
            serde_json::from_str(&self.ok(&["get", "jobs", "-o", "json"]).await).expect("JSON");
        list["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|job| {
                job["metadata"]["ownerReferences"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|r| {
                        r["kind"] == "CronJob" && r["name"] == owner && r["controller"] == true
                    })
            })
            .collect()
    }

    /// Sends SIGTERM and waits for the exit status.
    async fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().expect("still running");
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        tokio::time::timeout(DEADLINE, self.child.wait())
            .await
            .expect("the operator exits in time after SIGTERM")
            .expect("exit status")
    }
}

fn name(job: &Value) -> String {
    job["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn completed(job: &Value) -> bool {
    job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Complete" && c["status"] == "True")
}

/// A v1 CronJob running busybox on `schedule`, keeping one successful Job.
fn cron_job(name: &str, schedule: &str) -> String {
    format!(
        r#"apiVersion: batch.tutorial.kubebuilder.io/v1
kind: CronJob
metadata:
  name: {name}
spec:
  schedule: "{schedule}"
  successfulJobsHistoryLimit: 1
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: hello
            image: busybox
            args: ["/bin/sh", "-c", "date; echo Hello from the Kubernetes cluster"]
          restartPolicy: OnFailure
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drives_the_embedded_operator() {
    let mut op = Operator::embedded().await;

    // Both samples, each readable at either version.
    let listed = op.ok(&["get", V1, "-o", "name"]).await;
    assert_eq!(
        listed.lines().collect::<Vec<_>>(),
        [
            "cronjob.batch.tutorial.kubebuilder.io/cronjob-sample",
            "cronjob.batch.tutorial.kubebuilder.io/cronjob-sample-v2",
        ],
        "{listed}"
    );
    let minute = op
        .ok(&[
            "get",
            V2,
            "cronjob-sample",
            "-o",
            "jsonpath={.spec.schedule.minute}",
        ])
        .await;
    assert_eq!(minute, "*/1");
    let schedule = op
        .ok(&[
            "get",
            V1,
            "cronjob-sample-v2",
            "-o",
            "jsonpath={.spec.schedule}",
        ])
        .await;
    assert_eq!(schedule, "*/1 * * * *");
    // The samples went through the defaulter (of their own version).
    for (resource, sample) in [(V1, "cronjob-sample"), (V2, "cronjob-sample-v2")] {
        let limits = op
            .ok(&[
                "get",
                resource,
                sample,
                "-o",
                "jsonpath={.spec.successfulJobsHistoryLimit} {.spec.failedJobsHistoryLimit} {.spec.suspend}",
            ])
            .await;
        assert_eq!(limits, "3 1 false", "{sample}");
    }

    // An invalid schedule: the validator refuses it with robfig/cron's
    // message (kubectl prints an Invalid error from its causes, naming the
    // Status details' kind without its group, as kube's NewInvalid
    // details say it).
    let invalid = op.file(
        "invalid.yaml",
        &cron_job("invalid", "invalid-cron-schedule"),
    );
    let stderr = op.fails(&["apply", "-f", &invalid]).await;
    assert!(
        stderr.contains(
            "The CronJob \"invalid\" is invalid: \
             spec.schedule: Invalid value: \"invalid-cron-schedule\": \
             Expected exactly 5 fields, found 1: invalid-cron-schedule"
        ),
        "{stderr}"
    );
    assert!(op.fails(&["get", V1, "invalid"]).await.contains("NotFound"));

    // A CronJob every 2 s: Jobs named after it and their scheduled time,
    // run to completion by the embedded server's Job controller.
    let fast = op.file("fast.yaml", &cron_job("fast", "@every 2s"));
    let applied = op.ok(&["apply", "-f", &fast]).await;
    assert!(
        applied.contains("cronjob.batch.tutorial.kubebuilder.io/fast created"),
        "{applied}"
    );
    let started = Instant::now();
    let mut seen = BTreeSet::new();
    let mut retired = false;
    loop {
        let jobs = op.jobs_of("fast").await;
        let names: BTreeSet<String> = jobs.iter().map(name).collect();
        for job in &jobs {
            let job_name = name(job);
            let suffix = job_name.strip_prefix("fast-").unwrap_or_default();
            assert!(
                suffix.len() == 10 && suffix.bytes().all(|b| b.is_ascii_digit()),
                "fast-<unix seconds>: {job_name}"
            );
            let at = job["metadata"]["annotations"][SCHEDULED_AT]
                .as_str()
                .unwrap_or_else(|| panic!("{job_name} has no {SCHEDULED_AT}"));
            assert!(at.ends_with('Z') && at.len() == 20, "RFC 3339: {at}");
        }
        // The history limit keeps one successful Job: earlier ones are
        // deleted once a later one completes.
        let complete = jobs.iter().filter(|j| completed(j)).count();
        retired |= seen.iter().any(|n| !names.contains(n));
        seen.extend(names);
        if retired && complete >= 1 && seen.len() >= 3 {
            break;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "Jobs created, completed and pruned; seen {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    eprintln!(
        "apply -> 3 Jobs, one completed and one pruned: {:?}",
        started.elapsed()
    );
    let last = op
        .ok(&[
            "get",
            V1,
            "fast",
            "-o",
            "jsonpath={.status.lastScheduleTime}",
        ])
        .await;
    assert!(last.ends_with('Z') && last.len() == 20, "{last:?}");
    op.eventually(
        "at most one successful Job kept",
        &["get", "jobs", "-o", "json"],
        |o| {
            let list: Value = serde_json::from_str(&o.stdout).unwrap_or_default();
            o.ok && list["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|j| name(j).starts_with("fast-") && completed(j))
                .count()
                == 1
        },
    )
    .await;
    let events = op.ok(&["get", "events"]).await;
    assert!(
        events
            .lines()
            .any(|l| l.contains("SuccessfulCreate") && l.contains("cronjob/fast")),
        "no SuccessfulCreate for cronjob/fast:\n{events}"
    );

    // v2 cannot express `@every 2s`: reads at v2 fail, v1 serves it.
    let stderr = op.fails(&["get", V2, "fast"]).await;
    assert!(stderr.contains(CANNOT_EXPRESS), "{stderr}");
    // So does every list at v2, the group's preferred version, which is
    // what kubectl reads when no version is named.
    let stderr = op
        .fails(&["get", "cronjobs.batch.tutorial.kubebuilder.io"])
        .await;
    assert!(stderr.contains(CANNOT_EXPRESS), "{stderr}");

    // Suspended: the status says so, and no Job is created any more.
    op.ok(&[
        "patch",
        V1,
        "fast",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"suspend":true}}"#,
    ])
    .await;
    op.eventually(
        "the Suspended condition",
        &[
            "get",
            V1,
            "fast",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Available\")].reason}",
        ],
        |o| o.ok && o.stdout == "Suspended",
    )
    .await;
    let before: BTreeSet<String> = op.jobs_of("fast").await.iter().map(name).collect();
    // Three periods of the schedule.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let after: BTreeSet<String> = op.jobs_of("fast").await.iter().map(name).collect();
    assert!(
        after.is_subset(&before),
        "created while suspended: {:?}",
        after.difference(&before).collect::<Vec<_>>()
    );

    // Deleted: the garbage collector removes its Jobs.
    op.ok(&["delete", V1, "fast", "--timeout=20s"]).await;
    op.eventually(
        "the Jobs garbage-collected",
        &["get", "jobs", "-o", "name"],
        |o| o.ok && !o.stdout.contains("job.batch/fast-"),
    )
    .await;

    // SIGTERM: a graceful stop, exit status 0.
    let status = op.terminate().await;
    assert!(status.success(), "{status}");
}
