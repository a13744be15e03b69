use kubeforge::prelude::*;

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
pub struct Tree {
    pub name: String,
    pub children: Vec<Tree>,
}

fn main() {}
