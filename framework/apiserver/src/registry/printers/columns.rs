//! Column definitions shared by the printers: the `TableColumnDefinition`
//! JSON, and the Name and Age columns every kind starts and ends with.

use serde_json::{json, Value};

pub(crate) fn col(name: &str, ty: &str, format: &str, desc: &str, priority: i64) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": desc, "priority": priority})
}

pub(crate) fn name_col() -> Value {
    col("Name", "string", "name", "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names", 0)
}

pub(crate) fn age_col() -> Value {
    col("Age", "string", "", "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata", 0)
}
