use kubeforge::prelude::*;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug)]
#[crd(group = "example.com", version = "v1", kind = "Foo", schema = "manual")]
pub struct FooSpec {
    pub size: i32,
}

fn main() {}
