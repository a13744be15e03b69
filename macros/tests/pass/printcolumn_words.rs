//! Printer columns in kubebuilder's spelling: the type and format as words
//! (`type = integer`, `format = date-time`), next to the string form.

use kubeforge::prelude::*;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(group = "cache.example.com", version = "v1alpha1", kind = "Memcached",
      status = "MemcachedStatus",
      printcolumn(name = "Size", type = integer, format = int32, json_path = ".spec.size"),
      printcolumn(name = "Ready", type = integer, json_path = ".status.readyReplicas", priority = 1),
      printcolumn(name = "Since", type = date, format = date-time, json_path = ".status.since"),
      printcolumn(name = "Image", type = "string", json_path = ".spec.image"))]
pub struct MemcachedSpec {
    pub size: i32,
    pub image: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedStatus {
    pub ready_replicas: i32,
    pub since: Option<String>,
}

fn main() {
    let crd = Memcached::try_crd().expect("structural");
    let columns = crd.spec.versions[0].additional_printer_columns.clone().unwrap_or_default();
    let shape: Vec<(&str, &str, Option<&str>)> = columns
        .iter()
        .map(|c| (c.name.as_str(), c.type_.as_str(), c.format.as_deref()))
        .collect();
    assert_eq!(
        shape,
        [
            ("Size", "integer", Some("int32")),
            ("Ready", "integer", None),
            ("Since", "date", Some("date-time")),
            ("Image", "string", None),
        ]
    );
}
