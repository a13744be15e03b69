use kubeforge::prelude::*;

use std::collections::BTreeMap;

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
pub struct Inner {
    #[crd(max_items = 3)]
    pub labels: BTreeMap<String, String>,
}

fn main() {}
