//! The reconcile loop: a Memcached becomes a Deployment of `size` memcached
//! pods that it owns, its status follows the Deployment, and a finalizer
//! lets the operator record the Memcached's deletion before it goes.
//!
//! Each reconcile is level-triggered and idempotent: it server-side applies
//! the whole desired Deployment (the API server answers a no-op apply
//! without a write), computes the status from the Deployment it got back,
//! and writes the status through `/status` only when it changed.

use std::collections::BTreeMap;

use kubeforge::controller::Error;
use kubeforge::k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use kubeforge::k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, PodSecurityContext, PodSpec, PodTemplateSpec,
    SeccompProfile, SecurityContext,
};
use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubeforge::k8s_openapi::jiff::Timestamp;
use kubeforge::prelude::*;

use crate::api::Memcached;
use crate::status;

/// The finalizer the operator puts on every Memcached.
pub const FINALIZER: &str = "cache.example.com/finalizer";

/// The controller's name: its metrics label and the `reportingController`
/// of its events.
pub const CONTROLLER_NAME: &str = "memcached";

/// The field manager of the operator's server-side applies.
pub const FIELD_MANAGER: &str = "memcached-operator";

/// The reason of the event recorded when a Memcached is finalized.
pub const FINALIZED_REASON: &str = "Finalized";

/// The operator's settings, reachable from every reconcile.
#[derive(Clone, Debug)]
pub struct Settings {
    /// How often a Memcached is reconciled even when nothing changes
    /// (drift the watches would miss).
    pub resync: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            resync: Duration::from_secs(300),
        }
    }
}

/// The labels of a Memcached's pods; the first two are the selector.
pub fn labels(mc: &Memcached) -> BTreeMap<String, String> {
    [
        ("app.kubernetes.io/name", "memcached"),
        ("app.kubernetes.io/instance", &mc.name_any()),
        ("app.kubernetes.io/managed-by", "memcached-operator"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

fn selector_labels(mc: &Memcached) -> BTreeMap<String, String> {
    let mut labels = labels(mc);
    labels.remove("app.kubernetes.io/managed-by");
    labels
}

/// The Deployment `mc` asks for, owned by it (a controller reference, so
/// the garbage collector removes it with the Memcached and `owns()` wakes
/// the Memcached when it changes). Contains only the fields the operator
/// sets, as a server-side apply body should.
pub fn desired_deployment(mc: &Memcached) -> Result<Deployment, Error> {
    let spec = &mc.spec;
    let mut deployment = Deployment {
        metadata: ObjectMeta {
            name: Some(mc.name_any()),
            namespace: mc.metadata.namespace.clone(),
            labels: Some(labels(mc)),
            ..Default::default()
        },
        spec: DeploymentSpec {
            replicas: Some(spec.size),
            selector: LabelSelector {
                match_labels: Some(selector_labels(mc)),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(mc)),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".into(),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    containers: vec![Container {
                        name: "memcached".into(),
                        image: Some(spec.image.clone()),
                        image_pull_policy: Some("IfNotPresent".into()),
                        command: Some(
                            ["memcached", "--memory-limit=64", "-o", "modern", "-v"]
                                .map(String::from)
                                .to_vec(),
                        ),
                        ports: Some(vec![ContainerPort {
                            name: Some("memcached".into()),
                            container_port: spec.container_port,
                            protocol: Some("TCP".into()),
                            ..Default::default()
                        }]),
                        security_context: Some(SecurityContext {
                            run_as_non_root: Some(true),
                            run_as_user: Some(1001),
                            allow_privilege_escalation: Some(false),
                            capabilities: Some(Capabilities {
                                drop: Some(vec!["ALL".into()]),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        status: None,
    };
    set_controller_reference(mc, &mut deployment)?;
    Ok(deployment)
}

/// Reconciles one Memcached: under the finalizer, apply its Deployment and
/// report its status; once it is being deleted, record the deletion and
/// let it go. Requeued after [`Settings::resync`] for drift detection.
pub async fn reconcile(mc: Arc<Memcached>, ctx: Arc<Context<Settings>>) -> Result<Action, Error> {
    let outcome = ctx
        .finalizer(FINALIZER, mc, |event, ctx| async move {
            match event {
                FinalizerEvent::Apply(mc) => apply(&mc, &ctx).await,
                FinalizerEvent::Cleanup(mc) => cleanup(&mc, &ctx).await,
            }
        })
        .await?;
    Ok(outcome.into())
}

async fn apply(mc: &Memcached, ctx: &Context<Settings>) -> Result<Action, Error> {
    let deployment = ctx.client().apply(&desired_deployment(mc)?).await?;
    let next = status::observe(mc, &deployment, Timestamp::now());
    if mc.status.as_ref() != Some(&next) {
        ctx.client().apply_status(mc, &next).await?;
        tracing::debug!(
            replicas = next.replicas,
            ready = next.ready_replicas,
            "status written"
        );
    }
    Ok(Action::requeue_after(ctx.resync))
}

/// Nothing outside the cluster to release: the Deployment goes with the
/// Memcached (garbage collection). What is left is to say so.
async fn cleanup(mc: &Memcached, ctx: &Context<Settings>) -> Result<Action, Error> {
    let note = format!(
        "Memcached {}/{} is being deleted; its Deployment is left to the garbage collector",
        mc.namespace().unwrap_or_default(),
        mc.name_any()
    );
    ctx.recorder()
        .event(mc)
        .normal(FINALIZED_REASON, "Finalize")
        .note(note)
        .publish()
        .await;
    tracing::info!("finalized");
    Ok(Action::done())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::MemcachedSpec;

    fn stored(name: &str, size: i32) -> Memcached {
        let mut mc = Memcached::new(name, MemcachedSpec::with_size(size));
        mc.metadata.namespace = Some("shop".into());
        mc.metadata.uid = Some("0b6b2b1e-0000-4000-8000-000000000001".into());
        mc
    }

    #[test]
    fn the_deployment_runs_size_pods_of_the_image_and_is_owned() {
        let mut mc = stored("cache", 3);
        mc.spec.image = "memcached:1.6".into();
        mc.spec.container_port = 11311;
        let d = desired_deployment(&mc).unwrap();
        assert_eq!(d.metadata.name.as_deref(), Some("cache"));
        assert_eq!(d.metadata.namespace.as_deref(), Some("shop"));
        let spec = &d.spec;
        assert_eq!(spec.replicas, Some(3));
        let selector = spec.selector.match_labels.as_ref().unwrap();
        let pod_labels = spec
            .template
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .as_ref()
            .unwrap();
        assert!(selector.iter().all(|(k, v)| pod_labels.get(k) == Some(v)));
        let container = &spec.template.spec.as_ref().unwrap().containers[0];
        assert_eq!(container.image.as_deref(), Some("memcached:1.6"));
        assert_eq!(container.ports.as_ref().unwrap()[0].container_port, 11311);
        let owner = &d.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(owner.kind, "Memcached");
        assert_eq!(owner.api_version, "cache.example.com/v1alpha1");
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.uid, "0b6b2b1e-0000-4000-8000-000000000001");
        // An apply body carries no status.
        assert!(serde_json::to_value(&d).unwrap().get("status").is_none());
    }

    #[test]
    fn a_memcached_not_yet_stored_cannot_own_anything() {
        let mut mc = stored("cache", 1);
        mc.metadata.uid = None;
        let err = desired_deployment(&mc).unwrap_err();
        assert!(err.to_string().contains("metadata.uid"), "{err}");
    }
}
