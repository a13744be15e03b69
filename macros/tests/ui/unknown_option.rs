use kubeforge::prelude::*;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(grop = "example.com", version = "v1", kind = "Foo")]
pub struct FooSpec {
    pub size: i32,
}

fn main() {}
