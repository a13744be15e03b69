use kubeforge::prelude::*;

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
pub struct Inner {
    #[crd(list_type = "set", list_map_keys = ["name"])]
    pub names: Vec<String>,
}

fn main() {}
