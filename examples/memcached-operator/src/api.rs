//! The `Memcached` custom resource (`cache.example.com/v1alpha1`): its spec,
//! its status, and the CRD the derive makes of them (status and scale
//! subresources, printer columns, the `mc` short name).

use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kubeforge::prelude::*;

/// The image a Memcached runs unless its spec names another.
pub const DEFAULT_IMAGE: &str = "memcached:1.6.26-alpine3.19";

/// The port memcached listens on unless the spec names another.
pub const DEFAULT_CONTAINER_PORT: i32 = 11211;

/// A memcached cluster: `size` pods running memcached, kept by a Deployment
/// the operator owns.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[crd(
    group = "cache.example.com",
    version = "v1alpha1",
    kind = "Memcached",
    status = "MemcachedStatus",
    shortname = "mc",
    scale(
        spec = ".spec.size",
        status = ".status.replicas",
        selector = ".status.selector"
    ),
    printcolumn(
        name = "Size",
        type = integer,
        json_path = ".spec.size",
        description = "Desired number of memcached pods"
    ),
    printcolumn(
        name = "Ready",
        type = integer,
        json_path = ".status.readyReplicas",
        description = "Pods that are ready"
    ),
    printcolumn(
        name = "Available",
        type = string,
        json_path = ".status.conditions[?(@.type==\"Available\")].status",
        description = "Whether every desired pod is available"
    ),
    printcolumn(name = "Age", type = date, json_path = ".metadata.creationTimestamp"),
    derive(PartialEq)
)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedSpec {
    /// Number of memcached pods.
    #[crd(minimum = 1, maximum = 10)]
    pub size: i32,

    /// The memcached container image.
    #[crd(min_length = 1, default = "memcached:1.6.26-alpine3.19")]
    #[serde(default = "default_image")]
    pub image: String,

    /// The port memcached listens on.
    #[crd(minimum = 1, maximum = 65535, default = 11211)]
    #[serde(default = "default_container_port")]
    pub container_port: i32,
}

fn default_image() -> String {
    DEFAULT_IMAGE.to_owned()
}

fn default_container_port() -> i32 {
    DEFAULT_CONTAINER_PORT
}

impl MemcachedSpec {
    /// A spec for `size` pods with the default image and port.
    pub fn with_size(size: i32) -> Self {
        Self {
            size,
            image: default_image(),
            container_port: DEFAULT_CONTAINER_PORT,
        }
    }
}

/// What the operator observed of a Memcached's Deployment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedStatus {
    /// `Available`, `Progressing` and `Degraded`, one of each type.
    #[crd(list_type = "map", list_map_keys = ["type"])]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,

    /// Pods the Deployment runs (the scale subresource's current replicas).
    #[serde(default)]
    pub replicas: i32,

    /// Pods that are ready.
    #[serde(default)]
    pub ready_replicas: i32,

    /// Pods that have been ready long enough to count as available.
    #[serde(default)]
    pub available_replicas: i32,

    /// The label selector of the pods, for the scale subresource (and so
    /// for a HorizontalPodAutoscaler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,

    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crd_has_the_tutorials_shape() {
        let crd = Memcached::try_crd().expect("structural CRD");
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("memcacheds.cache.example.com")
        );
        assert_eq!(crd.spec.names.short_names, Some(vec!["mc".to_owned()]));
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        let sub = version.subresources.as_ref().expect("subresources");
        assert!(sub.status.is_some());
        let scale = sub.scale.as_ref().expect("scale subresource");
        assert_eq!(scale.spec_replicas_path, ".spec.size");
        assert_eq!(scale.status_replicas_path, ".status.replicas");
        assert_eq!(
            scale.label_selector_path.as_deref(),
            Some(".status.selector")
        );
        let columns: Vec<_> = version
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(columns, ["Size", "Ready", "Available", "Age"]);

        let schema = serde_json::to_value(version.schema.as_ref().unwrap()).unwrap();
        let spec = &schema["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["required"], serde_json::json!(["size"]));
        assert_eq!(spec["properties"]["size"]["minimum"], 1.0);
        assert_eq!(spec["properties"]["size"]["maximum"], 10.0);
        assert_eq!(spec["properties"]["image"]["default"], DEFAULT_IMAGE);
        assert_eq!(
            spec["properties"]["containerPort"]["default"],
            DEFAULT_CONTAINER_PORT
        );
        let conditions =
            &schema["openAPIV3Schema"]["properties"]["status"]["properties"]["conditions"];
        assert_eq!(conditions["x-kubernetes-list-type"], "map");
        assert_eq!(
            conditions["x-kubernetes-list-map-keys"],
            serde_json::json!(["type"])
        );
    }

    #[test]
    fn omitted_image_and_port_take_their_defaults() {
        let spec: MemcachedSpec = serde_json::from_value(serde_json::json!({"size": 2})).unwrap();
        assert_eq!(spec, MemcachedSpec::with_size(2));
    }
}
