use kubeforge::prelude::*;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(group = "example.com", version = "v1", kind = "Foo")]
pub struct FooSpec {
    #[crd(minimum = 1)]
    #[crd(minimum = 2)]
    pub size: i32,
}

fn main() {}
