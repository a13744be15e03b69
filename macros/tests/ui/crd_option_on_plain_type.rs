use kubeforge::prelude::*;

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(shortname = "in")]
pub struct Inner {
    pub size: i32,
}

fn main() {}
