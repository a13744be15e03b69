//! A scaffolded operator run in-cluster as its manifests describe it, on
//! the dev server's kubelet (`--image controller:latest=<the built
//! binary>`): `kubeforge init` + `create api`, `generate` (which builds
//! it), `kubectl apply -k config/default` unchanged; the manager pod
//! becomes Ready through its own `/readyz`, reconciles a sample applied
//! with kubectl from inside its pod (the in-cluster config: the token
//! file, `KUBERNETES_SERVICE_HOST`), and `kubectl logs` shows it; scaled
//! to two replicas exactly one holds the Lease, and once the leader's
//! pod is force-deleted (its process SIGKILLed) the other takes over and
//! reconciles a new sample; the permission audit of the manager's service
//! account shows nothing denied and no rule unused. Prints the time from
//! `apply -k` to Ready and from the leader's kill to the next reconcile.
//! A kube-rs operator finds its in-cluster config the same way, and a
//! server that cannot make namespaces says so on the pod.

mod project;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use kubeforge_e2e::{kubeforge_binary, target_dir};
use project::{kubectl, show, terminate, Project};

const NAMESPACE: &str = "memo-system";
const DEPLOYMENT: &str = "memo-controller-manager";

/// Waits until `check` holds, at most `within`; panics naming `what`.
fn until(what: &str, within: Duration, mut check: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < within, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
    started.elapsed()
}

fn stdout(kubeconfig: &Path, args: &[&str]) -> String {
    let out = kubectl(kubeconfig, args);
    if out.status.success() {
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    } else {
        String::new()
    }
}

/// The dev server with `args`, its output to a file (the permission
/// audit is printed when it stops).
fn dev_server(kubeconfig: &Path, log: &Path, args: &[String]) -> Child {
    let file = std::fs::File::create(log).expect("log file");
    let child = kubeforge_e2e::nested(kubeforge_binary())
        .args([
            "dev-server",
            "--listen",
            "127.0.0.1:0",
            "--write-kubeconfig",
        ])
        .arg(kubeconfig)
        .args(args)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the dev server starts");
    until(
        "the dev server's kubeconfig",
        Duration::from_secs(30),
        || std::fs::read_to_string(log).is_ok_and(|l| l.contains("kubeconfig written")),
    );
    child
}

fn ready_pods(kubeconfig: &Path) -> Vec<String> {
    let rows = stdout(
        kubeconfig,
        &[
            "-n",
            NAMESPACE,
            "get",
            "pods",
            "-o",
            r#"jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}"#,
        ],
    );
    rows.lines()
        .filter_map(|l| l.strip_suffix(" True"))
        .map(str::to_owned)
        .collect()
}

fn sample_ready(kubeconfig: &Path, name: &str) -> bool {
    stdout(
        kubeconfig,
        &[
            "get",
            "memcached",
            name,
            "-o",
            r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}"#,
        ],
    ) == "True"
}

fn holder(kubeconfig: &Path) -> String {
    let identity = stdout(
        kubeconfig,
        &[
            "-n",
            NAMESPACE,
            "get",
            "lease",
            "-o",
            "jsonpath={.items[*].spec.holderIdentity}",
        ],
    );
    // controller-runtime's identity: `<hostname>_<uuid>`.
    identity.split('_').next().unwrap_or("").to_owned()
}

/// Whether this machine lets the dev server make namespaces; the tests
/// that run processes say why they skip otherwise (CI runs as root).
fn can_sandbox() -> bool {
    let ok = std::process::Command::new("unshare")
        .args(["--net", "--mount", "--uts", "--pid", "--fork", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: this machine cannot make Linux namespaces (needs CAP_SYS_ADMIN)");
    }
    ok
}

/// The kube-rs operator's namespace, identity, RBAC and Deployment.
const GREETER: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: greeters}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: greeter, namespace: greeters}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: greeter, namespace: greeters}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: greeter, namespace: greeters}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: greeter}
subjects:
- {kind: ServiceAccount, name: greeter, namespace: greeters}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: greeter, namespace: greeters}
spec:
  selector: {matchLabels: {app: greeter}}
  template:
    metadata: {labels: {app: greeter}}
    spec:
      serviceAccountName: greeter
      securityContext: {runAsNonRoot: true}
      containers:
      - name: greeter
        image: greeter:v1
        command: [/greeter]
        securityContext: {readOnlyRootFilesystem: true}
"#;

// kube-rs's `Config::incluster_env` (kube-client config/mod.rs), as
// client-go's `rest.InClusterConfig`: the token, CA and namespace files
// and KUBERNETES_SERVICE_HOST/PORT, here from the dev server's kubelet.
#[test]
fn a_kube_rs_operator_finds_its_in_cluster_config_unmodified() {
    if !can_sandbox() {
        return;
    }
    kubeforge_e2e::run_ok(kubeforge_e2e::cargo().args([
        "build",
        "--quiet",
        "-p",
        "kube-rs-users",
        "--bin",
        "greeter",
    ]));
    let binary = target_dir().join("debug").join("greeter");
    let tmp = tempfile::tempdir().expect("temp dir");
    let kubeconfig = tmp.path().join("dev.kubeconfig");
    let log = tmp.path().join("dev-server.log");
    let image = format!("greeter:v1={}", binary.display());
    let mut server = dev_server(&kubeconfig, &log, &["--image".into(), image]);
    let manifests = tmp.path().join("greeter.yaml");
    std::fs::write(&manifests, GREETER).expect("manifests");
    let out = kubectl(&kubeconfig, &["apply", "-f", &manifests.to_string_lossy()]);
    assert!(out.status.success(), "{}", show(&out));
    for args in [
        &["-n", "greeters", "create", "configmap", "world"][..],
        &["-n", "greeters", "label", "configmap", "world", "greet=yes"][..],
    ] {
        let out = kubectl(&kubeconfig, args);
        assert!(out.status.success(), "{}", show(&out));
    }
    until(
        "the kube-rs operator's greeting",
        Duration::from_secs(60),
        || {
            let greeting = [
                "-n",
                "greeters",
                "get",
                "configmap",
                "world",
                "-o",
                "jsonpath={.data.greeting}",
            ];
            stdout(&kubeconfig, &greeting) == "hello world"
        },
    );
    let logs = stdout(&kubeconfig, &["-n", "greeters", "logs", "deploy/greeter"]);
    // Its namespace is the one in the service-account files.
    assert!(
        logs.contains("connected; watching ConfigMaps in greeters"),
        "{logs}"
    );
    assert!(terminate(&mut server).success());
}

#[test]
fn the_scaffolded_operator_runs_in_cluster_and_fails_over() {
    if !can_sandbox() {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let project = Project {
        dir: tmp.path().join("memo"),
        _tmp: tmp,
        kubeforge: kubeforge_binary(),
    };
    std::fs::create_dir_all(&project.dir).expect("project dir");
    let dir = project.dir.to_string_lossy().into_owned();
    let out = project.run(
        &project.kubeforge,
        &["init", &dir, "--domain", "example.com"],
    );
    assert!(out.status.success(), "{}", show(&out));
    let args = [
        "create",
        "api",
        "--group",
        "cache",
        "--version",
        "v1alpha1",
        "--kind",
        "Memcached",
    ];
    let out = project.kubeforge(&args);
    assert!(out.status.success(), "{}", show(&out));
    let out = project.kubeforge(&["generate"]);
    assert!(out.status.success(), "{}", show(&out));
    // `generate` built the manager; its binary is the image.
    let binary: PathBuf = target_dir().join("debug").join("memo");
    assert!(binary.is_file(), "{} was not built", binary.display());

    let kubeconfig = project.path("dev.kubeconfig");
    let log = project.path("dev-server.log");
    let mut server = dev_server(
        &kubeconfig,
        &log,
        &[
            "--image".into(),
            format!("controller:latest={}", binary.display()),
            "--audit".into(),
            format!("{NAMESPACE}/{DEPLOYMENT}"),
        ],
    );

    let applied = Instant::now();
    let out = kubectl(
        &kubeconfig,
        &[
            "apply",
            "-k",
            &project.path("config/default").to_string_lossy(),
        ],
    );
    assert!(out.status.success(), "{}", show(&out));
    until(
        "the manager Ready through its /readyz",
        Duration::from_secs(60),
        || ready_pods(&kubeconfig).len() == 1,
    );
    eprintln!(
        "kubectl apply -k config/default to the manager Ready: {:?}",
        applied.elapsed()
    );
    let sample = project.path("config/samples/cache_v1alpha1_memcached.yaml");
    let out = kubectl(&kubeconfig, &["apply", "-f", &sample.to_string_lossy()]);
    assert!(out.status.success(), "{}", show(&out));
    until(
        "the sample reconciled in-cluster",
        Duration::from_secs(30),
        || sample_ready(&kubeconfig, "memcached-sample"),
    );
    let logs = stdout(
        &kubeconfig,
        &["-n", NAMESPACE, "logs", &format!("deploy/{DEPLOYMENT}")],
    );
    assert!(logs.contains("caches synced"), "{logs}");

    // Two replicas: one leader, named by its pod.
    let out = kubectl(
        &kubeconfig,
        &[
            "-n",
            NAMESPACE,
            "scale",
            "deploy",
            DEPLOYMENT,
            "--replicas=2",
        ],
    );
    assert!(out.status.success(), "{}", show(&out));
    until("both replicas Ready", Duration::from_secs(60), || {
        ready_pods(&kubeconfig).len() == 2
    });
    let pods = ready_pods(&kubeconfig);
    let leader = holder(&kubeconfig);
    assert!(
        pods.contains(&leader),
        "the Lease holder {leader:?} is one of {pods:?}"
    );

    // The leader killed: the other replica takes the Lease and reconciles.
    let killed = Instant::now();
    let out = kubectl(
        &kubeconfig,
        &[
            "-n",
            NAMESPACE,
            "delete",
            "pod",
            &leader,
            "--grace-period=0",
            "--force",
        ],
    );
    assert!(out.status.success(), "{}", show(&out));
    let second = std::fs::read_to_string(&sample)
        .expect("the sample")
        .replace("memcached-sample", "memcached-second");
    let second_file = project.path("second.yaml");
    std::fs::write(&second_file, second).expect("written");
    let out = kubectl(
        &kubeconfig,
        &["apply", "-f", &second_file.to_string_lossy()],
    );
    assert!(out.status.success(), "{}", show(&out));
    // Past the 15 s lease duration.
    until(
        "the other replica reconciles",
        Duration::from_secs(60),
        || sample_ready(&kubeconfig, "memcached-second"),
    );
    eprintln!(
        "the leader's SIGKILL to the next reconcile by the other replica: {:?}",
        killed.elapsed()
    );
    let other = holder(&kubeconfig);
    assert!(
        other != leader && pods.contains(&other),
        "{other:?} of {pods:?} took over from {leader:?}"
    );

    assert!(terminate(&mut server).success());
    let printed = std::fs::read_to_string(&log).expect("the dev server's output");
    let audit = format!("system:serviceaccount:{NAMESPACE}:{DEPLOYMENT}");
    assert!(
        printed.contains(&format!("permission audit of {audit}")),
        "{printed}"
    );
    assert!(
        printed.contains(" 0 denied") && printed.contains("denied: none"),
        "{printed}"
    );
    assert!(
        printed.contains("granted and never used: none"),
        "{printed}"
    );
}

// Where namespaces cannot be had (here: the dev server run as `nobody`,
// without CAP_SYS_ADMIN), a pod of a mapped image says why, as the
// kubelet's FailedCreatePodSandBox does, and the server keeps serving.
#[test]
fn without_namespaces_a_pod_says_why_and_the_server_keeps_running() {
    // Only root may switch to nobody.
    let root = stdout_of("id", &["-u"]) == "0";
    if !root || stdout_of("sh", &["-c", "command -v setpriv"]).is_empty() {
        eprintln!("skipped: needs root and setpriv to run the dev server as nobody");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let kubeconfig = tmp.path().join("dev.kubeconfig");
    let log = tmp.path().join("dev-server.log");
    let file = std::fs::File::create(&log).expect("log file");
    let mut server = kubeforge_e2e::nested("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(kubeforge_binary())
        .args([
            "dev-server",
            "--listen",
            "127.0.0.1:0",
            "--write-kubeconfig",
        ])
        .arg(&kubeconfig)
        .args(["--image", "sleeper:v1=/bin/sleep"])
        .stdout(file)
        .stderr(Stdio::null())
        .spawn()
        .expect("the dev server starts");
    until(
        "the dev server's kubeconfig",
        Duration::from_secs(30),
        || std::fs::read_to_string(&log).is_ok_and(|l| l.contains("kubeconfig written")),
    );
    let out = kubectl(
        &kubeconfig,
        &[
            "create",
            "deployment",
            "sleeper",
            "--image=sleeper:v1",
            "--",
            "/sleep",
            "600",
        ],
    );
    assert!(out.status.success(), "{}", show(&out));
    let waiting = || {
        stdout(
            &kubeconfig,
            &[
                "get",
                "pods",
                "-o",
                "jsonpath={.items[0].status.containerStatuses[0].state.waiting.message}",
            ],
        )
    };
    until(
        "the pod says why it cannot start",
        Duration::from_secs(30),
        || {
            waiting()
                .starts_with("Failed to create pod sandbox: cannot make the pod's Linux namespaces")
        },
    );
    let events = stdout(
        &kubeconfig,
        &["get", "events", "-o", "jsonpath={.items[*].reason}"],
    );
    assert!(events.contains("FailedCreatePodSandBox"), "{events}");
    assert!(
        waiting().contains("needs Linux and CAP_SYS_ADMIN"),
        "{}",
        waiting()
    );
    // Still serving.
    assert_eq!(
        stdout(
            &kubeconfig,
            &[
                "get",
                "deployment",
                "sleeper",
                "-o",
                "jsonpath={.metadata.name}"
            ]
        ),
        "sleeper"
    );
    assert!(terminate(&mut server).success());
}

fn stdout_of(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
