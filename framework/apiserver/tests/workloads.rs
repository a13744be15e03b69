//! The workload controllers and simulated nodes, on the wire: rolling
//! updates never exceed maxSurge nor drop below maxUnavailable, Recreate
//! never overlaps, the simulated kubelet's crash loops, image pull
//! failures and flipping readiness, graceful deletion, the binding and
//! eviction subresources (a PodDisruptionBudget's 429), DaemonSets, a
//! failing node's pods evicted, and everything off by default.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod common;
mod poll;

use std::time::Duration;

use common::Kube;
use kubeforge_apiserver::{ApiServer, PodBehavior, PodPolicy, Workloads};
use poll::eventually;
use serde_json::{json, Value};

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const PODS: &str = "/api/v1/namespaces/default/pods";

async fn workloads() -> Kube {
    Kube::with(ApiServer::builder().workloads(Workloads::fast())).await
}

fn deployment(name: &str, replicas: i64, image: &str, strategy: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "strategy": strategy,
            "template": {"metadata": {"labels": {"app": name},
                "annotations": {"sim.kubeforge.dev/start-latency": "150ms"}},
                "spec": {"containers": [{"name": "c", "image": image}]}}}})
}

fn items(v: &Value) -> Vec<Value> {
    v["items"].as_array().cloned().unwrap_or_default()
}

fn ready(p: &Value) -> bool {
    p["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

async fn pods(k: &Kube, selector: &str) -> Vec<Value> {
    items(
        &k.get(&format!("{PODS}?labelSelector={selector}"))
            .await
            .json(),
    )
}

async fn rolled_out(k: &Kube, name: &str, replicas: i64) -> bool {
    let d = k.get(&format!("{DEPLOYS}/{name}")).await.json();
    let s = &d["status"];
    s["observedGeneration"] == d["metadata"]["generation"]
        && s["updatedReplicas"] == replicas
        && s["replicas"] == replicas
        && s["availableReplicas"] == replicas
}

#[tokio::test]
async fn off_by_default_nothing_runs() {
    let k = Kube::start().await;
    let r = k
        .post(
            DEPLOYS,
            &deployment("web", 2, "nginx", json!({"type": "RollingUpdate"})),
        )
        .await;
    assert_eq!(r.code(), 201);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rs = k
        .get("/apis/apps/v1/namespaces/default/replicasets")
        .await
        .json();
    assert!(items(&rs).is_empty());
    assert!(items(&k.get("/api/v1/nodes").await.json()).is_empty());
}

#[tokio::test]
async fn rolling_update_honours_max_surge_and_max_unavailable() {
    let k = workloads().await;
    let strategy =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
    k.post(DEPLOYS, &deployment("web", 4, "nginx:1", strategy))
        .await;
    eventually("first rollout", async || rolled_out(&k, "web", 4).await).await;
    k.merge(&format!("{DEPLOYS}/web"), &json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})).await;
    // While rolling: never more than 4 + 1 replicas asked of the
    // ReplicaSets, never fewer than 4 ready pods. The surge bound is on the
    // ReplicaSets' spec.replicas, as the deployment controller computes it
    // (GetReplicaCountForReplicaSets); pods follow each ReplicaSet on their
    // own, so for a moment an old one's pod may outlive its scale-down
    // while the new one's pod starts, on a real cluster too.
    let deadline = tokio::time::Instant::now() + poll::DEADLINE;
    loop {
        let sets = k
            .get("/apis/apps/v1/namespaces/default/replicasets?labelSelector=app%3Dweb")
            .await
            .json();
        let asked: i64 = items(&sets)
            .iter()
            .map(|rs| rs["spec"]["replicas"].as_i64().unwrap_or(0))
            .sum();
        assert!(asked <= 5, "surge exceeded: {asked} replicas asked");
        let ps: Vec<Value> = pods(&k, "app%3Dweb")
            .await
            .into_iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .collect();
        let ready_count = ps.iter().filter(|p| ready(p)).count();
        assert!(
            ready_count >= 4
                || ps
                    .iter()
                    .all(|p| p["spec"]["containers"][0]["image"] == "nginx:1"),
            "availability dropped to {ready_count}"
        );
        if rolled_out(&k, "web", 4).await
            && ps.len() == 4
            && ps
                .iter()
                .all(|p| p["spec"]["containers"][0]["image"] == "nginx:2")
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "rollout did not finish"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let events = k
        .get("/api/v1/namespaces/default/events?fieldSelector=reason%3DScalingReplicaSet")
        .await
        .json();
    assert!(items(&events).iter().any(|e| e["message"]
        .as_str()
        .unwrap_or("")
        .starts_with("Scaled up replica set web-")));
}

#[tokio::test]
async fn recreate_removes_old_pods_before_new_ones_start() {
    let k = workloads().await;
    k.post(
        DEPLOYS,
        &deployment("db", 2, "pg:1", json!({"type": "Recreate"})),
    )
    .await;
    eventually("first rollout", async || rolled_out(&k, "db", 2).await).await;
    k.merge(
        &format!("{DEPLOYS}/db"),
        &json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "pg:2"}]}}}}),
    )
    .await;
    let deadline = tokio::time::Instant::now() + poll::DEADLINE;
    loop {
        let ps = pods(&k, "app%3Ddb").await;
        let images: Vec<&str> = ps
            .iter()
            .map(|p| p["spec"]["containers"][0]["image"].as_str().unwrap_or(""))
            .collect();
        assert!(
            !(images.contains(&"pg:1") && images.contains(&"pg:2")),
            "old and new pods together: {images:?}"
        );
        if rolled_out(&k, "db", 2).await && images == ["pg:2", "pg:2"] {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "recreate did not finish: {images:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn pod(k: &Kube, name: &str, annotations: Value, restart: &str) {
    let r = k
        .post(
            PODS,
            &json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "app:1"}]}}),
        )
        .await;
    assert_eq!(r.code(), 201, "{:?}", r.json());
}

#[tokio::test]
async fn the_kubelet_crash_loops_pulls_fail_and_readiness_flips() {
    let k = workloads().await;
    pod(
        &k,
        "crashy",
        json!({"sim.kubeforge.dev/exit-after": "50ms", "sim.kubeforge.dev/exit-code": "2"}),
        "Always",
    )
    .await;
    pod(
        &k,
        "nopull",
        json!({"sim.kubeforge.dev/image-pull": "fail"}),
        "Always",
    )
    .await;
    pod(
        &k,
        "flappy",
        json!({"sim.kubeforge.dev/ready": "flip:200ms"}),
        "Always",
    )
    .await;
    eventually("restarts grow in a crash loop", async || {
        let p = k.get(&format!("{PODS}/crashy")).await.json();
        let cs = &p["status"]["containerStatuses"][0];
        cs["restartCount"].as_i64().unwrap_or(0) >= 2
            && cs["lastState"]["terminated"]["exitCode"] == 2
            && cs["lastState"]["terminated"]["reason"] == "Error"
    })
    .await;
    eventually("CrashLoopBackOff", async || {
        let p = k.get(&format!("{PODS}/crashy")).await.json();
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    })
    .await;
    eventually("ErrImagePull", async || {
        let p = k.get(&format!("{PODS}/nopull")).await.json();
        p["status"]["phase"] == "Pending"
            && p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ErrImagePull"
    })
    .await;
    eventually("ImagePullBackOff", async || {
        let p = k.get(&format!("{PODS}/nopull")).await.json();
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff"
    })
    .await;
    eventually("ready", async || {
        ready(&k.get(&format!("{PODS}/flappy")).await.json())
    })
    .await;
    eventually("not ready again", async || {
        !ready(&k.get(&format!("{PODS}/flappy")).await.json())
    })
    .await;
    let p = k.get(&format!("{PODS}/flappy")).await.json();
    assert_eq!(p["status"]["phase"], "Running");
    assert!(p["status"]["podIP"]
        .as_str()
        .unwrap()
        .starts_with("10.244."));
    assert_eq!(
        p["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap()["reason"],
        "ContainersNotReady"
    );
}

#[tokio::test]
async fn policies_pick_behaviour_and_pods_finish() {
    let k = Kube::with(
        ApiServer::builder().workloads(
            Workloads::fast().policy(PodPolicy::all().image("batch-tool").behavior(
                PodBehavior::Exit {
                    after: Duration::from_millis(50),
                    code: 0,
                },
            )),
        ),
    )
    .await;
    pod(&k, "server", json!({}), "Never").await;
    eventually("the default runs", async || {
        ready(&k.get(&format!("{PODS}/server")).await.json())
    })
    .await;
    let r = k.post(PODS, &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "batch"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "batch-tool:2"}]}})).await;
    assert_eq!(r.code(), 201);
    eventually("the policy's pod Succeeded", async || {
        let p = k.get(&format!("{PODS}/batch")).await.json();
        p["status"]["phase"] == "Succeeded"
            && p["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    })
    .await;
    // Pods the policy does not match run on.
    assert_eq!(
        k.get(&format!("{PODS}/server")).await.json()["status"]["phase"],
        "Running"
    );
}

#[tokio::test]
async fn graceful_deletion_waits_for_the_kubelet() {
    let k = workloads().await;
    pod(&k, "slow", json!({}), "Always").await;
    eventually("running", async || {
        ready(&k.get(&format!("{PODS}/slow")).await.json())
    })
    .await;
    let r = k.delete(&format!("{PODS}/slow")).await.json();
    assert!(r["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(r["metadata"]["deletionGracePeriodSeconds"], 30);
    eventually("removed by the kubelet", async || {
        k.get(&format!("{PODS}/slow")).await.code() == 404
    })
    .await;
    // An unscheduled pod goes at once.
    let r = k
        .post(
            PODS,
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nowhere"},
        "spec": {"nodeSelector": {"none": "such"}, "containers": [{"name": "c", "image": "x"}]}}),
        )
        .await;
    assert_eq!(r.code(), 201);
    eventually("unschedulable", async || {
        let p = k.get(&format!("{PODS}/nowhere")).await.json();
        p["status"]["conditions"].as_array().is_some_and(|cs| cs.iter().any(|c| c["reason"] == "Unschedulable"
            && c["message"].as_str().unwrap_or("").starts_with("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.")))
    })
    .await;
    assert_eq!(k.delete(&format!("{PODS}/nowhere")).await.code(), 200);
    assert_eq!(k.get(&format!("{PODS}/nowhere")).await.code(), 404);
}

#[tokio::test]
async fn binding_and_eviction_subresources() {
    let k = workloads().await;
    let r = k.post(PODS, &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "manual", "labels": {"app": "x"}},
        "spec": {"schedulerName": "my-scheduler", "containers": [{"name": "c", "image": "x"}]}})).await;
    assert_eq!(r.code(), 201);
    let bind = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "manual"}, "target": {"kind": "Node", "name": "node-2"}});
    let r = k.post(&format!("{PODS}/manual/binding"), &bind).await;
    assert_eq!(r.code(), 201, "{:?}", r.json());
    assert_eq!(r.json()["status"], "Success");
    let again = k.post(&format!("{PODS}/manual/binding"), &bind).await;
    assert_eq!(again.code(), 409);
    assert!(again.json()["message"]
        .as_str()
        .unwrap()
        .contains("is already assigned to node \"node-2\""));
    eventually("running on node-2", async || {
        ready(&k.get(&format!("{PODS}/manual")).await.json())
    })
    .await;
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "keep"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}});
    assert_eq!(
        k.post(
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
            &pdb
        )
        .await
        .code(),
        201
    );
    eventually("budget computed", async || {
        let b = k
            .get("/apis/policy/v1/namespaces/default/poddisruptionbudgets/keep")
            .await
            .json();
        b["status"]["currentHealthy"] == 1 && b["status"]["desiredHealthy"] == 1
    })
    .await;
    let eviction =
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "manual"}});
    let r = k.post(&format!("{PODS}/manual/eviction"), &eviction).await;
    assert_eq!(r.code(), 429);
    let body = r.json();
    assert_eq!(
        body["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(body["details"]["causes"][0]["reason"], "DisruptionBudget");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "The disruption budget keep needs 1 healthy pods and has 1 currently"
    );
    k.merge(
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets/keep",
        &json!({"spec": {"minAvailable": 0}}),
    )
    .await;
    eventually("budget allows one", async || {
        k.get("/apis/policy/v1/namespaces/default/poddisruptionbudgets/keep")
            .await
            .json()["status"]["disruptionsAllowed"]
            == 1
    })
    .await;
    let r = k.post(&format!("{PODS}/manual/eviction"), &eviction).await;
    assert_eq!(r.code(), 201, "{:?}", r.json());
    eventually("evicted pod gone", async || {
        k.get(&format!("{PODS}/manual")).await.code() == 404
    })
    .await;
}

#[tokio::test]
async fn daemonsets_run_one_pod_per_matching_node() {
    let k = Kube::with(
        ApiServer::builder().workloads(
            Workloads::fast().nodes(2).node(
                kubeforge_apiserver::SimNode::new("gpu-1")
                    .label("gpu", "yes")
                    .taint("gpu", "yes", "NoSchedule"),
            ),
        ),
    )
    .await;
    let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {"metadata": {"labels": {"app": "agent"}},
            "spec": {"containers": [{"name": "c", "image": "agent:1"}]}}}});
    assert_eq!(
        k.post("/apis/apps/v1/namespaces/default/daemonsets", &ds)
            .await
            .code(),
        201
    );
    eventually("a ready pod on each untainted node", async || {
        let d = k
            .get("/apis/apps/v1/namespaces/default/daemonsets/agent")
            .await
            .json();
        d["status"]["desiredNumberScheduled"] == 2 && d["status"]["numberReady"] == 2
    })
    .await;
    let mut nodes: Vec<String> = pods(&k, "app%3Dagent")
        .await
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap().to_owned())
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["node-1", "node-2"]);
}

#[tokio::test]
async fn a_failed_node_gets_tainted_and_its_pods_evicted() {
    let k = workloads().await;
    k.post(
        DEPLOYS,
        &deployment("web", 3, "nginx", json!({"type": "RollingUpdate"})),
    )
    .await;
    eventually("rollout", async || rolled_out(&k, "web", 3).await).await;
    let victim = pods(&k, "app%3Dweb").await[0]["spec"]["nodeName"]
        .as_str()
        .unwrap()
        .to_owned();
    k.server.nodes().set_running(&victim, false);
    eventually("node Unknown and tainted", async || {
        let n = k.get(&format!("/api/v1/nodes/{victim}")).await.json();
        let ready_unknown = n["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter().any(|c| {
                c["type"] == "Ready"
                    && c["status"] == "Unknown"
                    && c["message"] == "Kubelet stopped posting node status."
            })
        });
        let tainted = n["spec"]["taints"].as_array().is_some_and(|ts| {
            ts.iter()
                .any(|t| t["key"] == "node.kubernetes.io/unreachable" && t["effect"] == "NoExecute")
        });
        ready_unknown && tainted
    })
    .await;
    eventually(
        "pods marked for eviction and replaced elsewhere",
        async || {
            let ps = pods(&k, "app%3Dweb").await;
            let on_victim: Vec<&Value> = ps
                .iter()
                .filter(|p| p["spec"]["nodeName"] == victim.as_str())
                .collect();
            let evicting = on_victim.iter().all(|p| {
                p["metadata"]["deletionTimestamp"].is_string()
                    && p["status"]["conditions"].as_array().is_some_and(|cs| {
                        cs.iter().any(|c| {
                            c["type"] == "DisruptionTarget"
                                && c["reason"] == "DeletionByTaintManager"
                        })
                    })
            });
            let healthy_elsewhere = ps
                .iter()
                .filter(|p| p["spec"]["nodeName"] != victim.as_str() && ready(p))
                .count();
            evicting && healthy_elsewhere == 3
        },
    )
    .await;
    k.server.nodes().set_running(&victim, true);
    eventually("node ready again", async || {
        let n = k.get(&format!("/api/v1/nodes/{victim}")).await.json();
        n["spec"]["taints"].is_null()
    })
    .await;
}

#[tokio::test]
async fn a_cronjob_starts_the_missed_run_and_records_its_success() {
    let k = workloads().await;
    const CJS: &str = "/apis/batch/v1/namespaces/default/cronjobs";
    let cj = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
    assert_eq!(k.post(CJS, &cj).await.code(), 201);
    // As if the controller had last run ten minutes ago: a run was missed.
    let past = jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::from_secs(600))
        .unwrap()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let r = k
        .patch(
            &format!("{CJS}/tick/status"),
            "application/merge-patch+json",
            &json!({"status": {"lastScheduleTime": past}}),
        )
        .await;
    assert_eq!(r.code(), 200);
    let done = eventually_value(&k, &format!("{CJS}/tick"), |c| {
        c["status"]["lastSuccessfulTime"].is_string()
    })
    .await;
    let job = items(&k.get("/apis/batch/v1/namespaces/default/jobs").await.json()).remove(0);
    let name = job["metadata"]["name"].as_str().unwrap();
    let minutes: i64 = name.strip_prefix("tick-").unwrap().parse().unwrap();
    let scheduled = job["metadata"]["annotations"]
        ["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        .as_str()
        .unwrap();
    let at: jiff::Timestamp = scheduled.parse().unwrap();
    assert_eq!(at.as_second() / 60, minutes);
    assert_eq!(at.as_second() % 300, 0, "a */5 schedule: {scheduled}");
    assert_eq!(done["status"]["lastScheduleTime"], scheduled);
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
}

async fn eventually_value(k: &Kube, path: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + poll::DEADLINE;
    loop {
        let v = k.get(path).await.json();
        if check(&v) {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out: {v}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
