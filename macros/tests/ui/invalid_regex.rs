use kubeforge::prelude::*;

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
pub struct Inner {
    #[crd(pattern = "([a-z]+")]
    pub name: String,
}

fn main() {}
