use kubeforge::prelude::*;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(group = "example.com", version = "v1", kind = "Foo",
      printcolumn(name = "Size", type = integr, json_path = ".spec.size"))]
pub struct FooSpec {
    pub size: i32,
}

fn main() {}
