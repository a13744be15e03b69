use kubeforge::prelude::*;

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
pub struct Inner {
    #[crd(minimum = 10, maximum = 1)]
    pub size: i32,
}

fn main() {}
