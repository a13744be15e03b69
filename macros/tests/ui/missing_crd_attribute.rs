use kubeforge::prelude::*;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
pub struct FooSpec {
    pub size: i32,
}

fn main() {}
