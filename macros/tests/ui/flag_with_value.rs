use kubeforge::prelude::*;

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
pub struct Inner {
    #[crd(nullable = "yes")]
    pub size: Option<i32>,
}

fn main() {}
