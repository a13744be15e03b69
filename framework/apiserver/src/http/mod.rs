//! The HTTP face of the server (kube-apiserver's `endpoints`): routing a
//! path to a resource and verb, the authorization attributes of a request,
//! the handlers of each verb, content negotiation and bodies, the
//! encodings (JSON, YAML, protobuf, kubectl's Table), watch streaming,
//! discovery.

pub(crate) mod attributes;
pub(crate) mod decode;
pub(crate) mod discovery;
pub(crate) mod filters;
pub(crate) mod handlers;
pub(crate) mod protobuf;
pub(crate) mod routing;
pub(crate) mod table;
pub(crate) mod watch;
pub(crate) mod wire;
