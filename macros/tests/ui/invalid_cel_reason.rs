use kubeforge::prelude::*;

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
pub struct Inner {
    #[crd(validation(rule = "self > 0", reason = "FieldValueInvalidd"))]
    pub size: i32,
}

fn main() {}
