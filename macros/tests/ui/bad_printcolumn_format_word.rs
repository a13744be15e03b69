use kubeforge::prelude::*;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[crd(group = "example.com", version = "v1", kind = "Foo",
      printcolumn(name = "Since", type = date, format = date-tim, json_path = ".spec.since"))]
pub struct FooSpec {
    pub since: String,
}

fn main() {}
