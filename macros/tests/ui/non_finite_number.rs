use kubeforge::prelude::*;

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
pub struct Inner {
    #[crd(maximum = 1e999)]
    pub size: f64,
}

fn main() {}
