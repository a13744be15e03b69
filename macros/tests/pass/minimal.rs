//! A user crate's view: kubeforge and serde only (no kube-core, k8s-openapi
//! or schemars dependency), `use kubeforge::prelude::*`.

use kubeforge::prelude::*;

/// A memcached cluster.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(group = "cache.example.com", version = "v1alpha1", kind = "Memcached",
      status = "MemcachedStatus", shortname = "mc",
      scale(spec = ".spec.size", status = ".status.replicas"),
      printcolumn(name = "Size", type = "integer", json_path = ".spec.size"))]
pub struct MemcachedSpec {
    /// Number of memcached pods.
    #[crd(minimum = 1, maximum = 10)]
    pub size: i32,
    pub layout: Layout,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub struct MemcachedStatus {
    #[crd(minimum = 0)]
    pub replicas: i32,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(validation = "self.zones.size() > 0")]
pub struct Layout {
    #[crd(list_type = "set", max_items = 3)]
    pub zones: Vec<String>,
}

fn main() {
    let mc = Memcached::new("cache", MemcachedSpec { size: 1, layout: Layout { zones: vec!["a".into()] } });
    assert_eq!(mc.spec().size, 1);
    assert!(mc.status().is_none());
    assert_eq!(Memcached::crd_name(), "memcacheds.cache.example.com");
    let crd = Memcached::try_crd().expect("structural");
    assert_eq!(crd.spec.names.short_names, Some(vec!["mc".to_string()]));
    let mut scheme = Scheme::new();
    scheme.register::<Memcached>().expect("register");
    assert_eq!(scheme.crds().expect("crds").len(), 1);
}
