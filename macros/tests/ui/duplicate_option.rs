use kubeforge::prelude::*;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(group = "example.com", version = "v1", kind = "Foo", group = "example.org")]
pub struct FooSpec {
    pub size: i32,
}

fn main() {}
