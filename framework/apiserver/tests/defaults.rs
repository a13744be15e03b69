//! Built-in defaulting on the wire: a Deployment read back carries the
//! spec a cluster returns for the same manifest (every pod default in its
//! template), defaults come back on updates and patches that drop them,
//! and what the client set is never overwritten.

mod common;

use common::Kube;
use serde_json::{json, Value};

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const PODS: &str = "/api/v1/namespaces/default/pods";
const STS: &str = "/apis/apps/v1/namespaces/default/statefulsets";
const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";
const SMP: &str = "application/strategic-merge-patch+json";

/// The manifest of kubernetes.io's `controllers/nginx-deployment.yaml`
/// with the image `nginx:1.25`.
fn nginx() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx-deployment", "labels": {"app": "nginx"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "nginx"}},
            "template": {"metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
                    "ports": [{"containerPort": 80}]}]}}}})
}

/// The `spec` a cluster returns for [`nginx`]. The template is a real
/// cluster's `kubectl get deployment -o yaml` (Linux Foundation LFS258,
/// "Deployment Configuration Pod Template",
/// https://cka.yunwei361.com/07.-managing-state-with-deployments/managing-state-with-deployments/deployment-configuration-pod-template:
/// `imagePullPolicy: IfNotPresent` for a tagged image, `resources: {}`,
/// `terminationMessagePath: /dev/termination-log`,
/// `terminationMessagePolicy: File`, `dnsPolicy: ClusterFirst`,
/// `restartPolicy: Always`, `schedulerName: default-scheduler`,
/// `securityContext: {}`, `terminationGracePeriodSeconds: 30`); the
/// Deployment-level fields as another cluster printed them
/// (https://thunderslug.site.meltdown.zone/89117f99-1fea-4e32-aba2-213449eb4903:
/// `progressDeadlineSeconds: 600`, `revisionHistoryLimit: 10`,
/// `strategy: {rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}, type:
/// RollingUpdate}`); the port's `protocol: TCP` from the generated
/// defaulter (`pkg/apis/core/v1/zz_generated.defaults.go`). Those clusters
/// also print the template's zero `creationTimestamp: null`, which this
/// server leaves out (it is not a default, and newer clusters omit it).
fn nginx_spec_from_a_cluster() -> Value {
    json!({
        "progressDeadlineSeconds": 600,
        "replicas": 3,
        "revisionHistoryLimit": 10,
        "selector": {"matchLabels": {"app": "nginx"}},
        "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {
                "containers": [{
                    "image": "nginx:1.25",
                    "imagePullPolicy": "IfNotPresent",
                    "name": "nginx",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File"
                }],
                "dnsPolicy": "ClusterFirst",
                "restartPolicy": "Always",
                "schedulerName": "default-scheduler",
                "securityContext": {},
                "terminationGracePeriodSeconds": 30
            }
        }
    })
}

#[tokio::test]
async fn a_deployment_reads_back_with_the_spec_a_cluster_returns() {
    let k = Kube::start().await;
    let created = k.post(DEPLOYS, &nginx()).await;
    assert_eq!(created.code(), 201);
    assert_eq!(created.json()["spec"], nginx_spec_from_a_cluster());
    let read = k.get(&format!("{DEPLOYS}/nginx-deployment")).await.json();
    assert_eq!(read["spec"], nginx_spec_from_a_cluster());
}

#[tokio::test]
async fn defaults_come_back_on_updates_and_patches_and_never_overwrite() {
    let k = Kube::start().await;
    assert_eq!(k.post(DEPLOYS, &nginx()).await.code(), 201);
    let path = format!("{DEPLOYS}/nginx-deployment");

    // A PUT of the original manifest (no defaults in it) reads back the same.
    let mut put = nginx();
    put["metadata"]["resourceVersion"] =
        k.get(&path).await.json()["metadata"]["resourceVersion"].clone();
    let r = k.put(&path, &put).await;
    assert_eq!(r.code(), 200);
    assert_eq!(r.json()["spec"], nginx_spec_from_a_cluster());
    // Nor did that bump the generation: the defaulted spec is unchanged.
    assert_eq!(r.json()["metadata"]["generation"], 1);

    // A patch that removes a default brings it back, as decoding does.
    let r = k
        .patch(
            &path,
            SMP,
            &json!({"spec": {"template": {"spec": {"dnsPolicy": null,
                "containers": [{"name": "nginx", "imagePullPolicy": null}]}}}}),
        )
        .await;
    assert_eq!(r.code(), 200);
    assert_eq!(r.json()["spec"], nginx_spec_from_a_cluster());

    // Values the client sets are kept.
    let r = k
        .patch(
            &path,
            SMP,
            &json!({"spec": {"template": {"spec": {"dnsPolicy": "Default", "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "nginx", "imagePullPolicy": "Always"}]}}}}),
        )
        .await;
    assert_eq!(r.code(), 200);
    let spec = &r.json()["spec"]["template"]["spec"];
    assert_eq!(spec["dnsPolicy"], "Default");
    assert_eq!(spec["terminationGracePeriodSeconds"], 0);
    assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
}

#[tokio::test]
async fn pods_statefulsets_and_jobs_get_their_templates_defaults() {
    let k = Kube::start().await;
    let container = json!({"name": "c", "image": "busybox",
        "readinessProbe": {"httpGet": {"port": 8080}}});
    let pod = k
        .post(
            PODS,
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [container]}}),
        )
        .await;
    assert_eq!(pod.code(), 201);
    let spec = &pod.json()["spec"];
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["securityContext"], json!({}));
    let c = &spec["containers"][0];
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(
        c["readinessProbe"],
        json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
            "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );

    let sts = k
        .post(
            STS,
            &json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
                    "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [container]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}}}}]}}),
        )
        .await;
    assert_eq!(sts.code(), 201);
    let spec = &sts.json()["spec"];
    assert_eq!(
        spec["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}})
    );
    assert_eq!(spec["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    assert!(spec["template"]["spec"].get("enableServiceLinks").is_none());
    assert_eq!(
        spec["volumeClaimTemplates"][0]["spec"]["volumeMode"],
        "Filesystem"
    );
    assert_eq!(
        spec["volumeClaimTemplates"][0]["status"],
        json!({"phase": "Pending"})
    );

    let job = k
        .post(
            JOBS,
            &json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                "spec": {"template": {"metadata": {"labels": {"team": "a"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}),
        )
        .await;
    assert_eq!(job.code(), 201);
    let job = job.json();
    assert_eq!(job["metadata"]["labels"], json!({"team": "a"}));
    assert_eq!(job["spec"]["manualSelector"], false);
    assert_eq!(job["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
    let t = &job["spec"]["template"]["spec"];
    assert_eq!(t["restartPolicy"], "Never");
    assert_eq!(t["containers"][0]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(t["containers"][0]["terminationMessagePolicy"], "File");
}
