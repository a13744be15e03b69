use kubeforge::prelude::*;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(group = "example.com", version = "V1", kind = "Foo")]
pub struct FooSpec {
    pub size: i32,
}

fn main() {}
