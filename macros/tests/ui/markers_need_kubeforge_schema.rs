use kubeforge::prelude::{CustomResource, Deserialize, Serialize};

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, kubeforge::schemars::JsonSchema)]
#[schemars(crate = "kubeforge::schemars")]
#[crd(group = "example.com", version = "v1", kind = "Foo")]
pub struct FooSpec {
    #[crd(minimum = 1)]
    pub size: i32,
}

fn main() {}
