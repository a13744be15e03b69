use kubeforge::prelude::*;

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
pub enum Shape {
    Empty,
    Circle { radius: f64 },
}

fn main() {}
