//! An in-process Kubernetes API server for tests and demos.

pub mod openapi;
pub mod patch;
pub mod schema;
